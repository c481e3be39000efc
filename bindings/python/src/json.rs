//! JSON text straight to Python objects, exactly as `json.loads` gives them.
//!
//! A harness's own records (`rawInput`, `rawOutput`) are kept by the core as their JSON text
//! (`RawJson`). Parsing that text into a `serde_json::Value` and converting the tree would build
//! everything twice; this parser builds the dicts, lists, strings and numbers directly from the
//! text, with object keys from the run's interned-key cache ([`Keys`]).
//!
//! Same results as `json.loads`, including its edge cases: a key given twice keeps its first
//! position and its last value (a dict assignment, as `json.loads` does it); integers of any
//! size are Python ints (beyond 64 bits through `int(text)`); floats are correctly rounded from
//! their text (`1E400` is `inf`, as `float()` makes it). The text was validated as JSON when
//! the core kept it; anything this parser does not handle itself — a lone surrogate escape
//! (`"\ud800"`, which Python keeps in a str and Rust cannot) or, defensively, text that is not
//! JSON — goes to `json.loads` itself.
//!
//! The parser recurses once per nesting level, so its depth is bounded: records from the core
//! never nest past [`MAX_DEPTH`] (the core delivers deeper containers as
//! `{"$rawJson": "<text>"}`), and text that does (only reachable through the private test
//! helpers) is first [normalized](agentstream_core::RawJson::normalized) the same way, never
//! parsed by recursion without bound.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};

use agentstream_core::RawJson;
use agentstream_core::raw_json::{DeepContainers, MAX_DEPTH};

use crate::convert::Keys;

type Obj<'py> = Bound<'py, PyAny>;

/// The Python value of the JSON `text` (see the module docs). `None` when even `json.loads`
/// refuses it (not reachable for text the core validated).
pub fn to_py<'py>(py: Python<'py>, text: &str, keys: &mut Keys) -> PyResult<Obj<'py>> {
    let mut p = Parser { text, b: text.as_bytes(), pos: 0, buf: String::new(), depth: 0, too_deep: false };
    if let Some(v) = p.value(py, keys)? {
        p.ws();
        if p.pos == p.b.len() {
            return Ok(v);
        }
    }
    if p.too_deep {
        if let Some((bounded, _)) = RawJson::from_text(text).and_then(|r| r.normalized(DeepContainers::AsText)) {
            return to_py(py, bounded.get(), keys);
        }
        return Ok(py.None().into_bound(py));
    }
    json_loads(py, text)
}

fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Obj<'py>> {
    static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let loads = LOADS.get_or_try_init(py, || py.import("json")?.getattr("loads").map(Bound::unbind))?;
    Ok(loads.bind(py).call1((text,)).unwrap_or_else(|_| py.None().into_bound(py)))
}

struct Parser<'t> {
    text: &'t str,
    b: &'t [u8],
    pos: usize,
    /// Scratch for strings with escapes.
    buf: String,
    /// Containers open now.
    depth: usize,
    /// A container past [`MAX_DEPTH`] was met (the text is normalized and parsed again).
    too_deep: bool,
}

/// Where a string read by [`Parser::string`] is: a range of the text (no escapes), or the
/// scratch buffer (decoded; never copied out of it: it is turned into a Python string at once).
#[derive(Clone, Copy)]
enum StrAt {
    Text(usize, usize),
    Scratch,
}

/// `Ok(None)`: this parser does not take the text (the caller falls back to `json.loads`).
type Parsed<T> = PyResult<Option<T>>;

impl<'t> Parser<'t> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.pos) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.ws();
        if self.b.get(self.pos) == Some(&byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &str) -> bool {
        if self.b[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn value<'py>(&mut self, py: Python<'py>, keys: &mut Keys) -> Parsed<Obj<'py>> {
        self.ws();
        let Some(&c) = self.b.get(self.pos) else { return Ok(None) };
        if matches!(c, b'{' | b'[') {
            // MAX_DEPTH levels, plus the marker object the core puts at the last one.
            if self.depth == MAX_DEPTH + 1 {
                self.too_deep = true;
                return Ok(None);
            }
            self.depth += 1;
        }
        let v = self.value_at(py, c, keys)?;
        if matches!(c, b'{' | b'[') {
            self.depth -= 1;
        }
        Ok(v)
    }

    fn value_at<'py>(&mut self, py: Python<'py>, c: u8, keys: &mut Keys) -> Parsed<Obj<'py>> {
        Ok(Some(match c {
            b'{' => {
                self.pos += 1;
                let d = PyDict::new(py);
                if !self.eat(b'}') {
                    loop {
                        if !self.eat(b'"') {
                            return Ok(None);
                        }
                        let Some(key) = self.string()? else { return Ok(None) };
                        let key = keys.get(py, self.str_at(key));
                        if !self.eat(b':') {
                            return Ok(None);
                        }
                        let Some(v) = self.value(py, keys)? else { return Ok(None) };
                        d.set_item(key, v)?;
                        if self.eat(b',') {
                            continue;
                        }
                        if self.eat(b'}') {
                            break;
                        }
                        return Ok(None);
                    }
                }
                d.into_any()
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        let Some(v) = self.value(py, keys)? else { return Ok(None) };
                        items.push(v);
                        if self.eat(b',') {
                            continue;
                        }
                        if self.eat(b']') {
                            break;
                        }
                        return Ok(None);
                    }
                }
                PyList::new(py, items)?.into_any()
            }
            b'"' => {
                self.pos += 1;
                let Some(s) = self.string()? else { return Ok(None) };
                PyString::new(py, self.str_at(s)).into_any()
            }
            b't' if self.literal("true") => PyBool::new(py, true).to_owned().into_any(),
            b'f' if self.literal("false") => PyBool::new(py, false).to_owned().into_any(),
            b'n' if self.literal("null") => py.None().into_bound(py),
            b'-' | b'0'..=b'9' => return self.number(py),
            _ => return Ok(None),
        }))
    }

    /// The string whose opening quote was just read (read it with [`Parser::str_at`]); `None`
    /// for a lone surrogate escape or an unterminated string. (Raw control characters cannot
    /// occur: serde_json refused them when the core validated the text.)
    fn string(&mut self) -> Parsed<StrAt> {
        let start = self.pos;
        let Some(end) = memchr::memchr2(b'"', b'\\', &self.b[start..]).map(|i| start + i) else { return Ok(None) };
        if self.b[end] == b'"' {
            self.pos = end + 1;
            return Ok(Some(StrAt::Text(start, end)));
        }
        self.buf.clear();
        let mut from = start;
        loop {
            let Some(at) = memchr::memchr2(b'"', b'\\', &self.b[from..]).map(|i| from + i) else { return Ok(None) };
            self.buf.push_str(&self.text[from..at]);
            if self.b[at] == b'"' {
                self.pos = at + 1;
                break;
            }
            let Some(&e) = self.b.get(at + 1) else { return Ok(None) };
            from = at + 2;
            let c = match e {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let Some(hi) = self.hex4(at + 2) else { return Ok(None) };
                    from = at + 6;
                    match hi {
                        0xD800..=0xDBFF => {
                            let lo =
                                (self.b.get(from..from + 2) == Some(b"\\u")).then(|| self.hex4(from + 2)).flatten();
                            match lo {
                                Some(lo @ 0xDC00..=0xDFFF) => {
                                    from += 6;
                                    match char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)) {
                                        Some(c) => c,
                                        None => return Ok(None),
                                    }
                                }
                                _ => return Ok(None), // a lone leading surrogate
                            }
                        }
                        0xDC00..=0xDFFF => return Ok(None), // a lone trailing surrogate
                        _ => match char::from_u32(hi) {
                            Some(c) => c,
                            None => return Ok(None),
                        },
                    }
                }
                _ => return Ok(None),
            };
            self.buf.push(c);
        }
        Ok(Some(StrAt::Scratch))
    }

    /// The text of a string [`Parser::string`] read: borrowed from the JSON text, or (with
    /// escapes) from the scratch buffer it was decoded into, until the next string is read.
    fn str_at(&self, at: StrAt) -> &str {
        match at {
            StrAt::Text(start, end) => &self.text[start..end],
            StrAt::Scratch => &self.buf,
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.b.get(at..at + 4)?;
        let mut n = 0;
        for &d in digits {
            n = n * 16 + (d as char).to_digit(16)?;
        }
        Some(n)
    }

    fn number<'py>(&mut self, py: Python<'py>) -> Parsed<Obj<'py>> {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let from = p.pos;
            while p.b.get(p.pos).is_some_and(u8::is_ascii_digit) {
                p.pos += 1;
            }
            p.pos - from
        };
        if self.b[self.pos] == b'-' {
            self.pos += 1;
        }
        let int_digits = digits(self);
        if int_digits == 0 || (int_digits > 1 && self.b[self.pos - int_digits] == b'0') {
            return Ok(None);
        }
        let mut float = false;
        if self.b.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            float = true;
            if digits(self) == 0 {
                return Ok(None);
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.pos) {
            self.pos += 1;
            float = true;
            if let Some(b'+' | b'-') = self.b.get(self.pos) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Ok(None);
            }
        }
        let text = &self.text[start..self.pos];
        if float {
            // Correctly rounded, as Python's float() is.
            return Ok(text.parse::<f64>().ok().map(|f| PyFloat::new(py, f).into_any()));
        }
        Ok(Some(match text.parse::<i64>() {
            Ok(i) => i.into_pyobject(py)?.into_any(),
            // Beyond 64 bits: Python's own int().
            Err(_) => py.get_type::<PyInt>().call1((text,))?,
        }))
    }
}
