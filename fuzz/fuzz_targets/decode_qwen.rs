//! The qwen decoder: whole vs arbitrarily chunked input give identical events, every event is
//! strict JSON, nothing panics (see `agentstream_fuzz::check_decoder`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentstream_fuzz::check_decoder(agentstream_core::Agent::Qwen, data));
