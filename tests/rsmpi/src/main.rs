//! rsmpi (crates.io `mpi`) on rmpi's C ABI: a ring, immediate sends in `mpi::request::scope`,
//! all_reduce, broadcast, split and a `#[derive(Equivalence)]` struct sent and received. Every
//! result is checked; a wrong one panics, which aborts the process (Cargo.toml: unwinding would
//! drop the Universe, whose MPI_Finalize waits for the others), so mpirun ends the job at once.
//! Any number of ranks >= 1.

use mpi::collective::SystemOperation;
use mpi::request::WaitGuard;
use mpi::topology::Color;
use mpi::traits::*;

/// A struct with padding and an array, so the derived datatype is not one contiguous block.
#[derive(Equivalence, Default, Debug, PartialEq, Clone, Copy)]
struct Particle {
    id: u8,
    pos: [f64; 3],
    charge: i32,
}

fn main() {
    let universe = mpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let next = (rank + 1) % size;
    let prev = (rank + size - 1) % size;

    // Ring: rank 0 starts a token each rank increments; it comes back as `size`.
    let mut token = 0i64;
    if rank == 0 {
        world.process_at_rank(next).send(&token);
        world.process_at_rank(prev).receive_into(&mut token);
        assert_eq!(token, i64::from(size - 1), "ring token");
    } else {
        world.process_at_rank(prev).receive_into(&mut token);
        token += 1;
        world.process_at_rank(next).send(&token);
    }

    // Immediate sends and receives in a scope: each rank sends its rank to both neighbours.
    let mine = [rank; 4];
    let (mut from_prev, mut from_next) = ([-1i32; 4], [-1i32; 4]);
    mpi::request::scope(|scope| {
        let _r1 = WaitGuard::from(world.process_at_rank(prev).immediate_receive_into_with_tag(
            scope,
            &mut from_prev[..],
            1,
        ));
        let _r2 = WaitGuard::from(world.process_at_rank(next).immediate_receive_into_with_tag(
            scope,
            &mut from_next[..],
            2,
        ));
        let s1 = world
            .process_at_rank(next)
            .immediate_send_with_tag(scope, &mine[..], 1);
        let s2 = world
            .process_at_rank(prev)
            .immediate_send_with_tag(scope, &mine[..], 2);
        s1.wait();
        s2.wait();
    });
    assert_eq!(from_prev, [prev; 4], "immediate receive from prev");
    assert_eq!(from_next, [next; 4], "immediate receive from next");

    // all_reduce: sum and max of the ranks.
    let mut sum = 0i32;
    world.all_reduce_into(&rank, &mut sum, SystemOperation::sum());
    assert_eq!(sum, size * (size - 1) / 2, "all_reduce sum");
    let mut max = [0.0f64; 2];
    world.all_reduce_into(
        &[f64::from(rank), -f64::from(rank)][..],
        &mut max[..],
        SystemOperation::max(),
    );
    assert_eq!(max, [f64::from(size - 1), 0.0], "all_reduce max");

    // broadcast from the last rank.
    let root = world.process_at_rank(size - 1);
    let mut data: Vec<u64> = if rank == size - 1 {
        (0..1000).map(|i| i * 3).collect()
    } else {
        vec![0; 1000]
    };
    root.broadcast_into(&mut data[..]);
    assert!(
        data.iter().enumerate().all(|(i, &v)| v == i as u64 * 3),
        "broadcast"
    );

    // split: even and odd ranks, keyed by descending rank; then a reduction inside each half.
    let color = rank % 2;
    let half = world
        .split_by_color_with_key(Color::with_value(color), size - rank)
        .expect("split_by_color: a communicator for a defined color");
    let members: Vec<i32> = (0..size).filter(|r| r % 2 == color).collect();
    assert_eq!(half.size() as usize, members.len(), "split size");
    let expect_rank = members.iter().filter(|&&r| r > rank).count() as i32;
    assert_eq!(half.rank(), expect_rank, "split rank (key = size - rank)");
    let mut half_sum = 0i32;
    half.all_reduce_into(&rank, &mut half_sum, SystemOperation::sum());
    assert_eq!(half_sum, members.iter().sum::<i32>(), "all_reduce in split");
    // An undefined color gives no communicator.
    let none = world.split_by_color(if rank == 0 {
        Color::undefined()
    } else {
        Color::with_value(0)
    });
    assert_eq!(none.is_none(), rank == 0, "split with MPI_UNDEFINED");

    // A derived datatype: structs around the ring, point to point and immediate.
    let p = |r: i32| Particle {
        id: r as u8,
        pos: [f64::from(r), 0.5, -f64::from(r)],
        charge: -r,
    };
    let out = [p(rank), p(rank + 100)];
    let mut got = [Particle::default(); 2];
    mpi::request::scope(|scope| {
        let rreq = world
            .process_at_rank(prev)
            .immediate_receive_into(scope, &mut got[..]);
        world.process_at_rank(next).send(&out[..]);
        rreq.wait();
    });
    assert_eq!(
        got,
        [p(prev), p(prev + 100)],
        "derived datatype through the ring"
    );
    // (Not in a collective: rmpi's collectives take contiguous datatypes only, and this one has
    // holes.)

    world.barrier();
    if rank == 0 {
        let (v, sub) = mpi::environment::version();
        println!(
            "rsmpi client: {size} ranks ok (MPI {v}.{sub}; {})",
            mpi::environment::library_version()
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or("")
        );
    }
}
