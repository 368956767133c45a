//! Process groups: an ordered list of distinct world ranks, and MPI's set operations on them.
//! Pure values: no runtime needed, so the C handles and the Rust API share this code.

use crate::error::{err, ErrorClass, Result};

/// MPI_UNDEFINED: a rank that is not in the group.
pub const UNDEFINED: i32 = -32766;

/// How two groups (or communicators' groups) relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// Same members in the same order (communicators: the very same communicator).
    Identical,
    /// Communicators only: same members in the same order, different contexts.
    Congruent,
    /// Same members, different order.
    Similar,
    Unequal,
}

/// A group: world rank of each member, by rank in the group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    members: Vec<i32>,
}

impl Group {
    pub fn new(members: Vec<i32>) -> Group {
        Group { members }
    }

    pub fn empty() -> Group {
        Group::default()
    }

    pub fn members(&self) -> &[i32] {
        &self.members
    }

    pub fn size(&self) -> i32 {
        self.members.len() as i32
    }

    /// Rank of world rank `world` in this group, or None.
    pub fn rank_of(&self, world: i32) -> Option<i32> {
        self.members
            .iter()
            .position(|&m| m == world)
            .map(|i| i as i32)
    }

    fn check_rank(&self, r: i32, what: &str) -> Result<usize> {
        if (0..self.size()).contains(&r) {
            Ok(r as usize)
        } else {
            err(
                ErrorClass::Rank,
                format!(
                    "{what}: rank {r} is out of range for a group of size {}",
                    self.size()
                ),
            )
        }
    }

    /// The members at `ranks`, in that order; ranks must be valid and distinct.
    pub fn incl(&self, ranks: &[i32]) -> Result<Group> {
        let mut seen = vec![false; self.members.len()];
        let mut out = Vec::with_capacity(ranks.len());
        for &r in ranks {
            let i = self.check_rank(r, "group incl")?;
            if std::mem::replace(&mut seen[i], true) {
                return err(
                    ErrorClass::Rank,
                    format!("group incl: rank {r} appears twice"),
                );
            }
            out.push(self.members[i]);
        }
        Ok(Group::new(out))
    }

    /// The members not at `ranks`, in group order; ranks must be valid and distinct.
    pub fn excl(&self, ranks: &[i32]) -> Result<Group> {
        let mut drop = vec![false; self.members.len()];
        for &r in ranks {
            let i = self.check_rank(r, "group excl")?;
            if std::mem::replace(&mut drop[i], true) {
                return err(
                    ErrorClass::Rank,
                    format!("group excl: rank {r} appears twice"),
                );
            }
        }
        let keep = self.members.iter().zip(&drop).filter(|(_, d)| !**d);
        Ok(Group::new(keep.map(|(m, _)| *m).collect()))
    }

    /// Ranks named by (first, last, stride) triples, in order.
    fn expand_ranges(&self, ranges: &[[i32; 3]]) -> Result<Vec<i32>> {
        let mut out = Vec::new();
        for &[first, last, stride] in ranges {
            if stride == 0 {
                return err(ErrorClass::Arg, "group range: stride 0");
            }
            self.check_rank(first, "group range")?;
            self.check_rank(last, "group range")?;
            if (stride > 0 && first > last) || (stride < 0 && first < last) {
                continue;
            }
            let mut r = first;
            while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
                out.push(r);
                r += stride;
            }
        }
        Ok(out)
    }

    pub fn range_incl(&self, ranges: &[[i32; 3]]) -> Result<Group> {
        self.incl(&self.expand_ranges(ranges)?)
    }

    pub fn range_excl(&self, ranges: &[[i32; 3]]) -> Result<Group> {
        self.excl(&self.expand_ranges(ranges)?)
    }

    /// All of `self`, then the members of `other` not in `self`.
    pub fn union(&self, other: &Group) -> Group {
        let mut out = self.members.clone();
        out.extend(other.members.iter().filter(|m| !self.members.contains(m)));
        Group::new(out)
    }

    /// Members of `self` also in `other`, in `self`'s order.
    pub fn intersection(&self, other: &Group) -> Group {
        let v = self.members.iter().filter(|m| other.members.contains(m));
        Group::new(v.copied().collect())
    }

    /// Members of `self` not in `other`, in `self`'s order.
    pub fn difference(&self, other: &Group) -> Group {
        let v = self.members.iter().filter(|m| !other.members.contains(m));
        Group::new(v.copied().collect())
    }

    /// For each rank of `self`, its rank in `other` or UNDEFINED; PROC_NULL maps to itself.
    pub fn translate(&self, ranks: &[i32], other: &Group) -> Result<Vec<i32>> {
        ranks
            .iter()
            .map(|&r| {
                if r == crate::runtime::PROC_NULL {
                    return Ok(r);
                }
                let i = self.check_rank(r, "group translate ranks")?;
                Ok(other.rank_of(self.members[i]).unwrap_or(UNDEFINED))
            })
            .collect()
    }

    /// Identical (same order), Similar (same members) or Unequal.
    pub fn compare(&self, other: &Group) -> Comparison {
        if self.members == other.members {
            return Comparison::Identical;
        }
        let mut a = self.members.clone();
        let mut b = other.members.clone();
        a.sort_unstable();
        b.sort_unstable();
        if a == b {
            Comparison::Similar
        } else {
            Comparison::Unequal
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(v: &[i32]) -> Group {
        Group::new(v.to_vec())
    }

    #[test]
    fn incl_excl_and_errors() {
        let a = g(&[10, 11, 12, 13]);
        assert_eq!(a.incl(&[3, 0]).unwrap(), g(&[13, 10]));
        assert_eq!(a.excl(&[1, 2]).unwrap(), g(&[10, 13]));
        assert_eq!(a.incl(&[4]).unwrap_err().class, ErrorClass::Rank);
        assert_eq!(a.incl(&[1, 1]).unwrap_err().class, ErrorClass::Rank);
        assert_eq!(a.excl(&[-1]).unwrap_err().class, ErrorClass::Rank);
        assert_eq!(a.incl(&[]).unwrap(), Group::empty());
    }

    #[test]
    fn ranges() {
        let a = g(&[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(a.range_incl(&[[0, 7, 2]]).unwrap(), g(&[0, 2, 4, 6]));
        assert_eq!(a.range_incl(&[[7, 0, -3]]).unwrap(), g(&[7, 4, 1]));
        assert_eq!(a.range_excl(&[[1, 7, 2]]).unwrap(), g(&[0, 2, 4, 6]));
        assert_eq!(
            a.range_incl(&[[0, 1, 0]]).unwrap_err().class,
            ErrorClass::Arg
        );
        assert_eq!(
            a.range_incl(&[[0, 8, 1]]).unwrap_err().class,
            ErrorClass::Rank
        );
    }

    #[test]
    fn set_operations_keep_order() {
        let a = g(&[3, 1, 2]);
        let b = g(&[2, 5, 3]);
        assert_eq!(a.union(&b), g(&[3, 1, 2, 5]));
        assert_eq!(a.intersection(&b), g(&[3, 2]));
        assert_eq!(a.difference(&b), g(&[1]));
        assert_eq!(b.difference(&b), Group::empty());
    }

    #[test]
    fn translate_and_compare() {
        let a = g(&[3, 1, 2]);
        let b = g(&[2, 3]);
        assert_eq!(
            a.translate(&[0, 1, 2, crate::runtime::PROC_NULL], &b)
                .unwrap(),
            vec![1, UNDEFINED, 0, crate::runtime::PROC_NULL]
        );
        assert_eq!(a.compare(&a.clone()), Comparison::Identical);
        assert_eq!(a.compare(&g(&[1, 2, 3])), Comparison::Similar);
        assert_eq!(a.compare(&b), Comparison::Unequal);
    }
}
