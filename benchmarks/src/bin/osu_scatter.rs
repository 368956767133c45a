//! osu-scatter: MPI_Scatter of `size` bytes from rank 0 to every rank, OSU's method and output.

use benchmarks::harness::{self, require_two, Collective, Options};

const SPEC: Collective = Collective {
    name: "osu-scatter",
    title: "# OSU MPI Scatter Latency Test",
    about: "OSU-style scatter latency test: SIZE bytes from root 0 to each rank (2 ranks or more)",
    min_size: 1,
};

fn main() -> rmpi::Result<()> {
    let opts = Options::parse_for(&SPEC);
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let _universe = require_two(universe, &SPEC);
    let (n, root) = (world.size() as usize, world.rank() == 0);
    let max = opts.max_size(&SPEC);
    // Only the root sends: n blocks of up to max bytes.
    let send = vec![b'a'; if root { max * n } else { 0 }];
    let mut recv = vec![b'b'; max];
    harness::run(&SPEC, &opts, &world, |size| {
        let s = if root { size * n } else { 0 };
        world.scatter(&send[..s], &mut recv[..size], 0)
    })
}
