//! Distributed graph topologies: each rank knows only its own in- and out-neighbours, with
//! optional weights.

/// One rank's view. `weighted` is false when the graph was created with MPI_UNWEIGHTED on
/// every rank's side that had edges; the weights are then zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistGraph {
    pub sources: Vec<i32>,
    pub source_weights: Vec<i32>,
    pub destinations: Vec<i32>,
    pub dest_weights: Vec<i32>,
    pub weighted: bool,
}
