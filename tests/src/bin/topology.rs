//! The Rust API for process topologies: cartesian grids (2-D and 3-D, periodic and not:
//! coords/rank round trip, shift, sub), dims_create, graphs, distributed graphs (adjacent and
//! general, weighted and not), every neighbour collective (blocking and non-blocking, checked
//! element by element, PROC_NULL blocks untouched) and the error classes.

use rmpi::{Communicator, ErrorClass, TopologyKind, PROC_NULL};

const UNTOUCHED: i32 = -7;

fn val(src: i32, blk: usize, e: usize) -> i32 {
    10000 * src + 100 * blk as i32 + e as i32
}

/// In-neighbours, and for each in-block the index of the out-block its sender filled for us.
fn plan(c: &Communicator) -> (Vec<i32>, Vec<usize>, usize) {
    match c.topology().unwrap() {
        Some(TopologyKind::Cartesian) => {
            let nd = c.cart_get().unwrap().dims.len();
            let mut ins = Vec::new();
            let mut from = Vec::new();
            for d in 0..nd {
                let (lo, hi) = c.shift(d as i32, 1).unwrap();
                ins.extend([lo, hi]);
                // Sent towards -1, received on the +1 side.
                from.extend([2 * d + 1, 2 * d]);
            }
            (ins, from, 2 * nd)
        }
        kind => {
            let (ins, outs) = match kind {
                Some(TopologyKind::Graph) => {
                    let nb = c.graph_neighbors(c.rank()).unwrap();
                    (nb.clone(), nb)
                }
                _ => {
                    let g = c.dist_graph_neighbors().unwrap();
                    (g.sources, g.destinations)
                }
            };
            // Everyone's out-list (padded), to find which of the sender's blocks is ours.
            const MAX: usize = 8;
            let mut mine = vec![-1; MAX + 1];
            mine[0] = outs.len() as i32;
            mine[1..=outs.len()].copy_from_slice(&outs);
            let mut all = vec![0; (MAX + 1) * c.size() as usize];
            c.all_gather(&mine, &mut all).unwrap();
            let me = c.rank();
            let from = (0..ins.len())
                .map(|i| {
                    let s = ins[i];
                    let k = ins[..i].iter().filter(|&&x| x == s).count();
                    let so = &all[s as usize * (MAX + 1)..][..MAX + 1];
                    (0..so[0] as usize)
                        .filter(|&j| so[1 + j] == me)
                        .nth(k)
                        .expect("the sender lists us")
                })
                .collect();
            (ins, from, outs.len())
        }
    }
}

fn check(what: &str, got: &[i32], ins: &[i32], stride: usize, want: impl Fn(usize, usize) -> i32) {
    for (i, &src) in ins.iter().enumerate() {
        for e in 0..stride {
            let w = if src == PROC_NULL {
                UNTOUCHED
            } else {
                want(i, e)
            };
            assert_eq!(
                got[i * stride + e],
                w,
                "{what}: block {i} elem {e} (from {src})"
            );
        }
    }
}

fn neighbours(name: &str, c: &Communicator) {
    let me = c.rank();
    let (ins, from, nout) = plan(c);
    let (ni, no) = c.neighbor_degrees().unwrap();
    assert_eq!((ni, no), (ins.len(), nout), "{name}: degrees");

    // allgather, blocking and not
    let send = [val(me, 0, 0), val(me, 0, 1)];
    let mut recv = vec![UNTOUCHED; 2 * ni];
    c.neighbor_all_gather(&send, &mut recv).unwrap();
    check(&format!("{name} allgather"), &recv, &ins, 2, |i, e| {
        val(ins[i], 0, e)
    });
    let mut recv = vec![UNTOUCHED; 2 * ni];
    rmpi::scope(|s| {
        c.ineighbor_all_gather(s, &send, &mut recv)
            .unwrap()
            .wait()
            .unwrap();
    });
    check(&format!("{name} iallgather"), &recv, &ins, 2, |i, e| {
        val(ins[i], 0, e)
    });

    // allgatherv: 2 elements at a stride of 3
    let mut recv = vec![UNTOUCHED; 3 * ni];
    let (counts, displs): (Vec<usize>, Vec<usize>) =
        (vec![2; ni], (0..ni).map(|i| 3 * i).collect());
    c.neighbor_all_gather_varcount(&send, &mut recv, &counts, &displs)
        .unwrap();
    check(&format!("{name} allgatherv"), &recv, &ins, 3, |i, e| {
        if e < 2 {
            val(ins[i], 0, e)
        } else {
            UNTOUCHED
        }
    });

    // alltoall, blocking and not
    let send: Vec<i32> = (0..no)
        .flat_map(|j| (0..3).map(move |e| val(me, j, e)))
        .collect();
    let mut recv = vec![UNTOUCHED; 3 * ni];
    c.neighbor_all_to_all(&send, &mut recv).unwrap();
    check(&format!("{name} alltoall"), &recv, &ins, 3, |i, e| {
        val(ins[i], from[i], e)
    });
    let mut recv = vec![UNTOUCHED; 3 * ni];
    rmpi::scope(|s| {
        c.ineighbor_all_to_all(s, &send, &mut recv)
            .unwrap()
            .wait()
            .unwrap();
    });
    check(&format!("{name} ialltoall"), &recv, &ins, 3, |i, e| {
        val(ins[i], from[i], e)
    });

    // alltoallv: block j carries 1 + j % 2 elements, stride 3 both sides; blocking and not
    let sc: Vec<usize> = (0..no).map(|j| 1 + j % 2).collect();
    let sd: Vec<usize> = (0..no).map(|j| 3 * j).collect();
    let rc: Vec<usize> = (0..ni)
        .map(|i| {
            if ins[i] == PROC_NULL {
                0
            } else {
                1 + from[i] % 2
            }
        })
        .collect();
    let rd: Vec<usize> = (0..ni).map(|i| 3 * i).collect();
    for nb in [false, true] {
        let mut recv = vec![UNTOUCHED; 3 * ni];
        if nb {
            rmpi::scope(|s| {
                c.ineighbor_all_to_all_varcount(s, &send, &sc, &sd, &mut recv, &rc, &rd)
                    .unwrap()
                    .wait()
                    .unwrap();
            });
        } else {
            c.neighbor_all_to_all_varcount(&send, &sc, &sd, &mut recv, &rc, &rd)
                .unwrap();
        }
        check(&format!("{name} alltoallv {nb}"), &recv, &ins, 3, |i, e| {
            if e < rc[i] {
                val(ins[i], from[i], e)
            } else {
                UNTOUCHED
            }
        });
    }
}

/// The error class of a call that must fail.
fn class<T>(r: rmpi::Result<T>) -> ErrorClass {
    match r {
        Ok(_) => panic!("the call succeeded"),
        Err(e) => e.class,
    }
}

fn main() {
    let universe = rmpi::initialize().unwrap();
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());

    assert_eq!(world.topology().unwrap(), None);

    // 2-D, periodic in the first dimension.
    let mut dims = [0, 0];
    rmpi::dims_create(size, &mut dims).unwrap();
    assert_eq!(dims[0] * dims[1], size);
    assert!(dims[0] >= dims[1]);
    let periods = [true, false];
    let grid = world.cart_create(&dims, &periods, false).unwrap().unwrap();
    assert_eq!(grid.topology().unwrap(), Some(TopologyKind::Cartesian));
    let info = grid.cart_get().unwrap();
    assert_eq!(info.dims, dims);
    assert_eq!(info.periods, periods);
    assert_eq!(info.coords, vec![rank / dims[1], rank % dims[1]]);
    for r in 0..size {
        assert_eq!(grid.cart_rank(&grid.coords(r).unwrap()).unwrap(), r);
    }
    let (src, dst) = grid.shift(0, 1).unwrap();
    let c = &info.coords;
    assert_eq!(dst, grid.cart_rank(&[c[0] + 1, c[1]]).unwrap());
    assert_eq!(src, grid.cart_rank(&[c[0] - 1, c[1]]).unwrap());
    let (src, dst) = grid.shift(1, 1).unwrap();
    assert_eq!(
        dst,
        if c[1] + 1 < dims[1] {
            rank + 1
        } else {
            PROC_NULL
        }
    );
    assert_eq!(src, if c[1] > 0 { rank - 1 } else { PROC_NULL });
    let dup = grid.duplicate().unwrap();
    assert_eq!(dup.cart_get().unwrap(), info);
    neighbours("cart 2-D", &grid);
    let row = grid.cart_sub(&[false, true]).unwrap();
    assert_eq!((row.rank(), row.size()), (c[1], dims[1]));
    assert_eq!(row.cart_get().unwrap().dims, vec![dims[1]]);
    drop(row);

    // 3-D.
    let mut d3 = [0; 3];
    rmpi::dims_create(size, &mut d3).unwrap();
    let cube = world
        .cart_create(&d3, &[false, true, true], true)
        .unwrap()
        .unwrap();
    neighbours("cart 3-D", &cube);

    // A periodic dimension of extent 1: every rank is its own neighbour there twice.
    let thin = world
        .cart_create(&[1, size], &[true, true], false)
        .unwrap()
        .unwrap();
    neighbours("cart 1 x n", &thin);

    // A smaller grid: the others get None.
    let part = world.cart_create(&[1], &[false], false).unwrap();
    assert_eq!(part.is_some(), rank == 0);

    // Graph ring.
    let n = size;
    let mut index = Vec::new();
    let mut edges = Vec::new();
    for i in 0..n {
        edges.extend([(i + 1) % n, (i - 1 + n) % n]);
        index.push(edges.len() as i32);
    }
    let ring = world.graph_create(&index, &edges, false).unwrap().unwrap();
    assert_eq!(ring.topology().unwrap(), Some(TopologyKind::Graph));
    assert_eq!(
        ring.graph_neighbors(rank).unwrap(),
        vec![(rank + 1) % n, (rank - 1 + n) % n]
    );
    neighbours("graph ring", &ring);

    // Adjacent distributed graph, weighted, with a self loop.
    let srcs = [(rank - 1 + n) % n, (rank - 2 + 2 * n) % n, rank];
    let dsts = [(rank + 1) % n, (rank + 2) % n, rank];
    let dg = world
        .dist_graph_create_adjacent(&srcs, Some(&[1, 2, 3]), &dsts, Some(&[4, 5, 6]), false)
        .unwrap();
    let nb = dg.dist_graph_neighbors().unwrap();
    assert_eq!(nb.sources, srcs);
    assert_eq!(nb.source_weights, Some(vec![1, 2, 3]));
    assert_eq!(nb.dest_weights, Some(vec![4, 5, 6]));
    neighbours("dist graph adjacent", &dg);
    let unweighted = world
        .dist_graph_create_adjacent(&srcs[..1], None, &[], None, false)
        .unwrap();
    assert_eq!(
        unweighted.dist_graph_neighbors().unwrap().source_weights,
        None
    );

    // General distributed graph: each rank gives its out-edges; rank 0 adds the self loops.
    let mut e = vec![(rank, (rank + 1) % n), (rank, (rank + 3) % n)];
    if rank == 0 {
        e.extend((0..n).map(|i| (i, i)));
    }
    let w: Vec<i32> = e.iter().map(|&(s, _)| 7 * s).collect();
    let gg = world.dist_graph_create(&e, Some(&w), false).unwrap();
    let nb = gg.dist_graph_neighbors().unwrap();
    assert_eq!(nb.sources.len(), 3);
    assert!(nb
        .source_weights
        .unwrap()
        .iter()
        .zip(&nb.sources)
        .all(|(w, s)| *w == 7 * s));
    neighbours("dist graph general", &gg);

    // Errors.
    assert_eq!(class(world.coords(0)), ErrorClass::Topology);
    assert_eq!(
        class(world.neighbor_all_gather(&[1], &mut [0])),
        ErrorClass::Topology
    );
    assert_eq!(class(ring.shift(0, 1)), ErrorClass::Topology);
    assert_eq!(class(grid.graph_neighbors(0)), ErrorClass::Topology);
    assert_eq!(class(grid.shift(2, 1)), ErrorClass::Dims);
    assert_eq!(class(grid.coords(size)), ErrorClass::Rank);
    assert_eq!(class(grid.cart_rank(&[0, dims[1]])), ErrorClass::Arg);
    assert_eq!(
        class(world.cart_create(&[size + 1], &[false], false)),
        ErrorClass::Arg
    );
    assert_eq!(
        class(world.cart_create(&[0], &[false], false)),
        ErrorClass::Dims
    );
    assert_eq!(class(rmpi::dims_create(7, &mut [0, 3])), ErrorClass::Dims);
    let mut wrong = vec![0; 1];
    if grid.neighbor_degrees().unwrap().0 != 1 {
        assert_eq!(
            class(grid.neighbor_all_gather(&[1, 2], &mut wrong)),
            ErrorClass::Count
        );
    }

    drop((grid, dup, cube, thin, part, ring, dg, unweighted, gg));
    if rank == 0 {
        println!("topology: OK");
    }
}
