//! Registration cache ("leave pinned"): registrations outlive the transfer that made them, so a
//! buffer sent again costs a lookup instead of a pin. Kept honest by memhook: a range released
//! to the OS is recorded lock-free inside the hook and its registrations are dropped before the
//! next lookup.
//!
//! - Entries are whole pages: a miss registers `[floor_page(addr), ceil_page(addr + len))`,
//!   merged with the cached entries it overlaps (their union, with the union of their access
//!   rights), so cached entries never overlap and a lookup is one `BTreeMap` step.
//! - Entries are reference counted: one in use is never evicted nor deregistered. Unused ones
//!   wait in an LRU; registered bytes (in use plus cached) stay under `max_bytes`
//!   (`btl_ib_rcache_max_bytes`), and an ENOMEM from the device (RLIMIT_MEMLOCK) evicts every
//!   unused entry before one retry.
//! - Released memory (module `invalidate`): entries overlapping it leave the lookup structure before
//!   the next lookup; unused ones are deregistered then, in-use ones at their last release.
//!   Never inside the hook.
//!
//! **One cache per process**: the events go through one static recorder, which one cache at a
//! time may drain (a second cache created while the first lives gets no events; with
//! [`Mode::Auto`] or [`Mode::On`] it does not cache). Tests that create caches serialize.
//!
//! Call [`Rcache::clear`] before dropping a cache: dropping cannot deregister (no device).

mod entries;
mod invalidate;
mod lru;
mod register;
#[cfg(test)]
mod tests;

use std::fmt;

use crate::verbs::{Access, Device, Mr, RegError};
use entries::{Entries, State};
use lru::Lru;

/// Whether registrations are cached (`--mca btl_ib_leave_pinned auto|0|1|force`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Cache when memhook delivers events, else register per transfer.
    Auto,
    Off,
    /// Cache; refused (turned off, with a reason) when memhook delivers no events.
    On,
    /// Cache even without events: stale registrations are possible. For tests only. (When
    /// events are available they are used all the same.)
    Force,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "auto" | "" | "-1" => Ok(Mode::Auto),
            "0" | "off" | "false" => Ok(Mode::Off),
            "1" | "on" | "true" => Ok(Mode::On),
            "force" => Ok(Mode::Force),
            other => Err(format!(
                "btl_ib_leave_pinned={other}: expected auto, 0, 1 or force"
            )),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub invalidations: u64,
    /// Bytes registered through the cache now (in use or cached).
    pub pinned_bytes: usize,
    pub entries: usize,
}

/// `4.0 MiB`, `12.0 KiB`, `512 B`.
fn human_bytes(b: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

impl fmt::Display for Stats {
    /// `rcache: 98 hits, 2 misses (98.0% hit rate), 0 evictions, 1 invalidations, 4.0 MiB
    /// pinned in 1 entries`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lookups = self.hits + self.misses;
        write!(f, "rcache: {} hits, {} misses", self.hits, self.misses)?;
        if lookups > 0 {
            let rate = 100.0 * self.hits as f64 / lookups as f64;
            write!(f, " ({rate:.1}% hit rate)")?;
        }
        write!(
            f,
            ", {} evictions, {} invalidations, {} pinned in {} entries",
            self.evictions,
            self.invalidations,
            human_bytes(self.pinned_bytes),
            self.entries
        )
    }
}

/// A registration in use; give it back with [`Rcache::release`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handle(pub usize);

pub struct Rcache {
    /// Ok when registrations are kept after release; else why not.
    caching: Result<(), &'static str>,
    /// The process's memhook events, when this cache gets them.
    events: Option<invalidate::Claim>,
    max_bytes: usize,
    entries: Entries,
    lru: Lru,
    stats: Stats,
    dereg_errors: u64,
}

impl Rcache {
    /// `max_bytes`: bound on bytes kept registered (in use plus cached).
    pub fn new(mode: Mode, max_bytes: usize) -> Rcache {
        let (caching, events) = match mode {
            Mode::Off => (Err("btl_ib_leave_pinned=0"), None),
            Mode::Auto | Mode::On => match invalidate::claim() {
                Ok(c) => (Ok(()), Some(c)),
                Err(why) => (Err(why), None),
            },
            Mode::Force => (Ok(()), invalidate::claim().ok()),
        };
        Rcache {
            caching,
            events,
            max_bytes,
            entries: Entries::new(),
            lru: Lru::new(),
            stats: Stats::default(),
            dereg_errors: 0,
        }
    }

    /// Whether registrations are kept after release, and if not, why.
    pub fn enabled(&self) -> Result<(), &'static str> {
        self.caching
    }

    /// Whether memory releases invalidate entries (false when caching is off, and in
    /// [`Mode::Force`] without memhook events).
    pub fn tracks_releases(&self) -> bool {
        self.events.is_some()
    }

    /// A registration covering `[addr, addr + len)` with at least `access` (`len` 0 counts as
    /// 1). The registration is page-aligned: [`Rcache::mr`] may start before `addr`.
    pub fn acquire(
        &mut self,
        dev: &mut dyn Device,
        addr: usize,
        len: usize,
        access: Access,
    ) -> Result<Handle, RegError> {
        self.drain_events(dev);
        let end = addr.checked_add(len.max(1)).ok_or_else(|| RegError {
            errno: libc::EINVAL,
            message: format!("rcache: range {addr:#x} + {len} bytes wraps around"),
        })?;
        if self.caching.is_ok() {
            if let Some(i) = self.entries.find(addr, end, access) {
                self.lru.remove(i);
                self.entries.get_mut(i).refs += 1;
                self.stats.hits += 1;
                return Ok(self.handle_of(i));
            }
        }
        self.stats.misses += 1;
        let (start, stop) = register::page_range(addr, end)?;
        if self.caching.is_ok() {
            self.miss_cached(dev, start, stop, access)
        } else {
            let mr = self.register(dev, start, stop, access)?;
            Ok(self.insert(mr, State::Detached))
        }
    }

    /// The registration behind a handle in use.
    pub fn mr(&self, h: Handle) -> Mr {
        let i = self
            .entries
            .index(h)
            .expect("rcache: mr() of a handle not in use");
        self.entries.get(i).mr
    }

    /// Gives a registration back: cached (most recently used) when caching, else deregistered.
    pub fn release(&mut self, dev: &mut dyn Device, h: Handle) {
        let i = self
            .entries
            .index(h)
            .expect("rcache: release() of a handle not in use");
        let e = self.entries.get_mut(i);
        assert!(
            e.refs > 0,
            "rcache: handle {h:?} released more often than acquired"
        );
        e.refs -= 1;
        if e.refs > 0 {
            return;
        }
        match e.state {
            State::Cached => self.lru.push_back(i),
            State::Detached => self.deregister(dev, i),
            State::Dead => {
                self.entries.remove(i);
            }
        }
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Deregistration failures seen (the device refused `dereg_mr`): such pins leak until the
    /// device closes.
    pub fn dereg_errors(&self) -> u64 {
        self.dereg_errors
    }

    /// Deregisters everything (at finalize), including registrations still in use: those
    /// handles stay valid for [`Rcache::release`] (which then only forgets them) and
    /// [`Rcache::mr`], but name no registration any more.
    pub fn clear(&mut self, dev: &mut dyn Device) {
        while let Some(i) = self.lru.pop_front() {
            self.deregister(dev, i);
        }
        for i in self.entries.all() {
            if self.entries.get(i).state != State::Dead {
                self.entries.detach(i);
                self.dereg_mr(dev, i);
                self.entries.get_mut(i).state = State::Dead;
            }
        }
    }

    fn handle_of(&self, i: u32) -> Handle {
        self.entries.handle(i)
    }

    /// Stores a fresh registration with one reference.
    fn insert(&mut self, mr: Mr, state: State) -> Handle {
        self.stats.pinned_bytes += mr.len;
        self.stats.entries += 1;
        self.entries.insert(entries::Entry { mr, refs: 1, state })
    }

    /// Deregisters an entry and frees its slot.
    fn deregister(&mut self, dev: &mut dyn Device, i: u32) {
        self.lru.remove(i);
        self.dereg_mr(dev, i);
        self.entries.remove(i);
    }

    /// The device call and the accounting, leaving the slot alone.
    fn dereg_mr(&mut self, dev: &mut dyn Device, i: u32) {
        let mr = self.entries.get(i).mr;
        self.stats.pinned_bytes -= mr.len;
        self.stats.entries -= 1;
        if dev.dereg_mr(mr).is_err() {
            self.dereg_errors += 1;
        }
    }

    /// Applies the ranges released since the last lookup.
    fn drain_events(&mut self, dev: &mut dyn Device) {
        let Some(claim) = self.events.take() else {
            return;
        };
        let complete = claim.drain(|addr, len| {
            for i in self.entries.overlapping(addr, addr.saturating_add(len)) {
                self.invalidate(dev, i);
            }
        });
        if !complete {
            for i in self.entries.cached() {
                self.invalidate(dev, i);
            }
        }
        self.events = Some(claim);
    }

    /// A cached entry whose memory was released: out of the lookup structure, deregistered now
    /// if unused, else at its last release.
    fn invalidate(&mut self, dev: &mut dyn Device, i: u32) {
        self.stats.invalidations += 1;
        if self.entries.get(i).refs == 0 {
            self.deregister(dev, i);
        } else {
            self.entries.detach(i);
        }
    }
}
