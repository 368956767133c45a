//! Ranks 0 and 1 bounce messages of each size; every byte and the status are checked both ways.
//! Other ranks wait at the barrier. Sizes come from the command line (default: a list around
//! the eager limit, 1 MiB and 16 MiB).

use rmpi::Communicator;

fn pattern(size: usize, iter: usize, from: i32) -> Vec<u8> {
    (0..size)
        .map(|i| (i.wrapping_mul(31) ^ iter.wrapping_mul(7) ^ (from as usize) * 101) as u8)
        .collect()
}

fn check(
    world: &Communicator,
    got: &[u8],
    st: &rmpi::Status,
    size: usize,
    iter: usize,
    from: i32,
    tag: i32,
) {
    let want = pattern(size, iter, from);
    if st.source() != from || st.tag() != tag || st.count_bytes() != size {
        eprintln!(
            "pingpong: status mismatch at size {size}: source {} tag {} count {} (want {from} {tag} {size})",
            st.source(),
            st.tag(),
            st.count_bytes()
        );
        world.abort(2);
    }
    if let Some(i) = got.iter().zip(&want).position(|(a, b)| a != b) {
        eprintln!(
            "pingpong: byte {i} of a {size}-byte message differs: {} != {}",
            got[i], want[i]
        );
        world.abort(3);
    }
}

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let rank = world.rank();
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("sizes are numbers of bytes"))
        .collect();
    let sizes = if args.is_empty() {
        vec![0, 1, 4095, 4096, 4097, 1 << 20, 16 << 20]
    } else {
        args
    };
    if world.size() < 2 {
        eprintln!("pingpong: needs at least 2 ranks");
        world.abort(1);
    }
    let iters = 3;
    for &size in &sizes {
        let mut buf = vec![0u8; size];
        for iter in 0..iters {
            let tag = (size % 1000) as i32 + iter as i32;
            if rank == 0 {
                world.send(&pattern(size, iter, 0), 1, tag).expect("send");
                let st = world.recv(&mut buf, 1, tag).expect("recv");
                check(&world, &buf, &st, size, iter, 1, tag);
            } else if rank == 1 {
                let st = world.recv(&mut buf, 0, tag).expect("recv");
                check(&world, &buf, &st, size, iter, 0, tag);
                world.send(&pattern(size, iter, 1), 0, tag).expect("send");
            }
        }
    }
    world.barrier().expect("barrier");
    if rank == 0 {
        println!("pingpong: OK ({} sizes)", sizes.len());
    }
}
