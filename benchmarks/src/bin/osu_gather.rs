//! osu-gather: MPI_Gather of `size` bytes from every rank to rank 0, OSU's method and output.

use benchmarks::harness::{self, require_two, Collective, Options};

const SPEC: Collective = Collective {
    name: "osu-gather",
    title: "# OSU MPI Gather Latency Test",
    about: "OSU-style gather latency test: SIZE bytes from each rank to root 0 (2 ranks or more)",
    min_size: 1,
};

fn main() -> rmpi::Result<()> {
    let opts = Options::parse_for(&SPEC);
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let _universe = require_two(universe, &SPEC);
    let (n, root) = (world.size() as usize, world.rank() == 0);
    let max = opts.max_size(&SPEC);
    let send = vec![b'a'; max];
    // Only the root receives: n blocks of up to max bytes.
    let mut recv = vec![b'b'; if root { max * n } else { 0 }];
    harness::run(&SPEC, &opts, &world, |size| {
        let r = if root { size * n } else { 0 };
        world.gather(&send[..size], &mut recv[..r], 0)
    })
}
