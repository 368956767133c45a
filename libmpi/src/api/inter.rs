//! Intercommunicators in the Rust API: creation, queries and merge. Point-to-point on an
//! intercommunicator names ranks of the remote group; the collectives follow MPI's
//! intercommunicator rules (`coll_inter`: `rmpi::ROOT` / `rmpi::PROC_NULL` roots, per-peer
//! blocks sized by the remote group; scan, exscan and the in-place forms are MPI_ERR_COMM).

use super::comm::Communicator;
use super::comm_mgmt::UserCommunicator;
use crate::error::Result;
use crate::group::Group;
use crate::runtime;

impl Communicator {
    /// MPI_Intercomm_create: this communicator is the local group; `local_leader` (a rank
    /// here) meets rank `remote_leader` of `peer` (significant at the leader only) under `tag`.
    /// Collective over this communicator and the remote group's.
    pub fn intercomm_create(
        &self,
        local_leader: i32,
        peer: &Communicator,
        remote_leader: i32,
        tag: i32,
    ) -> Result<UserCommunicator> {
        crate::comm_inter::intercomm_create(
            &mut crate::comm_agree::Outside,
            self.id,
            local_leader,
            peer.id,
            remote_leader,
            tag,
        )
        .map(UserCommunicator::new)
    }

    /// MPI_Comm_test_inter.
    pub fn is_inter(&self) -> bool {
        runtime::with(|rt| Ok(rt.comm(self.id)?.is_inter())).unwrap_or(false)
    }

    /// MPI_Comm_remote_size: None for an intracommunicator.
    pub fn remote_size(&self) -> Option<i32> {
        runtime::with(|rt| Ok(rt.comm(self.id)?.remote.as_ref().map(|r| r.len() as i32)))
            .ok()
            .flatten()
    }

    /// MPI_Comm_remote_group: None for an intracommunicator.
    pub fn remote_group(&self) -> Option<Group> {
        runtime::with(|rt| Ok(rt.comm(self.id)?.remote.clone().map(Group::new)))
            .ok()
            .flatten()
    }

    /// MPI_Intercomm_merge: an intracommunicator of both groups, the `high = false` group's
    /// ranks first. Collective over both groups.
    pub fn merge(&self, high: bool) -> Result<UserCommunicator> {
        crate::comm_inter::intercomm_merge(&mut crate::comm_agree::Outside, self.id, high)
            .map(UserCommunicator::new)
    }
}
