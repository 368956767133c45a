//! User error handlers and user error classes/codes/strings.

use std::ffi::{c_char, c_int, CStr};
use std::sync::Mutex;

use super::*;
use crate::errhandler::ErrFn;

/// User error handler handles: `ERRH_BASE + index`, a range of their own.
pub(super) const ERRH_BASE: usize = 0x3000_0000;
const KIND_SPAN: usize = 0x1000_0000;

/// The user error handler index of a handle, if it is one.
pub(super) fn user_errhandler(h: usize) -> Option<usize> {
    (ERRH_BASE..ERRH_BASE + KIND_SPAN)
        .contains(&h)
        .then(|| h - ERRH_BASE)
}

/// MPI_ERR_LASTCODE: user classes and codes are numbered after it.
const ERR_LASTCODE: c_int = 16383;
/// Largest predefined error class (MPI_ERR_ABI).
const LAST_PREDEFINED_CLASS: c_int = 62;

/// A user-added error code (a class is its own code) and its description.
struct UserCode {
    code: c_int,
    class: c_int,
    text: String,
}

/// Process-wide, like the error classes themselves; MPI_Error_class works at any time.
static USER_CODES: Mutex<Vec<UserCode>> = Mutex::new(Vec::new());

fn user_codes() -> std::sync::MutexGuard<'static, Vec<UserCode>> {
    USER_CODES.lock().unwrap_or_else(|p| p.into_inner())
}

/// The class of any valid error code, or None.
pub(super) fn class_of(code: c_int) -> Option<c_int> {
    if (0..=LAST_PREDEFINED_CLASS).contains(&code) {
        return Some(code);
    }
    if super::unsupported::function_of(code).is_some() {
        return Some(ErrorClass::UnsupportedOperation as c_int);
    }
    user_codes()
        .iter()
        .find(|u| u.code == code)
        .map(|u| u.class)
}

/// The string set with MPI_Add_error_string for a user code.
pub(super) fn user_string(code: c_int) -> Option<String> {
    user_codes()
        .iter()
        .find(|u| u.code == code)
        .map(|u| u.text.clone())
}

/// The largest error code in use (MPI_LASTUSEDCODE).
pub(super) fn last_used_code() -> c_int {
    user_codes()
        .iter()
        .map(|u| u.code)
        .max()
        .unwrap_or(ERR_LASTCODE)
}

fn add_code(class: Option<c_int>) -> c_int {
    let mut v = user_codes();
    let code = v.iter().map(|u| u.code).max().unwrap_or(ERR_LASTCODE) + 1;
    v.push(UserCode {
        code,
        class: class.unwrap_or(code),
        text: String::new(),
    });
    code
}

/// Call user error handler `h` for a failure with `code` on communicator slot `comm`,
/// outside the runtime borrow (the handler may call MPI).
pub(super) fn call_user(h: usize, comm: usize, code: c_int) -> Result<()> {
    call_user_handle(h, comm_handle(comm), code)
}

/// `call_user` with the communicator handle the function gets.
pub(super) fn call_user_handle(h: usize, comm: Handle, code: c_int) -> Result<()> {
    let f: ErrFn = crate::errhandler::get(h)?;
    let (mut handle, mut code) = (comm, code);
    // SAFETY: a function registered with MPI_Comm_create_errhandler, called with a pointer to
    // the communicator handle and to the error code as MPI_Comm_errhandler_function prescribes
    // (its variadic tail is implementation-defined; we pass nothing).
    unsafe { f(&mut handle, &mut code) };
    Ok(())
}

/// A new user error handler's handle; needs no runtime (the table is process-wide).
pub(super) fn create(function: Option<ErrFn>, errhandler: *mut Handle) -> Result<()> {
    let Some(f) = function else {
        return Err(Error::new(
            ErrorClass::Arg,
            "the error handler function is NULL",
        ));
    };
    if errhandler.is_null() {
        return Err(Error::new(ErrorClass::Arg, "errhandler pointer is NULL"));
    }
    let id = crate::errhandler::add(f);
    // SAFETY: checked non-NULL; the caller passes a writable MPI_Errhandler.
    unsafe { *errhandler = (ERRH_BASE + id) as Handle };
    Ok(())
}

mpi_fn! {
    fn MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(function: Option<ErrFn>, errhandler: *mut Handle) -> c_int {
        // Between init and finalize only (a session or the world model), as the standard says.
        call("MPI_Comm_create_errhandler", crate::comm::WORLD, |_rt| create(function, errhandler))
    }
}

mpi_fn! {
    fn MPI_Errhandler_free / PMPI_Errhandler_free(errhandler: *mut Handle) -> c_int {
        call("MPI_Errhandler_free", crate::comm::WORLD, |_rt| {
            if errhandler.is_null() {
                return Err(Error::new(ErrorClass::Arg, "errhandler pointer is NULL"));
            }
            // SAFETY: checked non-NULL.
            let h = unsafe { *errhandler } as usize;
            match h {
                ERRORS_ARE_FATAL | ERRORS_RETURN | ERRORS_ABORT => {}
                v if user_errhandler(v).is_some() => {
                    // Communicators using it keep it: the entry stays, only the handle goes.
                    crate::errhandler::release(v - ERRH_BASE)?;
                }
                v => {
                    return Err(Error::new(ErrorClass::Errhandler, format!("{v:#x} is not an error handler")));
                }
            }
            // SAFETY: checked non-NULL.
            unsafe { *errhandler = ERRHANDLER_NULL as Handle };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_call_errhandler / PMPI_Comm_call_errhandler(comm: Handle, errorcode: c_int) -> c_int {
        let c = match comm_index(comm) {
            Ok(c) => c,
            Err(e) => return fail("MPI_Comm_call_errhandler", crate::comm::WORLD, e),
        };
        let handler = match runtime::with(|rt| Ok(rt.comm(c)?.errhandler)) {
            Ok(h) => h,
            Err(e) => return fail("MPI_Comm_call_errhandler", crate::comm::WORLD, e),
        };
        match handler {
            // The handler "was successfully called" (MPI 4.1 §9.3): MPI_SUCCESS.
            ErrHandler::Return => MPI_SUCCESS,
            ErrHandler::User(h) => match call_user(h, c, errorcode) {
                Ok(()) => MPI_SUCCESS,
                Err(e) => fail("MPI_Comm_call_errhandler", c, e),
            },
            ErrHandler::Fatal | ErrHandler::Abort => {
                let msg = format!("MPI_Comm_call_errhandler: error code {errorcode} raised by the program");
                eprintln!("rmpi: {msg} (aborting the job)");
                let _ = runtime::with(|rt| -> Result<()> { rt.abort(errorcode, &msg) });
                runtime::abort_without_runtime(errorcode, &msg)
            }
        }
    }
}

mpi_fn! {
    fn MPI_Add_error_class / PMPI_Add_error_class(errorclass: *mut c_int) -> c_int {
        call("MPI_Add_error_class", crate::comm::WORLD, |_| {
            if errorclass.is_null() {
                return Err(Error::new(ErrorClass::Arg, "errorclass pointer is NULL"));
            }
            // SAFETY: checked non-NULL.
            unsafe { *errorclass = add_code(None) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Add_error_code / PMPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) -> c_int {
        call("MPI_Add_error_code", crate::comm::WORLD, |_| {
            if errorcode.is_null() {
                return Err(Error::new(ErrorClass::Arg, "errorcode pointer is NULL"));
            }
            if class_of(errorclass) != Some(errorclass) {
                return Err(Error::new(ErrorClass::Arg, format!("{errorclass} is not an error class")));
            }
            // SAFETY: checked non-NULL.
            unsafe { *errorcode = add_code(Some(errorclass)) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Add_error_string / PMPI_Add_error_string(errorcode: c_int, string: *const c_char) -> c_int {
        call("MPI_Add_error_string", crate::comm::WORLD, |_| {
            if string.is_null() {
                return Err(Error::new(ErrorClass::Arg, "string is NULL"));
            }
            // SAFETY: checked non-NULL; the standard passes a NUL-terminated string.
            let text = unsafe { CStr::from_ptr(string) }.to_string_lossy().into_owned();
            let mut v = user_codes();
            match v.iter_mut().find(|u| u.code == errorcode) {
                Some(u) => {
                    u.text = text;
                    Ok(())
                }
                None => Err(Error::new(ErrorClass::Arg, format!("{errorcode} is not a user-added error code or class"))),
            }
        })
    }
}

/// MPI_Remove_error_class/_code/_string (MPI 4.1): the user code `code`'s entry, checked as
/// removable. A class goes only without codes of its own; neither a class nor a code goes while
/// it has a string (MPI 4.1 §9.5).
fn remove(code: c_int, want_class: bool) -> Result<()> {
    let mut v = user_codes();
    let Some(i) = v.iter().position(|u| u.code == code) else {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "{code} is not a user-added error {}",
                if want_class { "class" } else { "code" }
            ),
        ));
    };
    let is_class = v[i].class == code;
    if is_class != want_class {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "{code} is an error {}",
                if is_class { "class" } else { "code" }
            ),
        ));
    }
    if is_class && v.iter().any(|u| u.class == code && u.code != code) {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("error class {code} still has error codes"),
        ));
    }
    if !v[i].text.is_empty() {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "error {} {code} still has a string (MPI_Remove_error_string first)",
                if is_class { "class" } else { "code" }
            ),
        ));
    }
    v.remove(i);
    Ok(())
}

mpi_fn! {
    fn MPI_Remove_error_class / PMPI_Remove_error_class(errorclass: c_int) -> c_int {
        call("MPI_Remove_error_class", crate::comm::WORLD, |_| remove(errorclass, true))
    }
}

mpi_fn! {
    fn MPI_Remove_error_code / PMPI_Remove_error_code(errorcode: c_int) -> c_int {
        call("MPI_Remove_error_code", crate::comm::WORLD, |_| remove(errorcode, false))
    }
}

mpi_fn! {
    fn MPI_Remove_error_string / PMPI_Remove_error_string(errorcode: c_int) -> c_int {
        call("MPI_Remove_error_string", crate::comm::WORLD, |_| {
            match user_codes().iter_mut().find(|u| u.code == errorcode) {
                Some(u) => {
                    u.text.clear();
                    Ok(())
                }
                None => Err(Error::new(ErrorClass::Arg, format!("{errorcode} is not a user-added error code or class"))),
            }
        })
    }
}
