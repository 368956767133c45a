//! Forwarding the ranks' stdout and stderr to mpirun's, line by line, optionally tagged.

use std::fs::File;
use std::io::{self, ErrorKind, Read};
use std::os::fd::{AsFd, BorrowedFd};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::lines::LineBuf;

/// A line longer than this is forwarded in pieces, so one rank cannot make mpirun hoard memory.
const MAX_LINE: usize = 1 << 20;
const READ_CHUNK: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

/// Appends one piece of rank output as it should appear on mpirun's side. A tagged piece always
/// ends a line, so another rank's output never continues it.
pub fn render(tag: Option<usize>, piece: &[u8], out: &mut Vec<u8>) {
    if let Some(rank) = tag {
        out.extend_from_slice(format!("[{rank}] ").as_bytes());
        out.extend_from_slice(piece);
        if !piece.ends_with(b"\n") {
            out.push(b'\n');
        }
    } else {
        out.extend_from_slice(piece);
    }
}

/// Writes to mpirun's stdout and stderr; a destination that went away is silently dropped.
pub struct Forwarder {
    tag: bool,
    broken: [bool; 2],
}

impl Forwarder {
    pub fn new(tag: bool) -> Self {
        Forwarder {
            tag,
            broken: [false; 2],
        }
    }

    fn write(&mut self, stream: Stream, bytes: &[u8]) {
        let idx = stream as usize;
        if bytes.is_empty() || self.broken[idx] {
            return;
        }
        let res = match stream {
            Stream::Out => write_all_fd(io::stdout().as_fd(), bytes),
            Stream::Err => write_all_fd(io::stderr().as_fd(), bytes),
        };
        if res.is_err() {
            // e.g. `mpirun ... | head`: keep draining the ranks, drop their output.
            self.broken[idx] = true;
        }
    }
}

/// Unbuffered write of all of `bytes`; also works when the destination was left non-blocking
/// by whoever shares it.
fn write_all_fd(fd: BorrowedFd, mut bytes: &[u8]) -> nix::Result<()> {
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(0) => return Err(Errno::EIO),
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let _ = poll(
                    &mut [PollFd::new(fd, PollFlags::POLLOUT)],
                    PollTimeout::NONE,
                );
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The read end of one rank's stdout or stderr pipe (non-blocking).
pub struct OutPipe {
    file: Option<File>,
    buf: LineBuf,
    stream: Stream,
    /// A rank on another host: its output arrives by `feed` until its end.
    remote_open: bool,
}

impl OutPipe {
    pub fn new(file: File, stream: Stream) -> Self {
        OutPipe {
            file: Some(file),
            buf: LineBuf::new(MAX_LINE),
            stream,
            remote_open: false,
        }
    }

    /// The output of a rank on another host, relayed by its node daemon.
    pub fn remote(stream: Stream) -> Self {
        OutPipe {
            file: None,
            buf: LineBuf::new(MAX_LINE),
            stream,
            remote_open: true,
        }
    }

    /// Whether more output may come.
    pub fn is_open(&self) -> bool {
        self.file.is_some() || self.remote_open
    }

    /// Relayed output of a remote rank; `eof`: its end.
    pub fn feed(&mut self, rank: usize, fwd: &mut Forwarder, bytes: &[u8], eof: bool) {
        if !self.remote_open {
            return;
        }
        self.buf.push(bytes);
        self.remote_open = !eof;
        self.forward(rank, fwd, eof);
    }

    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.file.as_ref().map(|f| f.as_fd())
    }

    /// Reads what is there (at most `max_reads` reads), forwards complete lines, and at EOF
    /// forwards the unterminated rest and closes the pipe.
    pub fn pump(&mut self, rank: usize, fwd: &mut Forwarder, max_reads: usize) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut chunk = vec![0u8; READ_CHUNK];
        let mut eof = false;
        for _ in 0..max_reads {
            match file.read(&mut chunk) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => self.buf.push(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    eof = true;
                    break;
                }
            }
        }
        if eof {
            self.file = None;
        }
        self.forward(rank, fwd, eof);
    }

    /// Forwards the complete lines buffered, and at `eof` the unterminated rest.
    fn forward(&mut self, rank: usize, fwd: &mut Forwarder, eof: bool) {
        let tag = fwd.tag.then_some(rank);
        let mut out = Vec::new();
        self.buf.drain_lines(|piece| render(tag, piece, &mut out));
        if eof {
            if let Some(rest) = self.buf.take_rest() {
                render(tag, &rest, &mut out);
            }
        }
        // One write per batch: lines of different ranks never mix.
        fwd.write(self.stream, &out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(tag: Option<usize>, piece: &[u8]) -> String {
        let mut v = Vec::new();
        render(tag, piece, &mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn untagged_is_verbatim() {
        assert_eq!(r(None, b"hello\n"), "hello\n");
        assert_eq!(r(None, b"partial"), "partial");
    }

    #[test]
    fn tagged_lines_get_prefix_and_end() {
        assert_eq!(r(Some(0), b"hello\n"), "[0] hello\n");
        assert_eq!(r(Some(12), b"partial"), "[12] partial\n");
    }
}
