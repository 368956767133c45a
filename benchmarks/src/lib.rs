//! Shared pieces of the OSU-style benchmarks: the size ramp and OSU's iteration counts.

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

/// (warm-up, timed) iterations for a message size, OSU's defaults unless overridden.
pub fn iterations(size: usize, iters: Option<usize>, warmup: Option<usize>) -> (usize, usize) {
    let (w, i) = if size < LARGE_MESSAGE {
        (1000, 10_000)
    } else {
        (100, 1000)
    };
    (warmup.unwrap_or(w), iters.unwrap_or(i))
}

/// Parse OSU's `-m` argument: `MAX` or `MIN:MAX`.
pub fn parse_range(s: &str) -> Result<(usize, usize), String> {
    let parse = |t: &str| {
        t.trim()
            .parse::<usize>()
            .map_err(|_| format!("'{t}' is not a message size in bytes"))
    };
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
    }

    #[test]
    fn osu_iteration_counts() {
        assert_eq!(iterations(0, None, None), (1000, 10_000));
        assert_eq!(iterations(8192, None, None), (100, 1000));
        assert_eq!(iterations(8192, Some(5), Some(1)), (1, 5));
    }
}
