//! Schedules of blocking collectives kept for reuse: a loop that calls MPI_Allreduce (or
//! another collective without per-rank arrays) with the same arguments runs the schedule it
//! built the first time, with no building, argument decoding or allocation (callgrind: about
//! 1900 of 2500 instructions of a 2-rank 8-byte MPI_Allreduce went there).
//!
//! A schedule depends only on the call's arguments (buffer addresses, counts, handles, root)
//! and on the communicator. Handles keep their meaning until freed, so a datatype or operation
//! freed anywhere (`crate::handle_epoch`) empties every cache; the communicator is compared by its
//! collective context and group ([`super::seq_key`]), rank and local context, so a slot reused
//! by another communicator does not match. Collectives with array arguments (the v and w
//! forms, whose counts may change behind the same pointer) and neighbourhood collectives are
//! never cached.

use super::Schedule;

/// Arguments of a blocking collective call, as one comparable value. `None` from an argument
/// (an array) makes the call uncacheable.
pub trait KeyArg {
    fn key(self) -> Option<u64>;
}

impl KeyArg for *const std::ffi::c_void {
    fn key(self) -> Option<u64> {
        Some(self as usize as u64)
    }
}
impl KeyArg for *mut std::ffi::c_void {
    fn key(self) -> Option<u64> {
        Some(self as usize as u64)
    }
}
impl KeyArg for i32 {
    fn key(self) -> Option<u64> {
        Some(self as u32 as u64)
    }
}
impl KeyArg for i64 {
    fn key(self) -> Option<u64> {
        Some(self as u64)
    }
}
/// Per-rank count and displacement arrays: their contents may change behind the same pointer.
impl KeyArg for *const i32 {
    fn key(self) -> Option<u64> {
        None
    }
}
impl KeyArg for *const i64 {
    fn key(self) -> Option<u64> {
        None
    }
}
impl KeyArg for *const isize {
    fn key(self) -> Option<u64> {
        None
    }
}
/// Per-rank datatype arrays (the w forms).
impl KeyArg for *const *mut std::ffi::c_void {
    fn key(self) -> Option<u64> {
        None
    }
}

/// Most arguments a cached collective has (gather, scatter, allgather, alltoall: 7).
const ARGS: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The entry point's name (a literal per call site: compared by address).
    name: usize,
    comm: usize,
    args: [u64; ARGS],
    epoch: u64,
}

impl Key {
    /// The key of a call to `name` on communicator index `comm`; None when it has array
    /// arguments or too many.
    #[inline]
    pub fn new(name: &'static str, comm: usize, args: &[Option<u64>]) -> Option<Key> {
        if args.len() > ARGS {
            return None;
        }
        let mut a = [0; ARGS];
        for (d, s) in a.iter_mut().zip(args) {
            *d = (*s)?;
        }
        Some(Key {
            name: name.as_ptr() as usize,
            comm,
            args: a,
            epoch: crate::handle_epoch::current(),
        })
    }
}

/// Entries kept per process: a time step often calls a few different collectives.
const ENTRIES: usize = 4;

/// A process's cached schedules (in the runtime), replaced round robin; boxed, so that taking
/// one out and putting it back moves a pointer.
#[derive(Default)]
pub struct Cache {
    entries: Vec<(Key, Box<Schedule>)>,
    next: usize,
}

impl Cache {
    /// The schedule cached for `key`, taken out while it runs (put back by [`Cache::put`]).
    /// The caller checks that it was built for the communicator now at that index
    /// ([`Schedule::built_for`]).
    #[inline]
    pub fn take(&mut self, key: &Key) -> Option<Box<Schedule>> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.swap_remove(i).1)
    }

    /// Keep `s` (finished, or just built and not run) for calls with `key`.
    pub fn put(&mut self, key: Key, s: Box<Schedule>) {
        if self.entries.len() < ENTRIES {
            self.entries.push((key, s));
        } else {
            self.entries[self.next % ENTRIES] = (key, s);
            self.next = self.next.wrapping_add(1);
        }
    }
}
