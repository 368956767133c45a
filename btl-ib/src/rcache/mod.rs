//! Registration cache ("leave pinned"): registrations outlive the transfer that made them, so a
//! buffer sent again costs a lookup instead of a pin. Kept honest by memhook: a range released
//! to the OS is recorded lock-free inside the hook and its registrations are dropped before the
//! next lookup.
//!
//! SKELETON: the API the transport uses; the implementation lands with the rcache work.

use crate::verbs::{Access, Device, Mr, RegError};

/// Whether registrations are cached (`--mca btl_ib_leave_pinned auto|0|1|force`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Cache when memhook delivers events, else register per transfer.
    Auto,
    Off,
    /// Cache; refused (turned off, with a reason) when memhook delivers no events.
    On,
    /// Cache even without events: stale registrations are possible. For tests only.
    Force,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "auto" | "" | "-1" => Ok(Mode::Auto),
            "0" | "off" | "false" => Ok(Mode::Off),
            "1" | "on" | "true" => Ok(Mode::On),
            "force" => Ok(Mode::Force),
            other => Err(format!(
                "btl_ib_leave_pinned={other}: expected auto, 0, 1 or force"
            )),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub invalidations: u64,
    /// Bytes registered through the cache now (in use or cached).
    pub pinned_bytes: usize,
    pub entries: usize,
}

/// A registration in use; give it back with [`Rcache::release`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handle(pub usize);

pub struct Rcache {
    _private: (),
}

impl Rcache {
    /// `max_bytes`: bound on bytes kept registered (in use plus cached).
    pub fn new(mode: Mode, max_bytes: usize) -> Rcache {
        let _ = (mode, max_bytes);
        unimplemented!()
    }

    /// Whether registrations are kept after release, and if not, why.
    pub fn enabled(&self) -> Result<(), &'static str> {
        unimplemented!()
    }

    /// A registration covering `[addr, addr + len)` with at least `access`.
    pub fn acquire(
        &mut self,
        dev: &mut dyn Device,
        addr: usize,
        len: usize,
        access: Access,
    ) -> Result<Handle, RegError> {
        let _ = (dev, addr, len, access);
        unimplemented!()
    }

    pub fn mr(&self, h: Handle) -> Mr {
        let _ = h;
        unimplemented!()
    }

    pub fn release(&mut self, dev: &mut dyn Device, h: Handle) {
        let _ = (dev, h);
        unimplemented!()
    }

    pub fn stats(&self) -> Stats {
        unimplemented!()
    }

    /// Deregisters everything (at finalize).
    pub fn clear(&mut self, dev: &mut dyn Device) {
        let _ = dev;
        unimplemented!()
    }
}
