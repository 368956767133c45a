//! NetPIPE's schedule: its ramp of message sizes (increments doubling every other step, each
//! size also tried ±perturbation bytes) and repetition counts chosen to fill a time slice.

/// One message size of the ramp and the increment that led to it (NetPIPE scales repetitions
/// by both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub size: usize,
    pub inc: usize,
}

/// NetPIPE 3.x's ramp from `lower` to `upper`: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ... with
/// `size - p`, `size`, `size + p` once the increment exceeds p + 1.
pub fn ramp(lower: usize, upper: usize, perturbation: usize) -> Vec<Step> {
    let mut out = Vec::new();
    let (mut len, mut inc, mut nq) = (lower.max(1), 1usize, 0usize);
    while len <= upper {
        if nq > 2 && nq % 2 == 1 {
            inc += inc;
        }
        let perturbed = perturbation > 0 && inc > perturbation + 1;
        if perturbed {
            for size in [len - perturbation, len, len + perturbation] {
                out.push(Step { size, inc });
            }
        } else {
            out.push(Step { size: len, inc });
        }
        len += inc;
        nq += 1;
    }
    out
}

/// Repetitions for a step: enough to fill `time_slice` seconds given the previous size's time per
/// repetition `tlast`, at least `min` (NetPIPE: MAX(RUNTM / (len / (len - inc + 1) * tlast), TRIALS)).
pub fn repetitions(time_slice: f64, step: Step, tlast: f64, min: usize) -> usize {
    let len = step.size as f64;
    let scale = len / (len - step.inc as f64 + 1.0).max(1.0);
    let n = time_slice / (scale * tlast).max(1e-9);
    (n.min(1e9) as usize).max(min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netpipe_ramp() {
        let sizes: Vec<usize> = ramp(1, 70, 3).iter().map(|s| s.size).collect();
        assert_eq!(
            sizes,
            vec![1, 2, 3, 4, 6, 8, 12, 13, 16, 19, 21, 24, 27, 29, 32, 35, 45, 48, 51, 61, 64, 67]
        );
        let plain: Vec<usize> = ramp(1, 16, 0).iter().map(|s| s.size).collect();
        assert_eq!(plain, vec![1, 2, 3, 4, 6, 8, 12, 16]);
    }

    #[test]
    fn repetitions_fill_the_slice() {
        let step = Step { size: 1000, inc: 1 };
        assert_eq!(repetitions(0.25, step, 1e-6, 7), 250_000);
        assert_eq!(repetitions(0.25, step, 1.0, 7), 7);
    }
}
