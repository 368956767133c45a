//! Communicators: context ids, the process group as world ranks, and per-communicator settings.

use crate::error::{err, ErrorClass, Result};

/// What happens when a call on this communicator fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrHandler {
    /// Print the error and abort the job (the MPI default).
    Fatal,
    /// Return the error code to the caller.
    Return,
    /// Like Fatal, restricted to the communicator's processes (here: the job).
    Abort,
    /// A user function (MPI_Comm_create_errhandler), by index in the registry.
    User(usize),
}

#[derive(Clone, Debug)]
pub struct Comm {
    /// Point-to-point context; `ctx + 1` carries this communicator's collective traffic.
    pub ctx: u32,
    pub rank: i32,
    /// World rank of each member, by rank in this communicator.
    pub group: Vec<i32>,
    pub errhandler: ErrHandler,
    pub name: String,
    /// Cached attributes: (keyval, value), in the order they were set.
    pub attrs: Vec<(i32, usize)>,
    /// The process topology (MPI_Cart_create etc.); copied by dup, not by split or create.
    pub topo: Option<std::sync::Arc<crate::topo::Topology>>,
    /// Info hints set by the user (MPI_Comm_set_info, *_with_info); none change behaviour yet.
    pub info: crate::info::Info,
}

impl Comm {
    #[inline]
    pub fn size(&self) -> i32 {
        self.group.len() as i32
    }

    pub fn coll_ctx(&self) -> u32 {
        self.ctx + 1
    }

    /// World rank of communicator rank `r`, checked.
    #[inline]
    pub fn world_of(&self, r: i32) -> Result<usize> {
        match self.group.get(r as usize) {
            Some(&w) if r >= 0 => Ok(w as usize),
            _ => err(
                ErrorClass::Rank,
                format!(
                    "rank {r} is out of range for {} (size {})",
                    if self.name.is_empty() {
                        "the communicator"
                    } else {
                        &self.name
                    },
                    self.size()
                ),
            ),
        }
    }
}

/// Index of MPI_COMM_WORLD and MPI_COMM_SELF in the communicator table.
pub const WORLD: usize = 0;
pub const SELF: usize = 1;

/// The two communicators every process starts with.
pub fn initial(world_rank: i32, world_size: i32) -> Vec<Option<Comm>> {
    let world = Comm {
        ctx: 0,
        rank: world_rank,
        group: (0..world_size).collect(),
        errhandler: ErrHandler::Fatal,
        name: "MPI_COMM_WORLD".into(),
        attrs: Vec::new(),
        topo: None,
        info: crate::info::Info::new(),
    };
    let me = Comm {
        ctx: 2,
        rank: 0,
        group: vec![world_rank],
        errhandler: ErrHandler::Fatal,
        name: "MPI_COMM_SELF".into(),
        attrs: Vec::new(),
        topo: None,
        info: crate::info::Info::new(),
    };
    vec![Some(world), Some(me)]
}
