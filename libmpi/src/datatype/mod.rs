//! Datatypes: the predefined ones (ABI handle values and sizes, below), derived ones built by
//! `layout` (a committed type is a list of contiguous blocks), the `segment` engine that packs and
//! unpacks any byte range of a (buffer, count, type) message, and the C handle `table`.

pub mod contents;
pub mod darray;
pub mod external32;
pub mod layout;
pub mod segment;
pub mod table;

pub use layout::Layout;
pub use segment::Msg;

/// A datatype as the library sees it: its ABI handle value and size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datatype {
    pub handle: usize,
    pub size: usize,
}

/// (handle, size, name) for every predefined datatype of the MPI 5.0 ABI on LP64 Linux.
const PREDEFINED: &[(usize, usize, &str)] = &[
    (0x201, 8, "MPI_AINT"),
    (0x202, 8, "MPI_COUNT"),
    (0x203, 8, "MPI_OFFSET"),
    (0x207, 1, "MPI_PACKED"),
    (0x208, 2, "MPI_SHORT"),
    (0x209, 4, "MPI_INT"),
    (0x20a, 8, "MPI_LONG"),
    (0x20b, 8, "MPI_LONG_LONG"),
    (0x20c, 2, "MPI_UNSIGNED_SHORT"),
    (0x20d, 4, "MPI_UNSIGNED"),
    (0x20e, 8, "MPI_UNSIGNED_LONG"),
    (0x20f, 8, "MPI_UNSIGNED_LONG_LONG"),
    (0x210, 4, "MPI_FLOAT"),
    (0x212, 8, "MPI_C_FLOAT_COMPLEX"),
    (0x213, 8, "MPI_CXX_FLOAT_COMPLEX"),
    (0x214, 8, "MPI_DOUBLE"),
    (0x216, 16, "MPI_C_DOUBLE_COMPLEX"),
    (0x217, 16, "MPI_CXX_DOUBLE_COMPLEX"),
    (0x218, 4, "MPI_LOGICAL"),
    (0x219, 4, "MPI_INTEGER"),
    (0x21a, 4, "MPI_REAL"),
    (0x21b, 8, "MPI_COMPLEX"),
    (0x21c, 8, "MPI_DOUBLE_PRECISION"),
    (0x21d, 16, "MPI_DOUBLE_COMPLEX"),
    (0x21e, 1, "MPI_CHARACTER"),
    (0x220, 16, "MPI_LONG_DOUBLE"),
    (0x224, 32, "MPI_C_LONG_DOUBLE_COMPLEX"),
    (0x225, 32, "MPI_CXX_LONG_DOUBLE_COMPLEX"),
    (0x228, 8, "MPI_FLOAT_INT"),
    (0x229, 16, "MPI_DOUBLE_INT"),
    (0x22a, 16, "MPI_LONG_INT"),
    (0x22b, 8, "MPI_2INT"),
    (0x22c, 8, "MPI_SHORT_INT"),
    (0x22d, 32, "MPI_LONG_DOUBLE_INT"),
    (0x230, 8, "MPI_2REAL"),
    (0x231, 16, "MPI_2DOUBLE_PRECISION"),
    (0x232, 8, "MPI_2INTEGER"),
    (0x238, 1, "MPI_C_BOOL"),
    (0x239, 1, "MPI_CXX_BOOL"),
    (0x23c, 4, "MPI_WCHAR"),
    (0x240, 1, "MPI_INT8_T"),
    (0x241, 1, "MPI_UINT8_T"),
    (0x243, 1, "MPI_CHAR"),
    (0x244, 1, "MPI_SIGNED_CHAR"),
    (0x245, 1, "MPI_UNSIGNED_CHAR"),
    (0x247, 1, "MPI_BYTE"),
    (0x248, 2, "MPI_INT16_T"),
    (0x249, 2, "MPI_UINT16_T"),
    (0x250, 4, "MPI_INT32_T"),
    (0x251, 4, "MPI_UINT32_T"),
    (0x258, 8, "MPI_INT64_T"),
    (0x259, 8, "MPI_UINT64_T"),
    (0x2c0, 1, "MPI_LOGICAL1"),
    (0x2c1, 1, "MPI_INTEGER1"),
    (0x2c8, 2, "MPI_LOGICAL2"),
    (0x2c9, 2, "MPI_INTEGER2"),
    (0x2ca, 2, "MPI_REAL2"),
    (0x2d0, 4, "MPI_LOGICAL4"),
    (0x2d1, 4, "MPI_INTEGER4"),
    (0x2d2, 4, "MPI_REAL4"),
    (0x2d3, 4, "MPI_COMPLEX4"),
    (0x2d8, 8, "MPI_LOGICAL8"),
    (0x2d9, 8, "MPI_INTEGER8"),
    (0x2da, 8, "MPI_REAL8"),
    (0x2db, 8, "MPI_COMPLEX8"),
    (0x2e0, 16, "MPI_LOGICAL16"),
    (0x2e1, 16, "MPI_INTEGER16"),
    (0x2e2, 16, "MPI_REAL16"),
    (0x2e3, 16, "MPI_COMPLEX16"),
    (0x2eb, 32, "MPI_COMPLEX32"),
];

pub const BYTE: Datatype = Datatype {
    handle: 0x247,
    size: 1,
};

/// The predefined datatype with this handle value, if any.
#[inline]
pub fn lookup(handle: usize) -> Option<Datatype> {
    // The common types first: this runs on every send and receive from C.
    match handle {
        0x247 | 0x243 => return Some(Datatype { handle, size: 1 }),
        0x209 => return Some(Datatype { handle, size: 4 }),
        0x214 => return Some(Datatype { handle, size: 8 }),
        _ => {}
    }
    lookup_table(handle)
}

/// `lookup` past the common types: out of line so the inlined part stays a few compares.
#[inline(never)]
fn lookup_table(handle: usize) -> Option<Datatype> {
    PREDEFINED
        .iter()
        .find(|(h, _, _)| *h == handle)
        .map(|&(handle, size, _)| Datatype { handle, size })
}

pub fn name(handle: usize) -> Option<&'static str> {
    PREDEFINED
        .iter()
        .find(|(h, _, _)| *h == handle)
        .map(|&(_, _, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_agrees_with_table() {
        for &(h, size, _) in PREDEFINED {
            assert_eq!(lookup(h).map(|d| d.size), Some(size), "{h:#x}");
        }
        assert_eq!(lookup(0x200), None);
        assert_eq!(name(0x209), Some("MPI_INT"));
    }
}
