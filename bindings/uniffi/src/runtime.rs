//! Polling the core's async waits from a foreign executor.
//!
//! uniffi drives an exported `async fn` by polling it on the caller's thread (a Kotlin
//! coroutine's, a Swift task's); the core's waits use tokio timers, which need a tokio runtime
//! entered while they are polled. [`in_core_runtime`] enters the core's own runtime
//! ([`runner::runtime`]) around every poll, so no second runtime is started for the bindings.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use agentstream_core::runner;

/// `future`, polled inside the core's tokio runtime.
pub(crate) fn in_core_runtime<F: Future>(future: F) -> InCoreRuntime<F> {
    InCoreRuntime(Box::pin(future))
}

pub(crate) struct InCoreRuntime<F>(Pin<Box<F>>);

impl<F: Future> Future for InCoreRuntime<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _entered = runner::runtime().enter();
        self.0.as_mut().poll(cx)
    }
}
