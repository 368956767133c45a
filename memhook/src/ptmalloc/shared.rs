//! Huge allocations from one node-shared range: a memfd of [`SIZE`] sparse bytes mapped
//! `MAP_SHARED` once, handed out in 2 MiB granules (a huge block's header sits on a granule
//! boundary). Peers of an MPI job map the memfd and read a large malloc'd buffer with memcpy
//! (btl-sm's xmem, through [`range`]); and a freed huge block is kept in place for the next one
//! instead of a fresh mmap/munmap per call (issue 21).
//!
//! Runs inside malloc: no allocation, a spinlock, raw system calls for mmap/munmap/mremap (ours
//! are interposed). Off with `MEMHOOK_PTMALLOC_SHARED=0` / `RMPI_MCA_memhook_ptmalloc_shared=0`.
//!
//! fork: a child must not share its parent's heap, so the child's copy of every live block is
//! made private (copied into anonymous memory, remapped in place) and the child never allocates
//! from the range again.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicUsize, Ordering};

use super::block::BLOCK;
use super::spin::Spin;
use crate::sys;

/// Address space of the range: only touched pages are memory.
pub const SIZE: usize = 64 << 30;
const GRANULES: usize = SIZE / BLOCK;
const WORDS: usize = GRANULES / 64;

const UNINIT: u8 = 0;
const CREATING: u8 = 1;
const READY: u8 = 2;
const OFF: u8 = 3;
/// A forked child: its blocks were made private; the range serves nothing new.
const DETACHED: u8 = 4;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static BASE: AtomicUsize = AtomicUsize::new(0);
static FD: AtomicI32 = AtomicI32::new(-1);

/// Granule bitmaps: `used` by a live block; `dirty`: may hold pages (taken since the last punch).
struct Map {
    used: [u64; WORDS],
    dirty: [u64; WORDS],
    /// Bytes of free dirty granules (kept for reuse).
    held: usize,
}

static MAP: Spin<Map> = Spin::new(Map {
    used: [0; WORDS],
    dirty: [0; WORDS],
    held: 0,
});

fn bit(m: &[u64; WORDS], g: usize) -> bool {
    m[g / 64] >> (g % 64) & 1 != 0
}

fn set(m: &mut [u64; WORDS], g: usize, on: bool) {
    if on {
        m[g / 64] |= 1 << (g % 64);
    } else {
        m[g / 64] &= !(1 << (g % 64));
    }
}

fn env(name: &std::ffi::CStr) -> Option<&'static [u8]> {
    // SAFETY: getenv reads the environment without allocating; the name is NUL-terminated.
    let p = unsafe { libc::getenv(name.as_ptr()) };
    // SAFETY: a non-null getenv result is a NUL-terminated string that lives as long as the
    // environment is not changed (read once, at the range's creation).
    (!p.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes())
}

/// Whether the range is used when the environment does not say: yes under MPI (libmpi), no in
/// librmalloc.so, where no peer reads it and a fork would copy every large block.
static ON_BY_DEFAULT: AtomicBool = AtomicBool::new(true);

/// Sets the default (before the first large allocation).
pub fn set_default(on: bool) {
    ON_BY_DEFAULT.store(on, Ordering::Relaxed);
}

/// Make the range (first caller); false when it is off or cannot be made.
fn ready() -> bool {
    match STATE.load(Ordering::Acquire) {
        READY => return true,
        UNINIT => {}
        _ => return false,
    }
    if STATE
        .compare_exchange(UNINIT, CREATING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        // Another thread is creating it: this allocation takes the plain path.
        return STATE.load(Ordering::Acquire) == READY;
    }
    let on = match (
        env(c"MEMHOOK_PTMALLOC_SHARED"),
        env(c"RMPI_MCA_memhook_ptmalloc_shared"),
    ) {
        (Some(v), _) | (None, Some(v)) => v != b"0",
        (None, None) => ON_BY_DEFAULT.load(Ordering::Relaxed),
    };
    let ok = on && create();
    STATE.store(if ok { READY } else { OFF }, Ordering::Release);
    ok
}

fn create() -> bool {
    // SAFETY: memfd_create reads the NUL-terminated name; ftruncate and the mmaps are plain
    // system calls on our own new descriptor and on address space nothing else uses (a fresh
    // PROT_NONE reservation, which the memfd then replaces in part with MAP_FIXED).
    unsafe {
        let fd = libc::memfd_create(c"rmpi-heap".as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let fail = |fd| {
            libc::close(fd);
            false
        };
        if libc::ftruncate(fd, SIZE as libc::off_t) != 0 {
            return fail(fd);
        }
        let res = sys::mmap(
            std::ptr::null_mut(),
            SIZE + BLOCK,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if res == libc::MAP_FAILED {
            return fail(fd);
        }
        let r = res as usize;
        let base = r.next_multiple_of(BLOCK);
        let p = sys::mmap(
            base as *mut libc::c_void,
            SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED | libc::MAP_NORESERVE,
            fd,
            0,
        );
        if p == libc::MAP_FAILED {
            sys::munmap(res, SIZE + BLOCK);
            return fail(fd);
        }
        if base > r {
            sys::munmap(res, base - r);
        }
        let end = base + SIZE;
        if r + SIZE + BLOCK > end {
            sys::munmap(end as *mut libc::c_void, r + SIZE + BLOCK - end);
        }
        BASE.store(base, Ordering::Relaxed);
        FD.store(fd, Ordering::Relaxed);
    }
    true
}

/// The range peers may map: (memfd, base, length); made on first use. None when off.
pub fn range() -> Option<(i32, usize, usize)> {
    ready().then(|| {
        (
            FD.load(Ordering::Relaxed),
            BASE.load(Ordering::Relaxed),
            SIZE,
        )
    })
}

/// Whether a huge block's mapping base lies in the range (in any state that made it).
pub fn contains(addr: usize) -> bool {
    let base = BASE.load(Ordering::Relaxed);
    base != 0 && addr.wrapping_sub(base) < SIZE
}

/// Whether blocks of the range are private copies now (a forked child): freed by munmap.
pub fn detached() -> bool {
    STATE.load(Ordering::Relaxed) == DETACHED
}

/// A run of granules for `len` bytes: (base, run length, bytes of it that were kept dirty).
pub fn take(len: usize) -> Option<(usize, usize, usize)> {
    if !ready() {
        return None;
    }
    let n = len.div_ceil(BLOCK);
    if n == 0 || n > GRANULES {
        return None;
    }
    let (g, dirty) = MAP.lock(|m| {
        // First fit, lowest first: the block just freed is found again by the next one.
        let mut g = 0;
        while g + n <= GRANULES {
            if m.used[g / 64] == u64::MAX && g % 64 == 0 {
                g += 64;
                continue;
            }
            match (g..g + n).find(|&k| bit(&m.used, k)) {
                Some(k) => g = k + 1,
                None => {
                    let mut dirty = 0;
                    for k in g..g + n {
                        dirty += bit(&m.dirty, k) as usize;
                        set(&mut m.used, k, true);
                        set(&mut m.dirty, k, true);
                    }
                    m.held -= dirty * BLOCK;
                    return Some((g, dirty * BLOCK));
                }
            }
        }
        None
    })?;
    Some((BASE.load(Ordering::Relaxed) + g * BLOCK, n * BLOCK, dirty))
}

/// Bytes of free granules kept with their pages.
pub fn held() -> usize {
    MAP.lock(|m| m.held)
}

/// A block `[addr, addr + len)` of the range is free: keep its pages for the next one (`keep`)
/// or give them back to the kernel (the caller has told subscribers).
pub fn give(addr: usize, len: usize, keep: bool) {
    let base = BASE.load(Ordering::Relaxed);
    let (g, n) = ((addr - base) / BLOCK, len / BLOCK);
    if !keep {
        // SAFETY: a plain system call on our memfd; the range is a whole dead block. A kernel
        // that cannot punch holes leaves the pages in use, nothing worse.
        unsafe {
            libc::fallocate(
                FD.load(Ordering::Relaxed),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                (addr - base) as libc::off_t,
                len as libc::off_t,
            )
        };
    }
    MAP.lock(|m| {
        for k in g..g + n {
            set(&mut m.used, k, false);
            set(&mut m.dirty, k, keep);
        }
        if keep {
            m.held += len;
        }
    });
}

/// fork's prepare handler (fork.rs): nobody changes the bitmaps while the process is copied.
pub(super) fn fork_lock() {
    MAP.acquire();
}

/// fork's parent and child handlers.
pub(super) fn fork_unlock() {
    MAP.release();
}

/// In a forked child (one thread, called by fork.rs once the locks are free again): make every
/// live block private, so that parent and child stop sharing heap memory, and stop using the
/// range.
pub(super) fn after_fork_in_child() {
    if STATE.load(Ordering::Relaxed) != READY {
        return;
    }
    STATE.store(DETACHED, Ordering::Relaxed);
    let base = BASE.load(Ordering::Relaxed);
    // The only thread, and fork ran no allocation in between: nothing holds the lock.
    MAP.lock(|m| {
        let mut g = 0;
        while g < GRANULES {
            if !bit(&m.used, g) {
                g += 1;
                continue;
            }
            let mut e = g;
            while e < GRANULES && bit(&m.used, e) {
                e += 1;
            }
            let (addr, len) = (base + g * BLOCK, (e - g) * BLOCK);
            // SAFETY: [addr, addr + len) is live shared memory of ours; the copy goes to a fresh
            // anonymous mapping that then replaces it at the same address (MREMAP_FIXED), so
            // every pointer into it stays valid and now names private memory.
            unsafe {
                let tmp = sys::mmap_anon(len);
                if tmp == libc::MAP_FAILED {
                    // No memory for a copy: abort rather than silently share with the parent.
                    libc::abort();
                }
                std::ptr::copy_nonoverlapping(addr as *const u8, tmp.cast::<u8>(), len);
                let r = sys::mremap(
                    tmp,
                    len,
                    len,
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                    addr as *mut libc::c_void,
                );
                if r == libc::MAP_FAILED {
                    libc::abort();
                }
            }
            g = e;
        }
    });
    // SAFETY: our inherited copy of the memfd; the child has no use for it.
    unsafe { libc::close(FD.load(Ordering::Relaxed)) };
}
