//! osu-latency: ping-pong between ranks 0 and 1, OSU's method and output.
//! One-way latency = round trip / 2, averaged over the timed iterations after a warm-up.

use std::time::Instant;

use benchmarks::cli::{require_ranks, Common};
use benchmarks::p2p::TAG_DATA;
use benchmarks::report::{self, Report};
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "osu-latency",
    about = "OSU-style point-to-point latency test (2 ranks)"
)]
struct Args {
    #[command(flatten)]
    common: Common,
}

fn main() -> rmpi::Result<()> {
    let args = Args::parse();
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let rank = world.rank();
    let _universe = require_ranks(
        universe,
        "osu-latency",
        world.size() == 2,
        "exactly 2 ranks",
    );
    let c = &args.common;
    let (min, max) = c.range_or(0);
    let sizes = benchmarks::sizes(min, max);
    let mut sbuf = vec![b'a'; max];
    let mut rbuf = vec![b'b'; max];
    let mut out = (rank == 0).then(|| {
        Report::new(
            "osu-latency",
            "# OSU MPI Latency Test",
            &[report::LATENCY_US],
            true,
            c.json,
            2,
            sizes.len(),
        )
    });
    if let Some(r) = &out {
        r.start();
    }
    for size in sizes {
        let (warmup, iters) = benchmarks::LATENCY.at(size, c.iters, c.warmup);
        if let Some(r) = &mut out {
            r.working_on(size);
        }
        world.barrier()?;
        let mut start = Instant::now();
        for i in 0..warmup + iters {
            if i == warmup {
                start = Instant::now();
            }
            if rank == 0 {
                world.send(&sbuf[..size], 1, TAG_DATA)?;
                world.recv(&mut rbuf[..size], 1, TAG_DATA)?;
            } else {
                world.recv(&mut rbuf[..size], 0, TAG_DATA)?;
                world.send(&sbuf[..size], 0, TAG_DATA)?;
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        if let Some(r) = &mut out {
            r.row(Some(size), &[elapsed * 1e6 / (2.0 * iters as f64)]);
        }
        sbuf[..size].fill(b'a');
        rbuf[..size].fill(b'b');
    }
    if let Some(r) = out {
        r.finish();
    }
    Ok(())
}
