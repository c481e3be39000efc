//! A real run for profilers: the fake harness prints each agent's mixed corpus (the golden
//! traces repeated to `MB` MiB, as `benches/python_decode.py` builds it) and a reader drains the
//! run's handle the way the Python binding does (`next_batch_blocking`, batches of 256).
//!
//! ```sh
//! cargo build --release -p agentstream-cli --bins
//! cargo build --release -p agentstream-core --features runner --example profile_run
//! valgrind --tool=callgrind target/release/examples/profile_run target/release/fake-harness 2
//! ```
//!
//! Arguments: the fake harness binary, MiB per agent (default 2), `--content` to read only the
//! content channel (as a Python `on("content", ...)` run does), optionally agent names.
//! Prints items and content events per agent and the time taken.

#[cfg(feature = "runner")]
fn main() {
    use std::time::{Duration, Instant};

    use agentstream_core::Agent;
    use agentstream_core::Channel;
    use agentstream_core::runner::{AgentConfig, Delivery, RunOptions, Session};
    use agentstream_core::stream::{ChannelSet, StreamItem};

    let mut args: Vec<String> = std::env::args().collect();
    let content_only = args.iter().any(|a| a == "--content");
    args.retain(|a| a != "--content");
    let harness = args.get(1).expect("usage: profile_run FAKE_HARNESS [MB] [AGENT...]").clone();
    let mb: f64 = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(2.0);
    let agents: Vec<Agent> = if args.len() > 3 {
        args[3..].iter().map(|a| a.parse().expect("agent")).collect()
    } else {
        Agent::ALL.to_vec()
    };
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden");
    let tmp = std::env::temp_dir().join(format!("agentstream-profile-run-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let started = Instant::now();
    let (mut total_bytes, mut total_content) = (0usize, 0usize);
    for agent in agents {
        let mut paths: Vec<_> = std::fs::read_dir(golden.join(agent.name()))
            .expect("golden dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.starts_with('s') && name.ends_with(".input.jsonl")
            })
            .collect();
        paths.sort();
        let one: Vec<u8> = paths.iter().flat_map(|p| std::fs::read(p).expect("trace")).collect();
        if one.is_empty() {
            continue;
        }
        let times = ((mb * 1024.0 * 1024.0) as usize / one.len()).max(1);
        let corpus = one.repeat(times);
        let prefix = tmp.join(agent.name());
        std::fs::write(prefix.with_extension("input.jsonl"), &corpus).expect("write corpus");
        total_bytes += corpus.len();

        let mut config = AgentConfig::new(agent);
        config.bin = Some(harness.clone().into());
        config.env = vec![("AGENTSTREAM_FAKE_TRACE".into(), prefix.to_string_lossy().into_owned())];
        let mut options = RunOptions::new("bench");
        if content_only {
            options.channels = ChannelSet::of([Channel::Content]);
        }
        let handle = Session::new(config).start_run(options).expect("start");
        let (mut items, mut content) = (0usize, 0usize);
        loop {
            let batch = handle.next_batch_blocking(256, Some(Duration::from_millis(250)));
            if batch.is_empty() && handle.is_ended() {
                break;
            }
            for d in &batch {
                items += 1;
                if let Delivery::Item(env) = d {
                    if matches!(env.item, StreamItem::Content(_)) {
                        content += 1;
                    }
                }
            }
        }
        let result = handle.wait_blocking();
        total_content += content;
        println!(
            "{:9} {:>9} bytes {items:>7} items {content:>6} content  {:?}",
            agent.name(),
            corpus.len(),
            result.state
        );
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{total_bytes} bytes, {total_content} content events in {secs:.3} s: {:.1} MB/s",
        total_bytes as f64 / secs / 1e6
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

#[cfg(not(feature = "runner"))]
fn main() {
    eprintln!(
        "profile_run needs the runner: cargo run --release -p agentstream-core --features runner --example profile_run"
    );
}
