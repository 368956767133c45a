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
    /// An intercommunicator's remote group (world ranks, by remote rank); None for an
    /// intracommunicator. `group` stays the local group. See `comm_inter.rs`.
    pub remote: Option<Vec<i32>>,
    /// Whether every member runs MPI_THREAD_MULTIPLE, once its members have agreed on it
    /// (`comm_ops::multiple_forms`); None until then.
    pub all_multiple: Option<bool>,
}

impl Comm {
    #[inline]
    pub fn size(&self) -> i32 {
        self.group.len() as i32
    }

    pub fn coll_ctx(&self) -> u32 {
        self.ctx + 1
    }

    /// Whether this is an intercommunicator.
    #[inline]
    pub fn is_inter(&self) -> bool {
        self.remote.is_some()
    }

    /// The ranks point-to-point calls name: the remote group on an intercommunicator.
    #[inline]
    pub fn peers(&self) -> &[i32] {
        self.remote.as_deref().unwrap_or(&self.group)
    }

    /// The context of collective traffic within the local group: an intercommunicator takes
    /// four contexts (`ctx`: point-to-point, `ctx + 1`: between the groups, `ctx + 3`: within
    /// each group), so its local steps never match a message from the other group.
    #[inline]
    pub fn local_coll_ctx(&self) -> u32 {
        if self.is_inter() {
            self.ctx + 3
        } else {
            self.ctx + 1
        }
    }

    /// World rank of point-to-point rank `r` (in the remote group of an intercommunicator),
    /// checked.
    #[inline]
    pub fn world_of(&self, r: i32) -> Result<usize> {
        match self.peers().get(r as usize) {
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
                    self.peers().len()
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
        remote: None,
        all_multiple: None,
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
        remote: None,
        all_multiple: None,
    };
    vec![Some(world), Some(me)]
}
