//! osu-bw: rank 0 sends a window of non-blocking messages to rank 1, which answers once per
//! window; bandwidth = bytes sent / time, in MB/s (10^6 bytes), OSU's method and output.

use std::time::Instant;

use benchmarks::cli::{require_ranks, Common, Window};
use benchmarks::p2p::{recv_window, send_window, window_bytes, TAG_CONTROL};
use benchmarks::report::{self, Report};
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "osu-bw",
    about = "OSU-style point-to-point bandwidth test (2 ranks)"
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
    let _universe = require_ranks(universe, "osu-bw", world.size() == 2, "exactly 2 ranks");
    let (c, window) = (&args.common, args.window.window);
    let (min, max) = c.range_or(1);
    // Bandwidth of empty messages means nothing: the ramp starts at 1 byte, as OSU's.
    let min = min.max(1);
    let sizes = benchmarks::sizes(min, max);
    let sbuf = vec![b'a'; max];
    let mut rbufs = vec![
        b'b';
        if rank == 1 {
            window_bytes(max, window)
        } else {
            0
        }
    ];
    let mut out = (rank == 0).then(|| {
        let mut r = Report::new(
            "osu-bw",
            "# OSU MPI Bandwidth Test",
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
    let mut ack = [0u8; 4];
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
            if rank == 0 {
                send_window(&world, &sbuf[..size], window, 1)?;
                world.recv(&mut ack, 1, TAG_CONTROL)?;
            } else {
                recv_window(&world, &mut rbufs, size, window, 0)?;
                world.send(&ack, 0, TAG_CONTROL)?;
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        if let Some(r) = &mut out {
            let bytes = (size * window * iters) as f64;
            r.row(Some(size), &[bytes / 1e6 / elapsed]);
        }
    }
    if let Some(r) = out {
        r.finish();
    }
    Ok(())
}
