//! Invalidation from memhook: a plain callback records released ranges in a static lock-free
//! [`Recorder`] (inside the hook: no locks, no allocation, no deregistration), and the cache
//! drains it before every lookup, from its own context.
//!
//! One recorder per process, hence one cache per process: two caches draining it would each
//! miss the events the other consumed. The first cache to use the events holds a [`Claim`];
//! another one created meanwhile gets no events (Auto/On: caching off, with the reason).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use memhook::{Event, Recorder, Status};

/// Ranges held between two lookups; more than this many releases in between flushes the cache.
pub(super) const SLOTS: usize = 512;

static RECORDER: Recorder<SLOTS> = Recorder::new();
static SUBSCRIBED: OnceLock<Result<(), &'static str>> = OnceLock::new();
/// Events recorded since the last drain began: lets a lookup skip scanning the recorder's slots
/// when nothing happened (the common case on the transfer path).
static PENDING: AtomicUsize = AtomicUsize::new(0);
static CLAIMED: AtomicBool = AtomicBool::new(false);
static UNAVAILABLE: OnceLock<String> = OnceLock::new();

/// The subscriber: record only (see memhook's callback contract).
fn record(ev: &Event) {
    RECORDER.record(ev.addr, ev.len);
    // After the record: a drainer that sees the count sees the range (or the overflow). The
    // hook returns, and the memory is released, only after this.
    PENDING.fetch_add(1, Ordering::Release);
}

/// Why there are no events in this process, for `Rcache::enabled`.
fn unavailable_reason() -> &'static str {
    UNAVAILABLE.get_or_init(|| {
        let why = match memhook::init() {
            Status::Unavailable(why) => why,
            Status::Active => "inactive",
        };
        format!(
            "memhook provider {} delivers no memory-release events ({why})",
            memhook::PROVIDER
        )
    })
}

/// The right to drain the process's recorder; given back on drop.
#[derive(Debug)]
pub(super) struct Claim(());

impl Claim {
    /// Hands every range released since the last drain to `f`; `false` if some were lost to
    /// overflow (the caller must then assume everything was released).
    pub fn drain(&self, f: impl FnMut(usize, usize)) -> bool {
        // Reset before draining: an event recorded meanwhile is drained now or next time.
        if PENDING.swap(0, Ordering::AcqRel) == 0 {
            return true;
        }
        RECORDER.drain(f)
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        CLAIMED.store(false, Ordering::Release);
    }
}

/// Subscribes (once per process) and claims the recorder, or says why events cannot be had.
pub(super) fn claim() -> Result<Claim, &'static str> {
    if !memhook::is_active() {
        return Err(unavailable_reason());
    }
    (*SUBSCRIBED.get_or_init(|| {
        // The subscription lives as long as the process: the recorder is static.
        memhook::subscribe(record).map(|_| ())
    }))?;
    if CLAIMED.swap(true, Ordering::AcqRel) {
        return Err("another registration cache in this process already consumes the memhook events (one cache per process)");
    }
    // Whatever was recorded before concerns none of the new cache's (future) registrations.
    let claim = Claim(());
    claim.drain(|_, _| {});
    Ok(claim)
}
