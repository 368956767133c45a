//! Persistent collectives of the Rust API (MPI_*_init, MPI_Start, MPI_Wait/MPI_Test): barrier,
//! broadcast, reduce, all_reduce, reduce_scatter_block, gather, scatter, all_gather and
//! all_to_all, initialised once and run three times with new data each run, on the world and on
//! an intercommunicator (halves of the world), every value checked. The runs are started in the
//! reverse order of the inits (they match by init order) and completed by `test` polling or
//! `wait`. A buffer is refused while its run is active. Needs np >= 2.

use rmpi::{Communicator, ErrorClass, Op, PersistentCollective, PROC_NULL, ROOT};

fn val(who: i64, round: i64, j: i64) -> i64 {
    10_000 * round + 100 * who + j + 1
}

const SENTINEL: i64 = -7;

/// Start every request, last first; complete them alternately by `test` polling and `wait`.
fn run_all(reqs: &mut [&mut PersistentCollective<'_, i64>]) {
    for r in reqs.iter_mut().rev() {
        r.start().expect("start");
        assert!(r.is_active());
    }
    for (i, r) in reqs.iter_mut().enumerate() {
        if i % 2 == 0 {
            while !r.test().expect("test") {}
        } else {
            r.wait().expect("wait");
        }
        assert!(!r.is_active());
    }
}

fn intra(world: &Communicator) {
    let (me, n) = (world.rank() as i64, world.size() as i64);
    let nu = n as usize;
    let root = (n - 1) as i32; // not 0
    let mut bc = vec![0i64; 4];
    let (mut rs, mut rr) = (vec![0i64; 3], vec![SENTINEL; 3]);
    let (mut as_, mut ar) = (vec![0i64; 3], vec![0i64; 3]);
    let (mut ss, mut sr) = (vec![0i64; 2 * nu], vec![0i64; 2]);
    let (mut gs, mut gr) = (vec![0i64; 2], vec![SENTINEL; 2 * nu]);
    let (mut cs, mut cr) = (vec![0i64; 2 * nu], vec![0i64; 2]);
    let (mut ags, mut agr) = (vec![0i64; 2], vec![0i64; 2 * nu]);
    let (mut ts, mut tr) = (vec![0i64; 2 * nu], vec![0i64; 2 * nu]);
    rmpi::scope(|s| {
        let mut barrier = world.barrier_init(s).expect("barrier_init");
        let mut b = world
            .broadcast_init(s, &mut bc, root)
            .expect("broadcast_init");
        let mut r = world
            .reduce_init(s, &mut rs, &mut rr, Op::Sum, root)
            .expect("reduce_init");
        let mut a = world
            .all_reduce_init(s, &mut as_, &mut ar, Op::Max)
            .expect("all_reduce_init");
        let mut rsb = world
            .reduce_scatter_block_init(s, &mut ss, &mut sr, Op::Sum)
            .expect("reduce_scatter_block_init");
        let mut g = world
            .gather_init(s, &mut gs, &mut gr, root)
            .expect("gather_init");
        let mut c = world
            .scatter_init(s, &mut cs, &mut cr, root)
            .expect("scatter_init");
        let mut ag = world
            .all_gather_init(s, &mut ags, &mut agr)
            .expect("all_gather_init");
        let mut t = world
            .all_to_all_init(s, &mut ts, &mut tr)
            .expect("all_to_all_init");
        for round in 0..3 {
            let fill = |buf: &mut [i64], f: &dyn Fn(i64) -> i64| {
                for (j, x) in buf.iter_mut().enumerate() {
                    *x = f(j as i64);
                }
            };
            let bf = if me == root as i64 {
                val(me, round, 0)
            } else {
                SENTINEL
            };
            fill(b.send_buffer().unwrap(), &|j| bf + j);
            fill(r.send_buffer().unwrap(), &|j| val(me, round, j));
            fill(a.send_buffer().unwrap(), &|j| val(me, round, j));
            fill(rsb.send_buffer().unwrap(), &|j| val(me, round, j));
            fill(g.send_buffer().unwrap(), &|j| val(me, round, j));
            fill(c.send_buffer().unwrap(), &|k| val(me, round, k));
            fill(ag.send_buffer().unwrap(), &|j| val(me, round, j));
            fill(t.send_buffer().unwrap(), &|k| val(me, round, k));
            barrier.start().expect("barrier start");
            run_all(&mut [
                &mut b, &mut r, &mut a, &mut rsb, &mut g, &mut c, &mut ag, &mut t,
            ]);
            barrier.wait().expect("barrier wait");
            let rt = root as i64;
            for (j, &v) in b.recv_buffer().unwrap().iter().enumerate() {
                assert_eq!(v, val(rt, round, 0) + j as i64, "bcast round {round}");
            }
            for (j, &v) in r.recv_buffer().unwrap().iter().enumerate() {
                let want = if me == rt {
                    (0..n).map(|w| val(w, round, j as i64)).sum()
                } else {
                    SENTINEL
                };
                assert_eq!(v, want, "reduce round {round}: element {j}");
            }
            for (j, &v) in a.recv_buffer().unwrap().iter().enumerate() {
                assert_eq!(
                    v,
                    val(n - 1, round, j as i64),
                    "all_reduce max round {round}"
                );
            }
            for (k, &v) in rsb.recv_buffer().unwrap().iter().enumerate() {
                let j = 2 * me + k as i64;
                let want: i64 = (0..n).map(|w| val(w, round, j)).sum();
                assert_eq!(v, want, "reduce_scatter_block round {round}: element {k}");
            }
            for (k, &v) in g.recv_buffer().unwrap().iter().enumerate() {
                let want = if me == rt {
                    val(k as i64 / 2, round, k as i64 % 2)
                } else {
                    SENTINEL
                };
                assert_eq!(v, want, "gather round {round}: element {k}");
            }
            for (j, &v) in c.recv_buffer().unwrap().iter().enumerate() {
                assert_eq!(
                    v,
                    val(rt, round, 2 * me + j as i64),
                    "scatter round {round}"
                );
            }
            for (k, &v) in ag.recv_buffer().unwrap().iter().enumerate() {
                assert_eq!(
                    v,
                    val(k as i64 / 2, round, k as i64 % 2),
                    "all_gather round {round}"
                );
            }
            for (k, &v) in t.recv_buffer().unwrap().iter().enumerate() {
                let (from, j) = (k as i64 / 2, k as i64 % 2);
                assert_eq!(v, val(from, round, 2 * me + j), "all_to_all round {round}");
            }
        }
        // A buffer is the library's while its run is active.
        a.start().expect("start");
        let e = a.send_buffer().expect_err("send_buffer while active");
        assert_eq!(e.class, ErrorClass::Request);
        let e = a.start().expect_err("start while active");
        assert_eq!(e.class, ErrorClass::Request);
        a.wait().expect("wait");
        // Left active on purpose: the drop completes it.
        a.start().expect("start");
    });
}

/// On an intercommunicator: group A = the first half of the world, B the rest.
fn inter(world: &Communicator) {
    let (rank, size) = (world.rank(), world.size());
    let na = (size + 1) / 2;
    let in_a = rank < na;
    let local = world.split(Some(in_a as i32), rank).unwrap().unwrap();
    let ic = local
        .intercomm_create(0, world, if in_a { na } else { 0 }, 29)
        .expect("intercomm_create");
    let (g, l) = (if in_a { 0i64 } else { 1 }, ic.rank() as i64);
    let (lsize, rsize) = (ic.size() as i64, ic.remote_size().unwrap() as i64);
    let other = 1 - g;
    let who = |g: i64, l: i64| 10 * g + l;
    // Roots: group A's rank 0 for the broadcast and gather, group B's last rank for the
    // reduce and scatter.
    let root_for = |rg: i64, r: i64| -> i32 {
        if rg != g {
            r as i32
        } else if r == l {
            ROOT
        } else {
            PROC_NULL
        }
    };
    let size_b = if g == 1 { lsize } else { rsize };
    let (broot, rroot) = (root_for(0, 0), root_for(1, size_b - 1));
    let ru = rsize as usize;
    let mut bc = vec![SENTINEL; 3];
    let (mut rs, mut rr) = (vec![0i64; 2], vec![SENTINEL; 2]);
    let (mut as_, mut ar) = (vec![0i64; 2], vec![0i64; 2]);
    let (mut gs, mut gr) = (
        vec![0i64; 2],
        vec![SENTINEL; if broot == ROOT { 2 * ru } else { 0 }],
    );
    let (mut cs, mut cr) = (
        vec![0i64; if rroot == ROOT { 2 * ru } else { 0 }],
        vec![SENTINEL; if rroot >= 0 { 2 } else { 0 }],
    );
    let (mut ags, mut agr) = (vec![0i64; 2], vec![0i64; 2 * ru]);
    let (mut ts, mut tr) = (vec![0i64; 2 * ru], vec![0i64; 2 * ru]);
    let t_total = (lsize * rsize) as usize;
    let (mut ss, mut sr) = (vec![0i64; t_total], vec![0i64; ru]);
    rmpi::scope(|s| {
        let mut barrier = ic.barrier_init(s).expect("barrier_init");
        let mut b = ic
            .broadcast_init(s, &mut bc, broot)
            .expect("broadcast_init");
        let mut r = ic
            .reduce_init(s, &mut rs, &mut rr, Op::Sum, rroot)
            .expect("reduce_init");
        let mut a = ic
            .all_reduce_init(s, &mut as_, &mut ar, Op::Sum)
            .expect("all_reduce_init");
        let mut gq = ic
            .gather_init(s, &mut gs, &mut gr, broot)
            .expect("gather_init");
        let mut c = ic
            .scatter_init(s, &mut cs, &mut cr, rroot)
            .expect("scatter_init");
        let mut ag = ic
            .all_gather_init(s, &mut ags, &mut agr)
            .expect("all_gather_init");
        let mut t = ic
            .all_to_all_init(s, &mut ts, &mut tr)
            .expect("all_to_all_init");
        let mut rsb = ic
            .reduce_scatter_block_init(s, &mut ss, &mut sr, Op::Sum)
            .expect("reduce_scatter_block_init");
        let me = who(g, l);
        for round in 0..3 {
            let fill = |buf: &mut [i64], f: &dyn Fn(i64) -> i64| {
                for (j, x) in buf.iter_mut().enumerate() {
                    *x = f(j as i64);
                }
            };
            if broot == ROOT {
                fill(b.send_buffer().unwrap(), &|j| val(me, round, j));
            }
            fill(r.send_buffer().unwrap(), &|j| val(me, round, j));
            fill(a.send_buffer().unwrap(), &|j| val(me, round, j));
            fill(gq.send_buffer().unwrap(), &|j| val(me, round, j));
            fill(c.send_buffer().unwrap(), &|k| val(me, round, k));
            fill(ag.send_buffer().unwrap(), &|j| val(me, round, j));
            fill(t.send_buffer().unwrap(), &|k| val(me, round, k));
            fill(rsb.send_buffer().unwrap(), &|j| val(me, round, j));
            barrier.start().expect("barrier start");
            run_all(&mut [
                &mut b, &mut r, &mut a, &mut gq, &mut c, &mut ag, &mut t, &mut rsb,
            ]);
            barrier.wait().expect("barrier wait");
            let theirs = |i: i64| who(other, i);
            for (j, &v) in b.recv_buffer().unwrap().iter().enumerate() {
                let want = match broot {
                    PROC_NULL => SENTINEL,
                    ROOT => val(me, round, j as i64),
                    _ => val(who(0, 0), round, j as i64),
                };
                assert_eq!(v, want, "inter bcast round {round}: element {j}");
            }
            for (j, &v) in r.recv_buffer().unwrap().iter().enumerate() {
                let want = if rroot == ROOT {
                    (0..rsize).map(|i| val(theirs(i), round, j as i64)).sum()
                } else {
                    SENTINEL
                };
                assert_eq!(v, want, "inter reduce round {round}: element {j}");
            }
            for (j, &v) in a.recv_buffer().unwrap().iter().enumerate() {
                let want: i64 = (0..rsize).map(|i| val(theirs(i), round, j as i64)).sum();
                assert_eq!(v, want, "inter all_reduce round {round}: element {j}");
            }
            for (k, &v) in gq.recv_buffer().unwrap().iter().enumerate() {
                let want = val(theirs(k as i64 / 2), round, k as i64 % 2);
                assert_eq!(v, want, "inter gather round {round}: element {k}");
            }
            for (j, &v) in c.recv_buffer().unwrap().iter().enumerate() {
                let want = val(who(1, size_b - 1), round, 2 * l + j as i64);
                assert_eq!(v, want, "inter scatter round {round}: element {j}");
            }
            for (k, &v) in ag.recv_buffer().unwrap().iter().enumerate() {
                let want = val(theirs(k as i64 / 2), round, k as i64 % 2);
                assert_eq!(v, want, "inter all_gather round {round}: element {k}");
            }
            for (k, &v) in t.recv_buffer().unwrap().iter().enumerate() {
                let want = val(theirs(k as i64 / 2), round, 2 * l + k as i64 % 2);
                assert_eq!(v, want, "inter all_to_all round {round}: element {k}");
            }
            for (k, &v) in rsb.recv_buffer().unwrap().iter().enumerate() {
                let j = l * rsize + k as i64;
                let want: i64 = (0..rsize).map(|i| val(theirs(i), round, j)).sum();
                assert_eq!(
                    v, want,
                    "inter reduce_scatter_block round {round}: element {k}"
                );
            }
        }
    });
    ic.barrier().expect("barrier");
}

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    assert!(world.size() >= 2, "needs np >= 2");
    intra(&world);
    inter(&world);
    println!("persistent_coll: OK");
}
