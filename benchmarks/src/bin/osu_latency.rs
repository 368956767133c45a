//! osu-latency: ping-pong between ranks 0 and 1, OSU's method and output.
//! One-way latency = round trip / 2, averaged over the timed iterations after a warm-up.

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "osu-latency",
    about = "OSU-style point-to-point latency test (2 ranks)"
)]
struct Args {
    /// Message sizes: MAX or MIN:MAX bytes
    #[arg(short = 'm', long = "message-size", value_parser = benchmarks::parse_range, default_value = "0:4194304")]
    range: (usize, usize),
    /// Timed iterations per size (default: 10000 below 8 KiB, 1000 above)
    #[arg(short = 'i', long = "iterations")]
    iters: Option<usize>,
    /// Warm-up iterations per size (default: 1000 below 8 KiB, 100 above)
    #[arg(short = 'x', long = "warmup")]
    warmup: Option<usize>,
}

fn main() {
    let args = Args::parse();
    let universe = mpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let rank = world.rank();
    if world.size() != 2 {
        if rank == 0 {
            eprintln!(
                "osu-latency: this test needs exactly 2 ranks (got {})",
                world.size()
            );
        }
        world.abort(1);
    }
    let (min, max) = args.range;
    let mut sbuf = vec![b'a'; max];
    let mut rbuf = vec![b'b'; max];
    if rank == 0 {
        println!("# OSU MPI Latency Test (rmpi)");
        println!("{:<10}{:>18}", "# Size", "Latency (us)");
    }
    for size in benchmarks::sizes(min, max) {
        let (warmup, iters) = benchmarks::iterations(size, args.iters, args.warmup);
        world.barrier().expect("barrier");
        let mut start = 0.0;
        for i in 0..warmup + iters {
            if i == warmup {
                start = universe.wtime();
            }
            if rank == 0 {
                world.send(&sbuf[..size], 1, 1).expect("send");
                world.recv(&mut rbuf[..size], 1, 1).expect("recv");
            } else {
                world.recv(&mut rbuf[..size], 0, 1).expect("recv");
                world.send(&sbuf[..size], 0, 1).expect("send");
            }
        }
        let elapsed = universe.wtime() - start;
        if rank == 0 {
            println!(
                "{:<10}{:>18.2}",
                size,
                elapsed * 1e6 / (2.0 * iters.max(1) as f64)
            );
        }
        sbuf[..size].fill(b'a');
        rbuf[..size].fill(b'b');
    }
}
