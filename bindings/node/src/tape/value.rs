//! JSON values on a tape: the harness's own records (`rawInput`, `rawOutput`, `extra`), lifecycle
//! and hook events.
//!
//! `JSON.parse` spends most of its time on objects: every key is scanned, hashed, looked up in
//! V8's string table and searched in the map's transitions, per object. The records of one
//! harness have few shapes (the same keys in the same order, object after object), so an object
//! goes on the tape as its *shape* (an id) and its values; JavaScript turns each shape into a
//! function returning an object literal with those keys, once, and calls it with the values (a
//! literal of fixed keys is one allocation of a known map). Strings are slices of the batch's
//! text, as everywhere on the tape.
//!
//! Value words: 0 `null`, 1 `false`, 2 `true`, 3 a number (an `f64`: two words), 4 a string,
//! 5 an array (`count`, then the values), 6 an object (its shape id, then one value per key),
//! 7 a non-negative integer below 2^31 (one word), 8 a value that stays JSON text (taken from the
//! batch's JSON array, in order). Shapes are numbered per decoder (or run), from 0, in the order
//! they are first used; the ones new to a batch are defined in its trailer (see [`Tape`]).
//!
//! What `JSON.parse` does that a literal would not — a key given twice, a key `__proto__`, keys
//! that are array indices (their order), a string with an unpaired surrogate escape (a Rust
//! string cannot hold one), nesting deeper than [`MAX_DEPTH`], more than [`MAX_KEYS`] keys, more
//! than [`MAX_SHAPES`] shapes — makes the whole value stay JSON text (tag 8): the result is
//! always exactly `JSON.parse`'s. `node/test/tape.test.mjs` compares them.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};

use super::Tape;

static SHAPES: AtomicBool = AtomicBool::new(true);

/// Whether objects go on tapes as shapes (else every JSON value stays JSON text). JavaScript
/// turns off shapes when its runtime refuses to compile code from strings
/// (`--disallow-code-generation-from-strings`): then it cannot make their literals.
pub fn use_shapes(on: bool) {
    SHAPES.store(on, Ordering::Relaxed);
}

/// See [`use_shapes`].
pub fn shapes_enabled() -> bool {
    SHAPES.load(Ordering::Relaxed)
}

/// Nesting deeper than this stays JSON text (the walk below recurses).
pub const MAX_DEPTH: usize = 96;
/// An object with more keys stays JSON text (its factory takes one argument per key).
pub const MAX_KEYS: usize = 64;
/// Shapes per decoder (or run); objects of further new shapes stay JSON text.
pub const MAX_SHAPES: usize = 4096;

/// The shapes a decoder (or run) has told JavaScript about, and the ones of the current batch
/// not yet defined.
#[derive(Default)]
pub struct Shapes {
    /// Key lists by id.
    keys: Vec<Vec<Box<str>>>,
    /// Ids by the hash of their keys (already a hash: not hashed again).
    by_hash: HashMap<u64, Vec<u32>, BuildHasherDefault<Prehashed>>,
    /// Ids defined by the batch being written (the first new id; all later ones are new too).
    first_new: usize,
}

impl Shapes {
    fn find(&self, hash: u64, keys: &[Key], source: &str, scratch: &str) -> Option<u32> {
        self.by_hash.get(&hash)?.iter().copied().find(|&id| {
            let known = &self.keys[id as usize];
            known.len() == keys.len() && known.iter().zip(keys).all(|(k, key)| **k == *key.get(source, scratch))
        })
    }

    fn forget_from(&mut self, id: usize) {
        while self.keys.len() > id {
            self.keys.pop();
        }
        self.by_hash.retain(|_, ids| {
            ids.retain(|&i| (i as usize) < id);
            !ids.is_empty()
        });
    }

    /// Start a batch: every shape from now on is new to JavaScript.
    pub fn start_batch(&mut self) {
        self.first_new = self.keys.len();
    }

    /// The id of the first shape new to this batch.
    pub fn first_new(&self) -> usize {
        self.first_new
    }

    /// The shapes new to this batch, in id order.
    pub fn new_in_batch(&self) -> &[Vec<Box<str>>] {
        &self.keys[self.first_new..]
    }
}

/// A `u64` key that is a hash already.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed here; fold anything else in, in case.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Add a key to the hash of an object's keys (FxHash-like, eight bytes at a time, then the
/// length, so "ab","c" and "a","bc" differ).
fn hash_key(mut h: u64, key: &str) -> u64 {
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let mut step = |w: u64| h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    let bytes = key.as_bytes();
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        step(u64::from_le_bytes(c.try_into().unwrap_or_default()));
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    step(u64::from_le_bytes(last));
    step(bytes.len() as u64);
    h
}

/// Whether an object with these keys, built as a literal, is what `JSON.parse` makes of it: no
/// key twice (JSON.parse keeps its first place and its last value), no `__proto__` (a literal
/// would set its prototype), no array-index key (those are ordered before the others).
fn literal_safe(keys: &[&str]) -> bool {
    keys.iter().enumerate().all(|(i, key)| {
        let index_like = !key.is_empty()
            && key.bytes().all(|c| c.is_ascii_digit())
            && (*key == "0" || !key.starts_with('0'))
            && key.parse::<u64>().is_ok_and(|n| n < u64::from(u32::MAX));
        !index_like && *key != "__proto__" && !keys[..i].contains(key)
    })
}

/// Where a key of the object being walked is: in the JSON text itself (no escape in it), or
/// unescaped in the tape's key scratch.
#[derive(Clone, Copy)]
pub(super) enum Key {
    Source(usize, usize),
    Scratch(usize, usize),
}

impl Key {
    fn get<'a>(self, source: &'a str, scratch: &'a str) -> &'a str {
        match self {
            Key::Source(a, b) => &source[a..b],
            Key::Scratch(a, b) => &scratch[a..b],
        }
    }
}

/// Why a value stays JSON text.
struct AsText;

impl Tape {
    /// Write the JSON value `json` (valid JSON: the core validated it). Falls back to JSON text
    /// (tag 8) for what a literal would not give as `JSON.parse` does.
    pub(super) fn value(&mut self, json: &str) {
        if shapes_enabled() {
            let mark = (self.words.len(), self.text.len(), self.units, self.shapes.keys.len(), self.ascii);
            let mut walk = Walk { b: json.as_bytes(), s: json, pos: 0 };
            if walk.value(self, 0).is_ok() {
                return;
            }
            // Undo the partial value, shapes included: JavaScript never sees them.
            (self.ascii, self.units) = (mark.4, mark.2);
            self.words.truncate(mark.0);
            self.text.truncate(mark.1);
            self.shapes.forget_from(mark.3);
            self.keys.clear();
            self.key_spans.clear();
        }
        self.word(8);
        self.json_text(json);
    }
}

struct Walk<'a> {
    b: &'a [u8],
    s: &'a str,
    pos: usize,
}

impl Walk<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.pos) {
            self.pos += 1;
        }
    }

    fn value(&mut self, tape: &mut Tape, depth: usize) -> Result<(), AsText> {
        if depth > MAX_DEPTH {
            return Err(AsText);
        }
        self.ws();
        match self.b.get(self.pos).copied().ok_or(AsText)? {
            b'n' => {
                self.pos += 4;
                tape.word(0);
            }
            b'f' => {
                self.pos += 5;
                tape.word(1);
            }
            b't' => {
                self.pos += 4;
                tape.word(2);
            }
            b'"' => {
                self.pos += 1;
                tape.word(4);
                self.string(tape)?;
            }
            b'[' => {
                self.pos += 1;
                tape.word(5);
                let at = tape.words.len();
                tape.word(0);
                let mut n = 0u32;
                self.ws();
                if self.b.get(self.pos) == Some(&b']') {
                    self.pos += 1;
                } else {
                    loop {
                        self.value(tape, depth + 1)?;
                        n += 1;
                        self.ws();
                        match self.b.get(self.pos) {
                            Some(b',') => self.pos += 1,
                            Some(b']') => {
                                self.pos += 1;
                                break;
                            }
                            _ => return Err(AsText),
                        }
                    }
                }
                tape.words[at] = n;
            }
            b'{' => {
                self.pos += 1;
                tape.word(6);
                let at = tape.words.len();
                tape.word(0);
                // Only the keys' shape goes on the tape: they are kept aside while walking (on
                // one stack for every level), hashed as they come.
                let base = tape.key_spans.len();
                let mut hash = 0;
                self.ws();
                if self.b.get(self.pos) == Some(&b'}') {
                    self.pos += 1;
                } else {
                    loop {
                        self.ws();
                        if self.b.get(self.pos) != Some(&b'"') {
                            return Err(AsText);
                        }
                        self.pos += 1;
                        let key = self.key(tape)?;
                        hash = hash_key(hash, key.get(self.s, &tape.keys));
                        tape.key_spans.push(key);
                        if tape.key_spans.len() - base > MAX_KEYS {
                            return Err(AsText);
                        }
                        self.ws();
                        if self.b.get(self.pos) != Some(&b':') {
                            return Err(AsText);
                        }
                        self.pos += 1;
                        self.value(tape, depth + 1)?;
                        self.ws();
                        match self.b.get(self.pos) {
                            Some(b',') => self.pos += 1,
                            Some(b'}') => {
                                self.pos += 1;
                                break;
                            }
                            _ => return Err(AsText),
                        }
                    }
                }
                tape.words[at] = tape.shape(self.s, base, hash)?;
            }
            b'-' | b'0'..=b'9' => self.number(tape)?,
            _ => return Err(AsText),
        }
        Ok(())
    }

    /// A key whose opening quote was read.
    fn key(&mut self, tape: &mut Tape) -> Result<Key, AsText> {
        let start = self.pos;
        let end = memchr::memchr2(b'"', b'\\', &self.b[start..]).map(|i| start + i).ok_or(AsText)?;
        if self.b[end] == b'"' {
            self.pos = end + 1;
            return Ok(Key::Source(start, end));
        }
        let from = tape.keys.len();
        self.unescape(&mut tape.keys)?;
        Ok(Key::Scratch(from, tape.keys.len()))
    }

    /// A string whose opening quote was read, onto the tape (its length, its text).
    fn string(&mut self, tape: &mut Tape) -> Result<(), AsText> {
        let start = self.pos;
        let end = memchr::memchr2(b'"', b'\\', &self.b[start..]).map(|i| start + i).ok_or(AsText)?;
        if self.b[end] == b'"' {
            self.pos = end + 1;
            tape.str(&self.s[start..end]);
            return Ok(());
        }
        let mut scratch = std::mem::take(&mut tape.scratch);
        scratch.clear();
        let done = self.unescape(&mut scratch);
        if done.is_ok() {
            tape.str(&scratch);
        }
        tape.scratch = scratch;
        done
    }

    /// The rest of a string (its opening quote was read) appended to `out`, unescaped.
    fn unescape(&mut self, out: &mut String) -> Result<(), AsText> {
        let mut from = self.pos;
        loop {
            let at = memchr::memchr2(b'"', b'\\', &self.b[from..]).map(|i| from + i).ok_or(AsText)?;
            out.push_str(&self.s[from..at]);
            if self.b[at] == b'"' {
                self.pos = at + 1;
                return Ok(());
            }
            let escape = *self.b.get(at + 1).ok_or(AsText)?;
            from = at + 2;
            out.push(match escape {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let hi = self.hex4(at + 2)?;
                    from = at + 6;
                    match hi {
                        0xD800..=0xDBFF => {
                            // Only a pair makes a character; a lone surrogate stays JSON text.
                            if self.b.get(from..from + 2) != Some(b"\\u") {
                                return Err(AsText);
                            }
                            let lo = self.hex4(from + 2)?;
                            if !(0xDC00..=0xDFFF).contains(&lo) {
                                return Err(AsText);
                            }
                            from += 6;
                            char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).ok_or(AsText)?
                        }
                        0xDC00..=0xDFFF => return Err(AsText),
                        _ => char::from_u32(hi).ok_or(AsText)?,
                    }
                }
                _ => return Err(AsText),
            });
        }
    }

    fn hex4(&self, at: usize) -> Result<u32, AsText> {
        let digits = self.b.get(at..at + 4).ok_or(AsText)?;
        digits.iter().try_fold(0, |n, &d| Ok(n * 16 + (d as char).to_digit(16).ok_or(AsText)?))
    }

    fn number(&mut self, tape: &mut Tape) -> Result<(), AsText> {
        let start = self.pos;
        while let Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') = self.b.get(self.pos) {
            self.pos += 1;
        }
        let text = &self.s[start..self.pos];
        // A plain non-negative integer (no sign: "-0" is -0 for JSON.parse) below 2^31: one word.
        let small = (text.len() <= 10 && text.bytes().all(|c| c.is_ascii_digit()))
            .then(|| text.parse::<u32>().ok())
            .flatten()
            .filter(|&n| n < 1 << 31);
        if let Some(n) = small {
            tape.word(7);
            tape.word(n);
            return Ok(());
        }
        // Correctly rounded, as JSON.parse rounds (1E400 is Infinity for both).
        let x: f64 = text.parse().map_err(|_| AsText)?;
        tape.word(3);
        tape.f64(x);
        Ok(())
    }
}

impl Tape {
    /// The id of the object shape whose keys are `key_spans[base..]` (in `source` or the key
    /// scratch; `hash` their [`hash_key`]), defining a new one if needed; then the keys are
    /// dropped from the stack and the scratch.
    fn shape(&mut self, source: &str, base: usize, hash: u64) -> Result<u32, AsText> {
        let keys = &self.key_spans[base..];
        let id = match self.shapes.find(hash, keys, source, &self.keys) {
            Some(id) => id,
            None => {
                let resolved: Vec<&str> = keys.iter().map(|k| k.get(source, &self.keys)).collect();
                // Checked once, when a shape is first seen: a known shape passed.
                if self.shapes.keys.len() >= MAX_SHAPES || !literal_safe(&resolved) {
                    return Err(AsText);
                }
                let id = self.shapes.keys.len() as u32;
                self.shapes.keys.push(resolved.iter().map(|k| Box::<str>::from(*k)).collect());
                self.shapes.by_hash.entry(hash).or_default().push(id);
                id
            }
        };
        let scratch_start = keys.iter().find_map(|k| match k {
            Key::Scratch(a, _) => Some(*a),
            Key::Source(..) => None,
        });
        if let Some(start) = scratch_start {
            self.keys.truncate(start);
        }
        self.key_spans.truncate(base);
        Ok(id)
    }
}
