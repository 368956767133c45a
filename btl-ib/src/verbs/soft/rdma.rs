//! One-sided RDMA between processes: the peer's MR table entry is read with process_vm_readv
//! (seqlock retried), checked (key, bounds, access, pages), then the data moves with
//! process_vm_readv / process_vm_writev. The target process does nothing.

use super::mr::{RawEntry, ENTRY_SIZE};
use super::pagemap::{self, Pagemap};
use crate::verbs::{Access, WcStatus};
use std::io;

/// Copies `len` bytes between `local` (ours) and `remote` (in `pid`), either way.
fn vm_copy(pid: u32, local: *mut u8, remote: u64, len: usize, write: bool) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        let l = libc::iovec {
            iov_base: local.wrapping_add(done) as *mut libc::c_void,
            iov_len: len - done,
        };
        let r = libc::iovec {
            iov_base: (remote as usize + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: the caller guarantees `local` is ours, live and (for reads) writable for
        // `len`; the remote side is checked by the kernel (EFAULT), not dereferenced here.
        let n = unsafe {
            if write {
                libc::process_vm_writev(pid as libc::pid_t, &l, 1, &r, 1, 0)
            } else {
                libc::process_vm_readv(pid as libc::pid_t, &l, 1, &r, 1, 0)
            }
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::from_raw_os_error(libc::EFAULT));
        }
        done += n as usize;
    }
    Ok(())
}

pub fn read_from(pid: u32, local: *mut u8, remote: u64, len: usize) -> io::Result<()> {
    vm_copy(pid, local, remote, len, false)
}

pub fn write_to(pid: u32, local: *const u8, remote: u64, len: usize) -> io::Result<()> {
    vm_copy(pid, local as *mut u8, remote, len, true)
}

fn read_u64s(pid: u32, remote: u64, out: &mut [u64]) -> io::Result<()> {
    read_from(pid, out.as_mut_ptr() as *mut u8, remote, out.len() * 8)
}

/// The peer device, as its address describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub pid: u32,
    pub table: u64,
    pub cap: u32,
    /// Its atomics lock file (`atomic.rs`).
    pub lock_fd: u32,
    pub name: Vec<u8>,
}

/// A failed remote check: the completion status and its detail.
pub type Fail = (WcStatus, String);

fn io_fail(pid: u32, e: io::Error) -> Fail {
    if e.raw_os_error() == Some(libc::ESRCH) {
        (
            WcStatus::RetryExcErr,
            format!("peer pid {pid} is gone (ESRCH)"),
        )
    } else {
        (
            WcStatus::RemAccessErr,
            format!("cannot access pid {pid}: {e}"),
        )
    }
}

/// Checks that `[addr, +len)` in `peer` lies in the live region `rkey` with right `need`, and
/// (when `detect`) that its pages are those recorded at registration.
pub fn check_remote(
    peer: &Peer,
    rkey: u32,
    (addr, len): (u64, usize),
    need: Access,
    pm: &mut Pagemap,
    detect: bool,
    page: usize,
) -> Result<(), Fail> {
    let idx = (rkey >> 8) as u64;
    let unknown = || Err((WcStatus::RemAccessErr, format!("unknown rkey {rkey:#x}")));
    if rkey == 0 || idx >= peer.cap as u64 {
        return unknown();
    }
    let at = peer.table + idx * ENTRY_SIZE as u64;
    for _ in 0..10_000 {
        let mut e = RawEntry::default();
        read_from(peer.pid, &mut e as *mut RawEntry as *mut u8, at, ENTRY_SIZE)
            .map_err(|er| io_fail(peer.pid, er))?;
        if e.seq & 1 == 1 {
            std::hint::spin_loop();
            continue;
        }
        if e.key_access as u32 != rkey {
            return unknown();
        }
        let access = Access((e.key_access >> 32) as u32);
        let inside = addr >= e.addr
            && addr
                .checked_add(len as u64)
                .is_some_and(|x| x <= e.addr + e.len);
        if !inside {
            return Err((
                WcStatus::RemAccessErr,
                format!(
                    "out of bounds: [{addr:#x}, +{len}) is not inside region [{:#x}, +{}) of rkey {rkey:#x}",
                    e.addr, e.len
                ),
            ));
        }
        if !access.contains(need) {
            let right = if need == Access::REMOTE_READ {
                "REMOTE_READ"
            } else if need == Access::REMOTE_ATOMIC {
                "REMOTE_ATOMIC"
            } else {
                "REMOTE_WRITE"
            };
            return Err((
                WcStatus::RemAccessErr,
                format!("region of rkey {rkey:#x} lacks {right}"),
            ));
        }
        let mut remapped = false;
        if detect && e.npfns > 0 && len > 0 {
            let first = addr as usize / page;
            let n = (addr as usize + len - 1) / page + 1 - first;
            let off = first - e.addr as usize / page;
            let mut recorded = vec![0u64; n];
            read_u64s(peer.pid, e.pfns + off as u64 * 8, &mut recorded)
                .map_err(|er| io_fail(peer.pid, er))?;
            let now = pm.read(peer.pid, first, n).unwrap_or_default();
            remapped = !pagemap::unchanged(&recorded, &now);
        }
        // The entry may have changed while we read it (and its PFN array been freed): retry.
        let mut seq = [0u64];
        read_u64s(peer.pid, at, &mut seq).map_err(|er| io_fail(peer.pid, er))?;
        if seq[0] != e.seq {
            continue;
        }
        if remapped {
            return Err((
                WcStatus::RemAccessErr,
                pagemap::remap_detail(addr as usize, len, peer.pid),
            ));
        }
        return Ok(());
    }
    Err((
        WcStatus::RemAccessErr,
        format!("rkey {rkey:#x}: entry kept changing while read"),
    ))
}

/// Maps a failed transfer to a completion.
pub fn transfer_fail(pid: u32, e: io::Error) -> Fail {
    io_fail(pid, e)
}
