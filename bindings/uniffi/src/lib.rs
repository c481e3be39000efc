//! agentstream for Kotlin and Swift: uniffi bindings (proc-macro mode) over the core's bridge
//! ([`agentstream_core::bridge`]).
//!
//! This crate holds NO behaviour: the core decides everything observable (options, defaults
//! and their validation, subscriptions, runs, delivery, cancellation, results, errors); this
//! crate marshals it into uniffi's types and speaks the two languages' idiom:
//!
//! * [`Evolve`] (the seed's client): `on(channel, listener)` with foreign [`ChannelListener`]s,
//!   `start`/`run` with a foreign [`HookListener`], `pause`/`resume`/`interrupt`/`kill`,
//!   `status`, the session the next run continues.
//! * [`AgentRun`]: one run, read by its listeners (`dispatch`, `dispatch_async`) or pulled as
//!   JSON batches (`next_batch`, `next_batch_async`), cancelled, awaited; a [`CancelToken`].
//! * [`routed::agentstream_uniffi_run_pull_routed`], a plain C function beside the uniffi
//!   ones: a run's deliveries pulled a batch at a time into the caller's buffer, each item
//!   naming the subscription ids of its listeners in order (`AgentRun::routed_reader`,
//!   `AgentRun::report_failures`) — for a binding whose every uniffi call leaves garbage behind
//!   (the Kotlin layer: JNA).
//! * [`Decoder`], [`parse_json`], [`replay_json`]: decoding without a process.
//! * Errors: [`AgentstreamError`], one variant per kind of the core's table.
//!
//! Events cross as JSON text (uniffi cannot carry free JSON, toolchain.md U2): one envelope or
//! hook event per listener call, one array per batch. The Kotlin layer reads them into the
//! types generated from the schema (codegen's Kotlin emitter); Swift users decode them with
//! `JSONDecoder`.
//!
//! Listeners run on the thread that reads the run (never a library thread; see [`run`]). A
//! listener's exception is a [`ListenerError`] (declared, or converted from uniffi's
//! unexpected-callback error): counted on the run and handed back once per listener — never a
//! panic. uniffi turns a Rust panic in any export into an exception of the caller's language.

uniffi::setup_scaffolding!("agentstream");

mod decoder;
mod error;
mod evolve;
mod options;
pub mod routed;
pub mod run;
mod runtime;

pub use decoder::{Decoder, agent_names, channel_names, core_version, parse_json, replay_json};
pub use error::{AgentstreamError, ListenerError};
pub use evolve::{ClientStatus, Evolve};
pub use options::{AgentConfig, ReadMode, RunLimits, RunOptions};
pub use run::{AgentRun, Batch, CancelToken, ChannelListener, HandlerFailure, HookListener, RunFinished};

#[cfg(test)]
mod tests;
