//! RC QP creation and the RESET→INIT→RTR→RTS transitions. The attribute builders are pure
//! (tested without hardware); `modify` is the one call into libibverbs.

use super::addr::PortAddr;
use super::ffi::{rc_errno, strerror, Zeroable};
use crate::verbs::{Qpn, VerbsError};
use rdma_sys::*;
use std::os::raw::c_int;

/// Transport constants: ACK timeout 4.096 µs · 2^14 ≈ 67 ms, 7 transport retries (the most),
/// RNR retries 7 = infinite (a receiver short of buffers slows us down, never fails us),
/// RNR NAK timer 12 = 0.64 ms.
pub const TIMEOUT: u8 = 14;
pub const RETRY_CNT: u8 = 7;
pub const RNR_RETRY: u8 = 7;
pub const MIN_RNR_TIMER: u8 = 12;
/// RoCEv2 packets may cross routers; v1 and IB ignore it.
pub const HOP_LIMIT: u8 = 64;
/// Reads in flight per QP, at most (each side further bounded by its device).
pub const RD_ATOM_CAP: u8 = 16;

/// The first PSN each side sends with: derived from the sender's QP number, so the receiver
/// knows it (its rq_psn) from the number exchanged anyway.
pub fn psn(qpn: Qpn) -> u32 {
    qpn & 0x00ff_ffff
}

fn mask(bits: &[ibv_qp_attr_mask]) -> c_int {
    bits.iter().fold(0u32, |m, b| m | b.0) as c_int
}

fn access_rw() -> u32 {
    (ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0)
        | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0
        | ibv_access_flags::IBV_ACCESS_REMOTE_READ.0
        | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC.0
}

/// RESET→INIT: port, P_Key index 0, remote reads and writes allowed (the MRs still decide).
pub fn init_attr(port: u8) -> (ibv_qp_attr, c_int) {
    let mut a = ibv_qp_attr::zeroed();
    a.qp_state = ibv_qp_state::IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = port;
    a.qp_access_flags = access_rw();
    use ibv_qp_attr_mask as m;
    let mk = mask(&[
        m::IBV_QP_STATE,
        m::IBV_QP_PKEY_INDEX,
        m::IBV_QP_PORT,
        m::IBV_QP_ACCESS_FLAGS,
    ]);
    (a, mk)
}

/// INIT→RTR: path to the remote QP.
pub fn rtr_attr(
    local: &PortAddr,
    remote: &PortAddr,
    remote_qpn: Qpn,
) -> Result<(ibv_qp_attr, c_int), VerbsError> {
    if local.is_ethernet() != remote.is_ethernet() {
        let ll = |a: &PortAddr| {
            if a.is_ethernet() {
                "RoCE"
            } else {
                "InfiniBand"
            }
        };
        return Err(VerbsError(format!(
            "cannot connect a local {} port to a remote {} port",
            ll(local),
            ll(remote)
        )));
    }
    let mut a = ibv_qp_attr::zeroed();
    a.qp_state = ibv_qp_state::IBV_QPS_RTR;
    // ibv_mtu codes grow with the size: the smaller code is the smaller MTU.
    a.path_mtu = u32::from(local.mtu.min(remote.mtu));
    a.dest_qp_num = remote_qpn;
    a.rq_psn = psn(remote_qpn);
    a.max_dest_rd_atomic = local.rd_atom;
    a.min_rnr_timer = MIN_RNR_TIMER;
    a.ah_attr.port_num = local.port;
    a.ah_attr.sl = 0;
    a.ah_attr.src_path_bits = 0;
    a.ah_attr.dlid = remote.lid;
    // RoCE has no LIDs: the GRH (GID) is the address. On IB a GRH is needed only to leave
    // the subnet (different subnet prefix, the first 8 bytes of the GIDs).
    let other_subnet = local.gid[..8] != remote.gid[..8] && remote.gid[..8] != [0; 8];
    if local.is_ethernet() || other_subnet {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid.raw = remote.gid;
        a.ah_attr.grh.sgid_index = 0;
        a.ah_attr.grh.hop_limit = HOP_LIMIT;
        a.ah_attr.grh.traffic_class = 0;
        a.ah_attr.grh.flow_label = 0;
    }
    use ibv_qp_attr_mask as m;
    let mk = mask(&[
        m::IBV_QP_STATE,
        m::IBV_QP_AV,
        m::IBV_QP_PATH_MTU,
        m::IBV_QP_DEST_QPN,
        m::IBV_QP_RQ_PSN,
        m::IBV_QP_MAX_DEST_RD_ATOMIC,
        m::IBV_QP_MIN_RNR_TIMER,
    ]);
    Ok((a, mk))
}

/// RTR→RTS: retry policy, our first PSN, and reads in flight bounded by what the remote
/// accepts (its `rd_atom`) and what our device can initiate.
pub fn rts_attr(local_qpn: Qpn, init_rd_atom: u8, remote: &PortAddr) -> (ibv_qp_attr, c_int) {
    let mut a = ibv_qp_attr::zeroed();
    a.qp_state = ibv_qp_state::IBV_QPS_RTS;
    a.timeout = TIMEOUT;
    a.retry_cnt = RETRY_CNT;
    a.rnr_retry = RNR_RETRY;
    a.sq_psn = psn(local_qpn);
    a.max_rd_atomic = init_rd_atom.min(remote.rd_atom);
    use ibv_qp_attr_mask as m;
    let mk = mask(&[
        m::IBV_QP_STATE,
        m::IBV_QP_TIMEOUT,
        m::IBV_QP_RETRY_CNT,
        m::IBV_QP_RNR_RETRY,
        m::IBV_QP_SQ_PSN,
        m::IBV_QP_MAX_QP_RD_ATOMIC,
    ]);
    (a, mk)
}

/// `ibv_modify_qp`; `what` names the transition for the message.
pub fn modify(
    qp: *mut ibv_qp,
    qpn: Qpn,
    mut attr: ibv_qp_attr,
    mask: c_int,
    what: &str,
) -> Result<(), VerbsError> {
    // SAFETY: `qp` is a live QP of ours; `attr` is a fully initialised attribute block and
    // `mask` names only fields set in it.
    let rc = unsafe { ibv_modify_qp(qp, &mut attr, mask) };
    if rc != 0 {
        return Err(VerbsError(format!(
            "ibv_modify_qp(QP {qpn:#x}, {what}) failed: {}",
            strerror(rc_errno(rc))
        )));
    }
    Ok(())
}

/// An RC QP whose send and receive completions go to `cq`; one sge per request, no inline
/// data (every payload is in a registered buffer).
pub fn create(
    pd: *mut ibv_pd,
    cq: *mut ibv_cq,
    max_send_wr: u32,
    max_recv_wr: u32,
) -> Result<*mut ibv_qp, VerbsError> {
    let mut ia = ibv_qp_init_attr::zeroed();
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.qp_type = ibv_qp_type::IBV_QPT_RC;
    ia.sq_sig_all = 0; // every request asks for its completion itself (IBV_SEND_SIGNALED)
    ia.cap.max_send_wr = max_send_wr;
    ia.cap.max_recv_wr = max_recv_wr;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    ia.cap.max_inline_data = 0;
    // SAFETY: `pd` and `cq` are live objects of the same context; `ia` is initialised.
    let qp = unsafe { ibv_create_qp(pd, &mut ia) };
    if qp.is_null() {
        let e = super::ffi::errno();
        return Err(VerbsError(format!(
            "ibv_create_qp(RC, {max_send_wr} send / {max_recv_wr} recv requests) failed: {}",
            strerror(e)
        )));
    }
    Ok(qp)
}

#[cfg(test)]
mod tests {
    use super::super::addr::{LINK_LAYER_ETHERNET, LINK_LAYER_INFINIBAND};
    use super::*;

    fn addr(link_layer: u8, lid: u16, mtu: u8, prefix: u8) -> PortAddr {
        let mut gid = [7u8; 16];
        gid[..8].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, prefix]);
        PortAddr {
            port: 1,
            mtu,
            link_layer,
            rd_atom: 4,
            lid,
            gid,
        }
    }

    fn has(mask: c_int, bit: ibv_qp_attr_mask) -> bool {
        mask as u32 & bit.0 != 0
    }

    #[test]
    fn init_transition_attributes() {
        let (a, mk) = init_attr(2);
        assert_eq!(a.qp_state, ibv_qp_state::IBV_QPS_INIT);
        assert_eq!(a.port_num, 2);
        assert_eq!(a.qp_access_flags, 1 | 2 | 4 | 8);
        assert!(has(mk, ibv_qp_attr_mask::IBV_QP_ACCESS_FLAGS));
        assert!(has(mk, ibv_qp_attr_mask::IBV_QP_PORT));
        assert!(!has(mk, ibv_qp_attr_mask::IBV_QP_AV));
    }

    #[test]
    fn rtr_on_infiniband_uses_the_lid() {
        let local = addr(LINK_LAYER_INFINIBAND, 3, 5, 0);
        let remote = addr(LINK_LAYER_INFINIBAND, 9, 4, 0);
        let (a, mk) = rtr_attr(&local, &remote, 0x1_2345).unwrap();
        assert_eq!(a.qp_state, ibv_qp_state::IBV_QPS_RTR);
        assert_eq!(a.path_mtu, ibv_mtu::IBV_MTU_2048);
        assert_eq!(a.dest_qp_num, 0x1_2345);
        assert_eq!(a.rq_psn, 0x1_2345);
        assert_eq!(a.ah_attr.dlid, 9);
        assert_eq!(a.ah_attr.is_global, 0);
        assert_eq!(a.ah_attr.port_num, 1);
        assert_eq!(a.max_dest_rd_atomic, 4);
        for b in [
            ibv_qp_attr_mask::IBV_QP_AV,
            ibv_qp_attr_mask::IBV_QP_PATH_MTU,
            ibv_qp_attr_mask::IBV_QP_DEST_QPN,
            ibv_qp_attr_mask::IBV_QP_RQ_PSN,
            ibv_qp_attr_mask::IBV_QP_MAX_DEST_RD_ATOMIC,
            ibv_qp_attr_mask::IBV_QP_MIN_RNR_TIMER,
        ] {
            assert!(has(mk, b));
        }
        // Another subnet: a GRH is added.
        let far = addr(LINK_LAYER_INFINIBAND, 9, 5, 1);
        let (a, _) = rtr_attr(&local, &far, 1).unwrap();
        assert_eq!(a.ah_attr.is_global, 1);
    }

    #[test]
    fn rtr_on_roce_uses_the_gid() {
        let local = addr(LINK_LAYER_ETHERNET, 0, 3, 0);
        let mut remote = addr(LINK_LAYER_ETHERNET, 0, 5, 0);
        remote.gid[15] = 42;
        let (a, _) = rtr_attr(&local, &remote, 5).unwrap();
        assert_eq!(a.path_mtu, ibv_mtu::IBV_MTU_1024);
        assert_eq!(a.ah_attr.is_global, 1);
        // SAFETY: reading the byte view of a plain-bytes union.
        assert_eq!(unsafe { a.ah_attr.grh.dgid.raw }, remote.gid);
        assert_eq!(a.ah_attr.grh.sgid_index, 0);
        assert_eq!(a.ah_attr.grh.hop_limit, HOP_LIMIT);

        let ib = addr(LINK_LAYER_INFINIBAND, 1, 5, 0);
        let Err(e) = rtr_attr(&local, &ib, 5) else {
            panic!("RoCE to IB accepted")
        };
        assert!(
            e.0.contains("local RoCE port to a remote InfiniBand port"),
            "{}",
            e.0
        );
    }

    #[test]
    fn rts_transition_attributes() {
        let remote = addr(LINK_LAYER_INFINIBAND, 9, 5, 0);
        let (a, mk) = rts_attr(0xABCD_EF12, 16, &remote);
        assert_eq!(a.qp_state, ibv_qp_state::IBV_QPS_RTS);
        assert_eq!(a.sq_psn, 0xCD_EF12);
        assert_eq!((a.timeout, a.retry_cnt, a.rnr_retry), (14, 7, 7));
        assert_eq!(a.max_rd_atomic, 4);
        assert!(has(mk, ibv_qp_attr_mask::IBV_QP_SQ_PSN));
        assert!(has(mk, ibv_qp_attr_mask::IBV_QP_MAX_QP_RD_ATOMIC));
    }
}
