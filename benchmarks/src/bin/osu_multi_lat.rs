//! osu-multi-lat: every rank r of the first half ping-pongs with rank r + n/2 at the same time;
//! the one-way latency reported is the average over the pairs.

use std::time::Instant;

use benchmarks::cli::{require_ranks, Common};
use benchmarks::p2p::TAG_DATA;
use benchmarks::report::{self, Report};
use benchmarks::stats::sum_at_root;
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "osu-multi-lat",
    about = "OSU-style multi-pair latency test (an even number of ranks, in pairs)"
)]
struct Args {
    #[command(flatten)]
    common: Common,
}

fn main() -> rmpi::Result<()> {
    let args = Args::parse();
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let (rank, n) = (world.rank(), world.size());
    let _universe = require_ranks(
        universe,
        "osu-multi-lat",
        n >= 2 && n % 2 == 0,
        "an even number of ranks",
    );
    let pairs = n / 2;
    let sender = rank < pairs;
    let peer = if sender { rank + pairs } else { rank - pairs };
    let c = &args.common;
    let (min, max) = c.range_or(0);
    let sizes = benchmarks::sizes(min, max);
    let sbuf = vec![b'a'; max];
    let mut rbuf = vec![b'b'; max];
    let mut out = (rank == 0).then(|| {
        let mut r = Report::new(
            "osu-multi-lat",
            "# OSU MPI Multi Latency Test",
            &[report::LATENCY_US],
            true,
            c.json,
            n,
            sizes.len(),
        );
        r.parameter("pairs", pairs);
        r
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
            if sender {
                world.send(&sbuf[..size], peer, TAG_DATA)?;
                world.recv(&mut rbuf[..size], peer, TAG_DATA)?;
            } else {
                world.recv(&mut rbuf[..size], peer, TAG_DATA)?;
                world.send(&sbuf[..size], peer, TAG_DATA)?;
            }
        }
        let lat = start.elapsed().as_secs_f64() * 1e6 / (2.0 * iters as f64);
        let mine = if sender { lat } else { 0.0 };
        if let (Some(sum), Some(r)) = (sum_at_root(&world, mine)?, &mut out) {
            r.row(Some(size), &[sum / pairs as f64]);
        }
    }
    if let Some(r) = out {
        r.finish();
    }
    Ok(())
}
