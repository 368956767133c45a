//! 8-byte atomics on a peer's registered memory (one-sided Fetch_and_op / Compare_and_swap):
//! one verbs FETCH_AND_ADD or CMP_AND_SWP, waited for. A window's own rank uses
//! `atomic_local`, which the device makes atomic with respect to its peers' atomics.

use super::pool::WrId;
use super::{FailClass, GetFailure, IbError, IbTransport};
use crate::verbs::{Access, AtomicOp, SendWr, Sge, WcOpcode};

impl IbTransport {
    /// Whether the device offers atomics coherent with `atomic_local`.
    pub fn atomics(&self) -> bool {
        self.dev.atomics()
    }

    /// `op` on the 8-byte aligned word at `remote` (region `key`) in `peer`; the old value.
    pub fn atomic(
        &mut self,
        peer: usize,
        remote: u64,
        key: u64,
        op: AtomicOp,
    ) -> Result<u64, GetFailure> {
        let addr = &mut *self.atomic_buf as *mut u64 as usize;
        let h = match self.rcache.acquire(self.dev.as_mut(), addr, 8, Access::ALL) {
            Ok(h) => h,
            Err(e) => return Err(GetFailure::Unsupported(e.message)),
        };
        let lkey = self.rcache.mr(h).lkey;
        let local = Sge { addr, len: 8, lkey };
        self.rdma_seq += 1;
        let wr_id = WrId::Rdma(self.rdma_seq).encode();
        let (wr, want, name) = match op {
            AtomicOp::FetchAdd(add) => (
                SendWr::AtomicFetchAdd {
                    wr_id,
                    local,
                    remote_addr: remote,
                    rkey: key as u32,
                    add,
                },
                WcOpcode::FetchAdd,
                "fetch-and-add",
            ),
            AtomicOp::CmpSwap { compare, swap } => (
                SendWr::AtomicCmpSwap {
                    wr_id,
                    local,
                    remote_addr: remote,
                    rkey: key as u32,
                    compare,
                    swap,
                },
                WcOpcode::CompSwap,
                "compare-and-swap",
            ),
        };
        let what = format!("atomic {name} at {remote:#x} in rank {}", self.names[peer]);
        let qpn = self.peers[peer].qpn;
        let r = self
            .dev
            .post_send(qpn, wr)
            .map_err(|e| IbError::new(FailClass::PeerLost, format!("btl ib: {what}: {e}")))
            .and_then(|()| self.wait_one(wr_id, want, &what));
        self.rcache.release(self.dev.as_mut(), h);
        r.map_err(GetFailure::Failed)?;
        self.counters.atomics += 1;
        Ok(*self.atomic_buf)
    }

    /// `op` on this process's own 8-byte aligned word at `addr` (a window's own rank).
    pub fn atomic_local(&mut self, addr: usize, op: AtomicOp) -> Result<u64, GetFailure> {
        self.dev
            .atomic_local(addr, op)
            .map_err(|e| GetFailure::Failed(IbError::new(FailClass::Internal, e.0)))
    }
}
