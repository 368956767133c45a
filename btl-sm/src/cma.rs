//! Single copy between processes via cross-memory attach (`process_vm_readv`).

use std::io;
use std::io::IoSliceMut;

use nix::errno::Errno;
use nix::sys::uio::{process_vm_readv, process_vm_writev, RemoteIoVec};
use nix::unistd::Pid;

/// Copy `local.len()` bytes from `remote_addr` in process `pid` (process_vm_readv, all iovecs).
///
/// Loops over partial reads. Errors keep their errno (`EPERM` when ptrace access is denied,
/// `ESRCH` for a missing process, `EFAULT` for an unmapped range, `ENOSYS` without CMA) so the
/// caller can fall back to copying through the channel.
pub fn read(pid: i32, remote_addr: usize, local: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < local.len() {
        let rest = &mut local[done..];
        let remote = [RemoteIoVec {
            base: remote_addr.wrapping_add(done),
            len: rest.len(),
        }];
        match process_vm_readv(Pid::from_raw(pid), &mut [IoSliceMut::new(rest)], &remote) {
            Ok(0) => return Err(io::Error::from_raw_os_error(libc::EFAULT)),
            Ok(n) => done += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(io::Error::from(e)),
        }
    }
    Ok(())
}

/// Most parts one [`read_many`] call passes (the kernel's limit is IOV_MAX, 1024).
pub const READ_MANY_MAX: usize = 64;

/// One part of [`read_many`]: `len` bytes from `remote` in the peer to `local` here.
#[derive(Clone, Copy, Debug)]
pub struct Part {
    pub remote: usize,
    pub local: *mut u8,
    pub len: usize,
}

/// [`read`] of several parts from process `pid` in one `process_vm_readv` (at most
/// [`READ_MANY_MAX`]): a window of rendezvous reads pays one call's fixed cost (the task
/// lookup, the iovec copies, the entry and exit) instead of one per message, 0.23 us each on
/// the VM (4 reads of 16 KiB: 2.1 against 2.8 us, of 64 KiB: 8.7 against 9.8). Parts may
/// overlap here (a window of receives into one buffer, as OSU's): they are written in order,
/// as one read after another would. A short count (the kernel stops at a fault) finishes part
/// by part with [`read`], which reports the error.
///
/// # Safety
/// Each part's `local` must be valid for writes of `len` bytes, and not otherwise accessed
/// during the call.
pub unsafe fn read_many(pid: i32, parts: &[Part]) -> io::Result<()> {
    assert!(parts.len() <= READ_MANY_MAX);
    let empty = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let (mut lv, mut rv) = ([empty; READ_MANY_MAX], [empty; READ_MANY_MAX]);
    for (k, p) in parts.iter().enumerate() {
        lv[k] = libc::iovec {
            iov_base: p.local.cast(),
            iov_len: p.len,
        };
        rv[k] = libc::iovec {
            iov_base: p.remote as *mut libc::c_void,
            iov_len: p.len,
        };
    }
    let total: usize = parts.iter().map(|p| p.len).sum();
    let n = parts.len() as libc::c_ulong;
    // SAFETY: both iovec arrays hold `n` entries; the local ones are writable (the caller's
    // contract), the remote ones are only read by the kernel in the other process.
    let got = unsafe { libc::process_vm_readv(pid, lv.as_ptr(), n, rv.as_ptr(), n, 0) };
    let mut got = match got {
        g if g >= 0 => g as usize,
        _ => match io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::EINTR) => 0,
            e => return Err(e),
        },
    };
    if got == total {
        return Ok(());
    }
    for p in parts {
        let skip = got.min(p.len);
        got -= skip;
        if skip < p.len {
            // SAFETY: the caller's contract on this part; skip < len.
            let rest = unsafe { std::slice::from_raw_parts_mut(p.local.add(skip), p.len - skip) };
            read(pid, p.remote + skip, rest)?;
        }
    }
    Ok(())
}

/// Copy `local` to `remote_addr` in process `pid` (process_vm_writev): the other direction of
/// [`read`], with the same loop over partial writes and the same errors.
pub fn write(pid: i32, remote_addr: usize, local: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while done < local.len() {
        let rest = &local[done..];
        let remote = [RemoteIoVec {
            base: remote_addr.wrapping_add(done),
            len: rest.len(),
        }];
        match process_vm_writev(Pid::from_raw(pid), &[io::IoSlice::new(rest)], &remote) {
            Ok(0) => return Err(io::Error::from_raw_os_error(libc::EFAULT)),
            Ok(n) => done += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(io::Error::from(e)),
        }
    }
    Ok(())
}

/// prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY) where Yama exists; harmless elsewhere.
///
/// Under Yama ptrace_scope=1 only ancestors may ptrace (and so CMA-read) a process; this lets
/// sibling ranks read our buffers. EINVAL (no Yama) is the expected failure and ignored.
pub fn allow_ptrace_from_any() {
    // SAFETY: PR_SET_PTRACER takes plain integers and touches no memory of ours.
    let _ = unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_memory() {
        let src: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        read(std::process::id() as i32, src.as_ptr() as usize, &mut dst).unwrap();
        assert_eq!(src, dst);
        read(std::process::id() as i32, 0, &mut []).unwrap();
    }

    #[test]
    fn reads_many_parts_in_one_call() {
        let src: Vec<u8> = (0..300_000u32).map(|i| (i * 11) as u8).collect();
        let (mut a, mut b, mut c) = (vec![0u8; 100_000], vec![0u8; 7], vec![0u8; 150_000]);
        let base = src.as_ptr() as usize;
        let me = std::process::id() as i32;
        let part = |remote: usize, l: &mut Vec<u8>| Part {
            remote,
            local: l.as_mut_ptr(),
            len: l.len(),
        };
        let parts = [
            part(base + 5, &mut a),
            part(base + 200_000, &mut b),
            part(base + 1000, &mut c),
        ];
        // SAFETY: each part's local buffer is a live Vec of `len` bytes, untouched meanwhile.
        unsafe { read_many(me, &parts) }.unwrap();
        assert_eq!(a, src[5..100_005]);
        assert_eq!(b, src[200_000..200_007]);
        assert_eq!(c, src[1000..151_000]);
        // Overlapping parts are written in order: the last one wins.
        let mut d = vec![0u8; 64];
        let parts = [part(base, &mut d), part(base + 64, &mut d)];
        // SAFETY: as above.
        unsafe { read_many(me, &parts) }.unwrap();
        assert_eq!(d, src[64..128]);
        // A bad part: the call stops there; the parts before it are read, the error is EFAULT.
        let (mut a, mut b) = (vec![0u8; 4096], vec![0u8; 16]);
        let parts = [part(base, &mut a), part(8, &mut b)];
        // SAFETY: as above.
        let e = unsafe { read_many(me, &parts) }.unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EFAULT));
        assert_eq!(a, src[..4096]);
    }

    #[test]
    fn writes_own_memory() {
        let src: Vec<u8> = (0..100_000u32).map(|i| (i * 13) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        write(std::process::id() as i32, dst.as_mut_ptr() as usize, &src).unwrap();
        assert_eq!(src, dst);
        let e = write(std::process::id() as i32, 8, &src[..16]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EFAULT));
    }

    #[test]
    fn partial_read_then_efault() {
        let page = crate::layout::page_size();
        // SAFETY: fresh private anonymous mapping of two pages, unmapped at the end of the test;
        // we only write its first page while it is readable/writable.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            std::ptr::write_bytes(p.cast::<u8>(), 7, page);
            assert_eq!(
                libc::mprotect(p.cast::<u8>().add(page).cast(), page, libc::PROT_NONE),
                0
            );
            let mut b = vec![0u8; 200];
            // Straddles the boundary: the first 100 bytes are read, then EFAULT.
            let e = read(std::process::id() as i32, p as usize + page - 100, &mut b).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EFAULT));
            assert!(b[..100].iter().all(|&x| x == 7));
            libc::munmap(p, 2 * page);
        }
    }

    #[test]
    fn errors_keep_errno() {
        allow_ptrace_from_any();
        let mut b = [0u8; 16];
        let e = read(i32::MAX - 7, 0x1000, &mut b).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
        let e = read(std::process::id() as i32, 8, &mut b).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EFAULT));
    }
}
