//! osu-bcast: MPI_Bcast of bytes from rank 0, OSU's method and output (harness::run).

use benchmarks::harness::{self, require_two, Collective, Options};

const SPEC: Collective = Collective {
    name: "osu-bcast",
    title: "# OSU MPI Broadcast Latency Test",
    about: "OSU-style broadcast latency test (2 ranks or more, root 0)",
    min_size: 1,
};

fn main() -> rmpi::Result<()> {
    let opts = Options::parse_for(&SPEC);
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let _universe = require_two(universe, &SPEC);
    let mut buf = vec![b'a'; opts.max_size(&SPEC)];
    harness::run(&SPEC, &opts, &world, |size| {
        world.broadcast(&mut buf[..size], 0)
    })
}
