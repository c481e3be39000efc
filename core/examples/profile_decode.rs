//! Decode one agent's golden traces many times (for profilers): `cargo run --release -p
//! agentstream-core --example profile_decode -- codex 200`.
use agentstream_core::{Agent, Decoder};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let agent: Agent = args.get(1).map(|a| a.parse().expect("agent")).unwrap_or(Agent::Codex);
    let reps: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(200);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent.name());
    let mut corpus = Vec::new();
    for s in ["s1-text", "s2-bash", "s3-read-edit"] {
        corpus.extend(std::fs::read(dir.join(format!("{s}.input.jsonl"))).unwrap());
    }
    let mut events = 0;
    for _ in 0..reps {
        let mut d = Decoder::new(agent);
        events += d.feed(&corpus).len() + d.finish().len();
    }
    println!("{events} events");
}
