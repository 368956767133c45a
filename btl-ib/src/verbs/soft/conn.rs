//! Connection setup: exactly one side of a QP pair (the smaller (pid, qpn)) dials the peer's
//! listener and says hello; the acceptor matches the hello to its QP, keeping it until the
//! local connect() when that comes later.

use super::qp::{self, HDR_LEN};
use super::{sock, Pending, SoftDevice};
use crate::verbs::{Qpn, WcStatus};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

impl SoftDevice {
    /// Accepts, reads hellos, matches them to connected-but-unwired QPs, and dials.
    pub(super) fn progress_connections(&mut self) {
        while let Ok(Some(fd)) = sock::accept(self.listener.as_raw_fd()) {
            self.pending.push(Pending { fd, hello: None });
        }
        let mut i = 0;
        while i < self.pending.len() {
            let p = &mut self.pending[i];
            if p.hello.is_none() {
                let mut m = [0u8; HDR_LEN + 12];
                match sock::recv_small(p.fd.as_raw_fd(), &mut m) {
                    Ok(n) => match qp::parse_hello(&m[..n]) {
                        Some(h) => p.hello = Some(h),
                        None => {
                            // Not a peer of ours (or it died before saying hello).
                            self.pending.swap_remove(i);
                            continue;
                        }
                    },
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(_) => {
                        self.pending.swap_remove(i);
                        continue;
                    }
                }
            }
            if let Some((pid, from, to)) = self.pending[i].hello {
                let matched = self.qps.get(&to).is_some_and(|q| {
                    q.fd.is_none()
                        && !q.error
                        && q.remote
                            .as_ref()
                            .is_some_and(|(p, rq)| p.pid == pid && *rq == from)
                });
                if matched {
                    let p = self.pending.swap_remove(i);
                    self.wire(to, p.fd);
                    continue;
                }
                if !self.qps.contains_key(&to) {
                    // Destroyed (QPs exist before their numbers are exchanged): nobody claims it.
                    self.pending.swap_remove(i);
                    continue;
                }
            }
            i += 1;
        }
        let dialers: Vec<Qpn> = self
            .qps
            .values()
            .filter(|q| {
                q.dial && q.fd.is_none() && !q.error && !q.peer_closed && q.remote.is_some()
            })
            .map(|q| q.qpn)
            .collect();
        for qpn in dialers {
            let q = &self.qps[&qpn];
            let (peer, rqpn) = q.remote.clone().unwrap();
            match sock::connect_abstract(&peer.name) {
                Ok(fd) => {
                    let h = qp::hello(self.pid, qpn, rqpn);
                    match sock::send_parts(fd.as_raw_fd(), &h, std::ptr::null(), 0) {
                        Ok(()) => self.wire(qpn, fd),
                        Err(e) => self.fail_connect(qpn, peer.pid, e),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => self.fail_connect(qpn, peer.pid, e),
            }
        }
    }

    pub(super) fn fail_connect(&mut self, qpn: Qpn, pid: u32, e: io::Error) {
        let d = format!("cannot reach peer pid {pid}: {e} (did it die?)");
        self.fail_qp(qpn, Some(WcStatus::RetryExcErr), d);
    }

    pub(super) fn wire(&mut self, qpn: Qpn, fd: OwnedFd) {
        if self.epoll.add(fd.as_raw_fd(), qpn as u64).is_err() {
            self.fail_qp(qpn, Some(WcStatus::GeneralErr), "epoll_ctl failed".into());
            return;
        }
        if let Some(q) = self.qps.get_mut(&qpn) {
            q.fd = Some(fd);
        }
        self.progress_sq(qpn);
    }
}
