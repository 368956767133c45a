//! Cartesian grids: row-major rank order (the last dimension varies fastest), per-dimension
//! periodicity.

use crate::error::{err, ErrorClass, Result};

/// MPI_PROC_NULL.
pub const PROC_NULL: i32 = crate::runtime::PROC_NULL;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cart {
    pub dims: Vec<i32>,
    pub periods: Vec<bool>,
}

impl Cart {
    /// A grid of `dims` for a communicator of `size` ranks: every extent positive and their
    /// product at most `size` (zero dimensions: one node).
    pub fn new(dims: &[i32], periods: &[bool], size: i32) -> Result<Cart> {
        if let Some((i, d)) = dims.iter().enumerate().find(|(_, &d)| d <= 0) {
            return err(
                ErrorClass::Dims,
                format!("dims[{i}] is {d}; every extent of a cartesian grid must be positive"),
            );
        }
        let nodes = dims.iter().try_fold(1i64, |p, &d| {
            p.checked_mul(d as i64).filter(|&p| p <= i32::MAX as i64)
        });
        match nodes {
            Some(n) if n <= size as i64 => Ok(Cart {
                dims: dims.to_vec(),
                periods: periods.to_vec(),
            }),
            _ => err(
                ErrorClass::Arg,
                format!(
                    "the grid {dims:?} has more nodes than the communicator has ranks ({size})"
                ),
            ),
        }
    }

    pub fn ndims(&self) -> usize {
        self.dims.len()
    }

    /// Number of grid nodes (ranks of the cartesian communicator).
    pub fn nnodes(&self) -> i32 {
        self.dims.iter().product()
    }

    /// Coordinates of `rank` (checked by the caller to be a node).
    pub fn coords(&self, rank: i32) -> Vec<i32> {
        let mut c = vec![0; self.dims.len()];
        let mut r = rank;
        for (i, &d) in self.dims.iter().enumerate().rev() {
            c[i] = r % d;
            r /= d;
        }
        c
    }

    /// Rank at `coords`: periodic dimensions wrap, others must be in range (MPI_ERR_ARG).
    pub fn rank(&self, coords: &[i32]) -> Result<i32> {
        let mut r = 0i32;
        for (i, (&c, &d)) in coords.iter().zip(&self.dims).enumerate() {
            let c = if self.periods[i] {
                c.rem_euclid(d)
            } else if (0..d).contains(&c) {
                c
            } else {
                return err(
                    ErrorClass::Arg,
                    format!("coordinate {c} of dimension {i} is outside 0..{d} (not periodic)"),
                );
            };
            r = r * d + c;
        }
        Ok(r)
    }

    /// MPI_Cart_shift: (source, destination) of `rank` for a shift of `disp` along `dim`;
    /// PROC_NULL off the edge of a non-periodic dimension.
    pub fn shift(&self, rank: i32, dim: i32, disp: i32) -> Result<(i32, i32)> {
        if !(0..self.dims.len() as i32).contains(&dim) {
            return err(
                ErrorClass::Dims,
                format!(
                    "direction {dim} is not a dimension of the grid (ndims {})",
                    self.dims.len()
                ),
            );
        }
        let c = self.coords(rank);
        let at = |off: i64| -> i32 {
            let d = dim as usize;
            let mut cc = c.clone();
            let v = c[d] as i64 + off;
            let n = self.dims[d] as i64;
            if self.periods[d] {
                cc[d] = v.rem_euclid(n) as i32;
            } else if (0..n).contains(&v) {
                cc[d] = v as i32;
            } else {
                return PROC_NULL;
            }
            self.rank(&cc).expect("coordinates in range")
        };
        Ok((at(-(disp as i64)), at(disp as i64)))
    }

    /// MPI_Cart_sub for `rank`: the color of its sub-grid (the coordinates of the dropped
    /// dimensions as one rank of their own grid), its key (the kept coordinates, likewise),
    /// and the sub-grid.
    pub fn sub(&self, rank: i32, remain: &[bool]) -> (i32, i32, Cart) {
        let c = self.coords(rank);
        let (mut color, mut key) = (0i32, 0i32);
        let mut sub = Cart {
            dims: Vec::new(),
            periods: Vec::new(),
        };
        for i in 0..self.dims.len() {
            if remain[i] {
                key = key * self.dims[i] + c[i];
                sub.dims.push(self.dims[i]);
                sub.periods.push(self.periods[i]);
            } else {
                color = color * self.dims[i] + c[i];
            }
        }
        (color, key, sub)
    }

    /// Neighbours in the standard's order: per dimension, the -1 then the +1 one (each both a
    /// source and a destination; PROC_NULL off a non-periodic edge).
    pub fn neighbors(&self, rank: i32) -> Vec<i32> {
        let mut v = Vec::with_capacity(2 * self.dims.len());
        for d in 0..self.dims.len() as i32 {
            let (lo, hi) = self.shift(rank, d, 1).expect("a dimension of the grid");
            v.push(lo);
            v.push(hi);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coords_rank_round_trip() {
        let c = Cart::new(&[2, 3, 4], &[false, true, false], 24).unwrap();
        for r in 0..24 {
            assert_eq!(c.rank(&c.coords(r)).unwrap(), r);
        }
        assert_eq!(c.coords(5), vec![0, 1, 1]);
        assert_eq!(c.rank(&[0, -1, 0]).unwrap(), c.rank(&[0, 2, 0]).unwrap());
        assert!(c.rank(&[2, 0, 0]).is_err());
    }

    #[test]
    fn shift_edges() {
        let c = Cart::new(&[3, 2], &[false, true], 6).unwrap();
        assert_eq!(c.shift(0, 0, 1).unwrap(), (PROC_NULL, 2));
        assert_eq!(c.shift(4, 0, 1).unwrap(), (2, PROC_NULL));
        assert_eq!(c.shift(0, 1, 1).unwrap(), (1, 1));
        assert_eq!(c.shift(2, 0, -1).unwrap(), (4, 0));
        assert!(c.shift(0, 2, 1).is_err());
        assert_eq!(c.neighbors(2), vec![0, 4, 3, 3]);
    }

    #[test]
    fn sub_grid() {
        let c = Cart::new(&[2, 3], &[false, true], 6).unwrap();
        let (color, key, s) = c.sub(4, &[false, true]);
        assert_eq!((color, key), (1, 1));
        assert_eq!(s.dims, vec![3]);
        assert_eq!(s.periods, vec![true]);
    }

    #[test]
    fn bad_grids() {
        assert_eq!(
            Cart::new(&[2, 0], &[false; 2], 4).unwrap_err().class,
            ErrorClass::Dims
        );
        assert_eq!(
            Cart::new(&[2, 3], &[false; 2], 4).unwrap_err().class,
            ErrorClass::Arg
        );
        assert_eq!(Cart::new(&[], &[], 1).unwrap().nnodes(), 1);
    }
}
