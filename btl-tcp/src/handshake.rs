//! The hello an initiator sends first on a new connection, and the acceptor's one-byte answer.
//!
//! Hello: `RMPT` magic, the initiator's rank (u32 LE), the acceptor's cookie (u64 LE, which the
//! acceptor published with its address: a stray connection cannot pose as a rank). The acceptor
//! answers [`ACK`] when it keeps the connection, or closes it (simultaneous connects: see
//! `transport.rs`); the initiator sends no frame before the ACK, so a closed one loses nothing.

pub const HELLO_LEN: usize = 16;
pub const ACK: u8 = 1;
const MAGIC: &[u8; 4] = b"RMPT";

pub fn hello(rank: u32, cookie: u64) -> [u8; HELLO_LEN] {
    let mut h = [0u8; HELLO_LEN];
    h[..4].copy_from_slice(MAGIC);
    h[4..8].copy_from_slice(&rank.to_le_bytes());
    h[8..].copy_from_slice(&cookie.to_le_bytes());
    h
}

/// The initiator's rank, if `h` is a hello for the holder of `cookie`.
pub fn check(h: &[u8; HELLO_LEN], cookie: u64) -> Option<u32> {
    if &h[..4] != MAGIC || h[8..] != cookie.to_le_bytes() {
        return None;
    }
    Some(u32::from_le_bytes([h[4], h[5], h[6], h[7]]))
}

#[cfg(test)]
mod tests {
    #[test]
    fn hello_checks_cookie() {
        let h = super::hello(3, 42);
        assert_eq!(super::check(&h, 42), Some(3));
        assert_eq!(super::check(&h, 43), None);
    }
}
