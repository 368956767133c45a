//! The messages of the one-sided component. Every request travels on the window's own
//! context as one pml message whose tag is its kind; its body is a fixed header of four
//! little-endian words, the target blocks as (offset, length) word pairs, then the data.
//! Replies (data of a get, lock grants, acknowledgements) travel on the window's second
//! context under the reply tag the request named.

pub const PUT: i32 = 1;
pub const GET: i32 = 2;
pub const ACC: i32 = 3;
/// Get_accumulate and Fetch_and_op: the old target data comes back, then the op applies.
pub const GACC: i32 = 4;
pub const CAS: i32 = 5;
/// `arg` = 1 for an exclusive lock; granted by an empty reply.
pub const LOCK: i32 = 6;
pub const UNLOCK: i32 = 7;
/// Acknowledged once everything the origin sent before it has been applied.
pub const FLUSH: i32 = 8;
pub const FENCE: i32 = 9;
pub const POST: i32 = 10;
pub const COMPLETE: i32 = 11;
/// A put whose data follows as the origin's next message (tag DATA), received straight into
/// the window (one contiguous target block).
pub const PUT_DIRECT: i32 = 12;
pub const DATA: i32 = 13;

const HDR_WORDS: usize = 4;

/// Target blocks: (offset, length) pairs.
pub type Blocks = Vec<(i64, u64)>;

/// The fixed part: an op handle (or a flag), a datatype handle, the reply tag and how many
/// blocks follow.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hdr {
    pub arg: u64,
    pub dt: u64,
    pub reply: u64,
    pub nblocks: u64,
}

/// A request body with `data_len` bytes of room for the data after the blocks; returns the
/// buffer and where the data starts.
pub fn encode(h: Hdr, blocks: &[(i64, u64)], data_len: usize) -> (Vec<u8>, usize) {
    let data_off = (HDR_WORDS + 2 * blocks.len()) * 8;
    // Zeroed in one allocation (calloc), then the words written in place: no per-byte loop.
    let mut v = vec![0u8; data_off + data_len];
    let words = [h.arg, h.dt, h.reply, blocks.len() as u64]
        .into_iter()
        .chain(blocks.iter().flat_map(|&(off, len)| [off as u64, len]));
    for (i, w) in words.enumerate() {
        v[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    (v, data_off)
}

fn word(b: &[u8], i: usize) -> u64 {
    b.get(i * 8..i * 8 + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
}

/// Header, blocks and data of a received body; None if it is malformed.
pub fn decode(b: &[u8]) -> Option<(Hdr, Blocks, &[u8])> {
    if b.len() < HDR_WORDS * 8 {
        return None;
    }
    let h = Hdr {
        arg: word(b, 0),
        dt: word(b, 1),
        reply: word(b, 2),
        nblocks: word(b, 3),
    };
    let nb = usize::try_from(h.nblocks).ok()?;
    let data_off = nb.checked_mul(16)?.checked_add(HDR_WORDS * 8)?;
    if b.len() < data_off {
        return None;
    }
    let blocks = (0..nb)
        .map(|i| {
            let w = HDR_WORDS + 2 * i;
            (word(b, w) as i64, word(b, w + 1))
        })
        .collect();
    Some((h, blocks, &b[data_off..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let h = Hdr {
            arg: 7,
            dt: 0x209,
            reply: 99,
            nblocks: 0,
        };
        let (mut v, off) = encode(h, &[(-8, 4), (16, 12)], 3);
        v[off..].copy_from_slice(&[1, 2, 3]);
        let (g, b, d) = decode(&v).unwrap();
        assert_eq!((g.arg, g.dt, g.reply, g.nblocks), (7, 0x209, 99, 2));
        assert_eq!(b, vec![(-8, 4), (16, 12)]);
        assert_eq!(d, &[1, 2, 3]);
        assert!(decode(&v[..20]).is_none());
    }
}
