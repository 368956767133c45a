//! The Rust non-blocking API: every rank exchanges with both ring neighbours using
//! isend/irecv inside a scope, polls one request with test(), waits for the rest with
//! wait_all, leaks one request with mem::forget (the scope must still complete it before the
//! buffer is reused), and checks sendrecv.

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let right = (rank + 1) % size;
    let left = (rank + size - 1) % size;
    for &n in &[1usize, 1000, 5000, 300_000] {
        let out_r: Vec<u32> = (0..n as u32).map(|i| i ^ (rank as u32) << 20).collect();
        let out_l: Vec<u32> = out_r.iter().map(|x| !x).collect();
        let mut from_l = vec![0u32; n];
        let mut from_r = vec![0u32; n];
        rmpi::scope(|s| {
            let mut a = world.irecv(s, &mut from_l, left, 1).expect("irecv");
            let b = world.irecv(s, &mut from_r, right, 2).expect("irecv");
            let c = world.isend(s, &out_r, right, 1).expect("isend");
            let d = world.isend(s, &out_l, left, 2).expect("isend");
            // Poll one request to completion with test().
            let st = loop {
                if let Some(st) = a.test().expect("test") {
                    break st;
                }
            };
            assert_eq!(
                (st.source(), st.tag(), st.count::<u32>()),
                (left, 1, Some(n))
            );
            drop(a);
            std::mem::forget(d);
            let sts = rmpi::wait_all(vec![b, c]).expect("wait_all");
            assert_eq!((sts[0].source(), sts[0].tag()), (right, 2));
        });
        let want_l: Vec<u32> = (0..n as u32).map(|i| i ^ (left as u32) << 20).collect();
        let want_r: Vec<u32> = (0..n as u32).map(|i| !(i ^ (right as u32) << 20)).collect();
        assert!(
            from_l == want_l,
            "data from the left neighbour, {n} elements"
        );
        assert!(
            from_r == want_r,
            "data from the right neighbour, {n} elements"
        );
    }
    // sendrecv around the ring, with a different element type each way.
    let mut got = [0.0f64; 4];
    let st = world
        .sendrecv(&[rank as f64; 4], right, 9, &mut got, left, 9)
        .expect("sendrecv");
    assert_eq!((got, st.source()), ([left as f64; 4], left));
    // Receives from PROC_NULL complete at once.
    let st = world
        .recv(&mut got, rmpi::PROC_NULL, 0)
        .expect("recv from PROC_NULL");
    assert_eq!((st.source(), st.count_bytes()), (rmpi::PROC_NULL, 0));
    world.barrier().expect("barrier");
    if rank == 0 {
        println!("nonblocking: OK ({size} ranks)");
    }
}
