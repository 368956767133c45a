//! The miss path: page alignment, merging with overlapping cached entries, the `max_bytes`
//! bound (LRU eviction) and the device's ENOMEM (evict every unused entry, retry once).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::entries::State;
use super::{Handle, Rcache};
use crate::verbs::{Access, Device, Mr, RegError};

static PAGE: AtomicUsize = AtomicUsize::new(0);

pub(super) fn page_size() -> usize {
    let p = PAGE.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    // SAFETY: sysconf only reads a system constant.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let p = if v > 0 && (v as usize).is_power_of_two() {
        v as usize
    } else {
        4096
    };
    PAGE.store(p, Ordering::Relaxed);
    p
}

/// `[floor_page(addr), ceil_page(end))`.
pub(super) fn page_range(addr: usize, end: usize) -> Result<(usize, usize), RegError> {
    let mask = page_size() - 1;
    let stop = end.checked_add(mask).ok_or_else(|| RegError {
        errno: libc::EINVAL,
        message: format!("rcache: range {addr:#x}..{end:#x} reaches the end of the address space"),
    })? & !mask;
    Ok((addr & !mask, stop))
}

impl Rcache {
    /// A miss while caching: the cached entries overlapping the pages leave the lookup
    /// structure (unused ones deregistered, in-use ones detached) and one registration covering
    /// them all replaces them; if that union cannot be registered, the requested pages alone.
    pub(super) fn miss_cached(
        &mut self,
        dev: &mut dyn Device,
        start: usize,
        stop: usize,
        access: Access,
    ) -> Result<Handle, RegError> {
        let (mut lo, mut hi, mut acc) = (start, stop, access);
        for i in self.entries.overlapping(start, stop) {
            let e = *self.entries.get(i);
            lo = lo.min(e.start());
            hi = hi.max(e.end());
            acc = acc | e.mr.access;
            if e.refs == 0 {
                self.deregister(dev, i);
            } else {
                self.entries.detach(i);
            }
        }
        let mr = match self.register(dev, lo, hi, acc) {
            Err(_) if (lo, hi, acc) != (start, stop, access) => {
                self.register(dev, start, stop, access)?
            }
            r => r?,
        };
        Ok(self.insert(mr, State::Cached))
    }

    /// Registers `[start, stop)` within the bound, evicting unused entries as needed.
    pub(super) fn register(
        &mut self,
        dev: &mut dyn Device,
        start: usize,
        stop: usize,
        access: Access,
    ) -> Result<Mr, RegError> {
        let len = stop - start;
        self.make_room(dev, start, len)?;
        match dev.reg_mr(start, len, access) {
            Err(e) if e.errno == libc::ENOMEM && !self.lru.is_empty() => {
                // Probably RLIMIT_MEMLOCK: our cached pins are what the device lacks.
                let evicted = self.lru.len();
                while self.evict_one(dev) {}
                dev.reg_mr(start, len, access).map_err(|e| RegError {
                    errno: e.errno,
                    message: format!(
                        "{} (even after evicting all {evicted} unused cached registrations)",
                        e.message
                    ),
                })
            }
            r => r,
        }
    }

    /// Evicts least recently used entries until `len` more bytes fit under `max_bytes`.
    fn make_room(
        &mut self,
        dev: &mut dyn Device,
        start: usize,
        len: usize,
    ) -> Result<(), RegError> {
        while self.stats.pinned_bytes.saturating_add(len) > self.max_bytes {
            if !self.evict_one(dev) {
                return Err(RegError {
                    errno: libc::ENOMEM,
                    message: format!(
                        "rcache: cannot register {len} bytes at {start:#x}: {} bytes are in use by transfers in progress and the bound is {} bytes (raise btl_ib_rcache_max_bytes)",
                        self.stats.pinned_bytes, self.max_bytes
                    ),
                });
            }
        }
        Ok(())
    }

    /// Deregisters the least recently used unused entry; false if there is none.
    fn evict_one(&mut self, dev: &mut dyn Device) -> bool {
        match self.lru.pop_front() {
            Some(i) => {
                self.deregister(dev, i);
                self.stats.evictions += 1;
                true
            }
            None => false,
        }
    }
}
