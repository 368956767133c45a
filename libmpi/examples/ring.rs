//! A token goes round the ring a few times; each rank adds its rank. Rank 0 checks the sum.

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let laps = 3i64;
    let next = (rank + 1) % size;
    let prev = (rank + size - 1) % size;
    let mut token = [0i64];
    for _ in 0..laps {
        if rank == 0 {
            world.send(&token, next, 7).expect("send");
            world.recv(&mut token, prev, 7).expect("recv");
        } else {
            world.recv(&mut token, prev, 7).expect("recv");
            token[0] += rank as i64;
            world.send(&token, next, 7).expect("send");
        }
    }
    if rank == 0 {
        let n = size as i64;
        let expected = laps * n * (n - 1) / 2;
        if token[0] != expected {
            eprintln!("ring: token is {} but {} was expected", token[0], expected);
            world.abort(1);
        }
        println!(
            "ring: OK ({} ranks, {} laps, token {})",
            size, laps, token[0]
        );
    }
}
