//! Forced algorithm choices, like Open MPI's coll_tuned: `coll_tuned_<collective>_algorithm`
//! (numbers and names in `mca_general::TUNED`) makes benchmarks run one algorithm. The
//! algorithms ask `forced` and keep their automatic choice for 0 and for a forced algorithm
//! that cannot apply to the call at hand (they alone know its op, counts and placement).

use std::sync::OnceLock;

use crate::mca_general::{tuned_choice, TUNED};

/// A collective with a `coll_tuned_*_algorithm` parameter; the value is its row in `TUNED`.
#[derive(Clone, Copy)]
pub enum Tuned {
    Allreduce = 0,
    Bcast = 1,
    Reduce = 2,
    Barrier = 3,
    Allgather = 4,
}

// The numbers `forced` returns, as `TUNED` lists them.
pub const ALLREDUCE_RECURSIVE_DOUBLING: usize = 1;
pub const ALLREDUCE_RING: usize = 2;
pub const ALLREDUCE_RABENSEIFNER: usize = 3;
pub const ALLREDUCE_HIER: usize = 4;
pub const BCAST_BINOMIAL: usize = 1;
pub const BCAST_SCATTER_ALLGATHER: usize = 2;
pub const BCAST_HIER: usize = 3;
pub const REDUCE_BINOMIAL: usize = 1;
pub const REDUCE_SCATTER_GATHER: usize = 2;
pub const REDUCE_HIER: usize = 3;
pub const BARRIER_DISSEMINATION: usize = 1;
pub const BARRIER_HIER: usize = 2;
pub const ALLGATHER_ALL_AT_ONCE: usize = 1;
pub const ALLGATHER_BRUCK: usize = 2;
pub const ALLGATHER_RING: usize = 3;
pub const ALLGATHER_HIER: usize = 4;

/// The algorithm forced for `c`, 0 for automatic. Read once: every rank sees the same
/// environment, so all agree on the schedule. A value mpirun did not check (another launcher)
/// that names nothing means automatic.
pub fn forced(c: Tuned) -> usize {
    static VALUES: OnceLock<Vec<usize>> = OnceLock::new();
    VALUES.get_or_init(|| {
        TUNED
            .iter()
            .map(|(name, names)| {
                std::env::var(format!("RMPI_MCA_{name}"))
                    .ok()
                    .and_then(|v| tuned_choice(names, &v))
                    .unwrap_or(0)
            })
            .collect()
    })[c as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_numbers_agree() {
        let row = |c: Tuned| TUNED[c as usize].1;
        assert!(TUNED[Tuned::Allreduce as usize].0.contains("allreduce"));
        assert!(TUNED[Tuned::Allgather as usize].0.contains("allgather"));
        assert_eq!(
            row(Tuned::Allreduce)[ALLREDUCE_RABENSEIFNER],
            "rabenseifner"
        );
        assert_eq!(row(Tuned::Allreduce)[ALLREDUCE_HIER], "hierarchical");
        assert_eq!(row(Tuned::Bcast)[BCAST_HIER], "hierarchical");
        assert_eq!(row(Tuned::Reduce)[REDUCE_HIER], "hierarchical");
        assert_eq!(row(Tuned::Barrier)[BARRIER_HIER], "hierarchical");
        assert_eq!(row(Tuned::Allgather)[ALLGATHER_HIER], "hierarchical");
        assert_eq!(row(Tuned::Allgather)[ALLGATHER_BRUCK], "bruck");
        let names = row(Tuned::Allreduce);
        assert_eq!(tuned_choice(names, "2"), Some(ALLREDUCE_RING));
        assert_eq!(tuned_choice(names, " Ring "), Some(ALLREDUCE_RING));
        assert_eq!(tuned_choice(names, "5"), None);
        assert_eq!(tuned_choice(names, "-1"), None);
        assert_eq!(tuned_choice(names, "fast"), None);
    }
}
