//! The host's end of a run's lifeline (see [`super::supervisor`]), kept out of forked children.
//!
//! The supervisor ends a run's process tree when every copy of the host's end is closed. A
//! host that forks without exec (Python's `multiprocessing` with `fork`, a pre-fork server)
//! gives its child a copy of every descriptor, lifelines included; were the host then killed,
//! the child's copies would keep its runs' trees alive for as long as the child lives. And a
//! child that ended a copied run would end the host's tree: it writes to the same socket.
//!
//! So every host end is registered here, and a `pthread_atfork` child handler points each of
//! them at `/dev/null` in the child (keeping the descriptor numbers taken: a copied run in the
//! child writes into nothing, never into a file the child opened since). A spin lock, taken by
//! the `prepare` handler, keeps the list whole across a fork: an end is made and registered,
//! or unregistered and closed, entirely before or entirely after it. The child handler runs
//! only async-signal-safe calls and allocates nothing.

use std::cell::UnsafeCell;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

/// The host ends open in this process (once the child handler ran: their numbers, now
/// `/dev/null`). Only read or written with [`LOCK`] held.
struct Registry(UnsafeCell<Vec<RawFd>>);

// SAFETY: the vector is only touched with `LOCK` held (see `with_registry` and the fork
// handlers, which hold it from `prepare` to `parent`/`child`).
unsafe impl Sync for Registry {}

static REGISTRY: Registry = Registry(UnsafeCell::new(Vec::new()));
static LOCK: AtomicBool = AtomicBool::new(false);
static HANDLERS: Once = Once::new();

fn lock() {
    while LOCK.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        std::thread::yield_now();
    }
}

fn unlock() {
    LOCK.store(false, Ordering::Release);
}

/// Run `f` on the registry with the lock held (never across a fork, see the module docs).
fn with_registry<R>(f: impl FnOnce(&mut Vec<RawFd>) -> R) -> R {
    HANDLERS.call_once(|| {
        // SAFETY: registering three `extern "C"` functions that live as long as the program.
        // A failure (ENOMEM) leaves forked children holding copies, as without this module.
        unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork_in_parent), Some(after_fork_in_child)) };
    });
    lock();
    // SAFETY: the lock is held: nothing else reads or writes the vector.
    let out = f(unsafe { &mut *REGISTRY.0.get() });
    unlock();
    out
}

extern "C" fn before_fork() {
    lock();
}

extern "C" fn after_fork_in_parent() {
    unlock();
}

extern "C" fn after_fork_in_child() {
    // SAFETY: the lock is held since `before_fork`, and this child has one thread: the vector
    // is read without allocating; `open`, `dup3` and `close` are async-signal-safe.
    unsafe {
        let ends = &*REGISTRY.0.get();
        if !ends.is_empty() {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            for &fd in ends {
                // Without /dev/null (no descriptor left) closing is still better than holding.
                if null < 0 || libc::dup3(null, fd, libc::O_CLOEXEC) < 0 {
                    libc::close(fd);
                }
            }
            if null >= 0 {
                libc::close(null);
            }
        }
    }
    unlock();
}

/// The host's end of one run's lifeline: closed (dropped, or by the host's death) it ends the
/// run's tree; a child forked from the host does not hold it.
#[derive(Debug)]
pub(crate) struct HostLifeline(RawFd);

impl HostLifeline {
    /// Make a lifeline: `(the supervisor's end, the host's end)`. A connected socket pair, not
    /// a pipe, so that the host's write after the supervisor is gone can be told not to raise
    /// SIGPIPE (which would end a Go host: a signal raised on a non-Go thread).
    pub(crate) fn pair() -> std::io::Result<(OwnedFd, HostLifeline)> {
        with_registry(|ends| {
            let mut fds = [0; 2];
            // SAFETY: `fds` is valid for two ints.
            if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) }
                != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            ends.push(fds[1]);
            // SAFETY: socketpair returned two new descriptors we now own (the host's end is
            // closed by `HostLifeline`'s drop).
            Ok((unsafe { OwnedFd::from_raw_fd(fds[0]) }, HostLifeline(fds[1])))
        })
    }
}

impl AsRawFd for HostLifeline {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

impl Drop for HostLifeline {
    fn drop(&mut self) {
        let fd = self.0;
        with_registry(|ends| {
            ends.retain(|&e| e != fd);
            // Closed with the lock held: a fork never sees the number registered after it was
            // closed (and maybe reused by another thread's open).
            // SAFETY: our descriptor, closed once.
            unsafe { libc::close(fd) };
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(fd: RawFd) -> bool {
        with_registry(|ends| ends.contains(&fd))
    }

    #[test]
    fn an_end_is_registered_while_it_is_open() {
        let (theirs, ours) = HostLifeline::pair().unwrap();
        let fd = ours.as_raw_fd();
        assert!(registered(fd));
        drop(ours);
        assert!(!registered(fd));
        // The supervisor's end sees the host's end closed.
        let mut byte = [0u8; 1];
        // SAFETY: reading one byte into a valid buffer from a descriptor we own.
        assert_eq!(unsafe { libc::read(theirs.as_raw_fd(), byte.as_mut_ptr().cast(), 1) }, 0, "end of file");
    }

    #[test]
    fn a_forked_child_holds_nothing_of_the_lifeline() {
        let (theirs, ours) = HostLifeline::pair().unwrap();
        // SAFETY: the child runs only async-signal-safe calls and leaves by `_exit`.
        let child = unsafe { libc::fork() };
        if child == 0 {
            // SAFETY: as above. The child's copy must not reach the supervisor's end.
            unsafe {
                let sent = libc::send(ours.as_raw_fd(), b"K".as_ptr().cast(), 1, libc::MSG_NOSIGNAL);
                let mut st: libc::stat = std::mem::zeroed();
                let is_socket =
                    libc::fstat(ours.as_raw_fd(), &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFSOCK;
                libc::sleep(2);
                libc::_exit(if sent < 0 && !is_socket { 0 } else { 1 });
            }
        }
        assert!(child > 0);
        // The host's end closes while the child still lives: the supervisor's end reads the end
        // of the file, not the child's "K", and at once.
        drop(ours);
        let mut byte = [0u8; 1];
        let mut pfd = libc::pollfd { fd: theirs.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd; then one byte into a valid buffer.
        unsafe {
            assert_eq!(libc::poll(&mut pfd, 1, 1000), 1, "the end is seen while the child lives");
            assert_eq!(libc::read(theirs.as_raw_fd(), byte.as_mut_ptr().cast(), 1), 0, "end of file, not a byte");
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "in the child it was /dev/null");
    }
}
