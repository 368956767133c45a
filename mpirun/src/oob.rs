//! The out-of-band wire between mpirun and its node daemons (`orted.rs`): one TCP connection per
//! daemon carrying framed messages, a kind byte, a rank and a payload, for every rank of the node.
//! Output bytes cross it raw; PMI requests too, except those the daemon answers itself (gets of
//! keys it has, and fences, `pmi_relay.rs`).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

/// Frame kinds. Daemon -> mpirun unless noted.
pub mod kind {
    /// The daemon's first frame: `rank` is its node index, the payload the job's cookie.
    pub const HELLO: u8 = b'H';
    /// mpirun -> daemon: the node's part of the job (JSON, `orted::NodeJob`).
    pub const JOB: u8 = b'J';
    /// A rank started; payload: its pid in decimal.
    pub const STARTED: u8 = b'S';
    /// The daemon could not start its ranks; payload: why.
    pub const FAILED: u8 = b'F';
    /// PMI bytes, both ways.
    pub const PMI: u8 = b'P';
    /// The rank's PMI connection closed.
    pub const PMI_EOF: u8 = b'p';
    /// Output: stdout, stderr, and their ends.
    pub const OUT: u8 = b'O';
    pub const ERR: u8 = b'E';
    pub const OUT_EOF: u8 = b'o';
    pub const ERR_EOF: u8 = b'e';
    /// The rank was reaped; payload: its raw wait status, 4 bytes little-endian.
    pub const EXIT: u8 = b'X';
    /// mpirun -> daemon: send a signal (payload: its number, 4 bytes) to a rank, or to every
    /// rank of the node when `rank` is `ALL`.
    pub const SIGNAL: u8 = b'K';
    /// mpirun -> daemon: a PMI fence is complete (`rank` is `ALL`); payload: the keys put since
    /// the last one and the line that releases each rank (`pmi_relay::fence_payload`).
    pub const FENCE: u8 = b'B';
}

/// `rank` of a frame about every rank of the node.
pub const ALL: u32 = u32::MAX;
const HEADER: usize = 9;
/// A frame larger than this is a broken peer, not a message.
const MAX_PAYLOAD: usize = 64 << 20;

#[derive(Debug, PartialEq, Eq)]
pub struct Frame {
    pub kind: u8,
    pub rank: u32,
    pub payload: Vec<u8>,
}

pub fn encode(out: &mut Vec<u8>, kind: u8, rank: u32, payload: &[u8]) {
    out.push(kind);
    out.extend_from_slice(&rank.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
}

/// One end of the connection: non-blocking, with an input buffer cut into frames and an output
/// queue, so that neither side can block the other's event loop.
pub struct Link {
    sock: Option<TcpStream>,
    inbuf: Vec<u8>,
    out: Vec<u8>,
}

impl Link {
    pub fn new(sock: TcpStream) -> std::io::Result<Link> {
        sock.set_nonblocking(true)?;
        sock.set_nodelay(true)?;
        // A peer host that vanishes (powered off, cable pulled) sends no FIN: the kernel's
        // keepalive probes (after 2 s idle, every second, 3 unanswered) and the user timeout
        // (5 s of unacknowledged data) turn that into an error within about 5 s, so the job is
        // torn down instead of hanging.
        use nix::sys::socket::{setsockopt, sockopt};
        setsockopt(&sock, sockopt::KeepAlive, &true)?;
        setsockopt(&sock, sockopt::TcpKeepIdle, &2)?;
        setsockopt(&sock, sockopt::TcpKeepInterval, &1)?;
        setsockopt(&sock, sockopt::TcpKeepCount, &3)?;
        setsockopt(&sock, sockopt::TcpUserTimeout, &5000)?;
        Ok(Link {
            sock: Some(sock),
            inbuf: Vec::new(),
            out: Vec::new(),
        })
    }

    pub fn sock(&self) -> Option<&TcpStream> {
        self.sock.as_ref()
    }

    pub fn is_open(&self) -> bool {
        self.sock.is_some()
    }

    pub fn wants_write(&self) -> bool {
        !self.out.is_empty()
    }

    pub fn send(&mut self, kind: u8, rank: u32, payload: &[u8]) {
        if self.sock.is_some() {
            encode(&mut self.out, kind, rank, payload);
        }
    }

    /// Writes what the socket takes now; false once the connection is gone.
    pub fn flush(&mut self) -> bool {
        let Some(sock) = self.sock.as_mut() else {
            return false;
        };
        while !self.out.is_empty() {
            match sock.write(&self.out) {
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(_) => {
                    self.close();
                    return false;
                }
            }
        }
        true
    }

    /// Reads what is available and returns the complete frames; at EOF, an error or a frame
    /// that cannot be one, the connection closes (`is_open` false).
    pub fn read_frames(&mut self, max_reads: usize) -> Vec<Frame> {
        let mut frames = Vec::new();
        let Some(sock) = self.sock.as_mut() else {
            return frames;
        };
        let mut chunk = vec![0u8; 64 * 1024];
        let mut closed = false;
        for _ in 0..max_reads {
            match sock.read(&mut chunk) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => self.inbuf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    closed = true;
                    break;
                }
            }
        }
        let mut at = 0;
        while self.inbuf.len() - at >= HEADER {
            let h = &self.inbuf[at..at + HEADER];
            let rank = u32::from_le_bytes([h[1], h[2], h[3], h[4]]);
            let len = u32::from_le_bytes([h[5], h[6], h[7], h[8]]) as usize;
            if len > MAX_PAYLOAD {
                closed = true;
                break;
            }
            if self.inbuf.len() - at - HEADER < len {
                break;
            }
            frames.push(Frame {
                kind: h[0],
                rank,
                payload: self.inbuf[at + HEADER..at + HEADER + len].to_vec(),
            });
            at += HEADER + len;
        }
        self.inbuf.drain(..at);
        if closed {
            self.close();
        }
        frames
    }

    pub fn close(&mut self) {
        self.sock = None;
        self.out.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn frames_cross_in_pieces_and_in_order() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = Link::new(TcpStream::connect(l.local_addr().unwrap()).unwrap()).unwrap();
        let mut b = Link::new(l.accept().unwrap().0).unwrap();
        let big = vec![7u8; 300_000];
        a.send(kind::PMI, 3, b"cmd=init\n");
        a.send(kind::OUT, 1, &big);
        a.send(kind::EXIT, ALL, &0i32.to_le_bytes());
        let mut got = Vec::new();
        for _ in 0..10_000 {
            a.flush();
            got.extend(b.read_frames(4));
            if got.len() == 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(got.len(), 3);
        assert_eq!(
            (got[0].kind, got[0].rank, &got[0].payload[..]),
            (kind::PMI, 3, &b"cmd=init\n"[..])
        );
        assert_eq!(got[1].payload, big);
        assert_eq!(got[2].rank, ALL);
        drop(a);
        for _ in 0..1000 {
            b.read_frames(1);
            if !b.is_open() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(!b.is_open(), "EOF closes the link");
    }
}
