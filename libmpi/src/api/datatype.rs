//! Element types a Rust buffer may hold, and their MPI datatypes.

use crate::datatype::Datatype;

mod sealed {
    pub trait Sealed {}
}

/// A primitive type with an MPI datatype: plain old data, every bit pattern valid, no padding,
/// so a buffer of it can be sent and received as raw bytes. Sealed: implemented here only.
pub trait Equivalence: sealed::Sealed + Copy + 'static {
    const DATATYPE: Datatype;
}

macro_rules! equivalence {
    ($($t:ty => $h:expr),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Equivalence for $t {
            const DATATYPE: Datatype = Datatype { handle: $h, size: std::mem::size_of::<$t>() };
        }
    )*};
}

equivalence! {
    u8 => 0x241, i8 => 0x240, u16 => 0x249, i16 => 0x248, u32 => 0x251, i32 => 0x250,
    u64 => 0x259, i64 => 0x258, f32 => 0x210, f64 => 0x214,
    usize => 0x259, isize => 0x258,
}

/// The bytes of a buffer of `T`.
#[inline]
pub(crate) fn as_bytes<T: Equivalence>(buf: &[T]) -> &[u8] {
    // SAFETY: `Equivalence` types are primitive integers and floats: no padding, every byte
    // initialised; the byte slice covers exactly the same memory and borrows it as long.
    unsafe { std::slice::from_raw_parts(buf.as_ptr().cast(), std::mem::size_of_val(buf)) }
}

/// The bytes of a mutable buffer of `T`.
#[inline]
pub(crate) fn as_bytes_mut<T: Equivalence>(buf: &mut [T]) -> &mut [u8] {
    // SAFETY: as `as_bytes`, and every bit pattern is a valid `T`, so any bytes written
    // through this slice leave valid values.
    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)) }
}
