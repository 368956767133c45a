//! What a peer needs to connect an RC QP to this port, as the bytes `Device::address` hands to
//! PMI. Pure Rust (no libibverbs), so it is tested everywhere.
//!
//! Layout (24 bytes): magic 0xB1, version 1, port, path MTU (`enum ibv_mtu`), link layer
//! (`IBV_LINK_LAYER_*`), responder RDMA-read depth (our `max_dest_rd_atomic`), LID (u16
//! little-endian), GID (16 bytes, as the port reports it: network order).

use crate::verbs::VerbsError;

/// `IBV_LINK_LAYER_*` (an anonymous enum in verbs.h, so not in rdma-sys).
pub const LINK_LAYER_UNSPECIFIED: u8 = 0;
pub const LINK_LAYER_INFINIBAND: u8 = 1;
pub const LINK_LAYER_ETHERNET: u8 = 2;

/// `IBV_MTU_256` ..= `IBV_MTU_4096`.
pub const MTU_MIN: u8 = 1;
pub const MTU_MAX: u8 = 5;

const MAGIC: u8 = 0xB1;
const VERSION: u8 = 1;
pub const ADDR_LEN: usize = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortAddr {
    pub port: u8,
    /// Active MTU of the port, as `enum ibv_mtu`.
    pub mtu: u8,
    pub link_layer: u8,
    /// How many RDMA READs this side accepts in flight per QP (its `max_dest_rd_atomic`):
    /// the peer's `max_rd_atomic` must not exceed it.
    pub rd_atom: u8,
    pub lid: u16,
    pub gid: [u8; 16],
}

impl PortAddr {
    /// RoCE: addressed by GID through a GRH; InfiniBand (or unspecified, old drivers): by LID.
    pub fn is_ethernet(&self) -> bool {
        self.link_layer == LINK_LAYER_ETHERNET
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(ADDR_LEN);
        b.extend_from_slice(&[
            MAGIC,
            VERSION,
            self.port,
            self.mtu,
            self.link_layer,
            self.rd_atom,
        ]);
        b.extend_from_slice(&self.lid.to_le_bytes());
        b.extend_from_slice(&self.gid);
        b
    }

    pub fn decode(b: &[u8]) -> Result<PortAddr, VerbsError> {
        let bad = |why: String| Err(VerbsError(format!("bad verbs address: {why}")));
        if b.len() != ADDR_LEN {
            return bad(format!("{} bytes, expected {ADDR_LEN}", b.len()));
        }
        if b[0] != MAGIC {
            return bad(format!(
                "magic {:#04x}, expected {MAGIC:#04x} (not a verbs address: soft provider on the other side?)",
                b[0]
            ));
        }
        if b[1] != VERSION {
            return bad(format!("version {}, this build speaks {VERSION}", b[1]));
        }
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[8..24]);
        let a = PortAddr {
            port: b[2],
            mtu: b[3],
            link_layer: b[4],
            rd_atom: b[5],
            lid: u16::from_le_bytes([b[6], b[7]]),
            gid,
        };
        if a.port == 0 {
            return bad("port 0 (ports are numbered from 1)".into());
        }
        if !(MTU_MIN..=MTU_MAX).contains(&a.mtu) {
            return bad(format!("MTU code {} (expected 1..=5)", a.mtu));
        }
        match a.link_layer {
            LINK_LAYER_ETHERNET => {
                if a.gid == [0; 16] {
                    return bad("RoCE port with an all-zero GID".into());
                }
            }
            LINK_LAYER_UNSPECIFIED | LINK_LAYER_INFINIBAND => {
                // 0 is unassigned; 0xC000.. are multicast/permissive, never a port's LID.
                if a.lid == 0 || a.lid >= 0xC000 {
                    return bad(format!("InfiniBand port with LID {:#x}", a.lid));
                }
            }
            other => return bad(format!("link layer {other}")),
        }
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ib() -> PortAddr {
        PortAddr {
            port: 1,
            mtu: 5,
            link_layer: LINK_LAYER_INFINIBAND,
            rd_atom: 16,
            lid: 0x1234,
            gid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
        }
    }

    fn roce() -> PortAddr {
        PortAddr {
            link_layer: LINK_LAYER_ETHERNET,
            lid: 0,
            mtu: 3,
            port: 2,
            ..ib()
        }
    }

    #[test]
    fn address_roundtrip() {
        for a in [ib(), roce()] {
            let b = a.encode();
            assert_eq!(b.len(), ADDR_LEN);
            assert_eq!(PortAddr::decode(&b), Ok(a));
        }
    }

    fn rejected(b: &[u8], what: &str) {
        let e = PortAddr::decode(b).expect_err("garbage accepted");
        assert!(e.0.starts_with("bad verbs address: "), "{}", e.0);
        assert!(e.0.contains(what), "{:?} does not mention {what:?}", e.0);
    }

    #[test]
    fn address_rejects_garbage() {
        rejected(&[], "0 bytes");
        rejected(&[0u8; 100], "100 bytes");
        rejected(&[0u8; ADDR_LEN], "magic");
        rejected(b"soft:12345:abcdefghijklmn", "bytes");

        let good = ib().encode();
        let with = |i: usize, v: u8| {
            let mut b = good.clone();
            b[i] = v;
            b
        };
        rejected(&with(1, 2), "version 2");
        rejected(&with(2, 0), "port 0");
        rejected(&with(3, 0), "MTU code 0");
        rejected(&with(3, 6), "MTU code 6");
        rejected(&with(4, 9), "link layer 9");
        rejected(&PortAddr { lid: 0, ..ib() }.encode(), "LID 0x0");
        rejected(
            &PortAddr {
                lid: 0xffff,
                ..ib()
            }
            .encode(),
            "LID 0xffff",
        );
        rejected(
            &PortAddr {
                gid: [0; 16],
                ..roce()
            }
            .encode(),
            "all-zero GID",
        );
    }
}
