//! Bounce buffers: one registered region cut into equal buffers, and the work-request ids that
//! name them in completions.

use crate::verbs::{Access, Device, Mr, RegError, Sge};

/// What a completion's `wr_id` refers to: the top byte says which kind, the rest an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrId {
    Recv(usize),
    Send(usize),
    Rdma(u64),
}

const KIND_SHIFT: u32 = 56;

impl WrId {
    pub fn encode(self) -> u64 {
        match self {
            WrId::Recv(i) => (1 << KIND_SHIFT) | i as u64,
            WrId::Send(i) => (2 << KIND_SHIFT) | i as u64,
            WrId::Rdma(s) => (3 << KIND_SHIFT) | (s & ((1 << KIND_SHIFT) - 1)),
        }
    }

    pub fn decode(v: u64) -> Option<WrId> {
        let i = v & ((1 << KIND_SHIFT) - 1);
        match v >> KIND_SHIFT {
            1 => Some(WrId::Recv(i as usize)),
            2 => Some(WrId::Send(i as usize)),
            3 => Some(WrId::Rdma(i)),
            _ => None,
        }
    }
}

/// `count` buffers of `size` bytes in one registration.
pub struct Pool {
    mem: Vec<u8>,
    mr: Option<Mr>,
    size: usize,
}

impl Pool {
    pub fn new(dev: &mut dyn Device, count: usize, size: usize) -> Result<Pool, RegError> {
        let mem = vec![0u8; count * size];
        let mr = dev.reg_mr(mem.as_ptr() as usize, mem.len(), Access::LOCAL_WRITE)?;
        Ok(Pool {
            mem,
            mr: Some(mr),
            size,
        })
    }

    pub fn bytes(&self) -> usize {
        self.mem.len()
    }

    /// The scatter/gather element for the first `len` bytes of buffer `i`.
    pub fn sge(&self, i: usize, len: usize) -> Sge {
        debug_assert!(len <= self.size);
        Sge {
            addr: self.mem.as_ptr() as usize + i * self.size,
            len,
            lkey: self.mr.expect("registered").lkey,
        }
    }

    pub fn buf(&self, i: usize) -> &[u8] {
        &self.mem[i * self.size..(i + 1) * self.size]
    }

    pub fn buf_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.mem[i * self.size..(i + 1) * self.size]
    }

    /// Deregisters; the memory goes with the pool.
    pub fn release(&mut self, dev: &mut dyn Device) {
        if let Some(mr) = self.mr.take() {
            let _ = dev.dereg_mr(mr);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WrId;

    #[test]
    fn wr_ids_roundtrip() {
        for w in [
            WrId::Recv(0),
            WrId::Send(77),
            WrId::Rdma(1 << 40),
            WrId::Recv(12345),
        ] {
            assert_eq!(WrId::decode(w.encode()), Some(w));
        }
        assert_eq!(WrId::decode(5), None);
    }
}
