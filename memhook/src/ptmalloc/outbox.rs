//! Batched remote frees. An object freed by a thread other than its owner's goes, one CAS each,
//! on the owner heap's queue (heap.rs) — a cache line every remote freer and the owner fight
//! over (xmalloc-testN: 80 % of free's time in that CAS). Instead a thread with a heap collects
//! the objects it frees for one owner in its own outbox (plain stores) and hands the whole list
//! over with one CAS when the outbox is full ([`MAX_OBJECTS`] objects or [`MAX_BYTES`]), when it
//! frees for another owner, when its own allocation slow path runs, and at thread exit. At most
//! that much memory waits in a thread's outbox.

use std::ptr::null_mut;

use super::block::FreeObj;
use super::heap::Heap;

pub const MAX_OBJECTS: usize = 64;
pub const MAX_BYTES: usize = 32 << 10;

/// One thread's pending remote frees, all for the heap `to`. Owner-thread state.
pub struct Outbox {
    to: *mut Heap,
    head: *mut FreeObj,
    tail: *mut FreeObj,
    n: usize,
    bytes: usize,
}

impl Outbox {
    pub const fn new() -> Outbox {
        Outbox {
            to: null_mut(),
            head: null_mut(),
            tail: null_mut(),
            n: 0,
            bytes: 0,
        }
    }

    /// `p` (of `size` bytes), an object of `to`'s blocks, is free.
    ///
    /// # Safety
    /// `p` is dead and ours to link (at least 8 bytes); `to` is a heap (heaps are never freed).
    #[inline]
    pub unsafe fn put(&mut self, to: *mut Heap, p: usize, size: usize) {
        if to != self.to {
            self.flush();
            self.to = to;
        }
        let o = p as *mut FreeObj;
        // SAFETY: the caller's contract: `p` is a dead object, its first word the link.
        unsafe { (*o).next = self.head };
        if self.head.is_null() {
            self.tail = o;
        }
        self.head = o;
        self.n += 1;
        self.bytes += size;
        if self.n >= MAX_OBJECTS || self.bytes >= MAX_BYTES {
            self.flush();
        }
    }

    /// Hands everything pending to its owner heap.
    pub fn flush(&mut self) {
        if self.head.is_null() {
            return;
        }
        // SAFETY: heaps are never freed; head..tail are dead objects of its blocks, linked.
        unsafe { (*self.to).free_remote_list(self.head, self.tail) };
        self.head = null_mut();
        self.tail = null_mut();
        self.n = 0;
        self.bytes = 0;
    }
}
