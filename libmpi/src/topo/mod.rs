//! Process topologies (after Open MPI's `topo` framework): the cartesian, graph and distributed
//! graph structure a communicator may carry, the calls that create communicators with one, and
//! the neighbour collectives that follow it.
//!
//! A topology is a plain value attached to its communicator (`Comm::topo`, shared by `Arc`):
//! MPI_Comm_dup/idup copy it, MPI_Comm_free drops it with the slot, and split/create give none.
//! `reorder` is ignored (as Open MPI does by default): rank i of the new communicator is rank i
//! of the old one.

pub mod cart;
mod create;
pub(crate) use create::{
    cart_create, cart_sub, check_ranks, dist_graph_adjacent, dist_graph_create, graph_create,
};
pub mod dims;
pub mod dist_graph;
pub mod graph;
pub mod neighbor;

pub use cart::Cart;
pub use dist_graph::DistGraph;
pub use graph::Graph;

use crate::error::{err, ErrorClass, Result};

/// MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH as the ABI numbers them (MPI_Topo_test).
pub const CART: i32 = 211;
pub const GRAPH: i32 = 212;
pub const DIST_GRAPH: i32 = 213;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topology {
    Cart(Cart),
    Graph(Graph),
    DistGraph(DistGraph),
}

impl Topology {
    /// The MPI_Topo_test value.
    pub fn kind(&self) -> i32 {
        match self {
            Topology::Cart(_) => CART,
            Topology::Graph(_) => GRAPH,
            Topology::DistGraph(_) => DIST_GRAPH,
        }
    }

    /// (in-degree, out-degree) of `rank`: how many blocks a neighbour collective receives and
    /// sends (PROC_NULL neighbours of a cartesian grid included).
    pub fn degrees(&self, rank: i32) -> (usize, usize) {
        match self {
            Topology::Cart(c) => (2 * c.ndims(), 2 * c.ndims()),
            Topology::Graph(g) => {
                let n = g.neighbors(rank).len();
                (n, n)
            }
            Topology::DistGraph(d) => (d.sources.len(), d.destinations.len()),
        }
    }
}

/// The error for a call that needs a topology the communicator does not have.
pub fn wrong(what: &str, have: Option<&Topology>) -> crate::error::Error {
    let has = match have {
        None => "no topology",
        Some(Topology::Cart(_)) => "a cartesian topology",
        Some(Topology::Graph(_)) => "a graph topology",
        Some(Topology::DistGraph(_)) => "a distributed graph topology",
    };
    crate::error::Error::new(
        ErrorClass::Topology,
        format!("the communicator has {has}; this call needs {what}"),
    )
}

pub fn as_cart(t: Option<&Topology>) -> Result<&Cart> {
    match t {
        Some(Topology::Cart(c)) => Ok(c),
        other => Err(wrong("a cartesian topology", other)),
    }
}

pub fn as_graph(t: Option<&Topology>) -> Result<&Graph> {
    match t {
        Some(Topology::Graph(g)) => Ok(g),
        other => Err(wrong("a graph topology", other)),
    }
}

pub fn as_dist_graph(t: Option<&Topology>) -> Result<&DistGraph> {
    match t {
        Some(Topology::DistGraph(d)) => Ok(d),
        other => Err(wrong("a distributed graph topology", other)),
    }
}

/// A rank argument of a topology call: `0..n`.
pub(crate) fn check_rank(rank: i32, n: i32) -> Result<()> {
    if !(0..n).contains(&rank) {
        return err(
            ErrorClass::Rank,
            format!("rank {rank} is out of range (the topology has {n} nodes)"),
        );
    }
    Ok(())
}
