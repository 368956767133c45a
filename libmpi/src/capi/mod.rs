//! The MPI 5.0 standard-ABI C interface exported from libmpi_abi.so.1 (linked by libmpi/abi). Handles are the ABI's integer
//! values cast to pointers: predefined ones as the ABI fixes them, ours above `DYNAMIC_BASE`.
//! Every function exists twice, `PMPI_x` (the implementation) and `MPI_x` (calling it), so
//! profiling tools can interpose on `MPI_x`.

mod abi;
mod attr;
mod bsend_comm;
mod coll;
mod coll_init;
mod coll_inter;
mod coll_v;
mod comm;
mod comm_inter;
mod datatype;
mod dpm;
mod dtype_attr;
mod dtype_intro;
pub(crate) mod env;
mod errh;
mod external32;
mod file;
mod file_data;
mod grequest;
mod group;
mod handle_int;
mod info;
mod neighbor;
mod ops;
mod p2p;
mod p2p_completion;
mod p2p_modes;
mod p2p_probe;
mod partitioned;
mod rma;
mod session;
mod status;
mod tool;
mod tool_cvar;
mod tool_pvar;
mod topo;
mod unimplemented;
mod unsupported;
mod win;

use datatype::{message_c, plain_bytes, type_size};

use std::ffi::c_int;

use crate::comm::ErrHandler;
use crate::error::{Error, ErrorClass, Result};
use crate::pml;
use crate::runtime::{self, Runtime};

pub const MPI_SUCCESS: c_int = 0;
pub const MPI_UNDEFINED: c_int = -32766;
pub const MPI_ANY_SOURCE: c_int = -1;
pub const MPI_ANY_TAG: c_int = -2;

const COMM_NULL: usize = 0x100;
const COMM_WORLD: usize = 0x101;
const COMM_SELF: usize = 0x102;
const REQUEST_NULL: usize = 0x180;
const GROUP_NULL: usize = 0x108;
const GROUP_EMPTY: usize = 0x109;
const ERRHANDLER_NULL: usize = 0x140;
const ERRORS_ARE_FATAL: usize = 0x141;
const ERRORS_ABORT: usize = 0x142;
const ERRORS_RETURN: usize = 0x143;
/// Handles we create (requests, later communicators) start here, clear of the ABI's constants.
const DYNAMIC_BASE: usize = 0x10000;

pub type Handle = *mut std::ffi::c_void;
/// MPI_Count and MPI_Aint as the ABI defines them (LP64).
type Count = i64;
type Aint = isize;

/// MPI_Status as the ABI lays it out; `internal` holds the byte count and the cancelled flag.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MpiStatus {
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
    pub internal: [c_int; 5],
}

impl MpiStatus {
    fn count(&self) -> usize {
        (self.internal[0] as u32 as usize) | ((self.internal[1] as u32 as usize) << 32)
    }
}

/// Write `st` through `out` unless it is MPI_STATUS_IGNORE (NULL), for a call that returns
/// one status: its MPI_ERROR field is left as it was (MPI 4.1 §3.2.5: only the calls returning
/// several statuses update it; see `store_status_all`).
///
/// # Safety
/// `out` is NULL or points to a writable MPI_Status.
unsafe fn store_status(out: *mut MpiStatus, st: &pml::Status) {
    if out.is_null() {
        return;
    }
    // An empty status (MPI_REQUEST_NULL, MPI_PROC_NULL: no message has source MPI_ANY_SOURCE)
    // is set whole, MPI_ERROR = MPI_SUCCESS included, as MPICH and Open MPI do (mpi4py checks).
    if st.source == MPI_ANY_SOURCE && st.tag == MPI_ANY_TAG {
        // SAFETY: forwarded contract.
        unsafe { store_status_all(out, st) };
        return;
    }
    // SAFETY: the caller's contract: a writable (hence readable) MPI_Status.
    let error = unsafe { (*out).error };
    // SAFETY: forwarded contract.
    unsafe { store_status_all(out, &pml::Status { error, ..*st }) };
}

/// `store_status` for the calls returning an array of statuses, which set MPI_ERROR too.
///
/// # Safety
/// `out` is NULL or points to a writable MPI_Status.
unsafe fn store_status_all(out: *mut MpiStatus, st: &pml::Status) {
    if out.is_null() {
        return;
    }
    let s = MpiStatus {
        source: st.source,
        tag: st.tag,
        error: st.error,
        internal: [
            st.count as u32 as c_int,
            (st.count >> 32) as u32 as c_int,
            st.cancelled as c_int,
            0,
            0,
        ],
    };
    // SAFETY: the caller guarantees `out` points to a writable MPI_Status.
    unsafe { out.write(s) };
}

/// The status of a request that was MPI_REQUEST_NULL or a PROC_NULL operation.
fn empty_status() -> pml::Status {
    pml::Status {
        source: MPI_ANY_SOURCE,
        tag: MPI_ANY_TAG,
        ..Default::default()
    }
}

#[inline]
fn comm_index(h: Handle) -> Result<usize> {
    match h as usize {
        COMM_WORLD => Ok(crate::comm::WORLD),
        COMM_SELF => Ok(crate::comm::SELF),
        v if v >= DYNAMIC_BASE => Ok(v - DYNAMIC_BASE),
        v => Err(bad_comm(v)),
    }
}

/// Out of line: the error of `comm_index`, kept off every call's path.
#[cold]
fn bad_comm(v: usize) -> Error {
    if v == COMM_NULL {
        Error::new(
            ErrorClass::Comm,
            "MPI_COMM_NULL is not a valid communicator here",
        )
    } else {
        Error::new(
            ErrorClass::Comm,
            format!("{v:#x} is not a communicator handle"),
        )
    }
}

/// `comm_index` for a call that does not otherwise touch the communicator (MPI_Pack, ...):
/// the handle must also name a live communicator, not a freed one. Outside `runtime::with`.
fn live_comm(h: Handle) -> Result<usize> {
    let i = comm_index(h)?;
    runtime::with(|rt| rt.comm(i).map(|_| ()))?;
    Ok(i)
}

/// The C handle of communicator table slot `id`.
pub(crate) fn comm_handle(id: usize) -> Handle {
    match id {
        crate::comm::WORLD => COMM_WORLD as Handle,
        crate::comm::SELF => COMM_SELF as Handle,
        v => (DYNAMIC_BASE + v) as Handle,
    }
}

fn request_handle(id: pml::ReqId) -> Handle {
    (DYNAMIC_BASE + id as usize) as Handle
}

/// The request id behind a handle; None for MPI_REQUEST_NULL.
fn request_id(h: Handle) -> Result<Option<pml::ReqId>> {
    match h as usize {
        REQUEST_NULL => Ok(None),
        v if v >= DYNAMIC_BASE && v - DYNAMIC_BASE <= u32::MAX as usize => {
            Ok(Some((v - DYNAMIC_BASE) as pml::ReqId))
        }
        v => Err(Error::new(
            ErrorClass::Request,
            format!("{v:#x} is not a request handle"),
        )),
    }
}

/// Packed bytes of `count` elements of `datatype`, any layout (a size, not a buffer extent).
fn packed_bytes(count: c_int, datatype: Handle) -> Result<usize> {
    if count < 0 {
        return Err(Error::new(
            ErrorClass::Count,
            format!("count {count} is negative"),
        ));
    }
    (count as usize)
        .checked_mul(type_size(datatype)?)
        .ok_or_else(|| Error::new(ErrorClass::Count, "message size overflows"))
}

/// Apply the communicator's error handler to a failed call: return the code (MPI_ERRORS_RETURN)
/// or report and abort the job (MPI_ERRORS_ARE_FATAL, the default).
#[cold]
fn fail(call: &str, comm: usize, e: Error) -> c_int {
    fail_code(call, comm, e.code(), &e)
}

/// `fail` for an error code that is not a class of its own (e.g. an unimplemented function's
/// code, see `unsupported`); `msg` says what went wrong, naming the class.
#[cold]
fn fail_code(call: &str, comm: usize, code: c_int, msg: &dyn std::fmt::Display) -> c_int {
    // Before MPI_Init and after MPI_Finalize no communicator holds a handler: the call returns
    // its error, never aborts a process that is not (or no longer) part of the job.
    if !runtime::is_initialized() || runtime::is_finalized() {
        return code;
    }
    // An invalid (e.g. freed) communicator's errors go to MPI_COMM_WORLD's handler.
    let (comm, handler) = runtime::with(|rt| match rt.comm(comm) {
        Ok(c) => Ok((comm, c.errhandler)),
        Err(_) => Ok((crate::comm::WORLD, rt.comm(crate::comm::WORLD)?.errhandler)),
    })
    .unwrap_or((comm, ErrHandler::Fatal));
    raise(call, handler, comm_handle(comm), code, msg)
}

/// `fail` through the errhandler argument of MPI_Comm_create_from_group and
/// MPI_Intercomm_create_from_groups, which the standard invokes on their own errors (no
/// communicator exists yet: a user function sees MPI_COMM_NULL). An invalid handler argument
/// leaves it to MPI_COMM_WORLD's.
#[cold]
fn fail_through(call: &str, errhandler: Handle, e: Error) -> c_int {
    if !runtime::is_initialized() || runtime::is_finalized() {
        return e.code();
    }
    match env::errhandler_of(errhandler) {
        Ok(h) => raise(call, h, COMM_NULL as Handle, e.code(), &e),
        Err(_) => fail(call, crate::comm::WORLD, e),
    }
}

/// Invoke `handler` for error `code` of `call` (`comm`: the handle a user function gets).
fn raise(
    call: &str,
    handler: ErrHandler,
    comm: Handle,
    code: c_int,
    msg: &dyn std::fmt::Display,
) -> c_int {
    if handler == ErrHandler::Return {
        return code;
    }
    if let ErrHandler::User(h) = handler {
        if errh::call_user_handle(h, comm, code).is_ok() {
            return code;
        }
    }
    let name = if handler == ErrHandler::Abort {
        "MPI_ERRORS_ABORT"
    } else {
        "MPI_ERRORS_ARE_FATAL"
    };
    let msg = format!("{call}: {msg}");
    eprintln!("rmpi: {msg} (error handler {name}: aborting the job)");
    let _ = runtime::with(|rt| -> Result<()> { rt.abort(code, &msg) });
    runtime::abort_without_runtime(code, &msg)
}

/// Ok between MPI_Init and MPI_Finalize; for the calls that do not otherwise need the runtime
/// (datatypes, statuses, ops), which MPI allows only then.
#[inline]
fn running() -> Result<()> {
    if runtime::is_initialized() && !runtime::is_finalized() {
        return Ok(());
    }
    Err(Error::new(
        ErrorClass::Other,
        if runtime::is_finalized() {
            "called after MPI_Finalize"
        } else {
            "called before MPI_Init"
        },
    ))
}

/// Run `f` on the runtime; errors go through `comm`'s error handler.
#[inline]
fn call(name: &str, comm: usize, f: impl FnOnce(&mut Runtime) -> Result<()>) -> c_int {
    match runtime::with(f) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => fail(name, comm, e),
    }
}

/// A blocking call (`runtime::blocking`): `start` it, then `finish` it; under MULTIPLE the
/// wait between them happens outside the runtime.
fn call_blocking<T>(
    name: &str,
    comm: usize,
    start: impl FnOnce(&mut Runtime) -> Result<T>,
    ready: impl FnMut(&mut Runtime, &T) -> bool,
    finish: impl FnOnce(&mut Runtime, T) -> Result<()>,
) -> c_int {
    match runtime::blocking(start, ready, finish) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => fail(name, comm, e),
    }
}

/// `call` of a body that may wait: under MULTIPLE it runs once `ready` (`runtime::with_ready`).
fn call_ready(
    name: &str,
    comm: usize,
    ready: impl FnMut(&mut Runtime) -> bool,
    f: impl FnOnce(&mut Runtime) -> Result<()>,
) -> c_int {
    // A wait that finds its requests complete makes no progress turn: the sends a transport
    // holds back from a window of MPI_Isend go now, not after the caller's computation.
    match runtime::with_ready(ready, |rt| {
        rt.pml.end_bursts();
        f(rt)
    }) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => fail(name, comm, e),
    }
}

/// Whether a started operation is over, or cannot be waited for (`finish` then says why).
fn started_ready(rt: &mut Runtime, s: &pml::Started) -> bool {
    match s {
        pml::Started::Done(_) => true,
        pml::Started::Pending(r) => request_ready(rt, *r),
    }
}

/// Whether waiting for request `r` would return at once (complete, or not a live request).
fn request_ready(rt: &mut Runtime, r: pml::ReqId) -> bool {
    !rt.pml.is_valid(r) || rt.pml.is_complete(r)
}

/// Export `PMPI_name` with the body and `MPI_name` forwarding to it.
macro_rules! mpi_fn {
    ($(#[$doc:meta])* fn $name:ident / $pname:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty $body:block) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The caller passes arguments as the MPI standard requires for this function.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> $ret $body

        $(#[$doc])*
        ///
        /// # Safety
        /// As for the PMPI_ function.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: same contract, forwarded unchanged.
            unsafe { $pname($($arg),*) }
        }
    };
}
pub(crate) use mpi_fn;

/// A completed operation's status error as the call's result.
#[inline]
fn status_error(st: &pml::Status) -> Result<()> {
    if st.error == 0 {
        return Ok(());
    }
    match ErrorClass::from_code(st.error) {
        None => Ok(()),
        Some(ErrorClass::Truncate) => Err(Error::new(
            ErrorClass::Truncate,
            format!("message from rank {} with tag {} ({} bytes kept) is larger than the receive buffer", st.source, st.tag, st.count),
        )),
        Some(c) => Err(Error::new(c, c.description())),
    }
}
