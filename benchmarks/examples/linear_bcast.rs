//! The collective harness driving a broadcast built from point-to-point (root sends to each rank
//! in turn): what a collective benchmark looks like, and a test of the harness until the
//! collective API lands (then `osu-bcast` is this with `world.bcast`).

use benchmarks::cli::Common;
use benchmarks::harness::{self, Collective};
use benchmarks::p2p::TAG_DATA;
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "linear_bcast",
    about = "Broadcast by point-to-point, timed by the collective harness"
)]
struct Args {
    #[command(flatten)]
    common: Common,
}

fn main() -> mpi::Result<()> {
    let args = Args::parse();
    let universe = mpi::initialize()?;
    let world = universe.world();
    let (rank, n) = (world.rank(), world.size());
    let (_, max) = args.common.range_or(1);
    let mut buf = vec![rank as u8; max];
    let spec = Collective {
        name: "linear-bcast",
        title: "# OSU MPI Broadcast Latency Test (linear, point-to-point)",
        min_size: 1,
    };
    harness::run(&spec, &args.common, &world, |size| {
        if rank == 0 {
            (1..n).try_for_each(|r| world.send(&buf[..size], r, TAG_DATA))
        } else {
            world.recv(&mut buf[..size], 0, TAG_DATA).map(|_| ())
        }
    })
}
