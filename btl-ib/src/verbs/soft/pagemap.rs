//! Page-frame numbers from /proc/<pid>/pagemap, to notice a registered range whose pages were
//! freed and replaced while registered (hardware would keep DMA-ing to the old pages).

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

const PFN_MASK: u64 = (1 << 55) - 1;
const PRESENT: u64 = 1 << 63;

pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Cached pagemap files, one per pid (ours and our peers').
#[derive(Default)]
pub struct Pagemap {
    files: HashMap<u32, File>,
}

impl Pagemap {
    /// The entries (present bit | PFN) of `npages` pages from page number `first` in `pid`.
    pub fn read(&mut self, pid: u32, first: usize, npages: usize) -> io::Result<Vec<u64>> {
        let mut raw = vec![0u8; npages * 8];
        if npages == 0 {
            return Ok(Vec::new());
        }
        let f = match self.files.get(&pid) {
            Some(f) => f,
            None => {
                let f = File::open(format!("/proc/{pid}/pagemap"))?;
                self.files.entry(pid).or_insert(f)
            }
        };
        if let Err(e) = f.read_exact_at(&mut raw, first as u64 * 8) {
            // The process may be gone (and its pid reused later): do not keep a stale file.
            self.files.remove(&pid);
            return Err(e);
        }
        Ok(raw
            .chunks_exact(8)
            .map(|c| {
                let v = u64::from_ne_bytes(c.try_into().unwrap());
                v & (PFN_MASK | PRESENT)
            })
            .collect())
    }

    pub fn forget(&mut self, pid: u32) {
        self.files.remove(&pid);
    }
}

/// Whether PFNs are visible to us: present pages read as PFN 0 without CAP_SYS_ADMIN.
pub fn pfns_visible(entries: &[u64]) -> bool {
    entries
        .iter()
        .all(|&e| e & PRESENT == 0 || e & PFN_MASK != 0)
}

/// Whether the pages now mapped are those recorded at registration.
pub fn unchanged(recorded: &[u64], now: &[u64]) -> bool {
    recorded.len() == now.len()
        && recorded
            .iter()
            .zip(now)
            .all(|(a, b)| a == b && a & PRESENT != 0)
}

/// The detail of a remap error.
pub fn remap_detail(addr: usize, len: usize, pid: u32) -> String {
    format!(
        "pages of [{addr:#x}, +{len}) in pid {pid} were remapped since registration \
         (memory freed and reused while registered)"
    )
}
