//! netpipe: NetPIPE 3.x's MPI test between ranks 0 and 1. For each size of its ramp, a repetition
//! count filling a time slice, the best of a few trials; ping-pong (one-way time = round trip / 2)
//! or streaming (`-s`: back-to-back sends, one reply at the end). Prints NetPIPE's lines and
//! writes its output file (bytes, Mbps).

use std::io::Write;
use std::time::Instant;

use benchmarks::netpipe::{ramp, repetitions, Step};
use benchmarks::p2p::{TAG_CONTROL, TAG_DATA};
use benchmarks::progress::Progress;
use clap::Parser;
use rmpi::Communicator;
use serde_json::json;

#[derive(Parser)]
#[command(
    name = "netpipe",
    about = "NetPIPE-style ramp of ping-pong or streaming transfers (2 ranks)"
)]
struct Args {
    /// Smallest message size in bytes
    #[arg(short = 'l', long = "lower", value_parser = benchmarks::parse_size, default_value = "1")]
    lower: usize,
    /// Largest message size in bytes (K/M/G suffixes: powers of 1024)
    #[arg(short = 'u', long = "upper", value_parser = benchmarks::parse_size, default_value = "8M")]
    upper: usize,
    /// Perturbation: also try each size this many bytes below and above
    #[arg(short = 'p', long = "perturbation", default_value_t = 3)]
    perturbation: usize,
    /// Streaming mode: one-way back-to-back sends instead of ping-pong
    #[arg(short = 's', long = "stream")]
    stream: bool,
    /// Output file: one line per size, bytes and Mbps
    #[arg(short = 'o', long = "output", default_value = "np.out")]
    output: std::path::PathBuf,
    /// Seconds each trial aims to last (NetPIPE's RUNTM)
    #[arg(long = "time-slice", default_value_t = 0.25, value_parser = seconds)]
    time_slice: f64,
    /// Trials per size, the best one kept; also the fewest repetitions
    #[arg(long = "trials", default_value_t = 3, value_parser = benchmarks::cli::positive)]
    trials: usize,
    /// Stop once one transfer takes longer than this many seconds (NetPIPE's STOPTM)
    #[arg(long = "stop-time", default_value_t = 1.0, value_parser = seconds)]
    stop_time: f64,
    /// Print the results as JSON on stdout instead of NetPIPE's lines
    #[arg(long)]
    json: bool,
}

fn seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("'{s}' is not a positive number of seconds")),
    }
}

/// One trial: `reps` transfers of `size` bytes; one-way seconds per transfer (rank 0's view).
fn trial(
    world: &Communicator,
    stream: bool,
    size: usize,
    reps: usize,
    sbuf: &[u8],
    rbuf: &mut [u8],
) -> rmpi::Result<f64> {
    let rank = world.rank();
    let mut sync = [0u8; 1];
    world.barrier()?;
    let t0 = Instant::now();
    if stream {
        if rank == 0 {
            for _ in 0..reps {
                world.send(&sbuf[..size], 1, TAG_DATA)?;
            }
            world.recv(&mut sync, 1, TAG_CONTROL)?;
        } else {
            for _ in 0..reps {
                world.recv(&mut rbuf[..size], 0, TAG_DATA)?;
            }
            world.send(&sync, 0, TAG_CONTROL)?;
        }
        Ok(t0.elapsed().as_secs_f64() / reps as f64)
    } else {
        for _ in 0..reps {
            if rank == 0 {
                world.send(&sbuf[..size], 1, TAG_DATA)?;
                world.recv(&mut rbuf[..size], 1, TAG_DATA)?;
            } else {
                world.recv(&mut rbuf[..size], 0, TAG_DATA)?;
                world.send(&sbuf[..size], 0, TAG_DATA)?;
            }
        }
        Ok(t0.elapsed().as_secs_f64() / reps as f64 / 2.0)
    }
}

fn main() -> rmpi::Result<()> {
    let args = Args::parse();
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let rank = world.rank();
    let _universe =
        benchmarks::cli::require_ranks(universe, "netpipe", world.size() == 2, "exactly 2 ranks");
    let steps: Vec<Step> = ramp(args.lower, args.upper, args.perturbation);
    let cap = steps.iter().map(|s| s.size).max().unwrap_or(0);
    let sbuf = vec![b'a'; cap];
    let mut rbuf = vec![b'b'; cap];
    let mut file = None;
    if rank == 0 {
        match std::fs::File::create(&args.output) {
            Ok(f) => file = Some(std::io::BufWriter::new(f)),
            Err(e) => {
                eprintln!("netpipe: cannot create {}: {e}", args.output.display());
                world.abort(2);
            }
        }
    }
    let mut progress = Progress::new("netpipe", steps.len());
    // NetPIPE starts from the latency of tiny messages.
    let mut tlast = trial(&world, false, 0, 100, &sbuf, &mut rbuf)?;
    if rank == 0 && !args.json {
        println!("Latency: {:.9}", tlast);
        println!("Now starting the main loop");
    }
    let mut rows = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        // Rank 0 picks the repetitions (0: stop) and tells rank 1.
        let mut reps = [0u64];
        if rank == 0 {
            if tlast < args.stop_time {
                // A ping-pong repetition is a round trip: two one-way times.
                let per_rep = if args.stream { tlast } else { 2.0 * tlast };
                reps[0] = repetitions(args.time_slice, *step, per_rep, args.trials) as u64;
            }
            world.send(&reps, 1, TAG_CONTROL)?;
            progress.working_on(format!("{} B", step.size));
        } else {
            world.recv(&mut reps, 0, TAG_CONTROL)?;
        }
        if reps[0] == 0 {
            break;
        }
        let reps = reps[0] as usize;
        let mut best = f64::INFINITY;
        for _ in 0..args.trials {
            best = best.min(trial(
                &world,
                args.stream,
                step.size,
                reps,
                &sbuf,
                &mut rbuf,
            )?);
        }
        tlast = best;
        let mbps = step.size as f64 * 8.0 / best / 1e6;
        if rank == 0 {
            if !args.json {
                progress.println(&format!(
                    "{n:3}: {:7} bytes {reps:6} times --> {mbps:9.2} Mbps in {:10.2} usec",
                    step.size,
                    best * 1e6
                ));
            }
            if let Some(f) = &mut file {
                if let Err(e) = writeln!(f, "{:8} {:.6}", step.size, mbps) {
                    eprintln!("netpipe: writing {}: {e}", args.output.display());
                    world.abort(2);
                }
            }
            rows.push(json!({"size": step.size, "repetitions": reps, "mbps": mbps, "time_us": best * 1e6}));
            progress.step();
        }
    }
    progress.finish();
    if let Some(mut f) = file {
        if let Err(e) = f.flush() {
            eprintln!("netpipe: writing {}: {e}", args.output.display());
            world.abort(2);
        }
    }
    if rank == 0 && args.json {
        let doc = json!({
            "benchmark": "netpipe",
            "title": format!("NetPIPE {}", if args.stream { "streaming" } else { "ping-pong" }),
            "implementation": "rmpi",
            "ranks": 2,
            "parameters": {"mode": if args.stream { "stream" } else { "pingpong" },
                           "perturbation": args.perturbation, "time_slice_s": args.time_slice,
                           "trials": args.trials},
            "results": rows,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("a JSON value serialises")
        );
    }
    Ok(())
}
