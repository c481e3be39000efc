//! A connection whose client stopped taking what the server sends is closed after a while.
//!
//! The header timeout only bounds how long a client takes to *send* a request. A client that
//! sends requests (thousands, pipelined) and never reads the responses leaves hyper writing
//! into a full socket buffer for ever, its connection slot taken. [`SendDeadline`] wraps a
//! connection's IO: once a write, flush or shutdown has waited `limit` for the client without
//! any progress, it fails with `TimedOut`, which ends the connection (an upgraded WebSocket's
//! too: it wraps the same IO).

use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// `io` whose sending must make progress within `limit` (see the module docs).
pub(crate) struct SendDeadline<T> {
    io: T,
    limit: Duration,
    /// Running while a send waits for the client; reset by any progress.
    waiting: Option<Pin<Box<Sleep>>>,
}

impl<T> SendDeadline<T> {
    pub(crate) fn new(io: T, limit: Duration) -> Self {
        SendDeadline { io, limit, waiting: None }
    }

    /// What a send that is not ready yet returns: `Pending` until `limit` has passed since
    /// the first such send, then the error that ends the connection.
    fn not_yet<R>(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<R>> {
        let limit = self.limit;
        let timer = self.waiting.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)));
        ready!(timer.as_mut().poll(cx));
        Poll::Ready(Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("the client took nothing of the response for {:?} (limits.send_timeout_secs)", limit),
        )))
    }

    fn track<R>(&mut self, cx: &mut Context<'_>, poll: Poll<std::io::Result<R>>) -> Poll<std::io::Result<R>> {
        match poll {
            Poll::Pending => self.not_yet(cx),
            done => {
                self.waiting = None;
                done
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for SendDeadline<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for SendDeadline<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_write(cx, buf);
        this.track(cx, poll)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.track(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_flush(cx);
        this.track(cx, poll)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_shutdown(cx);
        this.track(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_send_the_peer_never_takes_fails_after_the_limit_and_progress_resets_it() {
        let (near, mut far) = tokio::io::duplex(1024);
        let mut guarded = SendDeadline::new(near, Duration::from_millis(200));
        // Filling the pipe, with the far end reading slowly but steadily: never timed out.
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 256];
            for _ in 0..16 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                tokio::io::AsyncReadExt::read(&mut far, &mut buf).await.unwrap();
            }
            far
        });
        guarded.write_all(&[7u8; 4096]).await.expect("a slow reader is not a stalled one");
        let _far = reader.await.unwrap();
        // Now nobody reads: the send fails, naming the limit.
        let started = Instant::now();
        let err = guarded.write_all(&[7u8; 8192]).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert!(err.to_string().contains("limits.send_timeout_secs"), "{err}");
        assert!(started.elapsed() >= Duration::from_millis(190), "{:?}", started.elapsed());
    }
}
