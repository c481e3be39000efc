//! Heap allocations per decoded event, per agent, on the decode bench's corpus (the real
//! captures `tests/golden/<agent>/s*.input.jsonl`). Allocation is what separates the decoders
//! from the serde_json floor, so this is the number to watch when changing the event model.
//! `cargo run --release -p agentstream-core --example count_allocs [AGENT ...]`
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use agentstream_core::{Agent, Decoder};

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size(), Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new_size, Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn traces(agent: Agent) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent.name());
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
    names.sort();
    let mut out = Vec::new();
    for p in names {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".input.jsonl") && name.starts_with('s') {
            out.extend(std::fs::read(&p).unwrap());
        }
    }
    out
}

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    {
        use agentstream_core::event::*;
        use std::mem::size_of;
        eprintln!(
            "OutputEvent {} SessionUpdate {} ToolCall {} ToolCallUpdate {} TokenUsage {} JsonObject {} ContentBlock {}",
            size_of::<OutputEvent>(),
            size_of::<SessionUpdate>(),
            size_of::<ToolCall>(),
            size_of::<ToolCallUpdate>(),
            size_of::<TokenUsage>(),
            size_of::<JsonObject>(),
            size_of::<ContentBlock>()
        );
    }
    println!("{:<9} {:>7} {:>9} {:>12} {:>12}", "agent", "events", "allocs", "allocs/event", "bytes/event");
    for agent in Agent::ALL.iter().filter(|a| wanted.is_empty() || wanted.iter().any(|w| w == a.name())) {
        let bytes = traces(*agent);
        let mut d = Decoder::new(*agent);
        let (a0, b0) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
        let events = d.feed(&bytes).len() + d.finish().len();
        let (allocs, heap) = (ALLOCS.load(Relaxed) - a0, BYTES.load(Relaxed) - b0);
        let per = |n: usize| n as f64 / events.max(1) as f64;
        println!("{:<9} {:>7} {:>9} {:>12.1} {:>12.0}", agent.name(), events, allocs, per(allocs), per(heap));
    }
}
