//! Decimal values come out exactly as the harness printed them (issue 25 item 5): a float is
//! read with round-trip precision, so printing it again gives the same digits — in content
//! events, in hook details, and in the run's usage totals.
//!
//! The values below are the shortest decimal forms of their `f64`s (what a harness printing a
//! double writes) that a fast, not correctly rounded float reader gets wrong in the last digit.

use std::path::Path;

use agentstream_core::replay::{ReplayOptions, replay};
use agentstream_core::{Agent, parse};

const TRICKY: [&str; 5] =
    ["0.15804089449005027", "0.20976240662642942", "0.23539900008246017", "0.36742388326846875", "9.116760726776201"];

#[test]
fn each_value_is_its_own_shortest_form() {
    for text in TRICKY {
        let v: f64 = text.parse().unwrap();
        assert_eq!(v.to_string(), text, "the fixture must be the shortest form of its double");
        let via_serde: f64 = serde_json::from_str(text).unwrap();
        assert_eq!(via_serde.to_string(), text, "serde_json reads {text} with round-trip precision");
    }
}

#[test]
fn claude_and_qwen_costs_and_tool_arguments_keep_their_digits() {
    for (agent, cost) in [(Agent::Claude, TRICKY[0]), (Agent::Qwen, TRICKY[3])] {
        let input = format!(
            concat!(
                r#"{{"type":"assistant","message":{{"id":"m1","model":"x","content":[{{"type":"tool_use","id":"t1","name":"Bash","input":{{"command":"ls","timeout":{arg}}}}}]}},"session_id":"s"}}"#,
                "\n",
                r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"t1","type":"tool_result","content":"ok"}}]}},"session_id":"s"}}"#,
                "\n",
                r#"{{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":{cost},"usage":{{"input_tokens":1,"output_tokens":2}}}}"#,
                "\n"
            ),
            arg = TRICKY[1],
            cost = cost
        );
        let events: String = parse(agent, input.as_bytes()).iter().map(|e| e.to_json()).collect();
        assert!(events.contains(&format!(r#""costUsd":{cost}"#)), "{agent}: {events}");
        let r = replay(agent, input.as_bytes(), &ReplayOptions::default());
        let hooks: String = r.hooks.iter().map(|h| serde_json::to_string(h).unwrap()).collect();
        assert!(hooks.contains(&format!(r#""timeout":{}"#, TRICKY[1])), "{agent}: hook arguments: {hooks}");
        assert!(hooks.contains(&format!(r#""costUsd":{cost}"#)), "{agent}: run usage: {hooks}");
    }
}

#[test]
fn golden_cost_cases_print_the_input_digits() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden");
    for agent in ["claude", "qwen", "opencode"] {
        let input = std::fs::read_to_string(root.join(agent).join("e-cost-digits.input.jsonl")).unwrap();
        let events: String =
            parse(agent.parse().unwrap(), input.as_bytes()).iter().map(|e| e.to_json() + "\n").collect();
        let printed: Vec<&str> = TRICKY.iter().copied().filter(|t| input.contains(t)).collect();
        assert!(!printed.is_empty(), "{agent}: the case holds a tricky value");
        for t in printed {
            assert!(events.contains(t), "{agent}: {t} as printed");
        }
    }
}
