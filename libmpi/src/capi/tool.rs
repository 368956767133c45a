//! The MPI tool information interface (MPI_T): initialisation counted per MPI_T_init_thread /
//! MPI_T_finalize pair; control variables and categories are in `tool_cvar`; no performance
//! variables, event sources or event types (`tool_pvar` answers for them). MPI_T calls return MPI_T error codes and do not
//! use error handlers (the standard); they work before MPI_Init and after MPI_Finalize.

use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

pub(super) const T_ERR_NOT_INITIALIZED: c_int = 1003;
/// What every MPI_T call rmpi does not implement returns (see `unimplemented`, which has none
/// today).
#[allow(dead_code)]
pub(super) const T_ERR_NOT_SUPPORTED: c_int = 1004;
pub(super) const T_ERR_INVALID: c_int = 1006;
pub(super) const T_ERR_INVALID_INDEX: c_int = 1007;
pub(super) const T_ERR_INVALID_SESSION: c_int = 1009;
pub(super) const T_ERR_INVALID_HANDLE: c_int = 1010;
pub(super) const T_ERR_INVALID_NAME: c_int = 1011;

/// MPI_T_init_thread calls not yet matched by an MPI_T_finalize.
static INITS: AtomicUsize = AtomicUsize::new(0);

/// Whether MPI_T is initialised (every MPI_T call but init checks).
pub(super) fn t_initialized() -> bool {
    INITS.load(Ordering::Acquire) > 0
}

/// A `*_get_num` call: there is nothing of any kind to count.
fn none(num: *mut c_int) -> c_int {
    if INITS.load(Ordering::Acquire) == 0 {
        return T_ERR_NOT_INITIALIZED;
    }
    if num.is_null() {
        return T_ERR_INVALID;
    }
    // SAFETY: checked non-NULL; the caller passes a writable int.
    unsafe { *num = 0 };
    MPI_SUCCESS
}

mpi_fn! {
    fn MPI_T_init_thread / PMPI_T_init_thread(required: c_int, provided: *mut c_int) -> c_int {
        if provided.is_null() {
            return T_ERR_INVALID;
        }
        // The tool calls keep no state but `INITS` (an atomic) and read only constants and the
        // environment, so threads may call them at once: any level asked for is provided.
        // SAFETY: checked non-NULL; the caller passes a writable int.
        unsafe { *provided = required.min(env::THREAD_MULTIPLE) };
        INITS.fetch_add(1, Ordering::AcqRel);
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_T_finalize / PMPI_T_finalize() -> c_int {
        match INITS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)) {
            Ok(_) => MPI_SUCCESS,
            Err(_) => T_ERR_NOT_INITIALIZED,
        }
    }
}

mpi_fn! {
    fn MPI_T_pvar_get_num / PMPI_T_pvar_get_num(num_pvar: *mut c_int) -> c_int {
        none(num_pvar)
    }
}

mpi_fn! {
    fn MPI_T_source_get_num / PMPI_T_source_get_num(num_sources: *mut c_int) -> c_int {
        none(num_sources)
    }
}

mpi_fn! {
    fn MPI_T_event_get_num / PMPI_T_event_get_num(num_events: *mut c_int) -> c_int {
        none(num_events)
    }
}
