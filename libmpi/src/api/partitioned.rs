//! Partitioned communication in the Rust API (MPI-4 MPI_Psend_init, MPI_Precv_init,
//! MPI_Pready, MPI_Pready_range, MPI_Pready_list, MPI_Parrived) over the runtime's
//! `partitioned` protocol. A partitioned send and receive are persistent requests: each run
//! begins with `start` (MPI_Start) and ends with `wait` or `test`. Within a run the sender fills
//! partitions and marks them ready one by one; the receiver may read each partition as soon as
//! `parrived` says it is there. The two sides may cut the same message into different numbers
//! of partitions.
//!
//! The request holds its buffer's exclusive borrow for the scope. The sender gets partition k
//! back (`partition_mut`) while it is not yet ready in the active run, the receiver partition k
//! (`partition`) once it has arrived, and both the whole buffer (`buffer`) between runs.
//!
//! ```no_run
//! let universe = rmpi::initialize().unwrap();
//! let world = universe.world();
//! let mut buf = [0u32; 8];
//! rmpi::scope(|s| {
//!     if world.rank() == 0 {
//!         let mut p = world.psend_init(s, &mut buf, 4, 1, 0).unwrap();
//!         p.start().unwrap();
//!         for k in 0..4 {
//!             p.partition_mut(k).unwrap().fill(k as u32);
//!             p.pready(k).unwrap();
//!         }
//!         p.wait().unwrap();
//!     } else if world.rank() == 1 {
//!         let mut p = world.precv_init(s, &mut buf, 2, 0, 0).unwrap();
//!         p.start().unwrap();
//!         while !p.parrived(0).unwrap() {}
//!         assert_eq!(p.partition(0).unwrap(), &[0, 0, 1, 1]);
//!         p.wait().unwrap();
//!     }
//! });
//! ```

use std::cell::RefCell;
use std::marker::PhantomData;

use super::coll::Span;
use super::comm::Communicator;
use super::datatype::Equivalence;
use super::persistent::{idle, release, running, start, test, wait};
use super::request::Scope;
use crate::error::{Error, ErrorClass, Result};
use crate::pml::ReqId;
use crate::runtime;

/// The state both sides share: the request, its buffer and its partitions.
struct Part<'scope, T> {
    id: ReqId,
    buf: Span<T>,
    parts: usize,
    pending: &'scope RefCell<Vec<ReqId>>,
    _buf: PhantomData<&'scope mut [T]>,
}

impl<T> Part<'_, T> {
    /// Elements per partition.
    fn per(&self) -> usize {
        self.buf.len / self.parts
    }

    fn check(&self, k: usize) -> Result<()> {
        if k >= self.parts {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("partition {k} out of range ({} partitions)", self.parts),
            ));
        }
        Ok(())
    }

    /// Partition k, which the library is not writing.
    ///
    /// # Safety
    /// The library must not write partition k while the slice lives.
    unsafe fn slice(&self, k: usize) -> &[T] {
        let per = self.per();
        // SAFETY: partition k lies inside the buffer this request borrows exclusively for
        // 'scope; the caller guarantees the library leaves it alone meanwhile.
        unsafe { std::slice::from_raw_parts(self.buf.ptr.add(k * per), per) }
    }

    /// Partition k, which the library is not using.
    ///
    /// # Safety
    /// The library must not touch partition k while the slice lives.
    unsafe fn slice_mut(&mut self, k: usize) -> &mut [T] {
        let per = self.per();
        // SAFETY: as in `slice`; `&mut self` keeps this the only borrow through the request.
        unsafe { std::slice::from_raw_parts_mut(self.buf.ptr.add(k * per), per) }
    }

    fn buffer(&mut self) -> Result<&mut [T]> {
        idle(self.id)?;
        // SAFETY: no run is active, so the library does not touch the buffer until the next
        // `start`, which takes `&mut self` and so ends this borrow first.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.buf.ptr, self.buf.len) })
    }
}

impl Communicator {
    /// The buffer in `parts` equal partitions: (span, bytes per partition).
    fn partitions<T: Equivalence>(buf: &mut [T], parts: usize) -> Result<(Span<T>, usize)> {
        if buf.len().checked_rem(parts) != Some(0) {
            return Err(Error::new(
                ErrorClass::Count,
                format!(
                    "{} elements do not split into {parts} equal partitions",
                    buf.len()
                ),
            ));
        }
        let span = Span::of_mut(buf);
        Ok((span, span.bytes() / parts))
    }

    /// MPI_Psend_init: a partitioned send of `buf`, cut into `partitions` equal partitions, to
    /// rank `dest` (`PROC_NULL`: nothing is sent) under `tag`.
    pub fn psend_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        partitions: usize,
        dest: i32,
        tag: i32,
    ) -> Result<PartitionedSend<'scope, T>> {
        let (span, bytes) = Self::partitions(buf, partitions)?;
        let id = runtime::with(|rt| {
            rt.psend_init(
                self.id,
                span.ptr.cast(),
                None,
                partitions as i64,
                bytes,
                dest,
                tag,
            )
        })?;
        Ok(PartitionedSend {
            p: Part {
                id,
                buf: span,
                parts: partitions,
                pending: scope.track(id),
                _buf: PhantomData,
            },
            ready: vec![false; partitions],
        })
    }

    /// MPI_Precv_init: a partitioned receive into `buf`, cut into `partitions` equal
    /// partitions, from rank `source` (not a wildcard; `PROC_NULL`: nothing arrives) under
    /// `tag`.
    pub fn precv_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        partitions: usize,
        source: i32,
        tag: i32,
    ) -> Result<PartitionedRecv<'scope, T>> {
        let (span, bytes) = Self::partitions(buf, partitions)?;
        let id = runtime::with(|rt| {
            rt.precv_init(
                self.id,
                span.ptr.cast(),
                None,
                partitions as i64,
                bytes,
                source,
                tag,
            )
        })?;
        Ok(PartitionedRecv {
            p: Part {
                id,
                buf: span,
                parts: partitions,
                pending: scope.track(id),
                _buf: PhantomData,
            },
        })
    }
}

/// A partitioned send (MPI_Psend_init).
pub struct PartitionedSend<'scope, T> {
    p: Part<'scope, T>,
    /// The partitions marked ready in the active run.
    ready: Vec<bool>,
}

impl<T> PartitionedSend<'_, T> {
    /// Start a run (MPI_Start): no partition is ready yet.
    pub fn start(&mut self) -> Result<()> {
        start(self.p.id)?;
        self.ready.fill(false);
        Ok(())
    }

    /// Mark partition k ready (MPI_Pready): the library may send it from now on.
    pub fn pready(&mut self, k: usize) -> Result<()> {
        self.pready_list(&[k])
    }

    /// Mark partitions `low..=high` ready (MPI_Pready_range).
    pub fn pready_range(&mut self, low: usize, high: usize) -> Result<()> {
        let ks: Vec<usize> = (low..=high).collect();
        self.pready_list(&ks)
    }

    /// Mark the listed partitions ready (MPI_Pready_list).
    pub fn pready_list(&mut self, ks: &[usize]) -> Result<()> {
        for &k in ks {
            self.p.check(k)?;
        }
        let (id, ready) = (self.p.id, &mut self.ready);
        runtime::with(|rt| {
            for &k in ks {
                // Marked first: from here on the library may read it.
                ready[k] = true;
                rt.pready(id, [k as i64])?;
            }
            Ok(())
        })
    }

    /// Partition k to fill: between runs, or in the active run while it is not yet ready.
    pub fn partition_mut(&mut self, k: usize) -> Result<&mut [T]> {
        self.p.check(k)?;
        if running(self.p.id) && self.ready[k] {
            return Err(Error::new(
                ErrorClass::Request,
                format!("partition {k} is ready: the library owns it until the run completes"),
            ));
        }
        // SAFETY: the library reads a send partition only once it is marked ready, and marking
        // it (`pready*`) or starting a run takes `&mut self`, ending this borrow first.
        Ok(unsafe { self.p.slice_mut(k) })
    }

    /// The whole buffer, between runs.
    pub fn buffer(&mut self) -> Result<&mut [T]> {
        self.p.buffer()
    }

    /// Wait for the active run (MPI_Wait): every partition must have been marked ready.
    pub fn wait(&mut self) -> Result<()> {
        wait(self.p.id).map(|_| ())
    }

    /// Whether the run has completed (MPI_Test); true when none is active.
    pub fn test(&mut self) -> Result<bool> {
        test(self.p.id).map(|s| s.is_some())
    }

    pub fn partitions(&self) -> usize {
        self.p.parts
    }
}

impl<T> Drop for PartitionedSend<'_, T> {
    /// An active run is finished first: its partitions not yet ready are marked ready (so
    /// that the wait can end), then it is waited for and the request freed.
    fn drop(&mut self) {
        if running(self.p.id) {
            let left: Vec<i64> = (0..self.p.parts)
                .filter(|&k| !self.ready[k])
                .map(|k| k as i64)
                .collect();
            let id = self.p.id;
            let _ = runtime::with(|rt| rt.pready(id, left));
        }
        release(self.p.pending, self.p.id);
    }
}

/// A partitioned receive (MPI_Precv_init).
pub struct PartitionedRecv<'scope, T> {
    p: Part<'scope, T>,
}

impl<T> PartitionedRecv<'_, T> {
    /// Start a run (MPI_Start).
    pub fn start(&mut self) -> Result<()> {
        start(self.p.id)
    }

    /// Whether partition k has arrived in the active run (MPI_Parrived; true between runs).
    pub fn parrived(&self, k: usize) -> Result<bool> {
        self.p.check(k)?;
        let id = self.p.id;
        runtime::with(|rt| rt.parrived(id, k as i64))
    }

    /// Partition k, once it has arrived (MPI_ERR_REQUEST before).
    pub fn partition(&self, k: usize) -> Result<&[T]> {
        if !self.parrived(k)? {
            return Err(Error::new(
                ErrorClass::Request,
                format!("partition {k} has not arrived"),
            ));
        }
        // SAFETY: an arrived partition is not written again in this run, and the next run
        // (`start`) takes `&mut self`, ending this borrow first.
        Ok(unsafe { self.p.slice(k) })
    }

    /// The whole buffer, between runs.
    pub fn buffer(&mut self) -> Result<&mut [T]> {
        self.p.buffer()
    }

    /// Wait for the active run (MPI_Wait).
    pub fn wait(&mut self) -> Result<()> {
        wait(self.p.id).map(|_| ())
    }

    /// Whether the run has completed (MPI_Test); true when none is active.
    pub fn test(&mut self) -> Result<bool> {
        test(self.p.id).map(|s| s.is_some())
    }

    pub fn partitions(&self) -> usize {
        self.p.parts
    }
}

impl<T> Drop for PartitionedRecv<'_, T> {
    fn drop(&mut self) {
        release(self.p.pending, self.p.id);
    }
}
