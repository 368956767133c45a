//! Windows in the C ABI: creation (all four flavors), MPI_Win_free, shared queries, groups,
//! names, info, attributes, error handlers, and the synchronisation calls. The work is in
//! `crate::osc`; errors go through the window's error handler.

use std::ffi::{c_char, c_int, c_void, CStr};

use super::*;
use crate::comm_agree::Outside;
use crate::errhandler::ErrFn;
use crate::osc;
use crate::registry::DeleteFn;

const WIN_NULL: usize = 0x110;
/// Window handles: `WIN_BASE + slot`.
const WIN_BASE: usize = 0x5800_0000;
const KIND_SPAN: usize = 0x0800_0000;
const MAX_OBJECT_NAME: usize = 128;
const LOCK_EXCLUSIVE: c_int = 301;
const LOCK_SHARED: c_int = 302;
/// MPI_MODE_NOSUCCEED (mpi.h): no RMA calls follow this fence.
const MODE_NOSUCCEED: c_int = 16384;
const KEYVAL_INVALID: c_int = 0;
const WIN_BASE_KEY: c_int = 601;
const WIN_DISP_UNIT: c_int = 602;
const WIN_SIZE: c_int = 603;
const WIN_CREATE_FLAVOR: c_int = 604;
const WIN_MODEL: c_int = 605;
const PROC_NULL: c_int = -3;

/// The window slot behind a handle.
pub(super) fn win_index(h: Handle) -> Result<usize> {
    match h as usize {
        WIN_NULL => Err(Error::new(
            ErrorClass::Win,
            "MPI_WIN_NULL is not a valid window here",
        )),
        v if (WIN_BASE..WIN_BASE + KIND_SPAN).contains(&v) && osc::exists(v - WIN_BASE) => {
            Ok(v - WIN_BASE)
        }
        v => Err(Error::new(
            ErrorClass::Win,
            format!("{v:#x} is not a window handle (or it was freed)"),
        )),
    }
}

fn win_handle(id: usize) -> Handle {
    (WIN_BASE + id) as Handle
}

/// Apply the window's error handler to a failed call (MPI_COMM_WORLD's for a bad handle).
#[cold]
pub(super) fn win_fail(name: &str, win: Handle, e: Error) -> c_int {
    let Ok(id) = win_index(win) else {
        return fail(name, crate::comm::WORLD, e);
    };
    let handler = osc::with_win(id, |w| Ok(w.errhandler)).unwrap_or(ErrHandler::Fatal);
    let code = e.code();
    match handler {
        ErrHandler::Return => code,
        ErrHandler::User(h) => {
            let Ok(f) = crate::errhandler::get(h) else {
                return code;
            };
            let (mut handle, mut c) = (win_handle(id), code);
            // SAFETY: a function registered with MPI_Win_create_errhandler, called with a
            // pointer to the window handle and to the code, as MPI_Win_errhandler_function
            // prescribes; the runtime is not borrowed (it may call MPI).
            unsafe { f(&mut handle, &mut c) };
            code
        }
        ErrHandler::Fatal | ErrHandler::Abort => {
            let msg = format!("{name}: {e}");
            eprintln!("rmpi: {msg} (window error handler: aborting the job)");
            let _ = runtime::with(|rt| -> Result<()> { rt.abort(code, &msg) });
            runtime::abort_without_runtime(code, &msg)
        }
    }
}

/// Run `f` with the runtime and the window's slot; errors through the window's handler.
pub(super) fn wcall(
    name: &str,
    win: Handle,
    f: impl FnOnce(&mut Runtime, usize) -> Result<()>,
) -> c_int {
    match win_index(win).and_then(|id| runtime::with(|rt| f(rt, id))) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => win_fail(name, win, e),
    }
}

/// `wcall` of a synchronisation that waits (for other processes' calls: a fence, a post, a
/// complete, a lock's release; or for progress: a flush): `f` runs outside the runtime and
/// waits there under MPI_THREAD_MULTIPLE.
fn wcall_outside(name: &str, win: Handle, f: impl FnOnce(usize) -> Result<()>) -> c_int {
    match win_index(win).and_then(f) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => win_fail(name, win, e),
    }
}

fn out<T>(p: *mut T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{what} pointer is NULL"),
        ));
    }
    Ok(())
}

/// Store a new window's handle.
///
/// # Safety
/// `win` was checked non-NULL and points to a writable MPI_Win.
unsafe fn store(win: *mut Handle, id: usize) {
    // SAFETY: the caller's contract.
    unsafe { *win = win_handle(id) };
}

fn create(
    name: &str,
    base: *mut c_void,
    size: Aint,
    disp_unit: Aint,
    info: Handle,
    comm: Handle,
    win: *mut Handle,
) -> c_int {
    // Outside the runtime: window creation waits for the members there (osc::allgather).
    super::comm::outside(name, p2p::err_comm(comm), || {
        out(win, "win")?;
        let (c, hints) = (comm_index(comm)?, super::info::hints(info)?);
        let id = osc::create(c, base as usize, size, disp_unit, hints)?;
        // SAFETY: checked non-NULL.
        unsafe { store(win, id) };
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Win_create / PMPI_Win_create(base: *mut c_void, size: Aint, disp_unit: c_int, info: Handle, comm: Handle, win: *mut Handle) -> c_int {
        create("MPI_Win_create", base, size, disp_unit as Aint, info, comm, win)
    }
}

mpi_fn! {
    fn MPI_Win_create_c / PMPI_Win_create_c(base: *mut c_void, size: Aint, disp_unit: Aint, info: Handle, comm: Handle, win: *mut Handle) -> c_int {
        create("MPI_Win_create_c", base, size, disp_unit, info, comm, win)
    }
}

#[allow(clippy::too_many_arguments)]
fn allocate(
    name: &str,
    shared: bool,
    size: Aint,
    disp_unit: Aint,
    info: Handle,
    comm: Handle,
    baseptr: *mut c_void,
    win: *mut Handle,
) -> c_int {
    super::comm::outside(name, p2p::err_comm(comm), || {
        out(win, "win")?;
        out(baseptr, "baseptr")?;
        let (c, hints) = (comm_index(comm)?, super::info::hints(info)?);
        let (id, base) = if shared {
            osc::allocate_shared(c, size, disp_unit, hints)?
        } else {
            osc::allocate(c, size, disp_unit, hints)?
        };
        // SAFETY: checked non-NULL; baseptr is really a void ** (the standard's C binding).
        unsafe {
            *baseptr.cast::<*mut c_void>() = base as *mut c_void;
            store(win, id);
        }
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Win_allocate / PMPI_Win_allocate(size: Aint, disp_unit: c_int, info: Handle, comm: Handle, baseptr: *mut c_void, win: *mut Handle) -> c_int {
        allocate("MPI_Win_allocate", false, size, disp_unit as Aint, info, comm, baseptr, win)
    }
}

mpi_fn! {
    fn MPI_Win_allocate_c / PMPI_Win_allocate_c(size: Aint, disp_unit: Aint, info: Handle, comm: Handle, baseptr: *mut c_void, win: *mut Handle) -> c_int {
        allocate("MPI_Win_allocate_c", false, size, disp_unit, info, comm, baseptr, win)
    }
}

mpi_fn! {
    fn MPI_Win_allocate_shared / PMPI_Win_allocate_shared(size: Aint, disp_unit: c_int, info: Handle, comm: Handle, baseptr: *mut c_void, win: *mut Handle) -> c_int {
        allocate("MPI_Win_allocate_shared", true, size, disp_unit as Aint, info, comm, baseptr, win)
    }
}

mpi_fn! {
    fn MPI_Win_allocate_shared_c / PMPI_Win_allocate_shared_c(size: Aint, disp_unit: Aint, info: Handle, comm: Handle, baseptr: *mut c_void, win: *mut Handle) -> c_int {
        allocate("MPI_Win_allocate_shared_c", true, size, disp_unit, info, comm, baseptr, win)
    }
}

mpi_fn! {
    fn MPI_Win_create_dynamic / PMPI_Win_create_dynamic(info: Handle, comm: Handle, win: *mut Handle) -> c_int {
        super::comm::outside("MPI_Win_create_dynamic", p2p::err_comm(comm), || {
            out(win, "win")?;
            let (c, hints) = (comm_index(comm)?, super::info::hints(info)?);
            let id = osc::create_dynamic(c, hints)?;
            // SAFETY: checked non-NULL.
            unsafe { store(win, id) };
            Ok(())
        })
    }
}

/// MPI_Win_shared_query(_c): rank's part of a shared window (PROC_NULL: the first non-empty).
fn shared_query(
    name: &str,
    win: Handle,
    rank: c_int,
    size: *mut Aint,
    disp_unit: &mut dyn FnMut(usize),
    baseptr: *mut c_void,
) -> c_int {
    wcall(name, win, |_, id| {
        out(size, "size")?;
        out(baseptr, "baseptr")?;
        let (sz, du, base) = osc::with_win(id, |w| {
            let r = if rank == PROC_NULL {
                w.peers.iter().position(|p| p.size > 0).unwrap_or(0)
            } else if rank < 0 || rank >= w.size() {
                return Err(Error::new(
                    ErrorClass::Rank,
                    format!("rank {rank} is not in the window"),
                ));
            } else {
                rank as usize
            };
            // Memory of other flavors (and empty parts) cannot be loaded directly: size 0
            // and base NULL (MPI 4.1 §12.2.3).
            if w.flavor != osc::FLAVOR_SHARED || w.peers[r].size == 0 {
                return Ok((0, w.peers[r].disp_unit, 0));
            }
            Ok((w.peers[r].size, w.peers[r].disp_unit, w.shared_bases[r]))
        })?;
        disp_unit(du);
        // SAFETY: checked non-NULL; baseptr is really a void **.
        unsafe {
            *size = sz as Aint;
            *baseptr.cast::<*mut c_void>() = base as *mut c_void;
        }
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Win_shared_query / PMPI_Win_shared_query(win: Handle, rank: c_int, size: *mut Aint, disp_unit: *mut c_int, baseptr: *mut c_void) -> c_int {
        if disp_unit.is_null() {
            return win_fail("MPI_Win_shared_query", win, Error::new(ErrorClass::Arg, "disp_unit pointer is NULL"));
        }
        // SAFETY: checked non-NULL.
        shared_query("MPI_Win_shared_query", win, rank, size, &mut |d| unsafe { *disp_unit = d as c_int }, baseptr)
    }
}

mpi_fn! {
    fn MPI_Win_shared_query_c / PMPI_Win_shared_query_c(win: Handle, rank: c_int, size: *mut Aint, disp_unit: *mut Aint, baseptr: *mut c_void) -> c_int {
        if disp_unit.is_null() {
            return win_fail("MPI_Win_shared_query_c", win, Error::new(ErrorClass::Arg, "disp_unit pointer is NULL"));
        }
        // SAFETY: checked non-NULL.
        shared_query("MPI_Win_shared_query_c", win, rank, size, &mut |d| unsafe { *disp_unit = d as Aint }, baseptr)
    }
}

mpi_fn! {
    fn MPI_Win_attach / PMPI_Win_attach(win: Handle, base: *mut c_void, size: Aint) -> c_int {
        wcall("MPI_Win_attach", win, |_, id| {
            osc::with_win(id, |w| {
                if w.flavor != osc::FLAVOR_DYNAMIC {
                    return Err(Error::new(ErrorClass::RmaFlavor, "MPI_Win_attach needs a window from MPI_Win_create_dynamic"));
                }
                if size < 0 {
                    return Err(Error::new(ErrorClass::Size, format!("size {size} is negative")));
                }
                if base.is_null() && size > 0 {
                    return Err(Error::new(ErrorClass::RmaAttach, "base is NULL"));
                }
                w.attached.push((base as usize, size as usize));
                Ok(())
            })
        })
    }
}

mpi_fn! {
    fn MPI_Win_detach / PMPI_Win_detach(win: Handle, base: *const c_void) -> c_int {
        wcall("MPI_Win_detach", win, |_, id| {
            osc::with_win(id, |w| {
                match w.attached.iter().position(|a| a.0 == base as usize) {
                    Some(i) => {
                        w.attached.remove(i);
                        Ok(())
                    }
                    None => Err(Error::new(ErrorClass::RmaAttach, format!("{base:p} is not attached to this window"))),
                }
            })
        })
    }
}

/// Run the delete callbacks of every attribute of window `id`, outside the runtime borrow.
fn delete_all_attrs(id: usize) -> Result<()> {
    let attrs = osc::with_win(id, |w| Ok(std::mem::take(&mut w.attrs)))?;
    for (k, v) in attrs {
        call_delete(id, k, v)?;
    }
    Ok(())
}

fn call_delete(id: usize, key: c_int, val: usize) -> Result<()> {
    let kv = runtime::with(|rt| Ok(rt.objs.keyval_any(key)))?;
    if let Some(f) = kv.and_then(|k| k.delete) {
        let extra = kv.map_or(0, |k| k.extra);
        // SAFETY: a C delete callback registered with MPI_Win_create_keyval, called as
        // MPI_Win_delete_attr_function prescribes; the runtime is not borrowed.
        let rc = unsafe {
            f(
                win_handle(id),
                key,
                val as *mut c_void,
                extra as *mut c_void,
            )
        };
        if rc != 0 {
            return Err(Error::new(
                ErrorClass::Other,
                format!("attribute delete callback returned {rc}"),
            ));
        }
    }
    Ok(())
}

mpi_fn! {
    fn MPI_Win_free / PMPI_Win_free(win: *mut Handle) -> c_int {
        if win.is_null() {
            return fail("MPI_Win_free", crate::comm::WORLD, Error::new(ErrorClass::Arg, "win pointer is NULL"));
        }
        // SAFETY: checked non-NULL.
        let h = unsafe { *win };
        let id = match win_index(h) {
            Ok(id) => id,
            Err(e) => return win_fail("MPI_Win_free", h, e),
        };
        // Refused in a lock or PSCW epoch before anything (the attributes) goes.
        if let Err(e) = osc::check_free(id).and_then(|()| delete_all_attrs(id)) {
            return win_fail("MPI_Win_free", h, e);
        }
        match osc::free(id) {
            Ok(()) => {
                // SAFETY: checked non-NULL.
                unsafe { *win = WIN_NULL as Handle };
                MPI_SUCCESS
            }
            Err(e) => win_fail("MPI_Win_free", h, e),
        }
    }
}

mpi_fn! {
    fn MPI_Win_get_group / PMPI_Win_get_group(win: Handle, group: *mut Handle) -> c_int {
        wcall("MPI_Win_get_group", win, |rt, id| {
            out(group, "group")?;
            let comm = osc::with_win(id, |w| Ok(w.comm))?;
            let g = crate::group::Group::new(rt.comm(comm)?.group.clone());
            let h = super::group::new_group(rt, g);
            // SAFETY: checked non-NULL.
            unsafe { *group = h };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Win_set_name / PMPI_Win_set_name(win: Handle, win_name: *const c_char) -> c_int {
        wcall("MPI_Win_set_name", win, |_, id| {
            if win_name.is_null() {
                return Err(Error::new(ErrorClass::Arg, "win_name is NULL"));
            }
            // SAFETY: checked non-NULL; a NUL-terminated string by the standard.
            let s = unsafe { CStr::from_ptr(win_name) }.to_string_lossy();
            let n: String = s.chars().take(MAX_OBJECT_NAME - 1).collect();
            osc::with_win(id, |w| {
                w.name = n;
                Ok(())
            })
        })
    }
}

mpi_fn! {
    fn MPI_Win_get_name / PMPI_Win_get_name(win: Handle, win_name: *mut c_char, resultlen: *mut c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Win_get_name", crate::comm::WORLD, e);
        }
        // MPI_WIN_NULL is named, as MPICH names it (its tests expect it).
        let null = win as usize == WIN_NULL;
        let body = |id: Option<usize>| -> Result<()> {
            out(win_name, "win_name")?;
            out(resultlen, "resultlen")?;
            let name = match id {
                None => "MPI_WIN_NULL".to_string(),
                Some(id) => osc::with_win(id, |w| Ok(w.name.clone()))?,
            };
            let n = name.len().min(MAX_OBJECT_NAME - 1);
            // SAFETY: the standard requires MPI_MAX_OBJECT_NAME bytes at win_name; n + 1 fits.
            unsafe {
                std::ptr::copy_nonoverlapping(name.as_ptr(), win_name.cast(), n);
                *win_name.add(n) = 0;
                *resultlen = n as c_int;
            }
            Ok(())
        };
        if null {
            return match body(None) {
                Ok(()) => MPI_SUCCESS,
                Err(e) => fail("MPI_Win_get_name", crate::comm::WORLD, e),
            };
        }
        wcall("MPI_Win_get_name", win, |_, id| body(Some(id)))
    }
}

mpi_fn! {
    fn MPI_Win_set_info / PMPI_Win_set_info(win: Handle, info: Handle) -> c_int {
        wcall("MPI_Win_set_info", win, |_, id| {
            let hints = super::info::hints(info)?;
            osc::with_win(id, |w| {
                w.info.merge(&hints);
                Ok(())
            })
        })
    }
}

mpi_fn! {
    fn MPI_Win_get_info / PMPI_Win_get_info(win: Handle, info_used: *mut Handle) -> c_int {
        wcall("MPI_Win_get_info", win, |_, id| {
            out(info_used, "info_used")?;
            let i = osc::with_win(id, |w| Ok(w.info.clone()))?;
            // SAFETY: checked non-NULL.
            unsafe { *info_used = super::info::new_handle(i) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Win_create_errhandler / PMPI_Win_create_errhandler(function: Option<ErrFn>, errhandler: *mut Handle) -> c_int {
        // SAFETY: same contract; a window handler has the communicator handler's shape.
        unsafe { super::errh::PMPI_Comm_create_errhandler(function, errhandler) }
    }
}

mpi_fn! {
    fn MPI_Win_set_errhandler / PMPI_Win_set_errhandler(win: Handle, errhandler: Handle) -> c_int {
        wcall("MPI_Win_set_errhandler", win, |_rt, id| {
            let h = super::env::errhandler_of(errhandler)?;
            osc::with_win(id, |w| {
                w.errhandler = h;
                Ok(())
            })
        })
    }
}

mpi_fn! {
    fn MPI_Win_get_errhandler / PMPI_Win_get_errhandler(win: Handle, errhandler: *mut Handle) -> c_int {
        wcall("MPI_Win_get_errhandler", win, |_rt, id| {
            out(errhandler, "errhandler")?;
            let h = match osc::with_win(id, |w| Ok(w.errhandler))? {
                ErrHandler::Fatal => ERRORS_ARE_FATAL,
                ErrHandler::Return => ERRORS_RETURN,
                ErrHandler::Abort => ERRORS_ABORT,
                ErrHandler::User(i) => {
                    crate::errhandler::retain(i);
                    super::errh::ERRH_BASE + i
                }
            };
            // SAFETY: checked non-NULL.
            unsafe { *errhandler = h as Handle };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Win_call_errhandler / PMPI_Win_call_errhandler(win: Handle, errorcode: c_int) -> c_int {
        let id = match win_index(win) {
            Ok(id) => id,
            Err(e) => return fail("MPI_Win_call_errhandler", crate::comm::WORLD, e),
        };
        let handler = osc::with_win(id, |w| Ok(w.errhandler)).unwrap_or(ErrHandler::Fatal);
        match handler {
            ErrHandler::Return => MPI_SUCCESS,
            _ => {
                let e = Error::new(ErrorClass::Other, format!("error code {errorcode} raised by the program"));
                if let ErrHandler::User(_) = handler {
                    // The user's handler sees the program's code, not ours.
                    let r = win_fail_code("MPI_Win_call_errhandler", id, errorcode);
                    return if r { MPI_SUCCESS } else { win_fail("MPI_Win_call_errhandler", win, e) };
                }
                win_fail("MPI_Win_call_errhandler", win, e)
            }
        }
    }
}

/// Call window `id`'s user error handler with `code`; false if it has none.
fn win_fail_code(_name: &str, id: usize, code: c_int) -> bool {
    let Ok(ErrHandler::User(h)) = osc::with_win(id, |w| Ok(w.errhandler)) else {
        return false;
    };
    let Ok(f) = crate::errhandler::get(h) else {
        return false;
    };
    let (mut handle, mut c) = (win_handle(id), code);
    // SAFETY: as in `win_fail`.
    unsafe { f(&mut handle, &mut c) };
    true
}

mpi_fn! {
    fn MPI_Win_create_keyval / PMPI_Win_create_keyval(copy_fn: *const c_void, delete_fn: Option<DeleteFn>, keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
        call("MPI_Win_create_keyval", crate::comm::WORLD, |rt| {
            out(keyval, "keyval")?;
            // Windows are never duplicated: the copy callback is never called.
            let _ = copy_fn;
            let k = rt.objs.add_win_keyval(delete_fn, extra_state as usize);
            // SAFETY: checked non-NULL.
            unsafe { *keyval = k };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Win_free_keyval / PMPI_Win_free_keyval(keyval: *mut c_int) -> c_int {
        call("MPI_Win_free_keyval", crate::comm::WORLD, |rt| {
            out(keyval, "keyval")?;
            // SAFETY: checked non-NULL.
            rt.objs.free_win_keyval(unsafe { *keyval })?;
            // SAFETY: as above.
            unsafe { *keyval = KEYVAL_INVALID };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Win_set_attr / PMPI_Win_set_attr(win: Handle, win_keyval: c_int, attribute_val: *mut c_void) -> c_int {
        let r = (|| {
            let id = win_index(win)?;
            runtime::with(|rt| rt.objs.win_keyval(win_keyval).map(|_| ()))?;
            let old = osc::with_win(id, |w| Ok(w.attrs.iter().find(|a| a.0 == win_keyval).map(|a| a.1)))?;
            if let Some(v) = old {
                call_delete(id, win_keyval, v)?;
            }
            osc::with_win(id, |w| {
                match w.attrs.iter_mut().find(|a| a.0 == win_keyval) {
                    Some(a) => a.1 = attribute_val as usize,
                    None => w.attrs.push((win_keyval, attribute_val as usize)),
                }
                Ok(())
            })
        })();
        match r {
            Ok(()) => MPI_SUCCESS,
            Err(e) => win_fail("MPI_Win_set_attr", win, e),
        }
    }
}

mpi_fn! {
    fn MPI_Win_get_attr / PMPI_Win_get_attr(win: Handle, win_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
        wcall("MPI_Win_get_attr", win, |rt, id| {
            out(attribute_val, "attribute_val")?;
            out(flag, "flag")?;
            let v: Option<usize> = osc::with_win(id, |w| {
                let vals = &*w.attr_vals;
                Ok(match win_keyval {
                    WIN_BASE_KEY => Some(w.base),
                    WIN_SIZE => Some(&vals.0 as *const isize as usize),
                    WIN_DISP_UNIT => Some(&vals.1 as *const i32 as usize),
                    WIN_CREATE_FLAVOR => Some(&vals.2 as *const i32 as usize),
                    WIN_MODEL => Some(&vals.3 as *const i32 as usize),
                    k => {
                        let kv = rt.objs.win_keyval_known(k)?;
                        let v = w.attrs.iter().find(|a| a.0 == k).map(|a| a.1);
                        // A freed keyval reaches only the attributes set before its free.
                        if kv.freed && v.is_none() {
                            return Err(Error::new(ErrorClass::Keyval, format!("{k} is not a valid keyval (freed)")));
                        }
                        v
                    }
                })
            })?;
            // SAFETY: both checked non-NULL; attribute_val is really a void **.
            unsafe {
                *flag = v.is_some() as c_int;
                if let Some(v) = v {
                    *attribute_val.cast::<*mut c_void>() = v as *mut c_void;
                }
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Win_delete_attr / PMPI_Win_delete_attr(win: Handle, win_keyval: c_int) -> c_int {
        let r = (|| {
            let id = win_index(win)?;
            runtime::with(|rt| rt.objs.win_keyval_known(win_keyval).map(|_| ()))?;
            let v = osc::with_win(id, |w| match w.attrs.iter().find(|a| a.0 == win_keyval) {
                Some(a) => Ok(a.1),
                None => Err(Error::new(ErrorClass::Keyval, format!("keyval {win_keyval} has no attribute on this window"))),
            })?;
            call_delete(id, win_keyval, v)?;
            osc::with_win(id, |w| {
                w.attrs.retain(|a| a.0 != win_keyval);
                Ok(())
            })
        })();
        match r {
            Ok(()) => MPI_SUCCESS,
            Err(e) => win_fail("MPI_Win_delete_attr", win, e),
        }
    }
}

mpi_fn! {
    fn MPI_Win_fence / PMPI_Win_fence(assert: c_int, win: Handle) -> c_int {
        wcall_outside("MPI_Win_fence", win, |id| osc::sync::fence(id, assert & MODE_NOSUCCEED != 0))
    }
}

/// The window ranks of a group's members.
fn group_ranks(rt: &Runtime, id: usize, group: Handle) -> Result<Vec<i32>> {
    let g = super::group::group_of(rt, group)?;
    osc::with_win(id, |w| {
        g.members()
            .iter()
            .map(|&m| {
                w.rank_of_world(m).ok_or_else(|| {
                    Error::new(ErrorClass::Group, "a group member is not in the window")
                })
            })
            .collect()
    })
}

mpi_fn! {
    fn MPI_Win_post / PMPI_Win_post(group: Handle, assert: c_int, win: Handle) -> c_int {
        let _ = assert;
        wcall("MPI_Win_post", win, |rt, id| {
            let r = group_ranks(rt, id, group)?;
            osc::sync::post(rt, id, r)
        })
    }
}

mpi_fn! {
    fn MPI_Win_start / PMPI_Win_start(group: Handle, assert: c_int, win: Handle) -> c_int {
        let _ = assert;
        wcall_outside("MPI_Win_start", win, |id| {
            let r = runtime::with(|rt| group_ranks(rt, id, group))?;
            osc::sync::start(id, r)
        })
    }
}

mpi_fn! {
    fn MPI_Win_complete / PMPI_Win_complete(win: Handle) -> c_int {
        wcall_outside("MPI_Win_complete", win, |id| osc::sync::complete(&mut Outside, id))
    }
}

mpi_fn! {
    fn MPI_Win_wait / PMPI_Win_wait(win: Handle) -> c_int {
        wcall_outside("MPI_Win_wait", win, osc::sync::wait)
    }
}

mpi_fn! {
    fn MPI_Win_test / PMPI_Win_test(win: Handle, flag: *mut c_int) -> c_int {
        wcall("MPI_Win_test", win, |rt, id| {
            out(flag, "flag")?;
            let done = osc::sync::test(rt, id)?;
            // SAFETY: checked non-NULL.
            unsafe { *flag = done as c_int };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Win_lock / PMPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: Handle) -> c_int {
        let _ = assert;
        wcall_outside("MPI_Win_lock", win, |id| {
            let excl = match lock_type {
                LOCK_EXCLUSIVE => true,
                LOCK_SHARED => false,
                t => return Err(Error::new(ErrorClass::Locktype, format!("{t} is not MPI_LOCK_EXCLUSIVE or MPI_LOCK_SHARED"))),
            };
            if rank == PROC_NULL {
                return Ok(());
            }
            osc::sync::lock(&mut Outside, id, excl, rank)
        })
    }
}

mpi_fn! {
    fn MPI_Win_unlock / PMPI_Win_unlock(rank: c_int, win: Handle) -> c_int {
        wcall_outside("MPI_Win_unlock", win, |id| {
            if rank == PROC_NULL {
                return Ok(());
            }
            osc::sync::unlock(&mut Outside, id, rank)
        })
    }
}

mpi_fn! {
    fn MPI_Win_lock_all / PMPI_Win_lock_all(assert: c_int, win: Handle) -> c_int {
        let _ = assert;
        wcall_outside("MPI_Win_lock_all", win, |id| osc::sync::lock_all(&mut Outside, id))
    }
}

mpi_fn! {
    fn MPI_Win_unlock_all / PMPI_Win_unlock_all(win: Handle) -> c_int {
        wcall_outside("MPI_Win_unlock_all", win, |id| osc::sync::unlock_all(&mut Outside, id))
    }
}

mpi_fn! {
    fn MPI_Win_flush / PMPI_Win_flush(rank: c_int, win: Handle) -> c_int {
        wcall_outside("MPI_Win_flush", win, |id| {
            if rank == PROC_NULL {
                return Ok(());
            }
            osc::sync::flush(&mut Outside, id, Some(rank))
        })
    }
}

mpi_fn! {
    fn MPI_Win_flush_all / PMPI_Win_flush_all(win: Handle) -> c_int {
        wcall_outside("MPI_Win_flush_all", win, |id| osc::sync::flush(&mut Outside, id, None))
    }
}

mpi_fn! {
    fn MPI_Win_flush_local / PMPI_Win_flush_local(rank: c_int, win: Handle) -> c_int {
        wcall_outside("MPI_Win_flush_local", win, |id| {
            if rank == PROC_NULL {
                return Ok(());
            }
            osc::sync::flush_local_at(&mut Outside, id, Some(rank))
        })
    }
}

mpi_fn! {
    fn MPI_Win_flush_local_all / PMPI_Win_flush_local_all(win: Handle) -> c_int {
        wcall_outside("MPI_Win_flush_local_all", win, |id| osc::sync::flush_local_at(&mut Outside, id, None))
    }
}

mpi_fn! {
    fn MPI_Win_sync / PMPI_Win_sync(win: Handle) -> c_int {
        wcall("MPI_Win_sync", win, |rt, _| {
            // The unified model: a full memory barrier orders this process's loads and
            // stores against the other ranks' on shared windows; progress applies what
            // arrived.
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            rt.pml.progress();
            Ok(())
        })
    }
}
