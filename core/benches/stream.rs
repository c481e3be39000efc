//! Run-stream throughput under a flood: 10 million small `agent_message_chunk` deltas posted
//! into a `RunStream` (default policy: 256 items, 8 MiB, real `SystemClock`) whose reader pops
//! once per 1000 posts. Besides criterion's report (sample size 10), a summary prints posts/s
//! and the peak buffered bytes for that slow reader and, for comparison, a reader that keeps up
//! (one pop per post) and await-only (no reader). The peak must stay within the byte budget.
//! `cargo bench -p agentstream-core --bench stream`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentstream_core::stream::{Backpressure, Pressure, RunOutcome, RunStream, StreamItem, SystemClock};
use agentstream_core::{OutputEvent, SessionUpdate};
use criterion::{Criterion, Throughput};

const POSTS: u64 = 10_000_000;

#[derive(Clone, Copy)]
enum Reader {
    /// One pop per this many posts.
    Every(u64),
    /// No reader: await-only.
    None,
}

/// Flood `n` deltas; returns the pressure at the end and the number of envelopes read.
fn flood(n: u64, reader: Reader) -> (Pressure, u64) {
    let policy = Backpressure::default();
    let mut s = RunStream::new("run_bench", policy, Arc::new(SystemClock::new())).unwrap();
    let every = match reader {
        Reader::Every(k) => {
            s.attach_reader().unwrap();
            k
        }
        Reader::None => u64::MAX,
    };
    let mut read = 0u64;
    for i in 1..=n {
        s.post(StreamItem::Content(OutputEvent::new(SessionUpdate::message("tok "))));
        if i % every == 0 && black_box(s.pop()).is_some() {
            read += 1;
        }
    }
    s.finish_at(RunOutcome::Completed, "2026-12-02T00:00:00.000Z");
    let end = s.pressure();
    while black_box(s.pop()).is_some() {
        read += 1;
    }
    (end, read)
}

fn main() {
    let mut c = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(15)).configure_from_args();
    let mut g = c.benchmark_group("stream");
    g.throughput(Throughput::Elements(POSTS));
    g.bench_function("flood_10M_deltas_slow_reader_1_pop_per_1000", |b| b.iter(|| flood(POSTS, Reader::Every(1000))));
    g.finish();
    c.final_summary();

    let budget = Backpressure::default().byte_budget;
    println!(
        "\n{:<34} {:>14} {:>10} {:>14} {:>10} {:>12} {:>10}",
        "scenario (10M deltas)", "posts/s", "peak", "peak bytes", "budget %", "coalesced", "read"
    );
    for (name, reader) in [
        ("slow reader, 1 pop per 1000 posts", Reader::Every(1000)),
        ("reader keeps up, 1 pop per post", Reader::Every(1)),
        ("await-only, no reader", Reader::None),
    ] {
        let t = Instant::now();
        let (p, read) = flood(POSTS, reader);
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{:<34} {:>14.0} {:>10} {:>14} {:>9.1}% {:>12} {:>10}",
            name,
            POSTS as f64 / secs,
            p.peak,
            p.peak_bytes,
            100.0 * p.peak_bytes as f64 / budget as f64,
            p.coalesced,
            read
        );
        assert!(p.peak_bytes <= budget, "peak buffered bytes {} exceed the budget {budget}", p.peak_bytes);
    }
}
