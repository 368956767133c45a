//! Generalized requests (MPI_Grequest_start, MPI_Grequest_complete): a pml request that only
//! MPI_Grequest_complete completes, plus the user's callbacks, kept here by request id.
//! - query_fn fills the status when a completion call (Wait/Test and the array forms, through
//!   `finish`) retires the request, and for MPI_Request_get_status (`query`); its error
//!   becomes the status's error;
//! - free_fn runs after query_fn when the request is retired, or at MPI_Request_free (at once
//!   when complete, else when MPI_Grequest_complete comes);
//! - cancel_fn runs at MPI_Cancel with whether the request is complete.
//!
//! query_fn and free_fn run inside the completion call, so they may use the status calls
//! (MPI_Status_set_elements, _set_cancelled, ...) but no call that communicates; cancel_fn
//! runs outside, so it may call MPI_Grequest_complete.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::*;

type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MpiStatus) -> c_int;
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

struct Greq {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    extra: usize,
    completed: bool,
    /// MPI_Request_free came before MPI_Grequest_complete.
    user_freed: bool,
}

static GREQS: Mutex<Option<HashMap<pml::ReqId, Greq>>> = Mutex::new(None);
/// Entries in GREQS: the completion path of every other request checks only this.
static LIVE: AtomicUsize = AtomicUsize::new(0);

fn with_table<R>(f: impl FnOnce(&mut HashMap<pml::ReqId, Greq>) -> R) -> R {
    let mut g = GREQS.lock().unwrap_or_else(|e| e.into_inner());
    let t = g.get_or_insert_with(HashMap::new);
    let r = f(t);
    LIVE.store(t.len(), Ordering::Relaxed);
    r
}

/// Call query_fn for `g` into a status starting from `st`; its error goes into the status.
fn run_query(query: Option<QueryFn>, extra: usize, st: pml::Status) -> pml::Status {
    let Some(q) = query else { return st };
    let mut s = MpiStatus {
        source: st.source,
        tag: st.tag,
        error: st.error,
        internal: [0; 5],
    };
    // SAFETY: the user's callback with the extra state it registered and a valid status.
    let rc = unsafe { q(extra as *mut c_void, &mut s) };
    pml::Status {
        source: s.source,
        tag: s.tag,
        error: if rc != MPI_SUCCESS { rc } else { s.error },
        count: s.count(),
        cancelled: s.internal[2] != 0,
    }
}

fn run_free(free: Option<FreeFn>, extra: usize) -> c_int {
    // SAFETY: the user's callback with the extra state it registered.
    free.map_or(MPI_SUCCESS, |f| unsafe { f(extra as *mut c_void) })
}

/// No generalized request exists (`finish` and `query` then return the status as it is).
#[inline]
pub(super) fn none_live() -> bool {
    LIVE.load(Ordering::Relaxed) == 0
}

/// A completion call retired request `id` with status `st`: if it was a generalized request,
/// its query_fn gives the status and its free_fn runs.
#[inline]
pub(super) fn finish(id: pml::ReqId, st: pml::Status) -> pml::Status {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return st;
    }
    let Some(g) = with_table(|t| t.remove(&id)) else {
        return st;
    };
    let mut st = run_query(g.query, g.extra, st);
    let rc = run_free(g.free, g.extra);
    if st.error == 0 && rc != MPI_SUCCESS {
        st.error = rc;
    }
    st
}

/// MPI_Request_get_status of a completed request: query_fn's status for a generalized one.
pub(super) fn query(id: pml::ReqId, st: pml::Status) -> pml::Status {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return st;
    }
    match with_table(|t| t.get(&id).map(|g| (g.query, g.extra))) {
        Some((q, extra)) => run_query(q, extra, st),
        None => st,
    }
}

/// A callback's error code as an error (its class when it is one, else MPI_ERR_OTHER).
fn callback_error(rc: c_int, what: &str) -> Error {
    Error::new(
        crate::error::ErrorClass::from_code(rc).unwrap_or(ErrorClass::Other),
        format!("the generalized request's {what} returned {rc}"),
    )
}

/// MPI_Request_free of request `id`: true when it was a generalized request (handled here).
pub(super) fn free(rt: &mut Runtime, id: pml::ReqId) -> Result<bool> {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return Ok(false);
    }
    // None: not ours; Some(None): free_fn later; Some(Some(..)): free now.
    let action = with_table(|t| match t.get_mut(&id) {
        None => None,
        Some(g) if g.completed => t.remove(&id).map(|g| Some((g.free, g.extra))),
        Some(g) => {
            g.user_freed = true;
            Some(None)
        }
    });
    match action {
        None => Ok(false),
        Some(None) => Ok(true),
        Some(Some((f, extra))) => {
            rt.pml.free(id);
            match run_free(f, extra) {
                MPI_SUCCESS => Ok(true),
                rc => Err(callback_error(rc, "free_fn")),
            }
        }
    }
}

mpi_fn! {
    fn MPI_Grequest_start / PMPI_Grequest_start(query_fn: Option<QueryFn>, free_fn: Option<FreeFn>,
        cancel_fn: Option<CancelFn>, extra_state: *mut c_void, request: *mut Handle) -> c_int {
        call("MPI_Grequest_start", crate::comm::WORLD, |rt| {
            if request.is_null() {
                return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
            }
            let id = rt.pml.pending_request();
            with_table(|t| {
                t.insert(id, Greq {
                    query: query_fn,
                    free: free_fn,
                    cancel: cancel_fn,
                    extra: extra_state as usize,
                    completed: false,
                    user_freed: false,
                })
            });
            // SAFETY: checked non-NULL; the caller's MPI_Request.
            unsafe { request.write(request_handle(id)) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Grequest_complete / PMPI_Grequest_complete(request: Handle) -> c_int {
        call("MPI_Grequest_complete", crate::comm::WORLD, |rt| {
            let id = request_id(request)?
                .ok_or_else(|| Error::new(ErrorClass::Request, "MPI_Grequest_complete of MPI_REQUEST_NULL"))?;
            let freed = with_table(|t| match t.get_mut(&id) {
                Some(g) if !g.completed => {
                    g.completed = true;
                    Ok(g.user_freed.then_some((g.free, g.extra)))
                }
                _ => Err(Error::new(ErrorClass::Request, "not an incomplete generalized request")),
            })?;
            rt.pml.complete_request(id, empty_status());
            if let Some((f, extra)) = freed {
                // Freed by the user already: nobody will retire it; free_fn runs now.
                with_table(|t| t.remove(&id));
                rt.pml.take(id);
                let rc = run_free(f, extra);
                if rc != MPI_SUCCESS {
                    return Err(callback_error(rc, "free_fn"));
                }
            }
            Ok(())
        })
    }
}

/// MPI_Cancel of a generalized request: cancel_fn, outside the runtime (it may complete the
/// request). None when `request` is not one.
pub(super) fn cancel(request: *mut Handle) -> Option<c_int> {
    if request.is_null() || LIVE.load(Ordering::Relaxed) == 0 {
        return None;
    }
    // SAFETY: checked non-NULL; the caller's MPI_Request.
    let id = request_id(unsafe { *request }).ok()??;
    let (cancel, extra, completed) =
        with_table(|t| t.get(&id).map(|g| (g.cancel, g.extra, g.completed)))?;
    let Some(c) = cancel else {
        return Some(MPI_SUCCESS);
    };
    // SAFETY: the user's callback with the extra state it registered.
    Some(unsafe { c(extra as *mut c_void, completed as c_int) })
}
