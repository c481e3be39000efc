//! Checked handles: every `agentstream_decoder *`, `agentstream_session *` and `agentstream_run *`
//! the library hands out is an opaque NUMBER, never an address. Each owned type has its own
//! table from number to object; every call looks its handle up, so a NULL, freed, never-issued
//! or wrong-type handle is refused with `AGENTSTREAM_STATUS_NULL_ARGUMENT` /
//! `AGENTSTREAM_STATUS_INVALID_HANDLE` instead of touching freed memory, and `_free` of such a
//! handle (a double free) is a harmless no-op. Numbers are never reused within a process.
//!
//! A call holds a reference to the object for its duration, so an object freed while one of its
//! calls is running (from another thread, or from inside its own callback) is dropped when that
//! call returns.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{Error, ErrorKind, Result, null};

/// Handle numbers: 16-aligned and at least 0x10000, so they are never NULL, never look like a
/// small integer (Go's runtime rejects pointer-typed values below 4096), and distinct across
/// every table.
static NEXT: AtomicUsize = AtomicUsize::new(1);

fn next_number() -> usize {
    0x10000 + NEXT.fetch_add(1, Ordering::Relaxed) * 16
}

/// One owned type's table. A B-tree rather than a hash map: its nodes are referenced by their
/// start address, so valgrind sees a live table as reachable (hashbrown points into the middle
/// of its allocation, which valgrind reports as "possibly lost" at exit).
pub(crate) struct Table<T> {
    name: &'static str,
    map: Mutex<Option<BTreeMap<usize, Arc<T>>>>,
}

impl<T> Table<T> {
    /// An empty table for handles of the C type `name` (used in messages).
    pub const fn new(name: &'static str) -> Self {
        Table { name, map: Mutex::new(None) }
    }

    fn with<R>(&self, f: impl FnOnce(&mut BTreeMap<usize, Arc<T>>) -> R) -> R {
        let mut guard = self.map.lock().unwrap_or_else(|p| p.into_inner());
        f(guard.get_or_insert_with(BTreeMap::new))
    }

    /// Register `value` and return its handle.
    pub fn insert<P>(&self, value: T) -> *mut P {
        let n = next_number();
        self.with(|m| m.insert(n, Arc::new(value)));
        n as *mut P
    }

    /// The object behind `handle` (argument name `arg` for the messages).
    pub fn get<P>(&self, handle: *const P, arg: &str) -> Result<Arc<T>> {
        if handle.is_null() {
            return Err(null(arg));
        }
        let n = handle as usize;
        self.with(|m| m.get(&n).cloned()).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidHandle,
                format!(
                    "argument `{arg}` ({n:#x}) is not a live {}: it was already freed, or never returned by \
                     the library as one",
                    self.name
                ),
            )
        })
    }

    /// Unregister `handle`; `None` when it is not live (NULL, freed, never issued).
    pub fn remove<P>(&self, handle: *const P) -> Option<Arc<T>> {
        if handle.is_null() {
            return None;
        }
        self.with(|m| m.remove(&(handle as usize)))
    }

    /// How many handles of this type are live.
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.with(|m| m.len())
    }
}

/// The message `_free` leaves in the last error for a handle that is not live.
pub(crate) fn not_live_message(name: &str, handle: usize) -> String {
    format!("{name} {handle:#x} was not live (freed twice, or never returned by the library): nothing was freed")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Opaque;

    #[test]
    fn handles_are_checked_and_never_reused() {
        let t: Table<String> = Table::new("agentstream_thing");
        let a: *mut Opaque = t.insert("a".to_string());
        let b: *mut Opaque = t.insert("b".to_string());
        assert_ne!(a, b);
        assert!(a as usize >= 0x10000 && a as usize % 16 == 0);
        assert_eq!(*t.get(a, "thing").unwrap(), "a");
        assert!(t.remove(a).is_some());
        assert!(t.remove(a).is_none(), "a double free is a no-op");
        let e = t.get(a, "thing").unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidHandle);
        assert!(e.message.contains("agentstream_thing"), "{}", e.message);
        assert_eq!(t.get(std::ptr::null::<Opaque>(), "thing").unwrap_err().kind, ErrorKind::NullArgument);
        let c: *mut Opaque = t.insert("c".to_string());
        assert_ne!(c, a, "numbers are not reused");
        assert_eq!(t.live(), 2);
        let bogus = 0xdead_0000usize as *const Opaque;
        assert_eq!(t.get(bogus, "thing").unwrap_err().kind, ErrorKind::InvalidHandle);
        t.remove(b);
        t.remove(c);
    }
}
