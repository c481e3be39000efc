//! Writing content events as JSON text, fast: byte for byte what serde_json writes for them.
//!
//! serde_json escapes a string one byte at a time through a table; answer text, tool output
//! and diffs make most of an event's bytes, so that loop was the largest single cost of
//! `agentstream parse` (a fifth of its time on kimi's corpus). Here a string's plain runs are
//! found eight bytes at a time and copied whole. The shape is the serde derive's, field by field
//! (`skip_serializing_if` fields left out, internally tagged enums flattened); a test compares
//! the two on every golden event and on random strings, so the derive stays the definition.

use std::fmt::Write as _;

use crate::event::{
    ContentBlock, DiffContent, ImageContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, RawJson,
    SessionUpdate, TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolKind,
    UsageScope,
};
use crate::json::text::find_special;

impl OutputEvent {
    /// Append this event's compact JSON (exactly [`OutputEvent::to_json`]'s text) to `out`:
    /// the faster path for writing many events into one buffer.
    pub fn write_json(&self, out: &mut String) {
        out.push('{');
        let mut first = true;
        opt_str_field(out, &mut first, "sessionId", self.session_id.as_deref());
        key(out, &mut first, "update");
        update(out, &self.update);
        opt_str_field(out, &mut first, "timestamp", self.timestamp.as_deref());
        opt_str_field(out, &mut first, "model", self.model.as_deref());
        opt_str_field(out, &mut first, "messageId", self.message_id.as_deref());
        opt_str_field(out, &mut first, "parentToolCallId", self.parent_tool_call_id.as_deref());
        opt_raw_field(out, &mut first, "extra", self.extra.as_ref());
        out.push('}');
    }
}

/// `s` as a JSON string, escaped as serde_json escapes it (`"`, `\`, control characters;
/// `\b \f \n \r \t` short, the others `\u00xx`).
pub(crate) fn write_str(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let b = s.as_bytes();
    let mut start = 0;
    loop {
        let at = find_special(b, start);
        // Cut only next to ASCII bytes (or at the end): both ends are character boundaries.
        out.push_str(&s[start..at]);
        let Some(&c) = b.get(at) else { break };
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(c >> 4)]));
                out.push(char::from(HEX[usize::from(c & 0xf)]));
            }
        }
        start = at + 1;
    }
    out.push('"');
}

fn key(out: &mut String, first: &mut bool, name: &str) {
    if !std::mem::take(first) {
        out.push(',');
    }
    // Field names are plain ASCII identifiers: nothing to escape.
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}

fn str_field(out: &mut String, first: &mut bool, name: &str, value: &str) {
    key(out, first, name);
    write_str(out, value);
}

fn opt_str_field(out: &mut String, first: &mut bool, name: &str, value: Option<&str>) {
    if let Some(v) = value {
        str_field(out, first, name, v);
    }
}

fn opt_raw_field(out: &mut String, first: &mut bool, name: &str, value: Option<&RawJson>) {
    if let Some(raw) = value {
        key(out, first, name);
        out.push_str(raw.get());
    }
}

fn opt_u64_field(out: &mut String, first: &mut bool, name: &str, value: Option<u64>) {
    if let Some(n) = value {
        key(out, first, name);
        let _ = write!(out, "{n}");
    }
}

/// A literal (tag) field: `"name":"value"` with a value that needs no escaping.
fn tag(out: &mut String, first: &mut bool, name: &str, value: &str) {
    key(out, first, name);
    out.push('"');
    out.push_str(value);
    out.push('"');
}

fn list<T>(out: &mut String, items: &[T], write: fn(&mut String, &T)) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(out, item);
    }
    out.push(']');
}

fn update(out: &mut String, u: &SessionUpdate) {
    out.push('{');
    let mut first = true;
    tag(out, &mut first, "sessionUpdate", u.kind_name());
    match u {
        SessionUpdate::AgentMessageChunk { content }
        | SessionUpdate::AgentThoughtChunk { content }
        | SessionUpdate::UserMessageChunk { content } => {
            key(out, &mut first, "content");
            content_block(out, content);
        }
        SessionUpdate::ToolCall(call) => tool_call_fields(out, &mut first, call),
        SessionUpdate::ToolCallUpdate(update) => tool_call_update_fields(out, &mut first, update),
        SessionUpdate::Plan { entries } => {
            key(out, &mut first, "entries");
            list(out, entries, plan_entry);
        }
        SessionUpdate::Error { message, fatal } => {
            str_field(out, &mut first, "message", message);
            key(out, &mut first, "fatal");
            out.push_str(if *fatal { "true" } else { "false" });
        }
        SessionUpdate::Usage { scope, usage } => {
            tag(out, &mut first, "scope", usage_scope(*scope));
            key(out, &mut first, "usage");
            token_usage(out, usage);
        }
    }
    out.push('}');
}

fn content_block(out: &mut String, c: &ContentBlock) {
    out.push('{');
    let mut first = true;
    match c {
        ContentBlock::Text { text } => {
            tag(out, &mut first, "type", "text");
            str_field(out, &mut first, "text", text);
        }
        ContentBlock::Image(image) => {
            tag(out, &mut first, "type", "image");
            image_fields(out, &mut first, image);
        }
    }
    out.push('}');
}

fn image_fields(out: &mut String, first: &mut bool, i: &ImageContent) {
    str_field(out, first, "data", &i.data);
    str_field(out, first, "mimeType", &i.mime_type);
    opt_str_field(out, first, "uri", i.uri.as_deref());
}

fn tool_call_fields(out: &mut String, first: &mut bool, c: &ToolCall) {
    str_field(out, first, "toolCallId", &c.tool_call_id);
    str_field(out, first, "title", &c.title);
    opt_str_field(out, first, "toolName", c.tool_name.as_deref());
    tag(out, first, "kind", tool_kind(c.kind));
    tag(out, first, "status", tool_status(c.status));
    opt_raw_field(out, first, "rawInput", c.raw_input.as_ref());
    if let Some(content) = &c.content {
        key(out, first, "content");
        list(out, content, tool_call_content);
    }
    if let Some(locations) = &c.locations {
        key(out, first, "locations");
        list(out, locations, location);
    }
}

fn tool_call_update_fields(out: &mut String, first: &mut bool, u: &ToolCallUpdate) {
    str_field(out, first, "toolCallId", &u.tool_call_id);
    if let Some(status) = u.status {
        tag(out, first, "status", tool_status(status));
    }
    opt_str_field(out, first, "title", u.title.as_deref());
    if let Some(content) = &u.content {
        key(out, first, "content");
        list(out, content, tool_call_content);
    }
    if let Some(locations) = &u.locations {
        key(out, first, "locations");
        list(out, locations, location);
    }
    opt_raw_field(out, first, "rawOutput", u.raw_output.as_ref());
}

fn tool_call_content(out: &mut String, c: &ToolCallContent) {
    out.push('{');
    let mut first = true;
    match c {
        ToolCallContent::Content { content } => {
            tag(out, &mut first, "type", "content");
            key(out, &mut first, "content");
            content_block(out, content);
        }
        ToolCallContent::Diff(diff) => {
            tag(out, &mut first, "type", "diff");
            diff_fields(out, &mut first, diff);
        }
    }
    out.push('}');
}

fn diff_fields(out: &mut String, first: &mut bool, d: &DiffContent) {
    str_field(out, first, "path", &d.path);
    key(out, first, "oldText");
    match &d.old_text {
        Some(text) => write_str(out, text),
        None => out.push_str("null"),
    }
    str_field(out, first, "newText", &d.new_text);
}

fn location(out: &mut String, l: &ToolCallLocation) {
    out.push('{');
    let mut first = true;
    str_field(out, &mut first, "path", &l.path);
    opt_u64_field(out, &mut first, "line", l.line);
    out.push('}');
}

fn plan_entry(out: &mut String, e: &PlanEntry) {
    out.push('{');
    let mut first = true;
    str_field(out, &mut first, "content", &e.content);
    tag(
        out,
        &mut first,
        "status",
        match e.status {
            PlanEntryStatus::Pending => "pending",
            PlanEntryStatus::InProgress => "in_progress",
            PlanEntryStatus::Completed => "completed",
        },
    );
    tag(
        out,
        &mut first,
        "priority",
        match e.priority {
            PlanEntryPriority::High => "high",
            PlanEntryPriority::Medium => "medium",
            PlanEntryPriority::Low => "low",
        },
    );
    out.push('}');
}

fn token_usage(out: &mut String, u: &TokenUsage) {
    out.push('{');
    let mut first = true;
    opt_u64_field(out, &mut first, "promptTokens", u.prompt_tokens);
    opt_u64_field(out, &mut first, "completionTokens", u.completion_tokens);
    opt_u64_field(out, &mut first, "cachedTokens", u.cached_tokens);
    if let Some(cost) = u.cost_usd {
        key(out, &mut first, "costUsd");
        // serde_json's own float text (shortest round-trip; `null` when not finite).
        out.push_str(&serde_json::to_string(&cost).unwrap_or_else(|_| "null".to_string()));
    }
    opt_raw_field(out, &mut first, "extra", u.extra.as_ref());
    out.push('}');
}

fn usage_scope(s: UsageScope) -> &'static str {
    match s {
        UsageScope::Call => "call",
        UsageScope::Run => "run",
    }
}

fn tool_status(s: ToolCallStatus) -> &'static str {
    match s {
        ToolCallStatus::Pending => "pending",
        ToolCallStatus::InProgress => "in_progress",
        ToolCallStatus::Completed => "completed",
        ToolCallStatus::Failed => "failed",
    }
}

fn tool_kind(k: ToolKind) -> &'static str {
    match k {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Delete => "delete",
        ToolKind::Move => "move",
        ToolKind::Search => "search",
        ToolKind::Execute => "execute",
        ToolKind::Think => "think",
        ToolKind::Fetch => "fetch",
        ToolKind::SwitchMode => "switch_mode",
        ToolKind::Other => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fast(ev: &OutputEvent) -> String {
        let mut s = String::new();
        ev.write_json(&mut s);
        s
    }

    fn serde_text(ev: &OutputEvent) -> String {
        serde_json::to_string(ev).unwrap()
    }

    #[test]
    fn every_golden_event_is_written_as_serde_writes_it() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden");
        let mut n = 0;
        for agent in crate::Agent::ALL {
            let Ok(dir) = std::fs::read_dir(root.join(agent.name())) else { continue };
            for entry in dir.flatten() {
                let path = entry.path();
                if !path.to_string_lossy().ends_with(".input.jsonl") {
                    continue;
                }
                for ev in crate::parse(agent, &std::fs::read(&path).unwrap()) {
                    assert_eq!(fast(&ev), serde_text(&ev), "{}", path.display());
                    n += 1;
                }
            }
        }
        assert!(n > 1000, "the golden events ({n}) cover every shape");
    }

    #[test]
    fn every_shape_is_written_as_serde_writes_it() {
        let call = ToolCall {
            tool_call_id: "t\u{1}".into(),
            title: "`ls`".into(),
            tool_name: Some("Bash".into()),
            kind: ToolKind::SwitchMode,
            status: ToolCallStatus::InProgress,
            raw_input: Some(RawJson::from_value(&serde_json::json!({"a": [1, "x\"y"]}))),
            content: Some(vec![
                ToolCallContent::text("out\n"),
                ToolCallContent::Diff(DiffContent { path: "/p".into(), old_text: None, new_text: "n".into() }),
                ToolCallContent::Content {
                    content: ContentBlock::Image(ImageContent {
                        data: "AA==".into(),
                        mime_type: "image/png".into(),
                        uri: Some("file:///x".into()),
                    }),
                },
            ]),
            locations: Some(vec![ToolCallLocation { path: "/p".into(), line: Some(3) }, ToolCallLocation::path("/q")]),
        };
        let mut update = ToolCallUpdate::new("t");
        update.status = Some(ToolCallStatus::Failed);
        update.title = Some("T".into());
        update.locations = Some(vec![]);
        update.content = Some(vec![]);
        update.raw_output = Some(RawJson::from_value(&serde_json::json!("x")));
        let updates = [
            SessionUpdate::message("hi"),
            SessionUpdate::thought("hmm"),
            SessionUpdate::user_message("q"),
            SessionUpdate::ToolCall(call),
            SessionUpdate::ToolCallUpdate(update),
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new("bare")),
            SessionUpdate::Plan {
                entries: vec![
                    PlanEntry {
                        content: "a".into(),
                        status: PlanEntryStatus::InProgress,
                        priority: PlanEntryPriority::High,
                    },
                    PlanEntry {
                        content: "b".into(),
                        status: PlanEntryStatus::Completed,
                        priority: PlanEntryPriority::Low,
                    },
                ],
            },
            SessionUpdate::Plan { entries: vec![] },
            SessionUpdate::error("boom", true),
            SessionUpdate::Usage {
                scope: UsageScope::Run,
                usage: TokenUsage {
                    prompt_tokens: Some(1),
                    completion_tokens: Some(u64::MAX),
                    cached_tokens: None,
                    cost_usd: Some(0.15804089449005027),
                    extra: Some(RawJson::from_value(&serde_json::json!({"k": 1}))),
                },
            },
            SessionUpdate::Usage { scope: UsageScope::Call, usage: TokenUsage::default() },
        ];
        for u in updates {
            let mut ev = OutputEvent::new(u);
            assert_eq!(fast(&ev), serde_text(&ev));
            ev.session_id = Some("s".into());
            ev.timestamp = Some("2026".into());
            ev.model = Some("m".into());
            ev.message_id = Some("id".into());
            ev.parent_tool_call_id = Some("p".into());
            ev.extra = Some(RawJson::from_value(&serde_json::json!({"stop_reason": null})));
            assert_eq!(fast(&ev), serde_text(&ev));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn strings_are_escaped_as_serde_escapes_them(s in any::<String>(), ctrl in proptest::collection::vec(0u8..0x20, 0..6)) {
            let mut text = s;
            for c in ctrl {
                text.push(char::from(c));
                text.push_str("\"\\/\u{7f}é");
            }
            let mut out = String::new();
            write_str(&mut out, &text);
            prop_assert_eq!(out, serde_json::to_string(&text).unwrap());
        }
    }
}
