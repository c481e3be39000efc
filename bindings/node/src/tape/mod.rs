//! Content events (and a run's deliveries) for JavaScript as a *tape*: one string holding every
//! text of a batch, back to back, and one `Uint32Array` of words saying how to cut it and what to
//! build around it. `node/src/tape.ts` reads it into exactly the objects `JSON.parse` makes of
//! the core's JSON (same keys, same key order, same values).
//!
//! Why not JSON: measured on the per-harness corpora, `JSON.parse` of the events' JSON alone
//! took longer than a plain-JavaScript decoder's whole job (its JSON is 0.7–1.7× the harness's
//! bytes: every event repeats its session id, model and timestamp, and tool calls carry their
//! title, content and raw input). Reading a tape, JavaScript scans no JSON syntax: each string is
//! one `slice` of the batch's text, an event's repeated envelope strings are made once per
//! batch, and objects are built by literals the JIT compiles to fixed shapes — the harness's own
//! JSON records too ([`value`]: objects by shape).
//!
//! Format (every number one `u32` word unless said otherwise). A string is its length in UTF-16
//! code units (the reader keeps a cursor into the text); a JSON value is written as [`value`]
//! says; a `u64` is two words, high then low; an `f64` is its bits as two words, high then low.
//!
//! * batch: `count`, then `count` events (or deliveries, for a run), then the trailer.
//! * trailer: the shapes first used in this batch (each: its key count, then its keys as
//!   strings), then five words: where those definitions start in the words, where their keys
//!   start in the text (UTF-16 units), the id of the first (the reader checks it knows every
//!   earlier one), how many there are, and the length of the JSON array of the values that stay
//!   JSON text, which ends the text (0: none).
//! * delivery of a run: a word — bits 0–2 the kind (0 content, 1 lifecycle, 2 stdout, 3 stderr
//!   envelopes, 4 a hook event), bit 3 `coalesced` present, bits 4–5 the run id's code (as an
//!   envelope string's) — then, for an envelope: the run id, the `u64` sequence, the event (a
//!   content event as below, a lifecycle event as a JSON value, stdout/stderr text as a string)
//!   and the `u64` coalesced count; for a hook event: its JSON value.
//! * event: a header word — bits 0–9 five 2-bit codes for `sessionId`, `timestamp`, `model`,
//!   `messageId`, `parentToolCallId` ([`ABSENT`], [`SAME`]: the last value this field was
//!   given in the batch, [`NEW`]: a string follows), bit 10 `extra` present, bits
//!   11–13 the update kind ([`SessionUpdate`] order) — then, in the JSON key order: `sessionId`,
//!   the update, `timestamp`, `model`, `messageId`, `parentToolCallId`, `extra`.
//! * chunks: a content block. Content block: a word (0 text, 1 image), then the text, or
//!   `data`, `mimeType` and a flagged `uri` (word 0/1, then the string).
//! * tool call: a flags word (bit 0 `toolName`, 1 `rawInput`, 2 `content`, 3 `locations`,
//!   bits 8–11 kind, 12–13 status), `toolCallId`, `title`, then what the flags say, in order.
//! * tool call update: a flags word (bit 0 `status` with bits 8–9 its value, 1 `title`, 2
//!   `content`, 3 `locations`, 4 `rawOutput`), `toolCallId`, then what the flags say.
//! * tool call content list: `count`, each a word (0 content: a content block; 1 diff: `path`,
//!   a word 0/1 for `oldText` null/present (then the string), `newText`).
//! * locations: `count`, each a word (bit 0 `line` present), `path`, the `u64` line.
//! * plan: `count`, each `content` and a word (bits 0–1 status, 2–3 priority).
//! * error: `message` and a word (fatal 0/1).
//! * usage: a flags word (bit 0 scope run, 1 `promptTokens`, 2 `completionTokens`, 3
//!   `cachedTokens`, 4 `costUsd` present, 5 `costUsd` is finite (else `null`), 6 `extra`), then
//!   the numbers and the JSON present.
//!
//! Shapes live as long as the writer (a decoder's, a run's), so the reader keeps its factories
//! as long: one `Tape` here for one reader state there. Every struct is destructured without
//! `..` and every enum matched without `_`, so a field or variant added to the core fails to
//! compile here; `node/test/tape.test.mjs` checks the objects against `JSON.parse` of the core's
//! own JSON on every golden case.

mod js;
mod value;

pub use js::JsTape;
pub use value::use_shapes;

use agentstream_core::casing::camel_case_keys;
use agentstream_core::event::RawJson;
use agentstream_core::runner::Delivery;
use agentstream_core::stream::StreamItem;
use agentstream_core::{
    ContentBlock, DiffContent, ImageContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate,
    SharedStr, TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolKind,
    UsageScope,
};

/// An envelope string the header says nothing about.
pub const ABSENT: u32 = 0;
/// An envelope string equal to the last value given for the same field in the batch.
pub const SAME: u32 = 1;
/// An envelope string that follows as a string.
pub const NEW: u32 = 2;

/// One batch being written. A decoder keeps one and reuses its buffers call after call (the
/// JavaScript side gets copies), so a stream of batches allocates no fresh pages for them.
#[derive(Default)]
pub struct Tape {
    /// The words.
    pub words: Vec<u32>,
    /// Every string of the batch, back to back.
    pub text: String,
    /// Whether `text` is pure ASCII (then JavaScript takes it as Latin-1, a plain copy).
    pub ascii: bool,
    /// `text`'s length in UTF-16 code units.
    units: usize,
    /// The JSON values of the batch that stay JSON text, comma-separated, in reading order
    /// (appended to `text` as one JSON array by [`finish`](Self::finish)).
    json: String,
    /// The object shapes JavaScript knows (kept across batches: see [`value`]).
    shapes: value::Shapes,
    /// Scratch: the keys of the objects being walked that had escapes, unescaped.
    keys: String,
    /// Scratch: where the keys of the objects being walked are, innermost last.
    key_spans: Vec<value::Key>,
    /// Scratch: a string being unescaped.
    scratch: String,
    /// The last value of each envelope string: the five of an event, then a run's id.
    last: [Option<SharedStr>; 6],
}

impl Tape {
    /// Write the tape of `events`, replacing what the buffers held.
    pub fn write_events(&mut self, events: &[OutputEvent]) {
        self.start(events.len());
        for event in events {
            self.event(event);
        }
        self.finish();
    }

    /// Write the tape of a run's `batch` (see the module docs: deliveries), replacing what the
    /// buffers held.
    pub fn write_deliveries(&mut self, batch: &[Delivery]) -> serde_json::Result<()> {
        self.start(batch.len());
        for delivery in batch {
            match delivery {
                Delivery::Item(env) => {
                    let (kind, lifecycle) = match &env.item {
                        StreamItem::Content(_) => (0, None),
                        // The TypeScript shape of a lifecycle event has camelCase keys.
                        StreamItem::Lifecycle(l) => (1, Some(camel_case_keys(serde_json::to_value(l)?).to_string())),
                        StreamItem::Stdout(_) => (2, None),
                        StreamItem::Stderr(_) => (3, None),
                    };
                    let run_id = Some(env.run_id.clone());
                    let code = self.envelope_code(5, &run_id);
                    self.word(kind | u32::from(env.coalesced > 0) << 3 | code << 4);
                    self.envelope_str(code, &run_id);
                    self.u64(env.sequence);
                    match &env.item {
                        StreamItem::Content(event) => self.event(event),
                        StreamItem::Lifecycle(_) => self.value(lifecycle.as_deref().unwrap_or("null")),
                        StreamItem::Stdout(text) | StreamItem::Stderr(text) => self.str(text),
                    }
                    if env.coalesced > 0 {
                        self.u64(env.coalesced);
                    }
                }
                Delivery::Hook(hook) => {
                    self.word(4);
                    self.value(&serde_json::Value::Object(hook.to_flat_camel()).to_string());
                }
            }
        }
        self.finish();
        Ok(())
    }

    fn start(&mut self, count: usize) {
        self.words.clear();
        self.text.clear();
        self.units = 0;
        self.json.clear();
        self.ascii = true;
        self.last = Default::default();
        self.shapes.start_batch();
        self.count(count);
    }

    /// End the batch with its trailer: the shapes new to it, then the values that stay JSON
    /// text as one array at the end of the text (one `JSON.parse` per batch).
    fn finish(&mut self) {
        let defs_word = self.words.len();
        let defs_text = self.units;
        let new = std::mem::take(&mut self.shapes);
        for keys in new.new_in_batch() {
            self.count(keys.len());
            for key in keys {
                self.str(key);
            }
        }
        let defined = new.new_in_batch().len();
        let first_id = new.first_new();
        self.shapes = new;
        let json_units = if self.json.is_empty() {
            0
        } else {
            let start = self.text.len();
            self.text.push('[');
            let json = std::mem::take(&mut self.json);
            self.text.push_str(&json);
            self.json = json;
            self.text.push(']');
            let units = utf16_len(&self.text[start..]);
            if units != self.text.len() - start {
                self.ascii = false;
            }
            units
        };
        self.count(defs_word);
        self.count(defs_text);
        self.count(first_id);
        self.count(defined);
        self.count(json_units);
    }

    fn word(&mut self, w: u32) {
        self.words.push(w);
    }

    fn count(&mut self, n: usize) {
        self.word(u32::try_from(n).unwrap_or(u32::MAX));
    }

    fn str(&mut self, s: &str) {
        let units = utf16_len(s);
        if units != s.len() {
            self.ascii = false;
        }
        self.count(units);
        self.units += units;
        self.text.push_str(s);
    }

    /// A JSON value ([`value`]).
    fn json(&mut self, raw: &RawJson) {
        self.value(raw.get());
    }

    /// A value that stays JSON text: the next of the batch's JSON array.
    fn json_text(&mut self, text: &str) {
        if !self.json.is_empty() {
            self.json.push(',');
        }
        self.json.push_str(text);
    }

    fn u64(&mut self, n: u64) {
        self.word((n >> 32) as u32);
        self.word(n as u32);
    }

    fn f64(&mut self, x: f64) {
        self.u64(x.to_bits());
    }

    /// The 2-bit code of envelope field `slot` (and remember the value for the next event).
    fn envelope_code(&mut self, slot: usize, value: &Option<SharedStr>) -> u32 {
        let Some(v) = value else {
            return ABSENT;
        };
        if matches!(&self.last[slot], Some(last) if SharedStr::ptr_eq(last, v) || **last == **v) {
            return SAME;
        }
        self.last[slot] = Some(v.clone());
        NEW
    }

    fn envelope_str(&mut self, code: u32, value: &Option<SharedStr>) {
        if let Some(v) = value.as_ref().filter(|_| code == NEW) {
            self.str(v);
        }
    }

    fn event(&mut self, ev: &OutputEvent) {
        let OutputEvent { session_id, update, timestamp, model, message_id, parent_tool_call_id, extra } = ev;
        let codes = [
            self.envelope_code(0, session_id),
            self.envelope_code(1, timestamp),
            self.envelope_code(2, model),
            self.envelope_code(3, message_id),
            self.envelope_code(4, parent_tool_call_id),
        ];
        let mut header = codes.iter().enumerate().fold(0, |h, (i, c)| h | (c << (2 * i)));
        if extra.is_some() {
            header |= 1 << 10;
        }
        header |= update_kind(update) << 11;
        self.word(header);
        self.envelope_str(codes[0], session_id);
        self.update(update);
        self.envelope_str(codes[1], timestamp);
        self.envelope_str(codes[2], model);
        self.envelope_str(codes[3], message_id);
        self.envelope_str(codes[4], parent_tool_call_id);
        if let Some(extra) = extra {
            self.json(extra);
        }
    }

    fn update(&mut self, update: &SessionUpdate) {
        match update {
            SessionUpdate::AgentMessageChunk { content }
            | SessionUpdate::AgentThoughtChunk { content }
            | SessionUpdate::UserMessageChunk { content } => self.content_block(content),
            SessionUpdate::ToolCall(call) => self.tool_call(call),
            SessionUpdate::ToolCallUpdate(update) => self.tool_call_update(update),
            SessionUpdate::Plan { entries } => {
                self.count(entries.len());
                for PlanEntry { content, status, priority } in entries {
                    self.str(content);
                    let status = match status {
                        PlanEntryStatus::Pending => 0,
                        PlanEntryStatus::InProgress => 1,
                        PlanEntryStatus::Completed => 2,
                    };
                    let priority = match priority {
                        PlanEntryPriority::High => 0,
                        PlanEntryPriority::Medium => 1,
                        PlanEntryPriority::Low => 2,
                    };
                    self.word(status | (priority << 2));
                }
            }
            SessionUpdate::Error { message, fatal } => {
                self.str(message);
                self.word(u32::from(*fatal));
            }
            SessionUpdate::Usage { scope, usage } => self.usage(*scope, usage),
        }
    }

    fn content_block(&mut self, block: &ContentBlock) {
        match block {
            ContentBlock::Text { text } => {
                self.word(0);
                self.str(text);
            }
            ContentBlock::Image(ImageContent { data, mime_type, uri }) => {
                self.word(1);
                self.str(data);
                self.str(mime_type);
                match uri {
                    Some(uri) => {
                        self.word(1);
                        self.str(uri);
                    }
                    None => self.word(0),
                }
            }
        }
    }

    fn tool_call(&mut self, call: &ToolCall) {
        let ToolCall { tool_call_id, title, tool_name, kind, status, raw_input, content, locations } = call;
        let flags = u32::from(tool_name.is_some())
            | u32::from(raw_input.is_some()) << 1
            | u32::from(content.is_some()) << 2
            | u32::from(locations.is_some()) << 3
            | tool_kind(*kind) << 8
            | tool_status(*status) << 12;
        self.word(flags);
        self.str(tool_call_id);
        self.str(title);
        if let Some(name) = tool_name {
            self.str(name);
        }
        if let Some(raw) = raw_input {
            self.json(raw);
        }
        if let Some(content) = content {
            self.tool_call_contents(content);
        }
        if let Some(locations) = locations {
            self.locations(locations);
        }
    }

    fn tool_call_update(&mut self, update: &ToolCallUpdate) {
        let ToolCallUpdate { tool_call_id, status, title, content, locations, raw_output } = update;
        let flags = u32::from(status.is_some())
            | u32::from(title.is_some()) << 1
            | u32::from(content.is_some()) << 2
            | u32::from(locations.is_some()) << 3
            | u32::from(raw_output.is_some()) << 4
            | status.map_or(0, tool_status) << 8;
        self.word(flags);
        self.str(tool_call_id);
        if let Some(title) = title {
            self.str(title);
        }
        if let Some(content) = content {
            self.tool_call_contents(content);
        }
        if let Some(locations) = locations {
            self.locations(locations);
        }
        if let Some(raw) = raw_output {
            self.json(raw);
        }
    }

    fn tool_call_contents(&mut self, items: &[ToolCallContent]) {
        self.count(items.len());
        for item in items {
            match item {
                ToolCallContent::Content { content } => {
                    self.word(0);
                    self.content_block(content);
                }
                ToolCallContent::Diff(DiffContent { path, old_text, new_text }) => {
                    self.word(1);
                    self.str(path);
                    match old_text {
                        Some(old) => {
                            self.word(1);
                            self.str(old);
                        }
                        None => self.word(0),
                    }
                    self.str(new_text);
                }
            }
        }
    }

    fn locations(&mut self, items: &[ToolCallLocation]) {
        self.count(items.len());
        for ToolCallLocation { path, line } in items {
            self.word(u32::from(line.is_some()));
            self.str(path);
            if let Some(line) = line {
                self.u64(*line);
            }
        }
    }

    fn usage(&mut self, scope: UsageScope, usage: &TokenUsage) {
        let TokenUsage { prompt_tokens, completion_tokens, cached_tokens, cost_usd, extra } = usage;
        let scope = match scope {
            UsageScope::Call => 0,
            UsageScope::Run => 1,
        };
        let flags = scope
            | u32::from(prompt_tokens.is_some()) << 1
            | u32::from(completion_tokens.is_some()) << 2
            | u32::from(cached_tokens.is_some()) << 3
            | u32::from(cost_usd.is_some()) << 4
            | u32::from(cost_usd.is_some_and(f64::is_finite)) << 5
            | u32::from(extra.is_some()) << 6;
        self.word(flags);
        for n in [prompt_tokens, completion_tokens, cached_tokens].into_iter().flatten() {
            self.u64(*n);
        }
        // serde_json writes a non-finite float as null: nothing follows then.
        if let Some(cost) = cost_usd.filter(|c| c.is_finite()) {
            self.f64(cost);
        }
        if let Some(extra) = extra {
            self.json(extra);
        }
    }
}

/// The length of `s` in UTF-16 code units (JavaScript's string length).
fn utf16_len(s: &str) -> usize {
    if s.is_ascii() { s.len() } else { s.chars().map(char::len_utf16).sum() }
}

fn update_kind(update: &SessionUpdate) -> u32 {
    match update {
        SessionUpdate::AgentMessageChunk { .. } => 0,
        SessionUpdate::AgentThoughtChunk { .. } => 1,
        SessionUpdate::UserMessageChunk { .. } => 2,
        SessionUpdate::ToolCall(_) => 3,
        SessionUpdate::ToolCallUpdate(_) => 4,
        SessionUpdate::Plan { .. } => 5,
        SessionUpdate::Error { .. } => 6,
        SessionUpdate::Usage { .. } => 7,
    }
}

fn tool_kind(kind: ToolKind) -> u32 {
    match kind {
        ToolKind::Read => 0,
        ToolKind::Edit => 1,
        ToolKind::Delete => 2,
        ToolKind::Move => 3,
        ToolKind::Search => 4,
        ToolKind::Execute => 5,
        ToolKind::Think => 6,
        ToolKind::Fetch => 7,
        ToolKind::SwitchMode => 8,
        ToolKind::Other => 9,
    }
}

fn tool_status(status: ToolCallStatus) -> u32 {
    match status {
        ToolCallStatus::Pending => 0,
        ToolCallStatus::InProgress => 1,
        ToolCallStatus::Completed => 2,
        ToolCallStatus::Failed => 3,
    }
}
