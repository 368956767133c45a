//! osu-bibw: ranks 0 and 1 each post a window of receives and a window of sends to the other
//! and wait for all; bandwidth = bytes moved both ways / time, in MB/s, OSU's method and output.

use std::time::Instant;

use benchmarks::cli::{require_ranks, Common, Window};
use benchmarks::p2p::{exchange_window, window_bytes};
use benchmarks::report::{self, Report};
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "osu-bibw",
    about = "OSU-style bidirectional bandwidth test (2 ranks)"
)]
struct Args {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    window: Window,
}

fn main() -> rmpi::Result<()> {
    let args = Args::parse();
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let rank = world.rank();
    let _universe = require_ranks(universe, "osu-bibw", world.size() == 2, "exactly 2 ranks");
    let (c, window) = (&args.common, args.window.window);
    let (min, max) = c.range_or(1);
    // Bandwidth of empty messages means nothing: the ramp starts at 1 byte, as OSU's.
    let min = min.max(1);
    let sizes = benchmarks::sizes(min, max);
    let sbuf = vec![b'a'; max];
    let mut rbufs = vec![b'b'; window_bytes(max, window)];
    let peer = 1 - rank;
    let mut out = (rank == 0).then(|| {
        let mut r = Report::new(
            "osu-bibw",
            "# OSU MPI Bi-Directional Bandwidth Test",
            &[report::BANDWIDTH_MBS],
            true,
            c.json,
            2,
            sizes.len(),
        );
        r.parameter("window_size", window);
        r
    });
    if let Some(r) = &out {
        r.start();
    }
    for size in sizes {
        let (warmup, iters) = benchmarks::BANDWIDTH.at(size, c.iters, c.warmup);
        if let Some(r) = &mut out {
            r.working_on(size);
        }
        world.barrier()?;
        let mut start = Instant::now();
        for i in 0..warmup + iters {
            if i == warmup {
                start = Instant::now();
            }
            exchange_window(&world, &sbuf, &mut rbufs, size, window, peer)?;
        }
        let elapsed = start.elapsed().as_secs_f64();
        if let Some(r) = &mut out {
            let bytes = (2 * size * window * iters) as f64;
            r.row(Some(size), &[bytes / 1e6 / elapsed]);
        }
    }
    if let Some(r) = out {
        r.finish();
    }
    Ok(())
}
