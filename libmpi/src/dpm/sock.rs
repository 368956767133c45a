//! The transport to peers that joined after MPI_Init (spawned children, connect/accept): one
//! Unix stream socket per direction and pair, in the abstract namespace (no file to leak), named
//! by the listening process's pid. A sender connects to the receiver's listener and says its pid;
//! the receiver reads fragments `[len: u32][tag: u8][bytes]` from every connection it accepted.
//! One stream per direction keeps each pair's fragments in order. No single copy: rendezvous
//! data is streamed (`expose` says so).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::btl::{Btl, GetError};

const MAX_FRAG: usize = 64 * 1024;
const EAGER: usize = 16 * 1024;

/// The abstract socket name of `pid`'s fragment listener.
pub fn listener_name(pid: u32) -> String {
    format!("rmpi-dyn-{pid}")
}

pub fn abstract_addr(name: &str) -> std::io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(name.as_bytes())
}

struct Inbound {
    sock: UnixStream,
    buf: Vec<u8>,
    /// The sender's pid, once its first 4 bytes arrived.
    pid: Option<u32>,
}

struct Outbound {
    sock: Option<UnixStream>,
    pid: u32,
    pending: Vec<u8>,
    /// Since when its listener refuses: a peer met through a third process may not have
    /// opened it yet (it does as it learns of us), so it is retried for a while.
    refused_since: Option<Instant>,
}

/// How long a peer's listener may refuse before the peer is taken for gone.
const REFUSED_GRACE: Duration = Duration::from_secs(10);

/// What the transport and `dpm` share: peers by index, their pids.
#[derive(Default)]
pub struct Peers {
    pub by_pid: HashMap<u32, usize>,
    pub pids: Vec<u32>,
}

pub struct DynBtl {
    listener: UnixListener,
    inbound: Vec<Inbound>,
    out: Vec<Outbound>,
    peers: Rc<RefCell<Peers>>,
}

impl DynBtl {
    /// Listens under this process's name.
    pub fn open(peers: Rc<RefCell<Peers>>) -> std::io::Result<DynBtl> {
        let addr = abstract_addr(&listener_name(std::process::id()))?;
        let listener = UnixListener::bind_addr(&addr)?;
        listener.set_nonblocking(true)?;
        Ok(DynBtl {
            listener,
            inbound: Vec::new(),
            out: Vec::new(),
            peers,
        })
    }

    fn out_for(&mut self, peer: usize) -> &mut Outbound {
        while self.out.len() <= peer {
            let pid = self.peers.borrow().pids[self.out.len()];
            self.out.push(Outbound {
                sock: None,
                pid,
                pending: Vec::new(),
                refused_since: None,
            });
        }
        &mut self.out[peer]
    }

    fn flush(o: &mut Outbound) {
        if o.sock.is_none() {
            let Ok(addr) = abstract_addr(&listener_name(o.pid)) else {
                return;
            };
            match UnixStream::connect_addr(&addr) {
                Ok(s) => {
                    let _ = s.set_nonblocking(true);
                    let mut hello = std::process::id().to_le_bytes().to_vec();
                    hello.append(&mut o.pending);
                    o.pending = hello;
                    o.sock = Some(s);
                }
                // Its backlog is full: retried at the next progress.
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                // Nobody listens under its name: not yet, or it has left the job (then its
                // data goes nowhere).
                Err(_) => {
                    let since = *o.refused_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > REFUSED_GRACE {
                        o.pending.clear();
                    }
                    return;
                }
            }
        }
        let sock = o.sock.as_mut().expect("connected above");
        while !o.pending.is_empty() {
            match sock.write(&o.pending) {
                Ok(n) => {
                    o.pending.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // WouldBlock: later. A peer that is gone: its data is dropped (it left the job).
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    o.pending.clear();
                    break;
                }
            }
        }
    }
}

impl Btl for DynBtl {
    fn name(&self) -> &'static str {
        "dpm"
    }

    fn max_frag(&self) -> usize {
        MAX_FRAG
    }

    fn eager_limit(&self, _peer: usize) -> Option<usize> {
        Some(EAGER)
    }

    fn try_send(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        let o = self.out_for(peer);
        // Bounded, like a transport's ring: the pml queues and retries after progress.
        if o.pending.len() > 4 * MAX_FRAG {
            Self::flush(o);
            if o.pending.len() > 4 * MAX_FRAG {
                return false;
            }
        }
        let len = (hdr.len() + data.len()) as u32;
        o.pending.extend_from_slice(&len.to_le_bytes());
        o.pending.push(tag);
        o.pending.extend_from_slice(hdr);
        o.pending.extend_from_slice(data);
        Self::flush(o);
        true
    }

    fn progress(&mut self, f: &mut dyn FnMut(usize, u8, &[u8])) -> usize {
        for o in self.out.iter_mut().filter(|o| !o.pending.is_empty()) {
            Self::flush(o);
        }
        while let Ok((s, _)) = self.listener.accept() {
            let _ = s.set_nonblocking(true);
            self.inbound.push(Inbound {
                sock: s,
                buf: Vec::new(),
                pid: None,
            });
        }
        let mut n = 0;
        let mut chunk = [0u8; 65536];
        let peers = self.peers.borrow();
        for c in &mut self.inbound {
            loop {
                match c.sock.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(k) => c.buf.extend_from_slice(&chunk[..k]),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
                if c.buf.len() > 8 * MAX_FRAG {
                    break;
                }
            }
            if c.pid.is_none() && c.buf.len() >= 4 {
                c.pid = Some(u32::from_le_bytes(c.buf[..4].try_into().expect("4 bytes")));
                c.buf.drain(..4);
            }
            // A sender not known yet (its intercommunicator is still being set up here):
            // its fragments wait in the buffer.
            let Some(&peer) = c.pid.and_then(|p| peers.by_pid.get(&p)) else {
                continue;
            };
            let mut off = 0;
            while c.buf.len() - off >= 5 {
                let len = u32::from_le_bytes(c.buf[off..off + 4].try_into().expect("4")) as usize;
                if c.buf.len() - off < 5 + len {
                    break;
                }
                f(peer, c.buf[off + 4], &c.buf[off + 5..off + 5 + len]);
                off += 5 + len;
                n += 1;
            }
            c.buf.drain(..off);
        }
        n
    }

    fn get(&mut self, _: usize, _: usize, _: u64, _: &mut [u8]) -> Result<(), GetError> {
        Err(GetError::Unsupported(
            "the dpm transport has no single copy".into(),
        ))
    }

    fn expose(&mut self, _peer: usize, _addr: usize, _len: usize) -> Option<u64> {
        None
    }

    fn flushed(&self) -> bool {
        self.out.iter().all(|o| o.pending.is_empty())
    }
}
