//! From `struct ibv_wc` to [`Wc`]: status and opcode mapping (pure functions of the raw
//! values, tested without hardware), and the table of outstanding work requests.
//!
//! Why the table: an error completion carries only wr_id, status, qp_num and vendor_err (its
//! opcode and byte_len are undefined), yet a [`Wc`] must say which operation failed. So each
//! post hands the hardware a token of ours as wr_id, and the completion looks the caller's
//! wr_id, opcode and length back up. Tokens carry a generation, so a completion left in the
//! CQ by a QP destroyed meanwhile is recognised as stale and dropped.

use crate::slab::GenSlab;
use crate::verbs::{Qpn, Wc, WcOpcode, WcStatus};
use rdma_sys::{ibv_wc, ibv_wc_flags, ibv_wc_opcode as op, ibv_wc_status as st};

/// `ibv_wc_status_str`: the provider's name for a status ("unknown" when out of range).
pub(super) fn status_str(raw: u32) -> String {
    // SAFETY: ibv_wc_status_str range-checks its argument and returns a static string.
    super::ffi::c_str(unsafe { rdma_sys::ibv_wc_status_str(raw) })
}

/// Maps a raw `ibv_wc_status`; errors get a detail naming the provider's status and the
/// vendor syndrome (what a support ticket needs).
pub fn map_status(raw: u32, vendor_err: u32) -> (WcStatus, Option<String>) {
    let status = match raw {
        st::IBV_WC_SUCCESS => return (WcStatus::Success, None),
        st::IBV_WC_LOC_LEN_ERR => WcStatus::LocLenErr,
        st::IBV_WC_LOC_PROT_ERR => WcStatus::LocProtErr,
        st::IBV_WC_REM_ACCESS_ERR => WcStatus::RemAccessErr,
        st::IBV_WC_REM_INV_REQ_ERR => WcStatus::RemInvReqErr,
        st::IBV_WC_REM_OP_ERR => WcStatus::RemOpErr,
        // Receiver-not-ready retries run out only when the peer never posts a receive again:
        // with rnr_retry 7 (infinite) it cannot happen, and otherwise it means a dead peer.
        st::IBV_WC_RETRY_EXC_ERR | st::IBV_WC_RNR_RETRY_EXC_ERR => WcStatus::RetryExcErr,
        st::IBV_WC_WR_FLUSH_ERR => WcStatus::WrFlushErr,
        _ => WcStatus::GeneralErr,
    };
    let detail = format!(
        "{} (ibv_wc_status {raw}, vendor_err {vendor_err:#x})",
        status_str(raw)
    );
    (status, Some(detail))
}

/// Maps a raw `ibv_wc_opcode` (meaningful on successful completions only); None for
/// operations this transport never posts (binds, tag matching...).
pub fn map_opcode(raw: u32) -> Option<WcOpcode> {
    match raw {
        op::IBV_WC_SEND => Some(WcOpcode::Send),
        op::IBV_WC_RDMA_WRITE => Some(WcOpcode::RdmaWrite),
        op::IBV_WC_RDMA_READ => Some(WcOpcode::RdmaRead),
        op::IBV_WC_FETCH_ADD => Some(WcOpcode::FetchAdd),
        op::IBV_WC_COMP_SWAP => Some(WcOpcode::CompSwap),
        op::IBV_WC_RECV | op::IBV_WC_RECV_RDMA_WITH_IMM => Some(WcOpcode::Recv),
        _ => None,
    }
}

/// One posted, not yet completed work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    pub qpn: Qpn,
    pub wr_id: u64,
    pub opcode: WcOpcode,
    /// Bytes of the local sge: what a successful send-side completion moved.
    pub len: usize,
}

/// Outstanding requests by token (`generation << 32 | slot`).
#[derive(Default)]
pub struct PendingTable {
    slab: GenSlab<Pending>,
}

impl PendingTable {
    pub fn insert(&mut self, p: Pending) -> u64 {
        let idx = self.slab.insert(p);
        self.slab.key(idx)
    }

    /// The request a completion's token names, or None when stale or unknown.
    pub fn take(&mut self, token: u64) -> Option<Pending> {
        self.slab.take(token)
    }

    /// Forgets every request of a destroyed QP (no completion will come for them); returns
    /// how many.
    pub fn drop_qp(&mut self, qpn: Qpn) -> usize {
        self.slab.remove_where(|p| p.qpn == qpn)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.slab.len()
    }
}

/// One hardware completion as a [`Wc`]; None for a stale one (its QP was destroyed).
pub fn to_wc(pending: &mut PendingTable, wc: &ibv_wc) -> Option<Wc> {
    let p = pending.take(wc.wr_id)?;
    let (status, detail) = map_status(wc.status, wc.vendor_err);
    let ok = status == WcStatus::Success;
    debug_assert!(!ok || map_opcode(wc.opcode) == Some(p.opcode));
    let byte_len = match (ok, p.opcode) {
        (false, _) => 0,
        (true, WcOpcode::Recv) => wc.byte_len as usize,
        // byte_len is undefined on send-side completions: the request says what moved.
        (true, _) => p.len,
    };
    let with_imm = wc.wc_flags & ibv_wc_flags::IBV_WC_WITH_IMM.0 != 0;
    let imm = if ok && with_imm {
        // SAFETY: both views of the union are u32; WITH_IMM says it holds imm_data.
        let raw = unsafe { wc.imm_data_invalidated_rkey_union.imm_data };
        // Immediate data travels in network byte order.
        Some(u32::from_be(raw))
    } else {
        None
    };
    Some(Wc {
        wr_id: p.wr_id,
        qpn: p.qpn,
        opcode: p.opcode,
        status,
        byte_len,
        imm,
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_mapping_table() {
        let table = [
            (st::IBV_WC_SUCCESS, WcStatus::Success),
            (st::IBV_WC_LOC_LEN_ERR, WcStatus::LocLenErr),
            (st::IBV_WC_LOC_PROT_ERR, WcStatus::LocProtErr),
            (st::IBV_WC_REM_ACCESS_ERR, WcStatus::RemAccessErr),
            (st::IBV_WC_REM_INV_REQ_ERR, WcStatus::RemInvReqErr),
            (st::IBV_WC_REM_OP_ERR, WcStatus::RemOpErr),
            (st::IBV_WC_RETRY_EXC_ERR, WcStatus::RetryExcErr),
            (st::IBV_WC_RNR_RETRY_EXC_ERR, WcStatus::RetryExcErr),
            (st::IBV_WC_WR_FLUSH_ERR, WcStatus::WrFlushErr),
            (st::IBV_WC_LOC_QP_OP_ERR, WcStatus::GeneralErr),
            (st::IBV_WC_LOC_ACCESS_ERR, WcStatus::GeneralErr),
            (st::IBV_WC_BAD_RESP_ERR, WcStatus::GeneralErr),
            (st::IBV_WC_FATAL_ERR, WcStatus::GeneralErr),
            (st::IBV_WC_RESP_TIMEOUT_ERR, WcStatus::GeneralErr),
            (st::IBV_WC_GENERAL_ERR, WcStatus::GeneralErr),
            (999, WcStatus::GeneralErr),
        ];
        for (raw, want) in table {
            let (got, detail) = map_status(raw, 0x51);
            assert_eq!(got, want, "raw status {raw}");
            if want == WcStatus::Success {
                assert_eq!(detail, None);
            } else {
                let d = detail.expect("errors carry a detail");
                assert!(d.contains("vendor_err 0x51"), "{d}");
                assert!(d.contains(&format!("ibv_wc_status {raw}")), "{d}");
            }
        }
        // The provider's own wording comes from libibverbs' table.
        let (_, d) = map_status(st::IBV_WC_LOC_QP_OP_ERR, 0);
        assert!(d.unwrap().starts_with("local QP operation error"));
        assert_eq!(status_str(999), "unknown");
    }

    #[test]
    fn opcode_mapping_table() {
        assert_eq!(map_opcode(op::IBV_WC_SEND), Some(WcOpcode::Send));
        assert_eq!(map_opcode(op::IBV_WC_RDMA_WRITE), Some(WcOpcode::RdmaWrite));
        assert_eq!(map_opcode(op::IBV_WC_RDMA_READ), Some(WcOpcode::RdmaRead));
        assert_eq!(map_opcode(op::IBV_WC_FETCH_ADD), Some(WcOpcode::FetchAdd));
        assert_eq!(map_opcode(op::IBV_WC_COMP_SWAP), Some(WcOpcode::CompSwap));
        assert_eq!(map_opcode(op::IBV_WC_RECV), Some(WcOpcode::Recv));
        assert_eq!(
            map_opcode(op::IBV_WC_RECV_RDMA_WITH_IMM),
            Some(WcOpcode::Recv)
        );
        assert_eq!(map_opcode(op::IBV_WC_BIND_MW), None);
        assert_eq!(map_opcode(op::IBV_WC_TM_RECV), None);
    }

    fn p(qpn: Qpn, wr_id: u64) -> Pending {
        Pending {
            qpn,
            wr_id,
            opcode: WcOpcode::Send,
            len: 8,
        }
    }

    #[test]
    fn pending_tokens_are_single_use() {
        let mut t = PendingTable::default();
        let a = t.insert(p(1, 10));
        let b = t.insert(p(1, 11));
        assert_ne!(a, b);
        assert_eq!(t.take(b), Some(p(1, 11)));
        assert_eq!(t.take(b), None);
        // The freed slot is reused under a new generation: the old token stays dead.
        let c = t.insert(p(2, 12));
        assert_eq!(c & 0xffff_ffff, b & 0xffff_ffff);
        assert_ne!(c, b);
        assert_eq!(t.take(b), None);
        assert_eq!(t.take(c), Some(p(2, 12)));
        assert_eq!(t.take(a), Some(p(1, 10)));
        assert_eq!(t.len(), 0);
        assert_eq!(t.take(u64::MAX), None);
    }

    #[test]
    fn pending_drop_qp_makes_its_tokens_stale() {
        let mut t = PendingTable::default();
        let a = t.insert(p(1, 1));
        let b = t.insert(p(2, 2));
        let c = t.insert(p(1, 3));
        assert_eq!(t.drop_qp(1), 2);
        assert_eq!(t.len(), 1);
        assert_eq!(t.take(a), None);
        assert_eq!(t.take(c), None);
        assert_eq!(t.take(b), Some(p(2, 2)));
    }

    fn hw(token: u64, status: u32, opcode: u32, byte_len: u32) -> ibv_wc {
        let mut wc = <ibv_wc as super::super::ffi::Zeroable>::zeroed();
        wc.wr_id = token;
        wc.status = status;
        wc.opcode = opcode;
        wc.byte_len = byte_len;
        wc.qp_num = 77;
        wc
    }

    #[test]
    fn recv_completion_with_immediate() {
        let mut t = PendingTable::default();
        let tok = t.insert(Pending {
            qpn: 77,
            wr_id: 5,
            opcode: WcOpcode::Recv,
            len: 4096,
        });
        let mut wc = hw(tok, st::IBV_WC_SUCCESS, op::IBV_WC_RECV, 100);
        wc.wc_flags = ibv_wc_flags::IBV_WC_WITH_IMM.0;
        wc.imm_data_invalidated_rkey_union.imm_data = u32::from_ne_bytes([0xa, 0xb, 0xc, 0xd]);
        let w = to_wc(&mut t, &wc).unwrap();
        assert_eq!((w.wr_id, w.qpn, w.opcode), (5, 77, WcOpcode::Recv));
        assert_eq!((w.status, w.byte_len), (WcStatus::Success, 100));
        assert_eq!(w.imm, Some(0x0a0b_0c0d));
        assert_eq!(w.detail, None);
        // Delivered once.
        assert_eq!(to_wc(&mut t, &wc), None);
    }

    #[test]
    fn error_completion_keeps_the_posted_opcode() {
        let mut t = PendingTable::default();
        let tok = t.insert(Pending {
            qpn: 77,
            wr_id: 9,
            opcode: WcOpcode::RdmaRead,
            len: 1 << 20,
        });
        // An error CQE's opcode is undefined: garbage here must not matter.
        let mut wc = hw(tok, st::IBV_WC_REM_ACCESS_ERR, 0xdead, 12345);
        wc.vendor_err = 0x88;
        let w = to_wc(&mut t, &wc).unwrap();
        assert_eq!((w.wr_id, w.opcode), (9, WcOpcode::RdmaRead));
        assert_eq!(
            (w.status, w.byte_len, w.imm),
            (WcStatus::RemAccessErr, 0, None)
        );
        assert!(w.detail.unwrap().contains("vendor_err 0x88"));

        // A successful RDMA write reports the posted length.
        let tok = t.insert(Pending {
            qpn: 77,
            wr_id: 10,
            opcode: WcOpcode::RdmaWrite,
            len: 300,
        });
        let w = to_wc(
            &mut t,
            &hw(tok, st::IBV_WC_SUCCESS, op::IBV_WC_RDMA_WRITE, 0),
        )
        .unwrap();
        assert_eq!((w.opcode, w.byte_len), (WcOpcode::RdmaWrite, 300));
    }
}
