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
}

impl Contents {
    pub fn new(combiner: i32, ints: Vec<i64>, aints: Vec<i64>, types: Vec<TypeArg>) -> Contents {
        Contents {
            combiner,
            ints,
            aints,
            types,
        }
    }
}
