//! Creating communicators with a topology, and reading a communicator's topology. Shared by
//! the C ABI and the Rust API.

use std::sync::Arc;

use super::{as_cart, Cart, DistGraph, Graph, Topology};
use crate::coll::{self, algos, At, Buf, Builder};
use crate::comm_ops;
use crate::error::{err, ErrorClass, Result};
use crate::group::UNDEFINED;
use crate::runtime::{self, Runtime};

impl Runtime {
    /// The topology communicator `comm` carries, if any.
    pub(crate) fn topo(&self, comm: usize) -> Result<Option<Arc<Topology>>> {
        Ok(self.comm(comm)?.topo.clone())
    }

    fn attach(&mut self, comm: usize, t: Topology) -> Result<()> {
        self.comm_mut(comm)?.topo = Some(Arc::new(t));
        Ok(())
    }
}

// The creations below are called outside the runtime: they wait for the other members as
// communicator creation does (`comm_ops`), so under MPI_THREAD_MULTIPLE a thread creating a
// topology on one communicator does not keep out another thread whose creation on another
// communicator the peers wait for.

/// `parent` split by `color` and `key` (MPI_Comm_split's messages and waits).
fn split(parent: usize, color: i32, key: i32) -> Result<Option<usize>> {
    if comm_ops::multiple_forms(parent)? {
        return comm_ops::split_outside(parent, color, key);
    }
    runtime::with(|rt| rt.comm_split(parent, color, key))
}

/// Attach `t` to the new communicator `id`.
fn attach(id: usize, t: Topology) -> Result<()> {
    runtime::with(|rt| rt.attach(id, t))
}

/// The ranks of `parent` below `nodes`, in order, as a new communicator carrying `t`; the
/// others get None. Collective over `parent`.
fn first_ranks(parent: usize, nodes: i32, t: Topology) -> Result<Option<usize>> {
    let rank = runtime::with(|rt| {
        let c = rt.comm(parent)?;
        intra_only(c)?;
        Ok(c.rank)
    })?;
    let color = if rank < nodes { 0 } else { UNDEFINED };
    let id = split(parent, color, rank)?;
    if let Some(id) = id {
        attach(id, t)?;
    }
    Ok(id)
}

/// MPI_Cart_create (reorder ignored).
pub(crate) fn cart_create(parent: usize, dims: &[i32], periods: &[bool]) -> Result<Option<usize>> {
    let c = runtime::with(|rt| Cart::new(dims, periods, rt.comm(parent)?.size()))?;
    let n = c.nnodes();
    first_ranks(parent, n, Topology::Cart(c))
}

/// MPI_Graph_create (reorder ignored).
pub(crate) fn graph_create(parent: usize, index: &[i32], edges: &[i32]) -> Result<Option<usize>> {
    let g = runtime::with(|rt| Graph::new(index, edges, rt.comm(parent)?.size()))?;
    let n = g.nnodes();
    first_ranks(parent, n, Topology::Graph(g))
}

/// MPI_Cart_sub: the sub-grid through this rank keeping the dimensions `remain` marks.
pub(crate) fn cart_sub(comm: usize, remain: &[bool]) -> Result<usize> {
    let (color, key, sub) = runtime::with(|rt| {
        let topo = rt.topo(comm)?;
        let c = as_cart(topo.as_deref())?;
        if remain.len() != c.ndims() {
            return err(
                ErrorClass::Arg,
                format!(
                    "{} remain_dims for a grid of {} dimensions",
                    remain.len(),
                    c.ndims()
                ),
            );
        }
        Ok(c.sub(rt.comm(comm)?.rank, remain))
    })?;
    let id = split(comm, color, key)?.expect("a sub-grid color is never MPI_UNDEFINED");
    attach(id, Topology::Cart(sub))?;
    Ok(id)
}

/// MPI_Dist_graph_create_adjacent: every rank gives its own neighbours.
pub(crate) fn dist_graph_adjacent(parent: usize, g: DistGraph) -> Result<usize> {
    runtime::with(|rt| {
        let c = rt.comm(parent)?;
        check_ranks(&g.sources, c.size(), "sources")?;
        check_ranks(&g.destinations, c.size(), "destinations")?;
        intra_only(c)
    })?;
    let id = comm_ops::bare_dup(parent)?;
    attach(id, Topology::DistGraph(g))?;
    Ok(id)
}

/// MPI_Dist_graph_create: each rank gives any edges `(s, d, w)`; they are sent to `s` (an
/// out-edge there) and `d` (an in-edge there) with two all-to-alls (counts, then edges).
/// At each rank its edges keep the order of the contributing ranks, then of their lists.
pub(crate) fn dist_graph_create(
    parent: usize,
    edges: &[(i32, i32, i32)],
    weighted: bool,
) -> Result<usize> {
    let (n, me) = runtime::with(|rt| {
        let c = rt.comm(parent)?;
        intra_only(c)?;
        Ok((c.size() as usize, c.rank))
    })?;
    let mut to: Vec<Vec<i32>> = vec![Vec::new(); n];
    for &(s, d, w) in edges {
        to[s as usize].extend([s, d, w]);
        if d != s {
            to[d as usize].extend([s, d, w]);
        }
    }
    let scount: Vec<i32> = to.iter().map(|v| v.len() as i32).collect();
    let mut rcount = vec![0i32; n];
    let four = vec![4usize; n];
    let off: Vec<usize> = (0..n).map(|i| 4 * i).collect();
    let (s, r) = (ptr(&scount), ptr_mut(&mut rcount));
    // The schedule is waited for inside run_schedule, while both vectors live.
    run_schedule(parent, |b| {
        algos::alltoallw(b, Some(s), &four, &off, r, &four, &off);
    })?;
    let flat: Vec<i32> = to.concat();
    let slens: Vec<usize> = scount.iter().map(|&c| 4 * c as usize).collect();
    let rlens: Vec<usize> = rcount.iter().map(|&c| 4 * c as usize).collect();
    let displs = |l: &[usize]| {
        l.iter()
            .scan(0, |a, &x| {
                let d = *a;
                *a += x;
                Some(d)
            })
            .collect::<Vec<usize>>()
    };
    let (sd, rd) = (displs(&slens), displs(&rlens));
    let mut got = vec![0i32; rlens.iter().sum::<usize>() / 4];
    let (s, r) = (ptr(&flat), ptr_mut(&mut got));
    run_schedule(parent, |b| {
        algos::alltoallw(b, Some(s), &slens, &sd, r, &rlens, &rd);
    })?;
    let mut g = DistGraph {
        sources: Vec::new(),
        source_weights: Vec::new(),
        destinations: Vec::new(),
        dest_weights: Vec::new(),
        weighted,
    };
    for e in got.chunks_exact(3) {
        if e[0] == me {
            g.destinations.push(e[1]);
            g.dest_weights.push(e[2]);
        }
        if e[1] == me {
            g.sources.push(e[0]);
            g.source_weights.push(e[2]);
        }
    }
    let id = comm_ops::bare_dup(parent)?;
    attach(id, Topology::DistGraph(g))?;
    Ok(id)
}

/// Build a schedule on `comm`, start it and wait for it (outside the runtime under MULTIPLE).
fn run_schedule(comm: usize, build: impl FnOnce(&mut Builder)) -> Result<()> {
    let id = runtime::with(|rt| {
        let s = {
            let mut b = Builder::new(rt.comm(comm)?, None);
            build(&mut b);
            b.finish()
        };
        Ok(coll::start_blocking(&mut rt.pml, s))
    })?;
    comm_ops::wait_request(id).map_err(|e| {
        crate::error::Error::new(e.class, "exchanging the distributed graph's edges failed")
    })?;
    Ok(())
}

/// A send buffer for a schedule (only read).
fn ptr(v: &[i32]) -> At {
    At(Buf::User(v.as_ptr() as *mut u8), 0)
}

fn ptr_mut(v: &mut [i32]) -> At {
    At(Buf::User(v.as_mut_ptr().cast()), 0)
}

/// Every entry a rank of a communicator of `n`.
/// Topologies live on intracommunicators only (MPI-4.0 8.5).
fn intra_only(c: &crate::comm::Comm) -> Result<()> {
    if c.is_inter() {
        return Err(crate::error::Error::new(
            crate::error::ErrorClass::Comm,
            "a process topology needs an intracommunicator",
        ));
    }
    Ok(())
}

pub(crate) fn check_ranks(v: &[i32], n: i32, what: &str) -> Result<()> {
    if let Some((i, r)) = v.iter().enumerate().find(|(_, &r)| !(0..n).contains(&r)) {
        return err(
            ErrorClass::Rank,
            format!("{what}[{i}] = {r} is not a rank of the communicator (size {n})"),
        );
    }
    Ok(())
}
