//! What MPI_Type_get_envelope / MPI_Type_get_contents return: the constructor that made a
//! derived type and its arguments, recorded beside the layout when the type is created. The
//! argument types are kept alive here (layout and own contents), so a type freed after use as
//! an argument can still be handed back as a new handle.

use std::sync::Arc;

use super::Layout;

/// MPI_COMBINER_* values of the MPI 5.0 ABI.
pub mod combiner {
    pub const NAMED: i32 = 101;
    pub const DUP: i32 = 102;
    pub const CONTIGUOUS: i32 = 103;
    pub const VECTOR: i32 = 104;
    pub const HVECTOR: i32 = 105;
    pub const INDEXED: i32 = 106;
    pub const HINDEXED: i32 = 107;
    pub const INDEXED_BLOCK: i32 = 108;
    pub const HINDEXED_BLOCK: i32 = 109;
    pub const STRUCT: i32 = 110;
    pub const SUBARRAY: i32 = 111;
    pub const DARRAY: i32 = 112;
    pub const RESIZED: i32 = 116;
    pub const VALUE_INDEX: i32 = 117;
}

/// A type used as a constructor argument.
#[derive(Clone, Debug)]
pub struct TypeArg {
    pub handle: usize,
    pub layout: Arc<Layout>,
    pub contents: Option<Arc<Contents>>,
    pub committed: bool,
}

/// A constructor call: its combiner and the integer, address and datatype arguments in the
/// order MPI_Type_get_contents lists them.
#[derive(Clone, Debug)]
pub struct Contents {
    pub combiner: i32,
    pub ints: Vec<i64>,
    pub aints: Vec<i64>,
    pub types: Vec<TypeArg>,
    /// Made by a large-count (`_c`) constructor with an integer argument beyond an int: the
    /// arguments are large counts (MPI 4.1 §5.1.13), which only the `_c` queries return.
    pub large: bool,
}

impl Contents {
    pub fn new(combiner: i32, ints: Vec<i64>, aints: Vec<i64>, types: Vec<TypeArg>) -> Contents {
        Contents {
            combiner,
            ints,
            aints,
            types,
            large: false,
        }
    }

    /// The record of a `_c` constructor: large counts when an integer argument does not fit an
    /// int. Otherwise as the int constructor's, so the int queries still decode such a type.
    pub fn large_count(mut self) -> Contents {
        self.large = self.ints.iter().any(|&v| i32::try_from(v).is_err());
        self
    }

    /// (integers, addresses, large counts) as MPI_Type_get_contents_c returns them: for a
    /// large record, what the `_c` constructor took as MPI_Count (MPI 4.1 Table 5.1): everything
    /// but the datatypes, except subarray's ndims and order and darray's int arguments.
    pub fn split(&self) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
        if !self.large {
            return (self.ints.clone(), self.aints.clone(), Vec::new());
        }
        let n = self.ints.len();
        match self.combiner {
            // ndims, sizes, subsizes, starts, order
            combiner::SUBARRAY if n >= 2 => (
                vec![self.ints[0], self.ints[n - 1]],
                Vec::new(),
                self.ints[1..n - 1].to_vec(),
            ),
            // size, rank, ndims, gsizes, distribs, dargs, psizes, order: only gsizes are counts.
            combiner::DARRAY if n >= 3 => {
                let nd = (self.ints[2].max(0) as usize).min(n - 3);
                let mut ints = self.ints[..3].to_vec();
                ints.extend_from_slice(&self.ints[3 + nd..]);
                (ints, Vec::new(), self.ints[3..3 + nd].to_vec())
            }
            _ => {
                let mut large = self.ints.clone();
                large.extend_from_slice(&self.aints);
                (Vec::new(), Vec::new(), large)
            }
        }
    }
}
