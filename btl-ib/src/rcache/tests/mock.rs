//! A mock device for the cache's tests: fresh keys per registration, the live registrations
//! recorded (so a test can tell what is still pinned), optional ENOMEM above a byte limit (as
//! RLIMIT_MEMLOCK does). Only reg_mr, dereg_mr and pinned are implemented.

use std::collections::BTreeMap;

use crate::verbs::{Access, Device, Mr, Qpn, RegError, SendWr, Sge, VerbsError, Wc};

#[derive(Default)]
pub struct MockDevice {
    /// Live registrations by lkey.
    pub live: BTreeMap<u32, Mr>,
    next_key: u32,
    /// reg_mr fails with ENOMEM when the pinned bytes would exceed this.
    pub limit: Option<usize>,
    pub regs: u64,
    pub deregs: u64,
    pub enomem_failures: u64,
    /// reg_mr fails with EFAULT for ranges touching `[start, end)` (memory that is not mapped).
    pub hole: Option<(usize, usize)>,
}

impl MockDevice {
    pub fn new() -> MockDevice {
        MockDevice::default()
    }

    pub fn with_limit(limit: usize) -> MockDevice {
        MockDevice {
            limit: Some(limit),
            ..MockDevice::default()
        }
    }

    pub fn pinned_bytes(&self) -> usize {
        self.live.values().map(|m| m.len).sum()
    }

    pub fn is_live(&self, mr: Mr) -> bool {
        self.live.get(&mr.lkey) == Some(&mr)
    }
}

impl Device for MockDevice {
    fn name(&self) -> String {
        "mock".into()
    }
    fn max_msg(&self) -> usize {
        1 << 20
    }
    fn reg_mr(&mut self, addr: usize, len: usize, access: Access) -> Result<Mr, RegError> {
        assert!(len > 0, "mock: zero-length registration");
        if let Some((s, e)) = self.hole {
            if addr < e && s < addr + len {
                return Err(RegError {
                    errno: libc::EFAULT,
                    message: format!("mock: {addr:#x}+{len} is not mapped"),
                });
            }
        }
        if let Some(limit) = self.limit {
            if self.pinned_bytes() + len > limit {
                self.enomem_failures += 1;
                return Err(RegError {
                    errno: libc::ENOMEM,
                    message: format!("mock: {len} more bytes would exceed RLIMIT_MEMLOCK {limit}"),
                });
            }
        }
        self.next_key += 1;
        let mr = Mr {
            addr,
            len,
            lkey: self.next_key,
            rkey: self.next_key | 0x8000_0000,
            access,
        };
        self.live.insert(mr.lkey, mr);
        self.regs += 1;
        Ok(mr)
    }
    fn dereg_mr(&mut self, mr: Mr) -> Result<(), VerbsError> {
        // A double or unknown deregistration is a cache bug: fail the test loudly.
        let had = self.live.remove(&mr.lkey);
        assert_eq!(had, Some(mr), "mock: dereg_mr of a region not registered");
        self.deregs += 1;
        Ok(())
    }
    fn pinned(&self) -> (usize, Option<usize>) {
        (self.pinned_bytes(), self.limit)
    }
    fn address(&self) -> Vec<u8> {
        Vec::new()
    }
    fn create_qp(&mut self, _: u32, _: u32) -> Result<Qpn, VerbsError> {
        Err(VerbsError("mock: no QPs".into()))
    }
    fn connect(&mut self, _: Qpn, _: &[u8], _: Qpn) -> Result<(), VerbsError> {
        Err(VerbsError("mock: no QPs".into()))
    }
    fn post_recv(&mut self, _: Qpn, _: u64, _: Sge) -> Result<(), VerbsError> {
        Err(VerbsError("mock: no QPs".into()))
    }
    fn post_send(&mut self, _: Qpn, _: SendWr) -> Result<(), VerbsError> {
        Err(VerbsError("mock: no QPs".into()))
    }
    fn poll_cq(&mut self, _: &mut Vec<Wc>, _: usize) -> usize {
        0
    }
    fn destroy_qp(&mut self, _: Qpn) -> Result<(), VerbsError> {
        Err(VerbsError("mock: no QPs".into()))
    }
}
