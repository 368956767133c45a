//! Environment calls of the C ABI: start-up, shut-down, ranks, time, errors, versions.

use std::ffi::{c_char, c_int};
use std::sync::OnceLock;
use std::time::Instant;

use super::*;

pub(super) const THREAD_FUNNELED: c_int = 1024;
pub(super) const THREAD_SERIALIZED: c_int = 2048;
pub(super) const THREAD_MULTIPLE: c_int = 4096;
const MAX_PROCESSOR_NAME: usize = 256;
const MAX_ERROR_STRING: usize = 512;
const MAX_LIBRARY_VERSION_STRING: usize = 8192;
/// The thread level MPI_Init_thread provided (MPI_Init: FUNNELED; MPI_Init_thread: what was
/// asked for, SINGLE to MULTIPLE, see runtime.rs).
static PROVIDED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(THREAD_FUNNELED);

/// Copy `s` into a C buffer of `cap` bytes, NUL-terminated and cut to fit; returns its length.
///
/// # Safety
/// `out` points to at least `cap` writable bytes.
unsafe fn copy_cstr(s: &str, out: *mut c_char, cap: usize) -> c_int {
    let n = s.len().min(cap - 1);
    // SAFETY: the caller guarantees `cap` writable bytes; n + 1 <= cap.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), out.cast(), n);
        *out.add(n) = 0;
    }
    n as c_int
}

fn init_or_fail(call: &str, level: c_int) -> c_int {
    match super::session::world_init(level) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => {
            if runtime::is_initialized() {
                // Initialised already: the runtime's own error handler applies.
                return fail(call, crate::comm::WORLD, e);
            }
            runtime::fail_init(e.code(), &format!("{call}: {e}"))
        }
    }
}

/// The level MPI_Init asks for: `mpi_thread_level`, FUNNELED when unset.
fn init_level() -> Result<c_int> {
    let Ok(v) = std::env::var("RMPI_MCA_mpi_thread_level") else {
        return Ok(THREAD_FUNNELED);
    };
    match v
        .trim()
        .to_ascii_lowercase()
        .trim_start_matches("mpi_thread_")
    {
        "single" | "0" => Ok(0),
        "funneled" | "1" => Ok(THREAD_FUNNELED),
        "serialized" | "2" => Ok(THREAD_SERIALIZED),
        "multiple" | "3" => Ok(THREAD_MULTIPLE),
        _ => Err(Error::new(
            ErrorClass::Arg,
            format!(
                "invalid value {v:?} for MCA parameter mpi_thread_level: expected single, \
                 funneled, serialized or multiple (or 0-3)"
            ),
        )),
    }
}

mpi_fn! {
    fn MPI_Init / PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
        let level = match init_level() {
            Ok(l) => l,
            Err(e) => runtime::fail_init(e.code(), &format!("MPI_Init: {e}")),
        };
        let rc = init_or_fail("MPI_Init", level);
        if rc == MPI_SUCCESS {
            // MPI_Query_thread reports what the asked-for level gave.
            PROVIDED.store(super::session::provided_level(level), std::sync::atomic::Ordering::Relaxed);
        }
        rc
    }
}

mpi_fn! {
    fn MPI_Init_thread / PMPI_Init_thread(_argc: *mut c_int, _argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) -> c_int {
        let rc = init_or_fail("MPI_Init_thread", required);
        let level = super::session::provided_level(required);
        if rc == MPI_SUCCESS && !provided.is_null() {
            // SAFETY: checked non-NULL; the caller passes a writable int.
            unsafe { *provided = level };
        }
        if rc == MPI_SUCCESS {
            PROVIDED.store(level, std::sync::atomic::Ordering::Relaxed);
        }
        rc
    }
}

mpi_fn! {
    fn MPI_Query_thread / PMPI_Query_thread(provided: *mut c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Query_thread", crate::comm::WORLD, e);
        }
        if provided.is_null() {
            return fail("MPI_Query_thread", crate::comm::WORLD,
                        Error::new(ErrorClass::Arg, "provided is NULL"));
        }
        // SAFETY: checked non-NULL.
        unsafe { *provided = PROVIDED.load(std::sync::atomic::Ordering::Relaxed) };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Finalize / PMPI_Finalize() -> c_int {
        match super::session::world_finalize() {
            Ok(()) => MPI_SUCCESS,
            Err(e) => {
                eprintln!("rmpi: MPI_Finalize: {e}");
                e.code()
            }
        }
    }
}

mpi_fn! {
    fn MPI_Initialized / PMPI_Initialized(flag: *mut c_int) -> c_int {
        if flag.is_null() {
            return ErrorClass::Arg as c_int;
        }
        // SAFETY: checked non-NULL.
        unsafe { *flag = super::session::world_initialized() as c_int };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Finalized / PMPI_Finalized(flag: *mut c_int) -> c_int {
        if flag.is_null() {
            return ErrorClass::Arg as c_int;
        }
        // SAFETY: checked non-NULL.
        unsafe { *flag = super::session::world_finalized() as c_int };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Comm_rank / PMPI_Comm_rank(comm: Handle, rank: *mut c_int) -> c_int {
        call("MPI_Comm_rank", crate::comm::WORLD, |rt| {
            let r = rt.comm(comm_index(comm)?)?.rank;
            if rank.is_null() {
                return Err(Error::new(ErrorClass::Arg, "rank pointer is NULL"));
            }
            // SAFETY: checked non-NULL.
            unsafe { *rank = r };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_size / PMPI_Comm_size(comm: Handle, size: *mut c_int) -> c_int {
        call("MPI_Comm_size", crate::comm::WORLD, |rt| {
            let s = rt.comm(comm_index(comm)?)?.size();
            if size.is_null() {
                return Err(Error::new(ErrorClass::Arg, "size pointer is NULL"));
            }
            // SAFETY: checked non-NULL.
            unsafe { *size = s };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Abort / PMPI_Abort(comm: Handle, errorcode: c_int) -> c_int {
        let _ = comm;
        let msg = format!("MPI_Abort called with error code {errorcode}");
        let _ = runtime::with(|rt| -> Result<()> { rt.abort(errorcode, &msg) });
        runtime::abort_without_runtime(errorcode, &msg)
    }
}

mpi_fn! {
    // C declares `int MPI_Pcontrol(const int level, ...)`; stable Rust cannot define a variadic
    // function, and on the LP64 Linux ABIs we target a variadic call passes `level` exactly as
    // a call to this one-argument function would, ignoring the rest.
    fn MPI_Pcontrol / PMPI_Pcontrol(_level: c_int) -> c_int {
        // No profiling levels: the standard lets an implementation ignore the call.
        MPI_SUCCESS
    }
}

fn clock_start() -> &'static Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now)
}

/// MPI_Wtime: seconds on a monotonic clock.
#[no_mangle]
pub extern "C" fn PMPI_Wtime() -> f64 {
    clock_start().elapsed().as_secs_f64()
}

/// MPI_Wtime: seconds on a monotonic clock.
#[no_mangle]
pub extern "C" fn MPI_Wtime() -> f64 {
    PMPI_Wtime()
}

/// MPI_Wtick: the clock's resolution (nanoseconds).
#[no_mangle]
pub extern "C" fn PMPI_Wtick() -> f64 {
    1e-9
}

/// MPI_Wtick: the clock's resolution (nanoseconds).
#[no_mangle]
pub extern "C" fn MPI_Wtick() -> f64 {
    PMPI_Wtick()
}

mpi_fn! {
    fn MPI_Get_processor_name / PMPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
        call("MPI_Get_processor_name", crate::comm::WORLD, |rt| {
            if name.is_null() || resultlen.is_null() {
                return Err(Error::new(ErrorClass::Arg, "name or resultlen pointer is NULL"));
            }
            // SAFETY: the standard requires MPI_MAX_PROCESSOR_NAME bytes at `name`; resultlen checked.
            unsafe { *resultlen = copy_cstr(&rt.processor_name, name, MAX_PROCESSOR_NAME) };
            Ok(())
        })
    }
}

pub(super) fn errhandler_of(h: Handle) -> Result<ErrHandler> {
    match h as usize {
        ERRORS_ARE_FATAL => Ok(ErrHandler::Fatal),
        ERRORS_RETURN => Ok(ErrHandler::Return),
        ERRORS_ABORT => Ok(ErrHandler::Abort),
        v => match super::errh::user_errhandler(v) {
            Some(i) if crate::errhandler::by_handle(i).is_ok() => Ok(ErrHandler::User(i)),
            _ => Err(Error::new(
                ErrorClass::Errhandler,
                format!("{v:#x} is not an error handler"),
            )),
        },
    }
}

mpi_fn! {
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(comm: Handle, errhandler: Handle) -> c_int {
        call("MPI_Comm_set_errhandler", crate::comm::WORLD, |rt| {
            let h = errhandler_of(errhandler)?;
            rt.comm_mut(comm_index(comm)?)?.errhandler = h;
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(comm: Handle, errhandler: *mut Handle) -> c_int {
        call("MPI_Comm_get_errhandler", crate::comm::WORLD, |rt| {
            let h = match rt.comm(comm_index(comm)?)?.errhandler {
                ErrHandler::Fatal => ERRORS_ARE_FATAL,
                ErrHandler::Return => ERRORS_RETURN,
                ErrHandler::Abort => ERRORS_ABORT,
                ErrHandler::User(i) => super::errh::ERRH_BASE + i,
            };
            if errhandler.is_null() {
                return Err(Error::new(ErrorClass::Arg, "errhandler pointer is NULL"));
            }
            if let Some(i) = super::errh::user_errhandler(h) {
                crate::errhandler::retain(i);
            }
            // SAFETY: checked non-NULL.
            unsafe { *errhandler = h as Handle };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int {
        if errorclass.is_null() {
            return ErrorClass::Arg as c_int;
        }
        // A negative value is no error code: a bad argument. Other unknown codes keep the
        // lenient answer MPI_ERR_UNKNOWN (bindings probe whole ranges of codes).
        let class = match super::errh::class_of(errorcode) {
            Some(c) => c,
            None if errorcode < 0 => return ErrorClass::Arg as c_int,
            None => ErrorClass::Unknown as c_int,
        };
        // SAFETY: checked non-NULL.
        unsafe { *errorclass = class };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Error_string / PMPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int {
        if string.is_null() || resultlen.is_null() {
            return ErrorClass::Arg as c_int;
        }
        let text = if errorcode == MPI_SUCCESS {
            "MPI_SUCCESS: no errors".to_string()
        } else if let Some(c) = ErrorClass::from_code(errorcode) {
            format!("{}: {}", c.name(), c.description())
        } else if let Some(t) = super::errh::user_string(errorcode) {
            t
        } else if let Some(f) = super::unsupported::function_of(errorcode) {
            super::unsupported::message(f)
        } else if super::errh::class_of(errorcode).is_some() {
            format!("MPI error class {errorcode}")
        } else if errorcode < 0 {
            // SAFETY: as below.
            unsafe { *resultlen = copy_cstr(&format!("invalid error code {errorcode}"), string, MAX_ERROR_STRING) };
            return ErrorClass::Arg as c_int;
        } else {
            format!("unknown error code {errorcode}")
        };
        // SAFETY: the standard requires MPI_MAX_ERROR_STRING bytes at `string`; resultlen checked.
        unsafe { *resultlen = copy_cstr(&text, string, MAX_ERROR_STRING) };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Get_version / PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
        if version.is_null() || subversion.is_null() {
            return ErrorClass::Arg as c_int;
        }
        // SAFETY: both checked non-NULL.
        unsafe {
            *version = 5;
            *subversion = 0;
        }
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Get_library_version / PMPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int {
        if version.is_null() || resultlen.is_null() {
            return ErrorClass::Arg as c_int;
        }
        // SAFETY: the standard requires MPI_MAX_LIBRARY_VERSION_STRING bytes; resultlen checked.
        unsafe { *resultlen = copy_cstr(&crate::library_version(), version, MAX_LIBRARY_VERSION_STRING) };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Abi_get_version / PMPI_Abi_get_version(abi_major: *mut c_int, abi_minor: *mut c_int) -> c_int {
        if abi_major.is_null() || abi_minor.is_null() {
            return ErrorClass::Arg as c_int;
        }
        // SAFETY: both checked non-NULL.
        unsafe {
            *abi_major = 1;
            *abi_minor = 0;
        }
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Is_thread_main / PMPI_Is_thread_main(flag: *mut c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Is_thread_main", crate::comm::WORLD, e);
        }
        if flag.is_null() {
            return fail("MPI_Is_thread_main", crate::comm::WORLD, Error::new(ErrorClass::Arg, "flag pointer is NULL"));
        }
        let main = runtime::is_main_thread();
        // SAFETY: checked non-NULL.
        unsafe { *flag = main as c_int };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Alloc_mem / PMPI_Alloc_mem(size: isize, info: Handle, baseptr: *mut std::ffi::c_void) -> c_int {
        call("MPI_Alloc_mem", crate::comm::WORLD, |_| {
            // No hint changes the allocation; an invalid info is still an error.
            super::info::hints(info)?;
            if size < 0 {
                return Err(Error::new(ErrorClass::Arg, format!("size {size} is negative")));
            }
            if baseptr.is_null() {
                return Err(Error::new(ErrorClass::Arg, "baseptr is NULL"));
            }
            let p = crate::xmem::alloc(size as usize)?;
            // SAFETY: baseptr is really a void ** (the standard's C binding), checked non-NULL.
            unsafe { *baseptr.cast::<*mut std::ffi::c_void>() = p.cast() };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Free_mem / PMPI_Free_mem(base: *mut std::ffi::c_void) -> c_int {
        call("MPI_Free_mem", crate::comm::WORLD, |_| {
            // SAFETY: the standard requires a pointer from MPI_Alloc_mem or NULL.
            unsafe { crate::xmem::free(base.cast()) }
        })
    }
}
