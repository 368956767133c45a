//! The ib byte-transfer protocol over RC QPs, one QP per peer:
//! - fragments are copied into registered send bounce buffers and consume a receive the peer
//!   pre-posted; credit-based flow control (each fragment carries the credits its sender
//!   returns; a credit-only fragment goes out when half a window is owed), so a sender never
//!   relies on the peer's RNR retries in the common case;
//! - large messages: the sender exposes its buffer (registration through the cache, the rkey
//!   travels in the pml's RTS) and the receiver pulls it with RDMA READ into its own
//!   registered buffer;
//! - any error completion is fatal for the pair and reported as an [`IbError`].

mod atomic;
mod error;
pub mod pool;
mod rdma;

use std::collections::{HashMap, VecDeque};

pub use error::{FailClass, IbError};
use pool::{Pool, WrId};

use crate::params::Params;
use crate::rcache::{Handle, Rcache, Stats};
use crate::verbs::{self, Device, Qpn, SendWr, Wc, WcStatus};

/// Fragment header in a bounce buffer: btl tag, reserved, credits returned (u16 LE).
const FRAG_HDR: usize = 4;
/// Tag of a credit-only fragment (pml tags start at 1).
const CREDIT_ONLY: u8 = 0;
/// Receives posted per peer beyond the credits granted: room for credit-only fragments,
/// which consume no credit.
const SPARE_RECVS: usize = 2;
/// Completions taken per poll.
const POLL_BATCH: usize = 64;

struct Peer {
    qpn: Qpn,
    /// Fragments we may still send (receives the peer has posted for us).
    credits: usize,
    /// Receives we reposted and have not told the peer about yet.
    owed: usize,
}

/// Why a get could not be done.
#[derive(Debug)]
pub enum GetFailure {
    /// Registration impossible (e.g. pinned-memory limit): stream the data instead.
    Unsupported(String),
    /// The read failed on the wire: the pair is broken.
    Failed(IbError),
}

pub struct IbTransport {
    dev: Box<dyn Device>,
    params: Params,
    /// World rank of each peer, for messages.
    names: Vec<usize>,
    peers: Vec<Peer>,
    recv: Pool,
    send: Pool,
    free_send: Vec<usize>,
    wcs: Vec<Wc>,
    /// Completions taken while waiting for an RDMA READ, handled by the next poll.
    stash: VecDeque<Wc>,
    rcache: Rcache,
    exposed: HashMap<(usize, usize, usize), Vec<Handle>>,
    rdma_seq: u64,
    /// The 8 local bytes the atomics return the old value into (registered through the
    /// cache at first use, so later atomics hit).
    atomic_buf: Box<u64>,
    pin_warned: bool,
    counters: Counters,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub sends: u64,
    pub recvs: u64,
    pub credit_frags: u64,
    pub rdma_reads: u64,
    /// One-sided puts (RDMA WRITE).
    pub rdma_writes: u64,
    pub rdma_bytes: u64,
    /// Verbs atomics posted (fetch-and-add and compare-and-swap).
    pub atomics: u64,
    /// Rendezvous that fell back to bounce buffers because a buffer could not be registered.
    pub unpinnable: u64,
}

impl IbTransport {
    /// Opens the device, creates one QP per peer (`names[i]` is peer i's world rank) and posts
    /// the receive buffers. Connect each QP with [`IbTransport::connect`] afterwards.
    pub fn open(mut params: Params, names: Vec<usize>) -> Result<IbTransport, IbError> {
        let mut dev = verbs::open(params.device)
            .map_err(|why| IbError::new(FailClass::Internal, format!("btl ib: {why}")))?;
        let n = names.len();
        let per_peer = params.recv_bufs + SPARE_RECVS;
        // A buffer is one message: no larger than the device sends.
        params.buf_size = params.buf_size.min(dev.max_msg());
        let size = params.buf_size;
        let buffers_bytes = (n * per_peer + params.send_bufs) * size;
        let pin_err = |what: &str, e: verbs::RegError| {
            IbError::new(
                FailClass::NoMem,
                format!(
                    "btl ib: cannot register the {what} ({} bytes of {} in all for {n} peers): {e}; \
                     lower btl_ib_recv_bufs ({}), btl_ib_send_bufs ({}) or btl_ib_buf_size ({size}), \
                     or raise the pinned-memory limit (`ulimit -l`)",
                    match what {
                        "receive buffers" => n * per_peer * size,
                        _ => params.send_bufs * size,
                    },
                    buffers_bytes,
                    params.recv_bufs,
                    params.send_bufs,
                ),
            )
        };
        let recv = Pool::new(dev.as_mut(), n * per_peer, size)
            .map_err(|e| pin_err("receive buffers", e))?;
        let send = match Pool::new(dev.as_mut(), params.send_bufs, size) {
            Ok(p) => p,
            Err(e) => {
                let mut recv = recv;
                recv.release(dev.as_mut());
                return Err(pin_err("send buffers", e));
            }
        };
        // The cache may keep what RLIMIT_MEMLOCK leaves beside the bounce buffers.
        let (pinned, limit) = dev.pinned();
        let max = params.rcache_max_bytes.unwrap_or(match limit {
            Some(l) => l.saturating_sub(pinned),
            None => 1 << 30,
        });
        let mut t = IbTransport {
            rcache: Rcache::new(params.leave_pinned, max),
            dev,
            names,
            peers: Vec::with_capacity(n),
            recv,
            free_send: (0..params.send_bufs).rev().collect(),
            send,
            wcs: Vec::with_capacity(POLL_BATCH),
            stash: VecDeque::new(),
            exposed: HashMap::new(),
            rdma_seq: 0,
            atomic_buf: Box::new(0),
            pin_warned: false,
            counters: Counters::default(),
            params,
        };
        let max_send = (t.params.send_bufs + 16) as u32;
        for i in 0..n {
            let qpn = t.dev.create_qp(max_send, per_peer as u32).map_err(|e| {
                IbError::new(FailClass::Internal, format!("btl ib: create QP: {e}"))
            })?;
            t.peers.push(Peer {
                qpn,
                credits: t.params.recv_bufs,
                owed: 0,
            });
            for k in 0..per_peer {
                t.post_recv(i * per_peer + k)?;
            }
        }
        Ok(t)
    }

    pub fn device_name(&self) -> String {
        self.dev.name()
    }

    /// What peers need to reach this device.
    pub fn address(&self) -> Vec<u8> {
        self.dev.address()
    }

    /// The local QP number used for peer `i`.
    pub fn qpn(&self, i: usize) -> Qpn {
        self.peers[i].qpn
    }

    /// Connects peer `i`'s QP to the peer's QP `remote_qpn` on the device at `remote_address`.
    pub fn connect(
        &mut self,
        i: usize,
        remote_address: &[u8],
        remote_qpn: Qpn,
    ) -> Result<(), IbError> {
        self.dev
            .connect(self.peers[i].qpn, remote_address, remote_qpn)
            .map_err(|e| {
                IbError::new(
                    FailClass::PeerLost,
                    format!("btl ib: connecting to rank {}: {e}", self.names[i]),
                )
            })
    }

    /// Largest `hdr.len() + data.len()` of one fragment.
    pub fn max_frag(&self) -> usize {
        self.params.buf_size - FRAG_HDR
    }

    fn post_recv(&mut self, b: usize) -> Result<(), IbError> {
        let size = self.params.buf_size;
        let per_peer = self.params.recv_bufs + SPARE_RECVS;
        let peer = b / per_peer;
        self.dev
            .post_recv(
                self.peers[peer].qpn,
                WrId::Recv(b).encode(),
                self.recv.sge(b, size),
            )
            .map_err(|e| {
                IbError::new(
                    FailClass::PeerLost,
                    format!(
                        "btl ib: posting a receive for rank {}: {e}",
                        self.names[peer]
                    ),
                )
            })
    }

    /// Sends one fragment; Ok(false) when out of credits or send buffers now.
    pub fn try_send(
        &mut self,
        peer: usize,
        tag: u8,
        hdr: &[u8],
        data: &[u8],
    ) -> Result<bool, IbError> {
        debug_assert!(tag != CREDIT_ONLY);
        if self.peers[peer].credits == 0 {
            return Ok(false);
        }
        let sent = self.send_frag(peer, tag, &[hdr, data])?;
        if sent {
            self.peers[peer].credits -= 1;
        }
        Ok(sent)
    }

    fn send_frag(&mut self, peer: usize, tag: u8, parts: &[&[u8]]) -> Result<bool, IbError> {
        let Some(b) = self.free_send.pop() else {
            return Ok(false);
        };
        let p = &mut self.peers[peer];
        let give = p.owed.min(u16::MAX as usize);
        p.owed -= give;
        let buf = self.send.buf_mut(b);
        buf[0] = tag;
        buf[1] = 0;
        buf[2..4].copy_from_slice(&(give as u16).to_le_bytes());
        let mut len = FRAG_HDR;
        for part in parts {
            buf[len..len + part.len()].copy_from_slice(part);
            len += part.len();
        }
        let wr = SendWr::Send {
            wr_id: WrId::Send(b).encode(),
            sge: self.send.sge(b, len),
            imm: None,
        };
        let qpn = self.peers[peer].qpn;
        self.dev.post_send(qpn, wr).map_err(|e| {
            IbError::new(
                FailClass::PeerLost,
                format!("btl ib: send to rank {}: {e}", self.names[peer]),
            )
        })?;
        self.counters.sends += 1;
        Ok(true)
    }

    /// Delivers arrived fragments as `f(peer, tag, bytes)`, in order per peer; returns how many.
    pub fn poll(&mut self, f: &mut dyn FnMut(usize, u8, &[u8])) -> Result<usize, IbError> {
        let mut wcs = std::mem::take(&mut self.wcs);
        wcs.clear();
        wcs.extend(self.stash.drain(..));
        if wcs.is_empty() {
            self.dev.poll_cq(&mut wcs, POLL_BATCH);
        }
        let mut delivered = 0;
        let mut result = Ok(());
        for wc in wcs.drain(..) {
            if let Err(e) = self.complete(&wc, f, &mut delivered) {
                result = Err(e);
                break;
            }
        }
        self.wcs = wcs;
        result?;
        self.return_credits()?;
        Ok(delivered)
    }

    fn complete(
        &mut self,
        wc: &Wc,
        f: &mut dyn FnMut(usize, u8, &[u8]),
        delivered: &mut usize,
    ) -> Result<(), IbError> {
        let per_peer = self.params.recv_bufs + SPARE_RECVS;
        match WrId::decode(wc.wr_id) {
            Some(WrId::Recv(b)) => {
                let peer = b / per_peer;
                if wc.status != WcStatus::Success {
                    let what = format!("receive from rank {}", self.names[peer]);
                    return Err(IbError::from_wc(wc, &what));
                }
                let frag = &self.recv.buf(b)[..wc.byte_len];
                let tag = frag[0];
                let credits = u16::from_le_bytes([frag[2], frag[3]]) as usize;
                self.peers[peer].credits += credits;
                self.counters.recvs += 1;
                if tag == CREDIT_ONLY {
                    // It used one of the spare receives, outside the credit window: repost
                    // without owing the peer a credit for it.
                    return self.post_recv(b);
                }
                f(peer, tag, &frag[FRAG_HDR..]);
                *delivered += 1;
                self.post_recv(b)?;
                self.peers[peer].owed += 1;
                Ok(())
            }
            Some(WrId::Send(b)) => {
                self.free_send.push(b);
                if wc.status != WcStatus::Success {
                    let peer = self.peer_of(wc.qpn);
                    return Err(IbError::from_wc(wc, &format!("send to rank {peer}")));
                }
                Ok(())
            }
            Some(WrId::Rdma(_)) | None => Err(IbError::new(
                FailClass::Internal,
                format!(
                    "btl ib: unexpected completion {:?} (wr_id {:#x})",
                    wc.opcode, wc.wr_id
                ),
            )),
        }
    }

    fn peer_of(&self, qpn: Qpn) -> String {
        match self.peers.iter().position(|p| p.qpn == qpn) {
            Some(i) => self.names[i].to_string(),
            None => format!("? (QP {qpn})"),
        }
    }

    /// A credit-only fragment to each peer owed half a window, when a send buffer is free.
    fn return_credits(&mut self) -> Result<(), IbError> {
        let threshold = (self.params.recv_bufs / 2).max(1);
        for i in 0..self.peers.len() {
            if self.peers[i].owed >= threshold {
                if !self.send_frag(i, CREDIT_ONLY, &[])? {
                    break;
                }
                self.counters.credit_frags += 1;
            }
        }
        Ok(())
    }

    /// Whether every posted send has completed (nothing left in flight from this side).
    pub fn flushed(&self) -> bool {
        self.free_send.len() == self.params.send_bufs
    }

    pub fn rcache_stats(&self) -> Stats {
        self.rcache.stats()
    }

    /// Whether the cache keeps registrations, or why not.
    pub fn rcache_enabled(&self) -> Result<(), &'static str> {
        self.rcache.enabled()
    }

    /// `btl_ib_verbose`: report the device at init and the counters at finalize.
    pub fn verbose(&self) -> bool {
        self.params.verbose
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }
}

impl Drop for IbTransport {
    fn drop(&mut self) {
        for (_, hs) in std::mem::take(&mut self.exposed) {
            for h in hs {
                self.rcache.release(self.dev.as_mut(), h);
            }
        }
        self.rcache.clear(self.dev.as_mut());
        for p in &self.peers {
            let _ = self.dev.destroy_qp(p.qpn);
        }
        self.recv.release(self.dev.as_mut());
        self.send.release(self.dev.as_mut());
    }
}
