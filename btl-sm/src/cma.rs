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
