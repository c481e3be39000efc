fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    supervisor_entry_point();
}

/// The library doubles as the program its runs' supervisor is (`core/src/runner/self_exec.rs`):
/// on x86-64 glibc its ELF entry point is the supervisor's; elsewhere supervisors are forked.
fn supervisor_entry_point() {
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "linux"
        && target("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && target("CARGO_CFG_TARGET_ENV") == "gnu"
    {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-e,agentstream_supervisor_start");
    }
}
