//! rmpi's MPI library: a safe Rust API (`mpi::initialize`, `Communicator`, `scope`/`Request`)
//! and the MPI 5.0 standard-ABI C interface exported from `libmpi.so` (see `include/mpi.h`).
//!
//! Layers, after Open MPI's names: `pml` (matching and protocols) over `btl`s (`self`, `sm`),
//! started by `runtime` through `pmi`.

pub mod api;
mod btl;
pub mod capi;
mod comm;
pub mod datatype;
pub mod error;
mod memhook;
mod pmi;
mod pml;
mod runtime;

pub use api::comm::{Communicator, Source, Tag, PROC_NULL};
pub use api::datatype::Equivalence;
pub use api::request::{scope, wait_all, Request, Scope};
pub use api::status::Status;
pub use api::{initialize, Universe};
pub use error::{Error, ErrorClass, Result};

/// Library version, as MPI_Get_library_version reports it.
pub const LIBRARY_VERSION: &str = concat!("rmpi ", env!("CARGO_PKG_VERSION"));
