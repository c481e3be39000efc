//! The weight of an item: the byte length of its `event` member as compact JSON.
//!
//! Weights are EXACT, not estimated, and cheap: they are computed field by field from the
//! event model (the length serde_json would write, without writing it), so weighing an item
//! costs a pass over its strings and nothing else. Merging stays exact because serde_json
//! escapes per character: the JSON of `a + b` as a string is the JSON of `a` plus the escaped
//! bytes of `b`, so a merge adds [`escaped_len`] of the absorbed text. The envelope's own
//! fields (`runId`, `sequence`, `channel`, `coalesced`) are not counted: they are a few dozen
//! bytes per item and do not grow with content.
//!
//! Exactness is pinned by tests: the weight of every event of every golden trace, and of
//! generated events of every variant, equals the length of [`StreamItem::event_json`].

use serde::Serialize;
use serde_json::Value;

use super::item::StreamItem;
use crate::event::{
    ContentBlock, DiffContent, ImageContent, JsonObject, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    RawJson, SessionUpdate, TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    ToolKind, UsageScope,
};

/// Extra bytes serde_json writes for each input byte: `\"`, `\\`, `\n`-style two-byte escapes,
/// and six-byte `\u00XX` for the other control characters (ser.rs `ESCAPE`).
const EXTRA: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = 5;
        i += 1;
    }
    t[0x08] = 1;
    t[0x09] = 1;
    t[0x0A] = 1;
    t[0x0C] = 1;
    t[0x0D] = 1;
    t[b'"' as usize] = 1;
    t[b'\\' as usize] = 1;
    t
};

/// Length of `s` as serde_json writes it inside a JSON string, without the quotes.
///
/// Counted in blocks of 255 bytes with byte-wide counters, which the compiler turns into
/// 16-bytes-at-a-time vector code (about 1.5 instructions per byte, against 3.7 for a table
/// lookup per byte); a block holding a control character (a newline in message text, say) is
/// counted again from the table. Short strings take the table.
pub fn escaped_len(s: &str) -> usize {
    if s.len() < 32 {
        // Ids, names, timestamps: too short for the vector loop to pay for its set-up.
        return s.len() + s.bytes().map(|c| usize::from(EXTRA[usize::from(c)])).sum::<usize>();
    }
    let mut extra = 0usize;
    for block in s.as_bytes().chunks(255) {
        let (mut specials, mut controls) = (0u8, 0u8);
        for &c in block {
            specials = specials.wrapping_add(u8::from((c == b'"') | (c == b'\\')));
            controls |= u8::from(c < 0x20);
        }
        extra += if controls == 0 {
            usize::from(specials)
        } else {
            block.iter().map(|&c| usize::from(EXTRA[usize::from(c)])).sum::<usize>()
        };
    }
    s.len() + extra
}

/// `"s"` as JSON.
fn str_len(s: &str) -> usize {
    escaped_len(s) + 2
}

fn u64_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Length of `v` as compact JSON, without building the string.
pub fn json_len<T: Serialize + ?Sized>(v: &T) -> usize {
    let mut c = Counter(0);
    // Our item types always serialize (string keys only); a failure would count what was written.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The members of one JSON object being measured: `"name":value` each, commas between, braces.
/// Member names are our own camelCase keys (plain ASCII, nothing to escape).
#[derive(Default)]
struct Members {
    bytes: usize,
    count: usize,
}

impl Members {
    fn add(&mut self, name: &str, value_len: usize) {
        self.bytes += name.len() + 3 + value_len;
        self.count += 1;
    }

    fn tag(&mut self, name: &str, value: &str) {
        self.add(name, value.len() + 2);
    }

    fn str(&mut self, name: &str, value: &str) {
        self.add(name, str_len(value));
    }

    fn opt_str(&mut self, name: &str, value: &Option<impl AsRef<str>>) {
        if let Some(v) = value {
            self.str(name, v.as_ref());
        }
    }

    fn len(&self) -> usize {
        self.bytes + 2 + self.count.saturating_sub(1)
    }
}

/// `[a,b,…]` of items measured by `len`.
fn list_len<T>(items: &[T], len: impl Fn(&T) -> usize) -> usize {
    2 + items.iter().map(len).sum::<usize>() + items.len().saturating_sub(1)
}

/// Length of a JSON value as serde_json writes it (compact).
pub fn value_len(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(b) => 4 + usize::from(!b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u64_len(u),
            (None, Some(i)) => 1 + u64_len(i.unsigned_abs()),
            (None, None) => json_len(n),
        },
        Value::String(s) => str_len(s),
        Value::Array(items) => list_len(items, value_len),
        Value::Object(map) => object_len(map),
    }
}

fn object_len(map: &JsonObject) -> usize {
    2 + map.iter().map(|(k, v)| str_len(k) + 1 + value_len(v)).sum::<usize>() + map.len().saturating_sub(1)
}

/// A harness record kept as text is written verbatim.
fn raw_len(raw: &RawJson) -> usize {
    raw.get().len()
}

fn content_block_len(block: &ContentBlock) -> usize {
    let mut m = Members::default();
    match block {
        ContentBlock::Text { text } => {
            m.tag("type", "text");
            m.str("text", text);
        }
        ContentBlock::Image(ImageContent { data, mime_type, uri }) => {
            m.tag("type", "image");
            m.str("data", data);
            m.str("mimeType", mime_type);
            m.opt_str("uri", uri);
        }
    }
    m.len()
}

fn tool_call_content_len(item: &ToolCallContent) -> usize {
    let mut m = Members::default();
    match item {
        ToolCallContent::Content { content } => {
            m.tag("type", "content");
            m.add("content", content_block_len(content));
        }
        ToolCallContent::Diff(DiffContent { path, old_text, new_text }) => {
            m.tag("type", "diff");
            m.str("path", path);
            m.add("oldText", old_text.as_deref().map_or(4, str_len));
            m.str("newText", new_text);
        }
    }
    m.len()
}

fn location_len(loc: &ToolCallLocation) -> usize {
    let ToolCallLocation { path, line } = loc;
    let mut m = Members::default();
    m.str("path", path);
    if let Some(n) = line {
        m.add("line", u64_len(*n));
    }
    m.len()
}

fn tool_kind_name(kind: ToolKind) -> &'static str {
    match kind {
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

fn tool_status_name(status: ToolCallStatus) -> &'static str {
    match status {
        ToolCallStatus::Pending => "pending",
        ToolCallStatus::InProgress => "in_progress",
        ToolCallStatus::Completed => "completed",
        ToolCallStatus::Failed => "failed",
    }
}

fn plan_entry_len(entry: &PlanEntry) -> usize {
    let PlanEntry { content, status, priority } = entry;
    let mut m = Members::default();
    m.str("content", content);
    m.tag(
        "status",
        match status {
            PlanEntryStatus::Pending => "pending",
            PlanEntryStatus::InProgress => "in_progress",
            PlanEntryStatus::Completed => "completed",
        },
    );
    m.tag(
        "priority",
        match priority {
            PlanEntryPriority::High => "high",
            PlanEntryPriority::Medium => "medium",
            PlanEntryPriority::Low => "low",
        },
    );
    m.len()
}

fn token_usage_len(usage: &TokenUsage) -> usize {
    let TokenUsage { prompt_tokens, completion_tokens, cached_tokens, cost_usd, extra } = usage;
    let mut m = Members::default();
    for (name, n) in
        [("promptTokens", prompt_tokens), ("completionTokens", completion_tokens), ("cachedTokens", cached_tokens)]
    {
        if let Some(n) = n {
            m.add(name, u64_len(*n));
        }
    }
    if let Some(c) = cost_usd {
        m.add("costUsd", json_len(c)); // ryu's shortest form, or null when not finite
    }
    if let Some(x) = extra {
        m.add("extra", raw_len(x));
    }
    m.len()
}

fn update_len(update: &SessionUpdate) -> usize {
    let mut m = Members::default();
    m.tag("sessionUpdate", update.kind_name());
    match update {
        SessionUpdate::AgentMessageChunk { content }
        | SessionUpdate::AgentThoughtChunk { content }
        | SessionUpdate::UserMessageChunk { content } => m.add("content", content_block_len(content)),
        SessionUpdate::ToolCall(ToolCall {
            tool_call_id,
            title,
            tool_name,
            kind,
            status,
            raw_input,
            content,
            locations,
        }) => {
            m.str("toolCallId", tool_call_id);
            m.str("title", title);
            m.opt_str("toolName", tool_name);
            m.tag("kind", tool_kind_name(*kind));
            m.tag("status", tool_status_name(*status));
            if let Some(raw) = raw_input {
                m.add("rawInput", raw_len(raw));
            }
            if let Some(c) = content {
                m.add("content", list_len(c, tool_call_content_len));
            }
            if let Some(l) = locations {
                m.add("locations", list_len(l, location_len));
            }
        }
        SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id,
            status,
            title,
            content,
            locations,
            raw_output,
        }) => {
            m.str("toolCallId", tool_call_id);
            if let Some(s) = status {
                m.tag("status", tool_status_name(*s));
            }
            m.opt_str("title", title);
            if let Some(c) = content {
                m.add("content", list_len(c, tool_call_content_len));
            }
            if let Some(l) = locations {
                m.add("locations", list_len(l, location_len));
            }
            if let Some(raw) = raw_output {
                m.add("rawOutput", raw_len(raw));
            }
        }
        SessionUpdate::Plan { entries } => m.add("entries", list_len(entries, plan_entry_len)),
        SessionUpdate::Error { message, fatal } => {
            m.str("message", message);
            m.add("fatal", 4 + usize::from(!fatal));
        }
        SessionUpdate::Usage { scope, usage } => {
            m.tag(
                "scope",
                match scope {
                    UsageScope::Call => "call",
                    UsageScope::Run => "run",
                },
            );
            m.add("usage", token_usage_len(usage));
        }
    }
    m.len()
}

/// Length of a content event as compact JSON ([`OutputEvent::to_json`]), computed field by field.
pub fn output_event_len(ev: &OutputEvent) -> usize {
    let OutputEvent { session_id, update, timestamp, model, message_id, parent_tool_call_id, extra } = ev;
    let mut m = Members::default();
    m.opt_str("sessionId", session_id);
    m.add("update", update_len(update));
    m.opt_str("timestamp", timestamp);
    m.opt_str("model", model);
    m.opt_str("messageId", message_id);
    m.opt_str("parentToolCallId", parent_tool_call_id);
    if let Some(x) = extra {
        m.add("extra", raw_len(x));
    }
    m.len()
}

/// The weight of an item: the length of [`StreamItem::event_json`], computed without
/// serializing (lifecycle items, a few per run, go through a counting serializer).
pub fn item_weight(item: &StreamItem) -> usize {
    match item {
        StreamItem::Stdout(s) | StreamItem::Stderr(s) => str_len(s),
        StreamItem::Content(ev) => output_event_len(ev),
        StreamItem::Lifecycle(_) => json_len(&item.event()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::SharedStr;
    use crate::lifecycle::{AgentState, LifecycleEvent, LifecycleReason, SandboxState};
    use proptest::prelude::*;

    /// Text with every kind of byte serde_json escapes, and non-ASCII.
    fn text() -> impl Strategy<Value = String> {
        // Short (table) and long (vector blocks) strings.
        "\\PC{0,12}|[\\x00-\\x7f]{0,24}|[a\"\\\\\n\t\\x01é]{0,10}|[a-z\"\\\\\n]{30,300}|\\PC{30,80}"
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from), // non-finite becomes null
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((text(), inner), 0..4).prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn object() -> impl Strategy<Value = JsonObject> {
        proptest::collection::vec((text(), json_value()), 0..4).prop_map(|kv| kv.into_iter().collect())
    }

    fn raw() -> impl Strategy<Value = RawJson> {
        prop_oneof![
            json_value().prop_map(RawJson::from),
            // Text as a harness prints it (spaces kept verbatim).
            json_value().prop_map(|v| RawJson::from_text(serde_json::to_string_pretty(&v).unwrap()).unwrap()),
        ]
    }

    fn block() -> impl Strategy<Value = ContentBlock> {
        prop_oneof![
            text().prop_map(ContentBlock::text),
            (text(), text(), proptest::option::of(text()))
                .prop_map(|(data, mime_type, uri)| ContentBlock::Image(ImageContent { data, mime_type, uri })),
        ]
    }

    fn tool_content() -> impl Strategy<Value = Vec<ToolCallContent>> {
        let one = prop_oneof![
            block().prop_map(|content| ToolCallContent::Content { content }),
            (text(), proptest::option::of(text()), text())
                .prop_map(|(path, old_text, new_text)| ToolCallContent::Diff(DiffContent { path, old_text, new_text })),
        ];
        proptest::collection::vec(one, 0..3)
    }

    fn locations() -> impl Strategy<Value = Vec<ToolCallLocation>> {
        proptest::collection::vec(
            (text(), proptest::option::of(any::<u64>())).prop_map(|(path, line)| ToolCallLocation { path, line }),
            0..3,
        )
    }

    fn kind() -> impl Strategy<Value = ToolKind> {
        prop_oneof![
            Just(ToolKind::Read),
            Just(ToolKind::Edit),
            Just(ToolKind::Delete),
            Just(ToolKind::Move),
            Just(ToolKind::Search),
            Just(ToolKind::Execute),
            Just(ToolKind::Think),
            Just(ToolKind::Fetch),
            Just(ToolKind::SwitchMode),
            Just(ToolKind::Other),
        ]
    }

    fn status() -> impl Strategy<Value = ToolCallStatus> {
        prop_oneof![
            Just(ToolCallStatus::Pending),
            Just(ToolCallStatus::InProgress),
            Just(ToolCallStatus::Completed),
            Just(ToolCallStatus::Failed),
        ]
    }

    fn plan_entry() -> impl Strategy<Value = PlanEntry> {
        (
            text(),
            prop_oneof![
                Just(PlanEntryStatus::Pending),
                Just(PlanEntryStatus::InProgress),
                Just(PlanEntryStatus::Completed)
            ],
            prop_oneof![Just(PlanEntryPriority::High), Just(PlanEntryPriority::Medium), Just(PlanEntryPriority::Low)],
        )
            .prop_map(|(content, status, priority)| PlanEntry { content, status, priority })
    }

    fn usage() -> impl Strategy<Value = TokenUsage> {
        let cost = prop_oneof![any::<f64>(), Just(0.01), Just(1.0), Just(f64::NAN), Just(f64::INFINITY), Just(1e21)];
        (
            proptest::option::of(any::<u64>()),
            proptest::option::of(0u64..1000),
            proptest::option::of(any::<u64>()),
            proptest::option::of(cost),
            proptest::option::of(object()),
        )
            .prop_map(|(prompt_tokens, completion_tokens, cached_tokens, cost_usd, extra)| TokenUsage {
                prompt_tokens,
                completion_tokens,
                cached_tokens,
                cost_usd,
                extra: extra.map(|m| RawJson::from_value(&Value::Object(m))),
            })
    }

    fn update() -> impl Strategy<Value = SessionUpdate> {
        let opt = || proptest::option::of(text());
        prop_oneof![
            block().prop_map(|content| SessionUpdate::AgentMessageChunk { content }),
            block().prop_map(|content| SessionUpdate::AgentThoughtChunk { content }),
            block().prop_map(|content| SessionUpdate::UserMessageChunk { content }),
            (
                text(),
                text(),
                opt(),
                kind(),
                status(),
                proptest::option::of(raw()),
                proptest::option::of(tool_content()),
                proptest::option::of(locations())
            )
                .prop_map(
                    |(tool_call_id, title, tool_name, kind, status, raw_input, content, locations)| {
                        SessionUpdate::ToolCall(ToolCall {
                            tool_call_id,
                            title,
                            tool_name,
                            kind,
                            status,
                            raw_input,
                            content,
                            locations,
                        })
                    }
                ),
            (
                text(),
                proptest::option::of(status()),
                opt(),
                proptest::option::of(tool_content()),
                proptest::option::of(locations()),
                proptest::option::of(raw())
            )
                .prop_map(|(tool_call_id, status, title, content, locations, raw_output)| {
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                        tool_call_id,
                        status,
                        title,
                        content,
                        locations,
                        raw_output,
                    })
                }),
            proptest::collection::vec(plan_entry(), 0..3).prop_map(|entries| SessionUpdate::Plan { entries }),
            (text(), any::<bool>()).prop_map(|(message, fatal)| SessionUpdate::Error { message, fatal }),
            (prop_oneof![Just(UsageScope::Call), Just(UsageScope::Run)], usage())
                .prop_map(|(scope, usage)| SessionUpdate::Usage { scope, usage }),
        ]
    }

    fn event() -> impl Strategy<Value = OutputEvent> {
        let opt = || proptest::option::of(text().prop_map(SharedStr::from));
        (update(), opt(), opt(), opt(), opt(), opt(), proptest::option::of(object())).prop_map(
            |(update, session_id, timestamp, model, message_id, parent_tool_call_id, extra)| OutputEvent {
                session_id,
                update,
                timestamp,
                model,
                message_id,
                parent_tool_call_id,
                extra: extra.map(|m| RawJson::from_value(&Value::Object(m))),
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn escaped_len_matches_serde_json(s in "\\PC*|[\\x00-\\x7f]*|[\"\\\\a\n\\x1f]*") {
            prop_assert_eq!(escaped_len(&s) + 2, serde_json::to_string(&s).unwrap().len());
        }

        #[test]
        fn item_weight_is_the_event_json_length(ev in event(), s in text()) {
            for item in [StreamItem::Content(ev), StreamItem::Stdout(s.clone()), StreamItem::Stderr(s)] {
                prop_assert_eq!(item_weight(&item), item.event_json().len(), "{:?}", item);
            }
        }

        #[test]
        fn value_len_is_the_json_length(v in json_value()) {
            prop_assert_eq!(value_len(&v), serde_json::to_string(&v).unwrap().len());
        }
    }

    #[test]
    fn escaped_len_of_long_texts() {
        // Across the 255-byte blocks of the counters, with and without control characters.
        for unit in ["\"\\", "ab\"cdefg\\", "x\ny\"", "\u{1}\"\u{7f}é\\"] {
            for n in [1, 100, 255 * 8, 5000] {
                let s = unit.repeat(n);
                assert_eq!(escaped_len(&s) + 2, serde_json::to_string(&s).unwrap().len(), "{unit:?} x {n}");
            }
        }
    }

    #[test]
    fn lifecycle_items_are_weighed_too() {
        let item = StreamItem::Lifecycle(LifecycleEvent::local(
            LifecycleReason::RunStart,
            SandboxState::Running,
            AgentState::Running,
            "2026-01-01T00:00:00.000Z",
        ));
        assert_eq!(item_weight(&item), item.event_json().len());
    }

    /// Every event of every golden trace (real harness output, every decoder's shapes).
    #[test]
    fn every_golden_event_weighs_its_json_length() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden");
        let mut checked = 0;
        for agent in crate::Agent::ALL {
            let Ok(dir) = std::fs::read_dir(root.join(agent.name())) else { continue };
            for path in dir.filter_map(|e| e.ok().map(|e| e.path())) {
                if !path.to_string_lossy().ends_with(".input.jsonl") {
                    continue;
                }
                let mut decoder = crate::Decoder::new(agent);
                let mut events = decoder.feed(&std::fs::read(&path).unwrap());
                events.extend(decoder.finish());
                for ev in events {
                    let item = StreamItem::Content(ev);
                    assert_eq!(item_weight(&item), item.event_json().len(), "{}: {item:?}", path.display());
                    checked += 1;
                }
            }
        }
        assert!(checked > 500, "only {checked} golden events");
    }
}
