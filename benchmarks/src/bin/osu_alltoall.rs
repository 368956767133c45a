//! osu-alltoall: MPI_Alltoall with `size` bytes from every rank to every rank, OSU's method and
//! output.

use benchmarks::harness::{self, require_two, Collective, Options};

const SPEC: Collective = Collective {
    name: "osu-alltoall",
    title: "# OSU MPI All-to-All Personalized Exchange Latency Test",
    about: "OSU-style all-to-all latency test: SIZE bytes from each rank to each (2 ranks or more)",
    min_size: 1,
};

fn main() -> rmpi::Result<()> {
    let opts = Options::parse_for(&SPEC);
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let _universe = require_two(universe, &SPEC);
    let n = world.size() as usize;
    let max = opts.max_size(&SPEC);
    let send = vec![b'a'; max * n];
    let mut recv = vec![b'b'; max * n];
    harness::run(&SPEC, &opts, &world, |size| {
        world.all_to_all(&send[..size * n], &mut recv[..size * n])
    })
}
