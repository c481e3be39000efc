//! The content event model: the seed's `OutputEvent` and its eight `SessionUpdate` variants.
//!
//! These types are THE definition every binding derives from. Their serde form is the wire
//! form in every language: camelCase keys, `sessionUpdate` / `type` discriminators, and
//! optional fields ABSENT when unknown (never `null`). The one nullable field is
//! [`DiffContent::old_text`], which the seed defines as `str | None` (None for a new file).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::raw_json::RawJson;

/// A JSON object with the harness's own key names, kept verbatim.
pub type JsonObject = Map<String, Value>;

/// Text that many events of a run repeat (session id, model, message id, a line's timestamp):
/// cloning it is a reference-count bump, not a copy. Serializes as a plain JSON string and
/// derefs to `&str`; build one with `SharedStr::from("...")` or `.into()`.
pub type SharedStr = std::sync::Arc<str>;

/// One parsed event on the `content` channel: a session update plus the facts of the wire
/// line it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OutputEvent {
    /// The harness's session/thread id, captured when first seen and stamped on every later event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SharedStr>,
    /// What happened.
    pub update: SessionUpdate,
    /// The harness's own clock for this line (ISO 8601 when the harness prints one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<SharedStr>,
    /// The model the harness named for this line (or on its init line for gemini and droid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<SharedStr>,
    /// The harness's id for the LLM message this line belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<SharedStr>,
    /// On a subagent's line: the parent's tool call that delegated to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<SharedStr>,
    /// Other facts of the line: a JSON object with the harness's own key names and values as
    /// printed (e.g. `stop_reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<JsonObject>"))]
    pub extra: Option<RawJson>,
}

impl OutputEvent {
    /// An event carrying only an update; envelope fields are filled by the decoder.
    pub fn new(update: SessionUpdate) -> Self {
        OutputEvent {
            session_id: None,
            update,
            timestamp: None,
            model: None,
            message_id: None,
            parent_tool_call_id: None,
            extra: None,
        }
    }

    /// Serialize to compact JSON (the exact seed shape, byte for byte what serde_json writes for
    /// it). Never fails for these types. [`OutputEvent::write_json`] appends to a buffer instead.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(256);
        self.write_json(&mut out);
        out
    }
}

/// The eight kinds of session update, discriminated by `sessionUpdate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    /// Text or an image from the agent, in pieces.
    #[cfg_attr(feature = "schema", schemars(title = "AgentMessageChunk"))]
    AgentMessageChunk {
        /// The piece.
        content: ContentBlock,
    },
    /// Reasoning/thinking text, in pieces.
    #[cfg_attr(feature = "schema", schemars(title = "AgentThoughtChunk"))]
    AgentThoughtChunk {
        /// The piece.
        content: ContentBlock,
    },
    /// The user's message echoed by the harness.
    #[cfg_attr(feature = "schema", schemars(title = "UserMessageChunk"))]
    UserMessageChunk {
        /// The piece.
        content: ContentBlock,
    },
    /// A tool call started (or was announced).
    ToolCall(ToolCall),
    /// A tool call progressed or finished.
    ToolCallUpdate(ToolCallUpdate),
    /// The agent's todo list; each plan replaces the whole list.
    #[cfg_attr(feature = "schema", schemars(title = "Plan"))]
    Plan {
        /// Every entry of the list.
        entries: Vec<PlanEntry>,
    },
    /// A failure the harness reported. Not agent work.
    #[cfg_attr(feature = "schema", schemars(title = "AgentError"))]
    Error {
        /// The harness's own message, verbatim.
        message: String,
        /// True when the harness treated it as terminal for the turn.
        fatal: bool,
    },
    /// Token accounting the harness reported. Not agent work.
    #[cfg_attr(feature = "schema", schemars(title = "AgentUsage"))]
    Usage {
        /// One LLM call, or the harness's whole-run total.
        scope: UsageScope,
        /// The counters.
        usage: TokenUsage,
    },
}

impl SessionUpdate {
    /// The `sessionUpdate` discriminator as it appears on the wire.
    pub fn kind_name(&self) -> &'static str {
        match self {
            SessionUpdate::AgentMessageChunk { .. } => "agent_message_chunk",
            SessionUpdate::AgentThoughtChunk { .. } => "agent_thought_chunk",
            SessionUpdate::UserMessageChunk { .. } => "user_message_chunk",
            SessionUpdate::ToolCall(_) => "tool_call",
            SessionUpdate::ToolCallUpdate(_) => "tool_call_update",
            SessionUpdate::Plan { .. } => "plan",
            SessionUpdate::Error { .. } => "error",
            SessionUpdate::Usage { .. } => "usage",
        }
    }

    /// Whether this update is agent work: everything but `error` and `usage` (seed: `did_work`).
    pub fn is_work(&self) -> bool {
        !matches!(self, SessionUpdate::Error { .. } | SessionUpdate::Usage { .. })
    }

    /// A text message chunk.
    pub fn message(text: impl Into<String>) -> Self {
        SessionUpdate::AgentMessageChunk { content: ContentBlock::text(text) }
    }

    /// A text thought chunk.
    pub fn thought(text: impl Into<String>) -> Self {
        SessionUpdate::AgentThoughtChunk { content: ContentBlock::text(text) }
    }

    /// A text user-echo chunk.
    pub fn user_message(text: impl Into<String>) -> Self {
        SessionUpdate::UserMessageChunk { content: ContentBlock::text(text) }
    }

    /// A harness-reported error.
    pub fn error(message: impl Into<String>, fatal: bool) -> Self {
        SessionUpdate::Error { message: message.into(), fatal }
    }
}

/// True when any event of the list is agent work (see [`SessionUpdate::is_work`]).
pub fn did_work<'a>(events: impl IntoIterator<Item = &'a OutputEvent>) -> bool {
    events.into_iter().any(|e| e.update.is_work())
}

/// A piece of message content: text or an image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    #[cfg_attr(feature = "schema", schemars(title = "TextContent"))]
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded, or referenced by `uri` (then `data` and `mimeType` may be empty).
    Image(ImageContent),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text } => Some(text),
            ContentBlock::Image(_) => None,
        }
    }
}

/// An image content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded bytes ("" when only a `uri` is known).
    pub data: String,
    /// e.g. `image/png` ("" when unknown).
    pub mime_type: String,
    /// Where the image lives, when it was referenced rather than inlined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}

/// Content attached to a tool call: wrapped content, or a diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    /// A content block (the harness's result text, or an image).
    #[cfg_attr(feature = "schema", schemars(title = "WrappedContent"))]
    Content {
        /// The block.
        content: ContentBlock,
    },
    /// A file change.
    Diff(DiffContent),
}

impl ToolCallContent {
    /// Wrapped text.
    pub fn text(text: impl Into<String>) -> Self {
        ToolCallContent::Content { content: ContentBlock::text(text) }
    }
}

/// A file change shown as a diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DiffContent {
    /// The file.
    pub path: String,
    /// The text before; `null` for a new file (the seed's `str | None`).
    pub old_text: Option<String>,
    /// The text after.
    pub new_text: String,
}

/// The category of a tool, for icons and grouping. See `tools::tool_kind` for the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files.
    Read,
    /// Edits or writes files.
    Edit,
    /// Deletes files.
    Delete,
    /// Moves files.
    Move,
    /// Searches files.
    Search,
    /// Runs commands.
    Execute,
    /// Subagents and thinking tools.
    Think,
    /// Web fetch and search.
    Fetch,
    /// Leaves plan mode.
    SwitchMode,
    /// MCP tools and anything unknown.
    Other,
}

/// Status of a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Announced, not yet running.
    Pending,
    /// Running.
    InProgress,
    /// Finished successfully.
    Completed,
    /// Finished with a failure.
    Failed,
}

/// A file a tool touches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolCallLocation {
    /// The file path.
    pub path: String,
    /// A line within it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

impl ToolCallLocation {
    /// A location without a line.
    pub fn path(path: impl Into<String>) -> Self {
        ToolCallLocation { path: path.into(), line: None }
    }
}

/// A tool call starting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The harness's id for the call; matches later `tool_call_update`s.
    pub tool_call_id: String,
    /// A title for people to read (not round-trippable; use `toolName`).
    pub title: String,
    /// The harness-native tool name, verbatim (our documented addition to ACP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The tool's category.
    pub kind: ToolKind,
    /// The call's status.
    pub status: ToolCallStatus,
    /// The tool input as the harness printed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<RawJson>,
    /// Content of the call (a command's description, a diff, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
    /// Files the call touches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolCallLocation>>,
}

/// A tool call progressing or finishing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    /// The id of the call this updates (the call may not have been seen: handle out-of-order).
    pub tool_call_id: String,
    /// New status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    /// New title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The result, exactly as the harness sent it (never fenced or prefixed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
    /// Files the call touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolCallLocation>>,
    /// The harness's own structured record of the result, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<RawJson>,
}

impl ToolCallUpdate {
    /// An update with only an id.
    pub fn new(tool_call_id: impl Into<String>) -> Self {
        ToolCallUpdate {
            tool_call_id: tool_call_id.into(),
            status: None,
            title: None,
            content: None,
            locations: None,
            raw_output: None,
        }
    }
}

/// One todo of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PlanEntry {
    /// What the todo says.
    pub content: String,
    /// Where it stands.
    pub status: PlanEntryStatus,
    /// How important it is (`medium` when the harness does not say).
    pub priority: PlanEntryPriority,
}

impl PlanEntryPriority {
    /// A harness's priority word: `high` and `low` as printed, anything else (or none) `medium`.
    pub fn from_wire(priority: Option<&str>) -> Self {
        match priority {
            Some("high") => PlanEntryPriority::High,
            Some("low") => PlanEntryPriority::Low,
            _ => PlanEntryPriority::Medium,
        }
    }
}

/// Status of a plan entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PlanEntryStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// Priority of a plan entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PlanEntryPriority {
    /// High.
    High,
    /// Medium (the default).
    Medium,
    /// Low.
    Low,
}

/// Whether a usage update covers one LLM call or the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum UsageScope {
    /// One LLM inference (repeats per line of one message: keep the last per `messageId`).
    Call,
    /// The harness's own whole-run total.
    Run,
}

/// Token counters, with Harbor ATIF `Metrics` names. A counter the harness did not print is absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Input INCLUDING the cached and cache-written shares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// The cache-read share of `promptTokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Cost in USD, only when the harness priced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The harness's other counters: a JSON object with its own key names and values as printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<JsonObject>"))]
    pub extra: Option<RawJson>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_fields_are_absent_not_null() {
        let ev = OutputEvent::new(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new("t1")));
        assert_eq!(ev.to_json(), r#"{"update":{"sessionUpdate":"tool_call_update","toolCallId":"t1"}}"#);
    }

    #[test]
    fn diff_old_text_is_null_for_new_files() {
        let c = ToolCallContent::Diff(DiffContent { path: "/a".into(), old_text: None, new_text: "x".into() });
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"type":"diff","path":"/a","oldText":null,"newText":"x"}"#);
    }

    #[test]
    fn wire_names_round_trip() {
        let json = r#"{"sessionId":"s","update":{"sessionUpdate":"usage","scope":"call","usage":{"promptTokens":3,"cachedTokens":1,"costUsd":0.5}},"messageId":"m"}"#;
        let ev: OutputEvent = serde_json::from_str(json).unwrap();
        assert_eq!(ev.to_json(), json);
        assert!(!ev.update.is_work());
    }
}
