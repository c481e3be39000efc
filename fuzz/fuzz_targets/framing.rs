//! Line framing: whole vs arbitrarily chunked input give identical frames, bounded by the line
//! limit, and nothing panics (see `agentstream_fuzz::check_framing`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentstream_fuzz::check_framing(data));
