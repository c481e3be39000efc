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
    /// The same pairs as nibble tables, for reading 32 pairs at a time.
    nibbles: PairNibbles,
}

/// The pairs of [`Needles::pairs`] in eight buckets, as four tables indexed by a nibble: pair
/// `(a, b)` may be looked for when some bit is set in all of `first_lo[a & 15]`,
/// `first_hi[a >> 4]`, `second_lo[b & 15]` and `second_hi[b >> 4]`. Every pair of the bitmap
/// passes (it set those bits); others pass only where a bucket's nibbles combine into them, so
/// a pair that passes is still looked up in the bitmap. This is how a vector shuffle can judge
/// 32 pairs at once (the "Teddy" idea of Hyperscan, for pairs).
#[derive(Default)]
struct PairNibbles {
    first_lo: [u8; 16],
    first_hi: [u8; 16],
    second_lo: [u8; 16],
    second_hi: [u8; 16],
}

impl PairNibbles {
    /// The tables of `pairs` (first byte, second byte), a pair's bucket chosen by its first byte
    /// (folded): consecutive first bytes share a bucket, so a bucket's nibbles combine into few
    /// pairs that are not looked for.
    fn new(pairs: &[(u8, u8)]) -> PairNibbles {
        let mut folded: Vec<u8> = pairs.iter().map(|&(a, _)| a | 0x20).collect();
        folded.sort_unstable();
        folded.dedup();
        let mut t = PairNibbles::default();
        for &(a, b) in pairs {
            let rank = folded.binary_search(&(a | 0x20)).unwrap_or(0);
            let bit = 1u8 << (rank * 8 / folded.len());
            t.first_lo[usize::from(a & 15)] |= bit;
            t.first_hi[usize::from(a >> 4)] |= bit;
            t.second_lo[usize::from(b & 15)] |= bit;
            t.second_hi[usize::from(b >> 4)] |= bit;
        }
        t
    }

    /// Whether the pair `(a, b)` passes the tables (the scalar form of [`Self::candidates`]).
    #[cfg(test)]
    fn passes(&self, a: u8, b: u8) -> bool {
        self.first_lo[usize::from(a & 15)]
            & self.first_hi[usize::from(a >> 4)]
            & self.second_lo[usize::from(b & 15)]
            & self.second_hi[usize::from(b >> 4)]
            != 0
    }

    /// Bit `k` set for each pair `(text[at + k], text[at + k + 1])`, `k < 32`, that passes.
    ///
    /// # Safety
    /// AVX2 is available, and `at + 33 <= text.len()`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn candidates(&self, text: &[u8], at: usize) -> u32 {
        use std::arch::x86_64::*;
        debug_assert!(at + 33 <= text.len());
        // SAFETY: the caller guarantees 33 readable bytes from `at` (two unaligned 32-byte
        // loads, the second one byte later); the tables are 16 bytes each.
        unsafe {
            let table = |t: &[u8; 16]| _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().cast()));
            let nibble = _mm256_set1_epi8(0x0f);
            let first = _mm256_loadu_si256(text.as_ptr().add(at).cast());
            let second = _mm256_loadu_si256(text.as_ptr().add(at + 1).cast());
            // Shifting 16-bit lanes by 4 brings the high nibble down (the mask drops what came
            // from the neighbouring byte).
            let lookup = |bytes: __m256i, lo: &[u8; 16], hi: &[u8; 16]| {
                let low = _mm256_and_si256(bytes, nibble);
                let high = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), nibble);
                _mm256_and_si256(_mm256_shuffle_epi8(table(lo), low), _mm256_shuffle_epi8(table(hi), high))
            };
            let both = _mm256_and_si256(
                lookup(first, &self.first_lo, &self.first_hi),
                lookup(second, &self.second_lo, &self.second_hi),
            );
            let none = _mm256_cmpeq_epi8(both, _mm256_setzero_si256());
            !(_mm256_movemask_epi8(none) as u32)
        }
    }
}

/// Whether [`PairNibbles::candidates`] can run here (checked once; a cached flag after that).
#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2")
}

impl Needles {
    /// Index `needles` (each 2..=[`REACH`] bytes, matched with ASCII case folded).
    pub(super) fn new(needles: Vec<Vec<u8>>) -> Needles {
        let mut pairs = Box::new([0u64; 1024]);
        let mut by_pair_start: Vec<Vec<Needle>> = (0..256).map(|_| Vec::new()).collect();
        let mut looked_for = Vec::new();
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
                    looked_for.push((a, b));
                }
            }
            by_pair_start[usize::from(x)].push(Needle { folded, offset });
        }
        let nibbles = PairNibbles::new(&looked_for);
        Needles { pairs, by_pair_start, nibbles }
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
    /// Pairs are visited in order; with AVX2, 32 at a time are passed through [`PairNibbles`]
    /// first and only those that pass are looked up — the last fewer than 32 too (most texts
    /// judged are short: titles, paths, a command), from a zero-padded copy.
    pub(super) fn any_near(&self, text: &[u8], check: impl FnMut(usize) -> bool) -> bool {
        self.any_near_by(text, check, true)
    }

    /// [`Self::any_near`], with the vector pass where AVX2 is available if `vector`, else pair
    /// by pair anywhere (what a machine without AVX2 runs: the tests run both).
    fn any_near_by(&self, text: &[u8], mut check: impl FnMut(usize) -> bool, vector: bool) -> bool {
        // The bytes judged last (windows mostly overlap the one before).
        let mut judged = 0..0;
        // The pair whose first byte is at `i`.
        let mut visit = |i: usize| -> bool {
            let pair = usize::from(text[i]) << 8 | usize::from(text[i + 1]);
            if !self.looked_for_by(pair) {
                return false;
            }
            let Some(window) = self.found_at(text, i) else { return false };
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
            false
        };
        let mut i = 0;
        #[cfg(target_arch = "x86_64")]
        if vector && text.len() >= 2 && has_avx2() {
            while i + 33 <= text.len() {
                // SAFETY: AVX2 was detected, and 33 bytes from `i` are in `text`.
                let mut passed = unsafe { self.nibbles.candidates(text, i) };
                while passed != 0 {
                    if visit(i + passed.trailing_zeros() as usize) {
                        return true;
                    }
                    passed &= passed - 1;
                }
                i += 32;
            }
            // The rest, 2..=32 bytes (1..=31 pairs): the pairs of the padding are cut off.
            let rest = text.len() - i;
            if rest >= 2 {
                let mut block = [0u8; 33];
                block[..rest].copy_from_slice(&text[i..]);
                // SAFETY: AVX2 was detected, and `block` holds 33 bytes.
                let mut passed = unsafe { self.nibbles.candidates(&block, 0) } & ((1u32 << (rest - 1)) - 1);
                while passed != 0 {
                    if visit(i + passed.trailing_zeros() as usize) {
                        return true;
                    }
                    passed &= passed - 1;
                }
            }
            return false;
        }
        let _ = vector; // read on x86-64 only
        while i + 1 < text.len() {
            if visit(i) {
                return true;
            }
            i += 1;
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
    fn every_pair_looked_for_passes_the_nibble_tables_and_few_others_do() {
        let needles = Needles::new(super::super::pre_scan_needles());
        let (mut looked_for, mut passing) = (0, 0);
        for pair in 0..65536usize {
            let passes = needles.nibbles.passes((pair >> 8) as u8, pair as u8);
            if needles.looked_for_by(pair) {
                looked_for += 1;
                assert!(passes, "pair {:02x} {:02x} is looked for but does not pass", pair >> 8, pair & 255);
            }
            passing += usize::from(passes);
        }
        // The tables only help when they pass a small share of all pairs.
        assert!(passing < 8 * looked_for, "{passing} pairs pass for {looked_for} looked for");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_vector_candidates_are_the_scalar_ones() {
        if !has_avx2() {
            return;
        }
        let needles = Needles::new(super::super::pre_scan_needles());
        let mut text: Vec<u8> = b"{\"apiKey\":\"sk-ABC\",\"TOKEN\":1,\"x\":\"-----BEGIN \\u00e9\"}".to_vec();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..4096 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push((state >> 24) as u8);
        }
        for at in 0..text.len() - 33 {
            // SAFETY: AVX2 was detected; 33 bytes from `at` are in `text`.
            let got = unsafe { needles.nibbles.candidates(&text, at) };
            let want =
                (0..32).fold(0u32, |m, k| m | u32::from(needles.nibbles.passes(text[at + k], text[at + k + 1])) << k);
            assert_eq!(got, want, "at {at}");
        }
    }

    #[test]
    fn case_is_folded_and_a_needle_at_either_end_is_found() {
        let needles = Needles::new(vec![b"token".to_vec()]);
        for text in [&b"TOKEN"[..], b"x ToKeN", b"tOkEn="] {
            assert!(needles.any_near(text, |j| j == text.len() - 1), "{}", String::from_utf8_lossy(text));
        }
        assert!(!needles.any_near(b"tokn token", |j| j < 5));
    }

    #[test]
    fn short_texts_and_every_tail_length_are_judged_as_pair_by_pair() {
        // The reference: every pair looked up, no tables (what a machine without AVX2 does).
        fn near_pair_by_pair(needles: &Needles, text: &[u8], check: impl Fn(usize) -> bool) -> bool {
            (0..text.len().saturating_sub(1)).any(|i| {
                let pair = usize::from(text[i]) << 8 | usize::from(text[i + 1]);
                needles.looked_for_by(pair) && needles.found_at(text, i).is_some_and(|w| w.into_iter().any(&check))
            })
        }
        let needles = Needles::new(vec![b"token".to_vec(), b"sk-".to_vec(), b"\\u".to_vec()]);
        // Every length through one block and a tail, a needle at every offset (cut at the end
        // too); judged: the needle's last byte, the last byte in reach, the first out of reach.
        for len in 0..=70 {
            // Under Miri (`make test-miri`), one place in 21.
            for at in (0..=len).filter(|at| !cfg!(miri) || (len * 3 + at) % 21 == 0) {
                for needle in [&b"ToKeN"[..], b"sk-", b"\\u"] {
                    let mut text = vec![b'.'; len];
                    let end = (at + needle.len()).min(len);
                    text[at..end].copy_from_slice(&needle[..end - at]);
                    for judged in [at + needle.len() - 1, at + REACH, at + REACH + 1] {
                        let check = |j: usize| j == judged;
                        let want = near_pair_by_pair(&needles, &text, check);
                        for vector in [true, false] {
                            assert_eq!(
                                needles.any_near_by(&text, check, vector),
                                want,
                                "vector pass {vector}: {:?} judging {judged}",
                                String::from_utf8_lossy(&text)
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn needles_are_found_across_the_vector_blocks_and_in_the_tail() {
        let needles = Needles::new(vec![b"token".to_vec()]);
        // A needle at every offset of a text longer than two 32-byte blocks, the pair it is
        // looked for by straddling a block's edge at some offsets.
        for at in 0..80 {
            let mut text = vec![b'.'; 90];
            text[at..at + 5].copy_from_slice(b"ToKeN");
            assert!(needles.any_near(&text, |j| j == at + 4), "needle at {at}");
            assert!(!needles.any_near(&text, |j| j > at + 5 + REACH), "nothing judged beyond reach at {at}");
        }
    }
}
