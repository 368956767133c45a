//! The Rust collective API: broadcast, reduce (also in place), all_reduce with predefined and
//! user ops (a non-commutative 2x2 matrix product must come out in rank order), scan/exscan,
//! gather/scatter/all_gather/all_to_all and their varcount forms, reduce_scatter_block, and the
//! non-blocking forms inside a scope, several outstanding at once. Panics on any mismatch.

use rmpi::{Op, UserOp};

/// A 2x2 matrix mod 251 packed in a u32: [a b; c d] as bytes.
fn mul(x: u32, y: u32) -> u32 {
    let (a, b, c, d) = (x & 255, x >> 8 & 255, x >> 16 & 255, x >> 24);
    let (e, f, g, h) = (y & 255, y >> 8 & 255, y >> 16 & 255, y >> 24);
    let m = |v: u32| v % 251;
    m(a * e + b * g) | m(a * f + b * h) << 8 | m(c * e + d * g) << 16 | m(c * f + d * h) << 24
}

fn elem(r: i32, i: usize) -> u32 {
    (r as u32 + 2) | ((i % 7) as u32 + 1) << 8 | (r as u32 % 3) << 16 | 1 << 24
}

fn ordered(from: i32, to: i32, i: usize) -> u32 {
    (from..to).fold(1 | 1 << 24, |m, r| mul(m, elem(r, i)))
}

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, n) = (world.rank(), world.size());
    let tri = |k: i32| (k * (k - 1) / 2) as i64;

    for root in 0..n {
        let mut buf: Vec<u16> = if rank == root {
            (0..1000).map(|i| i as u16 ^ root as u16).collect()
        } else {
            vec![0; 1000]
        };
        world.broadcast(&mut buf, root).expect("broadcast");
        assert!(buf
            .iter()
            .enumerate()
            .all(|(i, &v)| v == i as u16 ^ root as u16));

        let send: Vec<i64> = (0..10).map(|i| rank as i64 + i).collect();
        let mut recv = vec![0i64; if rank == root { 10 } else { 0 }];
        world
            .reduce(&send, &mut recv, Op::Sum, root)
            .expect("reduce");
        if rank == root {
            assert!((0..10).all(|i| recv[i] == tri(n) + n as i64 * i as i64));
        }
        let mut inplace = send.clone();
        world
            .reduce_in_place(&mut inplace, Op::Max, root)
            .expect("reduce_in_place");
        if rank == root {
            assert!((0..10).all(|i| inplace[i] == n as i64 - 1 + i as i64));
        }
    }

    // All-reduce, small and large (1 MiB of f64: the ring), identical bits everywhere.
    for len in [0usize, 1, 3, 131_072] {
        let send: Vec<f64> = (0..len)
            .map(|i| 1.0 / (rank as f64 + 1.0 + i as f64))
            .collect();
        let mut sum = vec![0f64; len];
        world
            .all_reduce(&send, &mut sum, Op::Sum)
            .expect("all_reduce");
        let mut check = sum.clone();
        world.broadcast(&mut check, 0).expect("broadcast");
        assert!(sum
            .iter()
            .zip(&check)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        let mut mx: Vec<i32> = (0..len as i32).map(|i| i + rank).collect();
        world
            .all_reduce_in_place(&mut mx, Op::Max)
            .expect("all_reduce_in_place");
        assert!(mx.iter().enumerate().all(|(i, &v)| v == i as i32 + n - 1));
    }
    let mut band = [0u8];
    world
        .all_reduce(&[0xf0 | rank as u8], &mut band, Op::Bor)
        .expect("bor");
    assert_eq!(band[0] & 0xf0, 0xf0);

    // User ops: a closure over slices; non-commutative in rank order, small and large.
    let matmul = |a: &[u32], b: &mut [u32]| {
        for (x, y) in a.iter().zip(b.iter_mut()) {
            *y = mul(*x, *y);
        }
    };
    for len in [1usize, 70_000] {
        let send: Vec<u32> = (0..len).map(|i| elem(rank, i)).collect();
        let mut out = vec![0u32; len];
        world
            .all_reduce(&send, &mut out, UserOp::non_commutative(&matmul))
            .expect("user all_reduce");
        assert!((0..len).all(|i| out[i] == ordered(0, n, i)), "matmul order");
        world
            .scan(&send, &mut out, UserOp::non_commutative(&matmul))
            .expect("user scan");
        assert!(
            (0..len).all(|i| out[i] == ordered(0, rank + 1, i)),
            "scan order"
        );
        world
            .exscan(&send, &mut out, UserOp::non_commutative(&matmul))
            .expect("user exscan");
        if rank > 0 {
            assert!(
                (0..len).all(|i| out[i] == ordered(0, rank, i)),
                "exscan order"
            );
        }
    }
    let add = |a: &[i64], b: &mut [i64]| b.iter_mut().zip(a).for_each(|(y, x)| *y += x);
    let mut s = [0i64; 2];
    world
        .all_reduce(&[rank as i64, 1], &mut s, UserOp::commutative(&add))
        .expect("user sum");
    assert_eq!(s, [tri(n), n as i64]);
    let mut pre = [0i64];
    world.scan(&[1i64], &mut pre, Op::Sum).expect("scan");
    assert_eq!(pre[0], rank as i64 + 1);

    // Gather / scatter / all_gather / all_to_all, with varcount forms.
    let root = n - 1;
    let mine = [rank as u32; 3];
    let mut all = vec![0u32; if rank == root { 3 * n as usize } else { 0 }];
    world.gather(&mine, &mut all, root).expect("gather");
    if rank == root {
        assert!(all.iter().enumerate().all(|(i, &v)| v == i as u32 / 3));
    }
    let mut back = [9u32; 3];
    world.scatter(&all, &mut back, root).expect("scatter");
    assert_eq!(back, mine);
    let mut everyone = vec![0u32; 3 * n as usize];
    world.all_gather(&mine, &mut everyone).expect("all_gather");
    assert!(everyone.iter().enumerate().all(|(i, &v)| v == i as u32 / 3));
    // Rank r contributes r elements.
    let counts: Vec<usize> = (0..n as usize).collect();
    let displs: Vec<usize> = counts
        .iter()
        .scan(0, |o, c| {
            let d = *o;
            *o += c;
            Some(d)
        })
        .collect();
    let total: usize = counts.iter().sum();
    let minev = vec![rank as i16; rank as usize];
    let mut allv = vec![-1i16; total];
    world
        .all_gather_varcount(&minev, &mut allv, &counts, &displs)
        .expect("all_gather_varcount");
    for r in 0..n as usize {
        assert!(allv[displs[r]..displs[r] + counts[r]]
            .iter()
            .all(|&v| v == r as i16));
    }
    let mut gv = vec![-1i16; if rank == 0 { total } else { 0 }];
    world
        .gather_varcount(&minev, &mut gv, &counts, &displs, 0)
        .expect("gather_varcount");
    if rank == 0 {
        assert_eq!(gv, allv);
    }
    let mut sv = vec![0i16; rank as usize];
    world
        .scatter_varcount(&allv, &counts, &displs, &mut sv, 0)
        .expect("scatter_varcount");
    assert_eq!(sv, minev);
    let a2a: Vec<i32> = (0..n).flat_map(|p| [rank * 100 + p; 2]).collect();
    let mut got = vec![0i32; 2 * n as usize];
    world.all_to_all(&a2a, &mut got).expect("all_to_all");
    assert!((0..n).all(|p| got[2 * p as usize] == p * 100 + rank));
    // Varcount all-to-all: one element to every rank, block order reversed on the send side.
    let sc = vec![1usize; n as usize];
    let sd: Vec<usize> = (0..n as usize).rev().collect();
    let rd: Vec<usize> = (0..n as usize).collect();
    let vsend: Vec<i32> = (0..n).rev().map(|p| rank * 100 + p).collect();
    let mut vrecv = vec![0i32; n as usize];
    world
        .all_to_all_varcount(&vsend, &sc, &sd, &mut vrecv, &sc, &rd)
        .expect("all_to_all_varcount");
    assert!((0..n).all(|p| vrecv[p as usize] == p * 100 + rank));
    let rs_in: Vec<u64> = (0..2 * n as u64).collect();
    let mut rs_out = [0u64; 2];
    world
        .reduce_scatter_block(&rs_in, &mut rs_out, Op::Sum)
        .expect("reduce_scatter_block");
    assert_eq!(
        rs_out,
        [2 * rank as u64 * n as u64, (2 * rank as u64 + 1) * n as u64]
    );

    // Errors come back as values.
    let e = world
        .all_reduce(&[1.0f64], &mut [0.0], Op::Band)
        .unwrap_err();
    assert_eq!(e.class, rmpi::ErrorClass::Op);
    let e = world.broadcast(&mut [0u8], n).unwrap_err();
    assert_eq!(e.class, rmpi::ErrorClass::Root);

    // Several non-blocking collectives outstanding in one scope, with a user op.
    let data: Vec<u32> = (0..50_000).map(|i| elem(rank, i)).collect();
    let mut prod = vec![0u32; data.len()];
    let mut bc = if rank == 0 { [7u64, 8, 9] } else { [0; 3] };
    let mut sums = [0i32; 4];
    let mut gathered = vec![0i32; n as usize];
    let mut a2 = vec![0i32; n as usize];
    let a2s: Vec<i32> = (0..n).map(|p| rank * 10 + p).collect();
    let mut scanned = [0i32];
    let me = [rank];
    let small = [1, 2, 3, rank];
    rmpi::scope(|s| {
        let r1 = world
            .iall_reduce(s, &data, &mut prod, UserOp::non_commutative(&matmul))
            .expect("iall_reduce");
        let r2 = world.ibroadcast(s, &mut bc, 0).expect("ibroadcast");
        let r3 = world.ibarrier(s).expect("ibarrier");
        let mut r4 = world
            .iall_reduce(s, &small, &mut sums, Op::Sum)
            .expect("iall_reduce");
        let r5 = world
            .iall_gather(s, &me, &mut gathered)
            .expect("iall_gather");
        let r6 = world.iall_to_all(s, &a2s, &mut a2).expect("iall_to_all");
        let r7 = world.iscan(s, &me, &mut scanned, Op::Sum).expect("iscan");
        while r4.test().expect("test").is_none() {}
        rmpi::wait_all(vec![r7, r6, r5, r3, r2, r1]).expect("wait_all");
    });
    assert!((0..data.len()).all(|i| prod[i] == ordered(0, n, i)));
    assert_eq!(bc, [7, 8, 9]);
    assert_eq!(sums, [n, 2 * n, 3 * n, tri(n) as i32]);
    assert!((0..n).all(|p| gathered[p as usize] == p));
    assert!((0..n).all(|p| a2[p as usize] == p * 10 + rank));
    assert_eq!(scanned[0], (rank + 1) * rank / 2);
    // The other non-blocking forms, all outstanding together.
    let mut ex = [-1i64];
    let mut g = vec![0i32; if rank == 1 % n { n as usize } else { 0 }];
    let sc_src: Vec<i32> = (0..n).map(|p| p * 3).collect();
    let mut sc_dst = [0i32];
    let rsb_src: Vec<u16> = (0..n as u16).collect();
    let mut rsb = [0u16];
    let exin = [rank as i64 + 1];
    rmpi::scope(|s| {
        let a = world.iexscan(s, &exin, &mut ex, Op::Sum).expect("iexscan");
        let b = world.igather(s, &me, &mut g, 1 % n).expect("igather");
        let c = world
            .iscatter(s, &sc_src, &mut sc_dst, 0)
            .expect("iscatter");
        let d = world
            .ireduce_scatter_block(s, &rsb_src, &mut rsb, Op::Max)
            .expect("ireduce_scatter_block");
        rmpi::wait_all(vec![d, c, b, a]).expect("wait_all");
    });
    if rank > 0 {
        assert_eq!(ex[0], (rank as i64) * (rank as i64 + 1) / 2);
    }
    if rank == 1 % n {
        assert!((0..n).all(|p| g[p as usize] == p));
    }
    assert_eq!(sc_dst[0], rank * 3);
    assert_eq!(rsb[0], rank as u16);

    let mut red = [0i64];
    let one = [rank as i64];
    rmpi::scope(|s| {
        let _r = world
            .ireduce(s, &one, &mut red, Op::Sum, 0)
            .expect("ireduce");
        // Dropping the request waits for it.
    });
    if rank == 0 {
        assert_eq!(red[0], tri(n));
    }

    world.barrier().expect("barrier");
    if rank == 0 {
        println!("collectives: OK ({n} ranks)");
    }
}
