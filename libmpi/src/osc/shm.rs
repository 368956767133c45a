//! Memory of MPI_Win_allocate_shared: one memfd created by the communicator's first rank and
//! mapped read-write by every rank (all on this node), so each can load and store the others'
//! parts directly. Peers open it through `/proc/<pid>/fd/<fd>` (or pidfd_getfd), as btl-sm's
//! single copy does; nothing is named in /dev/shm, so nothing can leak.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A mapping of the window's memfd; unmapped (and the descriptor closed) on drop.
pub struct Segment {
    pub base: *mut u8,
    pub len: usize,
    pub fd: OwnedFd,
}

fn map(fd: &OwnedFd, len: usize) -> io::Result<*mut u8> {
    // SAFETY: a new shared mapping of the whole memfd at an address the kernel picks.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p.cast())
}

impl Segment {
    /// Create a zero-filled segment of `len` bytes (at least one page).
    pub fn create(len: usize) -> io::Result<Segment> {
        let len = len.max(1);
        let name = c"rmpi-win";
        // SAFETY: memfd_create reads the NUL-terminated name only.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: plain syscall on our own descriptor.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let base = map(&fd, len)?;
        Ok(Segment { base, len, fd })
    }

    /// Map the segment `fd` of process `pid` (created by `create` there).
    pub fn attach(pid: i32, fd: RawFd, len: usize) -> io::Result<Segment> {
        let len = len.max(1);
        let fd = open_peer_fd(pid, fd)?;
        let base = map(&fd, len)?;
        Ok(Segment { base, len, fd })
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no longer used once the window is freed.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

fn open_peer_fd(pid: i32, fd: RawFd) -> io::Result<OwnedFd> {
    let path = format!("/proc/{pid}/fd/{fd}\0");
    // SAFETY: a NUL-terminated path; open touches nothing else of ours.
    let r = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDWR | libc::O_CLOEXEC) };
    if r >= 0 {
        // SAFETY: a fresh descriptor nothing else owns.
        return Ok(unsafe { OwnedFd::from_raw_fd(r) });
    }
    let proc_err = io::Error::last_os_error();
    // SAFETY: raw syscalls with integer arguments; the returned descriptors are new and ours.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        return Err(io::Error::other(format!(
            "open /proc/{pid}/fd/{fd}: {proc_err}; pidfd_open: {}",
            io::Error::last_os_error()
        )));
    }
    // SAFETY: as above.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    // SAFETY: as above.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if r < 0 {
        return Err(io::Error::other(format!(
            "open /proc/{pid}/fd/{fd}: {proc_err}; pidfd_getfd: {}",
            io::Error::last_os_error()
        )));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(r as RawFd) })
}
