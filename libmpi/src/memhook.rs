//! Memory-release events (the `memory-manager` dependency, i.e. memhook): started at MPI_Init so
//! the `hooks` provider patches libc before the application starts threads; with
//! `--mca memhook_verbose 1`, each rank says at init whether the provider is active and prints
//! the event counters at finalize.

use std::sync::atomic::{AtomicI32, Ordering};

use memory_manager as memhook;

// The ptmalloc provider's malloc family, exported from libmpi_abi.so (nothing for other providers).
memory_manager::export_malloc!();

static VERBOSE_RANK: AtomicI32 = AtomicI32::new(-1);

fn verbose() -> bool {
    std::env::var("RMPI_MCA_memhook_verbose").is_ok_and(|v| v != "0" && !v.is_empty())
}

/// At MPI_Init.
pub fn start(rank: i32) {
    let status = memhook::init();
    if verbose() {
        VERBOSE_RANK.store(rank, Ordering::Relaxed);
        eprintln!(
            "rmpi: rank {rank}: memhook provider {}: {status}",
            memhook::PROVIDER
        );
    }
}

/// At MPI_Finalize.
pub fn finish() {
    let rank = VERBOSE_RANK.load(Ordering::Relaxed);
    if rank >= 0 {
        eprintln!(
            "rmpi: rank {rank}: memhook provider {} ({}) events: {}",
            memhook::PROVIDER,
            memhook::status().map_or("not started".into(), |s| s.to_string()),
            memhook::counters_line()
        );
        if let Some(line) = memhook::allocator_line() {
            eprintln!("rmpi: rank {rank}: {line}");
        }
    }
}
