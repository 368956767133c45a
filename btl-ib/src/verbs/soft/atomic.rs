//! The two verbs atomics between processes. process_vm_readv/writev cannot do an atomic
//! read-modify-write and a peer's private memory cannot be mapped, so every soft device owns a
//! lock file (a memfd) and an atomic on word `addr` of a process takes an OFD write lock on
//! bytes `[addr, addr + 8)` of that process's lock file, then reads, modifies and writes the
//! word by CMA. Peers reach the file through `/proc/<pid>/fd/<fd>` (a fresh open file
//! description each: OFD locks of one description never conflict, so pidfd_getfd, which
//! shares the target's, would not do). Atomics from every peer and `atomic_local` on the
//! target itself exclude each other per word; plain loads and stores do not see the lock, as
//! with IBV_ATOMIC_HCA on hardware. The kernel drops a dead holder's lock.

use super::rdma::{self, Fail};
use crate::verbs::{AtomicOp, WcStatus};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// This device's lock file.
pub fn create_lock_file() -> io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated name; the result is checked.
    let fd = unsafe { libc::memfd_create(c"rmpi-ib-atomics".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A description of its own on `pid`'s lock file `fd`.
pub fn open_lock_file(pid: u32, fd: u32) -> io::Result<OwnedFd> {
    let path = format!("/proc/{pid}/fd/{fd}\0");
    // SAFETY: a NUL-terminated path; the result is checked.
    let r = unsafe {
        libc::open(
            path.as_ptr() as *const libc::c_char,
            libc::O_RDWR | libc::O_CLOEXEC,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(r) })
}

fn ofd_lock(fd: RawFd, addr: u64, lock: bool) -> io::Result<()> {
    // SAFETY: flock is plain data; all-zero is a valid value.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = if lock { libc::F_WRLCK } else { libc::F_UNLCK } as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = addr as libc::off_t;
    fl.l_len = 8;
    loop {
        // SAFETY: `fl` is a valid flock for the call's duration.
        let r = unsafe { libc::fcntl(fd, libc::F_OFD_SETLKW, &mut fl) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Runs `f` holding the lock on word `addr` in `lock_file`.
fn locked<R>(lock_file: &OwnedFd, addr: u64, f: impl FnOnce() -> R) -> io::Result<R> {
    ofd_lock(lock_file.as_raw_fd(), addr, true)?;
    let r = f();
    ofd_lock(lock_file.as_raw_fd(), addr, false)?;
    Ok(r)
}

/// `op` on the word at `raddr` in `pid` (checked by the caller: registered, in bounds,
/// aligned); the old value.
pub fn remote(lock_file: &OwnedFd, pid: u32, raddr: u64, op: AtomicOp) -> Result<u64, Fail> {
    let r = locked(lock_file, raddr, || -> io::Result<u64> {
        let mut old = 0u64;
        rdma::read_from(pid, &mut old as *mut u64 as *mut u8, raddr, 8)?;
        let new = op.apply(old);
        if new != old {
            rdma::write_to(pid, &new as *const u64 as *const u8, raddr, 8)?;
        }
        Ok(old)
    });
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(rdma::transfer_fail(pid, e)),
        Err(e) => Err((
            WcStatus::GeneralErr,
            format!("atomic lock of pid {pid}: {e}"),
        )),
    }
}

/// `op` on this process's word at `addr`, under this process's own lock file.
///
/// # Safety
/// `addr` is 8-byte aligned and points at 8 live bytes of this process.
pub unsafe fn local(lock_file: &OwnedFd, addr: usize, op: AtomicOp) -> io::Result<u64> {
    locked(lock_file, addr as u64, || {
        let p = addr as *mut u64;
        // SAFETY: the caller's contract; volatile: peers change the word behind our back.
        let old = unsafe { p.read_volatile() };
        let new = op.apply(old);
        if new != old {
            // SAFETY: as above.
            unsafe { p.write_volatile(new) };
        }
        old
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Threads, each with its own description of one lock file (as peers have), hammer one
    /// word with fetch-and-add by CMA and compare-and-swap increments, and the owner with
    /// local ones: no update is lost.
    #[test]
    fn concurrent_atomics_on_one_word_lose_nothing() {
        let owner = create_lock_file().unwrap();
        let pid = std::process::id();
        let fd = owner.as_raw_fd() as u32;
        let word = Box::new(AtomicU64::new(0));
        let addr = &*word as *const AtomicU64 as usize;
        const N: u64 = 2000;
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    let mine = open_lock_file(pid, fd).unwrap();
                    for _ in 0..N {
                        if t % 2 == 0 {
                            remote(&mine, pid, addr as u64, AtomicOp::FetchAdd(1)).unwrap();
                        } else {
                            // An increment by compare-and-swap, retried until it lands.
                            let mut guess = 0;
                            loop {
                                let op = AtomicOp::CmpSwap {
                                    compare: guess,
                                    swap: guess + 1,
                                };
                                let old = remote(&mine, pid, addr as u64, op).unwrap();
                                if old == guess {
                                    break;
                                }
                                guess = old;
                            }
                        }
                    }
                });
            }
            let owner = &owner;
            s.spawn(move || {
                for _ in 0..N {
                    // SAFETY: `word` is aligned and lives until the scope ends.
                    unsafe { local(owner, addr, AtomicOp::FetchAdd(1)) }.unwrap();
                }
            });
        });
        assert_eq!(word.load(Ordering::SeqCst), 5 * N);
    }
}
