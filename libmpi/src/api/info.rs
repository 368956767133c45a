//! Info objects in the Rust API: `Info` is a plain value (ordered string pairs with the
//! standard's length limits), so it needs no handle; communicators keep a copy of their hints.

use super::comm::Communicator;
use super::comm_mgmt::UserCommunicator;
use crate::error::Result;
pub use crate::info::{Info, MAX_KEY, MAX_VAL};
use crate::runtime;

/// MPI_INFO_ENV: how this process was started (command, argv, maxprocs, soft, host, arch, wdir,
/// thread_level).
pub fn env_info() -> Info {
    crate::info::env()
}

impl Communicator {
    /// MPI_Comm_set_info: add `info`'s hints to this communicator's (others keep their values).
    pub fn set_info(&self, info: &Info) -> Result<()> {
        runtime::with(|rt| {
            rt.comm_mut(self.id)?.info.merge(info);
            Ok(())
        })
    }

    /// MPI_Comm_get_info: the hints this communicator keeps.
    pub fn info(&self) -> Result<Info> {
        runtime::with(|rt| Ok(rt.comm(self.id)?.info.clone()))
    }

    /// MPI_Comm_dup_with_info: a duplicate whose hints are `info`'s. Collective.
    pub fn duplicate_with_info(&self, info: &Info) -> Result<UserCommunicator> {
        let c = self.duplicate()?;
        runtime::with(|rt| {
            rt.comm_mut(c.id)?.info = info.clone();
            Ok(())
        })?;
        Ok(c)
    }
}
