//! mpirun's end of one rank's PMI socket: non-blocking, with line framing and an output queue,
//! so a rank that stops reading can never block the event loop.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;

use crate::lines::LineBuf;

/// Far above any legal PMI-1 line (vallen_max is 1024).
const MAX_LINE: usize = 64 * 1024;

/// One request as received.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    Line(String),
    /// A line longer than `MAX_LINE`: dropped whole (up to its `\n`), answered once.
    TooLong,
}

/// Where a rank's PMI bytes come from: its socket, or (a rank on another host) the frames its
/// node daemon relays (`Job::on_node`).
enum Wire {
    Local(UnixStream),
    Remote { inbox: Vec<u8>, eof: bool },
}

pub struct PmiConn {
    sock: Option<Wire>,
    inbuf: LineBuf,
    out: Vec<u8>,
    /// Inside an over-long line: pieces are dropped until its end.
    discarding: bool,
}

impl PmiConn {
    /// `sock` must already be non-blocking.
    pub fn new(sock: UnixStream) -> Self {
        PmiConn {
            sock: Some(Wire::Local(sock)),
            inbuf: LineBuf::new(MAX_LINE),
            out: Vec::new(),
            discarding: false,
        }
    }

    /// A rank on another host: requests arrive by `feed`, replies leave by `take_out`.
    pub fn remote() -> Self {
        PmiConn {
            sock: Some(Wire::Remote {
                inbox: Vec::new(),
                eof: false,
            }),
            inbuf: LineBuf::new(MAX_LINE),
            out: Vec::new(),
            discarding: false,
        }
    }

    /// The socket to poll; None for a remote rank or a closed connection.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.sock {
            Some(Wire::Local(s)) => Some(s.as_fd()),
            _ => None,
        }
    }

    pub fn is_open(&self) -> bool {
        self.sock.is_some()
    }

    /// A remote rank's bytes, as relayed; `eof`: its connection closed.
    pub fn feed(&mut self, bytes: &[u8], eof: bool) {
        if let Some(Wire::Remote { inbox, eof: e }) = &mut self.sock {
            inbox.extend_from_slice(bytes);
            *e |= eof;
        }
    }

    /// A remote rank's queued replies, for its daemon.
    pub fn take_out(&mut self) -> Option<Vec<u8>> {
        match &self.sock {
            Some(Wire::Remote { .. }) if !self.out.is_empty() => {
                Some(std::mem::take(&mut self.out))
            }
            _ => None,
        }
    }

    pub fn wants_write(&self) -> bool {
        !self.out.is_empty()
    }

    /// Reads what is available (at most `max_reads` reads) and returns the complete requests.
    /// EOF or an error closes the connection (`fd` is None from then on); whether that is an
    /// error is the job's to judge.
    pub fn read_lines(&mut self, max_reads: usize) -> Vec<Request> {
        let mut lines = Vec::new();
        let mut closed = false;
        let mut sock = match self.sock.as_mut() {
            None => return lines,
            Some(Wire::Remote { inbox, eof }) => {
                self.inbuf.push(inbox);
                inbox.clear();
                closed = *eof;
                None
            }
            Some(Wire::Local(s)) => Some(s),
        };
        let mut chunk = [0u8; 4096];
        for _ in 0..sock.as_ref().map_or(0, |_| max_reads) {
            let Some(sock) = sock.as_mut() else { break };
            match sock.read(&mut chunk) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => self.inbuf.push(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    closed = true;
                    break;
                }
            }
        }
        let discarding = &mut self.discarding;
        self.inbuf.drain_lines(|l| {
            let ends = l.last() == Some(&b'\n');
            if !*discarding && ends {
                lines.push(Request::Line(String::from_utf8_lossy(l).into_owned()));
            } else if !*discarding {
                lines.push(Request::TooLong);
            }
            *discarding = !ends;
        });
        if closed {
            self.close();
        }
        lines
    }

    pub fn queue(&mut self, line: &str) {
        if self.sock.is_some() {
            self.out.extend_from_slice(line.as_bytes());
        }
    }

    /// Writes as much of the queue as the socket takes now.
    pub fn flush(&mut self) {
        // A remote rank's replies wait for `take_out`.
        let Some(Wire::Local(sock)) = self.sock.as_mut() else {
            return;
        };
        while !self.out.is_empty() {
            match sock.write(&self.out) {
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => {
                    // The rank is gone; its exit status will tell what happened.
                    self.close();
                    return;
                }
            }
        }
    }

    fn close(&mut self) {
        self.sock = None;
        self.out.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_replies_and_close() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let mut c = PmiConn::new(ours);
        assert!(c.read_lines(100).is_empty());
        theirs
            .write_all(b"cmd=init pmi_version=1\ncmd=get")
            .unwrap();
        let line = |s: &str| Request::Line(s.into());
        assert_eq!(c.read_lines(100), [line("cmd=init pmi_version=1\n")]);
        theirs.write_all(b"_maxes\n").unwrap();
        assert_eq!(c.read_lines(1), [line("cmd=get_maxes\n")]);
        c.queue("cmd=maxes rc=0\n");
        assert!(c.wants_write());
        c.flush();
        assert!(!c.wants_write());
        let mut got = [0u8; 15];
        theirs.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"cmd=maxes rc=0\n");
        drop(theirs);
        assert!(c.read_lines(100).is_empty());
        assert!(c.fd().is_none());
    }

    #[test]
    fn an_over_long_line_is_one_request_and_the_next_line_is_intact() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let mut c = PmiConn::new(ours);
        let mut got = Vec::new();
        let long = vec![b'x'; 3 * MAX_LINE + 5];
        let writer = std::thread::spawn(move || {
            theirs.write_all(b"cmd=put key=k value=").unwrap();
            theirs.write_all(&long).unwrap();
            theirs.write_all(b"\ncmd=get_maxes\n").unwrap();
            theirs
        });
        while got.len() < 2 {
            got.extend(c.read_lines(64));
        }
        drop(writer.join().unwrap());
        assert_eq!(
            got,
            [Request::TooLong, Request::Line("cmd=get_maxes\n".into())]
        );
    }
}
