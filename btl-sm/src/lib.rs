//! Shared-memory transport: one segment per node, an SPSC channel per ordered pair of local ranks,
//! and CMA (`process_vm_readv`) single copy. See docs/DESIGN.md for the channel layout.
//!
//! API CONTRACT (used by mpirun and libmpi; keep these signatures):
//! - `Params::resolve(n_local, &lookup)` / `Params::from_env(n_local)`
//! - `segment_size(&Params) -> usize` (the one sizing function launcher and ranks share)
//! - `Segment::{create_memfd, attach_fd, create_named, open_named, unlink_named}`
//! - `SmTransport::{new, me, n, peer_pid, max_frag, try_send, poll}`
//! - `cma::{read, allow_ptrace_from_any}`

use std::io;
use std::os::fd::{OwnedFd, RawFd};

/// How large messages are moved between ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SingleCopy {
    /// `process_vm_readv` from the sender's buffer.
    Cma,
    /// No single copy: data is streamed through the channel (two copies, pipelined).
    None,
}

/// Resolved tunables for a node with `n_local` ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub n_local: usize,
    /// Header-ring cells (64 B each) per ordered pair; a power of two.
    pub fifo_cells: usize,
    /// Payload-ring bytes per ordered pair; a power of two, multiple of 64.
    pub payload_bytes: usize,
    /// Largest message sent eagerly; larger ones use rendezvous.
    pub eager_limit: usize,
    pub single_copy: SingleCopy,
}

#[derive(Debug)]
pub struct ParamError(pub String);

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ParamError {}

impl Params {
    /// Resolve tunables; `lookup(name)` returns an MCA value when one was given. Names:
    /// `btl_sm_fifo_cells`, `btl_sm_payload_bytes`, `btl_sm_eager_limit`, `btl_sm_single_copy` (cma|none).
    pub fn resolve(n_local: usize, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Params, ParamError> {
        let _ = (n_local, lookup);
        unimplemented!()
    }

    /// `resolve` with values from `RMPI_MCA_<name>` environment variables.
    pub fn from_env(n_local: usize) -> Result<Params, ParamError> {
        Self::resolve(n_local, &|name| std::env::var(format!("RMPI_MCA_{name}")).ok())
    }
}

/// Exact size in bytes of the node segment for these parameters.
pub fn segment_size(p: &Params) -> usize {
    let _ = p;
    unimplemented!()
}

#[derive(Debug)]
pub struct SmError(pub String);

impl std::fmt::Display for SmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for SmError {}

/// A mapping of the node segment.
pub struct Segment {}

impl Segment {
    /// Launcher side: a zero-filled memfd of `segment_size(p)` bytes, without CLOEXEC.
    pub fn create_memfd(p: &Params) -> io::Result<OwnedFd> {
        let _ = p;
        unimplemented!()
    }
    /// Rank side: map an inherited segment fd; fails if its size is not `segment_size(p)`.
    pub fn attach_fd(fd: RawFd, p: &Params) -> Result<Segment, SmError> {
        let _ = (fd, p);
        unimplemented!()
    }
    /// Named POSIX shm (for foreign launchers): create, size and map.
    pub fn create_named(name: &str, p: &Params) -> Result<Segment, SmError> {
        let _ = (name, p);
        unimplemented!()
    }
    pub fn open_named(name: &str, p: &Params) -> Result<Segment, SmError> {
        let _ = (name, p);
        unimplemented!()
    }
    pub fn unlink_named(name: &str) -> io::Result<()> {
        let _ = name;
        unimplemented!()
    }
}

/// One rank's view of the node: its outgoing and incoming channels.
pub struct SmTransport {}

impl SmTransport {
    /// Take local index `me` in the segment; records this process's pid in its slot.
    pub fn new(seg: Segment, me: usize) -> Result<SmTransport, SmError> {
        let _ = (seg, me);
        unimplemented!()
    }
    pub fn me(&self) -> usize {
        unimplemented!()
    }
    pub fn n(&self) -> usize {
        unimplemented!()
    }
    /// The pid a peer recorded in its slot; None until it has attached.
    pub fn peer_pid(&self, peer: usize) -> Option<i32> {
        let _ = peer;
        unimplemented!()
    }
    /// Largest `hdr.len() + data.len()` one fragment may carry.
    pub fn max_frag(&self) -> usize {
        unimplemented!()
    }
    /// Enqueue one fragment (hdr followed by data) to `peer`; false when the channel has no room.
    pub fn try_send(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        let _ = (peer, tag, hdr, data);
        unimplemented!()
    }
    /// Deliver arrived fragments in order per peer as `f(peer, tag, bytes)`; returns how many.
    pub fn poll(&mut self, f: &mut dyn FnMut(usize, u8, &[u8])) -> usize {
        let _ = f;
        unimplemented!()
    }
}

pub mod cma {
    use std::io;
    /// Copy `local.len()` bytes from `remote_addr` in process `pid` (process_vm_readv, all iovecs).
    pub fn read(pid: i32, remote_addr: usize, local: &mut [u8]) -> io::Result<()> {
        let _ = (pid, remote_addr, local);
        unimplemented!()
    }
    /// prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY) where Yama exists; harmless elsewhere.
    pub fn allow_ptrace_from_any() {}
}
