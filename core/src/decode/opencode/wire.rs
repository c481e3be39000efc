//! Reading OpenCode's wire format: the line structs, read in one pass by the scanner with the
//! leniency each field needs. What the lines mean is in [`super`].

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::decode::LineOutcome;
use crate::decode::classify_failure;
use crate::event::{RawJson, ToolCallStatus};
use crate::json::borrowed::unescape_literal;
use crate::json::in_place::{SeenKeys, key_text};
use crate::json::lenient::ObjList;
use crate::json::raw_record::{CompactCounts, ObjectMembers, read_raw_json};
use crate::json::scan::{Bad, Res, Scan, read_obj_list};
use crate::json::text::raw_count;

/// One line, read in one pass by [`Scan`] into a struct the decoder holds. A known key printed
/// twice makes the line unusable, as a derived struct would.
#[derive(Default)]
pub(super) struct Line<'a> {
    pub(super) kind: Option<Cow<'a, str>>,
    /// As printed (`None` for `null`).
    pub(super) timestamp: Option<&'a str>,
    pub(super) session_id: Option<Cow<'a, str>>,
    pub(super) part: Option<Part<'a>>,
    pub(super) error: Option<Value>,
}

impl<'a> Line<'a> {
    /// Read a whole line into `self` (a default line); on failure tell why the line could not
    /// be used. `scratch` is the scanner's buffer, reused from line to line.
    pub(crate) fn parse(&mut self, text: &'a str, scratch: &mut Vec<(String, Value)>) -> Result<(), LineOutcome> {
        // Only objects (a derived struct would read a list by position).
        if !text.trim_start().starts_with('{') {
            return Err(classify_failure(text));
        }
        let mut sc = Scan::with_scratch(text, std::mem::take(scratch));
        let read = self.read(&mut sc).and_then(|()| sc.end());
        *scratch = sc.into_scratch();
        read.map_err(|Bad| classify_failure(text))
    }

    pub(crate) fn read(&mut self, sc: &mut Scan<'a>) -> Res<()> {
        let l = self;
        read_fields(sc, Dups::Fail, |key, sc| {
            Ok(match key {
                "type" => set(&mut l.kind, sc.opt_str()?, 1 << 0),
                "timestamp" => set(&mut l.timestamp, raw(sc)?, 1 << 1),
                "sessionID" => set(&mut l.session_id, sc.opt_str()?, 1 << 2),
                "part" => Part::read(&mut l.part, sc).map(|()| 1 << 3)?,
                "error" => set(&mut l.error, if sc.null()? { None } else { Some(sc.json_value()?) }, 1 << 4),
                _ => sc.skip().map(|()| 0)?,
            })
        })
    }
}

/// What a known key printed twice in an object means.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Dups {
    /// The object is unusable (a derived struct's read).
    Fail,
    /// The last value counts (a [`Value`]'s read).
    LastWins,
}

/// Read the fields of the object that is the next value, by type (keys decoded, nesting counted
/// as serde_json counts it, so a typed read inside fails where serde_json's failed): `field`
/// reads the value of a key it knows and returns the key's bit (each known key has its own), or
/// skips the value and returns 0.
#[inline(always)]
pub(super) fn read_fields<'a>(
    sc: &mut Scan<'a>,
    dups: Dups,
    mut field: impl FnMut(&str, &mut Scan<'a>) -> Res<u32>,
) -> Res<()> {
    let mut seen = 0u32;
    sc.object(|sc, key| {
        let bit = field(&key, sc)?;
        if seen & bit != 0 && dups == Dups::Fail {
            return Err(Bad);
        }
        seen |= bit;
        Ok(())
    })
}

/// Store a field's value; its bit for the duplicate check.
#[inline(always)]
pub(super) fn set<T>(slot: &mut T, value: T, bit: u32) -> u32 {
    *slot = value;
    bit
}

/// A value kept as printed (its syntax checked, as serde_json's `&RawValue`); `None` for `null`.
pub(super) fn raw<'a>(sc: &mut Scan<'a>) -> Res<Option<&'a str>> {
    if sc.null()? { Ok(None) } else { sc.raw().map(Some) }
}

/// True when a [`Value`] reads `text` whole (a captured value holding a lone surrogate escape
/// or a number beyond `f64` does not).
pub(super) fn reads_as_value(text: &str) -> bool {
    let mut sc = Scan::new(text);
    sc.check().and_then(|()| sc.end()).is_ok()
}

/// True when `text` may hold a `\u` escape of a surrogate (a superset: `\\u` counts too), found
/// with one searcher built once: long tool outputs hold many other escapes (`\n`), which a
/// backslash-by-backslash walk stops at one by one.
pub(super) fn may_hold_surrogate_escape(text: &str) -> bool {
    static FINDER: std::sync::OnceLock<memchr::memmem::Finder<'static>> = std::sync::OnceLock::new();
    let finder = FINDER.get_or_init(|| memchr::memmem::Finder::new(b"\\u"));
    let bytes = text.as_bytes();
    finder.find_iter(bytes).any(|at| matches!(bytes.get(at + 2), Some(b'd' | b'D')))
}

/// The string a captured value holds, borrowed when it has no escapes; `None` when it is not a
/// string.
pub(super) fn string_of(raw: &str) -> Option<Cow<'_, str>> {
    if raw.starts_with('"') { unescape_literal(raw) } else { None }
}

/// A line's part.
#[derive(Default)]
pub(super) struct Part<'a> {
    pub(super) text: Option<Cow<'a, str>>,
    pub(super) message_id: Option<Cow<'a, str>>,
    pub(super) call_id: Option<Cow<'a, str>>,
    pub(super) id: Option<Cow<'a, str>>,
    pub(super) tool: Option<Cow<'a, str>>,
    pub(super) state: State<'a>,
    /// An object: its counters, and itself as printed (the usage's `extra`).
    pub(super) tokens: Option<Tokens>,
    /// As printed.
    pub(super) cost: Option<&'a str>,
    pub(super) reason: Option<Cow<'a, str>>,
}

impl<'a> Part<'a> {
    /// `part`, into `slot` (read in place: a part is a few hundred bytes): `null` is none; an
    /// object is read field by field, a list by position; any other value fails the line (all
    /// as a derived struct reads it).
    pub(crate) fn read(slot: &mut Option<Part<'a>>, sc: &mut Scan<'a>) -> Res<()> {
        match sc.peek() {
            Some(b'{') => slot.insert(Part::default()).read_fields(sc),
            Some(b'[') => slot.insert(Part::default()).read_positions(sc),
            _ if sc.null()? => {
                *slot = None;
                Ok(())
            }
            _ => Err(Bad),
        }
    }

    pub(crate) fn read_fields(&mut self, sc: &mut Scan<'a>) -> Res<()> {
        let p = self;
        read_fields(sc, Dups::Fail, |key, sc| {
            Ok(match key {
                "text" => set(&mut p.text, sc.opt_str()?, 1 << 0),
                "messageID" => set(&mut p.message_id, sc.opt_str()?, 1 << 1),
                "callID" => set(&mut p.call_id, sc.opt_str()?, 1 << 2),
                "id" => set(&mut p.id, sc.opt_str()?, 1 << 3),
                "tool" => set(&mut p.tool, sc.opt_str()?, 1 << 4),
                "reason" => set(&mut p.reason, sc.opt_str()?, 1 << 5),
                "state" => set(&mut p.state, State::read(sc)?, 1 << 6),
                "tokens" => set(&mut p.tokens, read_tokens(sc)?, 1 << 7),
                "cost" => set(&mut p.cost, raw(sc)?, 1 << 8),
                _ => sc.skip().map(|()| 0)?,
            })
        })
    }

    /// A part printed as a list, as a derived struct reads one: the elements are the fields in
    /// the order `text`, `messageID`, `callID`, `id`, `tool`, `state`, `tokens`, `cost`,
    /// `reason`; fewer leave the rest unset, more fail the line.
    pub(crate) fn read_positions(&mut self, sc: &mut Scan<'a>) -> Res<()> {
        let mut at = 0;
        sc.array(|sc| {
            match at {
                0 => self.text = sc.opt_str()?,
                1 => self.message_id = sc.opt_str()?,
                2 => self.call_id = sc.opt_str()?,
                3 => self.id = sc.opt_str()?,
                4 => self.tool = sc.opt_str()?,
                5 => self.state = State::read(sc)?,
                6 => self.tokens = read_tokens(sc)?,
                7 => self.cost = raw(sc)?,
                8 => self.reason = sc.opt_str()?,
                _ => return Err(Bad),
            }
            at += 1;
            Ok(())
        })
    }
}

/// `part.tokens` read in the line's pass: the counters a usage needs (a key printed twice counts
/// with its last value), and the object kept as printed for `extra`.
#[derive(Default)]
pub(super) struct Tokens {
    pub(super) input: Option<u64>,
    pub(super) output: Option<u64>,
    pub(super) reasoning: Option<u64>,
    pub(super) cache_read: Option<u64>,
    pub(super) cache_write: Option<u64>,
    /// The object (its members as printed); `None` when it has none.
    pub(super) object: Option<RawJson>,
}

/// `part.tokens`: [`Tokens`] for an object; `None` for `null` or any other value (read by type
/// all the same, so text a `Value` refuses fails the line). The object as opencode prints it
/// (compact, escape-free keys) is read in one pass ([`CompactCounts`]), any other by type.
pub(super) fn read_tokens(sc: &mut Scan<'_>) -> Res<Option<Tokens>> {
    if let Some((tokens, len)) = compact_tokens(sc) {
        sc.skip_read(len);
        return Ok(Some(tokens));
    }
    read_tokens_by_type(sc)
}

/// [`read_tokens`] of a [`CompactCounts`] object, and the length of its text; `None` for any
/// other value and when [`CompactCounts::kept`] refuses the object. Same tokens as
/// [`read_tokens_by_type`] (property-tested).
fn compact_tokens(sc: &mut Scan<'_>) -> Option<(Tokens, usize)> {
    let compact = CompactCounts::read(sc)?;
    let mut t = Tokens::default();
    let mut all = 0;
    for (i, (key, value, count)) in compact.members().enumerate() {
        all |= 1 << i;
        // The last printing counts; a value that is not a count as `raw_count` reads it.
        let count = count.or_else(|| raw_count(value));
        match key {
            "input" => t.input = count,
            "output" => t.output = count,
            "reasoning" => t.reasoning = count,
            "cache" => (t.cache_read, t.cache_write) = cache_counts(value),
            _ => {}
        }
    }
    t.object = compact.kept(all, |_, _| {}).ok()?;
    Some((t, compact.text_len()))
}

/// [`read_tokens`] by the general reader: any object, any values.
fn read_tokens_by_type(sc: &mut Scan<'_>) -> Res<Option<Tokens>> {
    if sc.peek() != Some(b'{') {
        return sc.check().map(|()| None);
    }
    let mut t = Tokens::default();
    let mut members = ObjectMembers::default();
    sc.object(|r, key| {
        let raw = r.checked_raw()?;
        match key.as_ref() {
            "input" => t.input = raw_count(raw),
            "output" => t.output = raw_count(raw),
            "reasoning" => t.reasoning = raw_count(raw),
            "cache" => (t.cache_read, t.cache_write) = cache_counts(raw),
            _ => {}
        }
        members.insert(key, raw);
        Ok(())
    })?;
    t.object = members.into_raw_json();
    Ok(Some(t))
}

/// `tokens.cache`'s `read` and `write` counts (the last printing of each), when it is an object.
pub(super) fn cache_counts(raw: &str) -> (Option<u64>, Option<u64>) {
    let (mut read, mut write) = (None, None);
    let mut sc = Scan::new(raw);
    if sc.peek() == Some(b'{') {
        // Read whole once already (`checked_raw`): this pass cannot fail.
        let _ = sc.object(|r, key| {
            let raw = r.raw()?;
            match key.as_ref() {
                "read" => read = raw_count(raw),
                "write" => write = raw_count(raw),
                _ => {}
            }
            Ok(())
        });
    }
    (read, write)
}

/// A part's `state`, read in the line's pass: an object's members kept as printed (key, value
/// text), so `rawOutput` can be the state again without its `input`, and the fields a call
/// needs read from them on demand. Anything else reads as an empty state. A value no JSON reader
/// takes (an unpaired surrogate escape) makes the line unusable, as reading it as a value did.
#[derive(Default)]
pub(super) struct State<'a> {
    pub(super) members: Vec<(Cow<'a, str>, &'a str)>,
    /// Some key was printed twice: the state is then read as a JSON reader reads it.
    pub(super) dup: bool,
}

impl<'a> State<'a> {
    pub(crate) fn read(sc: &mut Scan<'a>) -> Res<State<'a>> {
        if sc.peek() != Some(b'{') {
            // Not an object (`null` included): an empty state, read as a value all the same.
            return sc.check().map(|()| State::default());
        }
        let mut state = State { members: Vec::with_capacity(8), dup: false };
        let mut seen = SeenKeys::new();
        sc.object(|sc, key| {
            // Members are kept as printed (syntax checked only), but one that holds a surrogate
            // escape must still be one a JSON reader takes (the old reader read those again).
            let raw = sc.raw()?;
            if may_hold_surrogate_escape(raw) && !reads_as_value(raw) {
                return Err(Bad);
            }
            seen.other(key_text(&key));
            state.members.push((key, raw));
            Ok(())
        })?;
        state.dup = seen.dup();
        Ok(state)
    }

    /// The last value printed under `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&'a str> {
        self.members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// The last value under `key`, unless it is `null`.
    pub(crate) fn non_null(&self, key: &str) -> Option<&'a str> {
        self.get(key).filter(|v| *v != "null")
    }

    /// The state without `input`, as a JSON reader reads it (for a key printed twice).
    pub(crate) fn value_without_input(&self) -> Value {
        let mut map = Map::new();
        for (key, raw) in &self.members {
            if let Ok(value) = serde_json::from_str::<Value>(raw) {
                map.insert(key.to_string(), value);
            }
        }
        map.swap_remove("input");
        Value::Object(map)
    }

    /// `rawOutput`: the state as printed, without `input` (already in `rawInput`). The last
    /// member takes the place of `input`, as removing it from a JSON reader's map does (the
    /// order every earlier record was printed in).
    pub(crate) fn raw_output(&self) -> RawJson {
        let n = self.members.len();
        // (More than 16 members were always read through a `Value`: kept, as it writes numbers
        // in its own way.)
        if self.dup || n > 16 {
            return RawJson::from_value(&self.value_without_input());
        }
        let input = self.members.iter().position(|(k, _)| k == "input");
        let kept = (0..n).filter_map(|i| match input {
            Some(at) if i == at && at + 1 < n => Some(n - 1),
            Some(at) if i == at || (i + 1 == n && at + 1 < n) => None,
            _ => Some(i),
        });
        // The exact length for plain keys, so the text becomes the record without being moved
        // to a smaller buffer: each member `"key":value,` but the last without its comma, in `{}`.
        let with_commas: usize = kept.clone().map(|i| self.members[i].0.len() + self.members[i].1.len() + 4).sum();
        let len = 2 + with_commas.saturating_sub(1);
        let mut text = String::with_capacity(len);
        text.push('{');
        for (written, i) in kept.enumerate() {
            let (key, value) = &self.members[i];
            if written > 0 {
                text.push(',');
            }
            if key.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
                text.push_str(&serde_json::to_string(key.as_ref()).unwrap_or_default());
            } else {
                text.push('"');
                text.push_str(key);
                text.push('"');
            }
            text.push(':');
            text.push_str(value);
        }
        text.push('}');
        // Keys written as serde_json writes them, values as the scanner read them whole: one
        // well-formed object, not read again.
        read_raw_json(text)
    }
}

/// One todo of `todowrite`.
#[derive(Default)]
pub(super) struct Todo<'a> {
    pub(super) content: Option<Cow<'a, str>>,
    pub(super) status: Option<Cow<'a, str>>,
    pub(super) priority: Option<Cow<'a, str>>,
}

impl<'a> Todo<'a> {
    pub(crate) fn read(sc: &mut Scan<'a>, dups: Dups) -> Res<Todo<'a>> {
        let mut t = Todo::default();
        read_fields(sc, dups, |key, sc| {
            Ok(match key {
                "content" => set(&mut t.content, sc.opt_str()?, 1 << 0),
                "status" => set(&mut t.status, sc.opt_str()?, 1 << 1),
                "priority" => set(&mut t.priority, sc.opt_str()?, 1 << 2),
                _ => sc.skip().map(|()| 0)?,
            })
        })?;
        Ok(t)
    }
}

/// The tool input fields a title, location, diff or plan is made of (see [`Args::read`]).
#[derive(Default)]
pub(super) struct Args<'a> {
    pub(super) file_path: Option<Cow<'a, str>>,
    pub(super) path: Option<Cow<'a, str>>,
    pub(super) description: Option<Cow<'a, str>>,
    pub(super) command: Option<Cow<'a, str>>,
    /// A non-negative integer (as `Value::as_u64`), else none.
    pub(super) offset: Option<u64>,
    pub(super) content: Option<Cow<'a, str>>,
    pub(super) old_string: Option<Cow<'a, str>>,
    pub(super) new_string: Option<Cow<'a, str>>,
    pub(super) pattern: Option<Cow<'a, str>>,
    pub(super) url: Option<Cow<'a, str>>,
    pub(super) query: Option<Cow<'a, str>>,
    pub(super) tool: Option<Cow<'a, str>>,
    pub(super) name: Option<Cow<'a, str>>,
    pub(super) todos: ObjList<Todo<'a>>,
}

impl<'a> Args<'a> {
    /// The input's fields (an input that is not an object: none), read as the serde reader
    /// read them: as a struct (other keys' values checked for syntax only) unless a known key
    /// is printed twice, then as a [`Value`] (a key's last value) when a `Value` reads the
    /// input, else none.
    pub(crate) fn read(raw: &'a str) -> Args<'a> {
        if !raw.starts_with('{') {
            return Args::default();
        }
        let mut args = Args::default();
        if args.read_fields(&mut Scan::new(raw), Dups::Fail).is_ok() {
            return args;
        }
        if !reads_as_value(raw) {
            return Args::default();
        }
        let mut args = Args::default();
        args.read_fields(&mut Scan::new(raw), Dups::LastWins).map(|()| args).unwrap_or_default()
    }

    pub(crate) fn read_fields(&mut self, sc: &mut Scan<'a>, dups: Dups) -> Res<()> {
        let a = self;
        read_fields(sc, dups, |key, sc| {
            Ok(match key {
                "filePath" => set(&mut a.file_path, sc.opt_str()?, 1 << 0),
                "path" => set(&mut a.path, sc.opt_str()?, 1 << 1),
                "description" => set(&mut a.description, sc.opt_str()?, 1 << 2),
                "command" => set(&mut a.command, sc.opt_str()?, 1 << 3),
                "offset" => set(&mut a.offset, sc.json_value()?.as_u64(), 1 << 4),
                "content" => set(&mut a.content, sc.opt_str()?, 1 << 5),
                "oldString" => set(&mut a.old_string, sc.opt_str()?, 1 << 6),
                "newString" => set(&mut a.new_string, sc.opt_str()?, 1 << 7),
                "pattern" => set(&mut a.pattern, sc.opt_str()?, 1 << 8),
                "url" => set(&mut a.url, sc.opt_str()?, 1 << 9),
                "query" => set(&mut a.query, sc.opt_str()?, 1 << 10),
                "tool" => set(&mut a.tool, sc.opt_str()?, 1 << 11),
                "name" => set(&mut a.name, sc.opt_str()?, 1 << 12),
                "todos" => set(&mut a.todos, ObjList(read_obj_list(sc, |sc| Todo::read(sc, dups))?), 1 << 13),
                _ => sc.skip().map(|()| 0)?,
            })
        })
    }
}

/// The `metadata` facts a call needs.
#[derive(Default)]
pub(super) struct Meta {
    /// `exit` when it is a number.
    pub(super) exit: Option<f64>,
    /// `exists` is `true`.
    pub(super) existed: bool,
}

impl Meta {
    /// Read from the raw `metadata` (often large: previews and diffs), skipping the read when
    /// neither key can be in it; read as [`Args::read`] reads an input.
    pub(crate) fn read(raw: Option<&str>) -> Meta {
        let Some(raw) = raw.filter(|r| r.starts_with('{')) else { return Meta::default() };
        let text = raw.as_bytes();
        if memchr::memmem::find(text, b"\"exi").is_none() && memchr::memmem::find(text, b"\\u").is_none() {
            return Meta::default();
        }
        let mut meta = Meta::default();
        if meta.read_fields(&mut Scan::new(raw), Dups::Fail).is_ok() {
            return meta;
        }
        if !reads_as_value(raw) {
            return Meta::default();
        }
        let mut meta = Meta::default();
        meta.read_fields(&mut Scan::new(raw), Dups::LastWins).map(|()| meta).unwrap_or_default()
    }

    pub(crate) fn read_fields(&mut self, sc: &mut Scan<'_>, dups: Dups) -> Res<()> {
        let m = self;
        read_fields(sc, dups, |key, sc| {
            Ok(match key {
                "exit" => {
                    // Read by type, as a `Value` (which makes any number an `f64`).
                    let text = sc.checked_raw()?;
                    let number = matches!(text.as_bytes().first(), Some(b'-' | b'0'..=b'9'));
                    set(&mut m.exit, text.parse::<f64>().ok().filter(|_| number), 1 << 0)
                }
                "exists" => set(&mut m.existed, sc.checked_raw()? == "true", 1 << 1),
                _ => sc.skip().map(|()| 0)?,
            })
        })
    }

    /// `completed`, or `failed` when `exit` is a non-zero number.
    pub(crate) fn exit_status(&self) -> ToolCallStatus {
        match self.exit {
            Some(n) if n != 0.0 => ToolCallStatus::Failed,
            _ => ToolCallStatus::Completed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::raw_record::tests::{levels, nest, read_nested, usage_text};

    /// What reading `text` (nested in `levels` arrays) with `read` gives: the counters, the
    /// object's text, and the text read.
    type TokensRead = Option<([Option<u64>; 5], Option<String>, String)>;

    fn tokens_read(text: &str, levels: usize, read: fn(&mut Scan<'_>) -> Res<Option<Tokens>>) -> TokensRead {
        let (tokens, text) = read_nested(text, levels, &mut |r| read(r))?;
        let t = tokens.unwrap_or_default();
        let counts = [t.input, t.output, t.reasoning, t.cache_read, t.cache_write];
        Some((counts, t.object.map(|o| o.get().to_string()), text.to_string()))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// A `tokens` object is read as the general reader reads it, whether the compact reading
        /// took it or not.
        #[test]
        fn tokens_read_as_the_general_reader(
            text in usage_text(&["input", "output", "reasoning", "cache", "total"]),
            levels in levels(),
        ) {
            let text = nest(&text, levels);
            proptest::prop_assert_eq!(
                tokens_read(&text, levels, read_tokens),
                tokens_read(&text, levels, read_tokens_by_type),
                "{}", text
            );
        }
    }

    #[test]
    fn opencode_tokens_are_read_compact() {
        let text = r#"{"total":1242,"input":200,"output":35,"reasoning":7,"cache":{"write":0,"read":1000}}"#;
        let (t, len) = compact_tokens(&mut Scan::new(text)).expect("compact");
        assert_eq!(len, text.len());
        assert_eq!(
            [t.input, t.output, t.reasoning, t.cache_read, t.cache_write],
            [Some(200), Some(35), Some(7), Some(1000), Some(0)]
        );
        assert_eq!(t.object.map(|o| o.get().to_string()).as_deref(), Some(text));
        // A count too long for the compact reading is still read as `raw_count` reads it.
        let text = r#"{"input":18446744073709551615}"#;
        assert_eq!(compact_tokens(&mut Scan::new(text)).map(|(t, _)| t.input), Some(Some(u64::MAX)));
    }
}
