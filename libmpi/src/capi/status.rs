//! The MPI 4.1 status accessors (MPI_Status_get_source, _tag, _error): a status's public fields
//! read through a call, for languages and bindings that do not reach the struct (mpi4py uses them).

use std::ffi::c_int;

use super::*;

/// Write `field(status)` to `out`, failing cleanly (MPI_ERR_ARG) on a NULL pointer.
fn get(
    name: &str,
    status: *const MpiStatus,
    out: *mut c_int,
    field: impl FnOnce(&MpiStatus) -> c_int,
) -> c_int {
    if status.is_null() || out.is_null() {
        return fail(
            name,
            crate::comm::WORLD,
            Error::new(ErrorClass::Arg, "status or output pointer is NULL"),
        );
    }
    // SAFETY: both checked non-NULL; the caller passes a readable MPI_Status and a writable int.
    unsafe { out.write(field(&*status)) };
    MPI_SUCCESS
}

mpi_fn! {
    fn MPI_Status_get_source / PMPI_Status_get_source(status: *const MpiStatus, source: *mut c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Status_get_source", crate::comm::WORLD, e);
        }
        get("MPI_Status_get_source", status, source, |s| s.source)
    }
}

mpi_fn! {
    fn MPI_Status_get_tag / PMPI_Status_get_tag(status: *const MpiStatus, tag: *mut c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Status_get_tag", crate::comm::WORLD, e);
        }
        get("MPI_Status_get_tag", status, tag, |s| s.tag)
    }
}

mpi_fn! {
    fn MPI_Status_get_error / PMPI_Status_get_error(status: *const MpiStatus, error: *mut c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Status_get_error", crate::comm::WORLD, e);
        }
        get("MPI_Status_get_error", status, error, |s| s.error)
    }
}
