//! The Rust API counterparts of tests/c/coll_split_p2p.c, coll_overlap.c and coll_errors.c:
//! collectives on a split communicator while isend/irecv (some rendezvous-sized, one wildcard)
//! are pending on WORLD; non-blocking collectives on WORLD, a duplicate and a split in flight
//! together; hundreds of outstanding all-reduces; the error classes of bad collective
//! arguments, with the ranks still in step afterwards; and the Rust API pieces the audit added
//! (ibsend, irsend, bsend_init, rsend_init, start_all, test_any, test_some, elements_of,
//! reduce_local, version, abi_version, wtick,
//! is_thread_main, reduce_scatter, ireduce_scatter and the non-blocking varcount collectives).
//! Panics on any mismatch.

use rmpi::{ErrorClass, Op, Source, Tag};

fn split_beside_p2p(world: &rmpi::Communicator) {
    let (rank, n) = (world.rank(), world.size());
    let color = rank % 2;
    let sub = world
        .split(Some(color), rank)
        .expect("split")
        .expect("member");
    assert_eq!(sub.rank(), rank / 2);
    let (next, prev) = ((rank + 1) % n, (rank + n - 1) % n);
    for it in 0..30 {
        let len = if it % 10 == 0 { 50_000 } else { 64 };
        let send: Vec<i32> = (0..len)
            .map(|j| rank * 100_000 + it * 100 + (j % 100) as i32)
            .collect();
        let mut recv = vec![-1i32; len];
        let mut wild = [-1i32];
        let wsend = [rank * 1000 + it];
        let expect: i32 = (color..n).step_by(2).map(|r| r + it).sum();
        let mine = [rank + it];
        let mut isum = [0i32];
        let (ring, wildst) = rmpi::scope(|s| {
            // The specific receive first, so the ring message cannot land in the wildcard one.
            let r0 = world.irecv(s, &mut recv, prev, it).expect("irecv");
            let r1 = world
                .irecv(s, &mut wild, Source::Any, Tag::Any)
                .expect("irecv any");
            let r2 = world.isend(s, &send, next, it).expect("isend");

            let mut sum = [0i32];
            sub.all_reduce(&mine, &mut sum, Op::Sum)
                .expect("all_reduce");
            assert_eq!(sum[0], expect, "it {it}: all_reduce on the split");
            let root = it % sub.size();
            let mut b = [if sub.rank() == root {
                it * 7 + color
            } else {
                -1
            }];
            sub.broadcast(&mut b, root).expect("broadcast");
            assert_eq!(b[0], it * 7 + color, "it {it}: broadcast");
            let mut g = vec![-1i32; sub.size() as usize];
            sub.all_gather(&[rank], &mut g).expect("all_gather");
            for (i, &v) in g.iter().enumerate() {
                assert_eq!(v, color + 2 * i as i32, "it {it}: all_gather[{i}]");
            }
            let c = sub
                .iall_reduce(s, &mine, &mut isum, Op::Sum)
                .expect("iall_reduce");
            // Sent only now: the wildcard receive was pending through the collectives.
            let r3 = world.isend(s, &wsend, next, 30_000 + it).expect("isend");
            c.wait().expect("iall_reduce wait");
            let ring = r0.wait().expect("ring recv");
            let wildst = r1.wait().expect("wildcard recv");
            r2.wait().expect("ring send");
            r3.wait().expect("wildcard send");
            (ring, wildst)
        });
        assert_eq!(isum[0], expect, "it {it}: iall_reduce");
        assert_eq!((ring.source(), ring.tag()), (prev, it));
        assert_eq!((wildst.source(), wildst.tag()), (prev, 30_000 + it));
        assert_eq!(wild[0], prev * 1000 + it, "it {it}: wildcard payload");
        for (j, &v) in recv.iter().enumerate() {
            assert_eq!(
                v,
                prev * 100_000 + it * 100 + (j % 100) as i32,
                "it {it}: ring[{j}]"
            );
        }
    }
}

fn overlapping(world: &rmpi::Communicator) {
    let (rank, n) = (world.rank(), world.size());
    let dup = world.duplicate().expect("duplicate");
    let split = world
        .split(Some(rank % 3), -rank)
        .expect("split")
        .expect("member");
    let members: Vec<i32> = (rank % 3..n).step_by(3).collect();
    let mut bc = [0i32; 100];
    if rank == n - 1 {
        bc.iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = 3 * i as i32 + 1);
    }
    let (me, one) = ([rank], [1i64]);
    let (mut sum, mut mx, mut sc) = ([0i32], [0i32], [0i64]);
    let mut g = vec![-1i32; n as usize];
    let mut many = vec![[0i32; 1]; 200];
    let inputs: Vec<[i32; 1]> = (0..200).map(|k| [k + rank]).collect();
    rmpi::scope(|s| {
        let mut reqs = vec![
            dup.ibroadcast(s, &mut bc, n - 1).expect("ibroadcast"),
            split
                .iall_reduce(s, &me, &mut sum, Op::Sum)
                .expect("iall_reduce"),
            world.igather(s, &me, &mut g, 0).expect("igather"),
            dup.iscan(s, &one, &mut sc, Op::Sum).expect("iscan"),
            split.ibarrier(s).expect("ibarrier"),
            world
                .iall_reduce(s, &me, &mut mx, Op::Max)
                .expect("iall_reduce max"),
        ];
        for (k, (inp, out)) in inputs.iter().zip(many.iter_mut()).enumerate() {
            let c: &rmpi::Communicator = if k % 2 == 0 { &dup } else { &split };
            reqs.push(c.iall_reduce(s, inp, out, Op::Sum).expect("many"));
        }
        rmpi::wait_all(reqs).expect("wait_all");
    });
    for (i, &v) in bc.iter().enumerate() {
        assert_eq!(v, 3 * i as i32 + 1, "ibroadcast[{i}]");
    }
    assert_eq!(sum[0], members.iter().sum::<i32>());
    assert_eq!(mx[0], n - 1);
    assert_eq!(sc[0], rank as i64 + 1);
    if rank == 0 {
        assert_eq!(g, (0..n).collect::<Vec<_>>());
    }
    for (k, out) in many.iter().enumerate() {
        let k = k as i32;
        let want = if k % 2 == 0 {
            k * n + n * (n - 1) / 2
        } else {
            members.iter().map(|r| k + r).sum()
        };
        assert_eq!(out[0], want, "outstanding all_reduce {k}");
    }
}

fn errors(world: &rmpi::Communicator) {
    let n = world.size();
    let class = |r: rmpi::Result<()>| r.expect_err("must fail").class;
    let mut x = [1i32; 4];
    let mut y = [0i32; 4];
    assert_eq!(class(world.broadcast(&mut x, n)), ErrorClass::Root);
    assert_eq!(class(world.broadcast(&mut x, -1)), ErrorClass::Root);
    assert_eq!(
        class(world.reduce(&x, &mut y, Op::Sum, n)),
        ErrorClass::Root
    );
    assert_eq!(
        class(world.all_reduce(&x, &mut y[..3], Op::Sum)),
        ErrorClass::Count
    );
    let f = [1.5f64];
    let mut fo = [0f64];
    assert_eq!(
        class(world.all_reduce(&f, &mut fo, Op::Band)),
        ErrorClass::Op
    );
    let mut g = vec![0i32; n as usize + 1];
    assert!(
        world.all_gather(&[1i32], &mut g).is_err(),
        "all_gather into a wrong-size buffer"
    );
    // Still in step: no refused call took a collective sequence number.
    let mut s = [0i32];
    world
        .all_reduce(&[world.rank()], &mut s, Op::Sum)
        .expect("all_reduce");
    assert_eq!(s[0], n * (n - 1) / 2);
}

fn api_additions(world: &rmpi::Communicator) {
    let (rank, n) = (world.rank(), world.size());
    let (next, prev) = ((rank + 1) % n, (rank + n - 1) % n);
    assert_eq!(rmpi::version(), (5, 0));
    assert_eq!(rmpi::abi_version(), (1, 0));
    assert!(rmpi::wtick() > 0.0 && rmpi::wtick() <= 1e-3);
    assert!(rmpi::is_thread_main());
    assert!(!std::thread::spawn(rmpi::is_thread_main).join().unwrap());

    // reduce_local: input plays the lower ranks' part.
    let mut inout = [10i64, 20, 30];
    rmpi::reduce_local(&[1i64, 2, 3], &mut inout, Op::Sum).expect("reduce_local");
    assert_eq!(inout, [11, 22, 33]);
    let f = |a: &[i64], b: &mut [i64]| b.iter_mut().zip(a).for_each(|(y, x)| *y += 100 * x);
    rmpi::reduce_local(&[1i64, 2, 3], &mut inout, rmpi::UserOp::non_commutative(&f))
        .expect("reduce_local user op");
    assert_eq!(inout, [111, 222, 333]);
    let class = |r: rmpi::Result<()>| r.expect_err("must fail").class;
    assert_eq!(
        class(rmpi::reduce_local(&[1i64], &mut inout, Op::Sum)),
        ErrorClass::Count
    );
    assert_eq!(
        class(rmpi::reduce_local(&[1.0f64], &mut [2.0], Op::Bxor)),
        ErrorClass::Op
    );

    // irsend: every receive is posted before the barrier.
    let big: Vec<u32> = (0..40_000).map(|i| i * 3 + rank as u32).collect();
    let mut got = vec![0u32; big.len()];
    rmpi::scope(|s| {
        let r = world.irecv(s, &mut got, prev, 5).expect("irecv");
        world.barrier().expect("barrier");
        let w = world.irsend(s, &big, next, 5).expect("irsend");
        w.wait().expect("irsend wait");
        r.wait().expect("irecv wait");
    });
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, &v)| v == i as u32 * 3 + prev as u32));

    // ibsend from the attached buffer.
    let att = rmpi::attach_buffer(vec![0u8; 4096 + rmpi::BSEND_OVERHEAD]).expect("attach");
    let msg = [rank as u64; 16];
    let mut back = [0u64; 16];
    rmpi::scope(|s| {
        let r = world.irecv(s, &mut back, prev, 6).expect("irecv");
        world
            .ibsend(s, &msg, next, 6)
            .expect("ibsend")
            .wait()
            .expect("ibsend wait");
        r.wait().expect("irecv wait");
    });
    assert_eq!(back, [prev as u64; 16]);
    att.detach().expect("detach");

    // test_any / test_some never block; nothing is sent before the barrier.
    let (mut a, mut b, mut c) = ([0i32], [0i32], [0i32]);
    rmpi::scope(|s| {
        let mut reqs = vec![
            world.irecv(s, &mut a, prev, 77).expect("irecv"),
            world.irecv(s, &mut b, prev, 78).expect("irecv"),
            world.irecv(s, &mut c, prev, 79).expect("irecv"),
        ];
        assert!(
            rmpi::test_any(&mut reqs).is_none(),
            "test_any before any send"
        );
        assert!(
            rmpi::test_some(&mut reqs).is_empty(),
            "test_some before any send"
        );
        world.barrier().expect("barrier");
        for t in 77..80 {
            world.send(&[t * 10 + rank], next, t).expect("send");
        }
        let mut tags = Vec::new();
        while tags.is_empty() {
            if let Some((_, st)) = rmpi::test_any(&mut reqs) {
                tags.push(st.expect("status").tag());
            }
        }
        while !reqs.is_empty() {
            for (i, st) in rmpi::test_some(&mut reqs) {
                assert!(i < 3);
                tags.push(st.expect("status").tag());
            }
        }
        tags.sort();
        assert_eq!(tags, [77, 78, 79]);
        assert!(rmpi::test_any(&mut reqs).is_none());
    });
    assert_eq!([a[0], b[0], c[0]], [770 + prev, 780 + prev, 790 + prev]);

    // Persistent buffered and ready sends, started with start_all.
    let att = rmpi::attach_buffer(vec![0u8; 2 * (64 + rmpi::BSEND_OVERHEAD)]).expect("attach");
    let (mut sb, mut sr) = ([0i64; 8], [0i64; 8]);
    let (mut rb, mut rr) = ([0i64; 8], [0i64; 8]);
    rmpi::scope(|s| {
        let mut recvs = vec![
            world.recv_init(s, &mut rb, prev, 10).expect("recv_init"),
            world.recv_init(s, &mut rr, prev, 11).expect("recv_init"),
        ];
        let mut sends = vec![
            world.bsend_init(s, &mut sb, next, 10).expect("bsend_init"),
            world.rsend_init(s, &mut sr, next, 11).expect("rsend_init"),
        ];
        for run in 0..3i64 {
            for (k, p) in sends.iter_mut().enumerate() {
                p.buffer()
                    .expect("between runs")
                    .fill(rank as i64 * 100 + run * 10 + k as i64);
            }
            rmpi::start_all(&mut recvs).expect("start_all receives");
            world.barrier().expect("barrier"); // every ready send's receive is posted
            rmpi::start_all(&mut sends).expect("start_all sends");
            for p in sends.iter_mut().chain(recvs.iter_mut()) {
                p.wait().expect("persistent wait");
            }
            for (k, p) in recvs.iter_mut().enumerate() {
                let want = prev as i64 * 100 + run * 10 + k as i64;
                assert_eq!(
                    p.buffer().expect("after run"),
                    [want; 8],
                    "run {run} req {k}"
                );
            }
        }
    });
    att.detach().expect("detach");

    // elements_of counts basic elements of a partly received derived element.
    let pair = rmpi::UserDatatype::contiguous(2, &rmpi::UserDatatype::of::<i32>()).expect("type");
    let mut five = [0i32; 8];
    let st = rmpi::scope(|s| {
        let r = world.irecv(s, &mut five, prev, 12).expect("irecv");
        world.send(&[1i32, 2, 3, 4, 5], next, 12).expect("send");
        r.wait().expect("recv")
    });
    assert_eq!(st.count_of(&pair), None);
    assert_eq!(st.elements_of(&pair), Some(5));
}

/// Prefix sums: displacements of blocks of the given counts laid end to end.
fn prefix(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect()
}

fn varcount_forms(world: &rmpi::Communicator) {
    let (rank, n) = (world.rank(), world.size());
    let (me, nu) = (rank as usize, n as usize);
    let tri = (n * (n - 1) / 2) as i64;
    // reduce_scatter / ireduce_scatter: rank i gets i % 3 + 1 elements.
    let rs_counts: Vec<usize> = (0..nu).map(|i| i % 3 + 1).collect();
    let off = prefix(&rs_counts)[me];
    let total: usize = rs_counts.iter().sum();
    let send: Vec<i64> = (0..total).map(|k| rank as i64 * 1000 + k as i64).collect();
    let mut got = vec![0i64; rs_counts[me]];
    world
        .reduce_scatter(&send, &mut got, &rs_counts, Op::Sum)
        .expect("reduce_scatter");
    for (k, &v) in got.iter().enumerate() {
        assert_eq!(
            v,
            1000 * tri + n as i64 * (off + k) as i64,
            "reduce_scatter[{k}]"
        );
    }
    let class = |r: rmpi::Result<()>| r.expect_err("must fail").class;
    assert_eq!(
        class(world.reduce_scatter(&send, &mut got, &rs_counts[1..], Op::Sum)),
        ErrorClass::Count
    );
    assert_eq!(
        class(world.reduce_scatter(&send, &mut got[1..], &rs_counts, Op::Sum)),
        ErrorClass::Count
    );

    // Everything else non-blocking, all in flight at once.
    let counts: Vec<usize> = (0..nu).map(|i| i + 1).collect();
    let displs = prefix(&counts);
    let all = counts.iter().sum::<usize>();
    let mine: Vec<i32> = (0..=rank).map(|j| rank * 10 + j).collect();
    let root = n / 2;
    let mut gathered = vec![-1i32; all];
    let scatter_src: Vec<i32> = (0..all as i32).collect();
    let mut scattered = vec![-1i32; me + 1];
    let mut allg = vec![-1i32; all];
    let sc: Vec<usize> = (0..nu).map(|j| j % 3 + 1).collect();
    let rc = vec![me % 3 + 1; nu];
    let (sd, rdp) = (prefix(&sc), prefix(&rc));
    let a2a_send: Vec<i32> = (0..nu)
        .flat_map(|j| (0..sc[j]).map(move |k| rank * 1000 + j as i32 * 10 + k as i32))
        .collect();
    let mut a2a_recv = vec![-1i32; rc.iter().sum()];
    let mut irs = vec![0i64; rs_counts[me]];
    rmpi::scope(|s| {
        let reqs = vec![
            world
                .ireduce_scatter(s, &send, &mut irs, &rs_counts, Op::Max)
                .expect("ireduce_scatter"),
            world
                .igather_varcount(s, &mine, &mut gathered, &counts, &displs, root)
                .expect("igather_varcount"),
            world
                .iscatter_varcount(s, &scatter_src, &counts, &displs, &mut scattered, 0)
                .expect("iscatter_varcount"),
            world
                .iall_gather_varcount(s, &mine, &mut allg, &counts, &displs)
                .expect("iall_gather_varcount"),
            world
                .iall_to_all_varcount(s, &a2a_send, &sc, &sd, &mut a2a_recv, &rc, &rdp)
                .expect("iall_to_all_varcount"),
        ];
        rmpi::wait_all(reqs).expect("wait_all");
    });
    for (k, &v) in irs.iter().enumerate() {
        assert_eq!(
            v,
            (n as i64 - 1) * 1000 + (off + k) as i64,
            "ireduce_scatter[{k}]"
        );
    }
    let expect_gather: Vec<i32> = (0..n)
        .flat_map(|i| (0..=i).map(move |j| i * 10 + j))
        .collect();
    if rank == root {
        assert_eq!(gathered, expect_gather, "igather_varcount");
    }
    assert_eq!(allg, expect_gather, "iall_gather_varcount");
    let first = displs[me] as i32;
    assert_eq!(scattered, (first..first + rank + 1).collect::<Vec<_>>());
    for i in 0..nu {
        for k in 0..rc[i] {
            let want = i as i32 * 1000 + rank * 10 + k as i32;
            assert_eq!(
                a2a_recv[rdp[i] + k],
                want,
                "iall_to_all_varcount from {i}[{k}]"
            );
        }
    }
}

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    split_beside_p2p(&world);
    overlapping(&world);
    errors(&world);
    api_additions(&world);
    varcount_forms(&world);
    world.barrier().expect("barrier");
    if world.rank() == 0 {
        println!(" No Errors");
    }
}
