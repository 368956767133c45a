//! Dynamic processes in the Rust API (`crate::dpm` does the work): spawn, the parent, ports.

use super::comm::Communicator;
use super::comm_mgmt::UserCommunicator;
use super::Universe;
use crate::dpm::{self, Meet, SpawnCmd};
use crate::error::Result;
use crate::runtime;

impl Communicator {
    /// MPI_Comm_spawn: start `maxprocs` processes of `command` with `args`; the intercommunicator
    /// to them. `command` and `args` count at `root` only. Collective over this communicator.
    pub fn spawn(
        &self,
        command: &str,
        args: &[&str],
        maxprocs: i32,
        root: i32,
    ) -> Result<UserCommunicator> {
        let cmd = SpawnCmd {
            command: command.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            maxprocs,
            info: Vec::new(),
        };
        dpm::spawn(self.id, root, &[cmd])
            .1
            .map(UserCommunicator::new)
    }

    /// MPI_Comm_accept: wait at `root` for a group to connect to `port` (an `open_port` name).
    pub fn accept(&self, port: &str, root: i32) -> Result<UserCommunicator> {
        dpm::join(self.id, root, Meet::Accept(port)).map(UserCommunicator::new)
    }

    /// MPI_Comm_connect: join the group accepting on `port`.
    pub fn connect(&self, port: &str, root: i32) -> Result<UserCommunicator> {
        dpm::join(self.id, root, Meet::Connect(port)).map(UserCommunicator::new)
    }
}

impl Universe {
    /// MPI_Comm_get_parent: the intercommunicator to the processes that spawned this one.
    pub fn parent(&self) -> Option<Communicator> {
        runtime::with(|rt| Ok(dpm::parent(rt)))
            .ok()
            .flatten()
            .map(Communicator::new)
    }
}

/// MPI_Open_port: a port name this process accepts on.
pub fn open_port() -> Result<String> {
    dpm::open_port()
}

/// MPI_Close_port.
pub fn close_port(port: &str) -> Result<()> {
    dpm::close_port(port)
}

impl UserCommunicator {
    /// MPI_Comm_disconnect: wait for what is in flight on it, then free it (collective).
    pub fn disconnect(self) -> Result<()> {
        let id = self.id;
        std::mem::forget(self);
        crate::comm_ops::disconnect(id)
    }
}

impl Universe {
    /// MPI_Comm_disconnect of the parent intercommunicator (`parent` is None afterwards).
    pub fn disconnect_parent(&self) -> Result<()> {
        match self.parent() {
            Some(p) => crate::comm_ops::disconnect(p.id),
            None => Ok(()),
        }
    }
}
