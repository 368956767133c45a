//! The event API: "[addr, addr+len) no longer maps the pages it mapped", fanned out to subscribers,
//! and counted per source.
//!
//! # The callback contract
//! Callbacks run wherever memory is released: inside `free()` with the C allocator's locks held,
//! inside `munmap()` called from any thread, inside our own allocator. A callback must therefore
//! only *record* the range, without locks and without allocating (see [`crate::Recorder`]), and
//! act on it later from its own context (e.g. the registration cache drains its recorder before
//! every lookup). A callback that locks or allocates can deadlock the process.
//!
//! Events fire *before* the release takes effect, so no other thread can map the same addresses
//! again before the subscriber has seen the event. They may be conservative (a range that stayed
//! mapped, e.g. an `mremap` that could move but did not): a spurious event costs a cache miss,
//! a missing one a remote write into the wrong memory.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// What released the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Source {
    Munmap = 0,
    Mremap = 1,
    /// madvise(MADV_DONTNEED / MADV_FREE / MADV_REMOVE).
    Madvise = 2,
    /// The program break moved down (brk, sbrk, malloc_trim).
    Brk = 3,
    Shmdt = 4,
    /// A block passed to free() (the ldpreload provider, which cannot see libc's own releases).
    Free = 5,
    /// A block moved or shrunk by realloc() (ldpreload provider).
    Realloc = 6,
    /// Our allocator's memory source gave memory back to the OS (ptmalloc provider).
    Allocator = 7,
    /// mmap(MAP_FIXED) or mremap(MREMAP_FIXED) replaced whatever was mapped at the target.
    MmapFixed = 8,
}

pub const SOURCES: [Source; 9] = [
    Source::Munmap,
    Source::Mremap,
    Source::Madvise,
    Source::Brk,
    Source::Shmdt,
    Source::Free,
    Source::Realloc,
    Source::Allocator,
    Source::MmapFixed,
];

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Munmap => "munmap",
            Source::Mremap => "mremap",
            Source::Madvise => "madvise",
            Source::Brk => "brk",
            Source::Shmdt => "shmdt",
            Source::Free => "free",
            Source::Realloc => "realloc",
            Source::Allocator => "allocator",
            Source::MmapFixed => "mmap-fixed",
        }
    }

    pub fn from_u32(v: u32) -> Option<Source> {
        SOURCES.get(v as usize).copied()
    }
}

/// One release: the pages of `[addr, addr + len)` are no longer those that were mapped there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub addr: usize,
    pub len: usize,
    pub source: Source,
}

impl Event {
    /// Whether this event covers all of `[addr, addr + len)`.
    pub fn covers(&self, addr: usize, len: usize) -> bool {
        self.addr <= addr && addr.saturating_add(len) <= self.addr.saturating_add(self.len)
    }
}

/// A subscriber: record-only, lock-free, no allocation (see the module documentation).
pub type Callback = fn(&Event);

const MAX_SUBSCRIBERS: usize = 8;
static SUBSCRIBERS: [AtomicUsize; MAX_SUBSCRIBERS] =
    [const { AtomicUsize::new(0) }; MAX_SUBSCRIBERS];

/// A registered callback; pass it to [`unsubscribe`].
#[derive(Debug)]
pub struct Subscription(usize);

/// Registers `cb` for every event from now on. Fails when all slots are taken.
pub fn subscribe(cb: Callback) -> Result<Subscription, &'static str> {
    let p = cb as usize;
    for (i, slot) in SUBSCRIBERS.iter().enumerate() {
        if slot
            .compare_exchange(0, p, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return Ok(Subscription(i));
        }
    }
    Err("memhook: all subscriber slots are taken")
}

/// Stops calls to the subscription's callback (one already running may still finish).
pub fn unsubscribe(s: Subscription) {
    SUBSCRIBERS[s.0].store(0, Ordering::Release);
}

// Counters, sharded so that two threads freeing at once do not fight over one cache line.
const SHARDS: usize = 8;
const NSRC: usize = SOURCES.len();

#[repr(align(128))]
struct Shard {
    events: [AtomicU64; NSRC],
    bytes: [AtomicU64; NSRC],
}

static COUNTERS: [Shard; SHARDS] = [const {
    Shard {
        events: [const { AtomicU64::new(0) }; NSRC],
        bytes: [const { AtomicU64::new(0) }; NSRC],
    }
}; SHARDS];

/// A shard for the calling thread without touching TLS (usable before TLS is set up and inside
/// any hook): threads' stacks lie megabytes apart.
#[inline]
fn shard() -> &'static Shard {
    let marker = 0u8;
    let sp = std::ptr::addr_of!(marker) as usize;
    let h = (sp >> 20).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61;
    &COUNTERS[h % SHARDS]
}

/// Fans one event out to the subscribers and counts it. Called by the providers, from inside
/// hooks: no locks, no allocation.
#[inline]
pub fn notify(source: Source, addr: usize, len: usize) {
    if len == 0 {
        return;
    }
    let s = shard();
    let i = source as usize;
    s.events[i].fetch_add(1, Ordering::Relaxed);
    s.bytes[i].fetch_add(len as u64, Ordering::Relaxed);
    let ev = Event { addr, len, source };
    for slot in &SUBSCRIBERS {
        let p = slot.load(Ordering::Acquire);
        if p != 0 {
            // SAFETY: non-zero slots only ever hold a `Callback` stored by `subscribe`; fn
            // pointers and usize have the same size and representation.
            let cb: Callback = unsafe { std::mem::transmute::<usize, Callback>(p) };
            cb(&ev);
        }
    }
}

/// Events and bytes seen so far for one source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    pub events: u64,
    pub bytes: u64,
}

/// Per-source counts since the process started, indexed by `Source as usize`.
pub fn counters() -> [Count; NSRC] {
    let mut out = [Count::default(); NSRC];
    for s in &COUNTERS {
        for (i, c) in out.iter_mut().enumerate() {
            c.events += s.events[i].load(Ordering::Relaxed);
            c.bytes += s.bytes[i].load(Ordering::Relaxed);
        }
    }
    out
}

/// The total number of events so far, all sources.
pub fn total_events() -> u64 {
    counters().iter().map(|c| c.events).sum()
}

/// One line for logs: `munmap=3/4096B free=12/...`, sources with no events left out.
pub fn counters_line() -> String {
    let c = counters();
    let parts: Vec<String> = SOURCES
        .iter()
        .zip(c.iter())
        .filter(|(_, c)| c.events > 0)
        .map(|(s, c)| format!("{}={}/{}B", s.name(), c.events, c.bytes))
        .collect();
    if parts.is_empty() {
        "no events".into()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_and_names() {
        let e = Event {
            addr: 100,
            len: 50,
            source: Source::Munmap,
        };
        assert!(e.covers(100, 50) && e.covers(120, 10));
        assert!(!e.covers(90, 20) && !e.covers(140, 20));
        for (i, s) in SOURCES.iter().enumerate() {
            assert_eq!(Source::from_u32(i as u32), Some(*s));
        }
        assert_eq!(Source::from_u32(99), None);
    }
}
