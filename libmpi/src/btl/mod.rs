//! Byte transfer layers: what the pml sends fragments through. One trait, one implementation per
//! transport (`self` for messages to oneself, `sm` for peers on the node, later `ib`).

pub mod self_btl;
pub mod sm;

/// Why a single-copy `get` could not be done; the pml then falls back to streaming.
#[derive(Debug)]
pub enum GetError {
    /// This transport has no single copy, or the OS refused it (e.g. ptrace restrictions).
    Unsupported(String),
}

/// A transport. Peers are named by the transport's own index (`Endpoint::peer`).
pub trait Btl {
    fn name(&self) -> &'static str;
    /// Largest `hdr.len() + data.len()` one fragment may carry.
    fn max_frag(&self) -> usize;
    /// Enqueue a fragment; false when there is no room now (retry after progress).
    fn try_send(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool;
    /// Deliver arrived fragments, in order per peer, as `f(peer, tag, bytes)`; returns how many.
    fn progress(&mut self, f: &mut dyn FnMut(usize, u8, &[u8])) -> usize;
    /// Single copy: read `local.len()` bytes at `remote` in the peer's address space.
    fn get(&mut self, peer: usize, remote: usize, local: &mut [u8]) -> Result<(), GetError>;
}
