//! Work-request construction: pure functions from the trait's requests to libibverbs' structs
//! (tested without hardware). The caller points `sg_list` at the sge and posts.

use super::ffi::Zeroable;
use crate::verbs::{SendWr, Sge, WcOpcode};
use rdma_sys::*;

/// The sge of `s`, or why it cannot be one (lengths are 32-bit in verbs).
pub fn sge(s: Sge) -> Result<ibv_sge, String> {
    let length = u32::try_from(s.len).map_err(|_| format!("sge of {} bytes (max 4 GiB)", s.len))?;
    Ok(ibv_sge {
        addr: s.addr as u64,
        length,
        lkey: s.lkey,
    })
}

/// The atomics return the old 8-byte value into exactly 8 local bytes.
fn atomic_sge(s: Sge) -> Result<(), String> {
    if s.len != 8 {
        return Err(format!(
            "atomic with a {}-byte local buffer (must be 8)",
            s.len
        ));
    }
    Ok(())
}

/// A signaled send-queue request for `wr` with `wr_id` (our token), its local sge and the
/// completion opcode it will produce; `sg_list` is left NULL for the caller.
pub fn send_wr(
    wr: &SendWr,
    wr_id: u64,
    max_msg: usize,
) -> Result<(ibv_send_wr, ibv_sge, WcOpcode), String> {
    let mut w = ibv_send_wr::zeroed();
    let (local, opcode) = match *wr {
        SendWr::Send { sge, imm, .. } => {
            if sge.len > max_msg {
                return Err(format!(
                    "send of {} bytes exceeds the port's {max_msg} byte maximum",
                    sge.len
                ));
            }
            w.opcode = match imm {
                Some(v) => {
                    // Immediate data travels in network byte order.
                    w.imm_data_invalidated_rkey_union.imm_data = v.to_be();
                    ibv_wr_opcode::IBV_WR_SEND_WITH_IMM
                }
                None => ibv_wr_opcode::IBV_WR_SEND,
            };
            (sge, WcOpcode::Send)
        }
        SendWr::RdmaRead {
            local,
            remote_addr,
            rkey,
            ..
        } => {
            w.opcode = ibv_wr_opcode::IBV_WR_RDMA_READ;
            w.wr.rdma = rdma_t { remote_addr, rkey };
            (local, WcOpcode::RdmaRead)
        }
        SendWr::RdmaWrite {
            local,
            remote_addr,
            rkey,
            ..
        } => {
            w.opcode = ibv_wr_opcode::IBV_WR_RDMA_WRITE;
            w.wr.rdma = rdma_t { remote_addr, rkey };
            (local, WcOpcode::RdmaWrite)
        }
        SendWr::AtomicFetchAdd {
            local,
            remote_addr,
            rkey,
            add,
            ..
        } => {
            atomic_sge(local)?;
            w.opcode = ibv_wr_opcode::IBV_WR_ATOMIC_FETCH_AND_ADD;
            w.wr.atomic = atomic_t {
                remote_addr,
                compare_add: add,
                swap: 0,
                rkey,
            };
            (local, WcOpcode::FetchAdd)
        }
        SendWr::AtomicCmpSwap {
            local,
            remote_addr,
            rkey,
            compare,
            swap,
            ..
        } => {
            atomic_sge(local)?;
            w.opcode = ibv_wr_opcode::IBV_WR_ATOMIC_CMP_AND_SWP;
            w.wr.atomic = atomic_t {
                remote_addr,
                compare_add: compare,
                swap,
                rkey,
            };
            (local, WcOpcode::CompSwap)
        }
    };
    let sg = sge(local)?;
    w.wr_id = wr_id;
    w.next = std::ptr::null_mut();
    w.sg_list = std::ptr::null_mut();
    w.num_sge = 1;
    w.send_flags = ibv_send_flags::IBV_SEND_SIGNALED.0;
    Ok((w, sg, opcode))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Sge = Sge {
        addr: 0x1000,
        len: 64,
        lkey: 7,
    };

    #[test]
    fn send_with_immediate_in_network_order() {
        let wr = SendWr::Send {
            wr_id: 1,
            sge: S,
            imm: Some(0x0102_0304),
        };
        let (w, sg, op) = send_wr(&wr, 99, 1 << 20).unwrap();
        assert_eq!(op, WcOpcode::Send);
        assert_eq!(w.opcode, ibv_wr_opcode::IBV_WR_SEND_WITH_IMM);
        // SAFETY: both views of the union are u32.
        let imm = unsafe { w.imm_data_invalidated_rkey_union.imm_data };
        assert_eq!(imm.to_ne_bytes(), [1, 2, 3, 4]);
        assert_eq!((w.wr_id, w.num_sge), (99, 1));
        assert_eq!(w.send_flags, ibv_send_flags::IBV_SEND_SIGNALED.0);
        assert_eq!((sg.addr, sg.length, sg.lkey), (0x1000, 64, 7));

        let plain = SendWr::Send {
            wr_id: 1,
            sge: S,
            imm: None,
        };
        assert_eq!(
            send_wr(&plain, 1, 64).unwrap().0.opcode,
            ibv_wr_opcode::IBV_WR_SEND
        );
        let e = send_wr(&plain, 1, 63).err().unwrap();
        assert!(e.contains("exceeds"), "{e}");
    }

    #[test]
    fn rdma_requests_carry_the_remote_side() {
        for (wr, code, op) in [
            (
                SendWr::RdmaRead {
                    wr_id: 5,
                    local: S,
                    remote_addr: 0xdead_0000,
                    rkey: 0x42,
                },
                ibv_wr_opcode::IBV_WR_RDMA_READ,
                WcOpcode::RdmaRead,
            ),
            (
                SendWr::RdmaWrite {
                    wr_id: 5,
                    local: S,
                    remote_addr: 0xdead_0000,
                    rkey: 0x42,
                },
                ibv_wr_opcode::IBV_WR_RDMA_WRITE,
                WcOpcode::RdmaWrite,
            ),
        ] {
            // RDMA is not bounded by the Send maximum.
            let (w, _, got) = send_wr(&wr, 3, 1).unwrap();
            assert_eq!((w.opcode, got), (code, op));
            // SAFETY: the rdma view is the one written for these opcodes.
            let r = unsafe { w.wr.rdma };
            assert_eq!((r.remote_addr, r.rkey), (0xdead_0000, 0x42));
        }
    }

    #[test]
    fn atomic_requests_carry_operands() {
        let l8 = Sge { len: 8, ..S };
        let fa = SendWr::AtomicFetchAdd {
            wr_id: 1,
            local: l8,
            remote_addr: 0x1008,
            rkey: 9,
            add: 5,
        };
        let (w, _, op) = send_wr(&fa, 2, 1).unwrap();
        assert_eq!(op, WcOpcode::FetchAdd);
        assert_eq!(w.opcode, ibv_wr_opcode::IBV_WR_ATOMIC_FETCH_AND_ADD);
        // SAFETY: the atomic view is the one written for this opcode.
        let a = unsafe { w.wr.atomic };
        assert_eq!((a.remote_addr, a.compare_add, a.rkey), (0x1008, 5, 9));
        let cs = SendWr::AtomicCmpSwap {
            wr_id: 1,
            local: l8,
            remote_addr: 0x1010,
            rkey: 9,
            compare: 3,
            swap: 4,
        };
        let (w, _, op) = send_wr(&cs, 2, 1).unwrap();
        assert_eq!(op, WcOpcode::CompSwap);
        assert_eq!(w.opcode, ibv_wr_opcode::IBV_WR_ATOMIC_CMP_AND_SWP);
        // SAFETY: as above.
        let a = unsafe { w.wr.atomic };
        assert_eq!((a.compare_add, a.swap), (3, 4));
        let bad = SendWr::AtomicFetchAdd {
            local: S,
            wr_id: 1,
            remote_addr: 0,
            rkey: 0,
            add: 0,
        };
        assert!(send_wr(&bad, 1, 1).err().unwrap().contains("must be 8"));
    }

    #[test]
    fn oversized_sge_rejected() {
        let big = Sge { len: 1 << 33, ..S };
        assert!(sge(big).err().unwrap().contains("max 4 GiB"));
    }
}
