//! Shared-memory transport: one segment per node holding either an SPSC channel per ordered pair
//! of local ranks (the fast boxes, while n is small) or a lock-free MPSC FIFO per receiver plus an
//! eager-fragment pool per sender (O(n)), and CMA (`process_vm_readv`) single copy. See
//! docs/DESIGN.md for the layout; `model` prints what it costs.
//!
//! API CONTRACT (used by mpirun and libmpi; keep these signatures):
//! - `Params::resolve(n_local, &lookup)` / `Params::from_env(n_local)`
//! - `segment_size(&Params) -> usize` (the one sizing function launcher and ranks share)
//! - `Segment::{create_memfd, attach_fd, create_named, open_named, unlink_named}`
//! - `SmTransport::{new, me, n, peer_pid, max_frag, try_send, poll}`
//! - `cma::{read, allow_ptrace_from_any}`
//!
//! Modules: `params` (tunables), `layout` (where everything lives in the segment), `segment`
//! (creating and mapping it), `channel` (one SPSC ring pair), `fifo` (MPSC queue + fragment
//! pools), `model` (memory model), `transport` (a rank's channels), `probe` (how far each
//! local peer is, measured at MPI_Init),
//! `cma` (single copy), `xmem` (single copy by memcpy from a peer's memfd-backed source).

mod channel;
pub mod cma;
pub mod doorbell;
mod fifo;
mod layout;
pub mod model;
mod params;
pub mod probe;
mod segment;
mod transport;
pub mod xmem;

pub use channel::{CELL as CHANNEL_CELL, INLINE_MAX};
pub use fifo::FIFO_INLINE;
pub use layout::{Breakdown, Layout};
pub use params::{
    machine_line, EagerLimits, Mode, ParamError, ParamInfo, Params, SingleCopy, PARAMS,
};
pub use segment::{segment_size, Segment, SmError};
pub use transport::{SmTransport, MAX_FRAG_CAP, POLL_BUDGET};
