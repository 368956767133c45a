//! Environment queries in the Rust API (MPI_Get_version, MPI_Abi_get_version, MPI_Wtick,
//! MPI_Is_thread_main), answering exactly what the C interface answers.

use std::ffi::c_int;

/// The MPI standard version implemented: (5, 0).
pub fn version() -> (i32, i32) {
    let (mut v, mut s): (c_int, c_int) = (0, 0);
    // SAFETY: both pointers are to live ints; the call only writes them.
    unsafe { crate::capi::env::PMPI_Get_version(&mut v, &mut s) };
    (v, s)
}

/// The MPI ABI version of the C interface.
pub fn abi_version() -> (i32, i32) {
    let (mut v, mut s): (c_int, c_int) = (0, 0);
    // SAFETY: as in `version`.
    unsafe { crate::capi::env::PMPI_Abi_get_version(&mut v, &mut s) };
    (v, s)
}

/// Resolution of `Universe::wtime` in seconds.
pub fn wtick() -> f64 {
    crate::capi::env::PMPI_Wtick()
}

/// True on the thread that initialised MPI (the only one that may use it).
pub fn is_thread_main() -> bool {
    crate::runtime::with(|_| Ok(())).is_ok()
}
