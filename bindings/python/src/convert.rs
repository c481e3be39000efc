//! Content events to Python dicts, fast.
//!
//! The result is exactly the core's serde form (the seed's camelCase keys, absent optionals,
//! serde's key order), as pythonize would build it, but about three times cheaper: keys and enum
//! names are interned Python strings created once (`intern!`), and nothing goes through the
//! generic serde machinery. Every struct is destructured without `..` and every enum matched
//! without `_`, so a field or variant added to the core fails to compile here instead of going
//! missing; the tests compare these dicts with `json.loads` of the core's own JSON for every
//! golden case and every variant.

use agentstream_core::event::JsonObject;
use agentstream_core::{
    ContentBlock, DiffContent, ImageContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate,
    SharedStr, TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolKind,
    UsageScope,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString};
use serde_json::Value;

type Obj<'py> = Bound<'py, PyAny>;

fn s<'py>(py: Python<'py>, text: &str) -> Obj<'py> {
    PyString::new(py, text).into_any()
}

fn set_opt_str(d: &Bound<'_, PyDict>, key: &Bound<'_, PyString>, value: &Option<String>) -> PyResult<()> {
    if let Some(v) = value {
        d.set_item(key, PyString::new(d.py(), v))?;
    }
    Ok(())
}

/// Python strings for the object keys of JSON values (`rawInput`, `rawOutput`, `extra`): the
/// same few keys come back on every tool call, so each is made once per decoder. Bounded.
#[derive(Default)]
pub struct Keys(std::collections::HashMap<Box<str>, Py<PyString>, std::hash::BuildHasherDefault<FxHasher>>);

/// FxHash (rustc's): short keys hash several times faster than with SipHash; HashDoS is not a
/// concern for a bounded cache of keys.
#[derive(Default)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Keys {
    const MAX_KEYS: usize = 2048;
    const MAX_KEY_LEN: usize = 64;

    pub fn get<'py>(&mut self, py: Python<'py>, key: &str) -> Bound<'py, PyString> {
        if let Some(obj) = self.0.get(key) {
            return obj.bind(py).clone();
        }
        let obj = PyString::new(py, key);
        if key.len() <= Self::MAX_KEY_LEN && self.0.len() < Self::MAX_KEYS {
            self.0.insert(key.into(), obj.clone().unbind());
        }
        obj
    }
}

/// A JSON value as Python objects (dict, list, str, int, float, bool, None).
pub fn value<'py>(py: Python<'py>, v: &Value, keys: &mut Keys) -> PyResult<Obj<'py>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(text) => s(py, text),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(value(py, item, keys)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => object(py, map, keys)?.into_any(),
    })
}

pub fn object<'py>(py: Python<'py>, map: &JsonObject, keys: &mut Keys) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in map {
        d.set_item(keys.get(py, k), value(py, v, keys)?)?;
    }
    Ok(d)
}

fn content_block<'py>(py: Python<'py>, block: &ContentBlock) -> PyResult<Obj<'py>> {
    let d = PyDict::new(py);
    match block {
        ContentBlock::Text { text } => {
            d.set_item(intern!(py, "type"), intern!(py, "text"))?;
            d.set_item(intern!(py, "text"), s(py, text))?;
        }
        ContentBlock::Image(ImageContent { data, mime_type, uri }) => {
            d.set_item(intern!(py, "type"), intern!(py, "image"))?;
            d.set_item(intern!(py, "data"), s(py, data))?;
            d.set_item(intern!(py, "mimeType"), s(py, mime_type))?;
            set_opt_str(&d, intern!(py, "uri"), uri)?;
        }
    }
    Ok(d.into_any())
}

fn tool_call_content<'py>(py: Python<'py>, items: &[ToolCallContent]) -> PyResult<Obj<'py>> {
    let list = PyList::empty(py);
    for item in items {
        let d = PyDict::new(py);
        match item {
            ToolCallContent::Content { content } => {
                d.set_item(intern!(py, "type"), intern!(py, "content"))?;
                d.set_item(intern!(py, "content"), content_block(py, content)?)?;
            }
            ToolCallContent::Diff(DiffContent { path, old_text, new_text }) => {
                d.set_item(intern!(py, "type"), intern!(py, "diff"))?;
                d.set_item(intern!(py, "path"), s(py, path))?;
                match old_text {
                    Some(t) => d.set_item(intern!(py, "oldText"), s(py, t))?,
                    None => d.set_item(intern!(py, "oldText"), py.None())?,
                }
                d.set_item(intern!(py, "newText"), s(py, new_text))?;
            }
        }
        list.append(d)?;
    }
    Ok(list.into_any())
}

fn locations<'py>(py: Python<'py>, items: &[ToolCallLocation]) -> PyResult<Obj<'py>> {
    let list = PyList::empty(py);
    for ToolCallLocation { path, line } in items {
        let d = PyDict::new(py);
        d.set_item(intern!(py, "path"), s(py, path))?;
        if let Some(line) = line {
            d.set_item(intern!(py, "line"), *line)?;
        }
        list.append(d)?;
    }
    Ok(list.into_any())
}

fn tool_kind(py: Python<'_>, kind: ToolKind) -> &Bound<'_, PyString> {
    match kind {
        ToolKind::Read => intern!(py, "read"),
        ToolKind::Edit => intern!(py, "edit"),
        ToolKind::Delete => intern!(py, "delete"),
        ToolKind::Move => intern!(py, "move"),
        ToolKind::Search => intern!(py, "search"),
        ToolKind::Execute => intern!(py, "execute"),
        ToolKind::Think => intern!(py, "think"),
        ToolKind::Fetch => intern!(py, "fetch"),
        ToolKind::SwitchMode => intern!(py, "switch_mode"),
        ToolKind::Other => intern!(py, "other"),
    }
}

fn tool_status(py: Python<'_>, status: ToolCallStatus) -> &Bound<'_, PyString> {
    match status {
        ToolCallStatus::Pending => intern!(py, "pending"),
        ToolCallStatus::InProgress => intern!(py, "in_progress"),
        ToolCallStatus::Completed => intern!(py, "completed"),
        ToolCallStatus::Failed => intern!(py, "failed"),
    }
}

fn plan_entry<'py>(py: Python<'py>, entry: &PlanEntry) -> PyResult<Obj<'py>> {
    let PlanEntry { content, status, priority } = entry;
    let d = PyDict::new(py);
    d.set_item(intern!(py, "content"), s(py, content))?;
    let status = match status {
        PlanEntryStatus::Pending => intern!(py, "pending"),
        PlanEntryStatus::InProgress => intern!(py, "in_progress"),
        PlanEntryStatus::Completed => intern!(py, "completed"),
    };
    d.set_item(intern!(py, "status"), status)?;
    let priority = match priority {
        PlanEntryPriority::High => intern!(py, "high"),
        PlanEntryPriority::Medium => intern!(py, "medium"),
        PlanEntryPriority::Low => intern!(py, "low"),
    };
    d.set_item(intern!(py, "priority"), priority)?;
    Ok(d.into_any())
}

fn token_usage<'py>(py: Python<'py>, usage: &TokenUsage, keys: &mut Keys) -> PyResult<Obj<'py>> {
    let TokenUsage { prompt_tokens, completion_tokens, cached_tokens, cost_usd, extra } = usage;
    let d = PyDict::new(py);
    if let Some(n) = prompt_tokens {
        d.set_item(intern!(py, "promptTokens"), *n)?;
    }
    if let Some(n) = completion_tokens {
        d.set_item(intern!(py, "completionTokens"), *n)?;
    }
    if let Some(n) = cached_tokens {
        d.set_item(intern!(py, "cachedTokens"), *n)?;
    }
    if let Some(c) = cost_usd {
        // serde_json writes a non-finite float as null.
        if c.is_finite() {
            d.set_item(intern!(py, "costUsd"), *c)?;
        } else {
            d.set_item(intern!(py, "costUsd"), py.None())?;
        }
    }
    if let Some(extra) = extra {
        d.set_item(intern!(py, "extra"), crate::json::to_py(py, extra.get(), keys)?)?;
    }
    Ok(d.into_any())
}

fn update<'py>(py: Python<'py>, update: &SessionUpdate, keys: &mut Keys) -> PyResult<Obj<'py>> {
    let d = PyDict::new(py);
    let tag = intern!(py, "sessionUpdate");
    match update {
        SessionUpdate::AgentMessageChunk { content } => {
            d.set_item(tag, intern!(py, "agent_message_chunk"))?;
            d.set_item(intern!(py, "content"), content_block(py, content)?)?;
        }
        SessionUpdate::AgentThoughtChunk { content } => {
            d.set_item(tag, intern!(py, "agent_thought_chunk"))?;
            d.set_item(intern!(py, "content"), content_block(py, content)?)?;
        }
        SessionUpdate::UserMessageChunk { content } => {
            d.set_item(tag, intern!(py, "user_message_chunk"))?;
            d.set_item(intern!(py, "content"), content_block(py, content)?)?;
        }
        SessionUpdate::ToolCall(call) => {
            let ToolCall { tool_call_id, title, tool_name, kind, status, raw_input, content, locations: locs } = call;
            d.set_item(tag, intern!(py, "tool_call"))?;
            d.set_item(intern!(py, "toolCallId"), s(py, tool_call_id))?;
            d.set_item(intern!(py, "title"), s(py, title))?;
            set_opt_str(&d, intern!(py, "toolName"), tool_name)?;
            d.set_item(intern!(py, "kind"), tool_kind(py, *kind))?;
            d.set_item(intern!(py, "status"), tool_status(py, *status))?;
            if let Some(v) = raw_input {
                d.set_item(intern!(py, "rawInput"), crate::json::to_py(py, v.get(), keys)?)?;
            }
            if let Some(c) = content {
                d.set_item(intern!(py, "content"), tool_call_content(py, c)?)?;
            }
            if let Some(l) = locs {
                d.set_item(intern!(py, "locations"), locations(py, l)?)?;
            }
        }
        SessionUpdate::ToolCallUpdate(u) => {
            let ToolCallUpdate { tool_call_id, status, title, content, locations: locs, raw_output } = u;
            d.set_item(tag, intern!(py, "tool_call_update"))?;
            d.set_item(intern!(py, "toolCallId"), s(py, tool_call_id))?;
            if let Some(st) = status {
                d.set_item(intern!(py, "status"), tool_status(py, *st))?;
            }
            set_opt_str(&d, intern!(py, "title"), title)?;
            if let Some(c) = content {
                d.set_item(intern!(py, "content"), tool_call_content(py, c)?)?;
            }
            if let Some(l) = locs {
                d.set_item(intern!(py, "locations"), locations(py, l)?)?;
            }
            if let Some(v) = raw_output {
                d.set_item(intern!(py, "rawOutput"), crate::json::to_py(py, v.get(), keys)?)?;
            }
        }
        SessionUpdate::Plan { entries } => {
            d.set_item(tag, intern!(py, "plan"))?;
            let list = PyList::empty(py);
            for e in entries {
                list.append(plan_entry(py, e)?)?;
            }
            d.set_item(intern!(py, "entries"), list)?;
        }
        SessionUpdate::Error { message, fatal } => {
            d.set_item(tag, intern!(py, "error"))?;
            d.set_item(intern!(py, "message"), s(py, message))?;
            d.set_item(intern!(py, "fatal"), *fatal)?;
        }
        SessionUpdate::Usage { scope, usage } => {
            d.set_item(tag, intern!(py, "usage"))?;
            let scope = match scope {
                UsageScope::Call => intern!(py, "call"),
                UsageScope::Run => intern!(py, "run"),
            };
            d.set_item(intern!(py, "scope"), scope)?;
            d.set_item(intern!(py, "usage"), token_usage(py, usage, keys)?)?;
        }
    }
    Ok(d.into_any())
}

/// The last Python string made for one envelope field. Consecutive events mostly repeat them
/// (the session id and model on every event of a run, the message id and timestamp on every
/// event of a line), so each is turned into a Python string once and shared.
#[derive(Default)]
struct Last(Option<(SharedStr, Py<PyString>)>);

impl Last {
    fn get<'py>(&mut self, py: Python<'py>, text: &SharedStr) -> Bound<'py, PyString> {
        if let Some((cached, obj)) = &mut self.0 {
            // The decoder shares repeated values: the same allocation is the same text.
            if SharedStr::ptr_eq(cached, text) || **cached == **text {
                return obj.bind(py).clone();
            }
        }
        let obj = PyString::new(py, text);
        self.0 = Some((text.clone(), obj.clone().unbind()));
        obj
    }

    fn set_opt(&mut self, d: &Bound<'_, PyDict>, key: &Bound<'_, PyString>, value: &Option<SharedStr>) -> PyResult<()> {
        if let Some(v) = value {
            d.set_item(key, self.get(d.py(), v))?;
        }
        Ok(())
    }
}

/// Strings shared between the events of one decoder (see [`Last`]).
#[derive(Default)]
pub struct Strings {
    session_id: Last,
    timestamp: Last,
    model: Last,
    message_id: Last,
    parent_tool_call_id: Last,
    keys: Keys,
}

impl Strings {
    /// The cache of JSON object keys (for other JSON objects of the same run, e.g. hook details).
    pub fn keys(&mut self) -> &mut Keys {
        &mut self.keys
    }
}

/// The cyclic garbage collector held off while a batch of events is built (restored on drop,
/// to what it was). Building a 64 KiB chunk's events allocates thousands of dicts and lists;
/// each 700 of them would start a collection that walks every young container — the batch being
/// built, which is all alive — so collections that could free nothing took a large share of the
/// Decoder's time on event-heavy corpora. Held off, the first allocation after the batch
/// collects once. Only Rust code runs meanwhile (and, for a record Rust cannot represent,
/// `json.loads`), never the caller's: handlers are called with the collector as the caller left
/// it.
pub struct GcPause {
    was_enabled: bool,
}

impl GcPause {
    /// Hold the collector off (the GIL is held: `_py`).
    pub fn new(_py: Python<'_>) -> GcPause {
        // SAFETY: PyGC_Disable only flips the collector's flag; the GIL is held.
        GcPause { was_enabled: unsafe { pyo3::ffi::PyGC_Disable() } == 1 }
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        if self.was_enabled {
            // SAFETY: as in `new`; the pause never outlives the GIL it was made under (it is
            // created and dropped inside one call from Python).
            unsafe { pyo3::ffi::PyGC_Enable() };
        }
    }
}

/// One content event as the seed's `OutputEvent` dict.
pub fn output_event<'py>(py: Python<'py>, ev: &OutputEvent, strings: &mut Strings) -> PyResult<Obj<'py>> {
    let OutputEvent { session_id, update: upd, timestamp, model, message_id, parent_tool_call_id, extra } = ev;
    let d = PyDict::new(py);
    strings.session_id.set_opt(&d, intern!(py, "sessionId"), session_id)?;
    d.set_item(intern!(py, "update"), update(py, upd, &mut strings.keys)?)?;
    strings.timestamp.set_opt(&d, intern!(py, "timestamp"), timestamp)?;
    strings.model.set_opt(&d, intern!(py, "model"), model)?;
    strings.message_id.set_opt(&d, intern!(py, "messageId"), message_id)?;
    strings.parent_tool_call_id.set_opt(&d, intern!(py, "parentToolCallId"), parent_tool_call_id)?;
    if let Some(extra) = extra {
        d.set_item(intern!(py, "extra"), crate::json::to_py(py, extra.get(), &mut strings.keys)?)?;
    }
    Ok(d.into_any())
}
