//! Attribute caching on communicators in the C ABI: keyvals, set/get/delete, and the
//! predefined attributes (MPI_TAG_UB, ...). Callbacks run outside the runtime borrow.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use super::comm::outside;
use super::*;
use crate::registry::{Copy, CopyFn, DeleteFn};

const KEYVAL_INVALID: c_int = 0;
const TAG_UB: c_int = 501;
const IO: c_int = 502;
const HOST: c_int = 503;
const WTIME_IS_GLOBAL: c_int = 504;
const APPNUM: c_int = 505;
const LASTUSEDCODE: c_int = 506;
const UNIVERSE_SIZE: c_int = 507;
const PROC_NULL: c_int = -3;

/// Storage for the predefined attributes' values: MPI hands out a pointer to an int.
static PREDEFINED: [AtomicI32; 7] = [const { AtomicI32::new(0) }; 7];

/// The pointer MPI_Comm_get_attr returns for predefined keyval `k`, or None if `k` is not one.
fn predefined(rt: &Runtime, k: c_int) -> Option<*mut c_void> {
    let v = match k {
        TAG_UB => crate::runtime::TAG_UB,
        IO => MPI_ANY_SOURCE,
        HOST => PROC_NULL,
        WTIME_IS_GLOBAL => 0,
        APPNUM => crate::dpm::appnum(),
        LASTUSEDCODE => super::errh::last_used_code(),
        UNIVERSE_SIZE => crate::dpm::universe()
            .unwrap_or_else(|| rt.comm(crate::comm::WORLD).map_or(1, |c| c.size())),
        _ => return None,
    };
    let cell = &PREDEFINED[(k - TAG_UB) as usize];
    cell.store(v, Ordering::Relaxed);
    // AtomicI32 has the layout of an int; the program only reads through this pointer.
    Some(cell.as_ptr().cast())
}

fn copy_of(f: *const c_void) -> Copy {
    match f as usize {
        0 => Copy::None,
        1 => Copy::Dup,
        // SAFETY: any other value is a function pointer of type MPI_Comm_copy_attr_function,
        // as the standard requires of the argument.
        _ => Copy::User(unsafe { std::mem::transmute::<*const c_void, CopyFn>(f) }),
    }
}

mpi_fn! {
    fn MPI_Comm_create_keyval / PMPI_Comm_create_keyval(copy_fn: *const c_void, delete_fn: Option<DeleteFn>, keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
        call("MPI_Comm_create_keyval", crate::comm::WORLD, |rt| {
            if keyval.is_null() {
                return Err(Error::new(ErrorClass::Arg, "keyval pointer is NULL"));
            }
            let k = rt.objs.add_keyval(copy_of(copy_fn), delete_fn, extra_state as usize);
            // SAFETY: checked non-NULL.
            unsafe { *keyval = k };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_free_keyval / PMPI_Comm_free_keyval(keyval: *mut c_int) -> c_int {
        call("MPI_Comm_free_keyval", crate::comm::WORLD, |rt| {
            if keyval.is_null() {
                return Err(Error::new(ErrorClass::Arg, "keyval pointer is NULL"));
            }
            // SAFETY: checked non-NULL.
            rt.objs.free_keyval(unsafe { *keyval })?;
            // SAFETY: as above.
            unsafe { *keyval = KEYVAL_INVALID };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_set_attr / PMPI_Comm_set_attr(comm: Handle, keyval: c_int, attribute_val: *mut c_void) -> c_int {
        let ec = comm_index(comm).unwrap_or(crate::comm::WORLD);
        outside("MPI_Comm_set_attr", ec, || {
            crate::comm_ops::set_attr(comm_index(comm)?, keyval, attribute_val as usize)
        })
    }
}

mpi_fn! {
    fn MPI_Comm_get_attr / PMPI_Comm_get_attr(comm: Handle, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
        let ec = comm_index(comm).unwrap_or(crate::comm::WORLD);
        outside("MPI_Comm_get_attr", ec, || {
            let c = comm_index(comm)?;
            if attribute_val.is_null() || flag.is_null() {
                return Err(Error::new(ErrorClass::Arg, "attribute_val or flag pointer is NULL"));
            }
            let pre = runtime::with(|rt| {
                rt.comm(c)?;
                Ok(predefined(rt, keyval))
            })?;
            let v = match pre {
                Some(p) => Some(p as usize),
                None => crate::comm_ops::get_attr(c, keyval)?,
            };
            // SAFETY: both checked non-NULL; attribute_val is really a void ** (the standard's C
            // binding) and flag an int.
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
    fn MPI_Comm_delete_attr / PMPI_Comm_delete_attr(comm: Handle, keyval: c_int) -> c_int {
        let ec = comm_index(comm).unwrap_or(crate::comm::WORLD);
        outside("MPI_Comm_delete_attr", ec, || crate::comm_ops::delete_attr(comm_index(comm)?, keyval))
    }
}

// MPI-1 names, deprecated but common in older programs.

mpi_fn! {
    fn MPI_Keyval_create / PMPI_Keyval_create(copy_fn: *const c_void, delete_fn: Option<DeleteFn>, keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
        // SAFETY: same contract (MPI_Copy_function has MPI_Comm_copy_attr_function's signature).
        unsafe { PMPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state) }
    }
}

mpi_fn! {
    fn MPI_Keyval_free / PMPI_Keyval_free(keyval: *mut c_int) -> c_int {
        // SAFETY: same contract.
        unsafe { PMPI_Comm_free_keyval(keyval) }
    }
}

mpi_fn! {
    fn MPI_Attr_put / PMPI_Attr_put(comm: Handle, keyval: c_int, attribute_val: *mut c_void) -> c_int {
        // SAFETY: same contract.
        unsafe { PMPI_Comm_set_attr(comm, keyval, attribute_val) }
    }
}

mpi_fn! {
    fn MPI_Attr_get / PMPI_Attr_get(comm: Handle, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
        // SAFETY: same contract.
        unsafe { PMPI_Comm_get_attr(comm, keyval, attribute_val, flag) }
    }
}

mpi_fn! {
    fn MPI_Attr_delete / PMPI_Attr_delete(comm: Handle, keyval: c_int) -> c_int {
        // SAFETY: same contract.
        unsafe { PMPI_Comm_delete_attr(comm, keyval) }
    }
}
