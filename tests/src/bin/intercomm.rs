//! The Rust API for intercommunicators: create (world split into the first half and the
//! rest), queries, point-to-point to every remote rank with the remote rank as the source, a
//! barrier, merge in both orders, and scan refused with MPI_ERR_COMM. Needs np >= 2.

use rmpi::{ErrorClass, Source, Tag};

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    if size < 2 {
        println!("intercomm: OK");
        return;
    }
    let na = (size + 1) / 2;
    let in_a = rank < na;
    let local = world
        .split(Some(in_a as i32), rank)
        .expect("split")
        .expect("a color");
    let remote_leader = if in_a { na } else { 0 };
    let ic = local
        .intercomm_create(0, &world, remote_leader, 17)
        .expect("intercomm_create");
    assert!(ic.is_inter() && !world.is_inter());
    let (lsize, rsize) = (ic.size(), ic.remote_size().expect("remote size"));
    assert_eq!(lsize, if in_a { na } else { size - na });
    assert_eq!(rsize, size - lsize);
    assert_eq!(world.remote_size(), None);
    let first_remote = if in_a { na } else { 0 };
    let rg = ic.remote_group().expect("remote group");
    assert_eq!(
        rg.members(),
        (first_remote..first_remote + rsize).collect::<Vec<_>>()
    );

    // Every process sends its world rank to every remote rank; the sources are remote ranks.
    let me = [rank];
    rmpi::scope(|s| {
        let sends: Vec<_> = (0..rsize)
            .map(|r| ic.isend(s, &me, r, 3).expect("isend"))
            .collect();
        let mut seen = vec![false; rsize as usize];
        for _ in 0..rsize {
            let mut v = [0i32];
            let st = ic.recv(&mut v, Source::Any, Tag::Any).expect("recv");
            let src = st.source();
            assert_eq!(v[0], first_remote + src, "value from remote rank {src}");
            assert!(!seen[src as usize]);
            seen[src as usize] = true;
        }
        for s in sends {
            s.wait().expect("wait");
        }
    });
    ic.barrier().expect("barrier");

    // Scan is not defined on an intercommunicator (the other collectives are: inter_coll.rs).
    let mut buf = [0i32];
    let e = ic
        .scan(&[1i32], &mut buf, rmpi::Op::Sum)
        .expect_err("scan on an intercomm");
    assert_eq!(e.class, ErrorClass::Comm);

    // Merge: the group passing high = false comes first, whichever it is.
    for a_high in [false, true] {
        let m = ic
            .merge(if in_a { a_high } else { !a_high })
            .expect("merge");
        assert_eq!(m.size(), size);
        let local_rank = ic.rank();
        let want = match (in_a, a_high) {
            (true, false) => local_rank,
            (true, true) => size - na + local_rank,
            (false, false) => na + local_rank,
            (false, true) => local_rank,
        };
        assert_eq!(m.rank(), want, "merged rank (A high: {a_high})");
        let mut sum = [0i32];
        m.all_reduce(&[rank], &mut sum, rmpi::Op::Sum)
            .expect("all_reduce");
        assert_eq!(sum[0], size * (size - 1) / 2);
    }
    println!("intercomm: OK");
}
