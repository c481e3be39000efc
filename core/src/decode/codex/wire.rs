//! Reading Codex's wire format: the line structs, read in one pass by the scanner with the
//! leniency each field needs. What the lines mean is in [`super`].

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::{RawJson, TokenUsage};
use crate::json::borrowed::{may_hold_surrogates, unescape_literal};
use crate::json::in_place::{SeenKeys, key_text};
use crate::json::raw_record::{Counters, read_counters, read_raw_json};
use crate::json::scan::{Res, Scan, read_object};

/// A string field: the string (borrowed from the line unless it held an escape) when the value
/// was one. A flag rather than an `Option<Cow<str>>`: LLVM may test the unused words of a
/// niche-optimised `None` in a default-constructed struct before its tag, which valgrind
/// reports as a branch on uninitialised memory (as anthropic's `LooseStr`).
pub(super) struct Text<'a> {
    pub(super) text: Cow<'a, str>,
    pub(super) present: bool,
}

impl Default for Text<'_> {
    fn default() -> Self {
        Text { text: Cow::Borrowed(""), present: false }
    }
}

impl<'a> Text<'a> {
    #[inline(always)]
    pub(crate) fn new(text: Option<Cow<'a, str>>) -> Self {
        match text {
            Some(text) => Text { text, present: true },
            None => Text::default(),
        }
    }

    /// The string, when the value was one.
    pub(crate) fn get(&self) -> Option<&str> {
        self.present.then_some(&*self.text)
    }

    /// The string, when the value was one, moved out.
    pub(crate) fn take(&mut self) -> Option<Cow<'a, str>> {
        if !self.present {
            return None;
        }
        self.present = false;
        Some(std::mem::take(&mut self.text))
    }
}

/// A string, or any other value read as [`crate::json::lenient::opt_string`] reads it and dropped (a
/// number still read by type, a list's items skipped, an object's keys read).
#[inline(always)]
pub(super) fn lenient_text<'a>(r: &mut Scan<'a>) -> Res<Text<'a>> {
    r.opt_str().map(Text::new)
}

/// A string, or any other value read as a whole `Value` would read it and dropped, so a lone
/// surrogate escape or an unreadable number anywhere in it fails the read.
#[inline(always)]
pub(super) fn checked_text<'a>(r: &mut Scan<'a>) -> Res<Text<'a>> {
    if r.peek() == Some(b'"') { r.str().map(|s| Text::new(Some(s))) } else { r.check().map(|()| Text::default()) }
}

/// A field kept as printed: its text, `None` when absent (`""`) or `null`.
pub(super) fn present(raw: &str) -> Option<&str> {
    (!raw.is_empty() && raw != "null").then_some(raw)
}

/// The string a field kept as printed holds (`None` for other values, or for a lone surrogate
/// escape, which a JSON reader refuses in a string).
pub(super) fn string_value(raw: &str) -> Option<Cow<'_, str>> {
    if raw.starts_with('"') { unescape_literal(raw) } else { None }
}

/// The verbatim text of a value the scanner has read whole, as a record.
pub(super) fn verbatim(text: &str) -> RawJson {
    read_raw_json(text.to_string())
}

/// One line, read in one pass by [`read_line`]: the item's fields land in [`Item`] (filled in
/// place) as borrowed strings, raw slices (the parts kept verbatim) or small flags; no [`Value`]
/// is built on the common paths. A known key printed twice makes the line unusable (as a
/// derived struct would).
#[derive(Default)]
pub(super) struct Line<'a> {
    pub(super) kind: Text<'a>,
    pub(super) thread_id: Text<'a>,
    /// The item as printed (`""` when the line has none).
    pub(super) item_text: &'a str,
    pub(super) usage: Option<TokenUsage>,
    pub(super) error: Option<Value>,
    pub(super) message: Text<'a>,
}

/// Read `line` (which must be one JSON object) into `l` with the [`Scan`]ner, and its item into
/// `item` field by field (the fast path) or, without one, only as printed (the exact path).
pub(super) fn read_whole_line<'a>(line: &'a str, l: &mut Line<'a>, item: Option<&mut Item<'a>>) -> Res<()> {
    let mut r = Scan::new(line);
    read_line(&mut r, l, item)?;
    r.end()
}

pub(super) fn read_line<'a>(r: &mut Scan<'a>, l: &mut Line<'a>, mut item: Option<&mut Item<'a>>) -> Res<()> {
    let mut seen = 0u8;
    // A typed object read, so containers count towards the nesting limit as serde_json counts
    // them from the line's own object.
    r.object(|r, key| {
        let bit = match key.as_ref() {
            "type" => 1,
            "thread_id" => 2,
            "item" => 4,
            "usage" => 8,
            "error" => 16,
            "message" => 32,
            _ => return r.skip(),
        };
        if seen & bit != 0 {
            return Err(crate::json::scan::Bad);
        }
        seen |= bit;
        match bit {
            1 => l.kind = lenient_text(r)?,
            2 => l.thread_id = lenient_text(r)?,
            4 => {
                l.item_text = match item.as_deref_mut() {
                    Some(item) => r.read_with_text(|r| read_item(r, item))?,
                    None => r.raw()?,
                }
            }
            8 => l.usage = read_usage(r)?,
            16 => l.error = if r.null()? { None } else { Some(r.json_value()?) },
            // A value, as any JSON reader takes it (so unreadable text fails the line).
            _ => l.message = checked_text(r)?,
        }
        Ok(())
    })
}

/// The item of a line, as far as any event needs it. Anything that is not an object reads as an
/// item with `is_object` false.
///
/// The fast path reads a printed item once, in the line's scan. An item printing a key twice, or
/// holding a `\u` escape of a surrogate (which a JSON reader may refuse), or failing the fast
/// read, takes the exact path instead ([`Exact`]), which reproduces the reading rules the events
/// are defined by: every field is read on its own (a field that does not parse is left out), a
/// key printed twice keeps its last value, except `id` and `type`, which keep the FIRST (codex's
/// `web_search` items print `id` twice: its `item_N`, then the provider's id), and the
/// completed `text` and `message` and the running `aggregated_output`, read from the first too.
///
/// Fields kept raw are the value's text as printed, `""` when absent (a `&str` rather than an
/// `Option`, for valgrind as [`Text`]).
#[derive(Default)]
pub(super) struct Item<'a> {
    pub(super) is_object: bool,
    /// Some key was printed twice (the fast path then gives way to the exact one).
    pub(super) dup: bool,
    /// A field kept raw may hold a surrogate escape (the same).
    pub(super) suspicious: bool,
    pub(super) id: Text<'a>,
    pub(super) kind: Text<'a>,
    pub(super) text: Text<'a>,
    pub(super) message: Text<'a>,
    pub(super) aggregated_output: Text<'a>,
    pub(super) command: &'a str,
    pub(super) exit_code: ExitCode,
    pub(super) status: Text<'a>,
    pub(super) changes: &'a str,
    pub(super) server: Text<'a>,
    pub(super) tool: Text<'a>,
    pub(super) arguments: &'a str,
    pub(super) query: &'a str,
    pub(super) action: &'a str,
    pub(super) summary: &'a str,
    pub(super) content: &'a str,
    pub(super) items: &'a str,
    pub(super) result: &'a str,
    pub(super) error: &'a str,
    /// Set on the exact path.
    pub(super) exact: Option<Box<Exact>>,
}

/// What the exact path knows beyond the fields: the FIRST printed `text`, `message` and
/// `aggregated_output`, and the item as its fields read one by one (for `rawOutput`).
pub(super) struct Exact {
    pub(super) text: Option<String>,
    pub(super) message: Option<String>,
    pub(super) aggregated_output: Option<String>,
    pub(super) value: Value,
}

impl<'a> Item<'a> {
    /// The first printed `text`.
    pub(crate) fn take_first_text(&mut self) -> Option<Cow<'a, str>> {
        match &mut self.exact {
            Some(exact) => exact.text.take().map(Cow::Owned),
            None => self.text.take(),
        }
    }

    /// The first printed `message`.
    pub(crate) fn take_first_message(&mut self) -> Option<Cow<'a, str>> {
        match &mut self.exact {
            Some(exact) => exact.message.take().map(Cow::Owned),
            None => self.message.take(),
        }
    }

    /// The first printed `aggregated_output`.
    pub(crate) fn first_output(&self) -> Option<&str> {
        match &self.exact {
            Some(exact) => exact.aggregated_output.as_deref(),
            None => self.aggregated_output.get(),
        }
    }

    /// `command` when it is a string.
    pub(crate) fn command(&self) -> Option<Cow<'a, str>> {
        string_value(self.command)
    }
}

/// Read the item that is the next value into `item` (the fast path, see [`Item`]).
pub(super) fn read_item<'a>(r: &mut Scan<'a>, item: &mut Item<'a>) -> Res<()> {
    if r.peek() != Some(b'{') {
        // Not an object: read as a JSON reader reads a value it then drops.
        return r.opt_str().map(drop);
    }
    item.is_object = true;
    let mut seen = SeenKeys::new();
    let mut suspicious = false;
    r.object(|r, key| {
        // Kept verbatim, so it must read as a JSON reader reads it (see `Item`).
        let mut raw = |r: &mut Scan<'a>| {
            let text = r.raw()?;
            suspicious |= may_hold_surrogates(text);
            Ok(text)
        };
        let index = match key.as_ref() {
            "id" => {
                item.id = checked_text(r)?;
                0
            }
            "type" => {
                item.kind = checked_text(r)?;
                1
            }
            "text" => {
                item.text = checked_text(r)?;
                2
            }
            "message" => {
                item.message = checked_text(r)?;
                3
            }
            "aggregated_output" => {
                item.aggregated_output = checked_text(r)?;
                4
            }
            "command" => {
                item.command = raw(r)?;
                5
            }
            "exit_code" => {
                item.exit_code = ExitCode::read(r)?;
                6
            }
            "status" => {
                item.status = checked_text(r)?;
                7
            }
            "changes" => {
                item.changes = raw(r)?;
                8
            }
            "server" => {
                item.server = checked_text(r)?;
                9
            }
            "tool" => {
                item.tool = checked_text(r)?;
                10
            }
            "arguments" => {
                item.arguments = raw(r)?;
                11
            }
            "query" => {
                item.query = raw(r)?;
                12
            }
            "action" => {
                item.action = raw(r)?;
                13
            }
            "summary" => {
                item.summary = raw(r)?;
                14
            }
            "content" => {
                item.content = raw(r)?;
                15
            }
            "items" => {
                item.items = raw(r)?;
                16
            }
            "result" => {
                item.result = raw(r)?;
                17
            }
            "error" => {
                item.error = raw(r)?;
                18
            }
            _ => {
                seen.other(key_text(&key));
                // Not read, but part of `rawOutput`: it must read as a JSON reader reads it.
                raw(r)?;
                return Ok(());
            }
        };
        seen.known(index);
        Ok(())
    })?;
    item.suspicious = suspicious;
    item.dup = seen.dup();
    Ok(())
}

/// The exact reading of a printed item (see [`Item`]): the item's fields as a JSON text without
/// duplicates or unreadable values (to be read by the fast path), its `id` and `type` as FIRST
/// printed, and the [`Exact`] facts. `Ok(None)` when the item is not an object; an error when
/// even its keys (or, for a scalar, its value) cannot be read, which makes the line unusable.
pub(super) type ExactItem = (String, Option<String>, Option<String>, Exact);

pub(super) fn exact_item(raw: &str) -> Res<Option<ExactItem>> {
    let mut r = Scan::new(raw);
    if r.peek() != Some(b'{') {
        return r.opt_str().map(|_| None);
    }
    let mut members: Vec<(Cow<'_, str>, &str)> = Vec::new();
    r.object(|r, key| {
        members.push((key, r.raw()?));
        Ok(())
    })?;
    let first = |key: &str| {
        let raw = members.iter().find(|(k, _)| k == key)?.1;
        string_value(raw).map(Cow::into_owned)
    };
    let (id, kind) = (first("id"), first("type"));
    let (text, message, aggregated_output) = (first("text"), first("message"), first("aggregated_output"));
    let mut map = Map::new();
    for (key, raw) in &members {
        if let Ok(value) = serde_json::from_str::<Value>(raw) {
            map.insert(key.to_string(), value);
        }
    }
    let value = Value::Object(map);
    Ok(Some((value.to_string(), id, kind, Exact { text, message, aggregated_output, value })))
}

/// `exit_code` as far as a status needs it: absent (or `null`), the integer 0, or anything else.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum ExitCode {
    #[default]
    Absent,
    Zero,
    Other,
}

impl ExitCode {
    /// Read as a whole `Value` would be (so unreadable text fails the fast read, see `Item`).
    /// Only the integer `0` is zero: serde_json reads `-0`, `0.0` and `0e0` as floats.
    pub(crate) fn read(r: &mut Scan<'_>) -> Res<Self> {
        Ok(match r.checked_raw()? {
            "null" => ExitCode::Absent,
            "0" => ExitCode::Zero,
            _ => ExitCode::Other,
        })
    }
}

/// `turn.completed.usage` → run usage (see the module table), read in the line's pass: an
/// object's entries each read as a `Value`; any other value is read as one and gives no usage.
pub(super) fn read_usage(r: &mut Scan<'_>) -> Res<Option<TokenUsage>> {
    let usage = read_counters(r, ["input_tokens", "cached_input_tokens", "output_tokens"], true, |_, _| {})?;
    Ok(usage.map(|Counters { counts: [input, cached, output], extra }| TokenUsage {
        prompt_tokens: input,
        completion_tokens: output,
        cached_tokens: cached,
        cost_usd: None,
        extra,
    }))
}

/// An item printed as `text`, as its fields read one by one (see [`Item`]).
pub(super) fn item_value(text: &str) -> Value {
    match exact_item(text) {
        Ok(Some((_, _, _, exact))) => exact.value,
        _ => Value::Null,
    }
}

/// One change of a `file_change` item.
#[derive(Default)]
pub(super) struct Change<'a> {
    pub(super) path: Text<'a>,
    pub(super) kind: Text<'a>,
}

/// A change (an object), its fields read as lenient strings; a key printed twice fails the read.
pub(super) fn read_change<'a>(r: &mut Scan<'a>) -> Res<Change<'a>> {
    let mut change = Change::default();
    read_object!(r, &mut change, { "path" => path: lenient_text, "kind" => kind: lenient_text })?;
    Ok(change)
}
