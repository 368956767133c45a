//! Fork safety: `fork` copies the address space while other threads may be inside the allocator.
//! The prepare handler takes every allocator lock (heap list, source caches, shared-range
//! bitmaps; in the order nested paths take them), so the child inherits consistent structures and
//! unlocked locks; the child then makes its shared-range blocks private (shared.rs).
//!
//! Objects of heaps whose threads did not survive the fork stay valid; freeing them from the
//! child queues them on those heaps (memory the child cannot reuse until a new thread adopts the
//! heap, never corruption).

use std::sync::atomic::{AtomicBool, Ordering};

use super::{heap, shared, source, trace};

static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Registers the handlers once (at the first thread's first allocation).
pub fn register() {
    if REGISTERED.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: registering three extern "C" functions that take no arguments.
    unsafe { atfork(prepare, parent, child) };
}

/// glibc's `pthread_atfork` is a static stub (libc_nonshared.a) that passes the calling
/// object's `__dso_handle` to `__register_atfork`, so that unloading the object drops its
/// handlers. Calling that directly does the same, and keeps the stub, linked at the far end of
/// librmalloc's text, from making another 64 KiB of it resident at load (build.rs).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe fn atfork(prepare: extern "C" fn(), parent: extern "C" fn(), child: extern "C" fn()) {
    extern "C" {
        /// Defined by the C runtime's crtbeginS.o in every shared object (crtbegin.o in an
        /// executable); its address names the object.
        static __dso_handle: u8;
        fn __register_atfork(
            prepare: Option<extern "C" fn()>,
            parent: Option<extern "C" fn()>,
            child: Option<extern "C" fn()>,
            dso_handle: *const u8,
        ) -> libc::c_int;
    }
    // SAFETY: as pthread_atfork's own definition in glibc; only the static's address is taken.
    unsafe {
        __register_atfork(
            Some(prepare),
            Some(parent),
            Some(child),
            std::ptr::addr_of!(__dso_handle),
        )
    };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
unsafe fn atfork(prepare: extern "C" fn(), parent: extern "C" fn(), child: extern "C" fn()) {
    // SAFETY: registering three extern "C" functions that take no arguments.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
}

extern "C" fn prepare() {
    heap::fork_lock();
    source::fork_lock();
    shared::fork_lock();
    trace::fork_lock();
}

extern "C" fn parent() {
    trace::fork_unlock();
    shared::fork_unlock();
    source::fork_unlock();
    heap::fork_unlock();
}

extern "C" fn child() {
    trace::fork_unlock();
    trace::after_fork_in_child();
    shared::fork_unlock();
    source::fork_unlock();
    heap::fork_unlock();
    shared::after_fork_in_child();
}
