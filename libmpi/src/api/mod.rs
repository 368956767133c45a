//! The safe Rust API, in the spirit of rsmpi.
//!
//! ```no_run
//! let universe = rmpi::initialize().unwrap();
//! let world = universe.world();
//! if world.rank() == 0 {
//!     world.send(&[1u32, 2, 3], 1, 0).unwrap();
//! } else if world.rank() == 1 {
//!     let mut buf = [0u32; 3];
//!     world.recv(&mut buf, 0, 0).unwrap();
//! }
//! ```

pub mod attr;
pub mod bsend;
pub mod coll;
pub mod coll_inter;
pub mod comm;
pub mod comm_mgmt;
pub mod completion;
pub mod datatype;
pub mod dpm;
pub mod env;
pub mod info;
pub mod inter;
pub mod message;
pub mod p2p;
pub mod p2p_more;
pub mod partitioned;
pub mod persistent;
pub mod persistent_coll;
pub mod request;
pub mod status;
pub mod topo;
pub mod usertype;
pub mod win;

use std::marker::PhantomData;

use crate::error::Result;
use crate::runtime;

/// MPI, initialised. Dropping it finalises MPI.
pub struct Universe {
    _not_send: PhantomData<*const ()>,
}

/// Thread support levels (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE), in increasing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Threading {
    Single,
    Funneled,
    Serialized,
    Multiple,
}

/// The level the Rust API provides below MULTIPLE. `Universe` and `Communicator` are neither
/// `Send` nor `Sync`, so only the initialising thread can reach them: FUNNELED. (SERIALIZED
/// would give nothing more without a shareable handle.)
const PROVIDED: Threading = Threading::Funneled;

/// Initialise MPI asking for a thread level (MPI_Init_thread); returns the level provided:
/// `Threading::Multiple` when asked for (then `Communicator::shared` gives handles that
/// threads may share, every call safe from any thread at once), else at most
/// `Threading::Funneled`.
pub fn initialize_with_threading(required: Threading) -> Result<(Universe, Threading)> {
    if required == Threading::Multiple {
        runtime::init(runtime::Level::Multiple)?;
        return Ok((
            Universe {
                _not_send: PhantomData,
            },
            Threading::Multiple,
        ));
    }
    Ok((initialize()?, required.min(PROVIDED)))
}

/// Initialise MPI (MPI_Init). Fails if MPI was already initialised in this process.
pub fn initialize() -> Result<Universe> {
    runtime::init(runtime::Level::Funneled)?;
    Ok(Universe {
        _not_send: PhantomData,
    })
}

impl Universe {
    /// The thread level provided (MPI_Query_thread).
    pub fn threading(&self) -> Threading {
        if runtime::is_multiple() {
            Threading::Multiple
        } else {
            PROVIDED
        }
    }

    pub fn world(&self) -> comm::Communicator {
        comm::world()
    }

    /// MPI_COMM_SELF: this process alone.
    pub fn self_comm(&self) -> comm::Communicator {
        comm::self_comm()
    }

    /// Seconds since an arbitrary point in the past (MPI_Wtime).
    pub fn wtime(&self) -> f64 {
        runtime::with(|rt| Ok(rt.wtime())).unwrap_or(0.0)
    }

    pub fn processor_name(&self) -> String {
        runtime::with(|rt| Ok(rt.processor_name.clone())).unwrap_or_default()
    }

    /// Finalise explicitly, seeing any error (dropping does the same and ignores errors).
    pub fn finalize(self) -> Result<()> {
        std::mem::forget(self);
        crate::comm_ops::delete_self_attrs_at_finalize();
        runtime::finalize()
    }
}

impl Drop for Universe {
    fn drop(&mut self) {
        crate::comm_ops::delete_self_attrs_at_finalize();
        if let Err(e) = runtime::finalize() {
            eprintln!("rmpi: MPI_Finalize: {e}");
        }
    }
}
