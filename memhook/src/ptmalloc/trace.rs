//! The allocator spy (seed 002's trace tool): with `MEMHOOK_PTMALLOC_TRACE=FILE`, fixed-size
//! binary records of the POSIX interface (malloc, free: local or remote), the thread pool (heaps
//! made, adopted, dying) and the memory source (macro-blocks and large mappings taken and given
//! back) go to FILE; `ptmalloc-spy FILE` (memhook/rmalloc/src/bin/ptmalloc-spy.rs) reads them back.
//!
//! Cheap: off, it costs malloc and free one relaxed load. On, each thread fills a 128-record
//! buffer of its own heap without locks or system calls and writes it with one `write` (the file
//! is `O_APPEND`) when full and at thread exit; threads without a heap share a spin-locked one.
//! At exit the exiting thread's buffer and the shared one are written; records of threads still
//! running then are lost (at most 127 each). A forked child stops tracing.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};

use super::spin::Spin;

/// One record, as written to the file (native byte order).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Rec {
    pub kind: u16,
    /// Size class, or [`HUGE`].
    pub class: u16,
    /// Kernel thread id of the recording thread.
    pub tid: u32,
    /// Time stamp counter (x86-64; 0 elsewhere): threads write their buffers at different
    /// times, the reader sorts by it.
    pub ts: u64,
    /// The chain (heap) concerned, 0 for none (large allocations).
    pub heap: u64,
    pub a: u64,
    pub b: u64,
    pub c: u64,
}

pub const REC_SIZE: usize = std::mem::size_of::<Rec>();
const _: () = assert!(REC_SIZE == 48);

/// The class of large allocations.
pub const HUGE: u16 = u16::MAX;
/// The class of a span block's records (span.rs): its objects' records carry their own classes.
pub const SPAN: u16 = u16::MAX - 1;

/// Record kinds (a, b, c as noted).
pub mod kind {
    /// malloc & co.: a = pointer, b = bytes requested, c = bytes really given.
    pub const MALLOC: u16 = 1;
    /// free: a = pointer, b = 1 when freed by another thread than the owner's.
    pub const FREE: u16 = 2;
    /// A thread's heap: a = 1 when adopted from an exited thread, 0 when new.
    pub const HEAP_START: u16 = 3;
    /// A thread exits; its heap dies.
    pub const HEAP_DEAD: u16 = 4;
    /// A macro-block goes to a heap: a = block, b = 1 when freshly mapped, 0 from the cache.
    pub const BLOCK_GET: u16 = 5;
    /// A heap's empty macro-block goes back: a = block, b = 1 when unmapped, 0 when kept.
    pub const BLOCK_PUT: u16 = 6;
    /// A large mapping is taken: a = base, b = length, c = 1 when fresh from the OS, 2 when
    /// it is a realloc's grown mapping (its old one was put with c = 2).
    pub const HUGE_GET: u16 = 7;
    /// A large mapping is freed: a = base, b = length, c = 1 when given back to the OS, 0 when
    /// kept, 2 when a realloc grows it.
    pub const HUGE_PUT: u16 = 8;
}

const BUF: usize = 128;

/// A buffer of records (6 KiB) (one per heap, in the heap; one shared).
pub struct Buf {
    n: UnsafeCell<usize>,
    recs: UnsafeCell<[Rec; BUF]>,
}

impl Default for Buf {
    fn default() -> Self {
        Buf::new()
    }
}

// SAFETY: a heap's buffer is only touched by its thread (or its tender, which holds `tending`);
// the shared one only under its spinlock.
unsafe impl Sync for Buf {}

impl Buf {
    pub const fn new() -> Self {
        const Z: Rec = Rec {
            kind: 0,
            class: 0,
            tid: 0,
            ts: 0,
            heap: 0,
            a: 0,
            b: 0,
            c: 0,
        };
        Buf {
            n: UnsafeCell::new(0),
            recs: UnsafeCell::new([Z; BUF]),
        }
    }

    /// # Safety
    /// The caller is the buffer's only user now.
    unsafe fn push(&self, r: Rec) {
        // SAFETY: the caller's contract.
        unsafe {
            let n = &mut *self.n.get();
            (*self.recs.get())[*n] = r;
            *n += 1;
            if *n == BUF {
                self.flush();
            }
        }
    }

    /// Writes the records out.
    ///
    /// # Safety
    /// As push.
    pub unsafe fn flush(&self) {
        // SAFETY: the caller's contract.
        unsafe {
            let n = &mut *self.n.get();
            if *n > 0 && ON.load(Ordering::Relaxed) {
                let fd = FD.load(Ordering::Relaxed);
                // One write of whole records to an O_APPEND file: records never interleave.
                libc::write(fd, self.recs.get().cast(), *n * REC_SIZE);
            }
            *n = 0;
        }
    }

    /// Drops what is buffered (a forked child's copy of its parent's records).
    ///
    /// # Safety
    /// As push.
    pub unsafe fn clear(&self) {
        // SAFETY: the caller's contract.
        unsafe { *self.n.get() = 0 };
    }
}

/// Whether records are being taken. Read on every malloc and free.
pub static ON: AtomicBool = AtomicBool::new(false);
static FD: AtomicI32 = AtomicI32::new(-1);
static STATE: AtomicU8 = AtomicU8::new(0); // 0: not looked at, 1: looking, 2: decided
static SHARED: Spin<()> = Spin::new(());
static SHARED_BUF: Buf = Buf::new();

/// Reads the environment once (at the first heap's creation): opens the file when asked.
pub fn init() {
    if STATE.load(Ordering::Acquire) == 2 {
        return;
    }
    if STATE
        .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    // SAFETY: getenv reads the environment without allocating; the name is NUL-terminated.
    let path = unsafe { libc::getenv(c"MEMHOOK_PTMALLOC_TRACE".as_ptr()) };
    // SAFETY: a non-null getenv result is a NUL-terminated string; open does not allocate.
    if !path.is_null() && unsafe { *path } != 0 {
        let fd = unsafe {
            libc::open(
                path,
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND | libc::O_CLOEXEC,
                0o644,
            )
        };
        if fd >= 0 {
            FD.store(fd, Ordering::Relaxed);
            ON.store(true, Ordering::Release);
            // SAFETY: registering an extern "C" function with no arguments (glibc's atexit
            // has static room for the first handlers: no allocation).
            unsafe { libc::atexit(at_exit) };
        }
    }
    STATE.store(2, Ordering::Release);
}

#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

fn tid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

/// Records `r` (its tid is filled in) in this thread's heap buffer, or the shared one.
#[cold]
pub fn record(mut r: Rec) {
    r.tid = tid();
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86-64.
        r.ts = unsafe { std::arch::x86_64::_rdtsc() };
    }
    match super::heap::my_trace_buf() {
        // SAFETY: this thread's own heap's buffer.
        Some(b) => unsafe { (*b).push(r) },
        // SAFETY: the shared buffer, under its lock.
        None => SHARED.lock(|_| unsafe { SHARED_BUF.push(r) }),
    }
}

/// Shorthand for [`record`].
#[inline]
pub fn rec(kind: u16, class: u16, heap: usize, a: usize, b: usize, c: usize) {
    if on() {
        record(Rec {
            kind,
            class,
            tid: 0,
            ts: 0,
            heap: heap as u64,
            a: a as u64,
            b: b as u64,
            c: c as u64,
        });
    }
}

extern "C" fn at_exit() {
    if let Some(b) = super::heap::my_trace_buf() {
        // SAFETY: this thread's own heap's buffer.
        unsafe { (*b).flush() };
    }
    // SAFETY: the shared buffer, under its lock.
    SHARED.lock(|_| unsafe { SHARED_BUF.flush() });
}

/// In a forked child (fork.rs): no more records (the parent writes its own).
pub fn after_fork_in_child() {
    ON.store(false, Ordering::Relaxed);
    // SAFETY: the child's only thread; the shared lock was free at fork (fork_lock).
    unsafe { SHARED_BUF.clear() };
    if let Some(b) = super::heap::my_trace_buf() {
        // SAFETY: this thread's own heap's buffer.
        unsafe { (*b).clear() };
    }
}

/// fork's prepare handler: the shared buffer is consistent in the child.
pub fn fork_lock() {
    SHARED.acquire();
}

/// fork's parent and child handlers.
pub fn fork_unlock() {
    SHARED.release();
}

#[cfg(test)]
mod tests {
    use super::Buf;

    /// A heap leaves its buffer to a fresh mapping's zero pages (heap.rs), so the empty buffer
    /// must be all zero bytes.
    #[test]
    fn new_buf_is_zero_bytes() {
        let b = Buf::new();
        // SAFETY: reads the bytes of a struct of integers with no padding (Rec is repr(C),
        // 48 bytes of fields).
        let bytes = unsafe {
            std::slice::from_raw_parts((&raw const b).cast::<u8>(), std::mem::size_of::<Buf>())
        };
        assert!(bytes.iter().all(|&x| x == 0));
    }
}
