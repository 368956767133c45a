//! rmpi's MPI library: a safe Rust API (`rmpi::initialize`, `Communicator`, `scope`/`Request`)
//! and the MPI 5.0 standard-ABI C interface, which `libmpi/abi` links as `libmpi_abi.so.1` (see
//! `include/mpi.h`).
//!
//! Layers, after Open MPI's names: `pml` (matching and protocols) over `btl`s (`self`, `sm`),
//! started by `runtime` through `pmi`.

pub mod api;
mod async_progress;
mod btl;
pub mod capi;
mod coll;
mod comm;
mod comm_agree;
mod comm_idup;
mod comm_inter;
mod comm_ops;
pub mod datatype;
pub(crate) mod dpm;
mod errhandler;
pub mod error;
mod foreign_launcher;
mod group;
mod handle_epoch;
mod info;
mod inter_agree;
mod io;
mod launcher_watch;
mod locality;
mod mca_general;
mod memhook;
mod op;
mod osc;
mod p2p;
mod partitioned;
mod persist;
mod pmi;
mod pml;
mod registry;
mod runtime;
mod topo;
mod xmem;

pub use api::attr::Keyval;
pub use api::bsend::{attach_buffer, AttachedBuffer, BSEND_OVERHEAD};
pub use api::coll::reduce_local;
pub use api::coll::{Op, Operation, UserOp, WBlock};
pub use api::coll_inter::ROOT;
pub use api::comm::{Communicator, SharedCommunicator, Source, Tag, PROC_NULL};
pub use api::comm_mgmt::{Comparison, ErrorHandler, Group, UserCommunicator};
pub use api::completion::{test_all, wait_any, wait_some};
pub use api::datatype::Equivalence;
pub use api::dpm::{close_port, open_port};
pub use api::env::{abi_version, is_thread_main, version, wtick};
pub use api::info::{env_info, Info};
pub use api::message::Message;
pub use api::p2p_more::{start_all, test_any, test_some};
pub use api::partitioned::{PartitionedRecv, PartitionedSend};
pub use api::persistent::Persistent;
pub use api::persistent_coll::PersistentCollective;
pub use api::request::{scope, wait_all, Request, Scope};
pub use api::status::Status;
pub use api::topo::{dims_create, CartInfo, DistGraphNeighbors, TopologyKind};
pub use api::usertype::{Order, UserDatatype, View, ViewMut};
pub use api::win::{LockType, Window};
pub use api::{initialize, initialize_with_threading, Threading, Universe};
pub use error::{Error, ErrorClass, Result};

/// The library's name and version.
pub const LIBRARY_VERSION: &str = concat!("rmpi ", env!("CARGO_PKG_VERSION"));

/// What MPI_Get_library_version reports: name, version, the standard and ABI it implements,
/// and what this build was made with (memhook provider, RDMA verbs provider), so that a
/// user's bug report says which build it came from.
pub fn library_version() -> String {
    let verbs = if cfg!(feature = "verbs") {
        "libibverbs and software verbs providers"
    } else {
        "software verbs provider only (built without libibverbs)"
    };
    format!(
        "{LIBRARY_VERSION} (MPI 5.0, standard ABI 1.0, libmpi_abi.so.1); memhook provider {}; btl self, sm, ib ({verbs})",
        memory_manager::PROVIDER
    )
}
