//! MPI_T performance variables and events: rmpi exposes none of either (`*_get_num` answers 0
//! in `tool`), so every index and name is invalid and no variable or event handle can exist.
//! Sessions are real, so a tool's usual sequence (create a session, look variables up by
//! name, find none, free the session) runs to its end with the standard's error codes, as
//! MPICH's `mpi_t/getindex` checks.

use std::collections::BTreeSet;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use super::tool::{
    t_initialized, T_ERR_INVALID, T_ERR_INVALID_HANDLE, T_ERR_INVALID_INDEX, T_ERR_INVALID_NAME,
    T_ERR_INVALID_SESSION, T_ERR_NOT_INITIALIZED,
};
use super::*;

/// MPI_T_PVAR_ALL_HANDLES: start, stop and reset accept it for "every handle of the session".
const ALL_HANDLES: usize = 1;

/// The live sessions' handles (1, 2, ...; 0 is MPI_T_PVAR_SESSION_NULL) and the next one.
static SESSIONS: Mutex<(BTreeSet<usize>, usize)> = Mutex::new((BTreeSet::new(), 0));

fn live(session: Handle) -> bool {
    let s = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
    s.0.contains(&(session as usize))
}

/// The checks every call makes first: MPI_T initialised, and the session (where there is one)
/// live.
fn check(session: Option<Handle>) -> std::result::Result<(), c_int> {
    if !t_initialized() {
        return Err(T_ERR_NOT_INITIALIZED);
    }
    match session {
        Some(s) if !live(s) => Err(T_ERR_INVALID_SESSION),
        _ => Ok(()),
    }
}

/// What a call on a variable or event handle answers: no handle exists.
fn no_handle(session: Option<Handle>) -> c_int {
    check(session).err().unwrap_or(T_ERR_INVALID_HANDLE)
}

/// What a call naming a variable, event or source by index answers: none exists.
fn no_index() -> c_int {
    check(None).err().unwrap_or(T_ERR_INVALID_INDEX)
}

/// A lookup by name: INVALID for NULL arguments, else no such name.
fn no_name(name: *const c_void, index: *mut c_void) -> c_int {
    match check(None) {
        Err(e) => e,
        Ok(()) if name.is_null() || index.is_null() => T_ERR_INVALID,
        Ok(()) => T_ERR_INVALID_NAME,
    }
}

mpi_fn! {
    fn MPI_T_pvar_session_create / PMPI_T_pvar_session_create(session: *mut c_void) -> c_int {
        if let Err(e) = check(None) {
            return e;
        }
        if session.is_null() {
            return T_ERR_INVALID;
        }
        let mut s = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
        s.1 += 1;
        let id = s.1;
        s.0.insert(id);
        // SAFETY: checked non-NULL; the caller passes a writable MPI_T_pvar_session.
        unsafe { *session.cast::<usize>() = id };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_T_pvar_session_free / PMPI_T_pvar_session_free(session: *mut c_void) -> c_int {
        if let Err(e) = check(None) {
            return e;
        }
        if session.is_null() {
            return T_ERR_INVALID;
        }
        let at = session.cast::<usize>();
        // SAFETY: checked non-NULL; the caller passes the MPI_T_pvar_session it created.
        let id = unsafe { *at };
        if !SESSIONS.lock().unwrap_or_else(|e| e.into_inner()).0.remove(&id) {
            return T_ERR_INVALID_SESSION;
        }
        // SAFETY: as above; MPI_T_PVAR_SESSION_NULL is 0.
        unsafe { *at = 0 };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_T_pvar_get_index / PMPI_T_pvar_get_index(name: *const c_void, _var_class: c_int, pvar_index: *mut c_void) -> c_int {
        no_name(name, pvar_index)
    }
}

mpi_fn! {
    fn MPI_T_pvar_get_info / PMPI_T_pvar_get_info(_pvar_index: c_int, _name: *mut c_void, _name_len: *mut c_void, _verbosity: *mut c_void, _var_class: *mut c_void, _datatype: *mut c_void, _enumtype: *mut c_void, _desc: *mut c_void, _desc_len: *mut c_void, _bind: *mut c_void, _readonly: *mut c_void, _continuous: *mut c_void, _atomic: *mut c_void) -> c_int {
        no_index()
    }
}

mpi_fn! {
    fn MPI_T_pvar_handle_alloc / PMPI_T_pvar_handle_alloc(session: Handle, _pvar_index: c_int, _obj_handle: *mut c_void, _handle: *mut c_void, _count: *mut c_void) -> c_int {
        check(Some(session)).err().unwrap_or(T_ERR_INVALID_INDEX)
    }
}

mpi_fn! {
    fn MPI_T_pvar_handle_free / PMPI_T_pvar_handle_free(session: Handle, _handle: *mut c_void) -> c_int {
        no_handle(Some(session))
    }
}

/// Start, stop and reset: MPI_T_PVAR_ALL_HANDLES of a live session is every one of its
/// handles, of which there are none.
fn all_or_none(session: Handle, handle: Handle) -> c_int {
    match check(Some(session)) {
        Err(e) => e,
        Ok(()) if handle as usize == ALL_HANDLES => MPI_SUCCESS,
        Ok(()) => T_ERR_INVALID_HANDLE,
    }
}

mpi_fn! {
    fn MPI_T_pvar_start / PMPI_T_pvar_start(session: Handle, handle: Handle) -> c_int {
        all_or_none(session, handle)
    }
}

mpi_fn! {
    fn MPI_T_pvar_stop / PMPI_T_pvar_stop(session: Handle, handle: Handle) -> c_int {
        all_or_none(session, handle)
    }
}

mpi_fn! {
    fn MPI_T_pvar_reset / PMPI_T_pvar_reset(session: Handle, handle: Handle) -> c_int {
        all_or_none(session, handle)
    }
}

mpi_fn! {
    fn MPI_T_pvar_read / PMPI_T_pvar_read(session: Handle, _handle: Handle, _buf: *mut c_void) -> c_int {
        no_handle(Some(session))
    }
}

mpi_fn! {
    fn MPI_T_pvar_readreset / PMPI_T_pvar_readreset(session: Handle, _handle: Handle, _buf: *mut c_void) -> c_int {
        no_handle(Some(session))
    }
}

mpi_fn! {
    fn MPI_T_pvar_write / PMPI_T_pvar_write(session: Handle, _handle: Handle, _buf: *const c_void) -> c_int {
        no_handle(Some(session))
    }
}

mpi_fn! {
    fn MPI_T_event_get_index / PMPI_T_event_get_index(name: *const c_void, event_index: *mut c_void) -> c_int {
        no_name(name, event_index)
    }
}

mpi_fn! {
    fn MPI_T_event_get_info / PMPI_T_event_get_info(_event_index: c_int, _name: *mut c_void, _name_len: *mut c_void, _verbosity: *mut c_void, _array_of_datatypes: *mut c_void, _array_of_displacements: *mut c_void, _num_elements: *mut c_void, _enumtype: *mut c_void, _info: *mut c_void, _desc: *mut c_void, _desc_len: *mut c_void, _bind: *mut c_void) -> c_int {
        no_index()
    }
}

mpi_fn! {
    fn MPI_T_event_handle_alloc / PMPI_T_event_handle_alloc(_event_index: c_int, _obj_handle: *mut c_void, _info: Handle, _event_registration: *mut c_void) -> c_int {
        no_index()
    }
}

mpi_fn! {
    fn MPI_T_event_handle_free / PMPI_T_event_handle_free(_event_registration: Handle, _user_data: *mut c_void, _free_cb_function: *mut c_void) -> c_int {
        no_handle(None)
    }
}

mpi_fn! {
    fn MPI_T_event_handle_get_info / PMPI_T_event_handle_get_info(_event_registration: Handle, _info_used: *mut c_void) -> c_int {
        no_handle(None)
    }
}

mpi_fn! {
    fn MPI_T_event_handle_set_info / PMPI_T_event_handle_set_info(_event_registration: Handle, _info: Handle) -> c_int {
        no_handle(None)
    }
}

mpi_fn! {
    fn MPI_T_event_register_callback / PMPI_T_event_register_callback(_event_registration: Handle, _cb_safety: c_int, _info: Handle, _user_data: *mut c_void, _event_cb_function: *mut c_void) -> c_int {
        no_handle(None)
    }
}

mpi_fn! {
    fn MPI_T_event_callback_get_info / PMPI_T_event_callback_get_info(_event_registration: Handle, _cb_safety: c_int, _info_used: *mut c_void) -> c_int {
        no_handle(None)
    }
}

mpi_fn! {
    fn MPI_T_event_callback_set_info / PMPI_T_event_callback_set_info(_event_registration: Handle, _cb_safety: c_int, _info: Handle) -> c_int {
        no_handle(None)
    }
}

mpi_fn! {
    fn MPI_T_event_set_dropped_handler / PMPI_T_event_set_dropped_handler(_event_registration: Handle, _dropped_cb_function: *mut c_void) -> c_int {
        no_handle(None)
    }
}

// An event instance exists only inside a callback, which never runs.
mpi_fn! {
    fn MPI_T_event_read / PMPI_T_event_read(_event_instance: Handle, _element_index: c_int, _buffer: *mut c_void) -> c_int {
        no_handle(None)
    }
}

mpi_fn! {
    fn MPI_T_event_copy / PMPI_T_event_copy(_event_instance: Handle, _buffer: *mut c_void) -> c_int {
        no_handle(None)
    }
}

mpi_fn! {
    fn MPI_T_event_get_timestamp / PMPI_T_event_get_timestamp(_event_instance: Handle, _event_timestamp: *mut c_void) -> c_int {
        no_handle(None)
    }
}

mpi_fn! {
    fn MPI_T_event_get_source / PMPI_T_event_get_source(_event_instance: Handle, _source_index: *mut c_void) -> c_int {
        no_handle(None)
    }
}

mpi_fn! {
    fn MPI_T_source_get_info / PMPI_T_source_get_info(_source_index: c_int, _name: *mut c_void, _name_len: *mut c_void, _desc: *mut c_void, _desc_len: *mut c_void, _ordering: *mut c_void, _ticks_per_second: *mut c_void, _max_ticks: *mut c_void, _info: *mut c_void) -> c_int {
        no_index()
    }
}

mpi_fn! {
    fn MPI_T_source_get_timestamp / PMPI_T_source_get_timestamp(_source_index: c_int, _timestamp: *mut c_void) -> c_int {
        no_index()
    }
}
