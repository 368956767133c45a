//! Command-line options shared by the OSU-style benchmarks (OSU's letters, clap's errors).

/// `-m`, `-i`, `-x`, `--json`: every OSU-style benchmark takes these.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// Message sizes: MAX or MIN:MAX bytes, K/M/G suffixes for powers of 1024 [default: 0:4M,
    /// 1:4M for bandwidth]
    #[arg(short = 'm', long = "message-size", value_name = "[MIN:]MAX",
          value_parser = crate::parse_range)]
    pub range: Option<(usize, usize)>,
    /// Timed iterations per size (default: OSU's, which depend on the test and the size)
    #[arg(short = 'i', long = "iterations", value_parser = positive)]
    pub iters: Option<usize>,
    /// Warm-up iterations per size (default: OSU's)
    #[arg(short = 'x', long = "warmup", value_name = "ITERATIONS")]
    pub warmup: Option<usize>,
    /// Print the results as JSON on stdout instead of OSU's text
    #[arg(long)]
    pub json: bool,
}

impl Common {
    /// The (min, max) sizes asked for, or OSU's default ramp from `default_min` to 4 MiB.
    pub fn range_or(&self, default_min: usize) -> (usize, usize) {
        self.range.unwrap_or((default_min, 4 << 20))
    }
}

/// `-W`: messages in flight per iteration of the bandwidth tests.
#[derive(clap::Args, Debug, Clone)]
pub struct Window {
    /// Window size: non-blocking sends posted before waiting
    #[arg(short = 'W', long = "window-size", value_name = "N",
          value_parser = positive, default_value_t = 64)]
    pub window: usize,
}

/// A count of at least 1.
pub fn positive(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("'{s}' is not a positive whole number")),
    }
}

/// Leave the job when the rank count does not fit the test: rank 0 says why, then every rank
/// finalises and exits 1 (the barrier first, so no rank leaves before the message is out).
pub fn require_ranks(universe: rmpi::Universe, name: &str, ok: bool, need: &str) -> rmpi::Universe {
    if ok {
        return universe;
    }
    let world = universe.world();
    if world.rank() == 0 {
        eprintln!("{name}: this test needs {need} (got {})", world.size());
    }
    let _ = world.barrier();
    let _ = universe.finalize();
    std::process::exit(1);
}

/// `-f`: OSU's full output of the collective tests and osu-barrier.
#[derive(clap::Args, Debug, Clone)]
pub struct Full {
    /// Also print min and max latency over ranks and the iteration count (the JSON always has
    /// them)
    #[arg(short = 'f', long = "full")]
    pub full: bool,
}
