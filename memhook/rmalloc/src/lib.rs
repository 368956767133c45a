//! librmalloc.so: memhook's ptmalloc allocator (per-thread chains, 2 MiB macro-blocks, a memory
//! source that decides what goes back to the OS) as any program's malloc:
//! `LD_PRELOAD=target/release/librmalloc.so program`. Exports the malloc family and C++'s
//! operator new and delete (cxx.rs); fork-safe (the allocator registers pthread_atfork handlers
//! at its first allocation).

memhook::export_allocator!();

/// Runs when the library is loaded, before the program's constructors.
extern "C" fn init() {
    memhook::ptmalloc::preload_defaults();
}

// SAFETY (of the section): the loader calls each .init_array entry once, with no arguments.
#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

mod cxx;
