//! librmalloc.so: memhook's ptmalloc allocator (per-thread chains, 2 MiB macro-blocks, a memory
//! source that decides what goes back to the OS) as any program's malloc:
//! `cargo build --profile rmalloc -p memhook-rmalloc`, then
//! `LD_PRELOAD=target/rmalloc/librmalloc.so program`. Exports the malloc family and C++'s
//! operator new and delete (cxx.rs); fork-safe (the allocator registers pthread_atfork handlers
//! at its first allocation).
//!
//! The allocator's sources are memhook's own (`memhook/src/ptmalloc`, `sys.rs`), compiled into
//! this crate rather than linked from the memhook crate, so that under panic=abort the library
//! can be `no_std` (build.rs): nothing of the standard library is linked, and a program maps
//! only the allocator's pages. Release events have no subscriber in this library (the range
//! registration caches live in libmpi), so `events` here only satisfies the memory source's calls.

#![cfg_attr(rmalloc_nostd, no_std)]

// The allocator's sources name `std::`; without std, the same paths are core's.
#[cfg(rmalloc_nostd)]
extern crate core as std;

#[doc(hidden)]
pub use libc as __libc;

// std would ask for libc; libc's own `std` feature leaves that to std.
#[cfg(rmalloc_nostd)]
#[link(name = "c")]
extern "C" {}

#[path = "../../src/ptmalloc/mod.rs"]
#[allow(dead_code)]
pub mod ptmalloc;

// (sys.rs allows its own dead code.)
#[path = "../../src/sys.rs"]
mod sys;

/// What memhook's `events` module gives the memory source, with no subscribers to tell.
mod events {
    #[derive(Clone, Copy)]
    pub enum Source {
        Allocator,
    }

    impl Source {
        pub fn from_u32(_: u32) -> Option<Source> {
            None
        }
    }

    #[inline(always)]
    pub fn notify(_: Source, _: usize, _: usize) {}
}

__memhook_export_malloc_family!();

/// Runs when the library is loaded, before the program's constructors.
extern "C" fn init() {
    ptmalloc::preload_defaults();
}

// SAFETY (of the section): the loader calls each .init_array entry once, with no arguments.
#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

/// Without std a panic (an index out of bounds the allocator's checks let through) ends the
/// process, as panic=abort would with std, after one line on stderr.
#[cfg(rmalloc_nostd)]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    const MSG: &[u8] = b"librmalloc.so: internal error (panic), aborting\n";
    // SAFETY: writes a static buffer to stderr, then ends the process.
    unsafe {
        libc::write(2, MSG.as_ptr().cast(), MSG.len());
        libc::abort()
    }
}

mod cxx;
