//! The work poll_cq (and posts) do: accept and match connections, dial, run send queues in
//! order, receive into posted WQEs, and move QPs to the error state.

use super::qp::{self, Qp, HDR_LEN, OP_DISCONNECT, OP_HELLO, OP_SEND};
use super::{atomic, flush_wc, rdma, send_opcode, sock, SoftDevice, LISTENER};
use crate::verbs::{Access, AtomicOp, Qpn, SendWr, Wc, WcOpcode, WcStatus};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// Best effort, but patient (up to ~1 s) when the peer's queue is full: an orderly close
/// must not look like a death.
pub fn send_disconnect(fd: &OwnedFd) {
    let h = qp::header(OP_DISCONNECT, None);
    for _ in 0..100 {
        match sock::send_parts(fd.as_raw_fd(), &h, std::ptr::null(), 0) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                sock::wait_writable(fd.as_raw_fd(), 10)
            }
            _ => return,
        }
    }
}

fn is_peer_gone(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EPIPE) | Some(libc::ECONNRESET) | Some(libc::ENOTCONN)
    )
}

fn wc(
    qpn: Qpn,
    wr_id: u64,
    opcode: WcOpcode,
    status: WcStatus,
    byte_len: usize,
    detail: Option<String>,
) -> Wc {
    Wc {
        wr_id,
        qpn,
        opcode,
        status,
        byte_len,
        imm: None,
        detail,
    }
}

impl SoftDevice {
    pub(super) fn progress(&mut self) {
        let mut ready = std::mem::take(&mut self.ready);
        self.epoll.ready(&mut ready);
        let dialing = self
            .qps
            .values()
            .any(|q| q.dial && q.fd.is_none() && !q.error && !q.peer_closed);
        if ready.contains(&LISTENER) || !self.pending.is_empty() || dialing {
            self.progress_connections();
        }
        for &t in &ready {
            if t != LISTENER {
                self.progress_rq(t as Qpn);
            }
        }
        self.ready = ready;
        let busy: Vec<Qpn> = self
            .qps
            .values()
            .filter(|q| !q.sq.is_empty() && (q.fd.is_some() || q.peer_closed || q.error))
            .map(|q| q.qpn)
            .collect();
        for qpn in busy {
            self.progress_sq(qpn);
        }
    }

    /// To the error state: `head` (if any) completes the first queued send with that status,
    /// everything else queued or posted is flushed, the socket is closed.
    pub(super) fn fail_qp(&mut self, qpn: Qpn, head: Option<WcStatus>, detail: String) {
        let Some(q) = self.qps.get_mut(&qpn) else {
            return;
        };
        if q.error {
            return;
        }
        q.error = true;
        if let Some(fd) = q.fd.take() {
            self.epoll.del(fd.as_raw_fd());
        }
        if let (Some(st), Some(wr)) = (head, q.sq.pop_front()) {
            self.cq.push_back(wc(
                qpn,
                wr.wr_id(),
                send_opcode(&wr),
                st,
                0,
                Some(detail.clone()),
            ));
        }
        q.reason = format!("flushed: QP {qpn} is in the error state ({detail})");
        for wr in q.sq.drain(..) {
            self.cq
                .push_back(flush_wc(qpn, wr.wr_id(), send_opcode(&wr), &q.reason));
        }
        for (id, _) in q.rq.drain(..) {
            self.cq
                .push_back(flush_wc(qpn, id, WcOpcode::Recv, &q.reason));
        }
    }

    fn peer_died(&mut self, qpn: Qpn) {
        let pid = self.qps.get(&qpn).map_or(0, Qp::peer_pid);
        self.pagemap.forget(pid);
        let d = format!("peer pid {pid} closed the connection without a disconnect (did it die?)");
        self.fail_qp(qpn, Some(WcStatus::RetryExcErr), d);
    }

    /// Runs the send queue of `qpn` in order until it is empty or a send would block.
    pub(super) fn progress_sq(&mut self, qpn: Qpn) {
        loop {
            let Some(q) = self.qps.get_mut(&qpn) else {
                return;
            };
            let Some(&wr) = q.sq.front() else { return };
            if q.error {
                return;
            }
            if q.peer_closed {
                q.sq.pop_front();
                let w = flush_wc(qpn, wr.wr_id(), send_opcode(&wr), "peer closed its QP");
                self.cq.push_back(w);
                continue;
            }
            let Some(fd) = q.fd.as_ref().map(|f| f.as_raw_fd()) else {
                return;
            };
            let peer = q.remote.as_ref().unwrap().0.clone();
            let result: Result<usize, (WcStatus, String)> = match wr {
                SendWr::Send { sge, imm, .. } => {
                    if let Err(f) =
                        self.mrs
                            .check_local(&sge, Access(0), &mut self.pagemap, self.detect)
                    {
                        Err(f)
                    } else {
                        let h = qp::header(OP_SEND, imm);
                        match sock::send_parts(fd, &h, sge.addr as *const u8, sge.len) {
                            Ok(()) => Ok(sge.len),
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                            Err(e) if is_peer_gone(&e) => return self.peer_died(qpn),
                            Err(e) => Err((WcStatus::GeneralErr, format!("sendmsg: {e}"))),
                        }
                    }
                }
                SendWr::RdmaRead {
                    local,
                    remote_addr,
                    rkey,
                    ..
                } => self.rdma(&peer, local, remote_addr, rkey, false),
                SendWr::RdmaWrite {
                    local,
                    remote_addr,
                    rkey,
                    ..
                } => self.rdma(&peer, local, remote_addr, rkey, true),
                SendWr::AtomicFetchAdd {
                    local,
                    remote_addr,
                    rkey,
                    add,
                    ..
                } => self.atomic(&peer, local, remote_addr, rkey, AtomicOp::FetchAdd(add)),
                SendWr::AtomicCmpSwap {
                    local,
                    remote_addr,
                    rkey,
                    compare,
                    swap,
                    ..
                } => self.atomic(
                    &peer,
                    local,
                    remote_addr,
                    rkey,
                    AtomicOp::CmpSwap { compare, swap },
                ),
            };
            let q = self.qps.get_mut(&qpn).unwrap();
            q.sq.pop_front();
            match result {
                Ok(n) => self.cq.push_back(wc(
                    qpn,
                    wr.wr_id(),
                    send_opcode(&wr),
                    WcStatus::Success,
                    n,
                    None,
                )),
                Err((st, d)) => {
                    self.cq.push_back(wc(
                        qpn,
                        wr.wr_id(),
                        send_opcode(&wr),
                        st,
                        0,
                        Some(d.clone()),
                    ));
                    self.fail_qp(qpn, None, d);
                    return;
                }
            }
        }
    }

    fn rdma(
        &mut self,
        peer: &rdma::Peer,
        local: crate::verbs::Sge,
        raddr: u64,
        rkey: u32,
        write: bool,
    ) -> Result<usize, (WcStatus, String)> {
        let need_local = if write {
            Access(0)
        } else {
            Access::LOCAL_WRITE
        };
        self.mrs
            .check_local(&local, need_local, &mut self.pagemap, self.detect)?;
        let need = if write {
            Access::REMOTE_WRITE
        } else {
            Access::REMOTE_READ
        };
        let page = self.mrs.page();
        rdma::check_remote(
            peer,
            rkey,
            (raddr, local.len),
            need,
            &mut self.pagemap,
            self.detect,
            page,
        )?;
        let r = if write {
            rdma::write_to(peer.pid, local.addr as *const u8, raddr, local.len)
        } else {
            rdma::read_from(peer.pid, local.addr as *mut u8, raddr, local.len)
        };
        r.map(|()| local.len)
            .map_err(|e| rdma::transfer_fail(peer.pid, e))
    }

    /// An 8-byte atomic at `raddr` in the peer; the old value into `local`.
    fn atomic(
        &mut self,
        peer: &rdma::Peer,
        local: crate::verbs::Sge,
        raddr: u64,
        rkey: u32,
        op: AtomicOp,
    ) -> Result<usize, (WcStatus, String)> {
        if local.len != 8 {
            return Err((
                WcStatus::LocLenErr,
                format!("atomic with a {}-byte local buffer (must be 8)", local.len),
            ));
        }
        self.mrs
            .check_local(&local, Access::LOCAL_WRITE, &mut self.pagemap, self.detect)?;
        if !raddr.is_multiple_of(8) {
            return Err((
                WcStatus::RemInvReqErr,
                format!("atomic at {raddr:#x}: not 8-byte aligned"),
            ));
        }
        let page = self.mrs.page();
        rdma::check_remote(
            peer,
            rkey,
            (raddr, 8),
            Access::REMOTE_ATOMIC,
            &mut self.pagemap,
            self.detect,
            page,
        )?;
        let key = (peer.pid, peer.lock_fd);
        let lock_file = match self.peer_locks.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let f = atomic::open_lock_file(peer.pid, peer.lock_fd).map_err(|e| {
                    (
                        WcStatus::RemAccessErr,
                        format!("atomics lock file of pid {}: {e}", peer.pid),
                    )
                })?;
                v.insert(f)
            }
        };
        let old = atomic::remote(lock_file, peer.pid, raddr, op)?;
        // SAFETY: `check_local` found the 8 bytes inside a live local region with LOCAL_WRITE.
        unsafe { (local.addr as *mut u64).write_unaligned(old) };
        Ok(8)
    }

    /// Receives into posted WQEs while messages are there; notices disconnects and deaths.
    pub(super) fn progress_rq(&mut self, qpn: Qpn) {
        loop {
            let Some(q) = self.qps.get_mut(&qpn) else {
                return;
            };
            let Some(fd) = q.fd.as_ref().map(|f| f.as_raw_fd()) else {
                return;
            };
            let mut h = [0u8; HDR_LEN];
            let head = q.rq.front().copied();
            let checked = head.map(|(_, sge)| {
                self.mrs
                    .check_local(&sge, Access::LOCAL_WRITE, &mut self.pagemap, self.detect)
            });
            let got = match (head, &checked) {
                (Some((_, sge)), Some(Ok(()))) => {
                    sock::recv_parts(fd, &mut h, sge.addr as *mut u8, sge.len)
                }
                // No WQE (or a bad one): look without consuming; data stays (RNR: retried forever).
                _ => sock::peek(fd, &mut h).map(|n| (n > 0).then_some((n, false))),
            };
            let (n, trunc) = match got {
                Ok(Some(x)) => x,
                Ok(None) => return self.eof(qpn),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if is_peer_gone(&e) => return self.eof(qpn),
                Err(e) => return self.fail_qp(qpn, None, format!("recvmsg: {e}")),
            };
            let (op, imm) = qp::parse_header(&h);
            let consumed = matches!((head, &checked), (Some(_), Some(Ok(()))));
            if op == OP_DISCONNECT || n < HDR_LEN || op == OP_HELLO {
                if !consumed {
                    let mut b = [0u8; HDR_LEN];
                    let _ = sock::recv_small(fd, &mut b);
                }
                if op == OP_DISCONNECT {
                    let q = self.qps.get_mut(&qpn).unwrap();
                    q.peer_closed = true;
                    self.progress_sq(qpn);
                }
                continue;
            }
            let Some((wr_id, sge)) = head else { return };
            let q = self.qps.get_mut(&qpn).unwrap();
            q.rq.pop_front();
            if let Some(Err((st, d))) = checked {
                self.cq
                    .push_back(wc(qpn, wr_id, WcOpcode::Recv, st, 0, Some(d.clone())));
                return self.fail_qp(qpn, None, d);
            }
            if trunc {
                let d = format!(
                    "message of {} bytes is longer than the receive buffer of {} bytes",
                    n - HDR_LEN,
                    sge.len
                );
                self.cq.push_back(wc(
                    qpn,
                    wr_id,
                    WcOpcode::Recv,
                    WcStatus::LocLenErr,
                    0,
                    Some(d.clone()),
                ));
                return self.fail_qp(qpn, None, d);
            }
            let mut w = wc(
                qpn,
                wr_id,
                WcOpcode::Recv,
                WcStatus::Success,
                n - HDR_LEN,
                None,
            );
            w.imm = imm;
            self.cq.push_back(w);
        }
    }

    fn eof(&mut self, qpn: Qpn) {
        let q = self.qps.get_mut(&qpn).unwrap();
        if q.peer_closed {
            // Orderly: stop watching; posted receives stay (quiet teardown).
            if let Some(fd) = q.fd.take() {
                self.epoll.del(fd.as_raw_fd());
            }
        } else {
            self.peer_died(qpn);
        }
    }
}
