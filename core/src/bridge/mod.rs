//! The bridge every binding calls and none re-implements (feature `runner`).
//!
//! A binding — Python, Node, C (and through it Go, C#, Java), uniffi (Kotlin, Swift) — holds
//! marshalling and its language's idiom only. Everything a user can observe about running an
//! agent is decided here, once:
//!
//! * **What can be asked for**: [`AgentSpec`] (the seed's `AgentConfig`) and [`RunRequest`]
//!   (one run: prompt or command, per-run model/cwd/env, timeout, background, hooks,
//!   redaction, resume, limits, how it is read), with one validation whose message names the
//!   bad field in the caller's spelling ([`Naming`]) and what is allowed. Both have a JSON form
//!   for the C ABI; defaults and limits live here.
//! * **Running**: [`Client`] (the seed's `Evolve`): subscriptions (`on`/`off`, the channel
//!   names and their error), one run at a time, run vs. command, the harness conversation
//!   successive runs continue, pause/resume/interrupt/kill, `status()`.
//! * **Delivery**: [`Run`], pulled in batches bounded in events and bytes, one wake-up per
//!   batch and no fixed wait to fill one ([`Run::pull`], [`Run::pull_async`]); the result is
//!   final only after the terminal event was delivered ([`Run::result`] is `still_running`
//!   before); dropping an unread run cancels it; handler failures are counted
//!   ([`Run::handler_failed`]) and reported once per handler. [`CallbackPump`] is the one
//!   adapter for languages that want callbacks from a thread (the C ABI).
//! * **Errors**: [`crate::Error`] / [`crate::ErrorKind`], one table of stable names and codes.

mod callbacks;
mod client;
mod options;
mod run;

pub use callbacks::{CallbackPump, Dispatched};
pub use client::{Client, ClientStatus, SubscriptionId};
pub use options::{
    AgentSpec, DEFAULT_KILL_GRACE_MS, DEFAULT_STALL_MS, Limits, MAX_MILLIS, Naming, ReadMode, RunNumbers, RunRequest,
    count_from_f64, json_object, millis_from_f64, shell_command,
};
pub use run::{HOOKS_BIT, HandlerError, Pulled, Run};

pub use crate::runner::{BatchLimits, Delivery, FinalState, RunResult};
#[cfg(test)]
mod tests;
