//! The `ptmalloc` provider: our own allocator after seed 002 (MPC's): per-thread allocation
//! chains without locks ([`heap`]), 2 MiB macro-blocks split by size class ([`block`]), a
//! remote-free queue for objects freed by another thread, and a memory source ([`source`]) that
//! alone decides when memory goes back to the OS, the only time events fire.
//!
//! It becomes the process's malloc by symbol precedence: libmpi_abi.so (or a program) expands
//! [`crate::export_malloc!`], which defines malloc, free, calloc, realloc, reallocarray,
//! memalign, posix_memalign, aligned_alloc, valloc, pvalloc, malloc_usable_size, and the
//! interposed munmap/mremap/madvise/brk/sbrk/shmdt that report the application's own releases.
//! From Rust, [`PtMalloc`] is a `#[global_allocator]`.

mod block;
mod fork;
mod heap;
mod numa;
mod outbox;
mod pressure;
mod shared;
mod source;
mod span;
mod spin;
mod tls;
pub mod trace;

use std::alloc::{GlobalAlloc, Layout};
use std::ptr::null_mut;

use block::{Block, MAGIC_HUGE, MAGIC_SMALL, MAX_SMALL};
pub use pressure::set_target;
pub use shared::range as shared_range;
pub use source::{
    node_stats, numa_nodes, policy, set_policy, stats, NodeStats, Policy, Stats,
    DEFAULT_KEEP_BLOCKS,
};

const MIN_ALIGN: usize = 16;

/// librmalloc.so's defaults, from its constructor: no node-shared range of large blocks (no MPI
/// peer reads it) unless `MEMHOOK_PTMALLOC_SHARED=1` asks for it.
pub fn preload_defaults() {
    shared::set_default(false);
}

fn set_errno(e: i32) {
    // SAFETY: this thread's errno slot.
    unsafe { *libc::__errno_location() = e };
}

/// malloc(3). The fast path is a pop from the current block of this thread's heap, found (up to
/// 1 KiB) in the heap's direct table by the size in words; everything else (a first call, an
/// empty free list with remote frees to drain, a full block, large
/// sizes, the spy) is malloc_slow's.
#[inline(always)]
pub fn malloc(size: usize) -> *mut u8 {
    if size <= MAX_SMALL && !trace::on() {
        let h = heap::mine_if_any();
        if !h.is_null() {
            // SAFETY: the calling thread's own heap (heaps are never freed), on its thread.
            let p = unsafe {
                if size <= heap::DIRECT_MAX {
                    (*h).alloc_direct(size)
                } else {
                    (*h).alloc_fast(block::class_of(size))
                }
            };
            if !p.is_null() {
                return p;
            }
        }
    }
    malloc_slow(size)
}

// `extern "C"`, so calls to it cannot unwind: malloc's exported wrapper then needs no landing
// pad around the call and jumps to it as a tail call, with no stack frame on the fast path.
#[cold]
#[inline(never)]
extern "C" fn malloc_slow(size: usize) -> *mut u8 {
    let p = alloc(size);
    if p.is_null() {
        set_errno(libc::ENOMEM);
    } else if trace::on() {
        trace_malloc(p, size);
    }
    p
}

/// The spy's record of an allocation: its chain, class and real size from its header.
#[cold]
fn trace_malloc(p: *mut u8, size: usize) {
    // SAFETY: `p` is a live allocation of ours: its header is there.
    let b = unsafe { &*Block::of(p as usize) };
    if b.magic == MAGIC_HUGE {
        trace::rec(
            trace::kind::MALLOC,
            trace::HUGE,
            0,
            p as usize,
            size,
            b.map_len,
        );
    } else {
        let owner = b.owner() as usize;
        let (class, real) = class_and_size(b, p as usize);
        trace::rec(
            trace::kind::MALLOC,
            class as u16,
            owner,
            p as usize,
            size,
            real,
        );
    }
}

/// The spy's record of a free, before it happens.
#[cold]
fn trace_free(p: *mut u8) {
    // SAFETY: `p` is a live allocation of ours: its header is there.
    let b = unsafe { &*Block::of(p as usize) };
    if b.magic == MAGIC_HUGE {
        trace::rec(trace::kind::FREE, trace::HUGE, 0, p as usize, 0, 0);
    } else {
        let owner = b.owner();
        let remote = owner != heap::mine_if_any();
        trace::rec(
            trace::kind::FREE,
            class_and_size(b, p as usize).0 as u16,
            owner as usize,
            p as usize,
            remote as usize,
            0,
        );
    }
}

/// The size class and object size of `p`, a live object of small block `b` (class or span).
fn class_and_size(b: &Block, p: usize) -> (usize, usize) {
    if span::is_span(b) {
        // SAFETY: `p` points into a live object of this span block.
        let c = unsafe { span::object(b, p) }.1;
        (c, block::CLASS_SIZE[c])
    } else {
        (b.class, b.obj_size)
    }
}

#[inline(always)]
fn alloc(size: usize) -> *mut u8 {
    if size <= MAX_SMALL {
        let Some(h) = heap::mine() else {
            return null_mut();
        };
        // SAFETY: the calling thread's own heap (heaps are never freed), on its thread.
        unsafe {
            let h = &*h;
            if h.has_remote() {
                h.drain_remote();
            }
            return h.alloc(block::class_of(size)).unwrap_or(null_mut());
        }
    }
    source::huge_alloc(size, MIN_ALIGN).map_or(null_mut(), |(p, _)| p)
}

/// free(3). The fast path (our own thread's object) is a push on its block's free list.
///
/// # Safety
/// `p` is null or a live pointer from this allocator.
#[inline(always)]
pub unsafe fn free(p: *mut u8) {
    if p.is_null() {
        return;
    }
    if trace::on() {
        trace_free(p);
    }
    let b = Block::of(p as usize);
    let me = heap::mine_if_any();
    // SAFETY: every pointer we hand out has its block header there (block.rs). A small block's
    // owner is a heap, a huge one's HUGE_OWNER: equal to ours only for our own small objects.
    if unsafe { (*b).owner() } == me {
        // SAFETY: our own heap, on its own thread; `p` is a live object of its block `b`.
        unsafe {
            let h = &*me;
            h.free_local(b, p as usize);
        }
        return;
    }
    // SAFETY: forwarded.
    unsafe { free_other(b, p) }
}

/// free of a large allocation, or of another thread's object: out of free's inlined path.
///
/// # Safety
/// As free; `b` is `p`'s header.
#[cold]
#[inline(never)]
unsafe extern "C" fn free_other(b: *mut Block, p: *mut u8) {
    // SAFETY: every pointer we hand out has its block header there.
    let magic = unsafe { (*b).magic };
    if magic == MAGIC_HUGE {
        source::huge_free(b);
        return;
    }
    debug_assert_eq!(
        magic, MAGIC_SMALL,
        "free() of a pointer this allocator did not give"
    );
    // SAFETY: a live small block's header; heaps are never freed (orphans are adopted), so
    // the owner is valid, and `p` is one of its objects, not ours.
    // A thread that only frees (xmalloc-testN's releasers) gets a heap too, for its outbox.
    unsafe {
        let owner = (*b).owner();
        match heap::mine() {
            Some(me) => (*me).send_remote(owner, p as usize, (*b).obj_size),
            None => (*owner).free_remote(p as usize),
        }
    }
}

/// The NUMA node whose memory source the small object `p` came from (the node written in its
/// macro-block's header); None for a large allocation.
///
/// # Safety
/// `p` is a live pointer from this allocator.
pub unsafe fn node_of(p: *const u8) -> Option<usize> {
    // SAFETY: as in free.
    let b = unsafe { &*Block::of(p as usize) };
    (b.magic == MAGIC_SMALL).then_some(b.node as usize)
}

/// malloc_usable_size(3).
///
/// # Safety
/// `p` is null or a live pointer from this allocator.
pub unsafe fn usable_size(p: *const u8) -> usize {
    if p.is_null() {
        return 0;
    }
    let b = Block::of(p as usize);
    // SAFETY: as in free.
    let bb = unsafe { &*b };
    if bb.magic == MAGIC_HUGE {
        bb.map_base + bb.map_len - p as usize
    } else if span::is_span(bb) {
        // SAFETY: `p` points into a live object of this span block.
        let (start, c) = unsafe { span::object(b, p as usize) };
        start + block::CLASS_SIZE[c] - p as usize
    } else {
        bb.obj_start(p as usize) + bb.obj_size - p as usize
    }
}

/// calloc(3).
pub fn calloc(n: usize, size: usize) -> *mut u8 {
    let Some(total) = n.checked_mul(size) else {
        set_errno(libc::ENOMEM);
        return null_mut();
    };
    if total > MAX_SMALL {
        return match source::huge_alloc(total, MIN_ALIGN) {
            Some((p, fresh)) => {
                if !fresh {
                    // SAFETY: `total` bytes of a new allocation.
                    unsafe { std::ptr::write_bytes(p, 0, total) };
                }
                if trace::on() {
                    trace_malloc(p, total);
                }
                p
            }
            None => {
                set_errno(libc::ENOMEM);
                null_mut()
            }
        };
    }
    let p = malloc(total);
    if !p.is_null() {
        // SAFETY: `total` bytes of a new allocation.
        unsafe { std::ptr::write_bytes(p, 0, total) };
    }
    p
}

/// realloc(3).
///
/// # Safety
/// `p` is null or a live pointer from this allocator.
pub unsafe fn realloc(p: *mut u8, size: usize) -> *mut u8 {
    if p.is_null() {
        return malloc(size);
    }
    // SAFETY: forwarded.
    let have = unsafe { usable_size(p) };
    if size <= have && (size > MAX_SMALL || have <= 2 * size.max(MIN_ALIGN)) {
        if trace::on() {
            trace_free(p);
            trace_malloc(p, size);
        }
        return p; // fits, and not wastefully
    }
    if size > have && have > MAX_SMALL {
        let b = Block::of(p as usize);
        // SAFETY: a live huge allocation's header.
        if unsafe { (*b).magic } == MAGIC_HUGE {
            let traced = trace::on();
            if traced {
                trace_free(p);
            }
            if let Some(q) = source::huge_grow(b, p, size) {
                if traced {
                    trace_malloc(q, size);
                }
                return q; // grown without copying
            }
            if traced {
                trace_malloc(p, have); // still there: its free comes below
            }
        }
    }
    let q = malloc(size);
    if !q.is_null() {
        // SAFETY: both are live allocations of at least min(have, size) bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(p, q, have.min(size));
            free(p);
        }
    }
    q
}

/// memalign(3) / aligned_alloc(3): `align` must be a power of two.
pub fn memalign(align: usize, size: usize) -> *mut u8 {
    if !align.is_power_of_two() {
        set_errno(libc::EINVAL);
        return null_mut();
    }
    if align <= MIN_ALIGN {
        // Sizes up to 8 get the 8-byte class, 8-aligned; from `align` up every class is 16-aligned.
        return malloc(size.max(align));
    }
    // Small: over-allocate and point inside the object (free finds the object's start).
    // Huge: the source aligns the mapping.
    let p = match size.checked_add(align - 1) {
        Some(n) if n <= MAX_SMALL => {
            let o = alloc(n);
            if o.is_null() {
                o
            } else {
                let p = (o as usize).next_multiple_of(align);
                if p != o as usize {
                    // SAFETY: `o` is a live object of one of this thread's current blocks (alloc
                    // takes only from those), whose header only this thread writes.
                    unsafe { (*Block::of(p)).interior = true };
                }
                p as *mut u8
            }
        }
        Some(_) => source::huge_alloc(size, align).map_or(null_mut(), |(p, _)| p),
        None => null_mut(),
    };
    if p.is_null() {
        set_errno(libc::ENOMEM);
    } else if trace::on() {
        trace_malloc(p, size);
    }
    p
}

/// posix_memalign(3).
///
/// # Safety
/// `out` is valid for a pointer write.
pub unsafe fn posix_memalign(out: *mut *mut u8, align: usize, size: usize) -> i32 {
    if !align.is_power_of_two() || align < std::mem::size_of::<usize>() {
        return libc::EINVAL;
    }
    let p = memalign(align, size);
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller's contract.
    unsafe { *out = p };
    0
}

/// For `#[global_allocator]` use from Rust.
pub struct PtMalloc;

// SAFETY: alloc returns memory of at least layout.size() bytes aligned to layout.align() (a
// request of at least `align` <= 16 bytes gets a 16-byte multiple class or the 8-aligned 8-byte
// one for align <= 8; larger alignments via memalign), or null; dealloc/realloc take only
// pointers it returned.
unsafe impl GlobalAlloc for PtMalloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if l.align() <= MIN_ALIGN {
            alloc(l.size().max(l.align()))
        } else {
            memalign(l.align(), l.size())
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, _l: Layout) {
        // SAFETY: `p` came from alloc.
        unsafe { free(p) }
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if l.align() <= MIN_ALIGN {
            calloc(1, l.size().max(l.align()))
        } else {
            let p = memalign(l.align(), l.size());
            if !p.is_null() {
                // SAFETY: l.size() bytes just allocated.
                unsafe { std::ptr::write_bytes(p, 0, l.size()) };
            }
            p
        }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if l.align() <= MIN_ALIGN {
            // SAFETY: `p` came from alloc.
            unsafe { realloc(p, new.max(l.align())) }
        } else {
            let q = memalign(l.align(), new);
            if !q.is_null() {
                // SAFETY: both live, at least min(old, new) bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(p, q, l.size().min(new));
                    free(p);
                }
            }
            q
        }
    }
}

/// Active when the process's malloc is ours (not libc's: e.g. libmpi_abi.so was dlopen'ed after
/// libc's malloc was bound).
pub fn install() -> Result<(), &'static str> {
    // SAFETY: looking up a symbol by a NUL-terminated name.
    let m = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"malloc".as_ptr()) };
    // SAFETY: `info` is written by dladdr.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables.
    if m.is_null() || unsafe { libc::dladdr(m, &mut info) } == 0 || info.dli_fname.is_null() {
        return Err("cannot tell which malloc the process uses");
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let file = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_bytes();
    if file.windows(7).any(|w| w == b"libc.so") {
        return Err(
            "the process's malloc is libc's, not libmpi's (was libmpi loaded late, with dlopen?)",
        );
    }
    Ok(())
}

#[doc(hidden)]
pub fn __deliver(source: u32, addr: usize, len: usize) {
    if let Some(s) = crate::events::Source::from_u32(source) {
        crate::events::notify(s, addr, len);
    }
}

/// The exports behind [`crate::export_malloc!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __memhook_export_ptmalloc {
    () => {
        $crate::__memhook_interpose_release_calls!(
            $crate::ptmalloc::__deliver,
            $crate::sys,
            $crate::interpose
        );
        $crate::__memhook_export_malloc_family!();
    };
}

/// The malloc family alone (no release-call interposition): librmalloc.so's exports.
#[doc(hidden)]
#[macro_export]
macro_rules! __memhook_export_malloc_family {
    () => {
        /// malloc(3) from memhook's allocator.
        #[no_mangle]
        pub extern "C" fn malloc(size: usize) -> *mut $crate::__libc::c_void {
            $crate::ptmalloc::malloc(size).cast()
        }

        /// free(3).
        ///
        /// # Safety
        /// As free(3).
        #[no_mangle]
        pub unsafe extern "C" fn free(p: *mut $crate::__libc::c_void) {
            // SAFETY: the caller's contract.
            unsafe { $crate::ptmalloc::free(p.cast()) }
        }

        /// cfree (old glibc name of free).
        ///
        /// # Safety
        /// As free(3).
        #[no_mangle]
        pub unsafe extern "C" fn cfree(p: *mut $crate::__libc::c_void) {
            // SAFETY: the caller's contract.
            unsafe { $crate::ptmalloc::free(p.cast()) }
        }

        /// calloc(3).
        #[no_mangle]
        pub extern "C" fn calloc(n: usize, size: usize) -> *mut $crate::__libc::c_void {
            $crate::ptmalloc::calloc(n, size).cast()
        }

        /// realloc(3).
        ///
        /// # Safety
        /// As realloc(3).
        #[no_mangle]
        pub unsafe extern "C" fn realloc(
            p: *mut $crate::__libc::c_void,
            size: usize,
        ) -> *mut $crate::__libc::c_void {
            // SAFETY: the caller's contract.
            unsafe { $crate::ptmalloc::realloc(p.cast(), size).cast() }
        }

        /// reallocarray(3) (glibc's would call its own realloc).
        ///
        /// # Safety
        /// As reallocarray(3).
        #[no_mangle]
        pub unsafe extern "C" fn reallocarray(
            p: *mut $crate::__libc::c_void,
            n: usize,
            size: usize,
        ) -> *mut $crate::__libc::c_void {
            match n.checked_mul(size) {
                // SAFETY: the caller's contract.
                Some(t) => unsafe { $crate::ptmalloc::realloc(p.cast(), t).cast() },
                None => {
                    // SAFETY: this thread's errno slot.
                    unsafe { *$crate::__libc::__errno_location() = $crate::__libc::ENOMEM };
                    std::ptr::null_mut()
                }
            }
        }

        /// memalign(3).
        #[no_mangle]
        pub extern "C" fn memalign(align: usize, size: usize) -> *mut $crate::__libc::c_void {
            $crate::ptmalloc::memalign(align, size).cast()
        }

        /// aligned_alloc(3).
        #[no_mangle]
        pub extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut $crate::__libc::c_void {
            $crate::ptmalloc::memalign(align, size).cast()
        }

        /// valloc(3).
        #[no_mangle]
        pub extern "C" fn valloc(size: usize) -> *mut $crate::__libc::c_void {
            $crate::ptmalloc::memalign(4096, size).cast()
        }

        /// pvalloc(3).
        #[no_mangle]
        pub extern "C" fn pvalloc(size: usize) -> *mut $crate::__libc::c_void {
            $crate::ptmalloc::memalign(4096, size.next_multiple_of(4096)).cast()
        }

        /// posix_memalign(3).
        ///
        /// # Safety
        /// As posix_memalign(3).
        #[no_mangle]
        pub unsafe extern "C" fn posix_memalign(
            out: *mut *mut $crate::__libc::c_void,
            align: usize,
            size: usize,
        ) -> $crate::__libc::c_int {
            // SAFETY: the caller's contract.
            unsafe { $crate::ptmalloc::posix_memalign(out.cast(), align, size) }
        }

        /// malloc_usable_size(3).
        ///
        /// # Safety
        /// As malloc_usable_size(3).
        #[no_mangle]
        pub unsafe extern "C" fn malloc_usable_size(p: *mut $crate::__libc::c_void) -> usize {
            // SAFETY: the caller's contract.
            unsafe { $crate::ptmalloc::usable_size(p.cast()) }
        }
    };
}
