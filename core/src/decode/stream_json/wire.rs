//! Reading the stream-json wire format: the typed line structs (decoded once per line by the
//! one-pass scanner, strings borrowed from the line, odd shapes tolerated field by field) and the
//! small readers of raw values. What the lines mean is in [`super`].

use std::borrow::Cow;

use serde_json::Value;

use crate::decode::LineOutcome;
use crate::decode::classify_failure;
use crate::event::{JsonObject, RawJson};
use crate::json::raw_record::{CompactCounts, ObjectMembers, read_raw_json, without_cr};
use crate::json::scan::{Bad, Res, Scan};
use crate::json::text::raw_count;

// ------------------------------------------------------------------------------------------
// Lenient wire types, read in one pass with the `scan` scanner
// ------------------------------------------------------------------------------------------

/// A string field that may be absent, `null` or of another type (then `None`). Borrowed from
/// the line when it has no escapes.
///
/// Looser than the serde decoders' [`crate::json::borrowed::Str`] (`json::opt_string`'s rules): a
/// value of another type is only skipped ([`Scan::skip`], syntax only), so a number beyond `f64`
/// or a lone surrogate escape inside it does not make the line unusable.
///
/// Not an `Option<Cow<str>>`: that type's `None` is only a niche in the capacity word, so a
/// default line leaves the pointer and length words unwritten, and LLVM may then test the
/// (unused) length before the tag. The result is right but valgrind reports a branch on
/// uninitialised memory, which our C suite treats as a failure. An empty borrowed string plus
/// a flag writes every word.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LooseStr<'a> {
    pub(crate) text: Cow<'a, str>,
    pub(crate) present: bool,
}

impl Default for LooseStr<'_> {
    fn default() -> Self {
        LooseStr { text: Cow::Borrowed(""), present: false }
    }
}

impl<'a> LooseStr<'a> {
    /// The string, when it is one.
    pub fn get(&self) -> Option<&str> {
        self.present.then_some(&*self.text)
    }

    /// The string, when it is one and not empty.
    pub fn non_empty(&self) -> Option<&str> {
        self.get().filter(|s| !s.is_empty())
    }

    /// An owned copy, when non-empty.
    pub fn owned(&self) -> Option<String> {
        self.non_empty().map(str::to_string)
    }

    /// The string itself, when it is one.
    pub fn into_inner(self) -> Option<Cow<'a, str>> {
        self.present.then_some(self.text)
    }

    /// Read the next value: a string, or any other value (skipped) as `None`.
    #[inline(always)]
    pub(crate) fn read(sc: &mut Scan<'a>) -> Res<Self> {
        if sc.peek() == Some(b'"') {
            Ok(LooseStr { text: sc.str()?, present: true })
        } else {
            sc.skip().map(|_| LooseStr::default())
        }
    }
}

/// An object field read as `T`; absent, `null` or a non-object value gives `None`.
///
/// Looser than [`crate::json::lenient::Obj`] as [`LooseStr`] is looser than `borrowed::Str`: a value of
/// another type is only skipped (syntax only), not read by type.
#[derive(Debug)]
pub(crate) struct LooseObj<T>(pub Option<T>);

impl<T> Default for LooseObj<T> {
    fn default() -> Self {
        LooseObj(None)
    }
}

impl<T> LooseObj<T> {
    /// Read the next value with `read` when it is an object; skip any other value.
    #[inline(always)]
    pub(crate) fn read<'a>(sc: &mut Scan<'a>, read: impl FnOnce(&mut Scan<'a>) -> Res<T>) -> Res<Self> {
        if sc.peek() == Some(b'{') { read(sc).map(|t| LooseObj(Some(t))) } else { sc.skip().map(|_| LooseObj(None)) }
    }
}

/// A field kept as its JSON text (validated), `None` when absent or `null`.
pub(crate) type Raw<'a> = Option<&'a str>;

#[inline(always)]
pub(crate) fn raw<'a>(sc: &mut Scan<'a>) -> Res<Raw<'a>> {
    let text = sc.raw()?;
    Ok((text != "null").then_some(text))
}

/// Read the fields of the object that is the next value: `field` reads the value of a key it
/// knows and returns the key's bit (each known key has its own), or skips the value and returns
/// 0. A known key printed twice makes the line unusable, as serde's derived structs decide.
#[inline(always)]
pub(crate) fn read_fields<'a>(sc: &mut Scan<'a>, mut field: impl FnMut(&str, &mut Scan<'a>) -> Res<u64>) -> Res<()> {
    sc.open_object()?;
    let mut first = true;
    let mut seen = 0u64;
    while let Some(key) = sc.next_key(&mut first)? {
        let bit = match key.plain() {
            Some(name) => field(name, sc)?,
            None => field(&key.decode()?, sc)?,
        };
        if seen & bit != 0 {
            return Err(Bad);
        }
        seen |= bit;
    }
    Ok(())
}

/// How deep content lists and blocks may nest, counting every container from the line's own
/// object (1): serde_json's recursion limit, which made deeper lines unusable before.
pub(crate) const MAX_NESTING: usize = 128;

/// Message or tool-result content: a string, or a list of blocks (non-object items dropped).
#[derive(Debug, Default)]
pub(crate) enum Content<'a> {
    /// Absent, `null` or another shape.
    #[default]
    None,
    /// A plain string.
    Text(Cow<'a, str>),
    /// Content blocks.
    Blocks(Vec<Block<'a>>),
}

impl<'a> Content<'a> {
    /// Read content whose list (if it is one) is the `depth`-th nested container of the line.
    pub(crate) fn read(sc: &mut Scan<'a>, depth: usize) -> Res<Self> {
        match sc.peek() {
            Some(b'"') => Ok(Content::Text(sc.str()?)),
            Some(b'[') => {
                if depth >= MAX_NESTING {
                    return Err(Bad);
                }
                sc.open_array()?;
                // Most messages hold one block.
                let mut blocks = Vec::with_capacity(1);
                let mut first = true;
                while sc.next_element(&mut first)? {
                    if sc.peek() == Some(b'{') {
                        blocks.push(Block::read(sc, depth + 1)?);
                    } else {
                        sc.skip()?;
                    }
                }
                Ok(Content::Blocks(blocks))
            }
            Some(b'{') if depth >= MAX_NESTING => Err(Bad),
            _ => sc.skip().map(|_| Content::None),
        }
    }
}

/// One wire line. Only the fields either CLI prints that the decoders use; the rest (init tool
/// lists, slash commands, …) is skipped without being built.
#[derive(Default)]
pub(crate) struct Line<'a> {
    pub kind: LooseStr<'a>,
    pub subtype: LooseStr<'a>,
    pub session_id: LooseStr<'a>,
    pub parent_tool_use_id: LooseStr<'a>,
    pub timestamp: LooseStr<'a>,
    pub message: LooseObj<Message<'a>>,
    pub event: LooseObj<Box<StreamEvent<'a>>>,
    pub tool_use_result: Option<&'a str>,
    pub usage: LooseObj<Usage>,
    /// As printed (an object read by type).
    pub model_usage: LooseObj<&'a str>,
    pub tool_use_meta: Raw<'a>,
    pub subagent_type: Raw<'a>,
    pub task_description: Raw<'a>,
    /// The facts of `result` and `system` lines (and a synthetic message's `error`), boxed:
    /// most lines print none of them.
    pub(crate) facts: Option<Box<Facts<'a>>>,
}

/// See [`Line::facts`].
#[derive(Default)]
pub(crate) struct Facts<'a> {
    pub error: Raw<'a>,
    pub is_error: Raw<'a>,
    pub result: Raw<'a>,
    pub errors: Raw<'a>,
    pub total_cost_usd: Raw<'a>,
    pub stats: Raw<'a>,
    pub num_turns: Raw<'a>,
    pub duration_ms: Raw<'a>,
    pub duration_api_ms: Raw<'a>,
    pub stop_reason: Raw<'a>,
    pub terminal_reason: Raw<'a>,
    pub api_error_status: Raw<'a>,
    pub permission_denials: Raw<'a>,
    pub attempt: Raw<'a>,
    pub max_retries: Raw<'a>,
    pub retry_delay_ms: Raw<'a>,
    pub error_status: Raw<'a>,
    /// A `system` line's string `message` (claude `permission_denied`).
    pub message_text: Raw<'a>,
    /// claude `permission_denied`: the refused call and its tool.
    pub tool_use_id: Raw<'a>,
    pub tool_name: Raw<'a>,
    /// qwen `system` lines' payload (`retry`: `reason`, `discardedToolCalls`, `preserveText`).
    pub data: Raw<'a>,
}

pub(crate) static NO_FACTS: Facts<'static> = Facts {
    error: None,
    is_error: None,
    result: None,
    errors: None,
    total_cost_usd: None,
    stats: None,
    num_turns: None,
    duration_ms: None,
    duration_api_ms: None,
    stop_reason: None,
    terminal_reason: None,
    api_error_status: None,
    permission_denials: None,
    attempt: None,
    max_retries: None,
    retry_delay_ms: None,
    error_status: None,
    message_text: None,
    tool_use_id: None,
    tool_name: None,
    data: None,
};

impl<'a> Line<'a> {
    /// Parse a whole line into `self` (a default line); on failure tell why the line could not
    /// be used. `scratch` is a buffer the scanner reuses from line to line.
    pub fn parse(&mut self, text: &'a str, scratch: &mut Vec<(String, Value)>) -> Result<(), LineOutcome> {
        // Only objects (as serde would otherwise read a JSON array into a struct by position).
        if !text.trim_start().starts_with('{') {
            return Err(classify_failure(text));
        }
        let mut sc = Scan::with_scratch(text, std::mem::take(scratch));
        let read = self.read(&mut sc).and_then(|_| sc.end());
        *scratch = sc.into_scratch();
        read.map_err(|Bad| classify_failure(text))
    }

    /// The facts of a `result` or `system` line (all `None` on other lines).
    pub fn facts(&self) -> &Facts<'a> {
        self.facts.as_deref().unwrap_or(&NO_FACTS)
    }

    pub(crate) fn read(&mut self, sc: &mut Scan<'a>) -> Res<()> {
        let l = self;
        read_fields(sc, |name, sc| {
            Ok(match name {
                "type" => set(&mut l.kind, LooseStr::read(sc)?, 1 << 0),
                "subtype" => set(&mut l.subtype, LooseStr::read(sc)?, 1 << 1),
                "session_id" => set(&mut l.session_id, LooseStr::read(sc)?, 1 << 2),
                "parent_tool_use_id" => set(&mut l.parent_tool_use_id, LooseStr::read(sc)?, 1 << 3),
                "timestamp" => set(&mut l.timestamp, LooseStr::read(sc)?, 1 << 4),
                // An API message object, or (claude `permission_denied`) the refusal's text.
                "message" if sc.peek() == Some(b'"') => set(&mut fact(&mut l.facts).message_text, raw(sc)?, 1 << 5),
                "message" => set(&mut l.message, LooseObj::read(sc, |sc| Message::read(sc, 2))?, 1 << 5),
                "event" => set(&mut l.event, LooseObj::read(sc, |sc| StreamEvent::read(sc).map(Box::new))?, 1 << 6),
                "tool_use_result" => set(&mut l.tool_use_result, sc.raw_or_null()?, 1 << 7),
                "error" => set(&mut fact(&mut l.facts).error, raw(sc)?, 1 << 8),
                "is_error" => set(&mut fact(&mut l.facts).is_error, raw(sc)?, 1 << 9),
                "result" => set(&mut fact(&mut l.facts).result, raw(sc)?, 1 << 10),
                "errors" => set(&mut fact(&mut l.facts).errors, raw(sc)?, 1 << 11),
                "usage" => set(&mut l.usage, LooseObj::read(sc, Usage::read)?, 1 << 12),
                "modelUsage" => set(&mut l.model_usage, LooseObj::read(sc, Scan::checked_raw)?, 1 << 13),
                "total_cost_usd" => set(&mut fact(&mut l.facts).total_cost_usd, raw(sc)?, 1 << 14),
                "stats" => set(&mut fact(&mut l.facts).stats, raw(sc)?, 1 << 15),
                "num_turns" => set(&mut fact(&mut l.facts).num_turns, raw(sc)?, 1 << 16),
                "duration_ms" => set(&mut fact(&mut l.facts).duration_ms, raw(sc)?, 1 << 17),
                "duration_api_ms" => set(&mut fact(&mut l.facts).duration_api_ms, raw(sc)?, 1 << 18),
                "stop_reason" => set(&mut fact(&mut l.facts).stop_reason, raw(sc)?, 1 << 19),
                "terminal_reason" => set(&mut fact(&mut l.facts).terminal_reason, raw(sc)?, 1 << 20),
                "api_error_status" => set(&mut fact(&mut l.facts).api_error_status, raw(sc)?, 1 << 21),
                "permission_denials" => set(&mut fact(&mut l.facts).permission_denials, raw(sc)?, 1 << 22),
                "attempt" => set(&mut fact(&mut l.facts).attempt, raw(sc)?, 1 << 23),
                "max_retries" => set(&mut fact(&mut l.facts).max_retries, raw(sc)?, 1 << 24),
                "retry_delay_ms" => set(&mut fact(&mut l.facts).retry_delay_ms, raw(sc)?, 1 << 25),
                "error_status" => set(&mut fact(&mut l.facts).error_status, raw(sc)?, 1 << 26),
                "tool_use_meta" => set(&mut l.tool_use_meta, raw(sc)?, 1 << 27),
                "subagent_type" => set(&mut l.subagent_type, raw(sc)?, 1 << 28),
                "task_description" => set(&mut l.task_description, raw(sc)?, 1 << 29),
                "tool_use_id" => set(&mut fact(&mut l.facts).tool_use_id, raw(sc)?, 1 << 30),
                "tool_name" => set(&mut fact(&mut l.facts).tool_name, raw(sc)?, 1 << 31),
                "data" => set(&mut fact(&mut l.facts).data, raw(sc)?, 1 << 32),
                _ => skip(sc)?,
            })
        })
    }
}

/// The line's facts, created on the first one.
#[inline(always)]
pub(crate) fn fact<'b, 'a>(facts: &'b mut Option<Box<Facts<'a>>>) -> &'b mut Facts<'a> {
    facts.get_or_insert_with(Box::default)
}

/// Store a field's value; its bit for the duplicate check.
#[inline(always)]
pub(crate) fn set<T>(slot: &mut T, value: T, bit: u64) -> u64 {
    *slot = value;
    bit
}

/// Skip an unknown field's value (no bit).
#[inline(always)]
pub(crate) fn skip(sc: &mut Scan<'_>) -> Res<u64> {
    sc.skip().map(|_| 0)
}

/// An API message (`assistant`/`user` lines, `message_start`).
#[derive(Default)]
pub(crate) struct Message<'a> {
    pub id: LooseStr<'a>,
    pub model: LooseStr<'a>,
    pub content: Content<'a>,
    pub stop_reason: Raw<'a>,
    pub usage: LooseObj<Usage>,
}

impl<'a> Message<'a> {
    /// Read a message that is the `depth`-th nested container of the line.
    pub(crate) fn read(sc: &mut Scan<'a>, depth: usize) -> Res<Self> {
        let mut m = Message::default();
        read_fields(sc, |name, sc| {
            Ok(match name {
                "id" => set(&mut m.id, LooseStr::read(sc)?, 1 << 0),
                "model" => set(&mut m.model, LooseStr::read(sc)?, 1 << 1),
                "content" => set(&mut m.content, Content::read(sc, depth + 1)?, 1 << 2),
                "stop_reason" => set(&mut m.stop_reason, raw(sc)?, 1 << 3),
                "usage" => set(&mut m.usage, LooseObj::read(sc, Usage::read)?, 1 << 4),
                _ => skip(sc)?,
            })
        })?;
        Ok(m)
    }
}

/// A content block of any kind (text, thinking, image, tool_use, tool_result, …).
#[derive(Default, Debug)]
pub(crate) struct Block<'a> {
    pub kind: LooseStr<'a>,
    pub text: LooseStr<'a>,
    pub thinking: LooseStr<'a>,
    pub id: LooseStr<'a>,
    pub name: LooseStr<'a>,
    pub input: Option<&'a str>,
    pub tool_use_id: LooseStr<'a>,
    pub content: Content<'a>,
    pub is_error: Raw<'a>,
    pub source: LooseObj<Box<Source<'a>>>,
    pub data: LooseStr<'a>,
    pub mime_type: LooseStr<'a>,
    /// A `tool_reference` block's tool (claude `ToolSearch` results).
    pub tool_name: LooseStr<'a>,
}

impl<'a> Block<'a> {
    /// Read a block that is the `depth`-th nested container of the line (blocks nest through
    /// tool-result content).
    pub(crate) fn read(sc: &mut Scan<'a>, depth: usize) -> Res<Self> {
        if depth >= MAX_NESTING {
            return Err(Bad);
        }
        let mut b = Block::default();
        read_fields(sc, |name, sc| {
            Ok(match name {
                "type" => set(&mut b.kind, LooseStr::read(sc)?, 1 << 0),
                "text" => set(&mut b.text, LooseStr::read(sc)?, 1 << 1),
                "thinking" => set(&mut b.thinking, LooseStr::read(sc)?, 1 << 2),
                "id" => set(&mut b.id, LooseStr::read(sc)?, 1 << 3),
                "name" => set(&mut b.name, LooseStr::read(sc)?, 1 << 4),
                "input" => set(&mut b.input, sc.raw_or_null()?, 1 << 5),
                "tool_use_id" => set(&mut b.tool_use_id, LooseStr::read(sc)?, 1 << 6),
                "content" => set(&mut b.content, Content::read(sc, depth + 1)?, 1 << 7),
                "is_error" => set(&mut b.is_error, raw(sc)?, 1 << 8),
                "source" => set(&mut b.source, LooseObj::read(sc, |sc| Source::read(sc).map(Box::new))?, 1 << 9),
                "data" => set(&mut b.data, LooseStr::read(sc)?, 1 << 10),
                "mimeType" => set(&mut b.mime_type, LooseStr::read(sc)?, 1 << 11),
                "tool_name" => set(&mut b.tool_name, LooseStr::read(sc)?, 1 << 12),
                _ => skip(sc)?,
            })
        })?;
        Ok(b)
    }
}

/// An image block's `source`.
#[derive(Default, Debug)]
pub(crate) struct Source<'a> {
    pub kind: LooseStr<'a>,
    pub data: LooseStr<'a>,
    pub media_type: LooseStr<'a>,
    pub url: LooseStr<'a>,
}

impl<'a> Source<'a> {
    pub(crate) fn read(sc: &mut Scan<'a>) -> Res<Self> {
        let mut s = Source::default();
        read_fields(sc, |name, sc| {
            Ok(match name {
                "type" => set(&mut s.kind, LooseStr::read(sc)?, 1 << 0),
                "data" => set(&mut s.data, LooseStr::read(sc)?, 1 << 1),
                "media_type" => set(&mut s.media_type, LooseStr::read(sc)?, 1 << 2),
                "url" => set(&mut s.url, LooseStr::read(sc)?, 1 << 3),
                _ => skip(sc)?,
            })
        })?;
        Ok(s)
    }
}

/// The raw SSE event of a `stream_event` line.
#[derive(Default)]
pub(crate) struct StreamEvent<'a> {
    pub kind: LooseStr<'a>,
    pub message: LooseObj<Message<'a>>,
    pub content_block: LooseObj<Block<'a>>,
    pub delta: LooseObj<Delta<'a>>,
    pub usage: LooseObj<Usage>,
}

impl<'a> StreamEvent<'a> {
    pub(crate) fn read(sc: &mut Scan<'a>) -> Res<Self> {
        let mut e = StreamEvent::default();
        read_fields(sc, |name, sc| {
            Ok(match name {
                "type" => set(&mut e.kind, LooseStr::read(sc)?, 1 << 0),
                "message" => set(&mut e.message, LooseObj::read(sc, |sc| Message::read(sc, 3))?, 1 << 1),
                "content_block" => set(&mut e.content_block, LooseObj::read(sc, |sc| Block::read(sc, 3))?, 1 << 2),
                "delta" => set(&mut e.delta, LooseObj::read(sc, Delta::read)?, 1 << 3),
                "usage" => set(&mut e.usage, LooseObj::read(sc, Usage::read)?, 1 << 4),
                _ => skip(sc)?,
            })
        })?;
        Ok(e)
    }
}

/// A `content_block_delta` / `message_delta` delta.
#[derive(Default)]
pub(crate) struct Delta<'a> {
    pub kind: LooseStr<'a>,
    pub text: LooseStr<'a>,
    pub thinking: LooseStr<'a>,
    pub stop_reason: Raw<'a>,
}

impl<'a> Delta<'a> {
    pub(crate) fn read(sc: &mut Scan<'a>) -> Res<Self> {
        let mut d = Delta::default();
        read_fields(sc, |name, sc| {
            Ok(match name {
                "type" => set(&mut d.kind, LooseStr::read(sc)?, 1 << 0),
                "text" => set(&mut d.text, LooseStr::read(sc)?, 1 << 1),
                "thinking" => set(&mut d.thinking, LooseStr::read(sc)?, 1 << 2),
                "stop_reason" => set(&mut d.stop_reason, raw(sc)?, 1 << 3),
                _ => skip(sc)?,
            })
        })?;
        Ok(d)
    }
}

/// A `usage` object: the counters the dialects read, and every other key verbatim in `rest`
/// (`cache_creation_input_tokens` is both read and kept, as the seed's `extra` shows it).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Usage {
    /// `input_tokens`.
    pub input: Option<u64>,
    /// `output_tokens`.
    pub output: Option<u64>,
    /// `cache_read_input_tokens`.
    pub cache_read: Option<u64>,
    /// `cache_creation_input_tokens`.
    pub cache_creation: Option<u64>,
    /// Every other counter (and any of the above whose value is not a count), as printed.
    pub rest: Option<RawJson>,
}

impl Usage {
    /// Overlay a later report of the same message (`message_delta` over `message_start`). The
    /// API's counts are cumulative, so a counter keeps the larger of the two reports.
    pub fn merge(&mut self, later: Usage) {
        let max = |a: Option<u64>, b: Option<u64>| a.max(b);
        self.input = max(self.input, later.input);
        self.output = max(self.output, later.output);
        self.cache_read = max(self.cache_read, later.cache_read);
        self.cache_creation = max(self.cache_creation, later.cache_creation);
        // (Once per streamed message: the two records are read into maps to merge.)
        let mut rest = object_of(self.rest.take());
        if let Some(n) = self.cache_creation {
            rest.insert("cache_creation_input_tokens".into(), n.into());
        }
        for (k, v) in object_of(later.rest) {
            if k != "cache_creation_input_tokens" {
                rest.insert(k, v);
            }
        }
        self.rest = (!rest.is_empty()).then(|| RawJson::from_value(&Value::Object(rest)));
    }

    /// Read a usage object (the next value must be an object).
    pub fn read(sc: &mut Scan<'_>) -> Res<Usage> {
        if let Some((usage, len)) = Usage::compact(sc) {
            sc.skip_read(len);
            return Ok(usage);
        }
        Usage::read_by_type(sc)
    }

    /// [`Usage::read`] of a [`CompactCounts`] object (as the API prints it), and the length of
    /// its text; `None` for any other object, when a counter's value is not a count, and when
    /// [`CompactCounts::kept`] refuses `rest`. Same usage as [`Usage::read_by_type`]
    /// (property-tested).
    fn compact(sc: &mut Scan<'_>) -> Option<(Usage, usize)> {
        let compact = CompactCounts::read(sc)?;
        let mut usage = Usage::default();
        // The members kept in `rest`.
        let mut rest = 0;
        for (i, (key, _, count)) in compact.members().enumerate() {
            // The last printing counts, as in a JSON reader; a counter printed as anything but
            // a count is the general reader's.
            match key {
                "input_tokens" => usage.input = Some(count?),
                "output_tokens" => usage.output = Some(count?),
                "cache_read_input_tokens" => usage.cache_read = Some(count?),
                "cache_creation_input_tokens" => {
                    usage.cache_creation = Some(count?);
                    rest |= 1 << i;
                }
                _ => rest |= 1 << i,
            }
        }
        usage.rest = compact.kept(rest, |_, _| {}).ok()?;
        Some((usage, compact.text_len()))
    }

    /// [`Usage::read`] by the general reader: any object, any values.
    fn read_by_type(sc: &mut Scan<'_>) -> Res<Usage> {
        let (mut input, mut output, mut cache_read, mut cache_creation) = (None, None, None, None);
        if sc.peek() != Some(b'{') {
            return Err(Bad);
        }
        let mut rest = ObjectMembers::default();
        sc.object(|r, key| {
            // Read by type (what a `Value` accepts), kept as printed.
            let raw = r.checked_raw()?;
            let slot = match key.as_ref() {
                "input_tokens" => &mut input,
                "output_tokens" => &mut output,
                "cache_read_input_tokens" => &mut cache_read,
                "cache_creation_input_tokens" => {
                    cache_creation = raw_count(raw);
                    rest.insert(key, raw);
                    return Ok(());
                }
                _ => {
                    rest.insert(key, raw);
                    return Ok(());
                }
            };
            match raw_count(raw) {
                Some(n) => *slot = Some(n),
                None => rest.insert(key, raw),
            }
            Ok(())
        })?;
        Ok(Usage { input, output, cache_read, cache_creation, rest: rest.into_raw_json() })
    }

    /// Parse a usage object from its JSON text (tests).
    #[cfg(test)]
    pub fn from_json(text: &str) -> Usage {
        Usage::read(&mut Scan::new(text)).expect("a usage object")
    }
}

/// True when the raw value is JSON `true`.
pub(crate) fn is_true(raw: Raw<'_>) -> bool {
    raw == Some("true")
}

/// A raw value as a [`Value`], `None` when absent or `null`.
pub(crate) fn value(raw: Raw<'_>) -> Option<Value> {
    raw.filter(|r| *r != "null").and_then(|r| Scan::new(r).json_value().ok())
}

/// A raw value that a `Value` reads (as [`value`] would give it), not `null`.
pub(crate) fn checked(raw: Raw<'_>) -> Raw<'_> {
    raw.filter(|r| *r != "null" && Scan::new(r).check().is_ok())
}

/// What a content block is, for dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    Text,
    Thinking,
    Image,
    Call,
    Result,
    Other,
}

impl BlockKind {
    /// The kind of `block` by its `type`.
    pub fn of(block: &Block<'_>) -> BlockKind {
        match block.kind.get().unwrap_or_default() {
            "text" => BlockKind::Text,
            "thinking" => BlockKind::Thinking,
            "image" => BlockKind::Image,
            k if CALL_KINDS.contains(&k) => BlockKind::Call,
            k if RESULT_KINDS.contains(&k) => BlockKind::Result,
            _ => BlockKind::Other,
        }
    }
}

/// The block kinds that carry a tool result.
pub(crate) const RESULT_KINDS: &[&str] = &[
    "tool_result",
    "mcp_tool_result",
    "web_fetch_tool_result",
    "web_search_tool_result",
    "tool_search_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
];

/// The block kinds that carry a tool call.
pub(crate) const CALL_KINDS: &[&str] = &["tool_use", "server_tool_use", "mcp_tool_use"];

/// A harness record read whole by the [`Scan`] ([`Scan::raw`]), as [`without_cr`] keeps it.
pub(crate) fn raw_json(raw: &str) -> RawJson {
    read_raw_json(without_cr(raw).into_owned())
}

/// A record kept as text, read into a map (an empty map for none or for anything but an object).
pub(crate) fn object_of(record: Option<RawJson>) -> JsonObject {
    match record.map(|r| r.to_value()) {
        Some(Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::raw_record::tests::{levels, nest, read_nested, usage_text};

    /// What reading `text` (nested in `levels` arrays) with `read` gives, and the text it read.
    fn usage_read(text: &str, levels: usize, read: fn(&mut Scan<'_>) -> Res<Usage>) -> Option<(Usage, String)> {
        read_nested(text, levels, &mut |r| read(r)).map(|(usage, text)| (usage, text.to_string()))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// A usage object is read as the general reader reads it: the same counters, the same
        /// `rest`, the same text read (whether the compact reading took it or not).
        #[test]
        fn a_usage_reads_as_the_general_reader(text in usage_text(&[
            "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
        ]), levels in levels()) {
            let text = nest(&text, levels);
            proptest::prop_assert_eq!(usage_read(&text, levels, Usage::read), usage_read(&text, levels, Usage::read_by_type), "{}", text);
        }
    }

    #[test]
    fn the_api_usage_objects_are_read_compact() {
        let compact = |text: &str| Usage::compact(&mut Scan::new(text));
        let text =
            r#"{"input_tokens":1523,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":7}"#;
        let (usage, len) = compact(text).expect("compact");
        assert_eq!(len, text.len());
        assert_eq!(
            (usage.input, usage.output, usage.cache_read, usage.cache_creation),
            (Some(1523), Some(1), Some(7), Some(0))
        );
        assert_eq!(usage.rest.as_ref().map(|r| r.get()), Some(r#"{"cache_creation_input_tokens":0}"#));
        assert_eq!(Some(usage), usage_read(text, 0, Usage::read_by_type).map(|(u, _)| u));
        // A run's total: nested counters and a service tier, kept in `rest` as printed.
        let text = r#"{"input_tokens":3046,"cache_creation_input_tokens":0,"output_tokens":29,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"}"#;
        let (usage, len) = compact(text).expect("compact");
        assert_eq!(len, text.len());
        assert_eq!(
            usage.rest.as_ref().map(|r| r.get()),
            Some(
                r#"{"cache_creation_input_tokens":0,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"}"#
            )
        );
        assert_eq!(Some(usage), usage_read(text, 0, Usage::read_by_type).map(|(u, _)| u));
        // A counter printed as anything but a count is the general reader's.
        assert!(compact(r#"{"input_tokens":null,"output_tokens":1}"#).is_none());
        assert!(compact(r#"{"output_tokens":{"n":1}}"#).is_none());
    }
}
