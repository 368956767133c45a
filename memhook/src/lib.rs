//! Memory-release events for registration caches: "the range [addr, addr+len) no longer maps the
//! pages it mapped", delivered to subscribers (see [`events`] for the callback contract: record
//! only, lock-free, act later), counted per source.
//!
//! Exactly one provider is compiled in, chosen by Cargo feature (`ptmalloc`, `hooks`,
//! `ldpreload`, `none`; default `hooks` on x86-64 Linux, else `none`):
//! - `ptmalloc`: the malloc family is our own allocator ([`ptmalloc`]), exported by libmpi_abi.so;
//!   events fire only when its memory source gives memory back to the OS. munmap & co. are
//!   interposed too, for the application's own releases.
//! - `hooks`: libc's munmap, mremap, madvise, brk and shmdt patched at their entry points.
//! - `ldpreload`: `libmemhook_preload.so` (memhook/preload) in LD_PRELOAD interposes free,
//!   realloc and the release calls.
//! - `none`: nothing is seen; [`init`] says so and users must not rely on events.

#[cfg(memhook_provider = "conflict")]
compile_error!(concat!(
    "memhook: choose exactly one memory-manager provider, but ",
    env!("MEMHOOK_FEATURES_NAMED"),
    " were both enabled (features memory-manager/ptmalloc, /hooks, /ldpreload and /none exclude each other)"
));

pub mod events;
#[doc(hidden)]
pub mod interpose;
mod provider;
#[cfg(any(memhook_provider = "ptmalloc", feature = "allocator"))]
pub mod ptmalloc;
mod recorder;
#[doc(hidden)]
pub mod sys;

#[doc(hidden)]
pub use libc as __libc;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

pub use events::{
    counters, counters_line, notify, subscribe, total_events, unsubscribe, Callback, Count, Event,
    Source, Subscription, SOURCES,
};
pub use recorder::Recorder;

/// The provider compiled in: "ptmalloc", "hooks", "ldpreload" or "none".
pub const PROVIDER: &str = env!("MEMHOOK_PROVIDER");

/// The provider compiled in.
pub fn provider_name() -> &'static str {
    PROVIDER
}

/// Whether the provider delivers events in this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Active,
    /// Not delivering events, and why. Anything relying on events must turn itself off.
    Unavailable(&'static str),
}

impl Status {
    pub fn is_active(self) -> bool {
        self == Status::Active
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Active => write!(f, "active"),
            Status::Unavailable(why) => write!(f, "unavailable: {why}"),
        }
    }
}

static STATUS: OnceLock<Status> = OnceLock::new();

/// Starts the provider once (patching libc, attaching to the preload library, ...) and checks,
/// with a real munmap, that its events arrive. Call early, before starting threads (MPI_Init).
pub fn init() -> Status {
    *STATUS.get_or_init(|| match provider::install() {
        Ok(()) if self_test() => Status::Active,
        Ok(()) => Status::Unavailable("installed, but the self-test munmap produced no event"),
        Err(why) => Status::Unavailable(why),
    })
}

/// The status if [`init`] has run.
pub fn status() -> Option<Status> {
    STATUS.get().copied()
}

/// Initializes if needed and tells whether events are being delivered.
pub fn is_active() -> bool {
    init().is_active()
}

static PROBE_ADDR: AtomicUsize = AtomicUsize::new(0);
static PROBE_SEEN: AtomicBool = AtomicBool::new(false);

fn probe(ev: &Event) {
    let a = PROBE_ADDR.load(Ordering::Relaxed);
    if a != 0 && ev.covers(a, 1) {
        PROBE_SEEN.store(true, Ordering::Relaxed);
    }
}

/// Maps a page, unmaps it through libc's munmap, and checks that the event arrived.
fn self_test() -> bool {
    let Ok(sub) = subscribe(probe) else {
        return false;
    };
    // SAFETY: a fresh anonymous page, unmapped below and never touched by anything else.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    let mut seen = false;
    if p != libc::MAP_FAILED {
        PROBE_ADDR.store(p as usize, Ordering::Relaxed);
        PROBE_SEEN.store(false, Ordering::Relaxed);
        // SAFETY: the page mapped above, unmapped once.
        unsafe { libc::munmap(p, 4096) };
        seen = PROBE_SEEN.load(Ordering::Relaxed);
        PROBE_ADDR.store(0, Ordering::Relaxed);
    }
    unsubscribe(sub);
    seen
}

/// In libmpi (and in programs that want our malloc): exports the malloc family when the
/// provider is `ptmalloc`, expands to nothing otherwise.
#[cfg(memhook_provider = "ptmalloc")]
#[macro_export]
macro_rules! export_malloc {
    () => {
        $crate::__memhook_export_ptmalloc!();
    };
}

/// In libmpi (and in programs that want our malloc): exports the malloc family when the
/// provider is `ptmalloc`, expands to nothing otherwise.
#[cfg(not(memhook_provider = "ptmalloc"))]
#[macro_export]
macro_rules! export_malloc {
    () => {};
}

/// The ptmalloc provider's node-shared range of huge allocations, as (memfd, base, length):
/// peers of an MPI job may map it to read large malloc'd buffers by memcpy. Made on first use;
/// None for other providers or when it is off (`MEMHOOK_PTMALLOC_SHARED=0`).
pub fn shared_source() -> Option<(i32, usize, usize)> {
    #[cfg(memhook_provider = "ptmalloc")]
    {
        ptmalloc::shared_range()
    }
    #[cfg(not(memhook_provider = "ptmalloc"))]
    None
}

/// For logs: the ptmalloc provider's policy and footprint (what "never give memory back" costs:
/// `held free` is memory kept instead of returned); None for other providers.
pub fn allocator_line() -> Option<String> {
    #[cfg(memhook_provider = "ptmalloc")]
    {
        let s = ptmalloc::stats();
        let mib = |b: usize| b as f64 / (1 << 20) as f64;
        Some(format!(
            "ptmalloc policy {:?}: mapped {:.1} MiB (peak {:.1} MiB), held free {:.1} MiB, returned to the OS {:.1} MiB",
            ptmalloc::policy(),
            mib(s.mapped),
            mib(s.peak_mapped),
            mib(s.held_free),
            mib(s.released as usize)
        ))
    }
    #[cfg(not(memhook_provider = "ptmalloc"))]
    None
}
