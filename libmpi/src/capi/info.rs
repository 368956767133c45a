//! Info objects in the C ABI (MPI_Info_*), MPI_Comm_set_info / MPI_Comm_get_info, and the check
//! every call taking an info argument makes. Handles: MPI_INFO_ENV, and ours at
//! `INFO_BASE + slot` of `crate::info`'s table. These calls work before MPI_Init and after
//! MPI_Finalize, as the standard allows; their errors go to MPI_COMM_WORLD's handler.

use std::ffi::{c_char, c_int, CStr};

use super::comm::outside;
use super::*;
use crate::info::{self, Info};

pub(super) const INFO_NULL: usize = 0x130;
const INFO_ENV: usize = 0x131;
/// Info handles: `INFO_BASE + slot`, below `INFO_BASE + KIND_SPAN` (fits an int for MPI_Info_toint).
const INFO_BASE: usize = 0x4000_0000;
const KIND_SPAN: usize = 0x1000_0000;

fn slot_of(h: Handle) -> Result<usize> {
    match h as usize {
        INFO_NULL => Err(Error::new(
            ErrorClass::Info,
            "MPI_INFO_NULL is not a valid info object here",
        )),
        INFO_ENV => Err(Error::new(
            ErrorClass::Info,
            "MPI_INFO_ENV is predefined: it cannot be changed or freed",
        )),
        v if (INFO_BASE..INFO_BASE + KIND_SPAN).contains(&v) => Ok(v - INFO_BASE),
        v => Err(Error::new(
            ErrorClass::Info,
            format!("{v:#x} is not an info handle"),
        )),
    }
}

/// A copy of the info behind a handle (MPI_INFO_ENV included; MPI_INFO_NULL is an error).
fn info_of(h: Handle) -> Result<Info> {
    match h as usize {
        INFO_ENV => Ok(info::env()),
        _ => info::get(slot_of(h)?),
    }
}

/// The hints an info argument gives: none for MPI_INFO_NULL, an error for an invalid handle.
/// Every call that takes an info argument goes through here, so a bad one is never ignored.
pub(super) fn hints(h: Handle) -> Result<Info> {
    match h as usize {
        INFO_NULL => Ok(Info::new()),
        _ => info_of(h),
    }
}

pub(super) fn new_handle(i: Info) -> Handle {
    (INFO_BASE + info::add(i)) as Handle
}

fn out_ptr<T>(p: *mut T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{what} pointer is NULL"),
        ));
    }
    Ok(())
}

/// A NUL-terminated key or value argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<std::borrow::Cow<'a, str>> {
    if p.is_null() {
        let class = if what == "key" {
            ErrorClass::InfoKey
        } else {
            ErrorClass::InfoValue
        };
        return Err(Error::new(class, format!("the {what} is NULL")));
    }
    // SAFETY: guaranteed by the caller, checked non-NULL.
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy())
}

/// Copy at most `max` bytes of `s` to `out`, then a NUL.
///
/// # Safety
/// `out` points to at least `min(s.len(), max) + 1` writable bytes.
unsafe fn put_str(out: *mut c_char, s: &str, max: usize) {
    let n = s.len().min(max);
    // SAFETY: guaranteed by the caller; the source is `n` bytes of `s`.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), out, n);
        *out.add(n) = 0;
    }
}

mpi_fn! {
    fn MPI_Info_create / PMPI_Info_create(info: *mut Handle) -> c_int {
        outside("MPI_Info_create", crate::comm::WORLD, || {
            out_ptr(info, "info")?;
            // SAFETY: checked non-NULL.
            unsafe { info.write(new_handle(Info::new())) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Info_create_env / PMPI_Info_create_env(argc: c_int, argv: *mut *mut c_char, info: *mut Handle) -> c_int {
        outside("MPI_Info_create_env", crate::comm::WORLD, || {
            out_ptr(info, "info")?;
            let args = if argv.is_null() || argc <= 0 {
                None
            } else {
                let mut v = Vec::new();
                for i in 0..argc as usize {
                    // SAFETY: the standard's argv: argc entries, each NULL or a C string.
                    let a = unsafe { *argv.add(i) };
                    if a.is_null() {
                        break;
                    }
                    // SAFETY: a NUL-terminated argument string.
                    v.push(unsafe { CStr::from_ptr(a) }.to_string_lossy().into_owned());
                }
                Some(v)
            };
            // SAFETY: checked non-NULL.
            unsafe { info.write(new_handle(Info::env(args))) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Info_dup / PMPI_Info_dup(info: Handle, newinfo: *mut Handle) -> c_int {
        outside("MPI_Info_dup", crate::comm::WORLD, || {
            let i = info_of(info)?;
            out_ptr(newinfo, "newinfo")?;
            // SAFETY: checked non-NULL.
            unsafe { newinfo.write(new_handle(i)) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Info_free / PMPI_Info_free(info: *mut Handle) -> c_int {
        outside("MPI_Info_free", crate::comm::WORLD, || {
            out_ptr(info, "info")?;
            // SAFETY: checked non-NULL; the caller's MPI_Info.
            let slot = slot_of(unsafe { *info })?;
            info::free(slot)?;
            // SAFETY: as above.
            unsafe { info.write(INFO_NULL as Handle) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Info_set / PMPI_Info_set(info: Handle, key: *const c_char, value: *const c_char) -> c_int {
        outside("MPI_Info_set", crate::comm::WORLD, || {
            let slot = slot_of(info)?;
            // SAFETY: the standard's C strings.
            let (k, v) = unsafe { (c_str(key, "key")?, c_str(value, "value")?) };
            info::with(slot, |i| i.set(&k, &v))
        })
    }
}

mpi_fn! {
    fn MPI_Info_delete / PMPI_Info_delete(info: Handle, key: *const c_char) -> c_int {
        outside("MPI_Info_delete", crate::comm::WORLD, || {
            let slot = slot_of(info)?;
            // SAFETY: the standard's C string.
            let k = unsafe { c_str(key, "key")? };
            info::with(slot, |i| i.delete(&k))
        })
    }
}

/// Look `key` up in `info`: its value, or None. Writes `flag` (checked non-NULL).
///
/// # Safety
/// `key` is NULL or a C string; `flag` is NULL or writable.
unsafe fn lookup(info: Handle, key: *const c_char, flag: *mut c_int) -> Result<Option<String>> {
    let i = info_of(info)?;
    // SAFETY: guaranteed by the caller.
    let k = unsafe { c_str(key, "key")? };
    out_ptr(flag, "flag")?;
    let v = i.get(&k)?.map(str::to_string);
    // SAFETY: checked non-NULL.
    unsafe { flag.write(v.is_some() as c_int) };
    Ok(v)
}

mpi_fn! {
    /// MPI_Info_get (deprecated in MPI-4, still in the ABI): at most `valuelen` bytes and a NUL.
    fn MPI_Info_get / PMPI_Info_get(info: Handle, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
        outside("MPI_Info_get", crate::comm::WORLD, || {
            if valuelen < 0 {
                return Err(Error::new(ErrorClass::Arg, format!("valuelen {valuelen} is negative")));
            }
            // SAFETY: the standard's arguments.
            if let Some(v) = unsafe { lookup(info, key, flag)? } {
                out_ptr(value, "value")?;
                // SAFETY: the caller's buffer holds valuelen + 1 bytes.
                unsafe { put_str(value, &v, valuelen as usize) };
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Info_get_valuelen / PMPI_Info_get_valuelen(info: Handle, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int) -> c_int {
        outside("MPI_Info_get_valuelen", crate::comm::WORLD, || {
            out_ptr(valuelen, "valuelen")?;
            // SAFETY: the standard's arguments.
            if let Some(v) = unsafe { lookup(info, key, flag)? } {
                // SAFETY: checked non-NULL.
                unsafe { valuelen.write(v.len() as c_int) };
            }
            Ok(())
        })
    }
}

mpi_fn! {
    /// MPI-4: `*buflen` in is the buffer's size (0: just ask); out, the value's length plus one.
    fn MPI_Info_get_string / PMPI_Info_get_string(info: Handle, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
        outside("MPI_Info_get_string", crate::comm::WORLD, || {
            out_ptr(buflen, "buflen")?;
            // SAFETY: checked non-NULL.
            let len = unsafe { *buflen };
            if len < 0 {
                return Err(Error::new(ErrorClass::Arg, format!("buflen {len} is negative")));
            }
            // SAFETY: the standard's arguments.
            if let Some(v) = unsafe { lookup(info, key, flag)? } {
                if len > 0 {
                    out_ptr(value, "value")?;
                    // SAFETY: the caller's buffer holds `len` bytes.
                    unsafe { put_str(value, &v, len as usize - 1) };
                }
                // SAFETY: checked non-NULL.
                unsafe { buflen.write(v.len() as c_int + 1) };
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Info_get_nkeys / PMPI_Info_get_nkeys(info: Handle, nkeys: *mut c_int) -> c_int {
        outside("MPI_Info_get_nkeys", crate::comm::WORLD, || {
            let i = info_of(info)?;
            out_ptr(nkeys, "nkeys")?;
            // SAFETY: checked non-NULL.
            unsafe { nkeys.write(i.nkeys() as c_int) };
            Ok(())
        })
    }
}

mpi_fn! {
    /// `key` must hold MPI_MAX_INFO_KEY bytes.
    fn MPI_Info_get_nthkey / PMPI_Info_get_nthkey(info: Handle, n: c_int, key: *mut c_char) -> c_int {
        outside("MPI_Info_get_nthkey", crate::comm::WORLD, || {
            let i = info_of(info)?;
            let k = i.nthkey(n)?;
            out_ptr(key, "key")?;
            // SAFETY: the caller's buffer holds MPI_MAX_INFO_KEY (MAX_KEY + 1) bytes.
            unsafe { put_str(key, k, info::MAX_KEY) };
            Ok(())
        })
    }
}

mpi_fn! {
    /// Hints in `info` are added to the communicator's (those not named keep their values).
    fn MPI_Comm_set_info / PMPI_Comm_set_info(comm: Handle, info: Handle) -> c_int {
        let c = comm_index(comm).unwrap_or(crate::comm::WORLD);
        call("MPI_Comm_set_info", c, |rt| {
            let c = comm_index(comm)?;
            rt.comm(c)?;
            let h = info_of(info)?;
            rt.comm_mut(c)?.info.merge(&h);
            Ok(())
        })
    }
}

mpi_fn! {
    /// A new info object holding the communicator's hints (the user frees it).
    fn MPI_Comm_get_info / PMPI_Comm_get_info(comm: Handle, info_used: *mut Handle) -> c_int {
        let c = comm_index(comm).unwrap_or(crate::comm::WORLD);
        call("MPI_Comm_get_info", c, |rt| {
            let c = comm_index(comm)?;
            out_ptr(info_used, "info_used")?;
            let i = rt.comm(c)?.info.clone();
            // SAFETY: checked non-NULL.
            unsafe { info_used.write(new_handle(i)) };
            Ok(())
        })
    }
}

mpi_fn! {
    /// MPI-4.1: a new info describing the hardware. Its keys are the implementation's choice;
    /// rmpi describes none yet, so the object is empty (the caller frees it).
    fn MPI_Get_hw_resource_info / PMPI_Get_hw_resource_info(hw_info: *mut Handle) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Get_hw_resource_info", crate::comm::WORLD, e);
        }
        outside("MPI_Get_hw_resource_info", crate::comm::WORLD, || {
            out_ptr(hw_info, "hw_info")?;
            // SAFETY: checked non-NULL.
            unsafe { hw_info.write(new_handle(Info::new())) };
            Ok(())
        })
    }
}
