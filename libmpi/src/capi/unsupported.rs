//! What a function rmpi does not implement does when called (its stub is generated into
//! `unimplemented.rs`): raise MPI_ERR_UNSUPPORTED_OPERATION with an error code of the
//! function's own, so MPI_Error_string (and, through it, e.g. mpi4py's MPI.Exception) names it.

use std::ffi::c_int;

use super::unimplemented::NAMES;
use super::*;

/// Function `NAMES[i]` raises error code `CODE_BASE + i`: between the last predefined class (62)
/// and MPI_ERR_LASTCODE (16383), a range the standard leaves to the implementation (user codes
/// start after MPI_ERR_LASTCODE).
const CODE_BASE: c_int = 0x1000;

/// The unimplemented function whose stub raises `code`, if any.
pub(super) fn function_of(code: c_int) -> Option<&'static str> {
    let i = usize::try_from(code.checked_sub(CODE_BASE)?).ok()?;
    NAMES.get(i).copied()
}

/// The text of such a code (MPI_Error_string's, and the fatal handler's).
pub(super) fn message(function: &str) -> String {
    format!(
        "{}: {function} is not implemented in {}",
        ErrorClass::UnsupportedOperation.name(),
        crate::LIBRARY_VERSION
    )
}

fn code(i: usize) -> c_int {
    CODE_BASE + i as c_int
}

/// The stub of `NAMES[i]`, a call with a communicator argument: that communicator's error
/// handler (MPI_COMM_WORLD's if it is not a valid one).
#[cold]
#[allow(dead_code)] // for generated stubs; none takes a communicator now
pub(super) fn on_comm(i: usize, comm: Handle) -> c_int {
    let comm = comm_index(comm).unwrap_or(crate::comm::WORLD);
    fail_code(NAMES[i], comm, code(i), &message(NAMES[i]))
}

/// The stub of any other `NAMES[i]` (windows, sessions, no object): MPI_COMM_WORLD's handler,
/// as for every error without a communicator.
#[cold]
#[allow(dead_code)] // for generated stubs; the stubs left (MPI_T) return their own code
pub(super) fn on_world(i: usize) -> c_int {
    fail_code(NAMES[i], crate::comm::WORLD, code(i), &message(NAMES[i]))
}

/// The stub of an I/O call `NAMES[i]`: the code is returned (files' default error handler is
/// MPI_ERRORS_RETURN). Every I/O call is implemented now; the generator still emits this for
/// one that would lose its implementation.
#[allow(dead_code)]
#[cold]
pub(super) fn returned(i: usize) -> c_int {
    code(i)
}
