//! Framing: `[len: u32 little-endian][tag: u8][len bytes]`, len counting the bytes after the tag.

pub const HEADER_LEN: usize = 5;

pub fn header(tag: u8, len: usize) -> [u8; HEADER_LEN] {
    let l = (len as u32).to_le_bytes();
    [l[0], l[1], l[2], l[3], tag]
}

/// `(tag, len)` of the frame starting `buf`, if its header is complete.
pub fn parse(buf: &[u8]) -> Option<(u8, usize)> {
    let h = buf.get(..HEADER_LEN)?;
    Some((h[4], u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize))
}

#[cfg(test)]
mod tests {
    #[test]
    fn roundtrip() {
        let h = super::header(7, 0x01020304);
        assert_eq!(super::parse(&h), Some((7, 0x01020304)));
        assert_eq!(super::parse(&h[..4]), None);
    }
}
