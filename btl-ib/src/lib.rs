//! InfiniBand RDMA transport: a verbs interface ([`verbs`]) with a real provider (libibverbs via
//! rdma-sys) and a software one for machines without RDMA hardware, a registration cache
//! ([`rcache`]) fed by memhook, and the byte-transfer protocol over RC QPs ([`transport`]).

pub mod params;
pub mod rcache;
pub mod slab;
pub mod transport;
pub mod verbs;

pub use params::{BtlSelection, Params, PARAMS};
pub use transport::{FailClass, GetFailure, IbError, IbTransport};
