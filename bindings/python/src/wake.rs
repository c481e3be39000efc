//! Waiting for a run's next batch on the caller's asyncio event loop, without a thread in
//! between.
//!
//! A pull that finds nothing ready polls the core's wait ([`Run::pull_async`]) once with a
//! waker of this module's, which writes a byte to a socket; the event loop watches the other
//! end (`loop.add_reader`), and when it reads, the waiting coroutine polls the same wait
//! again, which then hands over what it took. One wake-up per batch, the run's reader thread
//! straight to the loop: the pool thread that blocked in `pull` and then woke the loop with
//! `call_soon_threadsafe` was a second hop, on every batch of a run that keeps up with its
//! harness.
//!
//! The pending wait is kept between calls: a coroutine cancelled while it waited leaves it
//! there, and whoever asks next gets what it took (nothing is lost for the handlers). A wait
//! only takes deliveries when it is polled and ready, and then returns them at once.

use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

use agentstream_core::bridge::{BatchLimits, Delivery, Pulled, Run};
use agentstream_core::runner;

/// The core's wait for the next batch, with what it took.
type PendingPull = Pin<Box<dyn Future<Output = (Pulled, Vec<Delivery>)> + Send>>;

/// Wakes the event loop: one byte on the socket whose other end the loop watches.
struct LoopSignal {
    write: UnixStream,
}

impl std::task::Wake for LoopSignal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Non-blocking: a full socket already holds a wake-up the loop has not read.
        let _ = (&self.write).write(&[1]);
    }
}

/// The socket pair of one run's waits: the end the loop watches, and the waker of the other.
struct Signal {
    read: UnixStream,
    waker: Waker,
}

/// One run's wait on an event loop (see the module docs).
#[derive(Default)]
pub(crate) struct LoopWait {
    signal: OnceLock<Signal>,
    pending: Mutex<Option<PendingPull>>,
}

impl LoopWait {
    fn signal(&self) -> std::io::Result<&Signal> {
        if let Some(s) = self.signal.get() {
            return Ok(s);
        }
        let (read, write) = UnixStream::pair()?;
        read.set_nonblocking(true)?;
        write.set_nonblocking(true)?;
        let waker = Waker::from(Arc::new(LoopSignal { write }));
        // Another thread may have set it meanwhile: theirs stands, this pair is dropped.
        Ok(self.signal.get_or_init(|| Signal { read, waker }))
    }

    /// The descriptor the event loop watches: readable when a wait was woken.
    pub(crate) fn fd(&self) -> std::io::Result<RawFd> {
        Ok(self.signal()?.read.as_raw_fd())
    }

    /// The next batch if the wait is over (`Some`, empty at the end of the stream), or `None`:
    /// the wait is armed, and the descriptor becomes readable when it should be asked again.
    /// A new wait puts what it takes into `buffer()`.
    pub(crate) fn poll(
        &self,
        run: &Run,
        limits: BatchLimits,
        buffer: impl FnOnce() -> Vec<Delivery>,
    ) -> std::io::Result<Option<Vec<Delivery>>> {
        let signal = self.signal()?;
        // Wake-ups already read are consumed here, so the loop sees the next one only.
        let mut sink = [0u8; 64];
        while matches!((&signal.read).read(&mut sink), Ok(n) if n > 0) {}
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let pull = pending.get_or_insert_with(|| {
            let run = run.clone();
            let mut batch = buffer();
            Box::pin(async move {
                let pulled = run.pull_async(&mut batch, limits).await;
                (pulled, batch)
            })
        });
        // The core's waits recheck on a timer, which needs the runtime entered when polled.
        let _entered = runner::runtime().enter();
        let polled = catch_unwind(AssertUnwindSafe(|| pull.as_mut().poll(&mut Context::from_waker(&signal.waker))));
        match polled {
            Ok(Poll::Pending) => Ok(None),
            Ok(Poll::Ready((_, batch))) => {
                *pending = None;
                Ok(Some(batch))
            }
            Err(panic) => {
                *pending = None; // never polled again after a panic
                resume_unwind(panic)
            }
        }
    }
}
