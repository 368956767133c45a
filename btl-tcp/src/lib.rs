//! The TCP transport (Open MPI's btl_tcp): fragments `(tag, bytes)` between processes over one
//! TCP connection per peer pair, opened lazily on the first send, driven by polling (epoll) from
//! the caller's progress loop; sockets are non-blocking, so a send never blocks.
//!
//! Wire: each connection starts with a hello from its initiator ([`handshake`]); then both
//! directions carry frames `[len: u32 LE][tag: u8][len bytes]` ([`frame`]).

mod conn;
mod epoll;
pub mod frame;
pub mod handshake;
pub mod iface;
pub mod params;
mod sock;
mod transport;

pub use params::{ParamInfo, Params, PARAMS};
pub use transport::{random_cookie, Deliver, TcpError, TcpFail, TcpTransport, MAX_PLACE_HEAD};
