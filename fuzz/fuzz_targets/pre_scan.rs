//! The secret pre-scan: its needle search gives the verdict of judging every byte, on any input
//! (see `agentstream_fuzz::check_pre_scan`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentstream_fuzz::check_pre_scan(data));
