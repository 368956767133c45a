//! The software verbs provider: RC semantics between processes on one machine, without RDMA
//! hardware. Sends/receives travel over one SOCK_SEQPACKET unix socket per QP pair (abstract
//! namespace), RDMA READ/WRITE are process_vm_readv/writev against the peer's MR table, the
//! atomics the same under a per-word lock in the target's lock file ([`atomic`]), and
//! registrations pin for real (mlock, counted against RLIMIT_MEMLOCK). Pages are compared with
//! those recorded at registration on every access, to catch memory freed while registered.
//!
//! Modules: [`sock`] (syscalls), [`qp`] (QP state, wire, address), [`mr`] (MR table),
//! [`pagemap`] (PFNs), [`rdma`] (one-sided transfers), `conn` (dial/accept/hello), `progress` (the work done in poll_cq).

use super::*;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

mod atomic;
mod conn;
mod mr;
mod pagemap;
mod progress;
mod qp;
mod rdma;
mod sock;

use mr::MrTable;
use pagemap::Pagemap;
use qp::Qp;
use rdma::Peer;

/// Largest payload of one Send.
pub const MAX_MSG: usize = 64 << 10;
/// The epoll token of the listener; QP sockets use their QP number.
const LISTENER: u64 = u64::MAX;

/// An accepted socket whose hello names a QP not connected yet.
struct Pending {
    fd: OwnedFd,
    hello: Option<(u32, Qpn, Qpn)>,
}

pub struct SoftDevice {
    pid: u32,
    name: Vec<u8>,
    listener: OwnedFd,
    epoll: sock::Epoll,
    mrs: MrTable,
    pagemap: Pagemap,
    detect: bool,
    qps: BTreeMap<Qpn, Qp>,
    next_qpn: Qpn,
    pending: Vec<Pending>,
    cq: VecDeque<Wc>,
    ready: Vec<u64>,
    /// This device's atomics lock file, and whether peers can open it (procfs).
    lock_file: OwnedFd,
    atomics: bool,
    /// Peers' lock files by (pid, fd), opened at their first atomic.
    peer_locks: HashMap<(u32, u32), OwnedFd>,
}

impl SoftDevice {
    pub fn open() -> Result<SoftDevice, String> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let pid = std::process::id();
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "rmpi-ib-soft-{pid}-{}-{nonce:x}",
            COUNTER.fetch_add(1, Ordering::Relaxed)
        )
        .into_bytes();
        let err = |what: &str, e: std::io::Error| format!("soft verbs device: {what}: {e}");
        let listener = sock::listen_abstract(&name).map_err(|e| err("listening socket", e))?;
        let epoll = sock::Epoll::new().map_err(|e| err("epoll", e))?;
        epoll
            .add(listener.as_raw_fd(), LISTENER)
            .map_err(|e| err("epoll_ctl", e))?;
        let mrs = MrTable::new();
        let mut pagemap = Pagemap::default();
        // The table's pages are present (written when built): PFN 0 there means no visibility.
        let detect = pagemap
            .read(pid, mrs.table_addr() as usize / mrs.page(), 1)
            .is_ok_and(|p| pagemap::pfns_visible(&p) && p[0] != 0);
        let lock_file = atomic::create_lock_file().map_err(|e| err("memfd_create", e))?;
        // Peers open it through procfs: if we cannot, neither can they.
        let atomics = atomic::open_lock_file(pid, lock_file.as_raw_fd() as u32).is_ok();
        Ok(SoftDevice {
            pid,
            name,
            listener,
            epoll,
            mrs,
            pagemap,
            detect,
            qps: BTreeMap::new(),
            next_qpn: 1,
            pending: Vec::new(),
            cq: VecDeque::new(),
            ready: Vec::new(),
            lock_file,
            atomics,
            peer_locks: HashMap::new(),
        })
    }

    /// Whether remapped pages are detected (PFNs are visible: CAP_SYS_ADMIN).
    pub fn remap_detection(&self) -> bool {
        self.detect
    }

    fn qp(&mut self, qpn: Qpn) -> Result<&mut Qp, VerbsError> {
        self.qps
            .get_mut(&qpn)
            .ok_or_else(|| VerbsError(format!("soft verbs: no QP {qpn}")))
    }

    fn peer(&self) -> Peer {
        Peer {
            pid: self.pid,
            table: self.mrs.table_addr(),
            cap: mr::TABLE_CAP as u32,
            lock_fd: self.lock_file.as_raw_fd() as u32,
            name: self.name.clone(),
        }
    }
}

fn flush_wc(qpn: Qpn, wr_id: u64, opcode: WcOpcode, detail: &str) -> Wc {
    Wc {
        wr_id,
        qpn,
        opcode,
        status: WcStatus::WrFlushErr,
        byte_len: 0,
        imm: None,
        detail: Some(detail.to_string()),
    }
}

fn send_opcode(wr: &SendWr) -> WcOpcode {
    match wr {
        SendWr::Send { .. } => WcOpcode::Send,
        SendWr::RdmaRead { .. } => WcOpcode::RdmaRead,
        SendWr::RdmaWrite { .. } => WcOpcode::RdmaWrite,
        SendWr::AtomicFetchAdd { .. } => WcOpcode::FetchAdd,
        SendWr::AtomicCmpSwap { .. } => WcOpcode::CompSwap,
    }
}

impl Device for SoftDevice {
    fn name(&self) -> String {
        "soft".into()
    }

    fn max_msg(&self) -> usize {
        MAX_MSG
    }

    fn reg_mr(&mut self, addr: usize, len: usize, access: Access) -> Result<Mr, RegError> {
        self.mrs
            .reg(addr, len, access, &mut self.pagemap, &mut self.detect)
    }

    fn dereg_mr(&mut self, mr: Mr) -> Result<(), VerbsError> {
        self.mrs
            .dereg(mr.lkey)
            .ok_or_else(|| VerbsError(format!("soft verbs: dereg of unknown lkey {:#x}", mr.lkey)))
    }

    fn pinned(&self) -> (usize, Option<usize>) {
        (self.mrs.pinned(), mr::memlock_limit())
    }

    fn address(&self) -> Vec<u8> {
        qp::encode_address(&self.peer())
    }

    fn create_qp(&mut self, max_send_wr: u32, max_recv_wr: u32) -> Result<Qpn, VerbsError> {
        let qpn = self.next_qpn;
        self.next_qpn += 1;
        self.qps.insert(qpn, Qp::new(qpn, max_send_wr, max_recv_wr));
        Ok(qpn)
    }

    fn connect(
        &mut self,
        qpn: Qpn,
        remote_address: &[u8],
        remote_qpn: Qpn,
    ) -> Result<(), VerbsError> {
        let peer = qp::decode_address(remote_address)?;
        let me = self.pid;
        let q = self.qp(qpn)?;
        if q.remote.is_some() {
            return Err(VerbsError(format!(
                "soft verbs: QP {qpn} is already connected"
            )));
        }
        q.dial = (me, qpn) < (peer.pid, remote_qpn);
        q.remote = Some((peer, remote_qpn));
        self.progress_connections();
        Ok(())
    }

    fn post_recv(&mut self, qpn: Qpn, wr_id: u64, sge: Sge) -> Result<(), VerbsError> {
        let q = self.qp(qpn)?;
        if q.error {
            let w = flush_wc(qpn, wr_id, WcOpcode::Recv, &q.reason);
            self.cq.push_back(w);
            return Ok(());
        }
        if q.rq.len() >= q.max_recv {
            return Err(VerbsError(format!(
                "soft verbs: receive queue of QP {qpn} is full ({})",
                q.max_recv
            )));
        }
        q.rq.push_back((wr_id, sge));
        Ok(())
    }

    fn post_send(&mut self, qpn: Qpn, wr: SendWr) -> Result<(), VerbsError> {
        let q = self.qp(qpn)?;
        if q.error {
            let w = flush_wc(qpn, wr.wr_id(), send_opcode(&wr), &q.reason);
            self.cq.push_back(w);
            return Ok(());
        }
        if let SendWr::Send { sge, .. } = wr {
            if sge.len > MAX_MSG {
                return Err(VerbsError(format!(
                    "soft verbs: send of {} bytes exceeds max_msg {MAX_MSG}",
                    sge.len
                )));
            }
        }
        if q.sq.len() >= q.max_send {
            return Err(VerbsError(format!(
                "soft verbs: send queue of QP {qpn} is full ({})",
                q.max_send
            )));
        }
        q.sq.push_back(wr);
        // Start at once when nothing is ahead of it.
        if q.sq.len() == 1 && q.fd.is_some() {
            self.progress_sq(qpn);
        }
        Ok(())
    }

    fn poll_cq(&mut self, out: &mut Vec<Wc>, max: usize) -> usize {
        if self.cq.len() < max {
            self.progress();
        }
        let n = self.cq.len().min(max);
        out.extend(self.cq.drain(..n));
        n
    }

    fn destroy_qp(&mut self, qpn: Qpn) -> Result<(), VerbsError> {
        let mut q = self
            .qps
            .remove(&qpn)
            .ok_or_else(|| VerbsError(format!("soft verbs: no QP {qpn}")))?;
        if let Some(fd) = q.fd.take() {
            self.epoll.del(fd.as_raw_fd());
            if !q.error && !q.peer_closed {
                progress::send_disconnect(&fd);
            }
        }
        // Exactly one completion per WR: what never ran is flushed.
        let why = "QP destroyed";
        for wr in q.sq.drain(..) {
            self.cq
                .push_back(flush_wc(qpn, wr.wr_id(), send_opcode(&wr), why));
        }
        for (id, _) in q.rq.drain(..) {
            self.cq.push_back(flush_wc(qpn, id, WcOpcode::Recv, why));
        }
        Ok(())
    }

    fn atomics(&self) -> bool {
        self.atomics
    }

    fn atomic_local(&mut self, addr: usize, op: AtomicOp) -> Result<u64, VerbsError> {
        if !addr.is_multiple_of(8) || addr == 0 {
            return Err(VerbsError(format!(
                "soft verbs: local atomic at {addr:#x}: not an aligned 8-byte word"
            )));
        }
        // SAFETY: aligned and non-null; the caller names a word of its own memory (the
        // transport's contract: its registered window).
        unsafe { atomic::local(&self.lock_file, addr, op) }
            .map_err(|e| VerbsError(format!("soft verbs: local atomic lock: {e}")))
    }
}

impl Drop for SoftDevice {
    fn drop(&mut self) {
        let qpns: Vec<Qpn> = self.qps.keys().copied().collect();
        for q in qpns {
            let _ = self.destroy_qp(q);
        }
        for k in self.mrs.keys() {
            self.mrs.dereg(k);
        }
        // The listener, epoll and pending sockets close with their OwnedFds.
    }
}
