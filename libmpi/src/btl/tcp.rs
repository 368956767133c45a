//! The `tcp` transport: btl-tcp's framed connections. It has no single copy (`get` is
//! unsupported and nothing is exposed), so rendezvous data is streamed by the pml (RTS/CTS/
//! DATA), and read from the socket straight into the receive buffer (`enable_placement`). A
//! broken connection ends the job with the class it maps to, as ib does: the pair's stream has
//! lost bytes and cannot be resumed.

use btl_tcp::{Deliver, TcpError, TcpFail, TcpTransport};

use super::{Btl, GetError, Sink};
use crate::error::ErrorClass;

pub struct TcpBtl {
    transport: TcpTransport,
    rank: i32,
}

/// The MPI error class a transport failure maps to.
pub fn class_of(c: TcpFail) -> ErrorClass {
    match c {
        TcpFail::PeerLost => ErrorClass::ProcAborted,
        TcpFail::Internal => ErrorClass::Intern,
    }
}

impl TcpBtl {
    pub fn new(transport: TcpTransport, rank: i32) -> TcpBtl {
        TcpBtl { transport, rank }
    }

    #[cold]
    fn fatal(&self, e: TcpError) -> ! {
        let class = class_of(e.class);
        if e.class == TcpFail::PeerLost {
            // Usually the consequence of the peer's own failure: give it (and the launcher) a
            // moment to report the cause before reporting the effect, as ib does.
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        let msg = format!("rank {}: {}: {}", self.rank, class.name(), e.message);
        super::fatal(class as i32, &msg)
    }
}

impl Btl for TcpBtl {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn max_frag(&self) -> usize {
        self.transport.max_frag()
    }

    /// An eager message goes whole in one frame, so that it can be read into place.
    fn max_eager_frag(&self) -> usize {
        self.transport.max_frame()
    }

    /// A rendezvous costs a network round trip: tcp sends more eagerly than sm (which has
    /// single copy), as Open MPI's btl tcp does (64 KiB there, 128 KiB here).
    fn eager_limit(&self, _peer: usize) -> Option<usize> {
        Some(self.transport.eager_limit())
    }

    fn try_send(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        match self.transport.try_send(peer, tag, hdr, data, false) {
            Ok(sent) => sent,
            Err(e) => self.fatal(e),
        }
    }

    fn progress(&mut self, f: &mut dyn FnMut(usize, u8, &[u8])) -> usize {
        match self.transport.poll(f) {
            Ok(n) => n,
            Err(e) => self.fatal(e),
        }
    }

    fn enable_placement(&mut self, head: usize, min: usize) -> bool {
        if head == 0 || head > btl_tcp::MAX_PLACE_HEAD || min <= head {
            return false;
        }
        self.transport.set_placement(head, min);
        true
    }

    fn progress_into(&mut self, to: &mut dyn Sink) -> usize {
        match self.transport.poll_into(&mut ToSink(to)) {
            Ok(n) => n,
            Err(e) => self.fatal(e),
        }
    }

    fn get(
        &mut self,
        _peer: usize,
        _remote: usize,
        _key: u64,
        _local: &mut [u8],
    ) -> Result<(), GetError> {
        Err(GetError::Unsupported("tcp has no single copy".into()))
    }

    /// Nothing is readable from afar: the receiver has the data streamed.
    fn expose(&mut self, _peer: usize, _addr: usize, _len: usize) -> Option<u64> {
        None
    }

    fn flushed(&self) -> bool {
        self.transport.flushed()
    }

    fn coalesces(&self) -> bool {
        self.transport.coalesces()
    }

    fn try_send_batched(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        match self.transport.try_send(peer, tag, hdr, data, true) {
            Ok(sent) => sent,
            Err(e) => self.fatal(e),
        }
    }

    fn end_bursts(&mut self) {
        if let Err(e) = self.transport.end_bursts() {
            self.fatal(e)
        }
    }
}

/// The transport's deliveries to the pml's sink.
struct ToSink<'a>(&'a mut dyn Sink);

impl Deliver for ToSink<'_> {
    fn frame(&mut self, peer: usize, tag: u8, bytes: &[u8]) {
        self.0.frag(peer, tag, bytes)
    }

    fn place(&mut self, peer: usize, tag: u8, head: &[u8], rest: usize) -> Option<*mut u8> {
        self.0.place(peer, tag, head, rest)
    }

    fn placed(&mut self, peer: usize, tag: u8, head: &[u8], rest: usize) {
        self.0.placed(peer, tag, head, rest)
    }
}

impl Drop for TcpBtl {
    fn drop(&mut self) {
        if self.transport.verbose() {
            eprintln!(
                "rmpi: rank {}: btl tcp: {} fragments sent ({} batched with a burst), {} received ({} read into place)",
                self.rank,
                self.transport.sends,
                self.transport.batched,
                self.transport.recvs,
                self.transport.placed
            );
        }
    }
}
