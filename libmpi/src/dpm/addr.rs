//! Where a dynamic peer listens, and how to reach it from here. Processes of one host (one
//! network namespace: abstract Unix sockets are per namespace) meet through abstract Unix
//! sockets named by pid; processes of different hosts through TCP, on the interfaces btl tcp
//! would use (`btl_tcp_if_include` / `btl_tcp_if_exclude`). A host is named by a key of its
//! boot id and network namespace, so "same host" is exactly "the Unix names reach".

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::time::Duration;

use btl_tcp::iface::Iface;

/// IPv4 addresses carried per process (the selected interfaces, first ones).
pub const IPS: usize = 4;
/// Words of an [`Addr`]: pid, host, cookie, TCP port, addresses.
pub const WORDS: usize = 4 + IPS;
/// How long a TCP connect to a peer's address may take before the next address is tried.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// First bytes on every dynamic connection, before the cookie of the listener it reaches.
pub const MAGIC: &[u8; 4] = b"RMPD";

/// A process's dynamic-transport address; `port` 0 and no addresses: reachable on its host
/// only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Addr {
    pub pid: u32,
    pub host: u32,
    /// What a connection to its listeners must say first (after `MAGIC`).
    pub cookie: u32,
    pub port: u16,
    pub ips: [u32; IPS],
}

impl Addr {
    /// This process, on its host only (no listener of its own yet).
    pub fn local_only() -> Addr {
        Addr {
            pid: std::process::id(),
            host: host_key(),
            ..Addr::default()
        }
    }

    /// The key peers are known by: (host, pid).
    pub fn key(&self) -> (u32, u32) {
        (self.host, self.pid)
    }

    pub fn words(&self) -> [i32; WORDS] {
        let mut w = [0; WORDS];
        w[0] = self.pid as i32;
        w[1] = self.host as i32;
        w[2] = self.cookie as i32;
        w[3] = self.port as i32;
        for (d, s) in w[4..].iter_mut().zip(self.ips) {
            *d = s as i32;
        }
        w
    }

    /// `w` has `WORDS` words.
    pub fn from_words(w: &[i32]) -> Addr {
        let mut ips = [0; IPS];
        for (d, s) in ips.iter_mut().zip(&w[4..WORDS]) {
            *d = *s as u32;
        }
        Addr {
            pid: w[0] as u32,
            host: w[1] as u32,
            cookie: w[2] as u32,
            port: w[3] as u16,
            ips,
        }
    }

    pub fn same_host(&self) -> bool {
        self.host == host_key()
    }

    /// Its TCP addresses, those on a subnet of one of our interfaces first.
    pub fn tcp_targets(&self) -> Vec<SocketAddrV4> {
        let ours = interfaces();
        let mut v: Vec<(bool, SocketAddrV4)> = self
            .ips
            .iter()
            .filter(|&&ip| ip != 0 && self.port != 0)
            .map(|&ip| {
                let a = Ipv4Addr::from(ip);
                let near = ours.iter().any(|i| i.same_subnet(a));
                (!near, SocketAddrV4::new(a, self.port))
            })
            .collect();
        v.sort_by_key(|&(far, _)| far);
        v.into_iter().map(|(_, a)| a).collect()
    }
}

/// This host's key: its boot id and network namespace (abstract Unix sockets reach exactly the
/// processes of one namespace of one running kernel).
pub fn host_key() -> u32 {
    static KEY: OnceLock<u32> = OnceLock::new();
    *KEY.get_or_init(|| {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        let ns = std::fs::read_link("/proc/self/ns/net")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut h: u32 = 0x811c_9dc5;
        for b in boot.trim().bytes().chain(ns.bytes()) {
            h = (h ^ b as u32).wrapping_mul(0x0100_0193);
        }
        h
    })
}

/// The interfaces a dynamic listener binds: btl tcp's selection, none when that is loopback
/// only (every process it could reach shares the host, and Unix sockets) or fails.
pub fn interfaces() -> &'static [Iface] {
    static IFACES: OnceLock<Vec<Iface>> = OnceLock::new();
    IFACES.get_or_init(|| {
        let Ok(params) = btl_tcp::Params::from_env() else {
            return Vec::new();
        };
        let Ok(all) = btl_tcp::iface::list() else {
            return Vec::new();
        };
        let sel = btl_tcp::iface::select(
            &all,
            params.if_include.as_deref(),
            params.if_exclude.as_deref(),
        )
        .unwrap_or_default();
        if sel.iter().all(|i| i.addr.is_loopback()) {
            return Vec::new();
        }
        sel
    })
}

/// A TCP listener on this host's selected interfaces (one: on it; several: on all
/// addresses), non-blocking; None where there are none.
pub fn tcp_listener() -> std::io::Result<Option<(TcpListener, u16, [u32; IPS])>> {
    let ifaces = interfaces();
    if ifaces.is_empty() {
        return Ok(None);
    }
    let bind = if ifaces.len() == 1 {
        ifaces[0].addr
    } else {
        Ipv4Addr::UNSPECIFIED
    };
    let l = TcpListener::bind(SocketAddrV4::new(bind, 0))?;
    l.set_nonblocking(true)?;
    let port = l.local_addr()?.port();
    let mut ips = [0; IPS];
    for (d, i) in ips.iter_mut().zip(ifaces) {
        *d = u32::from(i.addr);
    }
    Ok(Some((l, port, ips)))
}

/// [`tcp_listener`] for `what` (a port, the dynamic-process transport), or None where TCP
/// cannot listen: then only this host's processes reach it, which a warning says (a silent
/// fallback would show up later as a connect from another host failing for no stated reason).
pub fn tcp_listener_or_warn(what: &str) -> Option<(TcpListener, u16, [u32; IPS])> {
    match tcp_listener() {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "rmpi: warning: {what}: cannot listen on TCP ({e}); only processes on this host \
                 can connect to it"
            );
            None
        }
    }
}

/// Connects to the first of `targets` that answers.
pub fn tcp_connect(targets: &[SocketAddrV4]) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::new(
        std::io::ErrorKind::AddrNotAvailable,
        "the peer has no TCP address (it listens on its own host only)",
    );
    for t in targets {
        match TcpStream::connect_timeout(&(*t).into(), CONNECT_TIMEOUT) {
            Ok(s) => {
                s.set_nodelay(true)?;
                return Ok(s);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A connection of either kind.
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub fn set_nonblocking(&self, on: bool) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tcp(s) => s.set_nonblocking(on),
        }
    }

    pub fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(b),
            Stream::Tcp(s) => s.read(b),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(b),
            Stream::Tcp(s) => s.write(b),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A fresh random cookie.
pub fn cookie() -> u32 {
    btl_tcp::random_cookie() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        let a = Addr {
            pid: 4_000_000,
            host: 0xdead_beef,
            cookie: 0x8000_0001,
            port: 65535,
            ips: [0x0a00_000b, 0xc0a8_0101, 0, 0],
        };
        assert_eq!(Addr::from_words(&a.words()), a);
    }

    #[test]
    fn near_addresses_first() {
        let a = Addr {
            port: 7,
            ips: [0x0102_0304, 0, 0, 0],
            ..Addr::local_only()
        };
        assert_eq!(a.tcp_targets().len(), 1);
        assert!(Addr::local_only().tcp_targets().is_empty());
    }
}
