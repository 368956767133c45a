//! Fragment headers on the wire, little-endian and packed. The btl tag byte says which one.

/// First fragment of an eager message: header, then the first bytes of the payload.
pub const MATCH: u8 = 1;
/// Further fragments of the eager message in flight from that peer: payload only.
pub const CONT: u8 = 2;
/// Rendezvous request to send: the receiver reads the data with a single-copy get.
pub const RTS: u8 = 3;
/// Receiver done reading a rendezvous buffer: the send completes.
pub const FIN: u8 = 4;
/// Receiver could not read (no single copy): the sender is asked to stream the data.
pub const CTS: u8 = 5;
/// A streamed piece of rendezvous data at an offset.
pub const DATA: u8 = 6;
/// Cooperative rendezvous, receiver to a waiting sender: write your part of the data into my
/// buffer (single-copy write) while I read the other part.
pub const PUT: u8 = 7;
/// Sender to receiver: the PUT is done (or could not be done: the receiver reads that part).
pub const PUT_FIN: u8 = 8;
/// A whole eager message in one fragment behind the short match header (`SHORT_LEN` bytes:
/// context and source in 16 bits each, the tag; the size is the fragment's). btl-sm's 32-byte
/// cells then carry up to 16 bytes of data, two such messages to a cache line.
pub const MATCH_SHORT: u8 = 9;

/// Match header: context, source rank in the communicator, tag, total payload bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchHdr {
    pub ctx: u32,
    pub src: i32,
    pub tag: i32,
    pub total: u64,
}

pub const MATCH_LEN: usize = 20;
pub const SHORT_LEN: usize = 8;
pub const RTS_LEN: usize = MATCH_LEN + 24;
pub const FIN_LEN: usize = 8;
pub const CTS_LEN: usize = 16;
pub const DATA_LEN: usize = 16;
/// PUT: sreq, rreq, receive buffer address, offset, length, claim ticket.
pub const PUT_LEN: usize = 48;
/// PUT_FIN: rreq, result (0: written; otherwise the receiver reads that part itself).
pub const PUT_FIN_LEN: usize = 16;
/// The longest control fragment.
pub const CTRL_MAX: usize = PUT_LEN;

#[inline]
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

#[inline]
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl MatchHdr {
    #[inline]
    pub fn encode(&self) -> [u8; MATCH_LEN] {
        let mut b = [0u8; MATCH_LEN];
        b[0..4].copy_from_slice(&self.ctx.to_le_bytes());
        b[4..8].copy_from_slice(&self.src.to_le_bytes());
        b[8..12].copy_from_slice(&self.tag.to_le_bytes());
        b[12..20].copy_from_slice(&self.total.to_le_bytes());
        b
    }

    /// The short form, when context and source fit in 16 bits; for a fragment that carries
    /// the whole message (`total` is then its length less `SHORT_LEN`).
    #[inline(always)]
    pub fn encode_short(&self) -> Option<[u8; SHORT_LEN]> {
        let ctx = u16::try_from(self.ctx).ok()?;
        let src = u16::try_from(self.src).ok()?;
        let mut b = [0u8; SHORT_LEN];
        b[0..2].copy_from_slice(&ctx.to_le_bytes());
        b[2..4].copy_from_slice(&src.to_le_bytes());
        b[4..8].copy_from_slice(&self.tag.to_le_bytes());
        Some(b)
    }

    /// A `MATCH_SHORT` fragment's header (`frag` is the whole fragment).
    #[inline]
    pub fn decode_short(frag: &[u8]) -> MatchHdr {
        MatchHdr {
            ctx: u16::from_le_bytes([frag[0], frag[1]]) as u32,
            src: u16::from_le_bytes([frag[2], frag[3]]) as i32,
            tag: u32_at(frag, 4) as i32,
            total: (frag.len() - SHORT_LEN) as u64,
        }
    }

    #[inline]
    pub fn decode(b: &[u8]) -> MatchHdr {
        MatchHdr {
            ctx: u32_at(b, 0),
            src: u32_at(b, 4) as i32,
            tag: u32_at(b, 8) as i32,
            total: u64_at(b, 12),
        }
    }
}

/// Rendezvous header: the match header, the sender's buffer address, its request id, and the
/// key the sender's transport exposed the buffer under (ib: rkey; others: 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtsHdr {
    pub m: MatchHdr,
    pub addr: u64,
    pub sreq: u64,
    pub key: u64,
}

impl RtsHdr {
    pub fn encode(&self) -> [u8; RTS_LEN] {
        let mut b = [0u8; RTS_LEN];
        b[..MATCH_LEN].copy_from_slice(&self.m.encode());
        b[20..28].copy_from_slice(&self.addr.to_le_bytes());
        b[28..36].copy_from_slice(&self.sreq.to_le_bytes());
        b[36..44].copy_from_slice(&self.key.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> RtsHdr {
        RtsHdr {
            m: MatchHdr::decode(b),
            addr: u64_at(b, 20),
            sreq: u64_at(b, 28),
            key: u64_at(b, 36),
        }
    }
}

/// Control words: FIN carries (sreq), CTS (sreq, rreq), DATA (rreq, offset), PUT (sreq, rreq,
/// address, offset, length, ticket), PUT_FIN (rreq, result).
pub fn encode_words<const N: usize>(words: [u64; N]) -> [u8; CTRL_MAX] {
    const { assert!(N * 8 <= CTRL_MAX) };
    let mut b = [0u8; CTRL_MAX];
    for (i, w) in words.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    b
}

pub fn word(b: &[u8], i: usize) -> u64 {
    u64_at(b, i * 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_roundtrip() {
        let h = MatchHdr {
            ctx: 7,
            src: -1,
            tag: i32::MAX,
            total: 1 << 40,
        };
        assert_eq!(MatchHdr::decode(&h.encode()), h);
    }

    #[test]
    fn short_roundtrip_and_limits() {
        let h = MatchHdr {
            ctx: 65535,
            src: 65535,
            tag: -7,
            total: 3,
        };
        let mut frag = h.encode_short().unwrap().to_vec();
        frag.extend_from_slice(b"abc");
        assert_eq!(MatchHdr::decode_short(&frag), h);
        for (ctx, src) in [(65536, 0), (0, 65536), (0, -1)] {
            let h = MatchHdr { ctx, src, ..h };
            assert_eq!(h.encode_short(), None, "{ctx} {src}");
        }
    }

    #[test]
    fn rts_roundtrip() {
        let h = RtsHdr {
            m: MatchHdr {
                ctx: 1,
                src: 3,
                tag: 0,
                total: 99,
            },
            addr: 0xdead_beef,
            sreq: 42,
            key: 0x1234_5678,
        };
        assert_eq!(RtsHdr::decode(&h.encode()), h);
    }

    #[test]
    fn words_roundtrip() {
        let b = encode_words([5, u64::MAX]);
        assert_eq!((word(&b, 0), word(&b, 1)), (5, u64::MAX));
    }
}
