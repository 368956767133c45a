//! `libmemhook_preload.so`, loaded with `LD_PRELOAD` into the ranks (mpirun adds it when the
//! build selects memhook's `ldpreload` provider). It interposes the calls that release memory and
//! hands each release to memhook in the process, which attaches through
//! [`memhook_preload_attach`]; before that, releases are only counted here.
//!
//! libc's own releases (free() unmapping a large chunk, trimming the heap) call internal aliases
//! that interposition cannot reach, so free() and realloc() report the block they are given:
//! every page libc later returns was inside some block reported when it was freed.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use libc as __libc;

#[path = "../../src/sys.rs"]
mod sys;

#[path = "../../src/interpose.rs"]
mod interpose;

/// memhook's receiver: `extern "C" fn(source, addr, len)`; 0 until memhook attaches.
static SINK: AtomicUsize = AtomicUsize::new(0);
/// Releases seen before anyone attached (nothing could have subscribed to them yet).
static UNATTACHED: AtomicU64 = AtomicU64::new(0);

type Sink = extern "C" fn(u32, usize, usize);

#[inline]
fn deliver(source: u32, addr: usize, len: usize) {
    let p = SINK.load(Ordering::Acquire);
    if p == 0 {
        UNATTACHED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // SAFETY: non-zero SINK values are only stored by memhook_preload_attach from a `Sink`.
    let f: Sink = unsafe { std::mem::transmute::<usize, Sink>(p) };
    f(source, addr, len);
}

/// The version of the attach protocol; memhook checks it.
pub const PRELOAD_ABI: u32 = 1;

/// Called by memhook (found with dlsym) to receive releases from now on. Returns the protocol
/// version.
#[no_mangle]
pub extern "C" fn memhook_preload_attach(sink: Sink) -> u32 {
    SINK.store(sink as usize, Ordering::Release);
    PRELOAD_ABI
}

/// Releases seen before memhook attached.
#[no_mangle]
pub extern "C" fn memhook_preload_unattached() -> u64 {
    UNATTACHED.load(Ordering::Relaxed)
}

extern "C" {
    fn __libc_free(p: *mut libc::c_void);
    fn __libc_realloc(p: *mut libc::c_void, n: usize) -> *mut libc::c_void;
}

/// free(3), reporting the block first.
///
/// # Safety
/// As free(3).
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut libc::c_void) {
    if !p.is_null() {
        // SAFETY: `p` is a live block from libc's malloc (the caller's contract).
        let len = unsafe { libc::malloc_usable_size(p) };
        deliver(interpose::SRC_FREE, p as usize, len);
    }
    // SAFETY: forwarded to glibc's free under its exported internal name.
    unsafe { __libc_free(p) }
}

/// realloc(3): the old block may move or shrink, so it is reported first.
///
/// # Safety
/// As realloc(3).
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut libc::c_void, n: usize) -> *mut libc::c_void {
    if !p.is_null() {
        // SAFETY: as in free.
        let len = unsafe { libc::malloc_usable_size(p) };
        deliver(interpose::SRC_REALLOC, p as usize, len);
    }
    // SAFETY: forwarded to glibc's realloc.
    unsafe { __libc_realloc(p, n) }
}

crate::__memhook_interpose_release_calls!(crate::deliver, crate::sys, crate::interpose);
