//! The Rust API for dynamic processes: the parents spawn 2 copies of this program with an
//! argument; each child checks its world and argv, gets a message from parent rank 0 and
//! answers; then both sides merge and check a sum, and disconnect. Any np.

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    if let Some(parent) = universe.parent() {
        let args: Vec<String> = std::env::args().collect();
        assert_eq!(args.get(1).map(String::as_str), Some("child"), "{args:?}");
        assert_eq!(world.size(), 2);
        assert!(parent.is_inter());
        let mut v = [0i32];
        parent.recv(&mut v, 0, 5).expect("recv from the parent");
        assert_eq!(v[0], 40 + world.rank());
        parent.send(&[v[0] * 2], 0, 6).expect("send to the parent");
        let merged = parent.merge(true).expect("merge");
        check_merged(&merged, parent.remote_size().expect("inter"));
        drop(merged);
        universe.disconnect_parent().expect("disconnect");
        assert!(universe.parent().is_none());
        println!("spawn child {}: OK", world.rank());
        return;
    }
    let me = std::env::current_exe().expect("own path");
    let ic = world
        .spawn(me.to_str().expect("utf-8"), &["child"], 2, 0)
        .expect("MPI_Comm_spawn");
    assert_eq!(ic.remote_size(), Some(2));
    if world.rank() == 0 {
        for c in 0..2 {
            ic.send(&[40 + c], c, 5).expect("send to a child");
            let mut back = [0i32];
            ic.recv(&mut back, c, 6).expect("recv from a child");
            assert_eq!(back[0], (40 + c) * 2);
        }
    }
    let merged = ic.merge(false).expect("merge");
    check_merged(&merged, world.size());
    drop(merged);
    ic.disconnect().expect("disconnect");
    if world.rank() == 0 {
        println!("spawn: OK");
    }
}

/// Parents first: the sum of the merged ranks.
fn check_merged(m: &rmpi::Communicator, parents: i32) {
    let n = m.size();
    assert!(n > parents);
    let mut sum = [0i32];
    m.all_reduce(&[m.rank()], &mut sum, rmpi::Op::Sum)
        .expect("allreduce");
    assert_eq!(sum[0], n * (n - 1) / 2);
}
