//! MPI_T control variables and categories: the MCA parameters rmpi reads (the transports'
//! `PARAMS` lists and libmpi's and memhook's own, the set `mpirun --mca-list` shows), each
//! with the value this process sees (`RMPI_MCA_<name>`, else a variable named like the
//! parameter, else its default). A parameter whose default is a number is an
//! MPI_UNSIGNED_LONG, any other an MPI_CHAR string. Every one is read at MPI_Init (or by the
//! launcher) and never again, so all are MPI_T_SCOPE_READONLY and MPI_T_cvar_write answers
//! MPI_T_ERR_CVAR_SET_NEVER. One category per framework (btl, btl_sm, btl_ib, mpi, memhook, btl_tcp).
//! The value read is the setting, not what auto sizing derives from it.

use std::ffi::{c_char, c_int, c_void, CStr};

use super::tool::{
    t_initialized, T_ERR_INVALID, T_ERR_INVALID_HANDLE, T_ERR_INVALID_INDEX, T_ERR_INVALID_NAME,
    T_ERR_NOT_INITIALIZED,
};
use super::*;

const T_ERR_CVAR_SET_NEVER: c_int = 1015;
const VERBOSITY_TUNER_BASIC: c_int = 0x11;
const BIND_NO_OBJECT: c_int = 1;
const SCOPE_READONLY: c_int = 2;
const UNSIGNED_LONG: usize = 0x20e;
const CHAR: usize = 0x243;
/// Room a string variable's handle asks for (its count).
const STRING_MAX: usize = 256;

use crate::mca_general::GENERAL;

struct Var {
    name: &'static str,
    default: &'static str,
    meaning: &'static str,
}

fn vars() -> Vec<Var> {
    let ib = btl_ib::PARAMS
        .iter()
        .map(|p| (p.name, p.default, p.meaning));
    let sm = btl_sm::PARAMS
        .iter()
        .map(|p| (p.name, p.default, p.meaning));
    let tcp = btl_tcp::PARAMS
        .iter()
        .map(|p| (p.name, p.default, p.meaning));
    ib.chain(sm)
        .chain(tcp)
        .chain(GENERAL.iter().copied())
        .map(|(name, default, meaning)| Var {
            name,
            default,
            meaning,
        })
        .collect()
}

/// The categories: (name, description); a variable belongs to the one `category_of` names.
const CATEGORIES: &[(&str, &str)] = &[
    (
        "btl",
        "transport selection and transport-independent settings",
    ),
    ("btl_sm", "the shared-memory transport (btl-sm)"),
    ("btl_ib", "the RDMA transport (btl-ib)"),
    ("mpi", "the MPI library's own behaviour"),
    ("memhook", "memory-release events (memhook)"),
    ("btl_tcp", "the TCP transport (btl-tcp)"),
];

fn category_of(name: &str) -> usize {
    if name.starts_with("btl_sm_") {
        1
    } else if name.starts_with("btl_ib_") {
        2
    } else if name.starts_with("btl_tcp_") {
        5
    } else if name.starts_with("btl") {
        0
    } else if name.starts_with("memhook") {
        4
    } else {
        3
    }
}

fn numeric(v: &Var) -> bool {
    v.default.parse::<u64>().is_ok()
}

fn value(v: &Var) -> String {
    std::env::var(format!("RMPI_MCA_{}", v.name))
        .ok()
        .or_else(|| std::env::var(v.name).ok())
        .unwrap_or_else(|| v.default.to_string())
}

/// Copy `s` into a C string buffer the MPI_T way: with `buf` NULL or `*len` 0 only the length
/// (with the NUL) is given back; else as much as fits, NUL-terminated, and `*len` says how
/// much was stored.
///
/// # Safety
/// `len` is NULL or a writable int; `buf` NULL or `*len` writable chars.
unsafe fn put_str(s: &str, buf: *mut c_char, len: *mut c_int) {
    if len.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    unsafe {
        if buf.is_null() || *len <= 0 {
            *len = s.len() as c_int + 1;
            return;
        }
        let n = s.len().min(*len as usize - 1);
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
        *len = n as c_int + 1;
    }
}

/// # Safety
/// `p` is NULL or writable.
unsafe fn put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: the caller's contract.
        unsafe { p.write(v) };
    }
}

fn index(i: c_int, n: usize) -> Option<usize> {
    usize::try_from(i).ok().filter(|&i| i < n)
}

/// # Safety
/// `name` is NULL or a NUL-terminated string.
unsafe fn name_of<'a>(name: *const c_char) -> Option<&'a str> {
    if name.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(name) }.to_str().ok()
}

mpi_fn! {
    fn MPI_T_cvar_get_num / PMPI_T_cvar_get_num(num_cvar: *mut c_int) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        if num_cvar.is_null() {
            return T_ERR_INVALID;
        }
        // SAFETY: checked non-NULL.
        unsafe { num_cvar.write(vars().len() as c_int) };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_T_cvar_get_info / PMPI_T_cvar_get_info(cvar_index: c_int, name: *mut c_char, name_len: *mut c_int,
        verbosity: *mut c_int, datatype: *mut Handle, enumtype: *mut Handle, desc: *mut c_char,
        desc_len: *mut c_int, bind: *mut c_int, scope: *mut c_int) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        let vs = vars();
        let Some(i) = index(cvar_index, vs.len()) else {
            return T_ERR_INVALID_INDEX;
        };
        let v = &vs[i];
        // SAFETY: the standard's contract: each output is NULL or writable (strings: `*len`
        // chars).
        unsafe {
            put_str(v.name, name, name_len);
            put_str(v.meaning, desc, desc_len);
            put(verbosity, VERBOSITY_TUNER_BASIC);
            put(datatype, (if numeric(v) { UNSIGNED_LONG } else { CHAR }) as Handle);
            put(enumtype, std::ptr::null_mut());
            put(bind, BIND_NO_OBJECT);
            put(scope, SCOPE_READONLY);
        }
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_T_cvar_get_index / PMPI_T_cvar_get_index(name: *const c_char, cvar_index: *mut c_int) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        // SAFETY: the caller passes a C string.
        let Some(n) = (unsafe { name_of(name) }) else {
            return T_ERR_INVALID;
        };
        if cvar_index.is_null() {
            return T_ERR_INVALID;
        }
        match vars().iter().position(|v| v.name == n) {
            // SAFETY: checked non-NULL.
            Some(i) => unsafe { cvar_index.write(i as c_int); MPI_SUCCESS },
            None => T_ERR_INVALID_NAME,
        }
    }
}

mpi_fn! {
    fn MPI_T_cvar_handle_alloc / PMPI_T_cvar_handle_alloc(cvar_index: c_int, _obj_handle: *mut c_void, handle: *mut Handle, count: *mut c_int) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        let vs = vars();
        let Some(i) = index(cvar_index, vs.len()) else {
            return T_ERR_INVALID_INDEX;
        };
        if handle.is_null() || count.is_null() {
            return T_ERR_INVALID;
        }
        // A handle is the index + 1 (0 is MPI_T_CVAR_HANDLE_NULL): nothing to allocate.
        // SAFETY: both checked non-NULL.
        unsafe {
            handle.write((i + 1) as Handle);
            count.write(if numeric(&vs[i]) { 1 } else { STRING_MAX as c_int });
        }
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_T_cvar_handle_free / PMPI_T_cvar_handle_free(handle: *mut Handle) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        if handle.is_null() {
            return T_ERR_INVALID;
        }
        // SAFETY: checked non-NULL.
        unsafe {
            if handle_var(*handle).is_none() {
                return T_ERR_INVALID_HANDLE;
            }
            handle.write(std::ptr::null_mut());
        }
        MPI_SUCCESS
    }
}

fn handle_var(h: Handle) -> Option<Var> {
    let i = (h as usize).checked_sub(1)?;
    vars().into_iter().nth(i)
}

mpi_fn! {
    fn MPI_T_cvar_read / PMPI_T_cvar_read(handle: Handle, buf: *mut c_void) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        let Some(v) = handle_var(handle) else {
            return T_ERR_INVALID_HANDLE;
        };
        if buf.is_null() {
            return T_ERR_INVALID;
        }
        let val = value(&v);
        if numeric(&v) {
            // A setting that is not a number (a typo) reads as the default.
            let n = val.trim().parse::<u64>().unwrap_or_else(|_| v.default.parse().unwrap_or(0));
            // SAFETY: the handle's count is 1 MPI_UNSIGNED_LONG; the caller's buffer holds it.
            unsafe { buf.cast::<u64>().write_unaligned(n) };
        } else {
            let mut len = STRING_MAX as c_int;
            // SAFETY: the handle's count is STRING_MAX chars; the caller's buffer holds them.
            unsafe { put_str(&val, buf.cast(), &mut len) };
        }
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_T_cvar_write / PMPI_T_cvar_write(handle: Handle, _buf: *const c_void) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        if handle_var(handle).is_none() {
            return T_ERR_INVALID_HANDLE;
        }
        T_ERR_CVAR_SET_NEVER
    }
}

mpi_fn! {
    fn MPI_T_enum_get_info / PMPI_T_enum_get_info(_enumtype: Handle, _num: *mut c_int, _name: *mut c_char, _name_len: *mut c_int) -> c_int {
        // No variable has an enumeration type.
        if !t_initialized() { T_ERR_NOT_INITIALIZED } else { T_ERR_INVALID_HANDLE }
    }
}

mpi_fn! {
    fn MPI_T_enum_get_item / PMPI_T_enum_get_item(_enumtype: Handle, _indx: c_int, _value: *mut c_int, _name: *mut c_char, _name_len: *mut c_int) -> c_int {
        if !t_initialized() { T_ERR_NOT_INITIALIZED } else { T_ERR_INVALID_HANDLE }
    }
}

mpi_fn! {
    fn MPI_T_category_get_num / PMPI_T_category_get_num(num_cat: *mut c_int) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        if num_cat.is_null() {
            return T_ERR_INVALID;
        }
        // SAFETY: checked non-NULL.
        unsafe { num_cat.write(CATEGORIES.len() as c_int) };
        MPI_SUCCESS
    }
}

/// The indices of the variables in category `c`.
fn members(c: usize) -> Vec<usize> {
    vars()
        .iter()
        .enumerate()
        .filter(|(_, v)| category_of(v.name) == c)
        .map(|(i, _)| i)
        .collect()
}

mpi_fn! {
    fn MPI_T_category_get_info / PMPI_T_category_get_info(cat_index: c_int, name: *mut c_char, name_len: *mut c_int,
        desc: *mut c_char, desc_len: *mut c_int, num_cvars: *mut c_int, num_pvars: *mut c_int,
        num_categories: *mut c_int) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        let Some(c) = index(cat_index, CATEGORIES.len()) else {
            return T_ERR_INVALID_INDEX;
        };
        // SAFETY: the standard's contract: each output is NULL or writable.
        unsafe {
            put_str(CATEGORIES[c].0, name, name_len);
            put_str(CATEGORIES[c].1, desc, desc_len);
            put(num_cvars, members(c).len() as c_int);
            put(num_pvars, 0);
            put(num_categories, 0);
        }
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_T_category_get_index / PMPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        // SAFETY: the caller passes a C string.
        let Some(n) = (unsafe { name_of(name) }) else {
            return T_ERR_INVALID;
        };
        if cat_index.is_null() {
            return T_ERR_INVALID;
        }
        match CATEGORIES.iter().position(|c| c.0 == n) {
            // SAFETY: checked non-NULL.
            Some(i) => unsafe { cat_index.write(i as c_int); MPI_SUCCESS },
            None => T_ERR_INVALID_NAME,
        }
    }
}

/// Write up to `len` of `items` into `indices`.
///
/// # Safety
/// `indices` holds `len` writable ints (or `len` is 0).
unsafe fn list(items: &[usize], len: c_int, indices: *mut c_int) -> c_int {
    if len < 0 || (len > 0 && indices.is_null()) {
        return T_ERR_INVALID;
    }
    for (k, &i) in items.iter().take(len as usize).enumerate() {
        // SAFETY: k < len: the caller's contract.
        unsafe { indices.add(k).write(i as c_int) };
    }
    MPI_SUCCESS
}

/// A category's list call for `items(c)`.
fn category_list(
    cat_index: c_int,
    len: c_int,
    indices: *mut c_int,
    items: fn(usize) -> Vec<usize>,
) -> c_int {
    if !t_initialized() {
        return T_ERR_NOT_INITIALIZED;
    }
    let Some(c) = index(cat_index, CATEGORIES.len()) else {
        return T_ERR_INVALID_INDEX;
    };
    // SAFETY: the caller passes `len` writable ints.
    unsafe { list(&items(c), len, indices) }
}

mpi_fn! {
    fn MPI_T_category_get_cvars / PMPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
        category_list(cat_index, len, indices, members)
    }
}

mpi_fn! {
    fn MPI_T_category_get_pvars / PMPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
        category_list(cat_index, len, indices, |_| Vec::new())
    }
}

mpi_fn! {
    fn MPI_T_category_get_categories / PMPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
        category_list(cat_index, len, indices, |_| Vec::new())
    }
}

mpi_fn! {
    fn MPI_T_category_get_events / PMPI_T_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
        category_list(cat_index, len, indices, |_| Vec::new())
    }
}

mpi_fn! {
    fn MPI_T_category_get_num_events / PMPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        if index(cat_index, CATEGORIES.len()).is_none() {
            return T_ERR_INVALID_INDEX;
        }
        if num_events.is_null() {
            return T_ERR_INVALID;
        }
        // SAFETY: checked non-NULL.
        unsafe { num_events.write(0) };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_T_category_changed / PMPI_T_category_changed(update_number: *mut c_int) -> c_int {
        if !t_initialized() {
            return T_ERR_NOT_INITIALIZED;
        }
        if update_number.is_null() {
            return T_ERR_INVALID;
        }
        // Categories never change.
        // SAFETY: checked non-NULL.
        unsafe { update_number.write(0) };
        MPI_SUCCESS
    }
}
