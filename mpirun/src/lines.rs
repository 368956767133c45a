//! Splitting a byte stream into lines; shared by the PMI connections and the stdio forwarder.

/// Bytes received so far on one stream, handed out line by line.
pub struct LineBuf {
    buf: Vec<u8>,
    max_line: usize,
}

impl LineBuf {
    /// `max_line` bounds memory: a longer run without `\n` is handed out in pieces of that size.
    pub fn new(max_line: usize) -> Self {
        LineBuf {
            buf: Vec::new(),
            max_line,
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// Calls `f` on each complete line (including its `\n`), or on an over-long piece.
    pub fn drain_lines(&mut self, mut f: impl FnMut(&[u8])) {
        let mut start = 0;
        loop {
            let rest = &self.buf[start..];
            if let Some(i) = rest
                .iter()
                .take(self.max_line + 1)
                .position(|&b| b == b'\n')
            {
                f(&rest[..=i]);
                start += i + 1;
            } else if rest.len() >= self.max_line {
                f(&rest[..self.max_line]);
                start += self.max_line;
            } else {
                break;
            }
        }
        // One drain per call keeps this linear in the bytes received.
        self.buf.drain(..start);
    }

    /// The unterminated rest (at EOF), if any.
    pub fn take_rest(&mut self) -> Option<Vec<u8>> {
        if self.buf.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut self.buf))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(b: &mut LineBuf) -> Vec<String> {
        let mut v = Vec::new();
        b.drain_lines(|l| v.push(String::from_utf8_lossy(l).into_owned()));
        v
    }

    #[test]
    fn split_across_pushes_and_several_per_push() {
        let mut b = LineBuf::new(1024);
        b.push(b"cmd=in");
        assert!(lines(&mut b).is_empty());
        b.push(b"it\ncmd=get_maxes\ncmd=ba");
        assert_eq!(lines(&mut b), ["cmd=init\n", "cmd=get_maxes\n"]);
        b.push(b"rrier_in\n");
        assert_eq!(lines(&mut b), ["cmd=barrier_in\n"]);
        assert_eq!(b.take_rest(), None);
    }

    #[test]
    fn partial_rest_at_eof() {
        let mut b = LineBuf::new(1024);
        b.push(b"a\nbc");
        assert_eq!(lines(&mut b), ["a\n"]);
        assert_eq!(b.take_rest().as_deref(), Some(&b"bc"[..]));
        assert_eq!(b.take_rest(), None);
    }

    #[test]
    fn overlong_line_is_cut_into_pieces() {
        let mut b = LineBuf::new(4);
        b.push(b"abcdefghij\n");
        assert_eq!(lines(&mut b), ["abcd", "efgh", "ij\n"]);
    }
}
