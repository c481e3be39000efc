//! Generates the top-level `include/agentstream.h` with cbindgen (a pinned build-dependency, so no tool has
//! to be installed). The header is checked in; it is rewritten only when its content changes,
//! and `make check-header` fails when the checked-in copy is stale.

use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap();
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").unwrap();
    let patch = std::env::var("CARGO_PKG_VERSION_PATCH").unwrap();
    config.after_includes = Some(format!(
        "\n/** The version of the library this header belongs to (equals agentstream_version()). */\n\
         #define AGENTSTREAM_VERSION \"{version}\"\n\
         #define AGENTSTREAM_VERSION_MAJOR {major}\n\
         #define AGENTSTREAM_VERSION_MINOR {minor}\n\
         #define AGENTSTREAM_VERSION_PATCH {patch}\n"
    ));

    link_versioned_name(&major);
    supervisor_entry_point();

    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate include/agentstream.h");
    // The repository's fixed layout: the public header lives in the top-level include/.
    bindings.write_to_file(crate_dir.join("../../include/agentstream.h"));
}

/// The shared library records a versioned name, so a program linked with `-lagentstream` asks
/// the loader for `libagentstream.so.<major>` (the file installed as `.so.<version>` with that
/// link beside it, see mk/release.mk) and keeps working across compatible releases.
fn link_versioned_name(major: &str) {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let unix = std::env::var("CARGO_CFG_TARGET_FAMILY").is_ok_and(|f| f.split(',').any(|f| f == "unix"));
    if os == "macos" || os == "ios" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libagentstream.{major}.dylib");
    } else if unix {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libagentstream.so.{major}");
    }
}

include!("../../core/build/supervisor_entry_point.rs");
