//! osu-reduce: MPI_Reduce (SUM) of floats to rank 0, OSU's method and output; sizes in bytes
//! from one float (4 bytes) up.

use benchmarks::harness::{self, require_two, Collective, Options};
use rmpi::Op;

const SPEC: Collective = Collective {
    name: "osu-reduce",
    title: "# OSU MPI Reduce Latency Test",
    about: "OSU-style reduce latency test: sum of floats to root 0 (2 ranks or more)",
    min_size: 4,
};

fn main() -> rmpi::Result<()> {
    let opts = Options::parse_for(&SPEC);
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let _universe = require_two(universe, &SPEC);
    let floats = opts.max_size(&SPEC) / 4;
    let send = vec![1f32; floats];
    let mut recv = vec![0f32; floats];
    harness::run(&SPEC, &opts, &world, |size| {
        let c = size / 4;
        world.reduce(&send[..c], &mut recv[..c], Op::Sum, 0)
    })
}
