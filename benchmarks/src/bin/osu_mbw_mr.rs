//! osu-mbw-mr: multi-pair bandwidth and message rate. Rank r of the first half sends windows to
//! rank r + n/2; each sender times its own stream, and rank 0 sums the pairs' bandwidths.

use std::time::Instant;

use benchmarks::cli::{require_ranks, Common, Window};
use benchmarks::p2p::{recv_window, send_window, window_bytes, TAG_CONTROL};
use benchmarks::report::{Column, Report};
use benchmarks::stats::sum_at_root;
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "osu-mbw-mr",
    about = "OSU-style multiple bandwidth / message rate test (an even number of ranks, in pairs)"
)]
struct Args {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    window: Window,
}

const MBS: Column = Column {
    key: "bandwidth_mbs",
    header: "MB/s",
    decimals: 2,
};
const RATE: Column = Column {
    key: "messages_per_s",
    header: "Messages/s",
    decimals: 2,
};

fn main() -> rmpi::Result<()> {
    let args = Args::parse();
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let (rank, n) = (world.rank(), world.size());
    let _universe = require_ranks(
        universe,
        "osu-mbw-mr",
        n >= 2 && n % 2 == 0,
        "an even number of ranks",
    );
    let pairs = n / 2;
    let sender = rank < pairs;
    let peer = if sender { rank + pairs } else { rank - pairs };
    let (c, window) = (&args.common, args.window.window);
    let (min, max) = c.range_or(1);
    // Bandwidth of empty messages means nothing: the ramp starts at 1 byte, as OSU's.
    let min = min.max(1);
    let sizes = benchmarks::sizes(min, max);
    let sbuf = vec![b'a'; if sender { max } else { 0 }];
    let mut rbufs = vec![b'b'; if sender { 0 } else { window_bytes(max, window) }];
    let mut out = (rank == 0).then(|| {
        let mut r = Report::new(
            "osu-mbw-mr",
            "# OSU MPI Multiple Bandwidth / Message Rate Test",
            &[MBS, RATE],
            true,
            c.json,
            n,
            sizes.len(),
        );
        r.parameter("pairs", pairs);
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
            if sender {
                send_window(&world, &sbuf[..size], window, peer)?;
                world.recv(&mut ack, peer, TAG_CONTROL)?;
            } else {
                recv_window(&world, &mut rbufs, size, window, peer)?;
                world.send(&ack, peer, TAG_CONTROL)?;
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        let mine = if sender {
            (size * window * iters) as f64 / 1e6 / elapsed
        } else {
            0.0
        };
        if let (Some(mbs), Some(r)) = (sum_at_root(&world, mine)?, &mut out) {
            let rate = if size == 0 {
                (pairs as usize * window * iters) as f64 / elapsed
            } else {
                mbs * 1e6 / size as f64
            };
            r.row(Some(size), &[mbs, rate]);
        }
    }
    if let Some(r) = out {
        r.finish();
    }
    Ok(())
}
