//! The MR table: registrations pinned with mlock, accounted against RLIMIT_MEMLOCK, and
//! published in a fixed array that peers read with process_vm_readv (under a seqlock).

use super::pagemap::{self, Pagemap};
use crate::verbs::{Access, Mr, RegError, Sge, WcStatus};
use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicU64, Ordering};

pub const TABLE_CAP: usize = 4096;

/// One published entry. All fields atomic: peers copy it while we may be rewriting it.
/// Layout shared with [`RawEntry`].
#[repr(C)]
#[derive(Default)]
pub struct Entry {
    seq: AtomicU64,
    /// key | access << 32; key 0: free.
    key_access: AtomicU64,
    addr: AtomicU64,
    len: AtomicU64,
    /// Address and count of the PFN array recorded at registration (count 0: not recorded).
    pfns: AtomicU64,
    npfns: AtomicU64,
}

/// An entry as a peer copies it.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct RawEntry {
    pub seq: u64,
    pub key_access: u64,
    pub addr: u64,
    pub len: u64,
    pub pfns: u64,
    pub npfns: u64,
}

pub const ENTRY_SIZE: usize = std::mem::size_of::<RawEntry>();
const _: () = assert!(std::mem::size_of::<Entry>() == ENTRY_SIZE);

/// A live registration, as this process knows it.
pub struct Region {
    pub addr: usize,
    pub len: usize,
    pub access: Access,
    pub key: u32,
    /// PFNs of the page-rounded range at registration; empty when detection is off.
    pub pfns: Vec<u64>,
}

pub struct MrTable {
    entries: Box<[Entry]>,
    slots: Vec<Option<Region>>,
    gens: Vec<u8>,
    /// Free slots, oldest first: a slot's generation comes back as late as possible.
    free: VecDeque<u32>,
    pinned: usize,
    page: usize,
    pid: u32,
}

/// RLIMIT_MEMLOCK's soft limit, None when unlimited.
pub fn memlock_limit() -> Option<usize> {
    // SAFETY: rlimit is plain old data; all-zero is a valid value.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: rl is a live rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) } != 0
        || rl.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    Some(rl.rlim_cur as usize)
}

impl MrTable {
    pub fn new() -> MrTable {
        let entries: Box<[Entry]> = (0..TABLE_CAP).map(|_| Entry::default()).collect();
        MrTable {
            entries,
            slots: (0..TABLE_CAP).map(|_| None).collect(),
            gens: vec![0; TABLE_CAP],
            free: (0..TABLE_CAP as u32).collect(),
            pinned: 0,
            page: pagemap::page_size(),
            pid: std::process::id(),
        }
    }

    pub fn table_addr(&self) -> u64 {
        self.entries.as_ptr() as u64
    }

    pub fn page(&self) -> usize {
        self.page
    }

    pub fn pinned(&self) -> usize {
        self.pinned
    }

    fn rounded(&self, addr: usize, len: usize) -> (usize, usize) {
        let start = addr & !(self.page - 1);
        let end = (addr + len).div_ceil(self.page) * self.page;
        (start, end)
    }

    /// Registers and pins; `detect` says whether to record PFNs (cleared when they read as 0).
    pub fn reg(
        &mut self,
        addr: usize,
        len: usize,
        access: Access,
        pm: &mut Pagemap,
        detect: &mut bool,
    ) -> Result<Mr, RegError> {
        if addr.checked_add(len).is_none() || len > isize::MAX as usize {
            return Err(RegError {
                errno: libc::EINVAL,
                message: format!("bad range [{addr:#x}, +{len})"),
            });
        }
        let (start, end) = self.rounded(addr, len);
        let bytes = if len == 0 { 0 } else { end - start };
        if let Some(limit) = memlock_limit() {
            if self.pinned + bytes > limit {
                return Err(RegError {
                    errno: libc::ENOMEM,
                    message: format!(
                        "cannot register [{addr:#x}, +{len}): pinning {bytes} bytes with {} bytes already \
                         pinned would exceed RLIMIT_MEMLOCK ({limit} bytes); raise `ulimit -l`",
                        self.pinned
                    ),
                });
            }
        }
        let Some(&idx) = self.free.front() else {
            return Err(RegError {
                errno: libc::ENOMEM,
                message: format!("the soft MR table is full ({TABLE_CAP} regions)"),
            });
        };
        let mut pfns = Vec::new();
        if bytes > 0 {
            check_mapped(start, bytes)?;
            // SAFETY: mlock only changes residency of a range checked to be mapped.
            if unsafe { libc::mlock(start as *const libc::c_void, bytes) } != 0 {
                let e = std::io::Error::last_os_error();
                return Err(RegError {
                    errno: e.raw_os_error().unwrap_or(libc::ENOMEM),
                    message: format!(
                        "mlock of [{start:#x}, +{bytes}) failed: {e}; raise `ulimit -l`?"
                    ),
                });
            }
            if *detect {
                match pm.read(self.pid, start / self.page, bytes / self.page) {
                    Ok(p) if pagemap::pfns_visible(&p) => pfns = p,
                    _ => *detect = false,
                }
            }
        }
        self.free.pop_front();
        let i = idx as usize;
        self.gens[i] = self.gens[i].wrapping_add(1).max(1);
        let key = idx << 8 | self.gens[i] as u32;
        self.publish(i, key, access, addr, len, &pfns);
        self.slots[i] = Some(Region {
            addr,
            len,
            access,
            key,
            pfns,
        });
        self.pinned += bytes;
        Ok(Mr {
            addr,
            len,
            lkey: key,
            rkey: key,
            access,
        })
    }

    /// Writes entry `i` under its seqlock (odd while writing).
    fn publish(&self, i: usize, key: u32, access: Access, addr: usize, len: usize, pfns: &[u64]) {
        let e = &self.entries[i];
        let s = e.seq.load(Ordering::Relaxed);
        e.seq.store(s + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        e.key_access
            .store(key as u64 | (access.0 as u64) << 32, Ordering::Relaxed);
        e.addr.store(addr as u64, Ordering::Relaxed);
        e.len.store(len as u64, Ordering::Relaxed);
        e.pfns.store(pfns.as_ptr() as u64, Ordering::Relaxed);
        e.npfns.store(pfns.len() as u64, Ordering::Relaxed);
        e.seq.store(s + 2, Ordering::Release);
    }

    pub fn lookup(&self, key: u32) -> Option<&Region> {
        let r = self.slots.get((key >> 8) as usize)?.as_ref()?;
        (r.key == key).then_some(r)
    }

    pub fn keys(&self) -> Vec<u32> {
        self.slots.iter().flatten().map(|r| r.key).collect()
    }

    /// Unpublishes, then unpins the pages no other live registration covers.
    pub fn dereg(&mut self, key: u32) -> Option<()> {
        self.lookup(key)?;
        let i = (key >> 8) as usize;
        // Unpublish before the PFN array is freed: a peer reading it sees the sequence move.
        self.publish(i, 0, Access(0), 0, 0, &[]);
        let r = self.slots[i].take()?;
        self.free.push_back(i as u32);
        if r.len == 0 {
            return Some(());
        }
        let (start, end) = self.rounded(r.addr, r.len);
        self.pinned -= end - start;
        let mut others: Vec<(usize, usize)> = self
            .slots
            .iter()
            .flatten()
            .filter(|o| o.len > 0)
            .map(|o| self.rounded(o.addr, o.len))
            .filter(|&(s, e)| s < end && e > start)
            .collect();
        others.sort_unstable();
        let mut at = start;
        for (s, e) in others.into_iter().chain([(end, end)]) {
            if s > at {
                let to = s.min(end);
                // SAFETY: munlock only changes residency; the range was locked by us.
                unsafe { libc::munlock(at as *const libc::c_void, to - at) };
            }
            at = at.max(e);
            if at >= end {
                break;
            }
        }
        Some(())
    }

    /// Checks a local sge: live key, bounds, access, and (when detecting) unchanged pages.
    pub fn check_local(
        &self,
        sge: &Sge,
        need: Access,
        pm: &mut Pagemap,
        detect: bool,
    ) -> Result<(), (WcStatus, String)> {
        let prot = |d: String| Err((WcStatus::LocProtErr, d));
        let Some(r) = self.lookup(sge.lkey) else {
            return prot(format!("unknown lkey {:#x}", sge.lkey));
        };
        let inside = sge.addr >= r.addr
            && sge
                .addr
                .checked_add(sge.len)
                .is_some_and(|e| e <= r.addr + r.len);
        if !inside {
            return prot(format!(
                "sge [{:#x}, +{}) out of bounds of region [{:#x}, +{}) (lkey {:#x})",
                sge.addr, sge.len, r.addr, r.len, r.key
            ));
        }
        if !r.access.contains(need) {
            return prot(format!("region of lkey {:#x} lacks LOCAL_WRITE", r.key));
        }
        if detect && !r.pfns.is_empty() && sge.len > 0 {
            let first = sge.addr / self.page;
            let n = (sge.addr + sge.len - 1) / self.page + 1 - first;
            let off = first - r.addr / self.page;
            let now = pm.read(self.pid, first, n).unwrap_or_default();
            if !pagemap::unchanged(&r.pfns[off..off + n], &now) {
                return prot(pagemap::remap_detail(sge.addr, sge.len, self.pid));
            }
        }
        Ok(())
    }
}

/// EFAULT unless every page of `[start, start + bytes)` is mapped (mincore fails with ENOMEM).
fn check_mapped(start: usize, bytes: usize) -> Result<(), RegError> {
    let mut vec = vec![0u8; bytes.div_ceil(pagemap::page_size())];
    // SAFETY: vec has one byte per page of the page-aligned range.
    let r = unsafe { libc::mincore(start as *mut libc::c_void, bytes, vec.as_mut_ptr()) };
    if r != 0 {
        return Err(RegError {
            errno: libc::EFAULT,
            message: format!(
                "cannot register [{start:#x}, +{bytes}): the range is not (entirely) mapped"
            ),
        });
    }
    Ok(())
}
