//! Every message, thought, user, tool and plan update in the golden expected files is a valid
//! ACP session update: it deserializes as `agent_client_protocol_schema::SessionUpdate`, and
//! nothing was silently defaulted (the ACP value re-serialized is contained in ours). Keys ACP
//! does not know are allowed only for our documented additions (`toolName`).

use std::path::Path;

use agent_client_protocol_schema::v1::SessionUpdate as AcpUpdate;
use serde_json::Value;

/// Our documented additions to the ACP shapes.
const ALLOWED_ADDITIONS: &[&str] = &["toolName"];

/// Fields ACP leaves out when they hold its default (`kind: other`, `status: pending`).
const ACP_DEFAULTS: &[(&str, &str)] = &[("kind", "other"), ("status", "pending")];

/// ACP kinds we emit with the same shape; `error` and `usage` are our own additions.
const ACP_KINDS: &[&str] =
    &["agent_message_chunk", "agent_thought_chunk", "user_message_chunk", "tool_call", "tool_call_update", "plan"];

fn contained(acp: &Value, ours: &Value, path: &str, problems: &mut Vec<String>) {
    match (acp, ours) {
        (Value::Object(a), Value::Object(o)) => {
            for (k, av) in a {
                if av.is_null() {
                    continue;
                }
                match o.get(k) {
                    Some(ov) => contained(av, ov, &format!("{path}.{k}"), problems),
                    None => problems.push(format!("{path}.{k}: ACP has {av} but we do not")),
                }
            }
            for (k, ov) in o {
                // ACP omits empty lists and default values when it writes: ours are not additions.
                let omitted_default = ov.as_array().is_some_and(Vec::is_empty)
                    || ov.is_null()
                    || ACP_DEFAULTS.iter().any(|(dk, dv)| dk == k && ov == dv);
                if !a.contains_key(k) && !omitted_default && !ALLOWED_ADDITIONS.contains(&k.as_str()) {
                    problems.push(format!("{path}.{k}: not an ACP field and not a documented addition"));
                }
            }
        }
        (Value::Array(a), Value::Array(o)) if a.len() == o.len() => {
            for (i, (av, ov)) in a.iter().zip(o).enumerate() {
                contained(av, ov, &format!("{path}[{i}]"), problems);
            }
        }
        (a, o) if a == o => {}
        (a, o) => problems.push(format!("{path}: ACP read {a}, we wrote {o}")),
    }
}

#[test]
fn golden_updates_are_valid_acp_session_updates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden");
    let mut checked = 0;
    let mut problems = Vec::new();
    for agent in std::fs::read_dir(&root).unwrap().flatten().filter(|e| e.path().is_dir()) {
        for file in std::fs::read_dir(agent.path()).unwrap().flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".expected.jsonl") {
                continue;
            }
            for (i, line) in std::fs::read_to_string(file.path()).unwrap().lines().enumerate() {
                let ev: Value = serde_json::from_str(line).unwrap();
                let update = &ev["update"];
                if !ACP_KINDS.contains(&update["sessionUpdate"].as_str().unwrap_or("")) {
                    continue;
                }
                let at = format!("{}/{name}:{}", agent.file_name().to_string_lossy(), i + 1);
                match serde_json::from_value::<AcpUpdate>(update.clone()) {
                    Ok(acp) => contained(&serde_json::to_value(&acp).unwrap(), update, &at, &mut problems),
                    Err(e) => problems.push(format!("{at}: not an ACP session update: {e}")),
                }
                checked += 1;
            }
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
    eprintln!("{checked} updates checked against ACP");
}
