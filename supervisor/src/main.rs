//! `agentstream-supervisor`: a run's supervisor as a program of its own, for hosts whose native
//! module cannot be run as one (Python's and Node's need their interpreter's symbols). Their
//! packages ship it in the module's directory, where the core finds it; a run then starts it
//! with the supervisor marker and the run's spec (core/src/runner/self_exec.rs). Started any
//! other way, it says what it is and exits 2.

fn main() {
    agentstream_core::runner::supervise_if_asked();
    eprintln!("agentstream-supervisor: this program only supervises a run that agentstream starts");
    std::process::exit(2);
}
