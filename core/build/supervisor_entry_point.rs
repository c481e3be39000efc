// Included by the build scripts of the bindings whose library runs itself as its runs'
// supervisor (bindings/c, bindings/uniffi): `include!("../../core/build/supervisor_entry_point.rs")`.

/// The library doubles as the program its runs' supervisor is (`core/src/runner/self_exec.rs`):
/// on x86-64 glibc its ELF entry point is the supervisor's; elsewhere supervisors are forked.
fn supervisor_entry_point() {
    println!("cargo:rerun-if-changed=../../core/build/supervisor_entry_point.rs");
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "linux"
        && target("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && target("CARGO_CFG_TARGET_ENV") == "gnu"
    {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-e,agentstream_supervisor_start");
    }
}
