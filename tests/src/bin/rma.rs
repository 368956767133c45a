//! The Rust API for one-sided communication: accumulate from every rank under fences, a ring
//! of puts, gets, a fetch-and-op counter under lock_all, compare-and-swap under exclusive
//! locks; every value checked. Prints "rma: OK".

use rmpi::{LockType, Op};

fn main() {
    let u = rmpi::initialize().expect("MPI_Init");
    let world = u.world();
    let (rank, size) = (world.rank(), world.size());
    let right = (rank + 1) % size;
    let left = (rank + size - 1) % size;

    let w = world.allocate_window::<i64>(4).unwrap();
    assert_eq!(w.local(), vec![0; 4]);
    w.fence().unwrap();
    // Everyone adds rank + 1 to element 0 of rank 0; puts its rank into element 1 of the right.
    w.accumulate(&[rank as i64 + 1], 0, 0, Op::Sum).unwrap();
    w.put(&[rank as i64, -(rank as i64)], right, 1).unwrap();
    w.fence().unwrap();
    let l = w.local();
    if rank == 0 {
        assert_eq!(l[0], (size as i64) * (size as i64 + 1) / 2);
    }
    assert_eq!(&l[1..3], &[left as i64, -(left as i64)]);
    let mut got = [0i64; 2];
    w.get(&mut got, right, 1).unwrap();
    assert_eq!(got, [rank as i64, -(rank as i64)]);
    w.fence().unwrap();

    // A ticket counter at the last rank.
    w.lock_all().unwrap();
    let mut tickets = Vec::new();
    for _ in 0..5 {
        tickets.push(w.fetch_and_op(1, size - 1, 3, Op::Sum).unwrap());
    }
    w.unlock_all().unwrap();
    assert!(tickets.windows(2).all(|p| p[0] < p[1]));
    world.barrier().unwrap();
    if rank == size - 1 {
        w.lock(LockType::Shared, rank).unwrap();
        assert_eq!(w.local()[3], 5 * size as i64);
        w.unlock(rank).unwrap();
    }

    // Compare-and-swap: exactly one rank wins an emptied slot.
    if rank == 0 {
        w.lock(LockType::Exclusive, 0).unwrap();
        w.set_local(2, &[0]).unwrap();
        w.unlock(0).unwrap();
    }
    world.barrier().unwrap();
    w.lock(LockType::Exclusive, 0).unwrap();
    let old = w.compare_and_swap(rank as i64 + 100, 0, 0, 2).unwrap();
    w.unlock(0).unwrap();
    let won = (old == 0) as i64;
    let mut total = [0i64];
    world.all_reduce(&[won], &mut total, Op::Sum).unwrap();
    assert_eq!(total[0], 1, "compare-and-swap winners");
    drop(w);
    if rank == 0 {
        println!("rma: OK");
    }
}
