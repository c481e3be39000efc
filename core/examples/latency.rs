//! The Rust handler of the latency benchmark (`benches/latency/run.py`, `make bench-latency`):
//! one run of the paced emitter (`benches/latency/emitter.c`) through the bridge every binding
//! uses ([`Client`], [`Run::pull`]), as a Rust user reads a run. For every content event it reads
//! CLOCK_MONOTONIC first, then the stamps in the event's text, and records `now - stamp`.
//!
//! ```sh
//! AGENTSTREAM_LATENCY_RATE=1000 AGENTSTREAM_LATENCY_LINES=3000 \
//!   target/release/examples/latency target/latency/emitter /tmp/rust.txt
//! ```
//!
//! Writes `<line> <latency ns>` per stamp to the output file and `state <final state>` on
//! stdout.

#[cfg(feature = "runner")]
fn main() {
    use agentstream_core::bridge::{AgentSpec, BatchLimits, Client, Delivery, Naming, Pulled, RunRequest};
    use agentstream_core::stream::StreamItem;
    use agentstream_core::{ContentBlock, SessionUpdate};
    use std::io::Write;

    fn monotonic_ns() -> i64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes the timespec it is given; CLOCK_MONOTONIC always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    }

    /// Every `@@<line>:<ns>;` in `text`, as (line, ns).
    fn stamps(text: &str) -> impl Iterator<Item = (i64, i64)> + '_ {
        text.split("@@").skip(1).filter_map(|token| {
            let (line, rest) = token.split_once(':')?;
            let (ns, _) = rest.split_once(';')?;
            Some((line.parse().ok()?, ns.parse().ok()?))
        })
    }

    let args: Vec<String> = std::env::args().collect();
    let (Some(emitter), Some(out_path)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: latency EMITTER OUT_FILE");
        std::process::exit(2);
    };
    let mut spec = AgentSpec::new("claude");
    spec.bin = Some(emitter.clone());
    let client = Client::new(spec, Naming::Snake).expect("agent config");
    client.on("content").expect("subscribe");
    let run = client.start(RunRequest::prompt("latency")).expect("start");

    let mut samples: Vec<(i64, i64)> = Vec::with_capacity(100_000);
    let mut batch = Vec::new();
    loop {
        batch.clear();
        if run.pull(&mut batch, BatchLimits::DEFAULT, None) == Pulled::End {
            break;
        }
        for delivery in &batch {
            let now = monotonic_ns();
            let Delivery::Item(env) = delivery else { continue };
            let StreamItem::Content(event) = &env.item else { continue };
            if let SessionUpdate::AgentMessageChunk { content: ContentBlock::Text { text } } = &event.update {
                samples.extend(stamps(text).map(|(line, ns)| (line, now - ns)));
            }
        }
    }
    let result = run.wait(None).expect("result");
    let mut out = std::io::BufWriter::new(std::fs::File::create(out_path).expect("output file"));
    for (line, latency) in &samples {
        writeln!(out, "{line} {latency}").expect("write");
    }
    out.flush().expect("write");
    println!("state {:?}", result.state);
}

#[cfg(not(feature = "runner"))]
fn main() {
    eprintln!("build with --features runner");
}
