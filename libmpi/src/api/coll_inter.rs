//! Collectives on intercommunicators in the Rust API (MPI-4.0 6.2.2): the plans the methods of
//! `coll` (blocking and `i*`) and `persistent_coll` run when the communicator is an
//! intercommunicator, built on the runtime's `coll::inter` schedules as the C interface does
//! (`capi/coll_inter.rs`).
//!
//! Data flows between the groups: per-peer blocks (gather, scatter, all-gather, all-to-all)
//! are sized by the remote group. Rooted collectives take `root` = [`ROOT`] at the root,
//! [`PROC_NULL`](crate::PROC_NULL) at the other members of the root's group (their buffers are
//! ignored), and the root's rank in its group at the members of the other group. Scan, exscan
//! and the in-place forms are not defined on an intercommunicator: MPI_ERR_COMM.
//!
//! ```no_run
//! let universe = rmpi::initialize().unwrap();
//! let world = universe.world();
//! let (rank, size) = (world.rank(), world.size());
//! let local = world.split(Some((rank % 2) as i32), rank).unwrap().unwrap();
//! let ic = local.intercomm_create(0, &world, 1 - rank % 2, 7).unwrap();
//! // Group 0's rank 0 broadcasts to every member of group 1.
//! let root = match (rank % 2, ic.rank()) {
//!     (0, 0) => rmpi::ROOT,
//!     (0, _) => rmpi::PROC_NULL,
//!     _ => 0,
//! };
//! let mut v = [rank; 4];
//! ic.broadcast(&mut v, root).unwrap();
//! ```

use super::coll::{equal_blocks, layout, same_len, uniform, Plan, Span};
use super::comm::Communicator;
use super::datatype::Equivalence;
use crate::coll::inter::{self, Root};
use crate::coll::Red;
use crate::error::{Error, ErrorClass, Result};

/// MPI_ROOT: the `root` argument of the root itself in a rooted collective on an
/// intercommunicator.
pub const ROOT: i32 = -4;

/// The root argument: `ROOT`, `PROC_NULL` or a rank of the remote group.
fn root_of(c: &Communicator, root: i32) -> Result<Root> {
    let n = remote(c);
    match root {
        ROOT => Ok(Root::Me),
        crate::runtime::PROC_NULL => Ok(Root::Idle),
        r if (0..n).contains(&r) => Ok(Root::Remote(r)),
        r => Err(Error::new(
            ErrorClass::Root,
            format!(
                "root {r} is invalid on an intercommunicator (rmpi::ROOT, rmpi::PROC_NULL or a \
                 rank of the remote group, size {n})"
            ),
        )),
    }
}

/// The remote group's size: the number of blocks of per-peer buffers.
fn remote(c: &Communicator) -> i32 {
    c.remote_size().unwrap_or(0)
}

/// MPI_Barrier / MPI_Ibarrier.
pub(super) fn barrier() -> Plan {
    Plan::new(None, |b| {
        inter::barrier(b);
        Ok(())
    })
}

/// MPI_Bcast: the root sends `buf`, the other group receives into `buf`.
pub(super) fn broadcast<T: Equivalence>(c: &Communicator, buf: Span<T>, root: i32) -> Result<Plan> {
    let root = root_of(c, root)?;
    let (at, len) = (buf.at(), buf.bytes());
    Ok(Plan::new(None, move |b| {
        if root != Root::Idle {
            inter::bcast(b, at, len, root);
        }
        Ok(())
    }))
}

/// MPI_Reduce: the other group's `send`s reduced into the root's `recv` (`recv.len()`
/// elements at the root, `send.len()` in the other group; the same count).
pub(super) fn reduce<T: Equivalence>(
    c: &Communicator,
    send: Span<T>,
    recv: Span<T>,
    red: Red,
    root: i32,
) -> Result<Plan> {
    let root = root_of(c, root)?;
    let (s, r) = (send.at(), recv.at());
    let n = if root == Root::Me {
        recv.len()
    } else {
        send.len()
    };
    Ok(Plan::new(Some(red), move |b| {
        if root != Root::Idle {
            inter::reduce(b, s, r, n, root);
        }
        Ok(())
    }))
}

/// MPI_Allreduce: every member gets the reduction of the other group's `send`s.
pub(super) fn all_reduce<T: Equivalence>(send: Span<T>, recv: Span<T>, red: Red) -> Result<Plan> {
    same_len("all_reduce", send.len(), recv.len())?;
    let (s, r, n) = (send.at(), recv.at(), send.len());
    Ok(Plan::new(Some(red), move |b| {
        inter::allreduce(b, s, r, n);
        Ok(())
    }))
}

/// MPI_Reduce_scatter: the other group's reduction (the sum of `counts` elements, `counts`
/// one per local rank) scattered over this group, `counts[i]` elements to rank i.
pub(super) fn reduce_scatter<T: Equivalence>(
    send: Span<T>,
    recv: Span<T>,
    counts: Vec<usize>,
    red: Red,
) -> Result<Plan> {
    let (s, r) = (send.at(), recv.at());
    Ok(Plan::new(Some(red), move |b| {
        inter::reduce_scatter(b, s, r, &counts);
        Ok(())
    }))
}

/// MPI_Gather(v): the root's `recv` gets block i from remote rank i (`counts`/`displs` in
/// elements, or None for equal blocks filling `recv`).
pub(super) fn gather<T: Equivalence>(
    c: &Communicator,
    send: Span<T>,
    recv: Span<T>,
    varcount: Option<(&[usize], &[usize])>,
    root: i32,
) -> Result<Plan> {
    let root = root_of(c, root)?;
    let n = remote(c);
    let (l, d) = match (root, varcount) {
        (Root::Me, Some((counts, displs))) => {
            layout::<T>("gather_varcount", counts, displs, n, recv.len())?
        }
        (Root::Me, None) => {
            let block = equal_blocks("gather", recv.len(), n)?;
            uniform(n, block * std::mem::size_of::<T>())
        }
        _ => (Vec::new(), Vec::new()),
    };
    let (s, sl, r) = (send.at(), send.bytes(), recv.at());
    Ok(Plan::new(None, move |b| {
        if root != Root::Idle {
            inter::gatherv(b, (s, sl), r, &l, &d, root);
        }
        Ok(())
    }))
}

/// MPI_Scatter(v): block i of the root's `send` to remote rank i's `recv`.
pub(super) fn scatter<T: Equivalence>(
    c: &Communicator,
    send: Span<T>,
    varcount: Option<(&[usize], &[usize])>,
    recv: Span<T>,
    root: i32,
) -> Result<Plan> {
    let root = root_of(c, root)?;
    let n = remote(c);
    let (l, d) = match (root, varcount) {
        (Root::Me, Some((counts, displs))) => {
            layout::<T>("scatter_varcount", counts, displs, n, send.len())?
        }
        (Root::Me, None) => {
            let block = equal_blocks("scatter", send.len(), n)?;
            uniform(n, block * std::mem::size_of::<T>())
        }
        _ => (Vec::new(), Vec::new()),
    };
    let (s, r, rl) = (send.at(), recv.at(), recv.bytes());
    Ok(Plan::new(None, move |b| {
        if root != Root::Idle {
            inter::scatterv(b, s, &l, &d, (r, rl), root);
        }
        Ok(())
    }))
}

/// MPI_Allgather(v): `recv` gets block i from remote rank i; `send` goes to every remote rank.
pub(super) fn all_gather<T: Equivalence>(
    c: &Communicator,
    send: Span<T>,
    recv: Span<T>,
    varcount: Option<(&[usize], &[usize])>,
) -> Result<Plan> {
    let n = remote(c);
    let (l, d) = match varcount {
        Some((counts, displs)) => {
            layout::<T>("all_gather_varcount", counts, displs, n, recv.len())?
        }
        None => {
            let block = equal_blocks("all_gather", recv.len(), n)?;
            uniform(n, block * std::mem::size_of::<T>())
        }
    };
    let (s, sl, r) = (send.at(), send.bytes(), recv.at());
    Ok(Plan::new(None, move |b| {
        inter::allgatherv(b, (s, sl), r, &l, &d);
        Ok(())
    }))
}

/// Counts and displacements (in elements) of both sides of an all-to-all.
pub(super) type Sides<'a> = (&'a [usize], &'a [usize], &'a [usize], &'a [usize]);

/// MPI_Alltoall(v): block i of `send` to remote rank i, block i of `recv` from it. Equal
/// blocks (None) split each buffer by the remote group's size; the two sides' blocks may
/// differ in size (each matches the other group's).
pub(super) fn all_to_all<T: Equivalence>(
    c: &Communicator,
    send: Span<T>,
    recv: Span<T>,
    varcount: Option<Sides<'_>>,
) -> Result<Plan> {
    let n = remote(c);
    let size = std::mem::size_of::<T>();
    let what = "all_to_all_varcount";
    let ((sl, sd), (rl, rdp)) = match varcount {
        Some((sc, sdi, rc, rdi)) => (
            layout::<T>(what, sc, sdi, n, send.len())?,
            layout::<T>(what, rc, rdi, n, recv.len())?,
        ),
        None => (
            uniform(n, equal_blocks("all_to_all", send.len(), n)? * size),
            uniform(n, equal_blocks("all_to_all", recv.len(), n)? * size),
        ),
    };
    let (s, r) = (send.at(), recv.at());
    Ok(Plan::new(None, move |b| {
        inter::alltoallw(b, s, &sl, &sd, r, &rl, &rdp);
        Ok(())
    }))
}
