//! The `sm` transport: btl-sm's channels to the other ranks of the node, and CMA single copy.

use super::{Btl, GetError};

pub struct SmBtl {
    transport: btl_sm::SmTransport,
    cma: bool,
}

impl SmBtl {
    pub fn new(transport: btl_sm::SmTransport, cma: bool) -> SmBtl {
        if cma {
            btl_sm::cma::allow_ptrace_from_any();
        }
        SmBtl { transport, cma }
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
        let Some(pid) = self.transport.peer_pid(peer) else {
            return Err(GetError::Unsupported(format!(
                "local peer {peer} has not attached"
            )));
        };
        btl_sm::cma::read(pid, remote, local).map_err(|e| {
            // Refused once means refused for good (ptrace policy): stop trying.
            self.cma = false;
            GetError::Unsupported(format!("process_vm_readv from pid {pid}: {e}"))
        })
    }
}
