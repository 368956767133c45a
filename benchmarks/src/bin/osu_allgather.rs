//! osu-allgather: MPI_Allgather of `size` bytes from every rank to every rank, OSU's method and
//! output.

use benchmarks::harness::{self, require_two, Collective, Options};

const SPEC: Collective = Collective {
    name: "osu-allgather",
    title: "# OSU MPI Allgather Latency Test",
    about: "OSU-style allgather latency test: SIZE bytes from each rank to all (2 ranks or more)",
    min_size: 1,
};

fn main() -> rmpi::Result<()> {
    let opts = Options::parse_for(&SPEC);
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let _universe = require_two(universe, &SPEC);
    let n = world.size() as usize;
    let max = opts.max_size(&SPEC);
    let send = vec![b'a'; max];
    let mut recv = vec![b'b'; max * n];
    harness::run(&SPEC, &opts, &world, |size| {
        world.all_gather(&send[..size], &mut recv[..size * n])
    })
}
