//! `on(channel, handler)` and `on_event(hook)` for Rust callers: deliveries routed to handlers
//! in sequence order, one at a time; a failing (or panicking) handler is reported on its first
//! failure, with the event it failed on, every failure is counted (the run result's
//! `handler_errors`, as in every binding), and the run goes on.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use super::RunResult;
use super::handle::{Delivery, RunHandle};
use crate::channel::{Channel, UnknownChannel};
use crate::hooks::HookEvent;
use crate::stream::StreamItem;

/// What a handler returns: `Err(message)` reports a failure (the run goes on).
pub type HandlerResult = Result<(), String>;

type ItemHandler = Box<dyn FnMut(&StreamItem) -> HandlerResult + Send>;
type HookHandler = Box<dyn FnMut(&HookEvent) -> HandlerResult + Send>;

/// A handler's first failure (later ones are counted, not reported).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerFailure {
    /// `content`, `lifecycle`, `stdout`, `stderr`, or `on_event`.
    pub channel: String,
    /// The sequence of the item it failed on.
    pub sequence: u64,
    /// The handler's error (or panic message).
    pub message: String,
    /// The event it failed on, as JSON.
    pub event: String,
}

/// Routes a run's deliveries to handlers. Handlers registered for a channel are called in
/// registration order; items in sequence order; never concurrently.
#[derive(Default)]
pub struct Dispatcher {
    handlers: Vec<Registered<Channel, ItemHandler>>,
    hooks: Vec<Registered<(), HookHandler>>,
    failures: u64,
}

/// A handler, what it listens to, and whether its first failure was reported already.
struct Registered<On, Handler> {
    on: On,
    handler: Handler,
    failed: bool,
}

impl<On, Handler> Registered<On, Handler> {
    fn new(on: On, handler: Handler) -> Self {
        Registered { on, handler, failed: false }
    }
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher").field("handlers", &self.handlers.len()).field("hooks", &self.hooks.len()).finish()
    }
}

impl Dispatcher {
    /// An empty dispatcher.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register `handler` for the channel `name` (`content`, `lifecycle`, `stdout`, `stderr`;
    /// any other name is an error that lists the four).
    pub fn on(
        &mut self,
        name: &str,
        handler: impl FnMut(&StreamItem) -> HandlerResult + Send + 'static,
    ) -> Result<&mut Self, UnknownChannel> {
        let channel: Channel = name.parse()?;
        self.handlers.push(Registered::new(channel, Box::new(handler)));
        Ok(self)
    }

    /// Register an `on_event` hook handler (the run must be started with `hooks: true`).
    pub fn on_event(&mut self, handler: impl FnMut(&HookEvent) -> HandlerResult + Send + 'static) -> &mut Self {
        self.hooks.push(Registered::new((), Box::new(handler)));
        self
    }

    /// True when a hook handler is registered.
    pub fn wants_hooks(&self) -> bool {
        !self.hooks.is_empty()
    }

    /// Deliver one item or hook to its handlers; returns the failures of handlers that had not
    /// failed before (each handler is reported once; [`failure_count`](Self::failure_count)
    /// counts them all).
    pub fn dispatch(&mut self, delivery: &Delivery) -> Vec<HandlerFailure> {
        let mut failures = Vec::new();
        match delivery {
            Delivery::Item(env) => {
                let channel = env.channel();
                for h in self.handlers.iter_mut().filter(|h| h.on == channel) {
                    if let Some(message) = call(|| (h.handler)(&env.item)) {
                        self.failures += 1;
                        if !std::mem::replace(&mut h.failed, true) {
                            failures.push(HandlerFailure {
                                channel: channel.name().to_string(),
                                sequence: env.sequence,
                                message,
                                event: env.item.event_json(),
                            });
                        }
                    }
                }
            }
            Delivery::Hook(hook) => {
                for h in &mut self.hooks {
                    if let Some(message) = call(|| (h.handler)(hook)) {
                        self.failures += 1;
                        if !std::mem::replace(&mut h.failed, true) {
                            failures.push(HandlerFailure {
                                channel: "on_event".to_string(),
                                sequence: hook.sequence,
                                message,
                                event: serde_json::to_string(hook).unwrap_or_default(),
                            });
                        }
                    }
                }
            }
        }
        failures
    }

    /// How many times handlers failed (every failure, reported or not) since the dispatcher was
    /// made or [`new_run`](Self::new_run) was called.
    pub fn failure_count(&self) -> u64 {
        self.failures
    }

    /// Start counting and reporting afresh for another run ([`drive`](Self::drive) does it; a
    /// caller of [`dispatch`](Self::dispatch) calls it between runs).
    pub fn new_run(&mut self) {
        self.failures = 0;
        self.handlers.iter_mut().for_each(|h| h.failed = false);
        self.hooks.iter_mut().for_each(|h| h.failed = false);
    }

    /// Read `run` to its end, dispatching every delivery; returns its result (its
    /// `handler_errors` counts this dispatcher's failures) and each failing handler's first
    /// failure. Blocks the calling thread.
    pub fn drive(&mut self, run: &RunHandle) -> (RunResult, Vec<HandlerFailure>) {
        // Per run, as in every binding: a dispatcher driving its second run reports each
        // handler's first failure of that run and counts that run's failures.
        self.new_run();
        let mut failures = Vec::new();
        loop {
            let batch = run.next_batch_blocking(256, Some(Duration::from_millis(200)));
            if batch.is_empty() && run.is_ended() {
                break;
            }
            for d in &batch {
                failures.extend(self.dispatch(d));
            }
        }
        let mut result = run.wait_blocking();
        result.handler_errors = self.failures;
        (result, failures)
    }
}

/// Run a handler, turning an error or a panic into its message.
fn call(f: impl FnOnce() -> HandlerResult) -> Option<String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => None,
        Ok(Err(message)) => Some(message),
        Err(panic) => Some(match crate::error::panic_text(panic.as_ref()) {
            Some(m) => format!("the handler panicked: {m}"),
            None => "the handler panicked".to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::Envelope;
    use std::sync::{Arc, Mutex};

    #[test]
    fn routes_by_channel_in_order_reports_each_handler_once_and_counts_every_failure() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut d = Dispatcher::new();
        let s1 = seen.clone();
        d.on("stdout", move |item| {
            s1.lock().unwrap().push(format!("a:{}", item.as_raw_text().unwrap_or("")));
            Ok(())
        })
        .unwrap();
        let s2 = seen.clone();
        d.on("stdout", move |_| {
            s2.lock().unwrap().push("b".into());
            Err("boom".into())
        })
        .unwrap();
        d.on("stderr", |_| panic!("no stderr expected")).unwrap();
        let err = d.on("message", |_| Ok(())).err().unwrap().to_string();
        assert!(err.contains("content") && err.contains("stderr"), "{err}");

        let out = Delivery::Item(Envelope::new("r", 3, StreamItem::Stdout("x\n".into())));
        let failures = d.dispatch(&out);
        assert_eq!(*seen.lock().unwrap(), ["a:x\n", "b"]);
        assert_eq!(failures.len(), 1);
        assert_eq!(
            (failures[0].channel.as_str(), failures[0].sequence, failures[0].message.as_str()),
            ("stdout", 3, "boom")
        );
        let err = Delivery::Item(Envelope::new("r", 4, StreamItem::Stderr("e".into())));
        let failures = d.dispatch(&err);
        assert!(failures[0].message.contains("panicked"), "{failures:?}");
        // Each handler is reported once; every failure is counted.
        let again = Delivery::Item(Envelope::new("r", 5, StreamItem::Stdout("y\n".into())));
        assert_eq!(d.dispatch(&again), [], "b was reported already");
        assert_eq!(d.dispatch(&err), []);
        assert_eq!(d.failure_count(), 4);
        // Another run: reported and counted afresh.
        d.new_run();
        assert_eq!(d.dispatch(&again).len(), 1);
        assert_eq!(d.failure_count(), 1);
    }
}
