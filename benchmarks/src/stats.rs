//! One number per rank summed up at rank 0: min, average and max over ranks, by MPI_Reduce as
//! OSU's collective tests do; and the median of repeated runs (bench-compare --osu).

use rmpi::{Communicator, Op, Result};

/// Min, average and max of per-rank numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
}

impl Stats {
    /// Every rank's `value` reduced to rank 0 (None elsewhere): three reduces, MIN, MAX and
    /// SUM, as OSU's tests do.
    pub fn over_ranks(world: &Communicator, value: f64) -> Result<Option<Stats>> {
        let mut min = [0f64];
        let mut max = [0f64];
        let mut sum = [0f64];
        world.reduce(&[value], &mut min, Op::Min, 0)?;
        world.reduce(&[value], &mut max, Op::Max, 0)?;
        world.reduce(&[value], &mut sum, Op::Sum, 0)?;
        Ok((world.rank() == 0).then(|| Stats {
            min: min[0],
            avg: sum[0] / world.size() as f64,
            max: max[0],
        }))
    }
}

/// The sum of every rank's `value` at rank 0 (None elsewhere).
pub fn sum_at_root(world: &Communicator, value: f64) -> Result<Option<f64>> {
    let mut sum = [0f64];
    world.reduce(&[value], &mut sum, Op::Sum, 0)?;
    Ok((world.rank() == 0).then_some(sum[0]))
}

/// The median of `values` (the mean of the middle two for an even count); None when empty or
/// when a value is NaN.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }
}
