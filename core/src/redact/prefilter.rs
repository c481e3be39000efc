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
//! property test compares the two on random and adversarial texts.

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

    /// The start of a needle looked for by the pair at `i` of `text`, if one is there.
    #[cold]
    fn found_at(&self, text: &[u8], i: usize) -> Option<usize> {
        self.by_pair_start[usize::from(text[i] | 0x20)].iter().find_map(|needle| {
            let start = i.checked_sub(needle.offset)?;
            let there = text.get(start..start + needle.folded.len())?;
            there.iter().zip(&needle.folded).all(|(c, n)| c | 0x20 == *n).then_some(start)
        })
    }

    /// Whether `check` holds at some byte within [`REACH`] bytes after the start of a needle in
    /// `text` (each byte checked at most once).
    pub(super) fn any_near(&self, text: &[u8], mut check: impl FnMut(usize) -> bool) -> bool {
        // Bytes before this index have been checked.
        let mut checked = 0;
        let Some((&first, rest)) = text.split_first() else { return false };
        let mut pair = usize::from(first);
        for (i, &c) in rest.iter().enumerate() {
            // `i` is the index of the pair's first byte.
            pair = (pair << 8 | usize::from(c)) & 0xffff;
            if !self.looked_for_by(pair) {
                continue;
            }
            if let Some(start) = self.found_at(text, i) {
                let end = (start + REACH + 1).min(text.len());
                for j in start.max(checked)..end {
                    if check(j) {
                        return true;
                    }
                }
                checked = checked.max(end);
            }
        }
        false
    }
}
