//! osu-barrier: average time of MPI_Barrier on each rank, then min/avg/max over ranks.

use std::time::Instant;

use benchmarks::cli::Common;
use benchmarks::p2p::{gather_at_root, Stats};
use benchmarks::report::{self, Report};
use clap::Parser;

#[derive(Parser)]
#[command(name = "osu-barrier", about = "OSU-style barrier latency test")]
struct Args {
    /// (accepted for symmetry with the other tests; a barrier carries no message)
    #[command(flatten)]
    common: Common,
}

fn main() -> mpi::Result<()> {
    let args = Args::parse();
    let universe = mpi::initialize()?;
    let world = universe.world();
    let c = &args.common;
    let (warmup, iters) = benchmarks::COLLECTIVE.at(0, c.iters, c.warmup);
    let mut out = (world.rank() == 0).then(|| {
        Report::new(
            "osu-barrier",
            "# OSU MPI Barrier Latency Test",
            &[
                report::AVG_US,
                report::MIN_US,
                report::MAX_US,
                report::ITERATIONS,
            ],
            false,
            c.json,
            world.size(),
            1,
        )
    });
    if let Some(r) = &mut out {
        r.start();
        r.working_on(0);
    }
    world.barrier()?;
    let mut start = Instant::now();
    for i in 0..warmup + iters {
        if i == warmup {
            start = Instant::now();
        }
        world.barrier()?;
    }
    let mine = start.elapsed().as_secs_f64() * 1e6 / iters as f64;
    if let (Some(all), Some(r)) = (gather_at_root(&world, mine)?, &mut out) {
        let s = Stats::of(&all);
        r.row(None, &[s.avg, s.min, s.max, iters as f64]);
    }
    if let Some(r) = out {
        r.finish();
    }
    Ok(())
}
