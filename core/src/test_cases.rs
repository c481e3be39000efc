//! How many cases a property test runs: as written on the CPU, and a few under Miri
//! (`make test-miri`), which interprets about a thousand times slower — `PROPTEST_CASES` when set
//! (the make target sets it from `MIRI_PROPTEST_CASES`), else 6.

/// `native` cases, or Miri's few.
pub(crate) fn cases(native: u32) -> u32 {
    if cfg!(miri) { std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(6) } else { native }
}
