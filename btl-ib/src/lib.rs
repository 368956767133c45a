//! InfiniBand RDMA transport: a verbs interface ([`verbs`]) with a real provider (libibverbs via
//! rdma-sys) and a software one for machines without RDMA hardware, a registration cache
//! ([`rcache`]) fed by memhook, and the byte-transfer protocol over RC QPs.

pub mod rcache;
pub mod verbs;

/// Why the transport cannot be used in this build or on this machine.
pub fn unavailable_reason() -> &'static str {
    "btl-ib is not implemented yet in this build"
}
