//! Decoding a large input on a helper thread while the caller's thread takes its events.
//!
//! A binding that turns events into its language's objects spends about as long on that as the
//! core spends decoding (Python: building dicts). A run already splits the two — the runner's
//! thread decodes, the language's thread converts — and [`OverlappedDecoder::feed_overlapped`]
//! gives one large feed the same split: the input is cut at line ends into pieces of about
//! [`PIECE_BYTES`], the process's decode helper thread decodes them in order, and each piece's
//! events reach the caller as soon as they are decoded, so converting one piece overlaps
//! decoding the next.
//!
//! The events, their order and the decoder's state afterwards are exactly those of
//! `feed(bytes)`: decoding does not depend on how the input is chunked. The decoder itself
//! travels to the helper and back (boxed), so nothing is borrowed across threads. There is one
//! helper per process, started on first use and parked between feeds (each side of a feed polls
//! for a moment before parking: [`SPIN_BEFORE_PARK`]); a feed decodes on the
//! caller's thread instead when the input is small ([`OVERLAP_MIN_BYTES`]), when the machine
//! has one CPU, when the process turned the helper off ([`HELPER_ENV`]), or when the helper is
//! busy with another decoder's feed.

use std::any::Any;
use std::ops::{Deref, DerefMut};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::Decoder;
use crate::event::OutputEvent;

/// The size a piece is cut at (at the next line end): small enough that the caller starts on
/// the events early, large enough to be one message among some sixteen per 64 KiB.
pub const PIECE_BYTES: usize = 4 * 1024;

/// The most input handed to the helper at once: a larger feed goes over in windows of this
/// size, one after the other, so its copy stays this small even for one huge line.
pub const WINDOW_BYTES: usize = 1024 * 1024;

/// Inputs smaller than this decode on the caller's thread: handing the input over and waking
/// the helper costs tens of microseconds, more than overlapping a small feed saves.
pub const OVERLAP_MIN_BYTES: usize = 32 * 1024;

/// The environment variable that turns the helper off for the process when set to `0`, `off`,
/// `false` or `no` (read once, at the first large feed): every feed then decodes on its caller's
/// thread, for the least CPU rather than the soonest events (many processes decoding at once).
pub const HELPER_ENV: &str = "AGENTSTREAM_DECODE_HELPER";

/// What the helper sends back during a feed.
enum Message {
    /// The events of one piece.
    Events(Vec<OutputEvent>),
    /// The feed is over: the decoder comes back, with the helper's panic if decoding panicked.
    Done(Box<Decoder>, Option<Box<dyn Any + Send>>),
}

/// How the caller runs a blocking section — waiting for the helper, or decoding a large feed
/// on its own thread when the helper is not available: `|section| section()`, or that with a
/// language's interpreter lock released (Python: `py.detach`), so its other threads run
/// meanwhile. The section touches no object of the language.
pub type Blocking<'b> = dyn FnMut(&mut (dyn FnMut() + Send)) + 'b;

/// A [`Decoder`] (it derefs to one) whose large feeds can decode on the helper thread.
pub struct OverlappedDecoder {
    /// Always here, except while a feed is on the helper.
    decoder: Option<Box<Decoder>>,
}

impl OverlappedDecoder {
    /// Wrap `decoder`.
    pub fn new(decoder: Decoder) -> Self {
        OverlappedDecoder { decoder: Some(Box::new(decoder)) }
    }

    /// Feed `bytes` as [`Decoder::feed`] does; `take` gets the events on the calling thread, in
    /// order, a batch per piece as the helper decodes them (or all at once when the feed
    /// decodes here; never called with an empty batch). Waiting for the helper, and decoding a
    /// large feed here when the helper is not available, run through `blocking`.
    ///
    /// When `take` fails, the rest of the input is still decoded (the decoder's state stays
    /// that of the whole input) but its events are not taken; the first error is returned. A
    /// panic in `take` or in the decoding is raised again here once the decoder is back.
    pub fn feed_overlapped<E>(
        &mut self,
        bytes: &[u8],
        blocking: &mut Blocking<'_>,
        mut take: impl FnMut(Vec<OutputEvent>) -> Result<(), E>,
    ) -> Result<(), E> {
        let large = bytes.len() >= OVERLAP_MIN_BYTES;
        let Some(helper) = large.then(Helper::claim).flatten() else {
            // Decoded here; a large feed all the same, as a blocking section.
            let decoder: &mut Decoder = self;
            let mut events = Vec::new();
            if large {
                blocking(&mut || events = decoder.feed(bytes));
            } else {
                events = decoder.feed(bytes);
            }
            return if events.is_empty() { Ok(()) } else { take(events) };
        };
        let mut result = Ok(());
        let mut take_panic = None;
        let mut on_events = |events: Vec<OutputEvent>| {
            if result.is_ok() && take_panic.is_none() {
                match catch_unwind(AssertUnwindSafe(|| take(events))) {
                    Ok(r) => result = r,
                    Err(panic) => take_panic = Some(panic),
                }
            }
        };
        // A window at a time, so the copy handed over stays small whatever the input's size (a
        // window may end inside a line: the decoder holds partial lines across feeds).
        let mut helper_panic = None;
        for window in bytes.chunks(WINDOW_BYTES) {
            helper_panic = self.window_on_helper(&helper, window, blocking, &mut on_events);
            if helper_panic.is_some() {
                break;
            }
        }
        drop(helper);
        if let Some(panic) = helper_panic.or(take_panic) {
            resume_unwind(panic);
        }
        result
    }

    /// Decode `window` on the helper (held by this feed), its events to `on_events` as they
    /// come; the helper's panic, if decoding panicked.
    fn window_on_helper(
        &mut self,
        helper: &Helper,
        window: &[u8],
        blocking: &mut Blocking<'_>,
        on_events: &mut dyn FnMut(Vec<OutputEvent>),
    ) -> Option<Box<dyn Any + Send>> {
        let (out, mut rx) = mpsc::channel();
        let decoder = self.decoder.take().expect("the decoder is back from the helper");
        let job = Job { decoder, bytes: window.to_vec(), out };
        if let Err(mpsc::SendError(job)) = helper.jobs.send(job) {
            // The helper thread is gone (it never exits on its own): decode here.
            self.decoder = Some(job.decoder);
            let events = self.feed(window);
            if !events.is_empty() {
                on_events(events);
            }
            return None;
        }
        loop {
            let message = match rx.try_recv() {
                Ok(m) => Some(m),
                Err(TryRecvError::Empty) => {
                    let mut message = None;
                    let (receiver, slot) = (&mut rx, &mut message);
                    blocking(&mut move || *slot = spin_then_recv(receiver));
                    message
                }
                Err(TryRecvError::Disconnected) => None,
            };
            let Some(message) = message else {
                // Only if the helper thread died mid-feed, which its catch_unwind rules out.
                panic!("the decode helper stopped in the middle of a feed; this decoder is lost");
            };
            match message {
                Message::Events(events) => on_events(events),
                Message::Done(decoder, panic) => {
                    self.decoder = Some(decoder);
                    return panic;
                }
            }
        }
    }
}

impl Deref for OverlappedDecoder {
    type Target = Decoder;

    fn deref(&self) -> &Decoder {
        self.decoder.as_deref().expect("the decoder is back from the helper")
    }
}

impl DerefMut for OverlappedDecoder {
    fn deref_mut(&mut self) -> &mut Decoder {
        self.decoder.as_deref_mut().expect("the decoder is back from the helper")
    }
}

/// One feed for the helper.
struct Job {
    decoder: Box<Decoder>,
    /// A copy: the caller's bytes may be borrowed from its language's objects.
    bytes: Vec<u8>,
    out: Sender<Message>,
}

impl Job {
    fn run(self) {
        let Job { mut decoder, bytes, out } = self;
        let decoded = catch_unwind(AssertUnwindSafe(|| {
            for piece in pieces(&bytes, PIECE_BYTES) {
                let mut events = Vec::with_capacity(piece.len() / 256);
                decoder.feed_into(piece, &mut events);
                // A caller whose `take` failed still receives (and drops) the rest.
                if !events.is_empty() {
                    let _ = out.send(Message::Events(events));
                }
            }
        }));
        let _ = out.send(Message::Done(decoder, decoded.err()));
    }
}

/// The process's decode helper: a parked thread that decodes one feed at a time.
struct Helper {
    /// The process it was started in: after a `fork` the thread is not in the child.
    pid: u32,
    jobs: Sender<Job>,
    busy: AtomicBool,
}

impl Helper {
    /// The helper, reserved for one feed; `None` on a one-CPU machine, when the process turned
    /// it off ([`HELPER_ENV`]), when it is busy, or when no thread can be started.
    fn claim() -> Option<Claim> {
        static WANTED: OnceLock<bool> = OnceLock::new();
        static HELPER: Mutex<Option<Arc<Helper>>> = Mutex::new(None);
        let wanted = WANTED.get_or_init(|| {
            let off = std::env::var(HELPER_ENV)
                .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "0" | "off" | "false" | "no"));
            !off && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
        });
        if !*wanted {
            return None;
        }
        let pid = std::process::id();
        let helper = {
            let mut slot = HELPER.lock().unwrap_or_else(|p| p.into_inner());
            match slot.as_ref().filter(|h| h.pid == pid) {
                Some(h) => h.clone(),
                None => {
                    let (jobs, rx) = mpsc::channel::<Job>();
                    std::thread::Builder::new()
                        .name("agentstream-decode".into())
                        .spawn(move || {
                            while let Some(job) = spin_then_recv(&rx) {
                                job.run();
                            }
                        })
                        .ok()?;
                    let h = Arc::new(Helper { pid, jobs, busy: AtomicBool::new(false) });
                    *slot = Some(h.clone());
                    h
                }
            }
        };
        let free = helper.busy.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_ok();
        free.then_some(Claim(helper))
    }
}

/// The helper, held by one feed until dropped (on every path out of the feed, unwinding too).
struct Claim(Arc<Helper>);

impl Deref for Claim {
    type Target = Helper;

    fn deref(&self) -> &Helper {
        &self.0
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

/// How long a thread of a feed polls its channel before it parks: the caller waiting for the
/// next piece's events, the helper waiting for the next feed after one ended. The other side is
/// then busy with something that takes microseconds (decoding a piece; taking a piece's events,
/// or reading the next input), while waking a parked thread costs tens of microseconds on a
/// virtual machine, several times per feed: on such a host, parking at once lost most of what the
/// overlap gains (measured in the closing note of stop 43). The price is at most this much CPU
/// per wait, on a core that would otherwise idle.
pub const SPIN_BEFORE_PARK: Duration = Duration::from_micros(100);

/// The next message on `rx`, polled for up to [`SPIN_BEFORE_PARK`] before parking; `None` once
/// the sender is gone.
fn spin_then_recv<T>(rx: &Receiver<T>) -> Option<T> {
    let start = Instant::now();
    for polls in 1u32.. {
        match rx.try_recv() {
            Ok(message) => return Some(message),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        // The clock is read every 64 polls: a poll is a few nanoseconds, a reading more.
        if polls % 64 == 0 && start.elapsed() >= SPIN_BEFORE_PARK {
            break;
        }
        std::hint::spin_loop();
    }
    rx.recv().ok()
}

/// `bytes` cut into consecutive pieces of more than `size` bytes, each ending right after a line
/// end (the last one wherever the input ends). Together they are exactly `bytes`.
fn pieces(bytes: &[u8], size: usize) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = match rest.get(size..).and_then(|tail| memchr::memchr(b'\n', tail)) {
            Some(nl) => size + nl + 1,
            None => rest.len(),
        };
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Agent;

    #[test]
    fn a_waiter_gets_what_comes_while_it_polls_after_it_parks_and_the_end() {
        let (tx, rx) = mpsc::channel();
        tx.send(1).unwrap();
        assert_eq!(spin_then_recv(&rx), Some(1));
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_micros(10));
            tx.send(2).unwrap();
            // Long after the poll ended: this one finds the waiter parked.
            std::thread::sleep(SPIN_BEFORE_PARK * 20);
            tx.send(3).unwrap();
        });
        assert_eq!(spin_then_recv(&rx), Some(2));
        assert_eq!(spin_then_recv(&rx), Some(3));
        sender.join().unwrap();
        assert_eq!(spin_then_recv(&rx), None, "the sender is gone");
    }

    #[test]
    fn pieces_cover_the_input_and_end_at_line_ends() {
        let text = b"aaaa\nbb\ncccccccc\n\nd";
        for size in [1, 3, 5, 8, 100] {
            let parts: Vec<&[u8]> = pieces(text, size).collect();
            assert_eq!(parts.concat(), text, "size {size}");
            for p in &parts[..parts.len() - 1] {
                assert_eq!(p.last(), Some(&b'\n'), "size {size}: {parts:?}");
                assert!(p.len() > size, "size {size}: {parts:?}");
            }
        }
        assert_eq!(pieces(b"", 4).count(), 0);
    }

    fn large_input() -> Vec<u8> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/claude");
        let one = std::fs::read(dir.join("s8-subagent-newer.input.jsonl")).expect("golden input");
        let input = one.repeat(OVERLAP_MIN_BYTES.div_ceil(one.len()) + 1);
        assert!(input.len() >= OVERLAP_MIN_BYTES && input.len() > 4 * PIECE_BYTES);
        input
    }

    fn block(section: &mut (dyn FnMut() + Send)) {
        section()
    }

    #[test]
    fn same_events_and_state_as_one_feed() {
        let input = large_input();
        let mut plain = Decoder::new(Agent::Claude);
        let mut expected = plain.feed(&input);
        expected.extend(plain.finish());
        // Several times: the helper is reused, and the suite's other tests may hold it (this
        // feed then decodes here, with the same result).
        for _ in 0..3 {
            let mut overlapped = OverlappedDecoder::new(Decoder::new(Agent::Claude));
            let mut got = Vec::new();
            let r: Result<(), ()> = overlapped.feed_overlapped(&input, &mut block, |batch| {
                assert!(!batch.is_empty());
                got.extend(batch);
                Ok(())
            });
            assert!(r.is_ok());
            got.extend(overlapped.finish());
            assert_eq!(serde_json::to_string(&got).unwrap(), serde_json::to_string(&expected).unwrap());
            assert_eq!(overlapped.stats(), plain.stats());
        }
    }

    #[test]
    fn an_input_larger_than_a_window_goes_over_in_windows() {
        let one = large_input();
        let input = one.repeat(WINDOW_BYTES.div_ceil(one.len()) * 2 + 1);
        assert!(input.len() > 2 * WINDOW_BYTES);
        let mut plain = Decoder::new(Agent::Claude);
        let expected = plain.feed(&input);
        let mut overlapped = OverlappedDecoder::new(Decoder::new(Agent::Claude));
        let mut got = Vec::new();
        let r: Result<(), ()> = overlapped.feed_overlapped(&input, &mut block, |batch| {
            got.extend(batch);
            Ok(())
        });
        assert!(r.is_ok());
        assert_eq!(got.len(), expected.len());
        assert_eq!(serde_json::to_string(&got).unwrap(), serde_json::to_string(&expected).unwrap());
        assert_eq!(overlapped.stats(), plain.stats());
    }

    #[test]
    fn a_line_longer_than_a_window_is_decoded_whole() {
        let text = "x".repeat(WINDOW_BYTES * 2);
        let line = format!(
            r#"{{"type":"assistant","message":{{"id":"m","content":[{{"type":"text","text":"{text}"}}]}},"session_id":"s"}}"#
        );
        let input = format!("{line}\n{line}\n");
        let mut plain = Decoder::new(Agent::Claude);
        let expected = plain.feed(input.as_bytes());
        assert_eq!(expected.len(), 2);
        let mut overlapped = OverlappedDecoder::new(Decoder::new(Agent::Claude));
        let mut got = Vec::new();
        let r: Result<(), ()> = overlapped.feed_overlapped(input.as_bytes(), &mut block, |batch| {
            got.extend(batch);
            Ok(())
        });
        assert!(r.is_ok());
        assert_eq!(serde_json::to_string(&got).unwrap(), serde_json::to_string(&expected).unwrap());
        assert_eq!(overlapped.stats(), plain.stats());
    }

    #[test]
    fn the_helper_sends_a_batch_per_piece() {
        let input = large_input();
        let helper = loop {
            // Other tests of this binary may hold the helper for a moment.
            if let Some(h) = Helper::claim() {
                break h;
            }
            std::thread::yield_now();
        };
        let (out, rx) = mpsc::channel();
        let job = Job { decoder: Box::new(Decoder::new(Agent::Claude)), bytes: input.clone(), out };
        helper.jobs.send(job).expect("the helper runs");
        let mut batches = 0;
        let done = loop {
            match rx.recv().expect("the helper answers") {
                Message::Events(_) => batches += 1,
                Message::Done(decoder, panic) => break (decoder, panic),
            }
        };
        drop(helper);
        assert!(done.1.is_none());
        assert!(batches > 2, "{batches} batches for {} bytes", input.len());
        assert_eq!(done.0.stats().bytes, input.len() as u64);
    }

    #[test]
    fn a_failed_take_still_decodes_the_whole_input() {
        let input = large_input();
        let mut plain = Decoder::new(Agent::Claude);
        plain.feed(&input);
        let mut overlapped = OverlappedDecoder::new(Decoder::new(Agent::Claude));
        let mut taken = 0;
        let r = overlapped.feed_overlapped(&input, &mut block, |_| {
            taken += 1;
            Err("no room")
        });
        assert_eq!(r, Err("no room"));
        assert_eq!(taken, 1, "nothing is taken after the first error");
        assert_eq!(overlapped.stats(), plain.stats());
    }

    #[test]
    fn a_panic_in_take_comes_back_with_the_decoder_in_place() {
        let input = large_input();
        let mut overlapped = OverlappedDecoder::new(Decoder::new(Agent::Claude));
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _ = overlapped.feed_overlapped(&input, &mut block, |_| -> Result<(), ()> { panic!("taker bug") });
        }));
        let payload = r.expect_err("the panic is raised again");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"taker bug"));
        assert_eq!(overlapped.stats().bytes, input.len() as u64, "the decoder came back, whole input fed");
        // And it keeps working.
        assert!(overlapped.feed(b"").is_empty());
    }

    #[test]
    fn small_feeds_decode_here_in_one_batch() {
        let input = large_input();
        let small = &input[..input.len().min(OVERLAP_MIN_BYTES - 1)];
        let mut overlapped = OverlappedDecoder::new(Decoder::new(Agent::Claude));
        let mut batches = 0;
        let r: Result<(), ()> = overlapped.feed_overlapped(small, &mut block, |_| {
            batches += 1;
            Ok(())
        });
        assert!(r.is_ok());
        assert_eq!(batches, 1);
    }
}
