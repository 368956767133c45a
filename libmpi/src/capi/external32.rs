//! MPI_Pack_external, MPI_Unpack_external and MPI_Pack_external_size ("external32" only):
//! the conversion is `datatype::external32`; this module checks the arguments and moves the
//! bytes between the user's buffers and the packed stream.

use std::ffi::{c_char, c_void, CStr};

use super::*;
use crate::datatype::external32::{self, Seq};
use crate::datatype::{table, Layout};

fn dcall(name: &str, f: impl FnOnce() -> Result<()>) -> std::ffi::c_int {
    match running().and_then(|()| f()) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => fail(name, crate::comm::WORLD, e),
    }
}

fn check_rep(datarep: *const c_char) -> Result<()> {
    if datarep.is_null() {
        return Err(Error::new(ErrorClass::Arg, "datarep is NULL"));
    }
    // SAFETY: checked non-NULL; the caller passes a NUL-terminated string.
    let r = unsafe { CStr::from_ptr(datarep) };
    if r.to_bytes() != b"external32" {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("data representation {r:?} is not \"external32\""),
        ));
    }
    Ok(())
}

/// The element sequence and (native, external32) sizes of one element of `dt`.
pub(super) fn shape(dt: Handle) -> Result<(Seq, usize, usize)> {
    let h = dt as usize;
    let seq = match crate::datatype::lookup(h) {
        Some(d) => external32::sequence(&Layout::predefined(h, d.size), None, h)?,
        None => {
            let l = table::layout(h)?;
            let c = table::contents(h)?;
            external32::sequence(&l, c.as_deref(), h)?
        }
    };
    let (nat, ext) = external32::sizes(&seq)?;
    Ok((seq, nat, ext))
}

fn count_of(c: Count) -> Result<usize> {
    usize::try_from(c).map_err(|_| Error::new(ErrorClass::Count, format!("count {c} is negative")))
}

/// Pack `incount` elements at `inbuf` into `outbuf[*pos..]`; returns the new position.
///
/// # Safety
/// The buffers are valid as MPI_Pack_external requires.
unsafe fn pack(
    inbuf: *const c_void,
    incount: Count,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: usize,
    pos: usize,
) -> Result<usize> {
    let m = message_c(inbuf, incount, dt)?;
    let n = count_of(incount)?;
    let (seq, nat, ext) = shape(dt)?;
    debug_assert_eq!(nat * n, m.len);
    let total = ext
        .checked_mul(n)
        .ok_or_else(|| Error::new(ErrorClass::Count, "size overflows"))?;
    if pos.checked_add(total).is_none_or(|e| e > outsize) {
        return Err(Error::new(
            ErrorClass::Truncate,
            format!("packing {total} bytes at position {pos} overruns the {outsize}-byte buffer"),
        ));
    }
    if total == 0 {
        return Ok(pos);
    }
    if outbuf.is_null() {
        return Err(Error::new(ErrorClass::Buffer, "outbuf is NULL"));
    }
    let mut native = vec![0u8; m.len];
    // SAFETY: the message's bytes are the caller's readable input (message_c checked it).
    unsafe { m.read(0, &mut native) };
    // SAFETY: pos + total <= outsize, the caller's buffer.
    let out = unsafe { std::slice::from_raw_parts_mut(outbuf.cast::<u8>().add(pos), total) };
    external32::convert(&seq, n, &native, out, true);
    Ok(pos + total)
}

/// Unpack `outcount` elements from `inbuf[*pos..]` into `outbuf`; returns the new position.
///
/// # Safety
/// As MPI_Unpack_external requires.
unsafe fn unpack(
    inbuf: *const c_void,
    insize: usize,
    pos: usize,
    outbuf: *mut c_void,
    outcount: Count,
    dt: Handle,
) -> Result<usize> {
    let m = message_c(outbuf, outcount, dt)?;
    let n = count_of(outcount)?;
    let (seq, _, ext) = shape(dt)?;
    let total = ext
        .checked_mul(n)
        .ok_or_else(|| Error::new(ErrorClass::Count, "size overflows"))?;
    if pos.checked_add(total).is_none_or(|e| e > insize) {
        return Err(Error::new(
            ErrorClass::Truncate,
            format!(
                "unpacking {total} bytes at position {pos} reads past the {insize}-byte buffer"
            ),
        ));
    }
    if total == 0 {
        return Ok(pos);
    }
    if inbuf.is_null() {
        return Err(Error::new(ErrorClass::Buffer, "inbuf is NULL"));
    }
    // SAFETY: pos + total <= insize, the caller's buffer.
    let src = unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>().add(pos), total) };
    let mut native = vec![0u8; m.len];
    external32::convert(&seq, n, src, &mut native, false);
    // SAFETY: the message's bytes are the caller's writable output.
    unsafe { m.write(0, &native) };
    Ok(pos + total)
}

/// Read a position, run `f`, write the new one back.
///
/// # Safety
/// `position` is NULL or a valid pointer.
unsafe fn at_position<T: Copy + TryInto<usize> + TryFrom<usize>>(
    position: *mut T,
    f: impl FnOnce(usize) -> Result<usize>,
) -> Result<()> {
    if position.is_null() {
        return Err(Error::new(ErrorClass::Arg, "position is NULL"));
    }
    // SAFETY: checked non-NULL.
    let p = unsafe { *position }
        .try_into()
        .map_err(|_| Error::new(ErrorClass::Arg, "position is negative"))?;
    let np = f(p)?;
    let np = T::try_from(np).map_err(|_| Error::new(ErrorClass::Count, "position overflows"))?;
    // SAFETY: as above.
    unsafe { *position = np };
    Ok(())
}

fn size_of(v: impl TryInto<usize>, what: &str) -> Result<usize> {
    v.try_into()
        .map_err(|_| Error::new(ErrorClass::Arg, format!("{what} is negative")))
}

mpi_fn! {
    fn MPI_Pack_external / PMPI_Pack_external(datarep: *const c_char, inbuf: *const c_void, incount: std::ffi::c_int, datatype: Handle, outbuf: *mut c_void, outsize: Aint, position: *mut Aint) -> std::ffi::c_int {
        dcall("MPI_Pack_external", || {
            check_rep(datarep)?;
            let outsize = size_of(outsize, "outsize")?;
            // SAFETY: the call's contract on every pointer.
            unsafe { at_position(position, |p| pack(inbuf, incount.into(), datatype, outbuf, outsize, p)) }
        })
    }
}

mpi_fn! {
    fn MPI_Pack_external_c / PMPI_Pack_external_c(datarep: *const c_char, inbuf: *const c_void, incount: Count, datatype: Handle, outbuf: *mut c_void, outsize: Count, position: *mut Count) -> std::ffi::c_int {
        dcall("MPI_Pack_external_c", || {
            check_rep(datarep)?;
            let outsize = size_of(outsize, "outsize")?;
            // SAFETY: the call's contract on every pointer.
            unsafe { at_position(position, |p| pack(inbuf, incount, datatype, outbuf, outsize, p)) }
        })
    }
}

mpi_fn! {
    fn MPI_Unpack_external / PMPI_Unpack_external(datarep: *const c_char, inbuf: *const c_void, insize: Aint, position: *mut Aint, outbuf: *mut c_void, outcount: std::ffi::c_int, datatype: Handle) -> std::ffi::c_int {
        dcall("MPI_Unpack_external", || {
            check_rep(datarep)?;
            let insize = size_of(insize, "insize")?;
            // SAFETY: the call's contract on every pointer.
            unsafe { at_position(position, |p| unpack(inbuf, insize, p, outbuf, outcount.into(), datatype)) }
        })
    }
}

mpi_fn! {
    fn MPI_Unpack_external_c / PMPI_Unpack_external_c(datarep: *const c_char, inbuf: *const c_void, insize: Count, position: *mut Count, outbuf: *mut c_void, outcount: Count, datatype: Handle) -> std::ffi::c_int {
        dcall("MPI_Unpack_external_c", || {
            check_rep(datarep)?;
            let insize = size_of(insize, "insize")?;
            // SAFETY: the call's contract on every pointer.
            unsafe { at_position(position, |p| unpack(inbuf, insize, p, outbuf, outcount, datatype)) }
        })
    }
}

fn external_size(datarep: *const c_char, count: Count, dt: Handle) -> Result<usize> {
    check_rep(datarep)?;
    let (_, _, ext) = shape(dt)?;
    ext.checked_mul(count_of(count)?)
        .ok_or_else(|| Error::new(ErrorClass::Count, "size overflows"))
}

mpi_fn! {
    fn MPI_Pack_external_size / PMPI_Pack_external_size(datarep: *const c_char, incount: std::ffi::c_int, datatype: Handle, size: *mut Aint) -> std::ffi::c_int {
        dcall("MPI_Pack_external_size", || {
            if size.is_null() {
                return Err(Error::new(ErrorClass::Arg, "size is NULL"));
            }
            let n = external_size(datarep, incount.into(), datatype)?;
            // SAFETY: checked non-NULL.
            unsafe { *size = n as Aint };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Pack_external_size_c / PMPI_Pack_external_size_c(datarep: *const c_char, incount: Count, datatype: Handle, size: *mut Count) -> std::ffi::c_int {
        dcall("MPI_Pack_external_size_c", || {
            if size.is_null() {
                return Err(Error::new(ErrorClass::Arg, "size is NULL"));
            }
            let n = external_size(datarep, incount, datatype)?;
            // SAFETY: checked non-NULL.
            unsafe { *size = n as Count };
            Ok(())
        })
    }
}
