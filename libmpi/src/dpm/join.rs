//! MPI_Comm_accept / MPI_Comm_connect: two groups meet through a port. The roots swap their
//! groups' words over the port's connection, and the rest is MPI_Intercomm_create's agreement
//! (`comm_inter::build_inter`, `inter_agree.rs`), which waits outside the runtime: a thread's
//! spawn then waits for its children while the rank's other threads, whose own spawns or
//! collectives the peers wait for, go on (MPICH's `threads/spawn/th_taskmanager`). The roots'
//! socket I/O needs no runtime.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddrV4, TcpListener};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

use super::addr::{self, Stream, MAGIC};
use super::{check_root, dpm, ensure_btl, port_err};
use crate::comm_agree::Outside;
use crate::error::Result;
use crate::runtime::{self, Runtime};

/// How the root reaches the other group's root.
pub enum Meet<'a> {
    Accept(&'a str),
    Connect(&'a str),
}

/// MPI_Comm_accept / MPI_Comm_connect: collective over `comm`; `meet` matters at `root` only.
/// Called outside the runtime.
pub fn join(comm: usize, root: i32, meet: Meet) -> Result<usize> {
    runtime::with(|rt| {
        check_root(rt, comm, root)?;
        // Listening before the other group learns of us, so its first sends find us.
        ensure_btl(rt).map(drop)
    })?;
    // The root's connection to the other root, kept for every round of the agreement.
    let mut link: Option<Stream> = None;
    crate::comm_inter::build_inter(&mut Outside, comm, root, |_, words, cap| {
        swap(root_link(&mut link, &meet)?, words, cap)
    })
}

/// The root's connection to the other root: accepted on or connected to the port the first
/// time.
fn root_link<'a>(link: &'a mut Option<Stream>, meet: &Meet) -> Result<&'a mut Stream> {
    if link.is_none() {
        *link = Some(match meet {
            Meet::Accept(p) => accept_on(p)?,
            Meet::Connect(p) => connect_to(p)?,
        });
    }
    Ok(link.as_mut().expect("set above"))
}

/// Writes `out`, reads the other root's words (at most `cap`).
fn swap(s: &mut Stream, out: &[i32], cap: usize) -> Result<Vec<i32>> {
    let io = |e: std::io::Error| port_err(format!("the other group's root: {e}"));
    write_ints(s, out).map_err(io)?;
    read_ints(s, cap).map_err(io)
}

/// A port's listeners: an abstract Unix socket for this host, TCP for others (where this host
/// has interfaces to them). Its name says both: `BASE` alone, or
/// `BASE;HOST;COOKIE;IP:PORT,IP:PORT...` (host key and cookie in hex, `addr.rs`). A TCP
/// connection must start with `MAGIC` and the cookie, so that only a process given the name
/// meets the group.
pub struct PortListener {
    unix: UnixListener,
    tcp: Option<(TcpListener, u32)>,
}

/// How long an accepted TCP connection may take to send its hello.
const HELLO_WAIT: Duration = Duration::from_secs(5);

impl PortListener {
    /// Listens under `base` (and on TCP); the port's name.
    pub fn open(base: &str) -> Result<(String, PortListener)> {
        let open_err = |e: std::io::Error| port_err(format!("cannot open port {base}: {e}"));
        let a = super::sock::abstract_addr(base).map_err(open_err)?;
        let unix = UnixListener::bind_addr(&a).map_err(open_err)?;
        unix.set_nonblocking(true).map_err(open_err)?;
        let mut name = base.to_string();
        // Where TCP cannot listen, the port serves this host only.
        let tcp = match addr::tcp_listener_or_warn(&format!("port {base}")) {
            Some((l, port, ips)) => {
                let cookie = addr::cookie();
                let ips: Vec<String> = ips
                    .iter()
                    .filter(|&&ip| ip != 0)
                    .map(|&ip| format!("{}:{port}", std::net::Ipv4Addr::from(ip)))
                    .collect();
                name = format!(
                    "{base};{:08x};{cookie:08x};{}",
                    addr::host_key(),
                    ips.join(",")
                );
                Some((l, cookie))
            }
            None => None,
        };
        Ok((name, PortListener { unix, tcp }))
    }

    fn try_clone(&self) -> std::io::Result<PortListener> {
        Ok(PortListener {
            unix: self.unix.try_clone()?,
            tcp: match &self.tcp {
                Some((l, c)) => Some((l.try_clone()?, *c)),
                None => None,
            },
        })
    }

    /// A connection, if one is waiting (a TCP one whose hello is wrong is closed unanswered).
    fn try_accept(&self) -> std::io::Result<Option<Stream>> {
        match self.unix.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                let mut s = Stream::Unix(s);
                // Its hello (this host's processes only reach the Unix name: not checked).
                s.set_read_timeout(Some(HELLO_WAIT))?;
                let mut h = [0u8; 8];
                if s.read_exact(&mut h).is_err() {
                    return Ok(None);
                }
                s.set_read_timeout(None)?;
                return Ok(Some(s));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        let Some((l, cookie)) = &self.tcp else {
            return Ok(None);
        };
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                s.set_nodelay(true)?;
                let mut s = Stream::Tcp(s);
                s.set_read_timeout(Some(HELLO_WAIT))?;
                let mut h = [0u8; 8];
                if s.read_exact(&mut h).is_err()
                    || h[..4] != MAGIC[..]
                    || h[4..] != cookie.to_le_bytes()
                {
                    return Ok(None);
                }
                s.set_read_timeout(None)?;
                Ok(Some(s))
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// Waits for a connection on `port`, progressing MPI meanwhile (under MULTIPLE a turn at a
/// time, giving the runtime back between turns).
fn accept_on(port: &str) -> Result<Stream> {
    let l = dpm(|d| {
        d.ports
            .get(port)
            .map(|l| l.try_clone())
            .transpose()
            .map_err(|e| port_err(e.to_string()))
    })??;
    let Some(l) = l else {
        return Err(port_err(format!(
            "port \"{port}\" is not open in this process (MPI_Open_port)"
        )));
    };
    let attempt = |_: &mut Runtime| {
        l.try_accept()
            .map_err(|e| port_err(format!("accept on {port}: {e}")))
    };
    if runtime::is_multiple() {
        return runtime::poll_outside(attempt);
    }
    runtime::with(|rt| loop {
        if let Some(s) = attempt(rt)? {
            return Ok(s);
        }
        if rt.pml.progress() == 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    })
}

/// Connects to the port named `port` (`PortListener`): by its Unix name on its host, else by
/// TCP.
fn connect_to(port: &str) -> Result<Stream> {
    let cannot = |e: std::io::Error| port_err(format!("cannot connect to port \"{port}\": {e}"));
    let mut parts = port.split(';');
    let base = parts.next().unwrap_or_default();
    let remote = match (parts.next(), parts.next(), parts.next()) {
        (None, _, _) => None,
        (Some(h), Some(c), Some(ips)) => {
            let hex = |v: &str| u32::from_str_radix(v, 16).ok();
            let targets: Option<Vec<SocketAddrV4>> =
                ips.split(',').map(|t| t.parse().ok()).collect();
            match (hex(h), hex(c), targets) {
                (Some(h), Some(c), Some(t)) => Some((h, c, t)),
                _ => return Err(port_err(format!("\"{port}\" is not a port name"))),
            }
        }
        _ => return Err(port_err(format!("\"{port}\" is not a port name"))),
    };
    let (mut s, cookie) = match remote {
        Some((host, cookie, targets)) if host != addr::host_key() => (
            Stream::Tcp(addr::tcp_connect(&targets).map_err(cannot)?),
            cookie,
        ),
        r => {
            let a = super::sock::abstract_addr(base).map_err(cannot)?;
            let s = UnixStream::connect_addr(&a).map_err(cannot)?;
            (Stream::Unix(s), r.map_or(0, |(_, c, _)| c))
        }
    };
    let mut h = MAGIC.to_vec();
    h.extend_from_slice(&cookie.to_le_bytes());
    s.write_all(&h).map_err(cannot)?;
    Ok(s)
}

fn write_ints(s: &mut Stream, v: &[i32]) -> std::io::Result<()> {
    let mut b = (v.len() as u32).to_le_bytes().to_vec();
    for x in v {
        b.extend_from_slice(&x.to_le_bytes());
    }
    s.write_all(&b)
}

fn read_ints(s: &mut Stream, cap: usize) -> std::io::Result<Vec<i32>> {
    let mut n = [0u8; 4];
    s.read_exact(&mut n)?;
    let n = u32::from_le_bytes(n) as usize;
    if n > cap {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            "group too large",
        ));
    }
    let mut b = vec![0u8; n * 4];
    s.read_exact(&mut b)?;
    Ok(b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}
