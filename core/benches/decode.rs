//! Decode throughput per agent (placeholder until the corpus generator lands).
fn main() {}
