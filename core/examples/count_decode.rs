//! Instruction-count harness (run under valgrind): decode the decode bench's corpus for one agent
//! (`decode`), or run the serde_json validate-only floor over it (`floor`), or only build it
//! (`none`, the fixed cost to subtract).
//! `valgrind --tool=cachegrind --cache-sim=no target/release/examples/count_decode codex decode`
use std::hint::black_box;
use std::path::Path;

use agentstream_core::{Agent, Decoder};
use serde::de::IgnoredAny;

const TARGET_BYTES: usize = 1 << 20;

fn corpus(agent: Agent) -> Vec<u8> {
    // `BENCH_CORPUS_DIR`: the make_corpus.py corpora the decode bench reads (for profiling).
    if let Some(dir) = std::env::var_os("BENCH_CORPUS_DIR") {
        return std::fs::read(Path::new(&dir).join(format!("{}.jsonl", agent.name()))).expect("corpus");
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent.name());
    let mut one = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
    names.sort();
    for p in names {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".input.jsonl") && name.starts_with('s') {
            one.extend(std::fs::read(&p).unwrap());
        }
    }
    let mut out = Vec::with_capacity(TARGET_BYTES + one.len());
    while out.len() < TARGET_BYTES {
        out.extend_from_slice(&one);
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let agent: Agent = args[1].parse().expect("agent");
    let bytes = corpus(agent);
    let n = match args[2].as_str() {
        "decode" => {
            // As the decode bench does: one event buffer reused from chunk to chunk.
            let mut d = Decoder::new(agent);
            let mut events = Vec::new();
            let mut n = 0;
            for chunk in bytes.chunks(64 * 1024) {
                d.feed_into(black_box(chunk), &mut events);
                n += events.len();
                events.clear();
            }
            n + d.finish().len()
        }
        // The shared yardstick: `memchr` line splitting, `IgnoredAny` per non-empty line.
        "floor" => {
            let bytes = black_box(&bytes);
            let mut start = 0;
            let mut n = 0;
            for end in memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len())) {
                let mut line = &bytes[start..end];
                if let [rest @ .., b'\r'] = line {
                    line = rest;
                }
                if !line.is_empty() && serde_json::from_slice::<IgnoredAny>(line).is_ok() {
                    n += 1;
                }
                start = (end + 1).min(bytes.len());
            }
            n
        }
        _ => 0,
    };
    println!("{} bytes {n}", bytes.len());
}
