//! Connections, lazily opened, and the progress step.
//!
//! Tie-break when two ranks connect to each other at once: the connection initiated by the
//! lower rank wins. An acceptor that has its own attempt pending toward the initiator keeps the
//! initiator's connection (ACK, dropping its own attempt) when the initiator's rank is lower,
//! and closes it otherwise; a hello for a peer already connected is a stale attempt and is
//! closed. An initiator whose attempt is closed before the ACK waits for the lower rank's
//! connection (its frames stay queued: none is written before the ACK). Both sides apply the
//! same rule, so exactly one connection survives per pair.

use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;

use crate::conn::{Fill, RecvBuf, SendQueue};
use crate::epoll::Epoll;
use crate::frame;
use crate::handshake::{self, HELLO_LEN};
use crate::iface::{self, Iface};
use crate::params::Params;

/// What a failure means for the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpFail {
    /// The peer's connection broke or was refused: the peer died.
    PeerLost,
    /// A local failure (sockets, epoll) or a corrupt stream.
    Internal,
}

#[derive(Debug)]
pub struct TcpError {
    pub class: TcpFail,
    pub message: String,
}

fn lost(msg: String) -> TcpError {
    TcpError {
        class: TcpFail::PeerLost,
        message: msg,
    }
}

fn internal(msg: String) -> TcpError {
    TcpError {
        class: TcpFail::Internal,
        message: msg,
    }
}

/// Where [`TcpTransport::poll_into`] delivers frames. It may also take a large frame's bytes
/// straight from the socket into memory of its own ([`TcpTransport::set_placement`]), saving the
/// copy through the connection's buffer (a rendezvous's data into the receive buffer).
pub trait Deliver {
    /// A complete frame from `peer`.
    fn frame(&mut self, peer: usize, tag: u8, bytes: &[u8]);
    /// A frame whose first bytes are `head` arrives: the address its other `rest` bytes go to,
    /// or None to have it delivered whole by [`Deliver::frame`]. The memory must stay writable,
    /// and untouched by anyone else, until [`Deliver::placed`].
    fn place(&mut self, _peer: usize, _tag: u8, _head: &[u8], _rest: usize) -> Option<*mut u8> {
        None
    }
    /// The `rest` bytes of a placed frame have all arrived.
    fn placed(&mut self, _peer: usize, _tag: u8, _head: &[u8], _rest: usize) {}
}

impl<F: FnMut(usize, u8, &[u8])> Deliver for F {
    fn frame(&mut self, peer: usize, tag: u8, bytes: &[u8]) {
        self(peer, tag, bytes)
    }
}

/// The longest `head` [`Deliver::place`] is given.
pub const MAX_PLACE_HEAD: usize = 32;

/// A frame whose bytes after its head are read straight into place.
struct Placing {
    /// Where they go (an address: the transport stays Send), how many arrived, of how many.
    dst: usize,
    got: usize,
    rest: usize,
    tag: u8,
    head: [u8; MAX_PLACE_HEAD],
}

struct Sock {
    stream: TcpStream,
    /// Frames may flow (the acceptor's side at once; the initiator's after the ACK).
    established: bool,
    /// The hello (initiator) or the ACK (acceptor), written before any frame.
    ctl: Vec<u8>,
    ctl_off: usize,
}

struct Peer {
    rank: u32,
    addrs: Vec<SocketAddrV4>,
    cookie: u64,
    sock: Option<Sock>,
    /// Our attempt lost the tie-break: the peer's connection is coming.
    waiting: bool,
    sendq: SendQueue,
    recv: RecvBuf,
    /// Frames received from the peer since we last sent it one, and sent to it since we last
    /// received one: many of either make a stream, few a conversation (requests and answers,
    /// which hot reads serve).
    unanswered: u32,
    unheard: u32,
    /// A frame being read into place.
    placing: Option<Placing>,
    /// The last frame from the peer was one to place: the next read takes only the next
    /// frame's header and head, so that a large frame's body is read into place, not into
    /// `recv` and copied (a stream of 32 KiB frames otherwise lands whole in `recv`).
    big: bool,
    /// A frame was written to the peer since our last poll: the small ones that follow before
    /// the next poll are batched (`btl_tcp_coalesce`).
    burst: bool,
}

/// A connection accepted whose hello is still arriving.
struct Incoming {
    stream: TcpStream,
    hello: [u8; HELLO_LEN],
    got: usize,
    since: std::time::Instant,
}

/// A connection that has not sent its hello by then is not a peer's (peers send it at once).
const HELLO_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

pub struct TcpTransport {
    params: Params,
    rank: u32,
    cookie: u64,
    ifaces: Vec<Iface>,
    listener: TcpListener,
    port: u16,
    epoll: Epoll,
    peers: Vec<Peer>,
    by_rank: HashMap<u32, usize>,
    incoming: Vec<Incoming>,
    ready: Vec<u64>,
    /// Peers whose connections `poll` reads directly, before and between epoll turns: the
    /// [`HOT_MAX`] that delivered most recently. A message from them then costs one recv, not
    /// an epoll_wait and a recv (0.4 µs of a 3.5 µs one-way across a veth pair).
    hot: Vec<usize>,
    /// Per peer: the poll turn it last delivered a frame in (which hot peer makes room).
    last_active: Vec<u32>,
    /// Poll turns so far; epoll runs every [`EPOLL_EVERY`]th while there are hot peers.
    turn: u32,
    /// [`TcpTransport::set_placement`]: the head length (0: no placement) and the smallest frame.
    place_head: usize,
    place_min: usize,
    pub sends: u64,
    pub recvs: u64,
    /// Of `recvs`, those read into place.
    pub placed: u64,
    /// Of `sends`, those held to go with a burst's others (`btl_tcp_coalesce`).
    pub batched: u64,
}

const LISTENER: u64 = u64::MAX;

/// A burst's batch is written when it holds this many frames (sendmsg's iovecs per call in
/// `SendQueue::flush`) or would pass this many bytes, in calls of at most 64000 bytes each
/// (`SendQueue::flush` says why). 128 KiB batches of 32 KiB frames moved osu_bw 32 KiB from
/// 4900 to 5200-5500 MB/s across a veth pair; 256 KiB ones were slower than none (3300).
const COALESCE_FRAMES: usize = 64;
const COALESCE_BYTES: usize = 128 << 10;

/// At most this many peers are read directly on every poll (each read that finds nothing is a
/// syscall, so many peers are better served by one epoll_wait).
const HOT_MAX: usize = 4;

/// A peer stays hot while its frames are at most this long. Reading a connection in a loop
/// while a larger message streams in slows it (2-64 KiB one-way 5-10 % slower across a veth
/// pair, measured with OSU 5.3): the reads hold the socket that the sender's segments are
/// delivered to.
const HOT_FRAME: usize = 1024 + 64;

/// A peer that sent more frames than this since our last send to it, or that we sent more
/// since it last sent, takes part in a stream (OSU's osu_bw window): reading the socket in a
/// loop then slows the stream (3-5 % at 1 B-1 KiB: the reads hold the socket that the
/// stream's data or acknowledgements are delivered to), so it goes back to epoll.
const HOT_UNANSWERED: u32 = 2;

/// With hot peers, epoll (the other peers, the listener, hang-ups) runs every this many polls:
/// a cold peer's message waits at most this many turns longer (a turn is one recv per hot
/// peer, 0.2-0.4 us each). Each epoll_wait is a syscall during which a hot peer's message waits:
/// every 16th instead of every 4th took 1 B MPI_Send/MPI_Recv ping-pong across a veth pair from
/// 3.93-3.99 to 3.84-3.89 us (ranks pinned; every 64th: 3.73-3.85).
const EPOLL_EVERY: u32 = 16;

/// A random word (getrandom; the clock and pid where that fails).
pub fn random_cookie() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: getrandom writes at most `b.len()` bytes into `b`.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != 8 {
        // Not secret then, but still unlikely to match a stray connection's bytes.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        return t ^ (u64::from(std::process::id()) << 32);
    }
    u64::from_le_bytes(b)
}

impl TcpTransport {
    /// Listens on an ephemeral port of the selected interfaces; `peers` are the ranks this
    /// transport reaches, named by their index from here on.
    pub fn open(params: Params, rank: u32, peers: &[u32]) -> Result<TcpTransport, String> {
        let all = iface::list().map_err(|e| format!("btl tcp: cannot list interfaces: {e}"))?;
        let ifaces = iface::select(
            &all,
            params.if_include.as_deref(),
            params.if_exclude.as_deref(),
        )?;
        // One interface: listen on it alone; several: on all addresses, publishing the chosen.
        let bind_ip = if ifaces.len() == 1 {
            ifaces[0].addr
        } else {
            Ipv4Addr::UNSPECIFIED
        };
        let listener =
            crate::sock::listen(SocketAddrV4::new(bind_ip, 0), params.sndbuf, params.rcvbuf)
                .map_err(|e| format!("btl tcp: cannot listen on {bind_ip}: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("btl tcp: {e}"))?
            .port();
        let epoll = Epoll::new().map_err(|e| format!("btl tcp: epoll: {e}"))?;
        epoll
            .add(listener.as_raw_fd(), LISTENER)
            .map_err(|e| format!("btl tcp: epoll: {e}"))?;
        let peers: Vec<Peer> = peers
            .iter()
            .map(|&r| Peer {
                rank: r,
                addrs: Vec::new(),
                cookie: 0,
                sock: None,
                waiting: false,
                sendq: SendQueue::default(),
                recv: RecvBuf::new(params.max_frame()),
                unanswered: 0,
                unheard: 0,
                placing: None,
                big: false,
                burst: false,
            })
            .collect();
        let by_rank = peers.iter().enumerate().map(|(i, p)| (p.rank, i)).collect();
        let npeers = peers.len();
        Ok(TcpTransport {
            params,
            rank,
            cookie: random_cookie(),
            ifaces,
            listener,
            port,
            epoll,
            peers,
            by_rank,
            incoming: Vec::new(),
            ready: Vec::new(),
            hot: Vec::new(),
            last_active: vec![0; npeers],
            turn: 0,
            place_head: 0,
            place_min: usize::MAX,
            sends: 0,
            recvs: 0,
            placed: 0,
            batched: 0,
        })
    }

    /// What to publish: `cookie;ip:port,ip:port`.
    pub fn address(&self) -> String {
        let addrs: Vec<String> = self
            .ifaces
            .iter()
            .map(|i| format!("{}:{}", i.addr, self.port))
            .collect();
        format!("{:016x};{}", self.cookie, addrs.join(","))
    }

    /// The interfaces listened on, for verbose output.
    pub fn interfaces(&self) -> String {
        let v: Vec<String> = self
            .ifaces
            .iter()
            .map(|i| format!("{} {}/{}", i.name, i.addr, i.prefix))
            .collect();
        format!("{} port {}", v.join(", "), self.port)
    }

    pub fn verbose(&self) -> bool {
        self.params.verbose
    }

    /// Peer `i`'s published [`TcpTransport::address`].
    pub fn set_peer_address(&mut self, i: usize, v: &str) -> Result<(), String> {
        let bad = || {
            format!(
                "rank {}'s tcp address `{v}` is malformed",
                self.peers[i].rank
            )
        };
        let (cookie, addrs) = v.split_once(';').ok_or_else(bad)?;
        let cookie = u64::from_str_radix(cookie, 16).map_err(|_| bad())?;
        let addrs = addrs
            .split(',')
            .map(|a| a.parse::<SocketAddrV4>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| bad())?;
        if addrs.is_empty() {
            return Err(bad());
        }
        let p = &mut self.peers[i];
        p.cookie = cookie;
        p.addrs = addrs;
        Ok(())
    }

    /// The largest message to send eagerly (`btl_tcp_eager_limit`).
    pub fn eager_limit(&self) -> usize {
        self.params.eager_limit
    }

    pub fn max_frag(&self) -> usize {
        self.params.max_frag
    }

    /// The largest frame `try_send` takes: `max_frag`, or an eager message and its header.
    pub fn max_frame(&self) -> usize {
        self.params.max_frame()
    }

    /// Whether `try_send` batches a burst's small frames (`btl_tcp_coalesce` > 0).
    pub fn coalesces(&self) -> bool {
        self.params.coalesce > 0
    }

    /// End every peer's burst and write what each has queued (handshake bytes, held or
    /// refused frames): the start of every poll, and a wait that found its requests complete
    /// without polling (the caller may compute for long now).
    pub fn end_bursts(&mut self) -> Result<(), TcpError> {
        for i in 0..self.peers.len() {
            let p = &mut self.peers[i];
            p.burst = false;
            if p.sock.as_ref().is_some_and(|s| s.ctl_off < s.ctl.len()) || !p.sendq.is_empty() {
                self.flush(i)?;
            }
        }
        Ok(())
    }

    /// Whether every accepted fragment has been handed to the kernel.
    pub fn flushed(&self) -> bool {
        self.peers.iter().all(|p| p.sendq.is_empty())
    }

    /// Queue `(tag, hdr + data)` for peer `i`, writing at once when possible; false when the
    /// peer's queue is full (retry after progress). With `batch` (a non-blocking send's), a
    /// small frame that follows another to the same peer with no poll between is held and
    /// written with the rest of the burst at the next poll (`btl_tcp_coalesce`); the frames of
    /// calls that may return to long computation (blocking sends, collectives) never are.
    pub fn try_send(
        &mut self,
        i: usize,
        tag: u8,
        hdr: &[u8],
        data: &[u8],
        batch: bool,
    ) -> Result<bool, TcpError> {
        let len = hdr.len() + data.len();
        assert!(
            len <= self.params.max_frame(),
            "btl tcp: fragment over the largest frame"
        );
        if self.peers[i].sock.is_none() && !self.peers[i].waiting {
            self.connect(i)?;
        }
        let h = frame::header(tag, len);
        let parts: [&[u8]; 3] = [&h, hdr, data];
        let p = &mut self.peers[i];
        p.unanswered = 0;
        p.unheard = p.unheard.saturating_add(1);
        let live = p
            .sock
            .as_ref()
            .is_some_and(|s| s.established && s.ctl_off == s.ctl.len());
        if batch && live && p.burst && data.len() <= self.params.coalesce {
            // The second frame or more of a burst (a window of MPI_Isend): written with the
            // others at the next poll, or now when the batch is full. One sendmsg and one TCP
            // segment for many frames instead of one each (each costs 3-4 us across a veth pair).
            if p.sendq.frames() < COALESCE_FRAMES && p.sendq.bytes() + len <= COALESCE_BYTES {
                p.sendq.push(&parts, 0);
                self.sends += 1;
                self.batched += 1;
                return Ok(true);
            }
            self.flush(i)?;
        }
        let p = &mut self.peers[i];
        if live && p.sendq.is_empty() {
            p.burst = true;
            let fd = p.sock.as_ref().expect("live").stream.as_raw_fd();
            let n = match crate::sock::send(fd, &parts) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                Err(e) => return Err(self.broken(i, e)),
            };
            if n < frame::HEADER_LEN + len {
                p.sendq.push(&parts, n);
            }
            self.sends += 1;
            return Ok(true);
        }
        if !p.sendq.is_empty() && p.sendq.bytes() + len > self.params.send_queue {
            self.flush(i)?;
            let p = &self.peers[i];
            if !p.sendq.is_empty() && p.sendq.bytes() + len > self.params.send_queue {
                return Ok(false);
            }
        }
        self.peers[i].sendq.push(&parts, 0);
        self.sends += 1;
        self.flush(i)?;
        Ok(true)
    }

    fn connect(&mut self, i: usize) -> Result<(), TcpError> {
        let p = &self.peers[i];
        // An address on a subnet of ours if there is one (the same network), else the first.
        let addr = *p
            .addrs
            .iter()
            .find(|a| self.ifaces.iter().any(|f| f.same_subnet(*a.ip())))
            .or(p.addrs.first())
            .ok_or_else(|| internal(format!("btl tcp: no address for rank {}", p.rank)))?;
        let stream =
            crate::sock::connect(addr, self.params.sndbuf, self.params.rcvbuf).map_err(|e| {
                lost(format!(
                    "btl tcp: cannot connect to rank {} at {addr}: {e}",
                    p.rank
                ))
            })?;
        self.epoll
            .add(stream.as_raw_fd(), i as u64)
            .map_err(|e| internal(format!("btl tcp: epoll: {e}")))?;
        let ctl = handshake::hello(self.rank, p.cookie).to_vec();
        self.peers[i].sock = Some(Sock {
            stream,
            established: false,
            ctl,
            ctl_off: 0,
        });
        Ok(())
    }

    /// The error for a connection to peer `i` that broke.
    fn broken(&self, i: usize, e: io::Error) -> TcpError {
        lost(format!(
            "btl tcp: connection to rank {} lost: {e}",
            self.peers[i].rank
        ))
    }

    /// Write peer `i`'s handshake bytes, then its frames once established.
    fn flush(&mut self, i: usize) -> Result<(), TcpError> {
        let p = &mut self.peers[i];
        let Some(s) = p.sock.as_mut() else {
            return Ok(());
        };
        let fd = s.stream.as_raw_fd();
        if s.ctl_off < s.ctl.len() {
            match crate::sock::send(fd, &[&s.ctl[s.ctl_off..]]) {
                Ok(n) => s.ctl_off += n,
                // Still connecting, or full.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if !s.established => return self.attempt_failed(i, e.to_string(), false),
                Err(e) => return Err(self.broken(i, e)),
            }
            if s.ctl_off < s.ctl.len() {
                return Ok(());
            }
        }
        if !s.established {
            return Ok(());
        }
        match p.sendq.flush(fd) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.broken(i, e)),
        }
    }

    /// Our attempt toward peer `i` ended before the ACK: closed cleanly (`eof`) by a lower rank,
    /// that is the tie-break (wait for its connection); otherwise (refused, reset) a dead peer.
    fn attempt_failed(&mut self, i: usize, why: String, eof: bool) -> Result<(), TcpError> {
        let p = &mut self.peers[i];
        p.sock = None;
        p.recv.clear();
        if eof && p.rank < self.rank {
            p.waiting = true;
            return Ok(());
        }
        Err(lost(format!(
            "btl tcp: rank {} refused the connection ({why})",
            p.rank
        )))
    }

    /// Frames of at least `min` bytes are offered to [`Deliver::place`] with their first `head`
    /// bytes, once those have arrived and the rest has not.
    pub fn set_placement(&mut self, head: usize, min: usize) {
        assert!((1..=MAX_PLACE_HEAD).contains(&head) && min > head);
        self.place_head = head;
        self.place_min = min;
    }

    /// Push queued bytes, accept connections, read and deliver frames as `f(peer, tag, bytes)`
    /// in order per peer; how many were delivered.
    pub fn poll(&mut self, mut f: &mut dyn FnMut(usize, u8, &[u8])) -> Result<usize, TcpError> {
        self.poll_into(&mut f)
    }

    /// [`TcpTransport::poll`], delivering to `f` (frames in order per peer, placed or whole).
    pub fn poll_into(&mut self, f: &mut dyn Deliver) -> Result<usize, TcpError> {
        self.end_bursts()?;
        let mut n = 0;
        let mut k = 0;
        while k < self.hot.len() {
            let i = self.hot[k];
            let (m, small) = self.read_sized(i, f)?;
            n += m;
            if !small {
                // Larger messages go through epoll again (below).
                self.hot.swap_remove(k);
                continue;
            }
            if m > 0 {
                self.last_active[i] = self.turn;
            }
            k += 1;
        }
        self.turn = self.turn.wrapping_add(1);
        if !self.hot.is_empty() && !self.turn.is_multiple_of(EPOLL_EVERY) {
            self.recvs += n as u64;
            return Ok(n);
        }
        let mut ready = std::mem::take(&mut self.ready);
        self.epoll
            .ready(&mut ready)
            .map_err(|e| internal(format!("btl tcp: epoll_wait: {e}")))?;
        for &t in &ready {
            if t == LISTENER {
                self.accept()?;
            } else if !self.hot.contains(&(t as usize)) {
                let (m, small) = self.read_sized(t as usize, f)?;
                if m > 0 && small {
                    self.warm_up(t as usize);
                }
                n += m;
            }
        }
        self.ready = ready;
        if !self.incoming.is_empty() {
            self.handshakes()?;
        }
        self.recvs += n as u64;
        Ok(n)
    }

    /// `read`, and whether the peer's traffic suits hot reads: small messages (every frame
    /// delivered at most [`HOT_FRAME`] bytes, no frame left half-read) in a conversation (at
    /// most [`HOT_UNANSWERED`] frames since our last send to it, and as many sent since we last
    /// heard from it).
    fn read_sized(&mut self, i: usize, f: &mut dyn Deliver) -> Result<(usize, bool), TcpError> {
        let mut w = SizeWatch {
            inner: f,
            small: true,
        };
        let m = self.read(i, &mut w)?;
        let small = w.small;
        let p = &mut self.peers[i];
        p.unanswered = p.unanswered.saturating_add(m as u32);
        let chat = p.unanswered <= HOT_UNANSWERED && p.unheard <= HOT_UNANSWERED;
        if m > 0 {
            p.unheard = 0;
        }
        Ok((m, small && p.recv.is_empty() && p.placing.is_none() && chat))
    }

    /// Peer `i` delivered: make it hot, in place of the hot peer quiet the longest if full.
    fn warm_up(&mut self, i: usize) {
        self.last_active[i] = self.turn;
        if self.hot.len() < HOT_MAX {
            self.hot.push(i);
            return;
        }
        let turn = self.turn;
        let la = &self.last_active;
        if let Some(k) = (0..self.hot.len()).max_by_key(|&k| turn.wrapping_sub(la[self.hot[k]])) {
            self.hot[k] = i;
        }
    }

    fn accept(&mut self) -> Result<(), TcpError> {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    let ok = stream
                        .set_nonblocking(true)
                        .and_then(|()| stream.set_nodelay(true));
                    if ok.is_ok() {
                        self.incoming.push(Incoming {
                            stream,
                            hello: [0; HELLO_LEN],
                            got: 0,
                            since: std::time::Instant::now(),
                        });
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Out of descriptors and such: peers retry nothing, so this is fatal.
                Err(e) => return Err(internal(format!("btl tcp: accept: {e}"))),
            }
        }
    }

    /// Read the hellos of accepted connections and keep or close each (tie-break above).
    fn handshakes(&mut self) -> Result<(), TcpError> {
        let mut k = 0;
        while k < self.incoming.len() {
            let c = &mut self.incoming[k];
            let done = match (&c.stream).read(&mut c.hello[c.got..]) {
                Ok(0) => true,
                Ok(n) => {
                    c.got += n;
                    c.got == HELLO_LEN
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.since.elapsed() > HELLO_TIMEOUT
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => false,
                Err(_) => true,
            };
            if !done {
                k += 1;
                continue;
            }
            let c = self.incoming.swap_remove(k);
            if c.got < HELLO_LEN {
                continue;
            }
            let Some(i) =
                handshake::check(&c.hello, self.cookie).and_then(|r| self.by_rank.get(&r).copied())
            else {
                continue; // Not one of our peers: close it.
            };
            let p = &mut self.peers[i];
            let keep = match &p.sock {
                None => true,
                Some(s) if s.established => false,
                Some(_) => p.rank < self.rank,
            };
            if !keep {
                continue;
            }
            self.epoll
                .add(c.stream.as_raw_fd(), i as u64)
                .map_err(|e| internal(format!("btl tcp: epoll: {e}")))?;
            let p = &mut self.peers[i];
            // Dropping our own pending attempt (if any) closes it; nothing of it was delivered.
            p.recv.clear();
            p.waiting = false;
            p.sock = Some(Sock {
                stream: c.stream,
                established: true,
                ctl: vec![handshake::ACK],
                ctl_off: 0,
            });
            self.flush(i)?;
        }
        Ok(())
    }

    /// Read what peer `i`'s connection has and deliver its complete frames.
    fn read(&mut self, i: usize, f: &mut dyn Deliver) -> Result<usize, TcpError> {
        let mut n = 0;
        // A few reads at most per poll, so that one busy peer cannot starve the others.
        for _ in 0..4 {
            let p = &mut self.peers[i];
            let Some(s) = p.sock.as_mut() else {
                return Ok(n);
            };
            if let Some(pl) = p.placing.as_mut() {
                // SAFETY: Deliver::place's contract: `rest` bytes at `dst` are ours to write
                // until `placed`; got < rest.
                let into = unsafe {
                    std::slice::from_raw_parts_mut((pl.dst + pl.got) as *mut u8, pl.rest - pl.got)
                };
                let want = into.len();
                match (&s.stream).read(into) {
                    Ok(0) => {
                        return Err(lost(format!(
                            "btl tcp: rank {} closed its connection (the process ended)",
                            p.rank
                        )))
                    }
                    Ok(k) => {
                        pl.got += k;
                        if pl.got == pl.rest {
                            let pl = p.placing.take().expect("placing");
                            f.placed(i, pl.tag, &pl.head[..self.place_head], pl.rest);
                            p.big = true;
                            self.placed += 1;
                            n += 1;
                        } else if k < want {
                            return Ok(n); // drained for now
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(self.broken(i, e)),
                }
                continue;
            }
            let limit = if p.big && p.recv.is_empty() {
                frame::HEADER_LEN + self.place_head
            } else {
                usize::MAX
            };
            let more = match p.recv.fill(&s.stream, limit) {
                Ok(Fill::Got(more)) => more,
                Ok(Fill::WouldBlock) => return Ok(n),
                Ok(Fill::Eof) if s.established => {
                    return Err(lost(format!(
                        "btl tcp: rank {} closed its connection (the process ended)",
                        p.rank
                    )))
                }
                Ok(Fill::Eof) => {
                    self.attempt_failed(i, "closed".into(), true)?;
                    return Ok(n);
                }
                Err(e) if s.established => return Err(self.broken(i, e)),
                Err(e) => {
                    self.attempt_failed(i, e.to_string(), false)?;
                    return Ok(n);
                }
            };
            if !s.established {
                match p.recv.take_byte() {
                    Some(handshake::ACK) => s.established = true,
                    _ => {
                        return Err(internal(format!(
                            "btl tcp: rank {} sent a bad handshake",
                            p.rank
                        )))
                    }
                }
                self.flush(i)?;
            }
            let p = &mut self.peers[i];
            let max = self.params.max_frame();
            let (place_min, big) = (self.place_min, &mut p.big);
            n += p
                .recv
                .frames(max, &mut |tag, b| {
                    *big = place_min > 0 && b.len() >= place_min;
                    f.frame(i, tag, b)
                })
                .map_err(|len| {
                    internal(format!(
                        "btl tcp: rank {} sent a {len}-byte frame (corrupt stream)",
                        p.rank
                    ))
                })?;
            if self.place_head > 0 && self.start_placing(i, f) {
                continue;
            }
            if !more {
                break;
            }
        }
        Ok(n)
    }

    /// Peer `i`'s buffer ends with a large frame begun: if its head is there and `f` gives it
    /// a place, the bytes already read go there and the rest will be read straight into it.
    fn start_placing(&mut self, i: usize, f: &mut dyn Deliver) -> bool {
        let head = self.place_head;
        let p = &mut self.peers[i];
        let Some((tag, len, here)) = p.recv.partial() else {
            return false;
        };
        if len < self.place_min || here < head {
            return false;
        }
        let bytes = p.recv.partial_bytes();
        let mut h = [0u8; MAX_PLACE_HEAD];
        h[..head].copy_from_slice(&bytes[..head]);
        let rest = len - head;
        let Some(dst) = f.place(i, tag, &h[..head], rest) else {
            return false;
        };
        let bytes = p.recv.take_partial();
        let got = bytes.len() - head;
        // SAFETY: Deliver::place's contract: `rest` bytes at `dst` are ours to write; got < rest
        // (the frame is incomplete).
        unsafe { std::ptr::copy_nonoverlapping(bytes[head..].as_ptr(), dst, got) };
        p.placing = Some(Placing {
            dst: dst as usize,
            got,
            rest,
            tag,
            head: h,
        });
        true
    }
}

/// Passes frames on, noting whether every one was small enough for hot reads (a placed frame
/// is large).
struct SizeWatch<'a> {
    inner: &'a mut dyn Deliver,
    small: bool,
}

impl Deliver for SizeWatch<'_> {
    fn frame(&mut self, peer: usize, tag: u8, bytes: &[u8]) {
        self.small &= bytes.len() <= HOT_FRAME;
        self.inner.frame(peer, tag, bytes)
    }

    fn place(&mut self, peer: usize, tag: u8, head: &[u8], rest: usize) -> Option<*mut u8> {
        self.inner.place(peer, tag, head, rest)
    }

    fn placed(&mut self, peer: usize, tag: u8, head: &[u8], rest: usize) {
        self.small = false;
        self.inner.placed(peer, tag, head, rest)
    }
}
