//! Per-thread allocation chains (seed 002): each thread allocates from its own heap without
//! locks. An object freed by another thread goes on the owner heap's remote-free queue (a
//! lock-free stack), which the owner drains when it allocates from a block whose free list ran
//! out (before it hands out fresh objects) and in its allocation slow path: neither malloc's nor
//! free's fast path reads the queue (xmalloc-testN 1.65 to 1.27 s), as mimalloc collects its
//! pages' thread-free lists only when their free lists are empty. The cost: a thread that only
//! reuses objects of its current blocks (never a fresh object, a new block or a block leaving
//! the full or partial state) leaves what others freed of its blocks queued, its blocks held,
//! until it does. Reading the queue after every local free (as before) cost glibc-simple 5 %.
//!
//! When a thread exits its heap is *dead*: its empty blocks go back to the source, and it waits
//! on the orphan list to be adopted by the next new thread. Meanwhile a thread freeing into a
//! dead heap tends it (under the heap's `tending` flag, which adoption also takes), so objects
//! freed after their owner exited do not strand their blocks.

use std::cell::{Cell, UnsafeCell};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use super::block::{class_of, Block, FreeObj, BLOCK, CLASS_SIZE, NCLASSES};
use super::numa;
use super::outbox::Outbox;
use super::source;
use super::span;
use super::spin::Spin;
use super::tls;
use super::trace::{self, kind};

/// State only the heap's thread touches (or, for a dead heap, the thread holding `tending`).
struct Local {
    /// `current` by size in 8-byte words, for sizes up to [`DIRECT_MAX`]: malloc's fast path
    /// indexes it by `size.div_ceil(8)`, no class lookup in between. First, at the heap's
    /// start. Kept equal to `current` by [`Heap::set_current`].
    direct: [*mut Block; DIRECT],
    /// The block each class allocates from.
    current: [*mut Block; NCLASSES],
    /// Other blocks of each class with free objects (doubly linked through the headers).
    partial: [*mut Block; NCLASSES],
    /// This thread's frees of other heaps' objects, waiting to be handed over (outbox.rs).
    out: Outbox,
    /// Classes (bit per class) whose idle current block [`Heap::return_idle`] gave back; it
    /// gives back none of theirs again.
    returned: u64,
    /// This heap's span blocks (span.rs), linked through their headers' `next` and `prev`.
    spans: *mut Block,
    /// The span block allocations try first: the last one that had room.
    span_cur: *mut Block,
    /// Live objects of each span class (less [`span::SPAN_MIN_CLASS`]) in span blocks. Past
    /// [`SPAN_LIMIT`] a class gets a block of its own (see [`Heap::alloc`]).
    span_live: [u16; span::NSPAN],
}

/// Live objects of one class in span blocks beyond which the class takes its own block.
const SPAN_LIMIT: u16 = 8;

const _: () = assert!(NCLASSES <= 64);

pub struct Heap {
    local: UnsafeCell<Local>,
    /// Objects of our blocks freed by other threads.
    rfq: AtomicPtr<FreeObj>,
    /// The thread exited and nobody adopted the heap yet.
    dead: AtomicBool,
    /// Held by whoever works on a dead heap's `local`: a tending freer, or the adopter.
    tending: AtomicBool,
    /// Bytes of empty blocks it keeps warm while dead (counted in WARM_BYTES until adopted);
    /// touched by whoever holds `tending`.
    warm: Cell<usize>,
    /// Orphan list link, only touched under GLOBAL's lock.
    next_orphan: Cell<*mut Heap>,
    /// The spy's records of this thread (trace.rs).
    trace: trace::Buf,
}

/// What an idle block given back by [`Heap::return_idle`] keeps resident: its header's page.
const IDLE_WARM: usize = 4096;

/// Sizes malloc's fast path finds through [`Local::direct`].
pub const DIRECT_MAX: usize = 1024;
const DIRECT: usize = DIRECT_MAX / 8 + 1;

/// Dead heaps waiting for adoption. While there are few, a dying heap keeps its empty current
/// blocks (their pages warm, in their classes) for the next thread, which adopts it: a program
/// that replaces its threads (a pool, mimalloc-bench's mstressN: peak RSS 16.9 to 11.5 MiB,
/// glibc's 11.6) then cycles no block through the memory source, where a block kept for
/// another class holds the pages its last one touched. All dead heaps together keep at most
/// [`WARM_BUDGET`] (what their blocks' objects touched); the rest goes to the source, which
/// cools what it keeps. Beyond this many dead heaps, and on a machine of
/// several NUMA nodes (where an adopter may run on another node, so blocks go home), they go
/// back to the source as before.
const WARM_ORPHANS: usize = 4;

/// What all dead heaps may keep warm together: as much as the memory source keeps by default.
const WARM_BUDGET: usize = source::DEFAULT_KEEP_BLOCKS * BLOCK;
static WARM_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Whether a dying or tended dead heap keeps its empty current blocks (see [`WARM_ORPHANS`]).
fn keep_warm(orphans_at_most: usize) -> bool {
    numa::nodes() == 1 && GLOBAL.lock(|g| g.norphans) <= orphans_at_most
}

/// Takes `n` bytes of [`WARM_BUDGET`], if that much is left.
fn take_warm(n: usize) -> bool {
    WARM_BYTES
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
            (w + n <= WARM_BUDGET).then_some(w + n)
        })
        .is_ok()
}

struct Global {
    orphans: *mut Heap,
    /// How many heaps `orphans` lists.
    norphans: usize,
    /// Bump region for Heap structs.
    meta: usize,
    meta_end: usize,
    key: Option<libc::pthread_key_t>,
}

// SAFETY: the raw pointers are only followed under the spinlock.
unsafe impl Send for Global {}

static GLOBAL: Spin<Global> = Spin::new(Global {
    orphans: null_mut(),
    norphans: 0,
    meta: 0,
    meta_end: 0,
    key: None,
});

/// fork's prepare handler (fork.rs): no heap is being made or adopted while the process is copied.
pub(super) fn fork_lock() {
    GLOBAL.acquire();
}

/// fork's parent and child handlers.
pub(super) fn fork_unlock() {
    GLOBAL.release();
}

/// At thread exit (pthread key destructor): the heap dies and becomes an orphan.
unsafe extern "C" fn thread_exit(h: *mut libc::c_void) {
    let h = h.cast::<Heap>();
    trace::rec(kind::HEAP_DEAD, 0, h as usize, 0, 0, 0);
    // Not yet on the orphan list: it will make one more.
    let keep_current = keep_warm(WARM_ORPHANS - 1);
    // SAFETY: still this thread's heap: nobody else works on it until it is marked dead.
    unsafe {
        (*(*h).l()).out.flush();
        (*h).release_empty(keep_current);
        (*h).trace.flush();
        tls::set(0);
        (*h).dead.store(true, Ordering::Release);
    }
    GLOBAL.lock(|g| {
        // SAFETY: heaps are never freed; next_orphan is only touched under this lock.
        unsafe { (*h).next_orphan.set(g.orphans) };
        g.orphans = h;
        g.norphans += 1;
    });
}

/// The calling thread's heap, adopting an orphan or making one on first use.
#[inline]
pub fn mine() -> Option<*mut Heap> {
    let h = tls::get() as *mut Heap;
    if !h.is_null() {
        return Some(h);
    }
    new_for_thread()
}

/// The calling thread's heap's trace buffer, if it has a heap.
pub fn my_trace_buf() -> Option<*const trace::Buf> {
    let h = tls::get() as *const Heap;
    // SAFETY: heaps are never freed; only the address of the field is taken.
    (!h.is_null()).then(|| unsafe { &raw const (*h).trace })
}

/// The calling thread's heap if it has one (free() does not make one).
#[inline]
pub fn mine_if_any() -> *mut Heap {
    tls::get() as *mut Heap
}

#[cold]
fn new_for_thread() -> Option<*mut Heap> {
    let (h, adopted, key) = GLOBAL.lock(|g| {
        if g.key.is_none() {
            let mut k: libc::pthread_key_t = 0;
            // SAFETY: creating a key with a destructor that takes our heap pointer.
            if unsafe { libc::pthread_key_create(&mut k, Some(thread_exit)) } == 0 {
                g.key = Some(k);
            }
        }
        if !g.orphans.is_null() {
            let h = g.orphans;
            // SAFETY: orphans are valid heaps linked through next_orphan (under this lock).
            g.orphans = unsafe { (*h).next_orphan.get() };
            g.norphans -= 1;
            return (h, true, g.key);
        }
        let size = std::mem::size_of::<Heap>().next_multiple_of(64);
        if g.meta + size > g.meta_end {
            // SAFETY: a fresh anonymous mapping for heap structs, never unmapped.
            let m = unsafe { crate::sys::mmap_anon(BLOCK) };
            if m == libc::MAP_FAILED {
                return (null_mut(), false, g.key);
            }
            g.meta = m as usize;
            g.meta_end = g.meta + BLOCK;
        }
        let h = g.meta as *mut Heap;
        g.meta += size;
        // SAFETY: fresh, suitably aligned memory of the bump region, ours alone, and zero (a
        // new anonymous mapping; heaps are never freed, so no slot is used twice). Field by
        // field, leaving the spy's record buffer to the mapping's zeros (`Buf::new()` is all
        // zero bytes, trace.rs): written only while the spy is on, it is 6 of the heap's 9 KiB,
        // which need not be resident for every thread (glibc-thread: 4 KiB less at exit).
        unsafe {
            (&raw mut (*h).local).write(UnsafeCell::new(Local {
                direct: [null_mut(); DIRECT],
                current: [null_mut(); NCLASSES],
                partial: [null_mut(); NCLASSES],
                out: Outbox::new(),
                returned: 0,
                spans: null_mut(),
                span_cur: null_mut(),
                span_live: [0; span::NSPAN],
            }));
            (&raw mut (*h).rfq).write(AtomicPtr::new(null_mut()));
            (&raw mut (*h).dead).write(AtomicBool::new(false));
            (&raw mut (*h).tending).write(AtomicBool::new(false));
            (&raw mut (*h).warm).write(Cell::new(0));
            (&raw mut (*h).next_orphan).write(Cell::new(null_mut()));
        };
        (h, false, g.key)
    });
    if h.is_null() {
        return None;
    }
    if adopted {
        // SAFETY: heaps are never freed.
        let hh = unsafe { &*h };
        // Wait out a freer tending it, then keep others off: it is alive again.
        while hh
            .tending
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        hh.dead.store(false, Ordering::Relaxed);
        // Its warm blocks are a live heap's again.
        WARM_BYTES.fetch_sub(hh.warm.replace(0), Ordering::Relaxed);
        hh.tending.store(false, Ordering::Release);
    }
    tls::set(h as usize);
    // Outside our locks and with this thread's heap set: pthread_atfork may call malloc.
    super::fork::register();
    trace::init();
    trace::rec(kind::HEAP_START, 0, h as usize, adopted as usize, 0, 0);
    if let Some(k) = key {
        // SAFETY: a valid key; the value is only passed back to thread_exit.
        unsafe { libc::pthread_setspecific(k, h.cast()) };
    }
    Some(h)
}

impl Heap {
    /// The owner-only state. Raw, so no reference outlives the access it is used for.
    #[inline]
    fn l(&self) -> *mut Local {
        self.local.get()
    }

    /// malloc's fast path: an object of class `c` from the current block, or null when that
    /// needs more (no current block, a full one, or an empty free list with remote frees
    /// waiting: the caller's slow path calls [`Heap::alloc`]). No atomic read-modify-write, no
    /// lock, no call.
    ///
    /// # Safety
    /// Called by the heap's own thread.
    #[inline(always)]
    pub unsafe fn alloc_fast(&self, c: usize) -> *mut u8 {
        debug_assert!(c < NCLASSES);
        // SAFETY: the owner's state, on the owner's thread; `c` is a class (class_of's result),
        // so in bounds (no check on the fast path).
        let b = unsafe { *(*self.l()).current.get_unchecked(c) };
        // SAFETY: forwarded.
        unsafe { self.alloc_from(b) }
    }

    /// `alloc_fast` for `size` <= [`DIRECT_MAX`], through the direct table.
    ///
    /// # Safety
    /// Called by the heap's own thread.
    #[inline(always)]
    pub unsafe fn alloc_direct(&self, size: usize) -> *mut u8 {
        debug_assert!(size <= DIRECT_MAX);
        // SAFETY: the owner's state, on the owner's thread; size.div_ceil(8) < DIRECT.
        let b = unsafe { *(*self.l()).direct.get_unchecked(size.div_ceil(8)) };
        // SAFETY: forwarded.
        unsafe { self.alloc_from(b) }
    }

    /// An object of the current block `b` (null: none), or null when the slow path must run.
    ///
    /// # Safety
    /// Called by the heap's own thread; `b` is null or one of its current blocks.
    #[inline(always)]
    unsafe fn alloc_from(&self, b: *mut Block) -> *mut u8 {
        if b.is_null() {
            return null_mut();
        }
        // SAFETY: current blocks are this heap's, used by this thread only.
        let b = unsafe { &mut *b };
        if let Some(p) = b.pop() {
            return p;
        }
        // The free list ran out: remote frees first (they may refill it), then fresh objects.
        if self.has_remote() {
            return null_mut();
        }
        b.bump_take().unwrap_or(null_mut())
    }

    /// An object of class `c`.
    ///
    /// A class of 4 KiB and more with no block of its own and few live objects takes its
    /// objects from span blocks (span.rs), where their pages serve other classes once freed;
    /// past [`SPAN_LIMIT`] live objects it takes a block of its own, as smaller classes do,
    /// whose fast path needs no search. A program whose large objects come a few of a size at a
    /// time (espresso) then holds about the peak of their sum, and one that allocates many of
    /// a size (rptestN) keeps the speed of class blocks.
    ///
    /// # Safety
    /// Called by the heap's own thread.
    #[inline]
    pub unsafe fn alloc(&self, c: usize) -> Option<*mut u8> {
        // SAFETY: the owner's state, on the owner's thread.
        let b = unsafe { (*self.l()).current[c] };
        if b.is_null()
            && span::serves(c)
            // SAFETY: as above.
            && unsafe { (*self.l()).span_live[c - span::SPAN_MIN_CLASS] } < SPAN_LIMIT
        {
            // SAFETY: forwarded.
            return unsafe { self.alloc_span(c) };
        }
        if !b.is_null() {
            // SAFETY: current blocks are this heap's, used by this thread only.
            if let Some(p) = unsafe { (*b).take() } {
                return Some(p);
            }
        }
        // SAFETY: forwarded.
        unsafe { self.alloc_slow(c) }
    }

    #[cold]
    unsafe fn alloc_slow(&self, c: usize) -> Option<*mut u8> {
        // SAFETY: the owner's thread (this function's callers' contract) throughout.
        unsafe {
            (*self.l()).out.flush();
            self.drain_remote();
            let l = self.l();
            loop {
                let b = (*l).current[c];
                if !b.is_null() {
                    if let Some(p) = (*b).take() {
                        return Some(p);
                    }
                }
                // The current block is full: it leaves `current`, unlisted, until an object of
                // it is freed. Take a partial block, or a new one from the source.
                let next = (*l).partial[c];
                if !next.is_null() {
                    self.unlist(next);
                    self.set_current(c, next);
                    continue;
                }
                let (nb, fresh, node) = self.new_block(c)?;
                Block::init_small(nb, c, self as *const Heap as *mut Heap, node);
                trace::rec(
                    kind::BLOCK_GET,
                    c as u16,
                    self as *const Heap as usize,
                    nb as usize,
                    fresh as usize,
                    0,
                );
                self.set_current(c, nb);
            }
        }
    }

    /// A block for class `c` (`usize::MAX`: for spans) from the source of the node we run on
    /// now (checked per new block, not per malloc), whether it is fresh, and that node.
    ///
    /// # Safety
    /// As free_local.
    unsafe fn new_block(&self, c: usize) -> Option<(*mut Block, bool, usize)> {
        let node = numa::current();
        if let Some(b) = source::take_kept(node) {
            return Some((b, false, node));
        }
        // The process would grow by a block: first this heap's other classes' current blocks
        // with nothing live go back (their pages but the first given back to the OS), and the
        // source hands one straight back. A program that moves from one size to another then
        // holds the larger of its classes' peaks, not their sum (glibc-simple).
        // SAFETY: the caller's contract.
        unsafe { self.return_idle(c) };
        let (b, fresh) = source::get_block(node)?;
        Some((b, fresh, node))
    }

    /// An object of class `c` (`span::serves(c)`) from this heap's span blocks: the one that
    /// had room last, else (after remote frees, which may make room) the first with room, else a
    /// new one.
    ///
    /// # Safety
    /// Called by the heap's own thread.
    unsafe fn alloc_span(&self, c: usize) -> Option<*mut u8> {
        // SAFETY: the owner's thread (the caller's contract) throughout: the heap's state and
        // its span blocks are this thread's.
        unsafe {
            let p = self.span_take(c)?;
            (*self.l()).span_live[c - span::SPAN_MIN_CLASS] += 1;
            Some(p)
        }
    }

    /// `alloc_span`'s search.
    ///
    /// # Safety
    /// As alloc_span.
    unsafe fn span_take(&self, c: usize) -> Option<*mut u8> {
        // SAFETY: as alloc_span.
        unsafe {
            let l = self.l();
            let cur = (*l).span_cur;
            if !cur.is_null() {
                if let Some(p) = span::take(cur, c) {
                    return Some(p);
                }
            }
            if self.has_remote() {
                self.drain_remote();
            }
            let mut b = (*l).spans;
            while !b.is_null() {
                if let Some(p) = span::take(b, c) {
                    (*l).span_cur = b;
                    return Some(p);
                }
                b = (*b).next;
            }
            let (nb, fresh, node) = self.new_block(usize::MAX)?;
            span::init(nb, self as *const Heap as *mut Heap, node);
            trace::rec(
                kind::BLOCK_GET,
                span::SPAN as u16,
                self as *const Heap as usize,
                nb as usize,
                fresh as usize,
                0,
            );
            (*nb).prev = null_mut();
            (*nb).next = (*l).spans;
            if !(*l).spans.is_null() {
                (*(*l).spans).prev = nb;
            }
            (*l).spans = nb;
            (*l).span_cur = nb;
            span::take(nb, c)
        }
    }

    /// Frees `p`, an object of our span block `b` (or a pointer memalign handed out inside
    /// one); an emptied block other than the current one goes back to the source.
    ///
    /// # Safety
    /// As free_local.
    #[inline(never)]
    unsafe fn free_span(&self, b: *mut Block, p: usize) {
        // SAFETY: the caller's contract.
        unsafe {
            let (c, empty) = span::give(b, p);
            let l = self.l();
            (*l).span_live[c - span::SPAN_MIN_CLASS] -= 1;
            if empty && (*l).span_cur != b {
                self.drop_span(b);
            }
        }
    }

    /// Unlinks span block `b` (empty) and gives it back to the source.
    ///
    /// # Safety
    /// As free_local; `b` is one of this heap's span blocks, empty.
    unsafe fn drop_span(&self, b: *mut Block) {
        // SAFETY: the caller's contract.
        unsafe {
            let l = self.l();
            let (p, n) = ((*b).prev, (*b).next);
            if p.is_null() {
                (*l).spans = n;
            } else {
                (*p).next = n;
            }
            if !n.is_null() {
                (*n).prev = p;
            }
            if (*l).span_cur == b {
                (*l).span_cur = null_mut();
            }
            source::put_block(b);
        }
    }

    /// Frees an object of one of our blocks.
    ///
    /// # Safety
    /// The heap's own thread (or the tender of a dead heap); `p` a live object of block `b`,
    /// which is one of this heap's.
    #[inline]
    pub unsafe fn free_local(&self, b: *mut Block, p: usize) {
        // SAFETY: the caller's contract.
        unsafe {
            let bb = &mut *b;
            if span::is_span(bb) {
                return self.free_span(b, p);
            }
            bb.give(bb.obj_of(p));
            // A block's class is below NCLASSES (init_small): no bounds check on the fast path.
            if *(*self.l()).current.get_unchecked(bb.class) == b || (bb.listed && bb.used != 0) {
                return;
            }
            self.block_changed(b);
        }
    }

    /// A block not current for its class became empty (back to the source) or stopped being
    /// full (listed as partial). Rare: out of free's inlined path.
    ///
    /// # Safety
    /// As free_local.
    #[cold]
    #[inline(never)]
    unsafe extern "C" fn block_changed(&self, b: *mut Block) {
        // SAFETY: the caller's contract.
        unsafe {
            let bb = &*b;
            if bb.used == 0 {
                if bb.listed {
                    self.unlist(b);
                }
                source::put_block(b);
            } else if !bb.listed {
                self.list(b);
            }
        }
    }

    /// The calling thread (this heap's) frees `p` (`size` bytes), an object of `owner`'s
    /// blocks: it waits in this heap's outbox, handed over in batches.
    ///
    /// # Safety
    /// Called by the heap's own thread; `p` is a live object of `owner`'s, not this heap's.
    #[inline]
    pub unsafe fn send_remote(&self, owner: *mut Heap, p: usize, size: usize) {
        // SAFETY: the owner's state, on the owner's thread; `p` as the caller says.
        unsafe { (*self.l()).out.put(owner, p, size) };
    }

    /// Another thread (one without a heap) frees `p`, an object of one of our blocks.
    pub fn free_remote(&self, p: usize) {
        let o = p as *mut FreeObj;
        // SAFETY: `p` is dead and at least 8 bytes: its first word becomes the link.
        unsafe { (*o).next = null_mut() };
        self.free_remote_list(o, o);
    }

    /// Another thread frees the objects `head` .. `tail` (linked through their first words,
    /// `tail`'s link unset), objects of our blocks: one CAS puts them all on our queue.
    pub fn free_remote_list(&self, head: *mut FreeObj, tail: *mut FreeObj) {
        let mut top = self.rfq.load(Ordering::Relaxed);
        loop {
            // SAFETY: `tail` is dead and at least 8 bytes: its first word becomes the link.
            unsafe { (*tail).next = top };
            match self
                .rfq
                .compare_exchange_weak(top, head, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(h) => top = h,
            }
        }
        if self.dead.load(Ordering::Acquire) {
            self.tend();
        }
    }

    /// A dead heap: whoever gets `tending` frees what is queued and returns empty blocks.
    #[cold]
    fn tend(&self) {
        if self
            .tending
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return; // someone else is at it; our object waits in the queue
        }
        if self.dead.load(Ordering::Relaxed) {
            // SAFETY: dead (its thread is gone) and `tending` held: adoption waits for us, so
            // this thread alone works on the heap's state.
            unsafe { self.release_empty(keep_warm(WARM_ORPHANS)) };
        }
        self.tending.store(false, Ordering::Release);
    }

    #[inline]
    pub fn has_remote(&self) -> bool {
        !self.rfq.load(Ordering::Relaxed).is_null()
    }

    /// Frees everything other threads queued for us. Only the owner (or tender) takes from the
    /// queue, and it takes all of it at once, so pushes never race a pop (no ABA).
    ///
    /// # Safety
    /// As free_local.
    #[cold]
    pub unsafe fn drain_remote(&self) {
        let mut o = self.rfq.swap(null_mut(), Ordering::Acquire);
        while !o.is_null() {
            // SAFETY: queued objects are dead objects of our blocks, linked by free_remote.
            let next = unsafe { (*o).next };
            let p = o as usize;
            // SAFETY: the caller's contract; the object is one of ours.
            unsafe { self.free_local(Block::of(p), p) };
            o = next;
        }
    }

    /// Gives the current blocks of classes other than `c` that hold nothing live back to the
    /// source, cold but for their first page. Called only when class `c` needs a new block and
    /// the source keeps none, and a class loses its block this way once (espresso's classes
    /// come and go: giving theirs back each time sent 115 000 blocks round the source, 3 % of
    /// its time).
    ///
    /// # Safety
    /// As free_local.
    unsafe fn return_idle(&self, c: usize) {
        // SAFETY: the caller's contract: the heap's state is this thread's.
        unsafe {
            let l = self.l();
            for k in 0..NCLASSES {
                let b = (*l).current[k];
                // A block that touched only its first page would give nothing back.
                if k == c
                    || b.is_null()
                    || (*b).used != 0
                    || (*l).returned & (1 << k) != 0
                    || (*b).touched() <= IDLE_WARM
                {
                    continue;
                }
                (*l).returned |= 1 << k;
                self.set_current(k, null_mut());
                source::put_block_warm(b, IDLE_WARM);
            }
        }
    }

    /// Frees queued objects and gives current blocks with nothing live back to the source, so
    /// a dead heap holds only blocks with live objects; with `keep_current` (see
    /// [`WARM_ORPHANS`]) it keeps them instead, warm, while [`WARM_BUDGET`] allows.
    ///
    /// # Safety
    /// As free_local.
    unsafe fn release_empty(&self, keep_current: bool) {
        // SAFETY: the caller's contract.
        unsafe {
            self.drain_remote();
            // Counted afresh each time (a dead heap is tended again and again).
            WARM_BYTES.fetch_sub(self.warm.replace(0), Ordering::Relaxed);
            let l = self.l();
            for c in 0..NCLASSES {
                let b = (*l).current[c];
                if b.is_null() || (*b).used != 0 {
                    continue;
                }
                let t = (*b).touched();
                if keep_current && take_warm(t) {
                    self.warm.set(self.warm.get() + t);
                } else {
                    self.set_current(c, null_mut());
                    source::put_block(b);
                }
            }
            let mut b = (*l).spans;
            while !b.is_null() {
                let next = (*b).next;
                if (*b).used == 0 {
                    let t = (*b).touched();
                    if keep_current && take_warm(t) {
                        self.warm.set(self.warm.get() + t);
                    } else {
                        self.drop_span(b);
                    }
                }
                b = next;
            }
        }
    }

    /// Makes `b` (null: none) class `c`'s current block, in `current` and `direct`.
    ///
    /// # Safety
    /// As free_local; `b` is null or this heap's, of class `c`.
    unsafe fn set_current(&self, c: usize, b: *mut Block) {
        // SAFETY: the caller's contract.
        let l = unsafe { &mut *self.l() };
        l.current[c] = b;
        if CLASS_SIZE[c] <= DIRECT_MAX {
            // The word counts whose class is `c`: classes up to DIRECT_MAX are 8-multiples.
            let first = if c == 0 { 0 } else { CLASS_SIZE[c - 1] / 8 + 1 };
            for w in first..=CLASS_SIZE[c] / 8 {
                debug_assert_eq!(class_of(w * 8), c);
                l.direct[w] = b;
            }
        }
    }

    /// # Safety
    /// As free_local; `b` is this heap's and unlisted.
    unsafe fn list(&self, b: *mut Block) {
        // SAFETY: `b` and the list's blocks are this heap's; only this thread links them.
        unsafe {
            let l = self.l();
            let c = (*b).class;
            let head = (*l).partial[c];
            (*b).prev = null_mut();
            (*b).next = head;
            if !head.is_null() {
                (*head).prev = b;
            }
            (*l).partial[c] = b;
            (*b).listed = true;
        }
    }

    /// # Safety
    /// As free_local; `b` is this heap's and listed.
    unsafe fn unlist(&self, b: *mut Block) {
        // SAFETY: as in list.
        unsafe {
            let l = self.l();
            let c = (*b).class;
            let (p, n) = ((*b).prev, (*b).next);
            if p.is_null() {
                (*l).partial[c] = n;
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
