//! `fake-harness`: replays a recorded harness trace as a real process (see `fake_harness.rs`).

#[path = "../fake_harness.rs"]
mod fake_harness;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(fake_harness::main_with_args(&args));
}
