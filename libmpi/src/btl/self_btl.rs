//! The `self` transport: fragments a rank sends to itself, queued in process memory.

use std::collections::VecDeque;

use super::{Btl, GetError};

#[derive(Default)]
pub struct SelfBtl {
    queue: VecDeque<(u8, Vec<u8>)>,
}

impl Btl for SelfBtl {
    fn name(&self) -> &'static str {
        "self"
    }

    fn max_frag(&self) -> usize {
        1 << 20
    }

    fn try_send(&mut self, _peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        let mut frag = Vec::with_capacity(hdr.len() + data.len());
        frag.extend_from_slice(hdr);
        frag.extend_from_slice(data);
        self.queue.push_back((tag, frag));
        true
    }

    fn progress(&mut self, f: &mut dyn FnMut(usize, u8, &[u8])) -> usize {
        // Only what was queued before this call: handlers may queue more (replies to ourselves).
        let n = self.queue.len();
        if n == 0 {
            return 0;
        }
        for _ in 0..n {
            let (tag, frag) = self.queue.pop_front().expect("counted above");
            f(0, tag, &frag);
        }
        n
    }

    fn get(
        &mut self,
        _peer: usize,
        remote: usize,
        _key: u64,
        local: &mut [u8],
    ) -> Result<(), GetError> {
        // SAFETY: `remote` is the address of a send buffer in this very process, announced by a
        // rendezvous header; the pending send request keeps that buffer alive and unmodified
        // until the receiver's FIN completes it, and it has at least `local.len()` bytes (the
        // receiver never reads more than the announced length).
        unsafe { std::ptr::copy(remote as *const u8, local.as_mut_ptr(), local.len()) };
        Ok(())
    }
}
