//! Redaction: a secret of the corpus placed in a tool call among arbitrary text never survives
//! in any event or hook (see `agentstream_fuzz::check_redaction`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentstream_fuzz::check_redaction(data));
