//! The `ib` transport: btl-ib's RC protocol over a verbs device (real, or the software
//! provider with `--mca btl_ib_device soft`). Failures on the wire end the job with the MPI
//! error class they map to, since the pair's QP is unusable afterwards (as in Open MPI).

use btl_ib::{FailClass, GetFailure, IbError, IbTransport};

use super::{Btl, GetError};
use crate::error::ErrorClass;

pub struct IbBtl {
    transport: IbTransport,
    rank: i32,
    verbose: bool,
}

/// The MPI error class a transport failure maps to.
pub fn class_of(c: FailClass) -> ErrorClass {
    match c {
        FailClass::PeerLost => ErrorClass::ProcAborted,
        FailClass::Access => ErrorClass::Other,
        FailClass::NoMem => ErrorClass::NoMem,
        FailClass::Internal => ErrorClass::Intern,
    }
}

impl IbBtl {
    pub fn new(transport: IbTransport, rank: i32, verbose: bool) -> IbBtl {
        IbBtl {
            transport,
            rank,
            verbose,
        }
    }

    #[cold]
    fn fatal(&self, e: IbError) -> ! {
        let class = class_of(e.class);
        if e.class == FailClass::PeerLost {
            // A lost peer is usually the consequence of its own failure: give it a moment to
            // report the cause (and the launcher to end the job) before reporting the effect.
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        let msg = format!("rank {}: {}: {}", self.rank, class.name(), e.message);
        super::fatal(class as i32, &msg)
    }
}

/// One line to stderr in one write, so that a kill cannot cut it in half.
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(line.as_bytes());
}

impl Btl for IbBtl {
    fn name(&self) -> &'static str {
        "ib"
    }

    fn max_frag(&self) -> usize {
        self.transport.max_frag()
    }

    fn try_send(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        match self.transport.try_send(peer, tag, hdr, data) {
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

    fn get(
        &mut self,
        peer: usize,
        remote: usize,
        key: u64,
        local: &mut [u8],
    ) -> Result<(), GetError> {
        match self.transport.get(peer, remote as u64, key, local) {
            Ok(()) => Ok(()),
            Err(GetFailure::Unsupported(why)) => Err(GetError::Unsupported(why)),
            Err(GetFailure::Failed(e)) => {
                say(&format!("rmpi: rank {}: {}\n", self.rank, e.message));
                Err(GetError::Failed {
                    class: class_of(e.class),
                })
            }
        }
    }

    fn write(
        &mut self,
        peer: usize,
        remote: usize,
        key: u64,
        local: &[u8],
    ) -> Result<(), GetError> {
        match self.transport.write(peer, remote as u64, key, local) {
            Ok(()) => Ok(()),
            Err(GetFailure::Unsupported(why)) => Err(GetError::Unsupported(why)),
            Err(GetFailure::Failed(e)) => {
                say(&format!("rmpi: rank {}: {}\n", self.rank, e.message));
                Err(GetError::Failed {
                    class: class_of(e.class),
                })
            }
        }
    }

    fn atomics(&self) -> bool {
        self.transport.atomics()
    }

    fn atomic(
        &mut self,
        peer: Option<usize>,
        remote: usize,
        key: u64,
        op: btl_ib::verbs::AtomicOp,
    ) -> Result<u64, GetError> {
        let r = match peer {
            Some(p) => self.transport.atomic(p, remote as u64, key, op),
            None => self.transport.atomic_local(remote, op),
        };
        r.map_err(|f| match f {
            GetFailure::Unsupported(why) => GetError::Unsupported(why),
            GetFailure::Failed(e) => {
                say(&format!("rmpi: rank {}: {}\n", self.rank, e.message));
                GetError::Failed {
                    class: class_of(e.class),
                }
            }
        })
    }

    fn expose(&mut self, peer: usize, addr: usize, len: usize) -> Option<u64> {
        self.transport.expose(peer, addr, len)
    }

    fn unexpose(&mut self, peer: usize, addr: usize, len: usize) {
        self.transport.unexpose(peer, addr, len)
    }

    fn flushed(&self) -> bool {
        self.transport.flushed()
    }
}

impl Drop for IbBtl {
    fn drop(&mut self) {
        if self.verbose {
            let c = self.transport.counters();
            eprintln!(
                "rmpi: rank {}: btl ib ({}): {} fragments sent, {} received ({} credit-only), \
                 {} RDMA reads, {} RDMA writes ({} bytes), {} atomics, {} unregistrable buffers",
                self.rank,
                self.transport.device_name(),
                c.sends,
                c.recvs,
                c.credit_frags,
                c.rdma_reads,
                c.rdma_writes,
                c.rdma_bytes,
                c.atomics,
                c.unpinnable
            );
            let cache = match self.transport.rcache_enabled() {
                Ok(()) => "on".to_string(),
                Err(why) => format!("off: {why}"),
            };
            eprintln!(
                "rmpi: rank {}: btl ib: registration cache {cache}; {}",
                self.rank,
                self.transport.rcache_stats()
            );
        }
    }
}
