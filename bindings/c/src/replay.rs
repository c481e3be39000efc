//! `agentstream_replay_json`: a recorded harness output through the whole pipeline (decoder,
//! run stream, terminal, hooks) without a process, deterministically.

use std::ffi::c_char;

use agentstream_core::Agent;
use agentstream_core::replay::{ReplayOptions, replay};
use serde::Deserialize;

use crate::error::{agentstream_status, boundary, invalid};
use crate::util::{bytes_arg, give_string, json_options, out_arg, reset_out, str_arg, to_json};

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ReplayOptionsJson {
    run_id: Option<String>,
    agent_id: Option<String>,
    timestamp: Option<String>,
    redact: Option<bool>,
}

/// Replay `len` bytes of a harness's recorded stdout as `agent` and return everything the run
/// would deliver as one owned JSON object in `*out_json` (free with `agentstream_string_free`):
/// `{"items": [<envelope>…], "hooks": [<hook event>…], "outcome": {"state": …}, "stats": {…}}`
/// — the sequenced stream (`run_start`, each stdout line followed by its content events, the
/// terminal lifecycle event last), the hook events derived from it (canonical shape), how it
/// ended, and the decode statistics. The same input always gives the same output.
///
/// `options_json` (NULL for the defaults) may set `"run_id"` (default `"replay"`), `"agent_id"`
/// (default: the agent's name) and `"timestamp"` of lifecycle and hook events (default
/// `"1970-01-01T00:00:00.000Z"`) and `"redact"` (default true: secret shapes in tool-call
/// inputs masked, as in a run). The golden `tests/golden/<agent>/<case>.hooks.jsonl` files are
/// the hooks of a replay with `{"run_id": "golden"}`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_ARGUMENT` (unknown agent; bad options).
///
/// # Safety
/// `agent` NUL-terminated; `bytes` valid for `len` bytes (NULL when 0); `options_json` NULL or
/// NUL-terminated; `out_json` valid for a write; `out_len` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_replay_json(
    agent: *const c_char,
    bytes: *const u8,
    len: usize,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out_json, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_json, "out_json") }?;
        // SAFETY: forwarded contract.
        let agent: Agent = unsafe { str_arg(agent, "agent") }?.parse().map_err(|e| invalid(format!("{e}")))?;
        // SAFETY: forwarded contract.
        let input = unsafe { bytes_arg(bytes, len, "bytes") }?;
        // SAFETY: forwarded contract.
        let o: ReplayOptionsJson = unsafe { json_options(options_json, "options_json") }?;
        let mut options = ReplayOptions::default();
        if let Some(v) = o.run_id {
            options.run_id = v;
        }
        options.agent_id = o.agent_id;
        if let Some(v) = o.timestamp {
            options = options.with_timestamp(&v)?;
        }
        if let Some(r) = o.redact {
            options.redaction = agentstream_core::RedactionPolicy { enabled: r };
        }
        let r = replay(agent, input, &options);
        // SAFETY: forwarded contract.
        unsafe { give_string(to_json(&r)?, out, out_len) }
    })
}
