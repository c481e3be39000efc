//! The byte-level layer of JSON reading, below everything else in [`super`]: finding the end of
//! a string's plain run, unescaping a string body, reading a printed count. No other module of
//! `json` is used here.
//!
//! Two `unsafe` blocks live here ([`unescape`], and the SSE2 load of [`find_special`]): see
//! their SAFETY comments, and the tests at the end that pin the invariants they rely on.

/// The text is not one serde_json would read (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bad;

/// Result of a scanner step.
pub(crate) type Res<T> = Result<T, Bad>;

const ONES: u64 = u64::MAX / 255;
const HIGH: u64 = ONES << 7;

/// High bit set in each byte of `w` that is a control character (below 0x20); bytes above the
/// first hit may be flagged wrongly, so only the lowest flag counts.
#[inline]
fn ctrl_bytes(w: u64) -> u64 {
    w.wrapping_sub(ONES * 0x20) & !w & HIGH
}

/// High bit set in each byte of `w` equal to `c` (lowest flag exact, as above).
#[inline]
fn eq_bytes(w: u64, c: u8) -> u64 {
    let x = w ^ (ONES * c as u64);
    x.wrapping_sub(ONES) & !x & HIGH
}

/// High bit set in each byte of `w` that is a `"`, `\\` or control character (lowest flag exact).
#[inline(always)]
pub(crate) fn special_bytes(w: u64) -> u64 {
    ctrl_bytes(w) | eq_bytes(w, b'"') | eq_bytes(w, b'\\')
}

/// The index of the first `"`, `\\` or control character at or after `from` (`b.len()` when
/// none): sixteen bytes at a time with SSE2 (every x86_64 processor has it), then eight at a
/// time.
#[inline(always)]
pub(crate) fn find_special(b: &[u8], from: usize) -> usize {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    let from = match find_special_sse2(b, from) {
        Ok(hit) => return hit,
        Err(tail) => tail,
    };
    let mut i = from;
    while i + 8 <= b.len() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i..i + 8]);
        let hits = special_bytes(u64::from_le_bytes(w));
        if hits != 0 {
            return i + hits.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\\' || c < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

/// [`find_special`] over the whole sixteen-byte blocks from `from`: `Ok` with the first special
/// byte's index, or `Err` with where the bytes left are fewer than sixteen. `#[inline]`, not
/// `#[inline(always)]`: an unoptimized build then keeps it a call of its own, instead of its
/// vector temporaries enlarging the frame of every recursive reader that reads a string (past
/// what a 2 MiB thread stack holds at the deepest nesting they read, measured).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline]
fn find_special_sse2(b: &[u8], from: usize) -> Result<usize, usize> {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let mut i = from;
    while i + 16 <= b.len() {
        // SAFETY: SSE2 is enabled in this build (the `cfg` above; every x86_64 target has it),
        // so its instructions may run; `i + 16 <= b.len()`, so the sixteen bytes loaded are
        // inside `b`, and the load takes any alignment. (Pinned by
        // `find_special_finds_the_first_special_byte_anywhere`.)
        let hits = unsafe {
            let x = _mm_loadu_si128(b.as_ptr().add(i).cast());
            let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
            // Unsigned: a byte is below 0x20 when its minimum with 0x1f is itself.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
        };
        if hits != 0 {
            return Ok(i + hits.trailing_zeros() as usize);
        }
        i += 16;
    }
    Err(i)
}

/// Unescape the string body that starts at `start` in `text` (just past its opening quote) and
/// whose first backslash is at `at`, up to its closing quote, validating as it goes: the string
/// (allocated at its exact size) and the closing quote's index.
///
/// As strict as serde_json's typed string read: a control character, a malformed escape or a
/// lone surrogate (a leading one not followed by a trailing one, or a trailing one alone) is
/// `Bad`. The one unescaper of the crate: a string token ([`super::scan::JStr::decode`]), a typed string
/// read ([`super::scan::Scan::str`]) and a captured literal ([`super::borrowed::unescape_literal`]) all
/// decode with it.
pub(crate) fn unescape(text: &str, start: usize, at: usize) -> Res<(String, usize)> {
    // Decoded into a buffer kept per thread, then copied once into a string of its size: one
    // pass over the escapes (finding the end first to size the string cost a second one), and
    // no spare capacity (a `RawJson` made from it would reallocate to shed it).
    thread_local! {
        static UNESCAPED: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    }
    /// A buffer grown past this (by a huge string) is not kept for the next one.
    const KEPT_CAPACITY: usize = 1 << 20;
    UNESCAPED.with(|cell| {
        // Taken out while in use, so the cell is never borrowed twice.
        let mut buf = cell.take();
        buf.clear();
        let decoded = unescape_into(text.as_bytes(), start, at, &mut buf).map(|end| {
            // SAFETY: `buf` holds runs of `text` (valid UTF-8) cut only next to ASCII bytes
            // (quote, backslash, control characters), and UTF-8 encodings of `char`s.
            debug_assert!(std::str::from_utf8(&buf).is_ok());
            (unsafe { std::str::from_utf8_unchecked(&buf) }.to_owned(), end)
        });
        if buf.capacity() <= KEPT_CAPACITY {
            cell.set(buf);
        }
        decoded
    })
}

/// The byte each one-character escape stands for (`\\n` → newline), 0 for the others.
const ESCAPED: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'/' as usize] = b'/';
    table[b'b' as usize] = 0x08;
    table[b'f' as usize] = 0x0c;
    table[b'n' as usize] = b'\n';
    table[b'r' as usize] = b'\r';
    table[b't' as usize] = b'\t';
    table
};

/// [`unescape`] into `out` (appended): the closing quote's index.
fn unescape_into(b: &[u8], start: usize, mut at: usize, out: &mut Vec<u8>) -> Res<usize> {
    // (Seven bytes more: a word copied past the last special byte is cut back after it.)
    out.reserve(at.saturating_sub(start) + 64 + 7);
    out.extend_from_slice(b.get(start..at).ok_or(Bad)?);
    loop {
        // At a backslash.
        let esc = *b.get(at + 1).ok_or(Bad)?;
        at += 2;
        // The one-character escapes by table lookup (fewer instructions than an eight-way match).
        let simple = ESCAPED[usize::from(esc)];
        if simple != 0 {
            out.push(simple);
        } else {
            match esc {
                b'u' => {
                    let n = hex4(b, at)?;
                    at += 4;
                    let c = match n {
                        0xDC00..=0xDFFF => return Err(Bad),
                        0xD800..=0xDBFF => {
                            if b.get(at..at + 2) != Some(b"\\u") {
                                return Err(Bad);
                            }
                            let n2 = hex4(b, at + 2)?;
                            if !(0xDC00..=0xDFFF).contains(&n2) {
                                return Err(Bad);
                            }
                            at += 6;
                            char::from_u32((((n - 0xD800) << 10) | (n2 - 0xDC00)) + 0x1_0000)
                        }
                        n => char::from_u32(n),
                    };
                    out.extend_from_slice(c.ok_or(Bad)?.encode_utf8(&mut [0; 4]).as_bytes());
                }
                _ => return Err(Bad),
            }
        }
        // Copy up to the next `"`, `\\` or control character eight bytes at a time: whole words
        // are copied, then the bytes from the special one on are dropped (a copy of a known
        // size is a few instructions, a call to memcpy is not).
        loop {
            let Some(word) = b.get(at..at + 8) else {
                let j = find_special(b, at);
                out.extend_from_slice(&b[at..j]);
                at = j;
                break;
            };
            let word: [u8; 8] = word.try_into().unwrap_or_default();
            let hits = special_bytes(u64::from_le_bytes(word));
            out.extend_from_slice(&word);
            if hits == 0 {
                at += 8;
            } else {
                let n = hits.trailing_zeros() as usize / 8;
                out.truncate(out.len() - 8 + n);
                at += n;
                break;
            }
        }
        match b.get(at) {
            Some(b'"') => return Ok(at),
            Some(b'\\') => {}
            _ => return Err(Bad),
        }
    }
}

fn hex4(b: &[u8], at: usize) -> Res<u32> {
    let digits = b.get(at..at + 4).ok_or(Bad)?;
    let mut n = 0u32;
    for d in digits {
        n = (n << 4) | (*d as char).to_digit(16).ok_or(Bad)?;
    }
    Ok(n)
}

/// The count a printed number is, as [`serde_json::Value::as_u64`] reads it: a plain
/// non-negative integer within `u64`, `None` for anything else (a fraction, an exponent, a
/// sign, a string, `null`).
pub(crate) fn raw_count(raw: &str) -> Option<u64> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Up to 19 digits always fit: folded directly (a counter is read on every usage line).
    if raw.len() <= 19 {
        return Some(raw.bytes().fold(0u64, |n, b| n * 10 + u64::from(b - b'0')));
    }
    raw.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `s` written as a JSON string with some characters as `\u` escapes (surrogate pairs beyond
    /// the BMP), the others as serde_json writes them.
    fn escaped(s: &str, as_u: &[bool]) -> String {
        let mut out = String::from("\"");
        for (i, c) in s.chars().enumerate() {
            if as_u.get(i).copied().unwrap_or(false) {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            } else {
                let quoted = serde_json::to_string(&c.to_string()).unwrap();
                out.push_str(&quoted[1..quoted.len() - 1]);
            }
        }
        out.push('"');
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_cases::cases(2000)))]
        /// The invariant `unescape`'s SAFETY comment relies on: from valid UTF-8 text, the bytes
        /// it writes are valid UTF-8 — the string serde_json reads from the same text.
        #[test]
        fn unescape_writes_valid_utf8_the_string_serde_reads(
            s in any::<String>(),
            as_u in proptest::collection::vec(any::<bool>(), 0..64),
            prefix in "[a-zé😀]{0,9}",
        ) {
            let text = format!("{prefix}{}", escaped(&s, &as_u));
            let start = prefix.len() + 1;
            let body = &text[start..];
            if let Some(at) = body.find('\\') {
                let (out, end) = unescape(&text, start, start + at).expect("a well-formed string");
                prop_assert!(std::str::from_utf8(out.as_bytes()).is_ok());
                prop_assert_eq!(&out, &s);
                prop_assert_eq!(end, text.len() - 1, "the closing quote");
                let theirs: String = serde_json::from_str(&text[prefix.len()..]).unwrap();
                prop_assert_eq!(out, theirs);
            }
        }
    }

    #[test]
    fn unescape_refuses_what_would_not_be_a_string() {
        for text in [r#""\ud800""#, r#""\udc00x""#, r#""\ud800\u0041""#, r#""\x""#, r#""\u12""#, "\"\\\u{1}\"", r#""\"#]
        {
            let at = text.find('\\').unwrap();
            assert_eq!(unescape(text, 1, at), Err(Bad), "{text:?}");
        }
    }

    #[test]
    fn find_special_finds_the_first_quote_backslash_or_control_character() {
        let text = b"abcdefghijklmnop\"q\\r\x01";
        for from in 0..text.len() {
            let want =
                text[from..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).map_or(text.len(), |i| i + from);
            assert_eq!(find_special(text, from), want, "from {from}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_cases::cases(2000)))]
        /// The invariant the SSE2 load of `find_special` relies on (it reads only whole
        /// sixteen-byte blocks inside the slice), and its answer: the first special byte from any
        /// offset of any slice — special bytes at every place in a block, at its edges and in
        /// the tail, bytes above 0x7f (which a signed compare would take for control characters).
        #[test]
        fn find_special_finds_the_first_special_byte_anywhere(
            bytes in proptest::collection::vec(prop_oneof![
                8 => 0x20u8..0x7f,
                1 => prop::sample::select(vec![b'"', b'\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xff]),
            ], 0..80),
            from in 0usize..80,
        ) {
            let from = from.min(bytes.len());
            let want = bytes[from..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).map_or(bytes.len(), |i| i + from);
            prop_assert_eq!(find_special(&bytes, from), want);
        }
    }
}
