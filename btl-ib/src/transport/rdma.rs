//! Rendezvous over RDMA: the sender exposes its buffer (a registration through the cache, whose
//! rkey rides in the RTS); the receiver registers its own and pulls the data with RDMA READ.
//! A buffer that cannot be registered (pinned-memory limit) is streamed through the bounce
//! buffers instead, with one warning per process.

use super::pool::WrId;
use super::{FailClass, GetFailure, IbError, IbTransport, POLL_BATCH};
use crate::verbs::{Access, SendWr, Sge, WcOpcode, WcStatus};

impl IbTransport {
    /// Registers `[addr, addr + len)` for the peer's RDMA READ; the key for the RTS, or None
    /// when it cannot be registered (the receiver is then asked to stream).
    pub fn expose(&mut self, peer: usize, addr: usize, len: usize) -> Option<u64> {
        if len == 0 {
            return Some(0);
        }
        match self
            .rcache
            .acquire(self.dev.as_mut(), addr, len, Access::ALL)
        {
            Ok(h) => {
                let rkey = self.rcache.mr(h).rkey;
                self.exposed.entry((peer, addr, len)).or_default().push(h);
                Some(if self.params.debug_bad_rkey {
                    (rkey ^ 0x00ff_ff00) as u64
                } else {
                    rkey as u64
                })
            }
            Err(e) => {
                self.unpinnable(len, &e.message);
                None
            }
        }
    }

    /// The rendezvous that exposed `[addr, addr + len)` to `peer` is over.
    pub fn unexpose(&mut self, peer: usize, addr: usize, len: usize) {
        if let Some(v) = self.exposed.get_mut(&(peer, addr, len)) {
            if let Some(h) = v.pop() {
                self.rcache.release(self.dev.as_mut(), h);
            }
            if v.is_empty() {
                self.exposed.remove(&(peer, addr, len));
            }
        }
    }

    fn unpinnable(&mut self, len: usize, why: &str) {
        self.counters.unpinnable += 1;
        if !std::mem::replace(&mut self.pin_warned, true) {
            eprintln!(
                "rmpi: btl ib: cannot register a {len}-byte message buffer for RDMA ({why}); \
                 such messages go through the bounce buffers instead (slower)"
            );
        }
    }

    /// RDMA READ of `local.len()` bytes at `remote` (region `key`) in `peer`, waiting for it.
    pub fn get(
        &mut self,
        peer: usize,
        remote: u64,
        key: u64,
        local: &mut [u8],
    ) -> Result<(), GetFailure> {
        let len = local.len();
        if len == 0 {
            return Ok(());
        }
        let addr = local.as_mut_ptr() as usize;
        let h = match self
            .rcache
            .acquire(self.dev.as_mut(), addr, len, Access::ALL)
        {
            Ok(h) => h,
            Err(e) => {
                self.unpinnable(len, &e.message);
                return Err(GetFailure::Unsupported(e.message));
            }
        };
        let lkey = self.rcache.mr(h).lkey;
        let r = self.rdma(peer, remote, key as u32, Sge { addr, len, lkey }, false);
        self.rcache.release(self.dev.as_mut(), h);
        r.map_err(GetFailure::Failed)
    }

    /// RDMA WRITE of `local` to `remote` (region `key`) in `peer`, waiting for its completion
    /// (one-sided puts: the peer registered its window memory and sent the key).
    pub fn write(
        &mut self,
        peer: usize,
        remote: u64,
        key: u64,
        local: &[u8],
    ) -> Result<(), GetFailure> {
        let len = local.len();
        if len == 0 {
            return Ok(());
        }
        let addr = local.as_ptr() as usize;
        let h = match self
            .rcache
            .acquire(self.dev.as_mut(), addr, len, Access::ALL)
        {
            Ok(h) => h,
            Err(e) => {
                self.unpinnable(len, &e.message);
                return Err(GetFailure::Unsupported(e.message));
            }
        };
        let lkey = self.rcache.mr(h).lkey;
        let r = self.rdma(peer, remote, key as u32, Sge { addr, len, lkey }, true);
        self.rcache.release(self.dev.as_mut(), h);
        r.map_err(GetFailure::Failed)
    }

    fn rdma(
        &mut self,
        peer: usize,
        remote: u64,
        rkey: u32,
        local: Sge,
        write: bool,
    ) -> Result<(), IbError> {
        self.rdma_seq += 1;
        let wr_id = WrId::Rdma(self.rdma_seq).encode();
        let qpn = self.peers[peer].qpn;
        let what = if write {
            format!(
                "RDMA WRITE of {} bytes to rank {}",
                local.len, self.names[peer]
            )
        } else {
            format!(
                "RDMA READ of {} bytes from rank {}",
                local.len, self.names[peer]
            )
        };
        let len = local.len;
        let wr = if write {
            SendWr::RdmaWrite {
                wr_id,
                local,
                remote_addr: remote,
                rkey,
            }
        } else {
            SendWr::RdmaRead {
                wr_id,
                local,
                remote_addr: remote,
                rkey,
            }
        };
        let want = if write {
            WcOpcode::RdmaWrite
        } else {
            WcOpcode::RdmaRead
        };
        self.dev
            .post_send(qpn, wr)
            .map_err(|e| IbError::new(FailClass::PeerLost, format!("btl ib: {what}: {e}")))?;
        self.wait_one(wr_id, want, &what)?;
        if write {
            self.counters.rdma_writes += 1;
        } else {
            self.counters.rdma_reads += 1;
        }
        self.counters.rdma_bytes += len as u64;
        Ok(())
    }

    /// Waits for the completion of the one-sided request `wr_id` (others are stashed for the
    /// next poll).
    pub(super) fn wait_one(
        &mut self,
        wr_id: u64,
        want: WcOpcode,
        what: &str,
    ) -> Result<(), IbError> {
        let mut wcs = Vec::new();
        loop {
            wcs.clear();
            if self.dev.poll_cq(&mut wcs, POLL_BATCH) == 0 {
                std::hint::spin_loop();
                continue;
            }
            let mut done = None;
            for wc in wcs.drain(..) {
                if wc.wr_id == wr_id && done.is_none() {
                    done = Some(wc);
                } else {
                    self.stash.push_back(wc);
                }
            }
            if let Some(wc) = done {
                if wc.status != WcStatus::Success || wc.opcode != want {
                    return Err(IbError::from_wc(&wc, what));
                }
                return Ok(());
            }
        }
    }
}
