//! MPI_Dims_create: split `nnodes` over the dimensions left 0, as evenly as possible, in
//! non-increasing order.

use crate::error::{err, ErrorClass, Result};

/// Fill the zero entries of `dims` so that the product of all entries is `nnodes`.
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> Result<()> {
    if nnodes < 0 {
        return err(ErrorClass::Arg, format!("nnodes {nnodes} is negative"));
    }
    if let Some((i, d)) = dims.iter().enumerate().find(|(_, &d)| d < 0) {
        return err(
            ErrorClass::Dims,
            format!("dims[{i}] is {d}; entries must be positive or 0 (free)"),
        );
    }
    let fixed: i64 = dims.iter().filter(|&&d| d > 0).map(|&d| d as i64).product();
    let free = dims.iter().filter(|&&d| d == 0).count();
    if nnodes == 0 {
        // Only the empty grid has no node; nothing to distribute.
        return err(ErrorClass::Dims, "nnodes is 0: no grid has zero nodes");
    }
    if nnodes as i64 % fixed != 0 {
        return err(
            ErrorClass::Dims,
            format!("nnodes {nnodes} is not a multiple of the fixed extents' product {fixed}"),
        );
    }
    let rest = (nnodes as i64 / fixed) as i32;
    if free == 0 {
        if rest != 1 {
            return err(
                ErrorClass::Dims,
                format!("the fixed extents' product {fixed} is not nnodes {nnodes}"),
            );
        }
        return Ok(());
    }
    let split = balanced(rest, free);
    for (d, v) in dims.iter_mut().filter(|d| **d == 0).zip(split) {
        *d = v;
    }
    Ok(())
}

/// `n` as a product of `k` non-increasing factors, the most balanced one: the smallest spread
/// (largest - smallest factor), ties going to the largest smallest factor, then the largest
/// next-smallest one, and so on (what MPICH's dims tests expect). A depth-first search over the
/// divisors, pruned by the best spread so far; a bound on the steps falls back to dealing out
/// prime factors.
fn balanced(n: i32, k: usize) -> Vec<i32> {
    let mut divs: Vec<i32> = (1..)
        .take_while(|&d: &i32| (d as i64) * (d as i64) <= n as i64)
        .filter(|d| n % d == 0)
        .flat_map(|d| [d, n / d])
        .collect();
    divs.sort_unstable();
    divs.dedup();
    let mut s = Search {
        divs,
        budget: 2_000_000,
        cur: Vec::with_capacity(k),
        best: None,
    };
    s.run(n, k, n);
    match s.best {
        Some(b) if s.budget > 0 => b,
        _ => greedy(n, k),
    }
}

struct Search {
    /// The divisors of the original n, smallest first.
    divs: Vec<i32>,
    budget: u32,
    cur: Vec<i32>,
    best: Option<Vec<i32>>,
}

impl Search {
    fn spread(v: &[i32]) -> i32 {
        v[0] - v[v.len() - 1]
    }

    /// Try every way to extend `cur` with `k` factors of `n`, each at most `max`.
    fn run(&mut self, n: i32, k: usize, max: i32) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        if k == 1 {
            if n <= max {
                self.cur.push(n);
                let better = match &self.best {
                    None => true,
                    Some(b) => {
                        let (sc, sb) = (Self::spread(&self.cur), Self::spread(b));
                        sc < sb || (sc == sb && self.cur.iter().rev().gt(b.iter().rev()))
                    }
                };
                if better {
                    self.best = Some(self.cur.clone());
                }
                self.cur.pop();
            }
            return;
        }
        // The next factor d: d^k >= n (the rest stay <= d), d <= max.
        let start = self
            .divs
            .partition_point(|&d| (d as f64).powi(k as i32) < n as f64 - 0.5);
        let end = self.divs.partition_point(|&d| d <= max.min(n));
        for i in (start..end).rev() {
            let d = self.divs[i];
            if n % d != 0 {
                continue;
            }
            // Later factors are <= d, so the spread is at least first - d from here on.
            let first = self.cur.first().copied().unwrap_or(d);
            if self
                .best
                .as_ref()
                .is_some_and(|b| first - d > Self::spread(b))
            {
                break;
            }
            self.cur.push(d);
            self.run(n / d, k - 1, d);
            self.cur.pop();
        }
    }
}

fn greedy(mut n: i32, k: usize) -> Vec<i32> {
    let mut primes = Vec::new();
    let mut p = 2;
    while p * p <= n {
        while n % p == 0 {
            primes.push(p);
            n /= p;
        }
        p += 1;
    }
    if n > 1 {
        primes.push(n);
    }
    let mut v = vec![1; k];
    for &p in primes.iter().rev() {
        let i = (0..k).min_by_key(|&i| v[i]).expect("k > 0");
        v[i] *= p;
    }
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dc(n: i32, d: &[i32]) -> Vec<i32> {
        let mut v = d.to_vec();
        dims_create(n, &mut v).unwrap();
        v
    }

    #[test]
    fn standard_examples() {
        assert_eq!(dc(6, &[0, 0]), vec![3, 2]);
        assert_eq!(dc(7, &[0, 0]), vec![7, 1]);
        assert_eq!(dc(6, &[0, 3, 0]), vec![2, 3, 1]);
        assert!(dims_create(7, &mut [0, 3, 0]).is_err());
        assert_eq!(dc(24, &[0, 0, 0]), vec![4, 3, 2]);
        assert_eq!(dc(16, &[0, 0]), vec![4, 4]);
        assert_eq!(dc(1, &[0, 0, 0]), vec![1, 1, 1]);
        assert_eq!(dc(12, &[0, 0]), vec![4, 3]);
        assert_eq!(dc(4, &[2, 2]), vec![2, 2]);
    }

    #[test]
    fn big_counts_terminate() {
        let v = dc(1 << 20, &[0; 12]);
        assert_eq!(v.iter().product::<i32>(), 1 << 20);
        let v = dc(2 * 3 * 5 * 7 * 11 * 13 * 17, &[0; 5]);
        assert_eq!(v.iter().product::<i32>(), 2 * 3 * 5 * 7 * 11 * 13 * 17);
        assert!(v.windows(2).all(|w| w[0] >= w[1]));
    }
}
