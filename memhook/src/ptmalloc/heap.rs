//! Per-thread allocation chains (seed 002): each thread allocates from its own heap without
//! locks. A block freed into by another thread goes on the owner heap's remote-free queue (a
//! lock-free stack), which the owner drains at its next allocation or free. A heap whose thread
//! exited is orphaned and adopted by the next new thread, so memory is not stranded.

use std::cell::Cell;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

use super::block::{Block, FreeObj, BLOCK, NCLASSES};
use super::source;
use super::spin::Spin;

pub struct Heap {
    /// The block each class allocates from.
    current: [*mut Block; NCLASSES],
    /// Other blocks of each class with free objects (doubly linked through the headers).
    partial: [*mut Block; NCLASSES],
    /// Objects of our blocks freed by other threads.
    rfq: AtomicPtr<FreeObj>,
    next_orphan: *mut Heap,
}

thread_local! {
    // Const, no destructor: no registration or allocation on first use, usable in any context.
    static HEAP: Cell<*mut Heap> = const { Cell::new(null_mut()) };
}

struct Global {
    orphans: *mut Heap,
    /// Bump region for Heap structs.
    meta: usize,
    meta_end: usize,
    key: Option<libc::pthread_key_t>,
}

// SAFETY: the raw pointers are only followed under the spinlock.
unsafe impl Send for Global {}

static GLOBAL: Spin<Global> = Spin::new(Global {
    orphans: null_mut(),
    meta: 0,
    meta_end: 0,
    key: None,
});

/// At thread exit (pthread key destructor): the heap becomes an orphan.
unsafe extern "C" fn thread_exit(h: *mut libc::c_void) {
    HEAP.with(|c| c.set(null_mut()));
    let h = h.cast::<Heap>();
    // SAFETY: still this thread's heap: nobody else allocates from it.
    unsafe { (*h).release_empty() };
    GLOBAL.lock(|g| {
        // SAFETY: `h` is the exiting thread's heap; no thread uses it until adopted.
        unsafe { (*h).next_orphan = g.orphans };
        g.orphans = h;
    });
}

/// The calling thread's heap, adopting an orphan or making one on first use.
#[inline]
pub fn mine() -> Option<*mut Heap> {
    let h = HEAP.with(|c| c.get());
    if !h.is_null() {
        return Some(h);
    }
    new_for_thread()
}

/// The calling thread's heap if it has one (free() does not make one).
#[inline]
pub fn mine_if_any() -> *mut Heap {
    HEAP.with(|c| c.get())
}

#[cold]
fn new_for_thread() -> Option<*mut Heap> {
    let (h, key) = GLOBAL.lock(|g| {
        if g.key.is_none() {
            let mut k: libc::pthread_key_t = 0;
            // SAFETY: creating a key with a destructor that takes our heap pointer.
            if unsafe { libc::pthread_key_create(&mut k, Some(thread_exit)) } == 0 {
                g.key = Some(k);
            }
        }
        if !g.orphans.is_null() {
            let h = g.orphans;
            // SAFETY: orphans are valid heaps linked through next_orphan.
            g.orphans = unsafe { (*h).next_orphan };
            return (h, g.key);
        }
        let size = std::mem::size_of::<Heap>().next_multiple_of(64);
        if g.meta + size > g.meta_end {
            // SAFETY: a fresh anonymous mapping for heap structs, never unmapped.
            let m = unsafe { crate::sys::mmap_anon(BLOCK) };
            if m == libc::MAP_FAILED {
                return (null_mut(), g.key);
            }
            g.meta = m as usize;
            g.meta_end = g.meta + BLOCK;
        }
        let h = g.meta as *mut Heap;
        g.meta += size;
        // SAFETY: fresh, zeroed, suitably aligned memory of the bump region, ours alone.
        unsafe {
            h.write(Heap {
                current: [null_mut(); NCLASSES],
                partial: [null_mut(); NCLASSES],
                rfq: AtomicPtr::new(null_mut()),
                next_orphan: null_mut(),
            })
        };
        (h, g.key)
    });
    if h.is_null() {
        return None;
    }
    HEAP.with(|c| c.set(h));
    if let Some(k) = key {
        // SAFETY: a valid key; the value is only passed back to thread_exit.
        unsafe { libc::pthread_setspecific(k, h.cast()) };
    }
    Some(h)
}

impl Heap {
    /// An object of class `c`.
    #[inline]
    pub fn alloc(&mut self, c: usize) -> Option<*mut u8> {
        let b = self.current[c];
        if !b.is_null() {
            // SAFETY: current blocks are this heap's, used by this thread only.
            if let Some(p) = unsafe { (*b).take() } {
                return Some(p);
            }
        }
        self.alloc_slow(c)
    }

    #[cold]
    fn alloc_slow(&mut self, c: usize) -> Option<*mut u8> {
        self.drain_remote();
        loop {
            let b = self.current[c];
            if !b.is_null() {
                // SAFETY: as in alloc.
                if let Some(p) = unsafe { (*b).take() } {
                    return Some(p);
                }
            }
            // The current block is full: it leaves `current`, unlisted, until an object of it
            // is freed. Take a partial block, or a new one from the source.
            let next = self.partial[c];
            if !next.is_null() {
                self.unlist(next);
                self.current[c] = next;
                continue;
            }
            let nb = source::get_block()?;
            // SAFETY: a block from the source is ours to initialize.
            unsafe { Block::init_small(nb, c, self) };
            self.current[c] = nb;
        }
    }

    /// Frees an object of one of our blocks (this heap's thread only).
    #[inline]
    pub fn free_local(&mut self, b: *mut Block, p: usize) {
        // SAFETY: `b` is one of this heap's blocks and `p` a live object in it.
        let bb = unsafe { &mut *b };
        bb.give(bb.obj_start(p));
        let c = bb.class;
        if self.current[c] == b {
            return;
        }
        if bb.used == 0 {
            if bb.listed {
                self.unlist(b);
            }
            source::put_block(b);
        } else if !bb.listed {
            self.list(b);
        }
    }

    /// Another thread frees `p`, an object of one of our blocks.
    pub fn free_remote(&self, p: usize) {
        let o = p as *mut FreeObj;
        let mut head = self.rfq.load(Ordering::Relaxed);
        loop {
            // SAFETY: `p` is dead and at least 16 bytes: its first word becomes the link.
            unsafe { (*o).next = head };
            match self
                .rfq
                .compare_exchange_weak(head, o, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }

    #[inline]
    pub fn has_remote(&self) -> bool {
        !self.rfq.load(Ordering::Relaxed).is_null()
    }

    /// Frees everything other threads queued for us. Only the owner takes from the queue, and
    /// it takes all of it at once, so pushes never race a pop (no ABA).
    pub fn drain_remote(&mut self) {
        let mut o = self.rfq.swap(null_mut(), Ordering::Acquire);
        while !o.is_null() {
            // SAFETY: queued objects are dead objects of our blocks, linked by free_remote.
            let next = unsafe { (*o).next };
            let p = o as usize;
            self.free_local(Block::of(p), p);
            o = next;
        }
    }

    /// At thread exit: frees queued objects and gives blocks with nothing live back to the
    /// source, so an orphan holds only blocks with live objects.
    fn release_empty(&mut self) {
        self.drain_remote();
        for c in 0..NCLASSES {
            let b = self.current[c];
            // SAFETY: current blocks are this heap's.
            if !b.is_null() && unsafe { (*b).used } == 0 {
                self.current[c] = null_mut();
                source::put_block(b);
            }
        }
    }

    fn list(&mut self, b: *mut Block) {
        // SAFETY: `b` and the list's blocks are this heap's; only this thread links them.
        unsafe {
            let c = (*b).class;
            let head = self.partial[c];
            (*b).prev = null_mut();
            (*b).next = head;
            if !head.is_null() {
                (*head).prev = b;
            }
            self.partial[c] = b;
            (*b).listed = true;
        }
    }

    fn unlist(&mut self, b: *mut Block) {
        // SAFETY: as in list; `b` is listed.
        unsafe {
            let c = (*b).class;
            let (p, n) = ((*b).prev, (*b).next);
            if p.is_null() {
                self.partial[c] = n;
            } else {
                (*p).next = n;
            }
            if !n.is_null() {
                (*n).prev = p;
            }
            (*b).listed = false;
            (*b).next = null_mut();
            (*b).prev = null_mut();
        }
    }
}
