//! The whole pipeline of a run on arbitrary harness output (the first byte picks the harness):
//! envelopes readable by the product itself, hook events strict JSON, one terminal item, last
//! (see `agentstream_fuzz::check_replay`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentstream_fuzz::check_replay(data));
