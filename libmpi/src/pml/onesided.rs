//! Single-copy access to a peer's registered memory for one-sided communication (osc/rdma.rs):
//! the transport that reaches a world rank exposes, reads and writes by key.

use super::Pml;
use crate::btl::GetError;

impl Pml {
    /// Make `[addr, addr + len)` readable and writable by world rank `world` through the
    /// transport that reaches it; the key to send there, or None if it cannot.
    pub fn expose_to(&mut self, world: usize, addr: usize, len: usize) -> Option<u64> {
        let ep = *self.st.endpoints.get(world)?;
        self.btls[ep.btl].expose(ep.peer, addr, len)
    }

    /// Undo `expose_to` (the window is freed).
    pub fn unexpose_to(&mut self, world: usize, addr: usize, len: usize) {
        if let Some(&ep) = self.st.endpoints.get(world) {
            self.btls[ep.btl].unexpose(ep.peer, addr, len);
        }
    }

    /// Read `local.len()` bytes at `remote` in world rank `world`, exposed under `key`.
    pub fn read_exposed(
        &mut self,
        world: usize,
        remote: usize,
        key: u64,
        local: &mut [u8],
    ) -> Result<(), GetError> {
        let ep = self.st.endpoints[world];
        self.btls[ep.btl].get(ep.peer, remote, key, local)
    }

    /// Write `local` at `remote` in world rank `world`, exposed under `key`.
    pub fn write_exposed(
        &mut self,
        world: usize,
        remote: usize,
        key: u64,
        local: &[u8],
    ) -> Result<(), GetError> {
        let ep = self.st.endpoints[world];
        self.btls[ep.btl].write(ep.peer, remote, key, local)
    }

    /// Whether the transport reaching world rank `world` does one-sided atomics.
    pub fn atomics_to(&self, world: usize) -> bool {
        self.st
            .endpoints
            .get(world)
            .is_some_and(|ep| self.btls[ep.btl].atomics())
    }

    /// 8-byte atomic `op` at `remote` in world rank `world`, exposed under `key`; with `mine`,
    /// on this process's own word at `remote` instead, through the same transport (so that it
    /// is atomic with respect to the peers' atomics). The old value.
    pub fn atomic_exposed(
        &mut self,
        world: usize,
        mine: bool,
        remote: usize,
        key: u64,
        op: btl_ib::verbs::AtomicOp,
    ) -> Result<u64, GetError> {
        let ep = self.st.endpoints[world];
        let peer = (!mine).then_some(ep.peer);
        self.btls[ep.btl].atomic(peer, remote, key, op)
    }
}
