//! osu-barrier: average time of MPI_Barrier on each rank, then min/avg/max over ranks (avg only
//! in the text unless -f, as OSU prints it).

use std::time::Instant;

use benchmarks::cli::{Common, Full};
use benchmarks::report::{self, Report};
use benchmarks::stats::Stats;
use clap::Parser;

#[derive(Parser)]
#[command(name = "osu-barrier", about = "OSU-style barrier latency test")]
struct Args {
    /// (accepted for symmetry with the other tests; a barrier carries no message)
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    full: Full,
}

fn main() -> rmpi::Result<()> {
    let args = Args::parse();
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let c = &args.common;
    let (warmup, iters) = benchmarks::COLLECTIVE.at(0, c.iters, c.warmup);
    let mut out = (world.rank() == 0).then(|| {
        let mut r = Report::new(
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
        );
        if !args.full.full {
            r.brief_text(1);
        }
        r
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
    if let (Some(s), Some(r)) = (Stats::over_ranks(&world, mine)?, &mut out) {
        r.row(None, &[s.avg, s.min, s.max, iters as f64]);
    }
    if let Some(r) = out {
        r.finish();
    }
    Ok(())
}
