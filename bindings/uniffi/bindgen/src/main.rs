//! `uniffi-bindgen`: uniffi's generator command, at the uniffi version of `agentstream-uniffi`.
//!
//! ```text
//! cargo run -p agentstream-uniffi-bindgen -- generate --library target/release/libagentstream_uniffi.so \
//!     --language kotlin --out-dir OUT
//! ```
//!
//! `make generate-uniffi` runs it for Kotlin and Swift; `make check-uniffi` fails when the
//! checked-in sources differ from what it writes.

fn main() {
    uniffi::uniffi_bindgen_main()
}
