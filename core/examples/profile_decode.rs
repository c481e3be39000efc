//! Decode one agent's traces many times (for profilers), in 64 KiB chunks as the decode bench
//! does: `cargo run --release -p agentstream-core --example profile_decode -- codex 200
//! [FILE]`. Without FILE the corpus is the agent's golden captures `s1`–`s3`; with it (say a
//! `../shared/bench/make_corpus.py` corpus) that file, so a profile shows the bench's own work.
use agentstream_core::{Agent, Decoder};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let agent: Agent = args.get(1).map(|a| a.parse().expect("agent")).unwrap_or(Agent::Codex);
    let reps: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(200);
    let corpus = match args.get(3) {
        Some(path) => std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}")),
        None => {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent.name());
            let mut corpus = Vec::new();
            for s in ["s1-text", "s2-bash", "s3-read-edit"] {
                corpus.extend(std::fs::read(dir.join(format!("{s}.input.jsonl"))).unwrap());
            }
            corpus
        }
    };
    let mut events = 0;
    let mut out = Vec::new();
    for _ in 0..reps {
        let mut d = Decoder::new(agent);
        for chunk in corpus.chunks(64 * 1024) {
            d.feed_into(chunk, &mut out);
            events += out.len();
            out.clear();
        }
        events += d.finish().len();
    }
    println!("{events} events");
}
