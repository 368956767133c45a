//! The collective timing harness, OSU's method: per size, warm-up iterations, then timed ones
//! each followed by a barrier (so skew from one call does not leak into the next); each rank's
//! average time per call, then min/avg/max over ranks at rank 0 by MPI_Reduce. A collective
//! benchmark is its spec and the operation as a closure:
//!
//! ```ignore
//! const SPEC: Collective = Collective { name: "osu-bcast", title: "# OSU MPI Broadcast Latency Test",
//!                                       about: "...", min_size: 1 };
//! let opts = Options::parse_for(&SPEC);
//! let universe = rmpi::initialize()?;
//! let world = universe.world();
//! let _universe = require_two(universe, &SPEC);
//! let mut buf = vec![0u8; opts.max_size(&SPEC)];
//! harness::run(&SPEC, &opts, &world, |size| world.broadcast(&mut buf[..size], 0))
//! ```

use std::time::Instant;

use clap::{CommandFactory, FromArgMatches};
use rmpi::{Communicator, Result};

use crate::cli::{Common, Full};
use crate::report::{self, Report};
use crate::stats::Stats;

/// OSU's default largest message of the collective tests (MAX_MSG_SIZE_COLL): 1 MiB (the
/// `-m` help says "1M").
pub const DEFAULT_MAX: usize = 1 << 20;

/// A collective benchmark: its name, OSU's title line, its help text and the smallest size it
/// makes sense at (a reduction's element: 4 bytes of float).
pub struct Collective {
    pub name: &'static str,
    pub title: &'static str,
    pub about: &'static str,
    pub min_size: usize,
}

/// The collective tests' options: the common ones and `-f`.
#[derive(clap::Parser, Debug, Clone)]
pub struct Options {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub full: Full,
}

impl Options {
    /// Parse the command line under `spec`'s name; bad options (or a size range with no size
    /// the test can use) print clap's error and exit 2, before MPI starts.
    pub fn parse_for(spec: &Collective) -> Options {
        let min = spec.min_size;
        let mut cmd = Options::command()
            .name(spec.name)
            .bin_name(spec.name)
            .about(spec.about)
            .mut_arg("range", |a| {
                a.help(format!(
                    "Message sizes: MAX or MIN:MAX bytes, K/M/G suffixes for powers of 1024 \
                     [default: {min}:1M]"
                ))
            });
        let matches = cmd.get_matches_mut();
        let opts =
            Options::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut cmd).exit());
        if opts.sizes(spec).is_empty() {
            let (lo, hi) = opts.range(spec);
            let unit = if min == 1 { "byte" } else { "bytes" };
            cmd.error(
                clap::error::ErrorKind::ValueValidation,
                format!(
                    "message size range {lo}:{hi} holds no size {} measures (powers of two \
                     from {min} {unit})",
                    spec.name
                ),
            )
            .exit();
        }
        opts
    }

    /// The (min, max) sizes asked for, or OSU's default ramp for `spec`.
    pub fn range(&self, spec: &Collective) -> (usize, usize) {
        self.common.range.unwrap_or((spec.min_size, DEFAULT_MAX))
    }

    /// The sizes measured: powers of two in the range, from `spec.min_size` up.
    pub fn sizes(&self, spec: &Collective) -> Vec<usize> {
        let (min, max) = self.range(spec);
        crate::sizes(min.max(spec.min_size), max)
    }

    /// The largest size measured (what buffers need to hold).
    pub fn max_size(&self, spec: &Collective) -> usize {
        self.sizes(spec).last().copied().unwrap_or(0)
    }
}

/// Leave the job unless there are at least 2 ranks, as OSU's collective tests require.
pub fn require_two(universe: rmpi::Universe, spec: &Collective) -> rmpi::Universe {
    let n = universe.world().size();
    crate::cli::require_ranks(universe, spec.name, n >= 2, "at least 2 ranks")
}

/// Average seconds per call of `op` on this rank: `warmup` untimed calls, then `iters` timed.
pub fn time_calls(
    world: &Communicator,
    warmup: usize,
    iters: usize,
    mut op: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let mut total = 0.0;
    for i in 0..warmup + iters {
        let t0 = Instant::now();
        op()?;
        if i >= warmup {
            total += t0.elapsed().as_secs_f64();
        }
        world.barrier()?;
    }
    Ok(total / iters.max(1) as f64)
}

/// Run a collective over `opts`' sizes, printing avg (and with -f min, max, iterations)
/// latency over ranks at rank 0. `op(size)` does one call at `size` bytes.
pub fn run(
    spec: &Collective,
    opts: &Options,
    world: &Communicator,
    mut op: impl FnMut(usize) -> Result<()>,
) -> Result<()> {
    let common = &opts.common;
    let sizes = opts.sizes(spec);
    let mut out = (world.rank() == 0).then(|| {
        let mut r = Report::new(
            spec.name,
            spec.title,
            &[
                report::AVG_US,
                report::MIN_US,
                report::MAX_US,
                report::ITERATIONS,
            ],
            true,
            common.json,
            world.size(),
            sizes.len(),
        );
        if !opts.full.full {
            r.brief_text(1);
        }
        r
    });
    if let Some(r) = &out {
        r.start();
    }
    for size in sizes {
        let (warmup, iters) = crate::COLLECTIVE.at(size, common.iters, common.warmup);
        if let Some(r) = &mut out {
            r.working_on(size);
        }
        world.barrier()?;
        let t = time_calls(world, warmup, iters, || op(size))?;
        if let (Some(s), Some(r)) = (Stats::over_ranks(world, t * 1e6)?, &mut out) {
            r.row(Some(size), &[s.avg, s.min, s.max, iters as f64]);
        }
    }
    if let Some(r) = out {
        r.finish();
    }
    Ok(())
}
