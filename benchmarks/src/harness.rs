//! The collective timing harness, OSU's method: per size, warm-up iterations, then timed ones
//! each followed by a barrier (so skew from one call does not leak into the next); each rank's
//! average time per call, then min/avg/max over ranks at rank 0. A collective benchmark is the
//! operation as a closure:
//!
//! ```ignore
//! let spec = Collective { name: "osu-allreduce", title: "# OSU MPI Allreduce Latency Test", min_size: 4 };
//! harness::run(&spec, &args.common, &world, |size| world.allreduce(&s[..size / 4], &mut r[..size / 4], Op::Sum))
//! ```

use std::time::Instant;

use mpi::{Communicator, Result};

use crate::cli::Common;
use crate::p2p::{gather_at_root, Stats};
use crate::report::{self, Report};

/// A collective benchmark: its name, OSU's title line and the smallest size it makes sense at.
pub struct Collective {
    pub name: &'static str,
    pub title: &'static str,
    pub min_size: usize,
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

/// Run a collective over the sizes of `common.range` (from `spec.min_size` up), printing
/// avg/min/max latency over ranks at rank 0. `op(size)` does one call at `size` bytes.
pub fn run(
    spec: &Collective,
    common: &Common,
    world: &Communicator,
    mut op: impl FnMut(usize) -> Result<()>,
) -> Result<()> {
    let (min, max) = common.range_or(spec.min_size);
    let sizes: Vec<usize> = crate::sizes(min.max(spec.min_size), max)
        .into_iter()
        .filter(|&s| s >= spec.min_size)
        .collect();
    let mut out = (world.rank() == 0).then(|| {
        Report::new(
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
        )
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
        if let (Some(all), Some(r)) = (gather_at_root(world, t * 1e6)?, &mut out) {
            let s = Stats::of(&all);
            r.row(Some(size), &[s.avg, s.min, s.max, iters as f64]);
        }
    }
    if let Some(r) = out {
        r.finish();
    }
    Ok(())
}
