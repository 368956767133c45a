//! Shared pieces of the bundled benchmarks: the size ramp, OSU's iteration counts, the common
//! command line, text/JSON reports with a progress bar, the collective timing harness, NetPIPE's
//! ramp, the SVG plot, and bench-compare's machinery (compare; osu and probe for its --osu mode).

pub mod cli;
pub mod compare;
pub mod harness;
pub mod netpipe;
pub mod osu;
pub mod p2p;
pub mod plot;
pub mod probe;
pub mod progress;
pub mod report;
pub mod stats;
pub mod terminal;

/// OSU's threshold between "small" and "large" messages for iteration counts.
pub const LARGE_MESSAGE: usize = 8192;

/// Powers of two from `min` to `max` inclusive, with 0 first when `min` is 0 (OSU's ramp).
pub fn sizes(min: usize, max: usize) -> Vec<usize> {
    let mut v = Vec::new();
    if min == 0 {
        v.push(0);
    }
    let mut s = 1usize;
    while s <= max {
        if s >= min {
            v.push(s);
        }
        s *= 2;
    }
    v
}

/// OSU's (warm-up, timed) iteration counts for small and large messages, per kind of test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub small: (usize, usize),
    pub large: (usize, usize),
}

/// osu_latency, osu_multi_lat.
pub const LATENCY: Counts = Counts {
    small: (1000, 10_000),
    large: (100, 1000),
};
/// osu_bw, osu_bibw, osu_mbw_mr (each iteration is a whole window).
pub const BANDWIDTH: Counts = Counts {
    small: (10, 100),
    large: (2, 20),
};
/// The collectives and osu_barrier.
pub const COLLECTIVE: Counts = Counts {
    small: (200, 1000),
    large: (10, 100),
};

impl Counts {
    /// (warm-up, timed) for `size`; `-i`/`-x` override both small and large counts.
    pub fn at(&self, size: usize, iters: Option<usize>, warmup: Option<usize>) -> (usize, usize) {
        let (w, i) = if size < LARGE_MESSAGE {
            self.small
        } else {
            self.large
        };
        (warmup.unwrap_or(w), iters.unwrap_or(i))
    }
}

/// (warm-up, timed) iterations for a latency test at a message size.
pub fn iterations(size: usize, iters: Option<usize>, warmup: Option<usize>) -> (usize, usize) {
    LATENCY.at(size, iters, warmup)
}

/// Largest message size accepted: buffers (a window of them for bandwidth) must fit in memory.
pub const MAX_SIZE: usize = 1 << 30;

/// A size in bytes, with an optional K/M/G suffix (powers of 1024).
pub fn parse_size(t: &str) -> Result<usize, String> {
    let t = t.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1usize << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let n = num
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| format!("'{t}' is not a message size in bytes"))?;
    if n > MAX_SIZE {
        return Err(format!(
            "message size {n} is above the limit of {MAX_SIZE} bytes"
        ));
    }
    Ok(n)
}

/// Parse OSU's `-m` argument: `MAX` or `MIN:MAX`.
pub fn parse_range(s: &str) -> Result<(usize, usize), String> {
    let parse = parse_size;
    let (min, max) = match s.split_once(':') {
        Some((a, b)) => (parse(a)?, parse(b)?),
        None => (0, parse(s)?),
    };
    if min > max {
        return Err(format!("message size range {min}:{max} is empty"));
    }
    Ok((min, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp() {
        assert_eq!(sizes(0, 8), vec![0, 1, 2, 4, 8]);
        assert_eq!(sizes(4, 16), vec![4, 8, 16]);
        assert_eq!(sizes(0, 4 << 20).len(), 24);
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range("1024"), Ok((0, 1024)));
        assert_eq!(parse_range("8:64"), Ok((8, 64)));
        assert!(parse_range("64:8").is_err());
        assert!(parse_range("x").is_err());
        assert_eq!(parse_range("1K:4M"), Ok((1024, 4 << 20)));
        assert!(parse_range("2G").is_err());
    }

    #[test]
    fn osu_iteration_counts() {
        assert_eq!(iterations(0, None, None), (1000, 10_000));
        assert_eq!(iterations(8192, None, None), (100, 1000));
        assert_eq!(iterations(8192, Some(5), Some(1)), (1, 5));
    }
}
