//! The transport to peers that joined after MPI_Init (spawned children, connect/accept): one
//! stream per direction and pair, to the receiver's listener: an abstract Unix socket named by
//! its pid on its own host (no file to leak), TCP to another host (`addr.rs`). A sender
//! connects and says who it is and the listener's cookie; the receiver reads fragments
//! `[len: u32][tag: u8][bytes]` from every connection it accepted. One stream per direction
//! keeps each pair's fragments in order. No single copy: rendezvous data is streamed (`expose`
//! says so).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpListener;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::addr::{self, Addr, Stream, MAGIC};
use crate::btl::{Btl, GetError};

const MAX_FRAG: usize = 64 * 1024;
const EAGER: usize = 16 * 1024;
/// The first bytes on a connection: `MAGIC`, the sender's address, the listener's cookie.
const HELLO: usize = 8 + 4 * addr::WORDS;
/// Between two tries to reach a listener that refused.
const RETRY: Duration = Duration::from_millis(50);

/// The abstract socket name of `pid`'s fragment listener.
pub fn listener_name(pid: u32) -> String {
    format!("rmpi-dyn-{pid}")
}

pub fn abstract_addr(name: &str) -> std::io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(name.as_bytes())
}

/// The hello `from` sends to a listener whose cookie is `cookie`. It carries the sender's
/// whole address: a process that named itself to a group before it listened (so without a TCP
/// address) is learnt that way by the peers it connects to.
pub fn hello(from: &Addr, cookie: u32) -> [u8; HELLO] {
    let mut h = [0u8; HELLO];
    h[..4].copy_from_slice(MAGIC);
    for (i, w) in from.words().iter().enumerate() {
        h[4 + 4 * i..8 + 4 * i].copy_from_slice(&w.to_le_bytes());
    }
    h[HELLO - 4..].copy_from_slice(&cookie.to_le_bytes());
    h
}

/// The sender's address, if `h` is a hello for the holder of `cookie`. On the Unix listener
/// (this host's processes only) a cookie of 0 passes too: a process that had no listener when
/// it gave its address to the group, and so no cookie, is still reached.
fn check_hello(h: &[u8], cookie: u32, unix: bool) -> Option<Addr> {
    let word = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
    let theirs = word(HELLO - 4);
    let ok = theirs == cookie || (unix && theirs == 0);
    if &h[..4] != MAGIC || !ok {
        return None;
    }
    let w: Vec<i32> = (0..addr::WORDS).map(|i| word(4 + 4 * i) as i32).collect();
    Some(Addr::from_words(&w))
}

struct Inbound {
    sock: Stream,
    buf: Vec<u8>,
    /// The sender's key, once its hello arrived.
    key: Option<(u32, u32)>,
    /// A stray (bad hello), dropped at the end of the turn.
    dead: bool,
    /// Its sender closed it: dropped once its last bytes are delivered.
    closed: bool,
}

struct Outbound {
    sock: Option<Stream>,
    addr: Addr,
    pending: Vec<u8>,
    /// Since when its listener refuses: a peer met through a third process may not have
    /// opened it yet (it does as it learns of us), so it is retried for a while.
    refused_since: Option<Instant>,
    next_try: Option<Instant>,
}

/// How long a peer's listener may refuse before the peer is taken for gone.
const REFUSED_GRACE: Duration = Duration::from_secs(10);

/// What the transport and `dpm` share: peers by index, their addresses.
#[derive(Default)]
pub struct Peers {
    pub by_key: HashMap<(u32, u32), usize>,
    pub addrs: Vec<Addr>,
    /// Addresses from hellos of processes not known yet as peers (`dpm::world_of_addr`
    /// takes them).
    pub learnt: HashMap<(u32, u32), Addr>,
    /// Peers to connect to at the next progress although nothing is to be sent: they learn our
    /// address from the hello.
    pub announce: Vec<usize>,
}

impl Peers {
    /// `a` as the hello said it: it replaces an address without TCP of a known peer.
    fn learn(&mut self, a: Addr) {
        match self.by_key.get(&a.key()) {
            Some(&i) if self.addrs[i].port == 0 => self.addrs[i] = a,
            Some(_) => {}
            None => {
                self.learnt.insert(a.key(), a);
            }
        }
    }
}

pub struct DynBtl {
    listener: UnixListener,
    tcp: Option<TcpListener>,
    me: Addr,
    inbound: Vec<Inbound>,
    out: Vec<Outbound>,
    peers: Rc<RefCell<Peers>>,
}

impl DynBtl {
    /// Listens under this process's name, and on TCP where this host has interfaces to
    /// other hosts.
    pub fn open(peers: Rc<RefCell<Peers>>) -> std::io::Result<DynBtl> {
        let name = abstract_addr(&listener_name(std::process::id()))?;
        let listener = UnixListener::bind_addr(&name)?;
        listener.set_nonblocking(true)?;
        let mut me = Addr {
            cookie: addr::cookie(),
            ..Addr::local_only()
        };
        // Where TCP cannot listen, peers of this host still reach us (those of other hosts
        // cannot).
        let tcp = match addr::tcp_listener_or_warn("dynamic-process connections") {
            Some((l, port, ips)) => {
                me.port = port;
                me.ips = ips;
                Some(l)
            }
            None => None,
        };
        Ok(DynBtl {
            listener,
            tcp,
            me,
            inbound: Vec::new(),
            out: Vec::new(),
            peers,
        })
    }

    /// Where peers reach this process.
    pub fn addr(&self) -> Addr {
        self.me
    }

    fn out_for(&mut self, peer: usize) -> &mut Outbound {
        while self.out.len() <= peer {
            let addr = self.peers.borrow().addrs[self.out.len()];
            self.out.push(Outbound {
                sock: None,
                addr,
                pending: Vec::new(),
                refused_since: None,
                next_try: None,
            });
        }
        &mut self.out[peer]
    }

    fn connect(a: &Addr) -> std::io::Result<Stream> {
        if a.same_host() {
            let name = abstract_addr(&listener_name(a.pid))?;
            return UnixStream::connect_addr(&name).map(Stream::Unix);
        }
        // A peer of another host without an address yet: its hello will bring it.
        addr::tcp_connect(&a.tcp_targets()).map(Stream::Tcp)
    }

    fn flush(me: &Addr, o: &mut Outbound) {
        if o.sock.is_none() {
            if o.next_try.is_some_and(|t| Instant::now() < t) {
                return;
            }
            match Self::connect(&o.addr) {
                Ok(s) => {
                    let _ = s.set_nonblocking(true);
                    let mut h = hello(me, o.addr.cookie).to_vec();
                    h.append(&mut o.pending);
                    o.pending = h;
                    o.sock = Some(s);
                }
                // Its backlog is full: retried at the next progress.
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                // Nobody listens there: not yet, or it has left the job (then its data goes
                // nowhere).
                Err(_) => {
                    let since = *o.refused_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > REFUSED_GRACE {
                        o.pending.clear();
                    }
                    o.next_try = Some(Instant::now() + RETRY);
                    return;
                }
            }
        }
        let sock = o.sock.as_mut().expect("connected above");
        while !o.pending.is_empty() {
            match sock.write(&o.pending) {
                Ok(n) => {
                    o.pending.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // WouldBlock: later. A peer that is gone: its data is dropped (it left the job).
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    o.pending.clear();
                    break;
                }
            }
        }
    }

    fn accept_all(&mut self) {
        while let Ok((s, _)) = self.listener.accept() {
            self.inbound.push(Inbound::new(Stream::Unix(s)));
        }
        if let Some(l) = &self.tcp {
            while let Ok((s, _)) = l.accept() {
                let _ = s.set_nodelay(true);
                self.inbound.push(Inbound::new(Stream::Tcp(s)));
            }
        }
    }
}

impl Inbound {
    fn new(sock: Stream) -> Inbound {
        let _ = sock.set_nonblocking(true);
        Inbound {
            sock,
            buf: Vec::new(),
            key: None,
            dead: false,
            closed: false,
        }
    }
}

impl Btl for DynBtl {
    fn name(&self) -> &'static str {
        "dpm"
    }

    fn max_frag(&self) -> usize {
        MAX_FRAG
    }

    fn eager_limit(&self, _peer: usize) -> Option<usize> {
        Some(EAGER)
    }

    fn try_send(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        let me = self.me;
        let o = self.out_for(peer);
        // Bounded, like a transport's ring: the pml queues and retries after progress.
        if o.pending.len() > 4 * MAX_FRAG {
            Self::flush(&me, o);
            if o.pending.len() > 4 * MAX_FRAG {
                return false;
            }
        }
        let len = (hdr.len() + data.len()) as u32;
        o.pending.extend_from_slice(&len.to_le_bytes());
        o.pending.push(tag);
        o.pending.extend_from_slice(hdr);
        o.pending.extend_from_slice(data);
        Self::flush(&me, o);
        true
    }

    fn progress(&mut self, f: &mut dyn FnMut(usize, u8, &[u8])) -> usize {
        let me = self.me;
        let announce = std::mem::take(&mut self.peers.borrow_mut().announce);
        for p in announce {
            let o = self.out_for(p);
            if o.sock.is_none() {
                Self::flush(&me, o);
            }
        }
        {
            // Addresses learnt from hellos since.
            let peers = self.peers.borrow();
            for (o, a) in self.out.iter_mut().zip(&peers.addrs) {
                if o.addr.port == 0 && a.port != 0 {
                    o.addr = *a;
                    o.next_try = None;
                }
            }
        }
        for o in self.out.iter_mut().filter(|o| !o.pending.is_empty()) {
            Self::flush(&me, o);
        }
        self.accept_all();
        let mut n = 0;
        let mut chunk = [0u8; 65536];
        let mut learnt = Vec::new();
        let peers = self.peers.borrow();
        for c in &mut self.inbound {
            loop {
                match c.sock.read(&mut chunk) {
                    Ok(0) => {
                        c.closed = true;
                        break;
                    }
                    Ok(k) => c.buf.extend_from_slice(&chunk[..k]),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
                if c.buf.len() > 8 * MAX_FRAG {
                    break;
                }
            }
            if c.key.is_none() && c.buf.len() >= HELLO {
                match check_hello(
                    &c.buf[..HELLO],
                    me.cookie,
                    matches!(c.sock, Stream::Unix(_)),
                ) {
                    Some(a) => {
                        c.key = Some(a.key());
                        learnt.push(a);
                    }
                    // Not one of ours: dropped unread.
                    None => {
                        c.dead = true;
                        continue;
                    }
                }
                c.buf.drain(..HELLO);
            }
            // A sender not known yet (its intercommunicator is still being set up here):
            // its fragments wait in the buffer.
            let Some(&peer) = c.key.and_then(|k| peers.by_key.get(&k)) else {
                continue;
            };
            let mut off = 0;
            while c.buf.len() - off >= 5 {
                let len = u32::from_le_bytes(c.buf[off..off + 4].try_into().expect("4")) as usize;
                if c.buf.len() - off < 5 + len {
                    break;
                }
                f(peer, c.buf[off + 4], &c.buf[off + 5..off + 5 + len]);
                off += 5 + len;
                n += 1;
            }
            c.buf.drain(..off);
        }
        drop(peers);
        if !learnt.is_empty() {
            let mut peers = self.peers.borrow_mut();
            for a in learnt {
                peers.learn(a);
            }
        }
        self.inbound
            .retain(|c| !(c.dead || c.closed && c.buf.is_empty()));
        n
    }

    fn get(&mut self, _: usize, _: usize, _: u64, _: &mut [u8]) -> Result<(), GetError> {
        Err(GetError::Unsupported(
            "the dpm transport has no single copy".into(),
        ))
    }

    fn expose(&mut self, _peer: usize, _addr: usize, _len: usize) -> Option<u64> {
        None
    }

    fn flushed(&self) -> bool {
        self.out.iter().all(|o| o.pending.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_passes_only_with_the_listeners_cookie() {
        let from = Addr {
            cookie: 9,
            ..Addr::local_only()
        };
        let h = hello(&from, 77);
        assert_eq!(check_hello(&h, 77, false), Some(from));
        assert_eq!(check_hello(&h, 78, false), None);
        // No cookie (the sender learnt of us before we listened): this host's Unix name only.
        let h0 = hello(&from, 0);
        assert_eq!(check_hello(&h0, 78, true), Some(from));
        assert_eq!(check_hello(&h0, 78, false), None);
        let mut bad = h;
        bad[0] = b'X';
        assert_eq!(check_hello(&bad, 77, false), None);
    }

    #[test]
    fn a_hello_gives_a_late_listener_its_address() {
        let mut p = Peers::default();
        let bare = Addr {
            host: 1,
            pid: 2,
            ..Addr::default()
        };
        p.by_key.insert(bare.key(), 0);
        p.addrs.push(bare);
        let full = Addr {
            port: 9,
            ips: [7, 0, 0, 0],
            ..bare
        };
        p.learn(full);
        assert_eq!(p.addrs[0], full);
        // Not yet a peer: kept for when it becomes one.
        let other = Addr { pid: 3, ..full };
        p.learn(other);
        assert_eq!(p.learnt.get(&other.key()), Some(&other));
    }
}
