//! Persistent collectives in the Rust API (MPI-4 MPI_Barrier_init, MPI_Bcast_init,
//! MPI_Reduce_init, MPI_Allreduce_init, MPI_Gather_init, MPI_Scatter_init,
//! MPI_Allgather_init, MPI_Alltoall_init, MPI_Reduce_scatter_block_init): the init call checks
//! the arguments and builds the schedule once (`persist::coll_init`, shared with the C
//! interface); every `start` (MPI_Start) runs it again on the same buffers. Init calls are
//! collective and match across ranks in the order they are made, whatever order the starts
//! come in. On an intercommunicator the plans are `coll_inter`'s (MPI's rules for roots and
//! remote-group-sized buffers).
//!
//! The request holds its buffers' exclusive borrows for the scope and lends them back
//! (`send_buffer`, `recv_buffer`) only between runs; a run still active when the request is
//! dropped (or leaked) is completed by the drop (or by its scope), then the request is freed.
//!
//! ```no_run
//! use rmpi::Op;
//! let universe = rmpi::initialize().unwrap();
//! let world = universe.world();
//! let (mut send, mut recv) = ([0i64; 3], [0i64; 3]);
//! rmpi::scope(|s| {
//!     let mut sum = world.all_reduce_init(s, &mut send, &mut recv, Op::Sum).unwrap();
//!     for round in 0..10 {
//!         sum.send_buffer().unwrap().fill(round);
//!         sum.start().unwrap();
//!         sum.wait().unwrap();
//!         let total = sum.recv_buffer().unwrap()[0];
//!         assert_eq!(total, round * world.size() as i64);
//!     }
//! });
//! ```

use std::cell::RefCell;
use std::marker::PhantomData;

use super::coll::{check_root, equal_blocks, lower, same_len, uniform, Operation, Plan, Span};
use super::coll_inter;
use super::comm::Communicator;
use super::datatype::Equivalence;
use super::persistent::{idle, release, running, start, test, wait};
use super::request::Scope;
use crate::coll::algos;
use crate::error::Result;
use crate::pml::ReqId;
use crate::runtime;

/// A persistent collective on buffers of `T` (none for a barrier), from one of the
/// Communicator's `*_init` methods.
pub struct PersistentCollective<'scope, T = ()> {
    id: ReqId,
    send: Span<T>,
    recv: Span<T>,
    pending: &'scope RefCell<Vec<ReqId>>,
    _bufs: PhantomData<&'scope mut [T]>,
}

impl<T> PersistentCollective<'_, T> {
    /// Start a run (MPI_Start). Fails if one is already active.
    pub fn start(&mut self) -> Result<()> {
        start(self.id)
    }

    /// Wait for the active run (MPI_Wait); at once if none is active.
    pub fn wait(&mut self) -> Result<()> {
        wait(self.id).map(|_| ())
    }

    /// Whether the run has completed (MPI_Test); true when none is active.
    pub fn test(&mut self) -> Result<bool> {
        test(self.id).map(|s| s.is_some())
    }

    /// Whether a run is active (started and not yet completed by `wait` or `test`).
    pub fn is_active(&self) -> bool {
        running(self.id)
    }

    /// The send buffer (for a broadcast: the buffer), to fill between runs; MPI_ERR_REQUEST
    /// while a run is active.
    pub fn send_buffer(&mut self) -> Result<&mut [T]> {
        idle(self.id)?;
        // SAFETY: the request holds the exclusive borrow of this buffer for 'scope; no run is
        // active, so the library does not touch it until the next `start`, which takes
        // `&mut self` and so ends this borrow first.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.send.ptr, self.send.len) })
    }

    /// The receive buffer (for a broadcast: the buffer), to read between runs;
    /// MPI_ERR_REQUEST while a run is active.
    pub fn recv_buffer(&mut self) -> Result<&mut [T]> {
        idle(self.id)?;
        // SAFETY: as in `send_buffer`.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.recv.ptr, self.recv.len) })
    }
}

impl<T> Drop for PersistentCollective<'_, T> {
    fn drop(&mut self) {
        release(self.pending, self.id);
    }
}

impl Communicator {
    /// Build the plan into an inactive persistent request holding `send` and `recv`.
    fn coll_init<'scope, T>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        plan: Plan,
        send: Span<T>,
        recv: Span<T>,
    ) -> Result<PersistentCollective<'scope, T>> {
        let Plan { red, build } = plan;
        let id = runtime::with(|rt| crate::persist::coll_init(rt, self.id, red, build))?;
        Ok(PersistentCollective {
            id,
            send,
            recv,
            pending: scope.track(id),
            _bufs: PhantomData,
        })
    }

    /// MPI_Barrier_init.
    pub fn barrier_init<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
    ) -> Result<PersistentCollective<'scope>> {
        let plan = if self.is_inter() {
            coll_inter::barrier()
        } else {
            Plan::new(None, |b| {
                algos::barrier(b);
                Ok(())
            })
        };
        let none = Span::of_mut(&mut []);
        self.coll_init(scope, plan, none, none)
    }

    /// MPI_Bcast_init: broadcast `buf` from `root` (on an intercommunicator: `rmpi::ROOT`,
    /// `rmpi::PROC_NULL` or the root's rank in the remote group).
    pub fn broadcast_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        root: i32,
    ) -> Result<PersistentCollective<'scope, T>> {
        let bp = Span::of_mut(buf);
        let plan = if self.is_inter() {
            coll_inter::broadcast(self, bp, root)?
        } else {
            check_root(self.size(), root)?;
            let (at, len) = (bp.at(), bp.bytes());
            Plan::new(None, move |b| {
                algos::bcast(b, at, len, root);
                Ok(())
            })
        };
        self.coll_init(scope, plan, bp, bp)
    }

    /// MPI_Reduce_init: reduce every rank's `send` into `recv` at `root`.
    pub fn reduce_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope mut [T],
        recv: &'scope mut [T],
        op: impl Into<Operation<'scope, T>>,
        root: i32,
    ) -> Result<PersistentCollective<'scope, T>> {
        let (sp, rp) = (Span::of_mut(send), Span::of_mut(recv));
        let inter = self.is_inter();
        if !inter {
            check_root(self.size(), root)?;
            if self.rank() == root {
                same_len("reduce_init", sp.len, rp.len)?;
            }
        }
        // SAFETY: the request (freed by its drop or, leaked, by its scope) holds the op, and
        // both end within 'scope.
        let red = unsafe { lower(op.into())? };
        let plan = if inter {
            coll_inter::reduce(self, sp, rp, red, root)?
        } else {
            let (s, r, c) = (sp.at(), rp.at(), sp.len);
            Plan::new(Some(red), move |b| {
                algos::reduce(b, Some(s), r, c, root);
                Ok(())
            })
        };
        self.coll_init(scope, plan, sp, rp)
    }

    /// MPI_Allreduce_init: reduce everyone's `send` into every rank's `recv` (on an
    /// intercommunicator: the other group's).
    pub fn all_reduce_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope mut [T],
        recv: &'scope mut [T],
        op: impl Into<Operation<'scope, T>>,
    ) -> Result<PersistentCollective<'scope, T>> {
        let (sp, rp) = (Span::of_mut(send), Span::of_mut(recv));
        same_len("all_reduce_init", sp.len, rp.len)?;
        // SAFETY: as in `reduce_init`.
        let red = unsafe { lower(op.into())? };
        let plan = if self.is_inter() {
            coll_inter::all_reduce(sp, rp, red)?
        } else {
            let (s, r, c) = (sp.at(), rp.at(), sp.len);
            Plan::new(Some(red), move |b| {
                algos::allreduce(b, Some(s), r, c);
                Ok(())
            })
        };
        self.coll_init(scope, plan, sp, rp)
    }

    /// MPI_Reduce_scatter_block_init: reduce `send` (size × `rp.len` elements) and give
    /// block i of the result to rank i (on an intercommunicator: of the other group's).
    pub fn reduce_scatter_block_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope mut [T],
        recv: &'scope mut [T],
        op: impl Into<Operation<'scope, T>>,
    ) -> Result<PersistentCollective<'scope, T>> {
        let (sp, rp) = (Span::of_mut(send), Span::of_mut(recv));
        let n = self.size() as usize;
        same_len("reduce_scatter_block_init", sp.len, rp.len * n)?;
        // SAFETY: as in `reduce_init`.
        let red = unsafe { lower(op.into())? };
        let counts = vec![rp.len; n];
        let plan = if self.is_inter() {
            coll_inter::reduce_scatter(sp, rp, counts, red)?
        } else {
            let (s, r) = (sp.at(), rp.at());
            Plan::new(Some(red), move |b| {
                algos::reduce_scatter(b, Some(s), r, &counts);
                Ok(())
            })
        };
        self.coll_init(scope, plan, sp, rp)
    }

    /// MPI_Gather_init: every rank's `send` into the root's `recv`, in rank order.
    pub fn gather_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope mut [T],
        recv: &'scope mut [T],
        root: i32,
    ) -> Result<PersistentCollective<'scope, T>> {
        let (sp, rp) = (Span::of_mut(send), Span::of_mut(recv));
        let plan = if self.is_inter() {
            coll_inter::gather(self, sp, rp, None, root)?
        } else {
            let n = self.size();
            check_root(n, root)?;
            if self.rank() == root {
                same_len("gather_init", sp.len * n as usize, rp.len)?;
            }
            let (l, d) = uniform(n, sp.bytes());
            let (s, sl, r) = (sp.at(), sp.bytes(), rp.at());
            Plan::new(None, move |b| {
                algos::gatherv(b, Some((s, sl)), r, &l, &d, root);
                Ok(())
            })
        };
        self.coll_init(scope, plan, sp, rp)
    }

    /// MPI_Scatter_init: block i of the root's `send` to rank i's `recv`.
    pub fn scatter_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope mut [T],
        recv: &'scope mut [T],
        root: i32,
    ) -> Result<PersistentCollective<'scope, T>> {
        let (sp, rp) = (Span::of_mut(send), Span::of_mut(recv));
        let plan = if self.is_inter() {
            coll_inter::scatter(self, sp, None, rp, root)?
        } else {
            let n = self.size();
            check_root(n, root)?;
            if self.rank() == root {
                same_len("scatter_init", sp.len, rp.len * n as usize)?;
            }
            let (l, d) = uniform(n, rp.bytes());
            let (s, r, rl) = (sp.at(), rp.at(), rp.bytes());
            Plan::new(None, move |b| {
                algos::scatterv(b, s, &l, &d, Some((r, rl)), root);
                Ok(())
            })
        };
        self.coll_init(scope, plan, sp, rp)
    }

    /// MPI_Allgather_init: every rank's `send`, in rank order, into every rank's `recv` (on
    /// an intercommunicator: the remote group's blocks).
    pub fn all_gather_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope mut [T],
        recv: &'scope mut [T],
    ) -> Result<PersistentCollective<'scope, T>> {
        let (sp, rp) = (Span::of_mut(send), Span::of_mut(recv));
        let plan = if self.is_inter() {
            coll_inter::all_gather(self, sp, rp, None)?
        } else {
            let n = self.size();
            same_len("all_gather_init", sp.len * n as usize, rp.len)?;
            let (l, d) = uniform(n, sp.bytes());
            let (s, sl, r) = (sp.at(), sp.bytes(), rp.at());
            Plan::new(None, move |b| {
                algos::allgatherv(b, Some((s, sl)), r, &l, &d);
                Ok(())
            })
        };
        self.coll_init(scope, plan, sp, rp)
    }

    /// MPI_Alltoall_init: block i of `send` to rank i, block j of `recv` from rank j.
    pub fn all_to_all_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope mut [T],
        recv: &'scope mut [T],
    ) -> Result<PersistentCollective<'scope, T>> {
        let (sp, rp) = (Span::of_mut(send), Span::of_mut(recv));
        let plan = if self.is_inter() {
            coll_inter::all_to_all(self, sp, rp, None)?
        } else {
            let n = self.size();
            same_len("all_to_all_init", sp.len, rp.len)?;
            let block = equal_blocks("all_to_all_init", sp.len, n)?;
            let (l, d) = uniform(n, block * std::mem::size_of::<T>());
            let (s, r) = (sp.at(), rp.at());
            Plan::new(None, move |b| {
                algos::alltoallw(b, Some(s), &l, &d, r, &l, &d);
                Ok(())
            })
        };
        self.coll_init(scope, plan, sp, rp)
    }
}
