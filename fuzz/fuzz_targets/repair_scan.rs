//! The record repair's first look (`RawJson::normalized` judging a record clean at a glance)
//! never skips a repair the exact pass makes (see `agentstream_fuzz::check_repair_scan`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentstream_fuzz::check_repair_scan(data));
