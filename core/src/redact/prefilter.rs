//! The first look of [`may_hold_secrets`](super::may_hold_secrets): where in a text can a mask
//! begin at all?
//!
//! The exact pre-scan judges every byte that can anchor a mask (quotes, blanks, `=`, `:`, `-`,
//! `_`, …): in JSON that is one byte in four or five, each a few unpredictable branches, and it
//! was the largest single cost of decoding. Every one of its triggers, though, needs one of a
//! few dozen short needles nearby: the last word of a secret-named key (`key`, `token`,
//! `password`, …), a token prefix (`sk-`, `ghp_`, `AKIA`, …), `bearer`, `-----BEGIN `, `://`,
//! a `\u` escape, or an option such as `-p`. So the text is read once, one pair of adjacent bytes
//! at a time against a bitmap of the pairs the needles are looked for by (for each needle its
//! least common pair, from [`COMMON_PAIRS`]); only where a whole needle is found are the bytes
//! after it judged exactly.
//!
//! **Why nothing is missed.** Each trigger of the exact scan at byte `j` has a needle starting
//! at most [`REACH`] bytes before `j` (the needle that ends at `j` for a key word or a token
//! prefix; the one starting at `j` for the others), and every needle start is visited. Needles
//! are compared with `0x20` OR-ed into every byte: that folds ASCII letters to lower case exactly
//! as the key-word check does, and for every other byte it can only add matches (`_` and DEL
//! both read as DEL), never lose one. The verdict is then the exact scan's own on those bytes; a
//! property test compares the two on random and adversarial texts, and the `pre_scan` fuzz
//! target on any bytes.

use std::ops::Range;

/// The longest needle, in bytes: a trigger lies at most this far after the start of a needle.
pub(super) const REACH: usize = 11;

/// Byte pairs common in JSON, code and English, most common first (folded: `_` reads as DEL).
/// A needle is looked for by its least common pair, so that few places need a closer look; the
/// list only steers speed, never what is found.
const COMMON_PAIRS: &[&[u8; 2]] = &[
    b",\"", b"\":", b"\",", b":\"", b"e\"", b"re", b"\"t", b"to", b"en", b"in", b"es", b"on", b"th", b"he", b"s\"",
    b"st", b"d\"", b"t\"", b"te", b"nt", b"se", b"er", b"an", b"de", b"at", b"ti", b"me", b"ut", b"ss", b"ta", b"ge",
    b"id", b"ea", b"co", b"pe", b"pu", b"us", b"ll", b"io", b"ty", b"or", b"si", b"ed", b"ke", b"is", b"le", b"al",
    b"ar", b"as", b"pa", b"ok", b"ro", b"ch", b"el", b"oo", b"et", b"ac", b"ul", b"ou", b"nd", b"it", b"of", b"hi",
    b"ri", b"ne", b"ra", b"ce", b"li", b"ma", b"be", b"om", b"ur", b"na", b"ec", b"cr",
];

/// Where a needle is looked for: by the pair of bytes at `offset` in it.
struct Needle {
    folded: Vec<u8>,
    offset: usize,
}

/// The needles, indexed for a scan that looks at each pair of adjacent bytes once.
pub(super) struct Needles {
    /// Bit `a << 8 | b` is set when some needle is looked for by bytes `a`, `b` (any case).
    pairs: Box<[u64; 1024]>,
    /// The needles by the folded first byte of the pair they are looked for by.
    by_pair_start: Vec<Vec<Needle>>,
}

impl Needles {
    /// Index `needles` (each 2..=[`REACH`] bytes, matched with ASCII case folded).
    pub(super) fn new(needles: Vec<Vec<u8>>) -> Needles {
        let mut pairs = Box::new([0u64; 1024]);
        let mut by_pair_start: Vec<Vec<Needle>> = (0..256).map(|_| Vec::new()).collect();
        for needle in needles {
            let folded: Vec<u8> = needle.iter().map(|c| c | 0x20).collect();
            assert!((2..=REACH).contains(&folded.len()), "a pre-scan needle is 2..={REACH} bytes");
            let commonness = |pair: &[u8]| COMMON_PAIRS.iter().rev().position(|p| p[..] == *pair).map_or(0, |r| r + 1);
            let offset = (0..folded.len() - 1).min_by_key(|&k| commonness(&folded[k..k + 2])).unwrap_or(0);
            let (x, y) = (folded[offset], folded[offset + 1]);
            // Every byte pair that folds to the chosen one.
            for a in (0..=255u8).filter(|a| a | 0x20 == x) {
                for b in (0..=255u8).filter(|b| b | 0x20 == y) {
                    let pair = usize::from(a) << 8 | usize::from(b);
                    pairs[pair / 64] |= 1 << (pair % 64);
                }
            }
            by_pair_start[usize::from(x)].push(Needle { folded, offset });
        }
        Needles { pairs, by_pair_start }
    }

    /// Whether some needle is looked for by the byte pair `pair` (`first << 8 | second`).
    #[inline(always)]
    fn looked_for_by(&self, pair: usize) -> bool {
        self.pairs[(pair >> 6) & 1023] & (1 << (pair & 63)) != 0
    }

    /// The bytes to judge for the needles looked for by the pair at `i` of `text`: from the
    /// earliest start of one found there to [`REACH`] bytes after the latest (all of them start
    /// within [`REACH`] bytes before `i`, so this is one range); `None` when none is there.
    #[cold]
    fn found_at(&self, text: &[u8], i: usize) -> Option<Range<usize>> {
        let mut window: Option<Range<usize>> = None;
        for needle in &self.by_pair_start[usize::from(text[i] | 0x20)] {
            let Some(start) = i.checked_sub(needle.offset) else { continue };
            let Some(there) = text.get(start..start + needle.folded.len()) else { continue };
            if there.iter().zip(&needle.folded).all(|(c, n)| c | 0x20 == *n) {
                let end = (start + REACH + 1).min(text.len());
                window = Some(window.map_or(start..end, |w| w.start.min(start)..w.end.max(end)));
            }
        }
        window
    }

    /// Whether `check` holds at some byte within [`REACH`] bytes after the start of a needle in
    /// `text` (a byte is judged again only where two needles' ranges are apart by another).
    pub(super) fn any_near(&self, text: &[u8], mut check: impl FnMut(usize) -> bool) -> bool {
        // The bytes judged last (windows mostly overlap the one before).
        let mut judged = 0..0;
        let Some((&first, rest)) = text.split_first() else { return false };
        let mut pair = usize::from(first);
        for (i, &c) in rest.iter().enumerate() {
            // `i` is the index of the pair's first byte.
            pair = (pair << 8 | usize::from(c)) & 0xffff;
            if !self.looked_for_by(pair) {
                continue;
            }
            if let Some(window) = self.found_at(text, i) {
                for j in window.clone().filter(|j| !judged.contains(j)) {
                    if check(j) {
                        return true;
                    }
                }
                judged = if window.start <= judged.end && judged.start <= window.end {
                    judged.start.min(window.start)..judged.end.max(window.end)
                } else {
                    window
                };
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needles_found_at_one_pair_are_all_judged_near() {
        // Both needles are looked for by the pair `nq` (at offset 1 in the first, 0 in the
        // second), so both are found at the same pair; the second one's range reaches one byte
        // further than the first one's.
        let needles = Needles::new(vec![b"enqz".to_vec(), b"nqzzzzzzzzz".to_vec()]);
        let text = b"..enqzzzzzzzzz!!";
        let last = 2 + 1 + REACH; // the second needle starts at 3
        assert!(needles.any_near(text, |j| j == last));
        assert!(needles.any_near(text, |j| j == 2));
        assert!(!needles.any_near(text, |j| j == 1 || j == last + 1));
    }

    #[test]
    fn case_is_folded_and_a_needle_at_either_end_is_found() {
        let needles = Needles::new(vec![b"token".to_vec()]);
        for text in [&b"TOKEN"[..], b"x ToKeN", b"tOkEn="] {
            assert!(needles.any_near(text, |j| j == text.len() - 1), "{}", String::from_utf8_lossy(text));
        }
        assert!(!needles.any_near(b"tokn token", |j| j < 5));
    }
}
