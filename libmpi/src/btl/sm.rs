//! The `sm` transport: btl-sm's channels to the other ranks of the node, and CMA single copy.

use super::{Btl, CoopOpen, GetError};

pub struct SmBtl {
    transport: btl_sm::SmTransport,
    cma: bool,
    /// Peers may be asked to write half of a rendezvous (btl_sm_coop_copy_min > 0, CMA on,
    /// every rank with a core of its own: a descheduled sender only wastes a PUT).
    coop: bool,
    /// Free claim words of this rank (bit i: word i), for receives split with a sender.
    coop_free: u32,
    /// Ticket sequence (30 bits): a stale PUT never matches a reused claim word.
    coop_seq: u32,
}

impl SmBtl {
    pub fn new(transport: btl_sm::SmTransport, cma: bool, coop: bool) -> SmBtl {
        if cma {
            btl_sm::cma::allow_ptrace_from_any();
        }
        let slots = transport.coop_slots();
        SmBtl {
            transport,
            cma,
            coop: coop && cma && slots > 0,
            coop_free: ((1u64 << slots) - 1) as u32,
            coop_seq: 0,
        }
    }

    fn pid(&self, peer: usize) -> Result<i32, GetError> {
        self.transport
            .peer_pid(peer)
            .ok_or_else(|| GetError::Unsupported(format!("local peer {peer} has not attached")))
    }
}

impl Btl for SmBtl {
    fn name(&self) -> &'static str {
        "sm"
    }

    #[inline]
    fn max_frag(&self) -> usize {
        self.transport.max_frag()
    }

    #[inline]
    fn try_send(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        self.transport.try_send(peer, tag, hdr, data)
    }

    #[inline]
    fn progress(&mut self, f: &mut dyn FnMut(usize, u8, &[u8])) -> usize {
        self.transport.poll(f)
    }

    fn get(
        &mut self,
        peer: usize,
        remote: usize,
        _key: u64,
        local: &mut [u8],
    ) -> Result<(), GetError> {
        if !self.cma {
            return Err(GetError::Unsupported(
                "single copy disabled (btl_sm_single_copy=none)".into(),
            ));
        }
        let pid = self.pid(peer)?;
        btl_sm::cma::read(pid, remote, local).map_err(|e| {
            // Refused once means refused for good (ptrace policy): stop trying.
            self.cma = false;
            self.coop = false;
            GetError::Unsupported(format!("process_vm_readv from pid {pid}: {e}"))
        })
    }

    fn coop_open(&mut self, peer: usize) -> CoopOpen {
        if !self.coop || !self.transport.peer_waiting(peer) {
            return CoopOpen::No;
        }
        if self.coop_free == 0 {
            return CoopOpen::Busy;
        }
        let slot = self.coop_free.trailing_zeros();
        self.coop_free &= !(1 << slot);
        self.coop_seq = (self.coop_seq + 1) & (u32::MAX >> 2);
        self.transport.coop_open(slot as usize, self.coop_seq);
        CoopOpen::Ticket((slot as u64) << 32 | self.coop_seq as u64)
    }

    fn coop_claim(&mut self, peer: usize, ticket: u64, by_sender: bool) -> bool {
        let (slot, seq) = ((ticket >> 32) as usize, ticket as u32);
        let owner = if by_sender { peer } else { self.transport.me() };
        self.transport.coop_claim(owner, slot, seq, by_sender)
    }

    fn coop_close(&mut self, ticket: u64) {
        let slot = (ticket >> 32) as u32;
        if slot < 32 {
            self.coop_free |= 1 << slot;
        }
    }

    fn put(&mut self, peer: usize, remote: usize, local: &[u8]) -> Result<(), GetError> {
        let pid = self.pid(peer)?;
        btl_sm::cma::write(pid, remote, local).map_err(|e| {
            // The receiver reads that part itself; do not ask again.
            self.coop = false;
            GetError::Unsupported(format!("process_vm_writev to pid {pid}: {e}"))
        })
    }

    fn waiting_word(&self) -> Option<*const std::sync::atomic::AtomicU32> {
        Some(self.transport.waiting_word())
    }
}
