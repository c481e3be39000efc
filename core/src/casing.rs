//! snake_case → camelCase key conversion for the shapes JavaScript receives.
//!
//! Only OUR keys are renamed: values that are the harness's own records (`arguments`,
//! `raw_output`, usage `extra`, …) keep their key names verbatim, as the seed requires.

use serde_json::{Map, Value};

/// `step_index` → `stepIndex`; keys without `_` are unchanged.
pub fn camel_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Keys whose VALUES are verbatim harness records (never renamed inside).
const VERBATIM: &[&str] = &["arguments", "raw_output", "output", "result", "extra", "usage"];

/// Rename the keys of `value` (an object) to camelCase, recursing into nested objects of ours
/// (e.g. `pause`, `browser`) but not into verbatim harness records.
pub fn camel_case_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let v = if VERBATIM.contains(&k.as_str()) { v } else { camel_case_keys(v) };
                out.insert(camel_case(&k), v);
            }
            Value::Object(out)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renames_ours_keeps_harness_records() {
        let v = json!({"run_id": "r", "pause": {"tool_call_id": "t"}, "arguments": {"file_path": "/a"}});
        assert_eq!(
            camel_case_keys(v),
            json!({"runId": "r", "pause": {"toolCallId": "t"}, "arguments": {"file_path": "/a"}})
        );
        assert_eq!(camel_case("sandbox_id"), "sandboxId");
        assert_eq!(camel_case("type"), "type");
    }
}
