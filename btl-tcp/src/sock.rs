//! The socket calls std does not offer: a non-blocking connect, buffer sizes set before
//! listen/connect (the window scale is fixed at the SYN), and a vectored send that cannot raise
//! SIGPIPE (a C program linking libmpi keeps SIGPIPE's default action, which kills).

use std::io;
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn stream_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the descriptor is owned by the OwnedFd from here on.
    let fd = check(unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    })?;
    // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn set_int(fd: RawFd, level: i32, opt: i32, v: i32) -> io::Result<()> {
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes at `&v`, which lives through the call.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// SO_SNDBUF / SO_RCVBUF, unless 0 (kernel autotuning).
pub fn set_buffers(fd: RawFd, sndbuf: usize, rcvbuf: usize) -> io::Result<()> {
    if sndbuf > 0 {
        set_int(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            sndbuf.min(i32::MAX as usize) as i32,
        )?;
    }
    if rcvbuf > 0 {
        set_int(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            rcvbuf.min(i32::MAX as usize) as i32,
        )?;
    }
    Ok(())
}

/// A non-blocking listener on `addr` (port 0: an ephemeral one).
pub fn listen(addr: SocketAddrV4, sndbuf: usize, rcvbuf: usize) -> io::Result<TcpListener> {
    let fd = stream_socket()?;
    set_buffers(fd.as_raw_fd(), sndbuf, rcvbuf)?;
    let sa = sockaddr(addr);
    // SAFETY: `sa` is a valid sockaddr_in of the length given, alive through the call.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })?;
    // SAFETY: listen(2) on the socket we own.
    check(unsafe { libc::listen(fd.as_raw_fd(), 1024) })?;
    Ok(TcpListener::from(fd))
}

/// Starts a non-blocking connect to `addr`; the connection completes (or fails) later, which a
/// send (EAGAIN until then) or a read (the error) tells.
pub fn connect(addr: SocketAddrV4, sndbuf: usize, rcvbuf: usize) -> io::Result<TcpStream> {
    let fd = stream_socket()?;
    set_buffers(fd.as_raw_fd(), sndbuf, rcvbuf)?;
    let sa = sockaddr(addr);
    // SAFETY: `sa` is a valid sockaddr_in of the length given, alive through the call.
    let r = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    let s = TcpStream::from(fd);
    s.set_nodelay(true)?;
    Ok(s)
}

/// The most buffers one `send` writes (those after are left for the next call).
pub const MAX_IOV: usize = 64;

/// sendmsg(2) of `bufs` with MSG_NOSIGNAL: bytes sent, or the error (WouldBlock when full).
pub fn send(fd: RawFd, bufs: &[&[u8]]) -> io::Result<usize> {
    // On the stack: a heap vector here cost an allocation per message.
    let mut iov = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; MAX_IOV];
    let mut n = 0;
    for b in bufs.iter().filter(|b| !b.is_empty()).take(MAX_IOV) {
        iov[n] = libc::iovec {
            iov_base: b.as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        };
        n += 1;
    }
    // SAFETY: zeroed msghdr is valid (no name, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = n as _;
    loop {
        // SAFETY: the iovecs point into `bufs`, which outlive the call; sendmsg only reads them.
        let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
