//! A peer's byte streams: the frames waiting to be written (partial writes resume where they
//! stopped) and the bytes read but not yet delivered (partial frames wait for the rest).

use std::collections::VecDeque;
use std::io::{self, Read};
use std::net::TcpStream;
use std::os::fd::RawFd;

use crate::frame;

/// The most bytes one sendmsg of queued frames writes (a frame may end in the next call). A call
/// that passes the kernel's 64 KiB segment by a few KiB leaves a short last segment that goes
/// out late: across a veth pair, batches of 65-80 KiB and 193-200 KiB ran osu_bw windows at
/// half speed (1 KiB: 900 against 2000 MB/s), while calls of up to 64000 bytes never dip.
const SENDMSG_MAX: usize = 64000;

#[derive(Default)]
pub struct SendQueue {
    frames: VecDeque<Vec<u8>>,
    /// Bytes of the front frame already written.
    off: usize,
    bytes: usize,
}

impl SendQueue {
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn frames(&self) -> usize {
        self.frames.len()
    }

    /// Queue the bytes of `parts` after the first `skip` (those already written).
    pub fn push(&mut self, parts: &[&[u8]], skip: usize) {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let mut v = Vec::with_capacity(total - skip);
        let mut skip = skip;
        for p in parts {
            let s = skip.min(p.len());
            v.extend_from_slice(&p[s..]);
            skip -= s;
        }
        self.bytes += v.len();
        self.frames.push_back(v);
    }

    /// Write as much as the socket takes now; Ok when it is drained or full.
    pub fn flush(&mut self, fd: RawFd) -> io::Result<()> {
        while !self.frames.is_empty() {
            let mut bufs: [&[u8]; crate::sock::MAX_IOV] = [&[]; crate::sock::MAX_IOV];
            let mut used = 0;
            let mut room = SENDMSG_MAX;
            for (k, f) in self.frames.iter().take(bufs.len()).enumerate() {
                let b = if k == 0 { &f[self.off..] } else { &f[..] };
                let b = &b[..b.len().min(room)];
                room -= b.len();
                bufs[used] = b;
                used += 1;
                if room == 0 {
                    break;
                }
            }
            let mut n = match crate::sock::send(fd, &bufs[..used]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            };
            self.bytes -= n;
            while n > 0 {
                let left = self.frames[0].len() - self.off;
                if n >= left {
                    n -= left;
                    self.off = 0;
                    self.frames.pop_front();
                } else {
                    self.off += n;
                    n = 0;
                }
            }
        }
        Ok(())
    }
}

pub struct RecvBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

/// What one read gave.
pub enum Fill {
    /// Bytes arrived; `true` when they filled the free space (more may be waiting).
    Got(bool),
    WouldBlock,
    Eof,
}

impl RecvBuf {
    pub fn new(max_frag: usize) -> RecvBuf {
        RecvBuf {
            buf: vec![0; (256 << 10).max(2 * (max_frag + frame::HEADER_LEN))],
            start: 0,
            end: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }

    /// Read at most `limit` bytes of what `s` has.
    pub fn fill(&mut self, mut s: &TcpStream, limit: usize) -> io::Result<Fill> {
        if self.start > 0 && self.buf.len() - self.end < self.buf.len() / 2 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let room = (self.buf.len() - self.end).min(limit);
        match s.read(&mut self.buf[self.end..self.end + room]) {
            Ok(0) => Ok(Fill::Eof),
            Ok(n) => {
                self.end += n;
                Ok(Fill::Got(n == room))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Fill::WouldBlock),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(Fill::Got(true)),
            Err(e) => Err(e),
        }
    }

    /// The frame the buffer ends with, begun but not complete: `(tag, len, bytes of it
    /// here after its header)`.
    pub fn partial(&self) -> Option<(u8, usize, usize)> {
        let (tag, len) = frame::parse(&self.buf[self.start..self.end])?;
        let here = self.end - self.start - frame::HEADER_LEN;
        (here < len).then_some((tag, len, here))
    }

    /// The bytes of the partial frame after its header, left in the buffer.
    pub fn partial_bytes(&self) -> &[u8] {
        &self.buf[self.start + frame::HEADER_LEN..self.end]
    }

    /// The bytes of the partial frame after its header; the buffer is empty after it.
    pub fn take_partial(&mut self) -> &[u8] {
        let at = self.start + frame::HEADER_LEN;
        let end = self.end;
        self.start = 0;
        self.end = 0;
        &self.buf[at..end]
    }

    /// Takes one byte (the handshake's answer), if there is one.
    pub fn take_byte(&mut self) -> Option<u8> {
        if self.is_empty() {
            return None;
        }
        self.start += 1;
        Some(self.buf[self.start - 1])
    }

    /// Delivers the complete frames as `f(tag, bytes)`; how many, or the length of a frame
    /// longer than `max` (a corrupt stream).
    pub fn frames(&mut self, max: usize, f: &mut dyn FnMut(u8, &[u8])) -> Result<usize, usize> {
        let mut n = 0;
        while let Some((tag, len)) = frame::parse(&self.buf[self.start..self.end]) {
            if len > max {
                return Err(len);
            }
            let at = self.start + frame::HEADER_LEN;
            if self.end - at < len {
                break;
            }
            self.start = at + len;
            f(tag, &self.buf[at..at + len]);
            n += 1;
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    /// Frames written in calls of at most SENDMSG_MAX bytes (cut inside frames, resumed at the
    /// cut) arrive whole and in order.
    #[test]
    fn flush_writes_in_bounded_calls_and_keeps_the_bytes() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut q = SendQueue::default();
        let sizes = [10, SENDMSG_MAX - 3, 7, 50_000, 1, SENDMSG_MAX + 5, 200];
        let mut want = Vec::new();
        for (k, &n) in sizes.iter().enumerate() {
            let body: Vec<u8> = (0..n).map(|i| (i * 7 + k) as u8).collect();
            want.extend_from_slice(&body);
            q.push(&[&body], 0);
        }
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).unwrap();
            got
        });
        while !q.is_empty() {
            q.flush(a.as_raw_fd()).unwrap();
        }
        assert_eq!(q.bytes(), 0);
        drop(a);
        assert!(reader.join().unwrap() == want);
    }
}
