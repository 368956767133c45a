//! Process topology calls of the C ABI: creating cartesian, graph and distributed graph
//! communicators and reading their structure (`crate::topo`); the neighbour collectives are in
//! `neighbor`.

use std::ffi::c_int;

use super::*;
use crate::topo::{self, as_cart, as_dist_graph, as_graph, Cart, DistGraph, Graph, Topology};

/// MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY: the ABI's sentinel `int *` values.
const UNWEIGHTED: usize = 10;
const WEIGHTS_EMPTY: usize = 11;

fn err_comm(comm: Handle) -> usize {
    comm_index(comm).unwrap_or(crate::comm::WORLD)
}

fn arg(what: impl Into<String>) -> Error {
    Error::new(ErrorClass::Arg, what)
}

/// `n` values from a C array (NULL only when `n` is 0).
///
/// # Safety
/// `p` is NULL or points to `n` readable values.
unsafe fn arr<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(arg(format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Write `v` into a C array of `max` entries: MPI_ERR_ARG when it does not fit.
///
/// # Safety
/// `p` is NULL or points to `max` writable values.
unsafe fn put_all(p: *mut c_int, max: c_int, v: &[i32], what: &str) -> Result<()> {
    if v.is_empty() {
        return Ok(());
    }
    if (max as i64) < v.len() as i64 {
        return Err(arg(format!(
            "{what} holds {max} entries but {} are needed",
            v.len()
        )));
    }
    if p.is_null() {
        return Err(arg(format!("{what} is NULL")));
    }
    // SAFETY: checked non-NULL; the caller passes room for `max` >= v.len() values.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), p, v.len()) };
    Ok(())
}

/// Write a single output value.
///
/// # Safety
/// `p` is NULL or writable.
unsafe fn put<T>(p: *mut T, v: T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(arg(format!("{what} pointer is NULL")));
    }
    // SAFETY: checked non-NULL; the caller's out-parameter.
    unsafe { p.write(v) };
    Ok(())
}

fn ndims_of(n: c_int) -> Result<usize> {
    usize::try_from(n).map_err(|_| Error::new(ErrorClass::Dims, format!("ndims {n} is negative")))
}

fn count_of(n: c_int, what: &str) -> Result<usize> {
    usize::try_from(n).map_err(|_| arg(format!("{what} {n} is negative")))
}

/// Write a new communicator (or MPI_COMM_NULL).
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn store(out: *mut Handle, id: Option<usize>) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { put(out, id.map_or(COMM_NULL as Handle, comm_handle), "newcomm") }
}

/// The topology of `comm`, for a query.
fn topo_of(rt: &Runtime, comm: Handle) -> Result<Option<std::sync::Arc<Topology>>> {
    rt.topo(comm_index(comm)?)
}

mpi_fn! {
    fn MPI_Cart_create / PMPI_Cart_create(comm_old: Handle, ndims: c_int, dims: *const c_int, periods: *const c_int, _reorder: c_int, comm_cart: *mut Handle) -> c_int {
        super::comm::outside("MPI_Cart_create", err_comm(comm_old), || {
            let c = comm_index(comm_old)?;
            let n = ndims_of(ndims)?;
            // SAFETY: both arrays hold ndims values.
            let (d, p) = unsafe { (arr(dims, n, "dims")?, arr(periods, n, "periods")?) };
            let p: Vec<bool> = p.iter().map(|&x| x != 0).collect();
            if comm_cart.is_null() {
                return Err(arg("comm_cart pointer is NULL"));
            }
            // A failed creation leaves MPI_COMM_NULL behind, as MPICH does (errors/topo/cartsmall).
            // SAFETY: checked non-NULL.
            unsafe { store(comm_cart, None)? };
            let id = crate::topo::cart_create(c, d, &p)?;
            // SAFETY: checked non-NULL.
            unsafe { store(comm_cart, id) }
        })
    }
}

mpi_fn! {
    fn MPI_Dims_create / PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
        call("MPI_Dims_create", crate::comm::WORLD, |_| {
            let n = ndims_of(ndims)?;
            if n == 0 {
                return Ok(());
            }
            if dims.is_null() {
                return Err(arg("dims is NULL"));
            }
            // SAFETY: checked non-NULL; the caller passes ndims writable ints.
            let d = unsafe { std::slice::from_raw_parts_mut(dims, n) };
            topo::dims::dims_create(nnodes, d)
        })
    }
}

mpi_fn! {
    fn MPI_Cartdim_get / PMPI_Cartdim_get(comm: Handle, ndims: *mut c_int) -> c_int {
        call("MPI_Cartdim_get", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let n = as_cart(t.as_deref())?.ndims() as c_int;
            // SAFETY: the caller's out-parameter.
            unsafe { put(ndims, n, "ndims") }
        })
    }
}

mpi_fn! {
    fn MPI_Cart_get / PMPI_Cart_get(comm: Handle, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) -> c_int {
        call("MPI_Cart_get", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let c = as_cart(t.as_deref())?;
            let me = rt.comm(comm_index(comm)?)?.rank;
            let p: Vec<i32> = c.periods.iter().map(|&x| x as i32).collect();
            // SAFETY: each array holds maxdims ints.
            unsafe {
                put_all(dims, maxdims, &c.dims, "dims")?;
                put_all(periods, maxdims, &p, "periods")?;
                put_all(coords, maxdims, &c.coords(me), "coords")
            }
        })
    }
}

mpi_fn! {
    fn MPI_Cart_coords / PMPI_Cart_coords(comm: Handle, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int {
        call("MPI_Cart_coords", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let c = as_cart(t.as_deref())?;
            topo::check_rank(rank, c.nnodes())?;
            // SAFETY: coords holds maxdims ints.
            unsafe { put_all(coords, maxdims, &c.coords(rank), "coords") }
        })
    }
}

mpi_fn! {
    fn MPI_Cart_rank / PMPI_Cart_rank(comm: Handle, coords: *const c_int, rank: *mut c_int) -> c_int {
        call("MPI_Cart_rank", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let c = as_cart(t.as_deref())?;
            // SAFETY: coords holds ndims ints.
            let xs = unsafe { arr(coords, c.ndims(), "coords")? };
            let r = c.rank(xs)?;
            // SAFETY: the caller's out-parameter.
            unsafe { put(rank, r, "rank") }
        })
    }
}

mpi_fn! {
    fn MPI_Cart_shift / PMPI_Cart_shift(comm: Handle, direction: c_int, disp: c_int, rank_source: *mut c_int, rank_dest: *mut c_int) -> c_int {
        call("MPI_Cart_shift", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let c = as_cart(t.as_deref())?;
            let me = rt.comm(comm_index(comm)?)?.rank;
            let (s, d) = c.shift(me, direction, disp)?;
            // SAFETY: the caller's out-parameters.
            unsafe {
                put(rank_source, s, "rank_source")?;
                put(rank_dest, d, "rank_dest")
            }
        })
    }
}

mpi_fn! {
    fn MPI_Cart_sub / PMPI_Cart_sub(comm: Handle, remain_dims: *const c_int, newcomm: *mut Handle) -> c_int {
        super::comm::outside("MPI_Cart_sub", err_comm(comm), || {
            let ci = comm_index(comm)?;
            let n = runtime::with(|rt| Ok(as_cart(rt.topo(ci)?.as_deref())?.ndims()))?;
            // SAFETY: remain_dims holds ndims ints.
            let r: Vec<bool> = unsafe { arr(remain_dims, n, "remain_dims")? }
                .iter()
                .map(|&x| x != 0)
                .collect();
            if newcomm.is_null() {
                return Err(arg("newcomm pointer is NULL"));
            }
            let id = crate::topo::cart_sub(ci, &r)?;
            // SAFETY: checked non-NULL.
            unsafe { store(newcomm, Some(id)) }
        })
    }
}

mpi_fn! {
    fn MPI_Cart_map / PMPI_Cart_map(comm: Handle, ndims: c_int, dims: *const c_int, periods: *const c_int, newrank: *mut c_int) -> c_int {
        call("MPI_Cart_map", err_comm(comm), |rt| {
            let c = rt.comm(comm_index(comm)?)?;
            let n = ndims_of(ndims)?;
            // SAFETY: both arrays hold ndims ints.
            let (d, p) = unsafe { (arr(dims, n, "dims")?, arr(periods, n, "periods")?) };
            let p: Vec<bool> = p.iter().map(|&x| x != 0).collect();
            // A grid with an empty dimension has no nodes: every rank is outside it (what
            // Open MPI answers, and what rsmpi's cartesian_map example expects at np < 4).
            if d.contains(&0) && d.iter().all(|&x| x >= 0) {
                // SAFETY: the caller's out-parameter.
                return unsafe { put(newrank, MPI_UNDEFINED, "newrank") };
            }
            let cart = Cart::new(d, &p, c.size())?;
            let r = if c.rank < cart.nnodes() { c.rank } else { MPI_UNDEFINED };
            // SAFETY: the caller's out-parameter.
            unsafe { put(newrank, r, "newrank") }
        })
    }
}

/// A graph's index and edges from C arrays.
///
/// # Safety
/// `index` holds `nnodes` ints, `edges` index[nnodes-1].
unsafe fn graph_args<'a>(
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
) -> Result<(&'a [i32], &'a [i32])> {
    let n = count_of(nnodes, "nnodes")?;
    // SAFETY: the caller's contract.
    let ix = unsafe { arr(index, n, "index")? };
    let ne = ix.last().copied().unwrap_or(0);
    let ne = count_of(ne, "the edge count index[nnodes-1]")?;
    // SAFETY: the caller's contract.
    let e = unsafe { arr(edges, ne, "edges")? };
    Ok((ix, e))
}

mpi_fn! {
    fn MPI_Graph_create / PMPI_Graph_create(comm_old: Handle, nnodes: c_int, index: *const c_int, edges: *const c_int, _reorder: c_int, comm_graph: *mut Handle) -> c_int {
        super::comm::outside("MPI_Graph_create", err_comm(comm_old), || {
            let c = comm_index(comm_old)?;
            // SAFETY: the arrays as the standard defines them.
            let (ix, e) = unsafe { graph_args(nnodes, index, edges)? };
            if comm_graph.is_null() {
                return Err(arg("comm_graph pointer is NULL"));
            }
            let id = crate::topo::graph_create(c, ix, e)?;
            // SAFETY: checked non-NULL.
            unsafe { store(comm_graph, id) }
        })
    }
}

mpi_fn! {
    fn MPI_Graph_map / PMPI_Graph_map(comm: Handle, nnodes: c_int, index: *const c_int, edges: *const c_int, newrank: *mut c_int) -> c_int {
        call("MPI_Graph_map", err_comm(comm), |rt| {
            let c = rt.comm(comm_index(comm)?)?;
            // SAFETY: the arrays as the standard defines them.
            let (ix, e) = unsafe { graph_args(nnodes, index, edges)? };
            let g = Graph::new(ix, e, c.size())?;
            let r = if c.rank < g.nnodes() { c.rank } else { MPI_UNDEFINED };
            // SAFETY: the caller's out-parameter.
            unsafe { put(newrank, r, "newrank") }
        })
    }
}

mpi_fn! {
    fn MPI_Graphdims_get / PMPI_Graphdims_get(comm: Handle, nnodes: *mut c_int, nedges: *mut c_int) -> c_int {
        call("MPI_Graphdims_get", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let g = as_graph(t.as_deref())?;
            // SAFETY: the caller's out-parameters.
            unsafe {
                put(nnodes, g.nnodes(), "nnodes")?;
                put(nedges, g.edges.len() as c_int, "nedges")
            }
        })
    }
}

mpi_fn! {
    fn MPI_Graph_get / PMPI_Graph_get(comm: Handle, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int) -> c_int {
        call("MPI_Graph_get", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let g = as_graph(t.as_deref())?;
            // SAFETY: the arrays hold maxindex and maxedges ints.
            unsafe {
                put_all(index, maxindex, &g.index, "index")?;
                put_all(edges, maxedges, &g.edges, "edges")
            }
        })
    }
}

mpi_fn! {
    fn MPI_Graph_neighbors_count / PMPI_Graph_neighbors_count(comm: Handle, rank: c_int, nneighbors: *mut c_int) -> c_int {
        call("MPI_Graph_neighbors_count", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let g = as_graph(t.as_deref())?;
            topo::check_rank(rank, g.nnodes())?;
            // SAFETY: the caller's out-parameter.
            unsafe { put(nneighbors, g.neighbors(rank).len() as c_int, "nneighbors") }
        })
    }
}

mpi_fn! {
    fn MPI_Graph_neighbors / PMPI_Graph_neighbors(comm: Handle, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int) -> c_int {
        call("MPI_Graph_neighbors", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let g = as_graph(t.as_deref())?;
            topo::check_rank(rank, g.nnodes())?;
            // SAFETY: neighbors holds maxneighbors ints.
            unsafe { put_all(neighbors, maxneighbors, g.neighbors(rank), "neighbors") }
        })
    }
}

/// Weights from a C argument: None for MPI_UNWEIGHTED, zeros for MPI_WEIGHTS_EMPTY (or any
/// pointer when `n` is 0).
///
/// # Safety
/// Otherwise `p` holds `n` ints.
unsafe fn weights(p: *const c_int, n: usize, what: &str) -> Result<Option<Vec<i32>>> {
    match p as usize {
        UNWEIGHTED => Ok(None),
        WEIGHTS_EMPTY if n > 0 => Err(arg(format!(
            "{what} is MPI_WEIGHTS_EMPTY but there are {n} edges"
        ))),
        WEIGHTS_EMPTY => Ok(Some(Vec::new())),
        // SAFETY: the caller's contract.
        _ => Ok(Some(unsafe { arr(p, n, what)? }.to_vec())),
    }
}

mpi_fn! {
    fn MPI_Dist_graph_create_adjacent / PMPI_Dist_graph_create_adjacent(comm_old: Handle, indegree: c_int, sources: *const c_int, sourceweights: *const c_int, outdegree: c_int, destinations: *const c_int, destweights: *const c_int, info: Handle, _reorder: c_int, comm_dist_graph: *mut Handle) -> c_int {
        super::comm::outside("MPI_Dist_graph_create_adjacent", err_comm(comm_old), || {
            let c = comm_index(comm_old)?;
            super::info::hints(info)?;
            let (ni, no) = (count_of(indegree, "indegree")?, count_of(outdegree, "outdegree")?);
            // SAFETY: each array holds its degree's ints (or is a weights sentinel).
            let g = unsafe {
                let sw = weights(sourceweights, ni, "sourceweights")?;
                let dw = weights(destweights, no, "destweights")?;
                let weighted = sw.is_some() && dw.is_some();
                DistGraph {
                    sources: arr(sources, ni, "sources")?.to_vec(),
                    source_weights: sw.filter(|w| !w.is_empty()).unwrap_or(vec![0; ni]),
                    destinations: arr(destinations, no, "destinations")?.to_vec(),
                    dest_weights: dw.filter(|w| !w.is_empty()).unwrap_or(vec![0; no]),
                    weighted,
                }
            };
            if comm_dist_graph.is_null() {
                return Err(arg("comm_dist_graph pointer is NULL"));
            }
            let id = crate::topo::dist_graph_adjacent(c, g)?;
            // SAFETY: checked non-NULL.
            unsafe { store(comm_dist_graph, Some(id)) }
        })
    }
}

mpi_fn! {
    fn MPI_Dist_graph_create / PMPI_Dist_graph_create(comm_old: Handle, n: c_int, sources: *const c_int, degrees: *const c_int, destinations: *const c_int, weights_: *const c_int, info: Handle, _reorder: c_int, comm_dist_graph: *mut Handle) -> c_int {
        super::comm::outside("MPI_Dist_graph_create", err_comm(comm_old), || {
            let c = comm_index(comm_old)?;
            super::info::hints(info)?;
            let size = runtime::with(|rt| Ok(rt.comm(c)?.size()))?;
            let n = count_of(n, "n")?;
            // SAFETY: sources and degrees hold n ints, destinations and weights the degrees' sum.
            let edges = unsafe {
                let s = arr(sources, n, "sources")?;
                let d = arr(degrees, n, "degrees")?;
                crate::topo::check_ranks(s, size, "sources")?;
                let mut total = 0usize;
                for (i, &x) in d.iter().enumerate() {
                    total += count_of(x, &format!("degrees[{i}]"))?;
                }
                let dst = arr(destinations, total, "destinations")?;
                crate::topo::check_ranks(dst, size, "destinations")?;
                let w = weights(weights_, total, "weights")?;
                let mut edges = Vec::with_capacity(total);
                let mut k = 0;
                for (i, &src) in s.iter().enumerate() {
                    for _ in 0..d[i] {
                        let wt = w.as_ref().and_then(|w| w.get(k).copied()).unwrap_or(0);
                        edges.push((src, dst[k], wt));
                        k += 1;
                    }
                }
                (edges, w.is_some())
            };
            if comm_dist_graph.is_null() {
                return Err(arg("comm_dist_graph pointer is NULL"));
            }
            let id = crate::topo::dist_graph_create(c, &edges.0, edges.1)?;
            // SAFETY: checked non-NULL.
            unsafe { store(comm_dist_graph, Some(id)) }
        })
    }
}

mpi_fn! {
    fn MPI_Dist_graph_neighbors_count / PMPI_Dist_graph_neighbors_count(comm: Handle, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) -> c_int {
        call("MPI_Dist_graph_neighbors_count", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let g = as_dist_graph(t.as_deref())?;
            // SAFETY: the caller's out-parameters.
            unsafe {
                put(indegree, g.sources.len() as c_int, "indegree")?;
                put(outdegree, g.destinations.len() as c_int, "outdegree")?;
                put(weighted, g.weighted as c_int, "weighted")
            }
        })
    }
}

mpi_fn! {
    fn MPI_Dist_graph_neighbors / PMPI_Dist_graph_neighbors(comm: Handle, maxindegree: c_int, sources: *mut c_int, sourceweights: *mut c_int, maxoutdegree: c_int, destinations: *mut c_int, destweights: *mut c_int) -> c_int {
        call("MPI_Dist_graph_neighbors", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let g = as_dist_graph(t.as_deref())?;
            let wanted = |p: *mut c_int| g.weighted && !matches!(p as usize, UNWEIGHTED | WEIGHTS_EMPTY);
            // SAFETY: each array holds its max count of ints (weights unless a sentinel).
            unsafe {
                put_all(sources, maxindegree, &g.sources, "sources")?;
                put_all(destinations, maxoutdegree, &g.destinations, "destinations")?;
                if wanted(sourceweights) {
                    put_all(sourceweights, maxindegree, &g.source_weights, "sourceweights")?;
                }
                if wanted(destweights) {
                    put_all(destweights, maxoutdegree, &g.dest_weights, "destweights")?;
                }
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Topo_test / PMPI_Topo_test(comm: Handle, status: *mut c_int) -> c_int {
        call("MPI_Topo_test", err_comm(comm), |rt| {
            let t = topo_of(rt, comm)?;
            let v = t.map_or(MPI_UNDEFINED, |t| t.kind());
            // SAFETY: the caller's out-parameter.
            unsafe { put(status, v, "status") }
        })
    }
}
