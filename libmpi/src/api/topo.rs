//! Process topologies in the Rust API: cartesian grids, graphs and distributed graphs as
//! communicators (`cart_create`, `graph_create`, `dist_graph_create(_adjacent)`), their
//! queries, and the neighbour collectives on slices.
//!
//! ```no_run
//! let universe = rmpi::initialize().unwrap();
//! let world = universe.world();
//! let mut dims = [0, 0];
//! rmpi::dims_create(world.size(), &mut dims).unwrap();
//! let grid = world.cart_create(&dims, &[true, false], false).unwrap().unwrap();
//! let (left, right) = grid.shift(0, 1).unwrap();
//! // One value from each of the 4 neighbours (-1 and +1 per dimension; PROC_NULL ones untouched).
//! let mut got = [-1; 4];
//! grid.neighbor_all_gather(&[grid.rank()], &mut got).unwrap();
//! # let _ = (left, right);
//! ```

use std::sync::Arc;

use super::comm::Communicator;
use super::comm_mgmt::UserCommunicator;
use super::datatype::Equivalence;
use super::request::{Request, Scope};
use crate::datatype::Msg;
use crate::error::{Error, ErrorClass, Result};
use crate::runtime;
use crate::topo::{self, as_cart, as_dist_graph, as_graph, DistGraph, Topology};

/// What MPI_Topo_test reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopologyKind {
    Cartesian,
    Graph,
    DistributedGraph,
}

/// A cartesian communicator's grid and this rank's place in it (MPI_Cart_get).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CartInfo {
    pub dims: Vec<i32>,
    pub periods: Vec<bool>,
    pub coords: Vec<i32>,
}

/// A distributed graph communicator's neighbours of this rank (MPI_Dist_graph_neighbors);
/// weights are None when the graph was created unweighted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistGraphNeighbors {
    pub sources: Vec<i32>,
    pub source_weights: Option<Vec<i32>>,
    pub destinations: Vec<i32>,
    pub dest_weights: Option<Vec<i32>>,
}

/// MPI_Dims_create: fill the zero entries of `dims` so that their product is `nnodes`, as
/// evenly as possible, in non-increasing order.
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> Result<()> {
    topo::dims::dims_create(nnodes, dims)
}

fn count_err(msg: String) -> Error {
    Error::new(ErrorClass::Count, msg)
}

fn bytes_of<T>(s: &[T]) -> usize {
    std::mem::size_of_val(s)
}

/// `counts[i]` elements at element offset `displs[i]` of `buf`, as messages, checked to lie
/// inside it; `n` blocks.
fn blocks<T>(
    what: &str,
    buf: *const T,
    len: usize,
    counts: &[usize],
    displs: &[usize],
    n: usize,
) -> Result<Vec<Msg>> {
    if counts.len() != n || displs.len() != n {
        return Err(count_err(format!(
            "{what}: {} counts and {} displacements for {n} neighbours",
            counts.len(),
            displs.len()
        )));
    }
    let size = std::mem::size_of::<T>();
    (0..n)
        .map(|i| {
            if counts[i].checked_add(displs[i]).is_none_or(|end| end > len) {
                return Err(count_err(format!(
                    "{what}: block {i} ends past the buffer's {len} elements"
                )));
            }
            let p = buf.cast::<u8>().wrapping_add(displs[i] * size);
            Ok(Msg::bytes(p, counts[i] * size))
        })
        .collect()
}

/// `n` equal blocks of `block` elements.
fn equal(n: usize, block: usize) -> (Vec<usize>, Vec<usize>) {
    (vec![block; n], (0..n).map(|i| i * block).collect())
}

impl Communicator {
    fn topo(&self) -> Result<Option<Arc<Topology>>> {
        runtime::with(|rt| rt.topo(self.id))
    }

    /// MPI_Cart_create: a grid of `dims` with per-dimension periodicity over the first
    /// product(dims) ranks (`reorder` is ignored: ranks keep their order); the other ranks get
    /// None. Collective.
    pub fn cart_create(
        &self,
        dims: &[i32],
        periods: &[bool],
        _reorder: bool,
    ) -> Result<Option<UserCommunicator>> {
        if dims.len() != periods.len() {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{} dims but {} periods", dims.len(), periods.len()),
            ));
        }
        let id = crate::topo::cart_create(self.id, dims, periods)?;
        Ok(id.map(UserCommunicator::new))
    }

    /// MPI_Graph_create: node i's neighbours are `edges[index[i-1]..index[i]]`; ranks beyond
    /// the nodes get None. Collective.
    pub fn graph_create(
        &self,
        index: &[i32],
        edges: &[i32],
        _reorder: bool,
    ) -> Result<Option<UserCommunicator>> {
        let id = crate::topo::graph_create(self.id, index, edges)?;
        Ok(id.map(UserCommunicator::new))
    }

    /// MPI_Dist_graph_create_adjacent: this rank's in- and out-neighbours (weights optional,
    /// None on both sides for an unweighted graph). Collective.
    pub fn dist_graph_create_adjacent(
        &self,
        sources: &[i32],
        source_weights: Option<&[i32]>,
        destinations: &[i32],
        dest_weights: Option<&[i32]>,
        _reorder: bool,
    ) -> Result<UserCommunicator> {
        let check = |w: Option<&[i32]>, n: usize, what: &str| match w {
            Some(w) if w.len() != n => Err(Error::new(
                ErrorClass::Arg,
                format!("{} {what} weights for {n} neighbours", w.len()),
            )),
            _ => Ok(w.map_or(vec![0; n], <[i32]>::to_vec)),
        };
        let g = DistGraph {
            sources: sources.to_vec(),
            source_weights: check(source_weights, sources.len(), "source")?,
            destinations: destinations.to_vec(),
            dest_weights: check(dest_weights, destinations.len(), "destination")?,
            weighted: source_weights.is_some() && dest_weights.is_some(),
        };
        let id = crate::topo::dist_graph_adjacent(self.id, g)?;
        Ok(UserCommunicator::new(id))
    }

    /// MPI_Dist_graph_create: any rank may name any edges `(source, destination)`, with
    /// optional weights (one per edge); each rank ends up with its own. Collective.
    pub fn dist_graph_create(
        &self,
        edges: &[(i32, i32)],
        weights: Option<&[i32]>,
        _reorder: bool,
    ) -> Result<UserCommunicator> {
        if let Some(w) = weights.filter(|w| w.len() != edges.len()) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{} weights for {} edges", w.len(), edges.len()),
            ));
        }
        let n = runtime::with(|rt| Ok(rt.comm(self.id)?.size()))?;
        let (s, d): (Vec<i32>, Vec<i32>) = edges.iter().copied().unzip();
        topo::check_ranks(&s, n, "sources")?;
        topo::check_ranks(&d, n, "destinations")?;
        let e: Vec<(i32, i32, i32)> = edges
            .iter()
            .enumerate()
            .map(|(i, &(s, d))| (s, d, weights.map_or(0, |w| w[i])))
            .collect();
        let id = topo::dist_graph_create(self.id, &e, weights.is_some())?;
        Ok(UserCommunicator::new(id))
    }

    /// MPI_Topo_test.
    pub fn topology(&self) -> Result<Option<TopologyKind>> {
        Ok(self.topo()?.map(|t| match *t {
            Topology::Cart(_) => TopologyKind::Cartesian,
            Topology::Graph(_) => TopologyKind::Graph,
            Topology::DistGraph(_) => TopologyKind::DistributedGraph,
        }))
    }

    /// MPI_Cart_get.
    pub fn cart_get(&self) -> Result<CartInfo> {
        let t = self.topo()?;
        let c = as_cart(t.as_deref())?;
        Ok(CartInfo {
            dims: c.dims.clone(),
            periods: c.periods.clone(),
            coords: c.coords(self.rank()),
        })
    }

    /// MPI_Cart_coords of `rank`.
    pub fn coords(&self, rank: i32) -> Result<Vec<i32>> {
        let t = self.topo()?;
        let c = as_cart(t.as_deref())?;
        topo::check_rank(rank, c.nnodes())?;
        Ok(c.coords(rank))
    }

    /// MPI_Cart_rank: periodic dimensions wrap; others must be in range (MPI_ERR_ARG).
    pub fn cart_rank(&self, coords: &[i32]) -> Result<i32> {
        let t = self.topo()?;
        let c = as_cart(t.as_deref())?;
        if coords.len() != c.ndims() {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{} coordinates for {} dimensions", coords.len(), c.ndims()),
            ));
        }
        c.rank(coords)
    }

    /// MPI_Cart_shift: (source, destination) of this rank for a shift of `disp` along `dim`;
    /// `PROC_NULL` off a non-periodic edge.
    pub fn shift(&self, dim: i32, disp: i32) -> Result<(i32, i32)> {
        let t = self.topo()?;
        as_cart(t.as_deref())?.shift(self.rank(), dim, disp)
    }

    /// MPI_Cart_sub: the sub-grid through this rank keeping the dimensions `remain` marks.
    /// Collective.
    pub fn cart_sub(&self, remain: &[bool]) -> Result<UserCommunicator> {
        let id = crate::topo::cart_sub(self.id, remain)?;
        Ok(UserCommunicator::new(id))
    }

    /// MPI_Graph_neighbors of node `rank`.
    pub fn graph_neighbors(&self, rank: i32) -> Result<Vec<i32>> {
        let t = self.topo()?;
        let g = as_graph(t.as_deref())?;
        topo::check_rank(rank, g.nnodes())?;
        Ok(g.neighbors(rank).to_vec())
    }

    /// MPI_Dist_graph_neighbors (of this rank).
    pub fn dist_graph_neighbors(&self) -> Result<DistGraphNeighbors> {
        let t = self.topo()?;
        let g = as_dist_graph(t.as_deref())?;
        let w = |v: &Vec<i32>| g.weighted.then(|| v.clone());
        Ok(DistGraphNeighbors {
            sources: g.sources.clone(),
            source_weights: w(&g.source_weights),
            destinations: g.destinations.clone(),
            dest_weights: w(&g.dest_weights),
        })
    }

    /// (in-degree, out-degree) of this rank for the neighbour collectives: the receive buffer
    /// holds in-degree blocks, an all-to-all's send buffer out-degree blocks (a cartesian grid
    /// counts its PROC_NULL neighbours).
    pub fn neighbor_degrees(&self) -> Result<(usize, usize)> {
        Ok(self.neighbor_topo()?.degrees(self.rank()))
    }

    fn neighbor_topo(&self) -> Result<Arc<Topology>> {
        self.topo()?
            .ok_or_else(|| topo::wrong("a topology (cartesian, graph or distributed graph)", None))
    }

    /// Start a neighbour exchange of the given blocks.
    fn start_neighbor(&self, recvs: Vec<Msg>, sends: Vec<Msg>) -> Result<crate::pml::ReqId> {
        let t = self.neighbor_topo()?;
        self.start_coll(None, |b| {
            topo::neighbor::build(b, &t, |i| recvs[i].clone(), |j| sends[j].clone());
            Ok(())
        })
    }

    /// The blocking form: its schedule takes a blocking collective's tag (`coll::Space`).
    fn run_neighbor(&self, recvs: Vec<Msg>, sends: Vec<Msg>) -> Result<()> {
        let t = self.neighbor_topo()?;
        self.run_coll(None, |b| {
            topo::neighbor::build(b, &t, |i| recvs[i].clone(), |j| sends[j].clone());
            Ok(())
        })
    }

    /// The blocks of a neighbour all-gather: `send` to every out-neighbour, block i of `recv`
    /// (in-degree blocks of `send.len()`) from in-neighbour i.
    fn gather_blocks<T: Equivalence>(
        &self,
        what: &str,
        send: &[T],
        recv: &mut [T],
    ) -> Result<(Vec<Msg>, Vec<Msg>)> {
        let (ni, no) = self.neighbor_degrees()?;
        if recv.len() != ni * send.len() {
            return Err(count_err(format!(
                "{what}: the receive buffer has {} elements, {ni} neighbours x {} are needed",
                recv.len(),
                send.len()
            )));
        }
        let (c, d) = equal(ni, send.len());
        let r = blocks(what, recv.as_mut_ptr(), recv.len(), &c, &d, ni)?;
        Ok((
            r,
            vec![Msg::bytes(send.as_ptr().cast(), bytes_of(send)); no],
        ))
    }

    /// The blocks of a neighbour all-to-all: equal blocks, out-degree of them in `send`,
    /// in-degree in `recv`.
    fn alltoall_blocks<T: Equivalence>(
        &self,
        what: &str,
        send: &[T],
        recv: &mut [T],
    ) -> Result<(Vec<Msg>, Vec<Msg>)> {
        let (ni, no) = self.neighbor_degrees()?;
        let block = send
            .len()
            .checked_div(no)
            .or_else(|| recv.len().checked_div(ni))
            .unwrap_or(0);
        if send.len() != no * block || recv.len() != ni * block {
            return Err(count_err(format!(
                "{what}: {} send and {} receive elements do not split into {no} and {ni} equal blocks",
                send.len(),
                recv.len()
            )));
        }
        let (sc, sd) = equal(no, block);
        let (rc, rd) = equal(ni, block);
        Ok((
            blocks(what, recv.as_mut_ptr(), recv.len(), &rc, &rd, ni)?,
            blocks(what, send.as_ptr(), send.len(), &sc, &sd, no)?,
        ))
    }

    /// MPI_Neighbor_allgather: `send` to every out-neighbour; block i of `recv` from
    /// in-neighbour i (blocks of PROC_NULL neighbours are left as they are).
    pub fn neighbor_all_gather<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let (r, s) = self.gather_blocks("neighbor_all_gather", send, recv)?;
        self.run_neighbor(r, s)
    }

    /// MPI_Neighbor_allgatherv: block i (`counts[i]` elements at element `displs[i]` of
    /// `recv`) from in-neighbour i.
    pub fn neighbor_all_gather_varcount<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let (ni, no) = self.neighbor_degrees()?;
        let what = "neighbor_all_gather_varcount";
        let r = blocks(what, recv.as_mut_ptr(), recv.len(), counts, displs, ni)?;
        let s = vec![Msg::bytes(send.as_ptr().cast(), bytes_of(send)); no];
        self.run_neighbor(r, s)
    }

    /// MPI_Neighbor_alltoall: block j of `send` to out-neighbour j, block i of `recv` from
    /// in-neighbour i (equal blocks).
    pub fn neighbor_all_to_all<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let (r, s) = self.alltoall_blocks("neighbor_all_to_all", send, recv)?;
        self.run_neighbor(r, s)
    }

    /// MPI_Neighbor_alltoallv: per-neighbour counts and displacements (in elements).
    #[allow(clippy::too_many_arguments)]
    pub fn neighbor_all_to_all_varcount<T: Equivalence>(
        &self,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        let (ni, no) = self.neighbor_degrees()?;
        let what = "neighbor_all_to_all_varcount";
        let s = blocks(
            what,
            send.as_ptr(),
            send.len(),
            send_counts,
            send_displs,
            no,
        )?;
        let r = blocks(
            what,
            recv.as_mut_ptr(),
            recv.len(),
            recv_counts,
            recv_displs,
            ni,
        )?;
        self.run_neighbor(r, s)
    }

    /// Start a neighbour all-gather (MPI_Ineighbor_allgather).
    pub fn ineighbor_all_gather<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
    ) -> Result<Request<'scope>> {
        let (r, s) = self.gather_blocks("ineighbor_all_gather", send, recv)?;
        Ok(scope.register(self.start_neighbor(r, s)?))
    }

    /// Start a neighbour all-to-all (MPI_Ineighbor_alltoall).
    pub fn ineighbor_all_to_all<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
    ) -> Result<Request<'scope>> {
        let (r, s) = self.alltoall_blocks("ineighbor_all_to_all", send, recv)?;
        Ok(scope.register(self.start_neighbor(r, s)?))
    }

    /// Start a neighbour all-to-all with per-neighbour counts and displacements
    /// (MPI_Ineighbor_alltoallv).
    #[allow(clippy::too_many_arguments)]
    pub fn ineighbor_all_to_all_varcount<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &'scope mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<Request<'scope>> {
        let (ni, no) = self.neighbor_degrees()?;
        let what = "ineighbor_all_to_all_varcount";
        let s = blocks(
            what,
            send.as_ptr(),
            send.len(),
            send_counts,
            send_displs,
            no,
        )?;
        let r = blocks(
            what,
            recv.as_mut_ptr(),
            recv.len(),
            recv_counts,
            recv_displs,
            ni,
        )?;
        Ok(scope.register(self.start_neighbor(r, s)?))
    }
}
