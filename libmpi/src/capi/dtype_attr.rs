//! Attributes cached on datatypes (MPI_Type_create_keyval, _set_attr, _get_attr,
//! _delete_attr, _free_keyval). Values live beside each type in the datatype table; keyvals
//! in a table of their own, numbered apart from communicator keyvals so that one kind passed
//! as the other is MPI_ERR_KEYVAL. Copy callbacks run on MPI_Type_dup, delete callbacks on
//! MPI_Type_delete_attr, on replacing a value and on MPI_Type_free; they may call MPI, so no
//! lock is held while they run.

use std::ffi::{c_int, c_void};
use std::sync::{Mutex, MutexGuard};

use super::*;
use crate::datatype::table;

const KEYVAL_INVALID: c_int = 0;
/// Type keyvals are FIRST + index.
const FIRST: c_int = 0x2000_0000;

type CopyFn =
    unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
type DeleteFn = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

#[derive(Clone, Copy)]
struct Keyval {
    /// 0: MPI_TYPE_NULL_COPY_FN, 1: MPI_TYPE_DUP_FN, else a CopyFn.
    copy: usize,
    delete: Option<DeleteFn>,
    extra: usize,
    freed: bool,
    /// Attributes set with it on live types: a freed keyval stays usable (and may be freed
    /// again, as MPICH allows) until they are gone.
    live: usize,
}

static KEYVALS: Mutex<Vec<Keyval>> = Mutex::new(Vec::new());

fn keyvals() -> MutexGuard<'static, Vec<Keyval>> {
    KEYVALS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A keyval's callbacks; `any`: also a freed one (attributes outlive the user's free).
fn keyval(k: c_int, any: bool) -> Result<Keyval> {
    let i = k.checked_sub(FIRST).and_then(|i| usize::try_from(i).ok());
    match i.and_then(|i| keyvals().get(i).copied()) {
        Some(kv) if any || !kv.freed => Ok(kv),
        _ => Err(Error::new(
            ErrorClass::Keyval,
            format!("{k} is not a valid datatype keyval"),
        )),
    }
}

fn dcall(name: &str, f: impl FnOnce() -> Result<()>) -> c_int {
    match running().and_then(|()| f()) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => fail(name, crate::comm::WORLD, e),
    }
}

fn callback_failed(what: &str, rc: c_int) -> Error {
    let class = ErrorClass::from_code(rc).unwrap_or(ErrorClass::Other);
    Error::new(
        class,
        format!("the attribute {what} callback returned {rc}"),
    )
}

/// Count an attribute of keyval `k` in (`d` = 1) or out (`d` = -1).
fn live(k: c_int, d: isize) {
    if let Some(kv) = keyvals().get_mut((k - FIRST) as usize) {
        kv.live = kv.live.saturating_add_signed(d);
    }
}

fn call_delete(h: usize, k: c_int, kv: Keyval, v: usize) -> Result<()> {
    if let Some(f) = kv.delete {
        // SAFETY: the user registered `f` as an MPI_Type_delete_attr_function.
        let rc = unsafe { f(h as Handle, k, v as *mut c_void, kv.extra as *mut c_void) };
        if rc != MPI_SUCCESS {
            return Err(callback_failed("delete", rc));
        }
    }
    Ok(())
}

/// MPI_Type_free: every attribute's delete callback, before the handle goes. A callback that
/// fails stops the free; the attributes not yet deleted stay.
pub(super) fn on_free(h: usize) -> Result<()> {
    let attrs = table::with_attrs(h, |a| a.clone())?;
    for (k, v) in attrs {
        call_delete(h, k, keyval(k, true)?, v)?;
        table::with_attrs(h, |a| a.retain(|e| e.0 != k))?;
        live(k, -1);
    }
    Ok(())
}

/// MPI_Type_dup: the copy callbacks decide which attributes the new type gets.
pub(super) fn on_dup(old: usize, new: usize) -> Result<()> {
    let attrs = table::with_attrs(old, |a| a.clone())?;
    let mut out = Vec::new();
    for (k, v) in attrs {
        let kv = keyval(k, true)?;
        match kv.copy {
            0 => {}
            1 => out.push((k, v)),
            f => {
                // SAFETY: any other value is the MPI_Type_copy_attr_function the user passed.
                let f = unsafe { std::mem::transmute::<usize, CopyFn>(f) };
                let (mut nv, mut flag): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
                // SAFETY: the callback's contract: it writes a void * and a flag.
                let rc = unsafe {
                    f(
                        old as Handle,
                        k,
                        kv.extra as *mut c_void,
                        v as *mut c_void,
                        (&mut nv as *mut *mut c_void).cast(),
                        &mut flag,
                    )
                };
                if rc != MPI_SUCCESS {
                    return Err(callback_failed("copy", rc));
                }
                if flag != 0 {
                    out.push((k, nv as usize));
                }
            }
        }
    }
    for (k, _) in &out {
        live(*k, 1);
    }
    table::with_attrs(new, |a| *a = out)
}

mpi_fn! {
    fn MPI_Type_create_keyval / PMPI_Type_create_keyval(type_copy_attr_fn: *const c_void, type_delete_attr_fn: Option<DeleteFn>, type_keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
        dcall("MPI_Type_create_keyval", || {
            if type_keyval.is_null() {
                return Err(Error::new(ErrorClass::Arg, "keyval pointer is NULL"));
            }
            let mut t = keyvals();
            t.push(Keyval {
                copy: type_copy_attr_fn as usize,
                delete: type_delete_attr_fn,
                extra: extra_state as usize,
                freed: false,
                live: 0,
            });
            // SAFETY: checked non-NULL.
            unsafe { *type_keyval = FIRST + t.len() as c_int - 1 };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Type_free_keyval / PMPI_Type_free_keyval(type_keyval: *mut c_int) -> c_int {
        dcall("MPI_Type_free_keyval", || {
            if type_keyval.is_null() {
                return Err(Error::new(ErrorClass::Arg, "keyval pointer is NULL"));
            }
            // SAFETY: checked non-NULL.
            let k = unsafe { *type_keyval };
            let kv = keyval(k, true)?;
            if kv.freed && kv.live == 0 {
                keyval(k, false)?;
            }
            keyvals()[(k - FIRST) as usize].freed = true;
            // SAFETY: as above.
            unsafe { *type_keyval = KEYVAL_INVALID };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Type_set_attr / PMPI_Type_set_attr(datatype: Handle, type_keyval: c_int, attribute_val: *mut c_void) -> c_int {
        dcall("MPI_Type_set_attr", || {
            let (h, kv) = (datatype as usize, keyval(type_keyval, false)?);
            let v = attribute_val as usize;
            let old = table::with_attrs(h, |a| a.iter().find(|(k, _)| *k == type_keyval).map(|e| e.1))?;
            // The old value's delete callback first: if it fails, the old value stays.
            if let Some(o) = old {
                call_delete(h, type_keyval, kv, o)?;
            } else {
                live(type_keyval, 1);
            }
            table::with_attrs(h, |a| match a.iter_mut().find(|(k, _)| *k == type_keyval) {
                Some(e) => e.1 = v,
                None => a.push((type_keyval, v)),
            })
        })
    }
}

mpi_fn! {
    fn MPI_Type_get_attr / PMPI_Type_get_attr(datatype: Handle, type_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
        dcall("MPI_Type_get_attr", || {
            keyval(type_keyval, false)?;
            if attribute_val.is_null() || flag.is_null() {
                return Err(Error::new(ErrorClass::Arg, "attribute_val or flag pointer is NULL"));
            }
            let v = table::with_attrs(datatype as usize, |a| {
                a.iter().find(|(k, _)| *k == type_keyval).map(|e| e.1)
            })?;
            // SAFETY: both checked non-NULL; attribute_val is really a void ** (the C binding).
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
    fn MPI_Type_delete_attr / PMPI_Type_delete_attr(datatype: Handle, type_keyval: c_int) -> c_int {
        dcall("MPI_Type_delete_attr", || {
            let (h, kv) = (datatype as usize, keyval(type_keyval, false)?);
            let v = table::with_attrs(h, |a| a.iter().find(|(k, _)| *k == type_keyval).map(|e| e.1))?;
            match v {
                // Removed only once its delete callback succeeded.
                Some(v) => {
                    call_delete(h, type_keyval, kv, v)?;
                    table::with_attrs(h, |a| a.retain(|e| e.0 != type_keyval))?;
                    live(type_keyval, -1);
                    Ok(())
                }
                None => Err(Error::new(
                    ErrorClass::Keyval,
                    format!("keyval {type_keyval} has no attribute on datatype {h:#x}"),
                )),
            }
        })
    }
}
