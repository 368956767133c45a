//! MPI_Comm_idup without blocking: the new communicator's context id is chosen by one process
//! alone and broadcast by a collective schedule, so the call returns at once and any number of
//! idups may be pending, in any order across communicators (MPICH's comm_idup_overlap).
//!
//! The blocking creations agree on the maximum of the members' next free ids, which needs every
//! member's answer before anything is decided. Here the chooser takes an id from a space of its
//! own instead: `HIGH | world rank << COUNTER_BITS | counter`, its counter stepping by 4 (an
//! intercommunicator's four contexts). No other process ever takes that id, and the blocking
//! scheme's ids stay far below HIGH, so no agreement is needed. The chooser is rank 0 of the
//! parent (of an intercommunicator: the leader with the lower world rank); the id reaches the
//! others through the schedule, into a cell the runtime reads when the next MPI call ends
//! (`resolve_idups`): a program may use the communicator only after completing the request,
//! which takes an MPI call.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::coll::{self, algos, At, Buf, Builder};
use crate::error::Result;
use crate::pml::ReqId;
use crate::runtime::Runtime;

const HIGH: u32 = 1 << 31;

/// Whether `ctx` is of some process's own space (not from the agreed ids).
pub(crate) fn is_own(ctx: u32) -> bool {
    ctx & HIGH != 0
}
const COUNTER_BITS: u32 = 18;
/// The context of a communicator whose id has not arrived yet (never used by a correct
/// program: it must complete the idup first).
const UNRESOLVED: u32 = u32::MAX - 3;

/// A pending idup: the new communicator's slot, the cell its context id arrives in, and the
/// broadcast's request.
pub struct Pending {
    slot: usize,
    cell: Box<AtomicU32>,
    req: ReqId,
}

/// This process's own context ids (see the module comment).
#[derive(Default)]
pub struct Own {
    counter: u32,
    pending: Vec<Pending>,
    /// Cells of resolved idups whose broadcast may still read them (an eager send queued
    /// behind others keeps a pointer), each with that broadcast's request: dropped once it is
    /// over. A request id reused meanwhile only keeps a cell a little longer.
    retired: Vec<(ReqId, Box<AtomicU32>)>,
}

impl Own {
    #[inline]
    pub fn any_pending(&self) -> bool {
        !self.pending.is_empty() || !self.retired.is_empty()
    }
}

impl Runtime {
    /// The next id of this process's own space; None when it is exhausted (or the world too
    /// large to encode).
    fn own_ctx(&mut self) -> Option<u32> {
        self.own_ctx_block(1)
    }

    /// `k` consecutive ids of this process's own space (the first; the others step by 4), for
    /// communicator creation without agreement (`comm_ops::split_outside`).
    pub(crate) fn own_ctx_block(&mut self, k: u32) -> Option<u32> {
        let world = self.comm(crate::comm::WORLD).ok()?.rank as u32;
        let c = self.idups.counter;
        if world >= 1 << (31 - COUNTER_BITS) || c + 4 * k > 1 << COUNTER_BITS {
            return None;
        }
        self.idups.counter += 4 * k;
        Some(HIGH | world << COUNTER_BITS | c)
    }

    /// Start MPI_Comm_idup's bare duplicate (attributes are the caller's): the new slot and
    /// the request that completes when its context id is known everywhere.
    pub(crate) fn idup_bare(
        &mut self,
        parent: usize,
        space: coll::Space,
    ) -> Result<(usize, ReqId)> {
        let p = self.comm(parent)?;
        let me_world = p.group[p.rank as usize];
        let chooser = match &p.remote {
            None => p.rank == 0,
            Some(r) => p.rank == 0 && me_world < r[0],
        };
        // A chooser that ran out cannot tell the others in time, so its space is large
        // (2^16 idups) and running out is an error rather than a fallback.
        let ctx = if chooser {
            match self.own_ctx() {
                Some(c) => c,
                None => {
                    return crate::error::err(
                        crate::error::ErrorClass::Intern,
                        "MPI_Comm_idup: this process has no context ids of its own left",
                    )
                }
            }
        } else {
            0
        };
        let cell = Box::new(AtomicU32::new(ctx));
        let at = At(Buf::User(cell.as_ptr().cast()), 0);
        let p = self.comm(parent)?;
        let s = {
            let mut b = Builder::new(p, None);
            if p.is_inter() {
                // The leaders pass the id across, then each group broadcasts it.
                if p.rank == 0 {
                    if chooser {
                        b.xsend(at, 4, 0, false);
                    } else {
                        b.xrecv(at, 4, 0, false);
                    }
                }
                b.round();
            }
            algos::bcast(&mut b, at, 4, 0);
            b.finish()
        };
        let mut c = self.child(parent, UNRESOLVED, p.group.clone(), p.rank)?;
        c.remote = p.remote.clone();
        c.topo = p.topo.clone();
        let slot = self.add_comm(c);
        let id = coll::start_in(&mut self.pml, s, space);
        self.idups.pending.push(Pending {
            slot,
            cell,
            req: id,
        });
        Ok((slot, id))
    }

    /// Give every pending idup whose id has arrived its context (called as MPI calls end).
    /// Its cell lives on until the broadcast is over (complete, or retired by its wait): the
    /// chooser's cell holds the id from the start, and a send of the broadcast may still read
    /// any member's cell.
    pub(crate) fn resolve_idups(&mut self) {
        let pml = &self.pml;
        let over = |req: ReqId| !pml.is_valid(req) || pml.is_complete(req);
        self.idups.retired.retain(|(req, _)| !over(*req));
        let mut i = 0;
        while i < self.idups.pending.len() {
            let v = self.idups.pending[i].cell.load(Ordering::Relaxed);
            if v & HIGH != 0 {
                let p = self.idups.pending.swap_remove(i);
                if let Some(Some(c)) = self.comms.get_mut(p.slot) {
                    c.ctx = v;
                }
                if !over(p.req) {
                    self.idups.retired.push((p.req, p.cell));
                }
            } else {
                i += 1;
            }
        }
    }
}
