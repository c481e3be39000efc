//! The first look of [`RawJson::normalized`](super::RawJson::normalized): can this record need
//! a repair at all?
//!
//! The exact pass walks every byte outside the record's strings, one branch each, and parses
//! every number that has a fraction or an exponent; it was 4–13 % of decoding, for records that
//! almost never need anything. Each of its three repairs, though, needs something a vector
//! compare sees 32 bytes at a time, without knowing where strings are:
//!
//! - a container nested past [`MAX_DEPTH`]: more than `MAX_DEPTH` bytes `{` or `[` in the text
//!   (wherever they are: in a string they only make the count larger);
//! - a lone surrogate escape: a backslash, `u`, then `d` or `D` (the first hex digit of every
//!   surrogate, `\uD800`–`\uDFFF`);
//! - a number beyond `f64`: an exponent (a digit followed by `e` or `E`: JSON puts a digit
//!   before every exponent), or an integer part of 309 digits or more — such a run covers a
//!   whole 32-byte block of the scan (any run of 63 does).
//!
//! A text with none of these is [`surely_clean`]: the exact pass would change nothing. A text
//! with one (a count past the limit, an escaped backslash before `ud`, a hash such as `3e5` in a
//! string) only goes through the exact pass, as every text did before. Without AVX2 every text
//! does. The tests compare the verdict with the exact pass on every kind of repair at every
//! offset around the blocks, and on random texts.

use super::MAX_DEPTH;

/// True when the exact pass surely finds nothing to repair in the JSON `text` (see the
/// [module docs](self)); false when it may (or AVX2 is not available here).
pub(super) fn surely_clean(text: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 was detected.
        return unsafe { surely_clean_avx2(text) };
    }
    let _ = text; // read on x86-64 only
    false
}

/// Bytes read from a block's start: its 32, and two more for the pairs and triples that start
/// in it (`\ud`, a digit then `e`).
const SPAN: usize = 34;

/// # Safety
/// AVX2 is available.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn surely_clean_avx2(text: &[u8]) -> bool {
    let mut openers = 0u32;
    let mut i = 0;
    while i + SPAN <= text.len() {
        // SAFETY: AVX2 is available (the caller), and SPAN bytes from `i` are in `text`.
        let Some(n) = (unsafe { block(text, i) }) else { return false };
        openers += n;
        i += 32;
    }
    // The rest (fewer than SPAN bytes) from a zero-padded copy: a zero byte is none of the
    // bytes looked for, so the padding adds no opener, escape or digit. (A run of 309 digits
    // already covered one of the blocks above: at most 33 of its digits are in the rest.)
    let mut padded = [0u8; SPAN];
    padded[..text.len() - i].copy_from_slice(&text[i..]);
    // SAFETY: AVX2 is available, and `padded` holds SPAN bytes.
    let Some(n) = (unsafe { block(&padded, 0) }) else { return false };
    openers += n;
    openers as usize <= MAX_DEPTH
}

/// The block of 32 bytes at `at`: `None` when it holds the start of a surrogate escape, a digit
/// before an exponent, or only digits; else its count of `{` and `[`.
///
/// # Safety
/// AVX2 is available, and `at + SPAN <= text.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block(text: &[u8], at: usize) -> Option<u32> {
    use std::arch::x86_64::*;
    debug_assert!(at + SPAN <= text.len());
    // SAFETY: three unaligned 32-byte loads at `at`, `at + 1`, `at + 2`: all within the SPAN
    // readable bytes the caller guarantees.
    let (x0, x1, x2) = unsafe {
        let p = text.as_ptr().add(at);
        (_mm256_loadu_si256(p.cast()), _mm256_loadu_si256(p.add(1).cast()), _mm256_loadu_si256(p.add(2).cast()))
    };
    let is = |x: __m256i, c: u8| _mm256_cmpeq_epi8(x, _mm256_set1_epi8(c as i8));
    let lower = |x: __m256i| _mm256_or_si256(x, _mm256_set1_epi8(0x20));
    // A digit: `c ^ b'0'` is 0..=9 (compared unsigned: min(v, 9) == v).
    let digit = {
        let v = _mm256_xor_si256(x0, _mm256_set1_epi8(b'0' as i8));
        _mm256_cmpeq_epi8(_mm256_min_epu8(v, _mm256_set1_epi8(9)), v)
    };
    let surrogate = _mm256_and_si256(_mm256_and_si256(is(x0, b'\\'), is(x1, b'u')), is(lower(x2), b'd'));
    let exponent = _mm256_and_si256(digit, is(lower(x1), b'e'));
    if _mm256_movemask_epi8(_mm256_or_si256(surrogate, exponent)) != 0 || _mm256_movemask_epi8(digit) == -1 {
        return None;
    }
    let openers = _mm256_or_si256(is(x0, b'{'), is(x0, b'['));
    Some((_mm256_movemask_epi8(openers) as u32).count_ones())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw_json::{DeepContainers, repair};
    use proptest::prelude::*;

    fn needs_repair(text: &str) -> bool {
        repair(text, DeepContainers::AsText).is_some()
    }

    /// A verdict of "clean" that the exact pass contradicts is a missed repair.
    fn assert_never_missed(text: &str) {
        if surely_clean(text.as_bytes()) {
            assert!(!needs_repair(text), "judged clean but needs a repair: {text:?}");
        }
    }

    fn avx2() -> bool {
        #[cfg(target_arch = "x86_64")]
        return std::is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// `repair` placed at every offset of a string of `len` filler bytes, inside a JSON array.
    fn placed(filler: &str, len: usize, repair: &str) -> Vec<String> {
        let pad: String = filler.chars().cycle().take(len).collect();
        (0..=len).map(|at| format!("[\"{}\",{repair},\"{}\"]", &pad[..at], &pad[at..])).collect()
    }

    #[test]
    fn every_repair_is_seen_at_every_offset_around_the_blocks() {
        if !avx2() {
            return;
        }
        let repairs = [
            "\"\\ud800\"",
            "\"\\uDC00x\"",
            "1e999",
            "-2E+400",
            &"9".repeat(309),
            &"7".repeat(400),
            &format!("{}1{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1)),
        ];
        for repair in repairs {
            for text in placed("abc ", 70, repair) {
                assert!(needs_repair(&text), "not a repair after all: {text}");
                assert!(!surely_clean(text.as_bytes()), "a repair was missed: {text}");
            }
        }
    }

    #[test]
    fn nesting_is_judged_exactly_at_the_limit() {
        if !avx2() {
            return;
        }
        let nested = |levels: usize| format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
        assert!(!needs_repair(&nested(MAX_DEPTH)) && surely_clean(nested(MAX_DEPTH).as_bytes()));
        assert!(needs_repair(&nested(MAX_DEPTH + 1)) && !surely_clean(nested(MAX_DEPTH + 1).as_bytes()));
    }

    #[test]
    fn ordinary_records_are_judged_clean() {
        if !avx2() {
            return;
        }
        let clean = [
            "{}",
            "null",
            "123",
            "{\"command\":\"ls -la\",\"description\":\"List files\"}",
            "{\"tokens\":{\"input\":12345,\"cost\":0.0123},\"ids\":[1,2,3]}",
            "{\"path\":\"C:\\\\Users\\\\me\",\"text\":\"line\\nnext \\u00fc\"}",
            &"9".repeat(31),
            &format!("[{},1]", "9".repeat(60)),
            &format!("{{\"a\":\"{}\"}}", "x".repeat(1000)),
        ];
        for text in clean {
            assert!(!needs_repair(text), "{text}");
            assert!(surely_clean(text.as_bytes()), "judged unclean: {text}");
        }
    }

    #[test]
    fn look_alikes_only_cost_the_exact_pass() {
        // Each of these needs no repair but is sent to the exact pass (the verdict is "maybe").
        for text in
            ["\"3e5\"", "0.5e-99999", "\"\\\\ud\"", &format!("\"{}\"", "[".repeat(MAX_DEPTH + 1)), &"1".repeat(64)]
        {
            assert!(!needs_repair(text), "{text}");
            assert!(!surely_clean(text.as_bytes()), "{text}");
        }
    }

    /// Random JSON-ish values mixing every trigger with ordinary text.
    fn value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            (0u64..u64::MAX).prop_map(|n| n.to_string()),
            (1usize..400).prop_map(|n| "8".repeat(n)),
            ("-?[1-9][0-9]{0,2}(\\.[0-9]{1,3})?[eE][+-]?[0-9]{1,4}").prop_map(|s| s),
            ("[ -~&&[^\"\\\\]]{0,40}").prop_map(|s| format!("\"{s}\"")),
            ("[0-9a-fA-F]{4}").prop_map(|h| format!("\"x\\u{h}y\"")),
            Just("\"\\ud83d\\ude00\"".to_string()),
        ];
        leaf.prop_recursive(80, 400, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(("[a-z]{1,6}", inner), 0..4).prop_map(|v| {
                    let members: Vec<String> = v.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_cases::cases(3000)))]
        #[test]
        fn a_clean_verdict_is_never_contradicted_by_the_exact_pass(text in value()) {
            assert_never_missed(&text);
        }
    }
}
