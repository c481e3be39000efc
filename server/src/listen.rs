//! Accepting connections: at most `limits.max_connections` open at once, each with a deadline
//! for its request head (which also ends idle keep-alive connections) and one for the client to
//! take what is sent ([`SendDeadline`]), all closed gracefully on shutdown.
//!
//! Why not `axum::serve`: it gives hyper no timer, and without one hyper applies no header
//! timeout. A client that connected and sent nothing — or a header line a byte a minute — kept
//! its connection, and a file descriptor, for ever; a few thousand such clients took every
//! descriptor the process had, and the next run could not open its harness's pipes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::{Service as _, service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::send_deadline::SendDeadline;

/// A connection's deadlines (see [`serve`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    /// For a request's line and headers, and for an idle keep-alive connection.
    pub(crate) header: Duration,
    /// For the client to take more of what is sent.
    pub(crate) send: Duration,
}

/// After an accept that failed for want of a resource (descriptors, memory), how long to wait
/// before the next: the failure repeats until a connection or a run frees one.
const ACCEPT_RETRY: Duration = Duration::from_millis(250);

/// The open connections, counted against the limit.
#[derive(Clone, Debug)]
pub struct Connections {
    /// One permit per connection that may open; the accept loop takes one before it accepts.
    slots: Arc<Semaphore>,
    /// Connections open now (not counting the permit the accept loop holds while it waits).
    open: Arc<AtomicUsize>,
    max: usize,
}

impl Connections {
    /// Room for `max` connections (at least 1, at most `u32::MAX`: the shutdown waits for every
    /// slot at once).
    pub fn new(max: usize) -> Self {
        let max = max.clamp(1, (u32::MAX as usize).min(Semaphore::MAX_PERMITS));
        Connections { slots: Arc::new(Semaphore::new(max)), open: Arc::new(AtomicUsize::new(0)), max }
    }

    /// Connections open now (a WebSocket counts until it closes).
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// The most that may be open at once.
    pub fn max(&self) -> usize {
        self.max
    }
}

/// A connection's place among the open ones, in each of its requests' extensions: a WebSocket
/// handler keeps it until the socket closes (the upgraded socket outlives the HTTP connection
/// it came from, and must go on counting).
#[derive(Clone)]
pub(crate) struct ConnectionSlot {
    _held: Arc<Held>,
}

/// An open connection's permit; counted open from its accept until it is dropped.
struct Held {
    _permit: OwnedSemaphorePermit,
    open: Arc<AtomicUsize>,
}

impl Held {
    fn new(permit: OwnedSemaphorePermit, open: Arc<AtomicUsize>) -> Self {
        open.fetch_add(1, Ordering::Relaxed);
        Held { _permit: permit, open }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serve `router` on `listener` until `stop` turns true (or its sender is dropped), then stop
/// accepting, ask every open connection to close once its response in flight has ended, and
/// return when the last one (WebSockets included) has closed.
///
/// At the limit, no connection is accepted until one closes: new clients wait in the kernel's
/// listen backlog. A connection whose request line and headers take longer than
/// `timeouts.header` — or that sits idle that long between requests — is closed, and so is one
/// whose client takes nothing of what is sent for `timeouts.send`.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    connections: Connections,
    timeouts: Timeouts,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let permit = tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            permit = connections.slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break, // never closed; if it were, there would be nothing to count with
            },
        };
        let accepted = tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            accepted = listener.accept() => accepted,
        };
        let tcp = match accepted {
            Ok((tcp, _peer)) => tcp,
            // The peer gave up between its SYN and our accept: nothing to do.
            Err(e) if is_the_peers(&e) => continue,
            Err(_) => {
                tokio::select! {
                    _ = stop.wait_for(|s| *s) => break,
                    _ = tokio::time::sleep(ACCEPT_RETRY) => continue,
                }
            }
        };
        // Small frames go out at once: with Nagle's algorithm an envelope could wait for the
        // client's delayed ACK (tens of milliseconds).
        let _ = tcp.set_nodelay(true);
        let held = Held::new(permit, connections.open.clone());
        tokio::spawn(serve_connection(tcp, router.clone(), held, timeouts, stop.clone()));
    }
    drop(listener);
    let every_slot = u32::try_from(connections.max).expect("Connections::new keeps max within u32");
    let _all_closed = connections.slots.acquire_many(every_slot).await;
}

async fn serve_connection(
    tcp: tokio::net::TcpStream,
    router: Router,
    held: Held,
    timeouts: Timeouts,
    mut stop: watch::Receiver<bool>,
) {
    let slot = ConnectionSlot { _held: Arc::new(held) };
    let inner = TowerToHyperService::new(router);
    let service = service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(slot.clone());
        inner.call(request.map(Body::new))
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.header)
        .serve_connection(TokioIo::new(SendDeadline::new(tcp, timeouts.send)), service)
        .with_upgrades();
    tokio::pin!(connection);
    let mut closing = false;
    loop {
        tokio::select! {
            // An error here is the client's (a reset, a malformed or late request head): hyper has
            // answered what could be answered, and the connection is over either way.
            _ = connection.as_mut() => break,
            _ = stop.wait_for(|s| *s), if !closing => {
                closing = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Whether an accept error concerns only the connection being accepted.
fn is_the_peers(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}
