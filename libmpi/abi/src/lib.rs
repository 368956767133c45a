//! `libmpi_abi.so.1`: the C library of rmpi. Everything it exports (MPI_x, PMPI_x and, with
//! memhook's ptmalloc provider, the malloc family) is defined in the `rmpi` crate (package
//! `libmpi`); this crate only links it into a shared object under the MPI 5.0 ABI's name.

// Linked for its `#[no_mangle]` C functions, which a cdylib exports from its dependencies.
extern crate rmpi as _;
