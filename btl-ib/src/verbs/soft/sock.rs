//! Thin wrappers over the syscalls of the wire: abstract-namespace SOCK_SEQPACKET unix sockets
//! (one message per work request, boundaries kept) and epoll.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cvt_size(r: libc::ssize_t) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// The address of `name` in the abstract namespace (leading NUL: nothing on the filesystem).
fn abstract_addr(name: &[u8]) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
    let mut sa: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if name.len() + 1 > sa.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "socket name too long",
        ));
    }
    sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (i, &b) in name.iter().enumerate() {
        sa.sun_path[i + 1] = b as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + 1 + name.len();
    Ok((sa, len as libc::socklen_t))
}

fn seqpacket() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the fd it returns is owned by nobody else.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    })?;
    // SAFETY: fd was just returned by socket() and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Room for a few full-size messages in flight per socket.
fn size_buffers(fd: RawFd, bytes: usize) {
    let v = bytes as libc::c_int;
    for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        // SAFETY: v outlives the call; its size is passed. Best effort: the default already
        // exceeds one 64 KiB message.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                &v as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
}

pub const SOCK_BUF: usize = 1 << 20;

/// A nonblocking listener at `name` with room for many peers dialing at once.
pub fn listen_abstract(name: &[u8]) -> io::Result<OwnedFd> {
    let fd = seqpacket()?;
    let (sa, len) = abstract_addr(name)?;
    // SAFETY: sa is a valid sockaddr_un of length len.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sa as *const _ as *const libc::sockaddr,
            len,
        )
    })?;
    // SAFETY: plain syscall on an fd we own.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), 1024) })?;
    Ok(fd)
}

/// Dials `name`; WouldBlock when the listener's backlog is full (retry later).
pub fn connect_abstract(name: &[u8]) -> io::Result<OwnedFd> {
    let fd = seqpacket()?;
    size_buffers(fd.as_raw_fd(), SOCK_BUF);
    let (sa, len) = abstract_addr(name)?;
    // SAFETY: sa is a valid sockaddr_un of length len.
    cvt(unsafe {
        libc::connect(
            fd.as_raw_fd(),
            &sa as *const _ as *const libc::sockaddr,
            len,
        )
    })?;
    Ok(fd)
}

/// One pending connection, or None when there is none. Connections from another user are
/// closed at once: an abstract socket has no file permissions, so anyone on the node can dial
/// it, and only the peer's credentials (SO_PEERCRED) tell a rank of this job's user apart.
pub fn accept(listener: RawFd) -> io::Result<Option<OwnedFd>> {
    loop {
        // SAFETY: null address pointers are allowed by accept4.
        let r = unsafe {
            libc::accept4(
                listener,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock {
                Ok(None)
            } else {
                Err(e)
            };
        }
        // SAFETY: r was just returned by accept4 and is not owned elsewhere.
        let fd = unsafe { OwnedFd::from_raw_fd(r) };
        // SAFETY: geteuid has no preconditions.
        if peer_uid(fd.as_raw_fd()) != Some(unsafe { libc::geteuid() }) {
            continue; // dropped: closed
        }
        size_buffers(fd.as_raw_fd(), SOCK_BUF);
        return Ok(Some(fd));
    }
}

/// The user id of the process at the other end of a connected unix socket.
fn peer_uid(fd: RawFd) -> Option<libc::uid_t> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: cred and len are valid for writes of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    (r == 0).then_some(cred.uid)
}

/// Sends `hdr` + `len` bytes at `data` as one message, without blocking or SIGPIPE.
///
/// The caller guarantees `[data, data + len)` is readable memory (a checked, live MR).
pub fn send_parts(fd: RawFd, hdr: &[u8], data: *const u8, len: usize) -> io::Result<()> {
    let mut iov = [
        libc::iovec {
            iov_base: hdr.as_ptr() as *mut libc::c_void,
            iov_len: hdr.len(),
        },
        libc::iovec {
            iov_base: data as *mut libc::c_void,
            iov_len: len,
        },
    ];
    // SAFETY: msghdr is plain old data; all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = if len == 0 { 1 } else { 2 };
    // SAFETY: the iovecs point to memory readable for their lengths (caller's contract for
    // data); the kernel only reads them.
    let n = cvt_size(unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) })?;
    debug_assert_eq!(n, hdr.len() + len);
    Ok(())
}

/// Receives one message into `hdr` + `[buf, buf + len)`. Returns the full message length (may
/// exceed the room when truncated) and whether it was truncated. Ok(None): end of stream.
///
/// The caller guarantees `[buf, buf + len)` is writable memory (a checked, live MR).
pub fn recv_parts(
    fd: RawFd,
    hdr: &mut [u8],
    buf: *mut u8,
    len: usize,
) -> io::Result<Option<(usize, bool)>> {
    let mut iov = [
        libc::iovec {
            iov_base: hdr.as_mut_ptr() as *mut libc::c_void,
            iov_len: hdr.len(),
        },
        libc::iovec {
            iov_base: buf as *mut libc::c_void,
            iov_len: len,
        },
    ];
    // SAFETY: msghdr is plain old data; all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = if len == 0 { 1 } else { 2 };
    // SAFETY: the iovecs point to memory writable for their lengths (hdr is a live slice,
    // buf is the caller's contract).
    let n = cvt_size(unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT | libc::MSG_TRUNC) })?;
    if n == 0 {
        return Ok(None);
    }
    Ok(Some((n, msg.msg_flags & libc::MSG_TRUNC != 0)))
}

/// Reads the start of the next message into `hdr` without consuming it. Ok(0): end of stream.
pub fn peek(fd: RawFd, hdr: &mut [u8]) -> io::Result<usize> {
    // SAFETY: hdr is a live, writable slice of the length passed.
    cvt_size(unsafe {
        libc::recv(
            fd,
            hdr.as_mut_ptr() as *mut libc::c_void,
            hdr.len(),
            libc::MSG_DONTWAIT | libc::MSG_PEEK,
        )
    })
}

/// Receives one (small) message into `buf`, dropping what does not fit. Ok(0): end of stream.
pub fn recv_small(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is a live, writable slice of the length passed.
    cvt_size(unsafe {
        libc::recv(
            fd,
            buf.as_mut_ptr() as *mut libc::c_void,
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    })
}

/// Waits up to `ms` for `fd` to become writable.
pub fn wait_writable(fd: RawFd, ms: i32) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: p is one live pollfd.
    unsafe { libc::poll(&mut p, 1, ms) };
}

pub struct Epoll(OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall; the fd it returns is owned by nobody else.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: fd was just returned by epoll_create1.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Level-triggered readability of `fd`, reported with `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
            u64: token,
        };
        // SAFETY: ev is a live epoll_event; both fds are open.
        cvt(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    pub fn del(&self, fd: RawFd) {
        // SAFETY: a null event is allowed for EPOLL_CTL_DEL; failure (not registered) is fine.
        unsafe {
            libc::epoll_ctl(
                self.0.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd,
                std::ptr::null_mut(),
            )
        };
    }

    /// The tokens of ready fds, without waiting.
    pub fn ready(&self, out: &mut Vec<u64>) {
        out.clear();
        const N: usize = 128;
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; N];
        // SAFETY: evs has room for N events.
        let n = unsafe { libc::epoll_wait(self.0.as_raw_fd(), evs.as_mut_ptr(), N as i32, 0) };
        for ev in evs.iter().take(n.max(0) as usize) {
            out.push(ev.u64);
        }
    }
}
