//! Datatype calls of the C ABI: constructors, commit/free, size and extent queries, names,
//! pack/unpack, and `message`, the one point where a (buffer, count, datatype) triple becomes
//! the message the pml moves.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Arc;

use super::*;
use crate::datatype::contents::{combiner::*, Contents};
use crate::datatype::{table, Layout, Msg};
use crate::error::err;

const ORDER_C: c_int = 0xC;
const ORDER_FORTRAN: c_int = 0xF;
const MAX_OBJECT_NAME: usize = 128;

/// The message `count` elements of `datatype` at `buf` make, checking all three. Predefined
/// types (and derived ones whose elements form one run) become a plain byte range: no
/// allocation, no reference count. A derived type must be committed.
#[inline]
pub(crate) fn message_c(buf: *const c_void, count: Count, datatype: Handle) -> Result<Msg> {
    // The common case inline (a predefined type, a valid buffer); everything else, errors
    // included, in `message_general`.
    match plain_bytes(buf, count, datatype) {
        Some(n) => Ok(Msg::bytes(buf.cast(), n)),
        None => message_general(buf, count, datatype),
    }
}

/// Bytes of `count` elements of a predefined `datatype` at a valid `buf`; None for anything
/// else (derived types, errors), which `message_general` handles.
#[inline(always)]
pub(crate) fn plain_bytes(buf: *const c_void, count: Count, datatype: Handle) -> Option<usize> {
    let h = datatype as usize;
    if count < 0 || matches!(h, 0x229 | 0x22a | 0x22c | 0x22d) {
        return None;
    }
    let n = (count as usize).checked_mul(crate::datatype::lookup(h)?.size)?;
    (n <= MAX_BYTES && (!buf.is_null() || n == 0)).then_some(n)
}

#[inline(never)]
fn message_general(buf: *const c_void, count: Count, datatype: Handle) -> Result<Msg> {
    if count < 0 {
        return Err(Error::new(
            ErrorClass::Count,
            format!("count {count} is negative"),
        ));
    }
    let h = datatype as usize;
    if count == 0 && h == table::DATATYPE_NULL {
        // Nothing to move (a receive from MPI_PROC_NULL, say): no type is needed.
        return Ok(Msg::bytes(buf.cast(), 0));
    }
    let layout = match crate::datatype::lookup(h) {
        // The MINLOC/MAXLOC pairs with padding inside go through their layout.
        Some(dt) if !matches!(h, 0x229 | 0x22a | 0x22c | 0x22d) => {
            let n = byte_len(count as usize, dt.size)?;
            if buf.is_null() && n > 0 {
                return Err(Error::new(
                    ErrorClass::Buffer,
                    "buffer is NULL but the count is not zero",
                ));
            }
            return Ok(Msg::bytes(buf.cast(), n));
        }
        Some(_) => table::layout(h)?,
        // A NULL buffer is MPI_BOTTOM here: the type's displacements are absolute addresses.
        None => table::committed(h)?,
    };
    byte_len(count as usize, layout.size())?;
    // The elements must also lie within the address space: count x extent within isize.
    if layout.span(count as usize).is_none() {
        return Err(Error::new(
            ErrorClass::Count,
            format!(
                "count {count} x extent {} overflows the address space",
                layout.extent()
            ),
        ));
    }
    let m = Msg::typed(buf.cast(), count as usize, &layout);
    if m.is_contiguous() && m.ptr.is_null() && m.len > 0 {
        return Err(Error::new(
            ErrorClass::Buffer,
            "buffer is NULL (and the datatype's data starts at displacement 0)",
        ));
    }
    Ok(m)
}

fn too_large() -> Error {
    Error::new(ErrorClass::Count, "message size overflows")
}

/// The most bytes one message (or buffer) may hold: Rust's limit on one object, isize::MAX.
/// The pml and the schedules carry 64-bit lengths; a count beyond this is MPI_ERR_COUNT.
pub(crate) const MAX_BYTES: usize = isize::MAX as usize;

/// Bytes of `count` elements of `size` bytes each, at most MAX_BYTES.
pub(crate) fn byte_len(count: usize, size: usize) -> Result<usize> {
    match count.checked_mul(size) {
        Some(n) if n <= MAX_BYTES => Ok(n),
        _ => Err(Error::new(
            ErrorClass::Count,
            format!(
                "count {count} of a {size}-byte datatype exceeds the largest message rmpi supports ({MAX_BYTES} bytes, isize::MAX)"
            ),
        )),
    }
}

/// Bytes of `count` elements for calls that move a raw buffer (no datatype layout): predefined
/// types, and derived ones whose data is one run from the buffer start. Other derived types are
/// refused rather than sent as the wrong bytes.
#[allow(dead_code)] // for raw-buffer calls outside point-to-point and collectives
pub(crate) fn contiguous_bytes(count: Count, datatype: Handle) -> Result<usize> {
    if count < 0 {
        return Err(Error::new(
            ErrorClass::Count,
            format!("count {count} is negative"),
        ));
    }
    let h = datatype as usize;
    if let Some(dt) =
        crate::datatype::lookup(h).filter(|_| !matches!(h, 0x229 | 0x22a | 0x22c | 0x22d))
    {
        return byte_len(count as usize, dt.size);
    }
    let layout = table::committed(h)?;
    byte_len(count as usize, layout.size())?;
    match layout.contiguous_run(count as usize) {
        Some((0, n)) => Ok(n),
        _ => Err(Error::new(
            ErrorClass::Type,
            "this call does not take non-contiguous datatypes yet; use MPI_Send/Recv/Isend/Irecv/Sendrecv or MPI_Pack",
        )),
    }
}

/// Bytes of data in one element of `datatype` (committed or not).
pub(crate) fn type_size(datatype: Handle) -> Result<usize> {
    match crate::datatype::lookup(datatype as usize) {
        Some(dt) if !matches!(datatype as usize, 0x229 | 0x22a | 0x22c | 0x22d) => Ok(dt.size),
        _ => Ok(table::layout(datatype as usize)?.size()),
    }
}

/// Run a datatype call; errors go to MPI_COMM_WORLD's handler (these calls need no runtime).
fn dcall(name: &str, f: impl FnOnce() -> Result<()>) -> c_int {
    match running().and_then(|()| f()) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => fail(name, crate::comm::WORLD, e),
    }
}

/// `n` elements at `p` (NULL is fine when n is 0).
///
/// # Safety
/// For n > 0 and `p` non-NULL, `p` points to `n` readable elements.
unsafe fn arr<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return err(ErrorClass::Arg, format!("{what} is NULL"));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Write `v` through `p`, refusing NULL.
///
/// # Safety
/// `p` is NULL or points to a writable `T`.
unsafe fn put<T>(p: *mut T, v: T, what: &str) -> Result<()> {
    if p.is_null() {
        return err(ErrorClass::Arg, format!("{what} is NULL"));
    }
    // SAFETY: checked non-NULL; the caller's contract.
    unsafe { p.write(v) };
    Ok(())
}

fn nonneg(v: Count, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::new(ErrorClass::Count, format!("{what} {v} is negative")))
}

fn widen<T: Copy + Into<Count>>(v: &[T]) -> Vec<Count> {
    v.iter().map(|&x| x.into()).collect()
}

fn aints(v: &[Aint]) -> Vec<Count> {
    v.iter().map(|&x| x as Count).collect()
}

/// A constructor's record for MPI_Type_get_contents.
fn rec(combiner: i32, ints: Vec<Count>, aints: Vec<Count>, types: &[Handle]) -> Result<Contents> {
    let types = types
        .iter()
        .map(|&t| table::type_arg(t as usize))
        .collect::<Result<Vec<_>>>()?;
    Ok(Contents::new(combiner, ints, aints, types))
}

/// The record of a `_c` constructor (large counts when an integer does not fit an int).
fn rec_c(combiner: i32, ints: Vec<Count>, aints: Vec<Count>, types: &[Handle]) -> Result<Contents> {
    rec(combiner, ints, aints, types).map(Contents::large_count)
}

/// `n` followed by the arrays, as the integer arguments of MPI_Type_get_contents.
fn cat(n: usize, parts: &[&[Count]]) -> Vec<Count> {
    let mut v = vec![n as Count];
    for p in parts {
        v.extend_from_slice(p);
    }
    v
}

fn old(h: Handle) -> Result<Arc<Layout>> {
    table::layout(h as usize)
}

/// Register `l` and store its handle through `newtype`.
///
/// # Safety
/// `newtype` is NULL or points to a writable MPI_Datatype.
unsafe fn create(newtype: *mut Handle, l: Result<Layout>, c: Result<Contents>) -> Result<()> {
    if newtype.is_null() {
        return err(ErrorClass::Arg, "newtype pointer is NULL");
    }
    let l = l?;
    let h = table::insert_with(Arc::new(l), Some(c?));
    // SAFETY: checked non-NULL above; the caller's contract.
    unsafe { put(newtype, h as Handle, "newtype") }
}

fn vector(count: Count, bl: Count, stride: Count, in_elems: bool, old_h: Handle) -> Result<Layout> {
    let o = old(old_h)?;
    let stride = if in_elems {
        (stride as isize)
            .checked_mul(o.extent())
            .ok_or_else(too_large)?
    } else {
        stride as isize
    };
    Layout::hvector(
        nonneg(count, "count")?,
        nonneg(bl, "blocklength")?,
        stride,
        &o,
    )
}

fn indexed(bls: &[Count], disps: &[Count], in_elems: bool, old_h: Handle) -> Result<Layout> {
    let o = old(old_h)?;
    let mut v = Vec::with_capacity(bls.len());
    for (&b, &d) in bls.iter().zip(disps) {
        let d = if in_elems {
            (d as isize).checked_mul(o.extent()).ok_or_else(too_large)?
        } else {
            d as isize
        };
        v.push((nonneg(b, "blocklength")?, d));
    }
    Layout::hindexed(&v, &o)
}

fn structure(bls: &[Count], disps: &[Count], types: &[Handle]) -> Result<Layout> {
    let layouts = types.iter().map(|&t| old(t)).collect::<Result<Vec<_>>>()?;
    let mut v = Vec::with_capacity(bls.len());
    for ((&b, &d), l) in bls.iter().zip(disps).zip(&layouts) {
        v.push((nonneg(b, "blocklength")?, d as isize, &**l));
    }
    Layout::structure(&v)
}

fn subarray(
    sizes: &[Count],
    subsizes: &[Count],
    starts: &[Count],
    order: c_int,
    old_h: Handle,
) -> Result<Layout> {
    let c_order = match order {
        ORDER_C => true,
        ORDER_FORTRAN => false,
        o => {
            return err(
                ErrorClass::Arg,
                format!("order {o:#x} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"),
            )
        }
    };
    let conv = |v: &[Count], what| {
        v.iter()
            .map(|&x| nonneg(x, what))
            .collect::<Result<Vec<_>>>()
    };
    Layout::subarray(
        &conv(sizes, "array size")?,
        &conv(subsizes, "subarray size")?,
        &conv(starts, "subarray start")?,
        c_order,
        &*old(old_h)?,
    )
}

// ---- constructors

mpi_fn! {
    fn MPI_Type_contiguous / PMPI_Type_contiguous(count: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int {
        // SAFETY: newtype per the standard.
        dcall("MPI_Type_contiguous", || unsafe {
            create(newtype, nonneg(count.into(), "count").and_then(|n| Layout::contiguous(n, &*old(oldtype)?)), rec(CONTIGUOUS, vec![count.into()], vec![], &[oldtype]))
        })
    }
}

mpi_fn! {
    fn MPI_Type_contiguous_c / PMPI_Type_contiguous_c(count: Count, oldtype: Handle, newtype: *mut Handle) -> c_int {
        // SAFETY: newtype per the standard.
        dcall("MPI_Type_contiguous_c", || unsafe {
            create(newtype, nonneg(count, "count").and_then(|n| Layout::contiguous(n, &*old(oldtype)?)), rec_c(CONTIGUOUS, vec![count], vec![], &[oldtype]))
        })
    }
}

mpi_fn! {
    fn MPI_Type_vector / PMPI_Type_vector(count: c_int, blocklength: c_int, stride: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int {
        // SAFETY: newtype per the standard.
        dcall("MPI_Type_vector", || unsafe {
            create(newtype, vector(count.into(), blocklength.into(), stride.into(), true, oldtype), rec(VECTOR, vec![count.into(), blocklength.into(), stride.into()], vec![], &[oldtype]))
        })
    }
}

mpi_fn! {
    fn MPI_Type_vector_c / PMPI_Type_vector_c(count: Count, blocklength: Count, stride: Count, oldtype: Handle, newtype: *mut Handle) -> c_int {
        // SAFETY: newtype per the standard.
        dcall("MPI_Type_vector_c", || unsafe {
            create(newtype, vector(count, blocklength, stride, true, oldtype), rec_c(VECTOR, vec![count, blocklength, stride], vec![], &[oldtype]))
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_hvector / PMPI_Type_create_hvector(count: c_int, blocklength: c_int, stride: Aint, oldtype: Handle, newtype: *mut Handle) -> c_int {
        // SAFETY: newtype per the standard.
        dcall("MPI_Type_create_hvector", || unsafe {
            create(newtype, vector(count.into(), blocklength.into(), stride as Count, false, oldtype), rec(HVECTOR, vec![count.into(), blocklength.into()], vec![stride as Count], &[oldtype]))
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_hvector_c / PMPI_Type_create_hvector_c(count: Count, blocklength: Count, stride: Count, oldtype: Handle, newtype: *mut Handle) -> c_int {
        // SAFETY: newtype per the standard.
        dcall("MPI_Type_create_hvector_c", || unsafe {
            create(newtype, vector(count, blocklength, stride, false, oldtype), rec_c(HVECTOR, vec![count, blocklength], vec![stride], &[oldtype]))
        })
    }
}

mpi_fn! {
    fn MPI_Type_indexed / PMPI_Type_indexed(count: c_int, blocklengths: *const c_int, displacements: *const c_int, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_indexed", || {
            let n = nonneg(count.into(), "count")?;
            // SAFETY: the arrays hold `count` entries, per the standard.
            let (b, d) = unsafe { (arr(blocklengths, n, "array_of_blocklengths")?, arr(displacements, n, "array_of_displacements")?) };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, indexed(&widen(b), &widen(d), true, oldtype), rec(INDEXED, cat(n, &[&widen(b), &widen(d)]), vec![], &[oldtype])) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_indexed_c / PMPI_Type_indexed_c(count: Count, blocklengths: *const Count, displacements: *const Count, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_indexed_c", || {
            let n = nonneg(count, "count")?;
            // SAFETY: the arrays hold `count` entries, per the standard.
            let (b, d) = unsafe { (arr(blocklengths, n, "array_of_blocklengths")?, arr(displacements, n, "array_of_displacements")?) };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, indexed(b, d, true, oldtype), rec_c(INDEXED, cat(n, &[b, d]), vec![], &[oldtype])) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_hindexed / PMPI_Type_create_hindexed(count: c_int, blocklengths: *const c_int, displacements: *const Aint, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_hindexed", || {
            let n = nonneg(count.into(), "count")?;
            // SAFETY: the arrays hold `count` entries, per the standard.
            let (b, d) = unsafe { (arr(blocklengths, n, "array_of_blocklengths")?, arr(displacements, n, "array_of_displacements")?) };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, indexed(&widen(b), &aints(d), false, oldtype), rec(HINDEXED, cat(n, &[&widen(b)]), aints(d), &[oldtype])) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_hindexed_c / PMPI_Type_create_hindexed_c(count: Count, blocklengths: *const Count, displacements: *const Count, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_hindexed_c", || {
            let n = nonneg(count, "count")?;
            // SAFETY: the arrays hold `count` entries, per the standard.
            let (b, d) = unsafe { (arr(blocklengths, n, "array_of_blocklengths")?, arr(displacements, n, "array_of_displacements")?) };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, indexed(b, d, false, oldtype), rec_c(HINDEXED, cat(n, &[b]), d.to_vec(), &[oldtype])) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block(count: c_int, blocklength: c_int, displacements: *const c_int, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_indexed_block", || {
            let n = nonneg(count.into(), "count")?;
            // SAFETY: the array holds `count` entries, per the standard.
            let d = unsafe { arr(displacements, n, "array_of_displacements")? };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, indexed(&vec![blocklength.into(); n], &widen(d), true, oldtype), rec(INDEXED_BLOCK, cat(n, &[&[blocklength.into()], &widen(d)]), vec![], &[oldtype])) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_indexed_block_c / PMPI_Type_create_indexed_block_c(count: Count, blocklength: Count, displacements: *const Count, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_indexed_block_c", || {
            let n = nonneg(count, "count")?;
            // SAFETY: the array holds `count` entries, per the standard.
            let d = unsafe { arr(displacements, n, "array_of_displacements")? };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, indexed(&vec![blocklength; n], d, true, oldtype), rec_c(INDEXED_BLOCK, cat(n, &[&[blocklength], d]), vec![], &[oldtype])) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block(count: c_int, blocklength: c_int, displacements: *const Aint, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_hindexed_block", || {
            let n = nonneg(count.into(), "count")?;
            // SAFETY: the array holds `count` entries, per the standard.
            let d = unsafe { arr(displacements, n, "array_of_displacements")? };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, indexed(&vec![blocklength.into(); n], &aints(d), false, oldtype), rec(HINDEXED_BLOCK, vec![n as Count, blocklength.into()], aints(d), &[oldtype])) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_hindexed_block_c / PMPI_Type_create_hindexed_block_c(count: Count, blocklength: Count, displacements: *const Count, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_hindexed_block_c", || {
            let n = nonneg(count, "count")?;
            // SAFETY: the array holds `count` entries, per the standard.
            let d = unsafe { arr(displacements, n, "array_of_displacements")? };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, indexed(&vec![blocklength; n], d, false, oldtype), rec_c(HINDEXED_BLOCK, vec![n as Count, blocklength], d.to_vec(), &[oldtype])) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_struct / PMPI_Type_create_struct(count: c_int, blocklengths: *const c_int, displacements: *const Aint, types: *const Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_struct", || {
            let n = nonneg(count.into(), "count")?;
            // SAFETY: the arrays hold `count` entries, per the standard.
            let (b, d, t) = unsafe { (arr(blocklengths, n, "array_of_blocklengths")?, arr(displacements, n, "array_of_displacements")?, arr(types, n, "array_of_types")?) };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, structure(&widen(b), &aints(d), t), rec(STRUCT, cat(n, &[&widen(b)]), aints(d), t)) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_struct_c / PMPI_Type_create_struct_c(count: Count, blocklengths: *const Count, displacements: *const Count, types: *const Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_struct_c", || {
            let n = nonneg(count, "count")?;
            // SAFETY: the arrays hold `count` entries, per the standard.
            let (b, d, t) = unsafe { (arr(blocklengths, n, "array_of_blocklengths")?, arr(displacements, n, "array_of_displacements")?, arr(types, n, "array_of_types")?) };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, structure(b, d, t), rec_c(STRUCT, cat(n, &[b]), d.to_vec(), t)) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_resized / PMPI_Type_create_resized(oldtype: Handle, lb: Aint, extent: Aint, newtype: *mut Handle) -> c_int {
        // SAFETY: newtype per the standard.
        dcall("MPI_Type_create_resized", || unsafe {
            create(newtype, old(oldtype).and_then(|o| Layout::resized(&o, lb, extent)), rec(RESIZED, vec![], vec![lb as Count, extent as Count], &[oldtype]))
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_resized_c / PMPI_Type_create_resized_c(oldtype: Handle, lb: Count, extent: Count, newtype: *mut Handle) -> c_int {
        // SAFETY: newtype per the standard.
        dcall("MPI_Type_create_resized_c", || unsafe {
            create(newtype, old(oldtype).and_then(|o| Layout::resized(&o, lb as isize, extent as isize)), rec(RESIZED, vec![], vec![lb, extent], &[oldtype]))
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_subarray / PMPI_Type_create_subarray(ndims: c_int, sizes: *const c_int, subsizes: *const c_int, starts: *const c_int, order: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_subarray", || {
            let n = nonneg(ndims.into(), "ndims")?;
            // SAFETY: the arrays hold `ndims` entries, per the standard.
            let (a, b, c) = unsafe { (arr(sizes, n, "array_of_sizes")?, arr(subsizes, n, "array_of_subsizes")?, arr(starts, n, "array_of_starts")?) };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, subarray(&widen(a), &widen(b), &widen(c), order, oldtype), rec(SUBARRAY, cat(n, &[&widen(a), &widen(b), &widen(c), &[order.into()]]), vec![], &[oldtype])) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_subarray_c / PMPI_Type_create_subarray_c(ndims: c_int, sizes: *const Count, subsizes: *const Count, starts: *const Count, order: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_subarray_c", || {
            let n = nonneg(ndims.into(), "ndims")?;
            // SAFETY: the arrays hold `ndims` entries, per the standard.
            let (a, b, c) = unsafe { (arr(sizes, n, "array_of_sizes")?, arr(subsizes, n, "array_of_subsizes")?, arr(starts, n, "array_of_starts")?) };
            // SAFETY: newtype per the standard.
            unsafe { create(newtype, subarray(a, b, c, order, oldtype), rec_c(SUBARRAY, cat(n, &[a, b, c, &[order.into()]]), vec![], &[oldtype])) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_dup / PMPI_Type_dup(oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_dup", || {
            if newtype.is_null() {
                return err(ErrorClass::Arg, "newtype pointer is NULL");
            }
            let h = table::dup(oldtype as usize)?;
            if let Err(e) = super::dtype_attr::on_dup(oldtype as usize, h) {
                // A copy callback failed: no new type (MPI_DATATYPE_NULL, as MPICH gives).
                table::free(h)?;
                // SAFETY: checked non-NULL above.
                unsafe { put(newtype, table::DATATYPE_NULL as Handle, "newtype")? };
                return Err(e);
            }
            // SAFETY: checked non-NULL; the caller passes a writable MPI_Datatype.
            unsafe { put(newtype, h as Handle, "newtype") }
        })
    }
}

mpi_fn! {
    fn MPI_Type_commit / PMPI_Type_commit(datatype: *mut Handle) -> c_int {
        dcall("MPI_Type_commit", || {
            if datatype.is_null() {
                return err(ErrorClass::Arg, "datatype pointer is NULL");
            }
            // SAFETY: checked non-NULL; the caller's MPI_Datatype.
            table::commit(unsafe { *datatype } as usize)
        })
    }
}

mpi_fn! {
    fn MPI_Type_free / PMPI_Type_free(datatype: *mut Handle) -> c_int {
        dcall("MPI_Type_free", || {
            if datatype.is_null() {
                return err(ErrorClass::Arg, "datatype pointer is NULL");
            }
            // SAFETY: checked non-NULL; the caller's MPI_Datatype, set to NULL once freed.
            unsafe {
                if crate::datatype::lookup(*datatype as usize).is_none() {
                    super::dtype_attr::on_free(*datatype as usize)?;
                }
                table::free(*datatype as usize)?;
                *datatype = table::DATATYPE_NULL as Handle;
            }
            Ok(())
        })
    }
}

// ---- queries

mpi_fn! {
    fn MPI_Type_size / PMPI_Type_size(datatype: Handle, size: *mut c_int) -> c_int {
        dcall("MPI_Type_size", || {
            let s = type_size(datatype)?;
            let s = c_int::try_from(s).unwrap_or(MPI_UNDEFINED);
            // SAFETY: size is NULL or writable, per the standard.
            unsafe { put(size, s, "size") }
        })
    }
}

mpi_fn! {
    fn MPI_Type_size_c / PMPI_Type_size_c(datatype: Handle, size: *mut Count) -> c_int {
        // SAFETY: size is NULL or writable, per the standard.
        dcall("MPI_Type_size_c", || unsafe { put(size, type_size(datatype)? as Count, "size") })
    }
}

mpi_fn! {
    fn MPI_Type_size_x / PMPI_Type_size_x(datatype: Handle, size: *mut Count) -> c_int {
        // SAFETY: size is NULL or writable, per the standard.
        dcall("MPI_Type_size_x", || unsafe { put(size, type_size(datatype)? as Count, "size") })
    }
}

/// Store a pair of bounds computed from `datatype`'s layout.
///
/// # Safety
/// `a` and `b` are NULL or writable.
unsafe fn bounds<T>(
    datatype: Handle,
    a: *mut T,
    b: *mut T,
    f: impl FnOnce(&Layout) -> (T, T),
) -> Result<()> {
    let (x, y) = f(&*old(datatype)?);
    // SAFETY: the caller's contract.
    unsafe {
        put(a, x, "lb")?;
        put(b, y, "extent")
    }
}

mpi_fn! {
    fn MPI_Type_get_extent / PMPI_Type_get_extent(datatype: Handle, lb: *mut Aint, extent: *mut Aint) -> c_int {
        // SAFETY: outputs per the standard.
        dcall("MPI_Type_get_extent", || unsafe { bounds(datatype, lb, extent, |l| (l.lb(), l.extent())) })
    }
}

mpi_fn! {
    fn MPI_Type_get_extent_c / PMPI_Type_get_extent_c(datatype: Handle, lb: *mut Count, extent: *mut Count) -> c_int {
        // SAFETY: outputs per the standard.
        dcall("MPI_Type_get_extent_c", || unsafe { bounds(datatype, lb, extent, |l| (l.lb() as Count, l.extent() as Count)) })
    }
}

mpi_fn! {
    fn MPI_Type_get_extent_x / PMPI_Type_get_extent_x(datatype: Handle, lb: *mut Count, extent: *mut Count) -> c_int {
        // SAFETY: outputs per the standard.
        dcall("MPI_Type_get_extent_x", || unsafe { bounds(datatype, lb, extent, |l| (l.lb() as Count, l.extent() as Count)) })
    }
}

mpi_fn! {
    fn MPI_Type_get_true_extent / PMPI_Type_get_true_extent(datatype: Handle, true_lb: *mut Aint, true_extent: *mut Aint) -> c_int {
        // SAFETY: outputs per the standard.
        dcall("MPI_Type_get_true_extent", || unsafe { bounds(datatype, true_lb, true_extent, |l| (l.true_lb(), l.true_extent())) })
    }
}

mpi_fn! {
    fn MPI_Type_get_true_extent_c / PMPI_Type_get_true_extent_c(datatype: Handle, true_lb: *mut Count, true_extent: *mut Count) -> c_int {
        // SAFETY: outputs per the standard.
        dcall("MPI_Type_get_true_extent_c", || unsafe { bounds(datatype, true_lb, true_extent, |l| (l.true_lb() as Count, l.true_extent() as Count)) })
    }
}

mpi_fn! {
    fn MPI_Type_get_true_extent_x / PMPI_Type_get_true_extent_x(datatype: Handle, true_lb: *mut Count, true_extent: *mut Count) -> c_int {
        // SAFETY: outputs per the standard.
        dcall("MPI_Type_get_true_extent_x", || unsafe { bounds(datatype, true_lb, true_extent, |l| (l.true_lb() as Count, l.true_extent() as Count)) })
    }
}

mpi_fn! {
    fn MPI_Type_get_name / PMPI_Type_get_name(datatype: Handle, type_name: *mut c_char, resultlen: *mut c_int) -> c_int {
        dcall("MPI_Type_get_name", || {
            // MPI_DATATYPE_NULL is named, as Open MPI and MPICH name it (mpi4py expects it).
            let name = if datatype as usize == table::DATATYPE_NULL {
                "MPI_DATATYPE_NULL".to_string()
            } else {
                table::name(datatype as usize)?
            };
            if type_name.is_null() || resultlen.is_null() {
                return err(ErrorClass::Arg, "type_name or resultlen is NULL");
            }
            let n = name.len().min(MAX_OBJECT_NAME - 1);
            // SAFETY: type_name has MPI_MAX_OBJECT_NAME bytes, per the standard; n + 1 fits.
            unsafe {
                std::ptr::copy_nonoverlapping(name.as_ptr(), type_name.cast(), n);
                *type_name.add(n) = 0;
                *resultlen = n as c_int;
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Type_set_name / PMPI_Type_set_name(datatype: Handle, type_name: *const c_char) -> c_int {
        dcall("MPI_Type_set_name", || {
            if type_name.is_null() {
                return err(ErrorClass::Arg, "type_name is NULL");
            }
            // SAFETY: checked non-NULL; a NUL-terminated string, per the standard.
            let s = unsafe { CStr::from_ptr(type_name) }.to_string_lossy();
            let s: String = s.chars().take(MAX_OBJECT_NAME - 1).collect();
            table::set_name(datatype as usize, &s)
        })
    }
}

mpi_fn! {
    fn MPI_Get_address / PMPI_Get_address(location: *const c_void, address: *mut Aint) -> c_int {
        // SAFETY: address is NULL or writable, per the standard.
        dcall("MPI_Get_address", || unsafe { put(address, location as Aint, "address") })
    }
}

mpi_fn! {
    fn MPI_Aint_add / PMPI_Aint_add(base: Aint, disp: Aint) -> Aint {
        base.wrapping_add(disp)
    }
}

mpi_fn! {
    fn MPI_Aint_diff / PMPI_Aint_diff(addr1: Aint, addr2: Aint) -> Aint {
        addr1.wrapping_sub(addr2)
    }
}

// ---- pack / unpack (MPI_PACKED: the packed stream, native representation)

/// Pack `m` into `out[pos..]` of `outsize` bytes; returns the new position.
///
/// # Safety
/// `m`'s bytes are readable; `out` has `outsize` writable bytes.
unsafe fn pack(m: &Msg, out: *mut c_void, outsize: usize, pos: Count) -> Result<Count> {
    let pos = nonneg(pos, "position")?;
    if pos.checked_add(m.len).is_none_or(|e| e > outsize) {
        return err(
            ErrorClass::Truncate,
            format!(
                "packing {} bytes at position {pos} overruns the {outsize}-byte buffer",
                m.len
            ),
        );
    }
    if m.len > 0 {
        if out.is_null() {
            return err(ErrorClass::Buffer, "outbuf is NULL");
        }
        // SAFETY: the caller's contract; pos + len <= outsize.
        unsafe {
            let dst = std::slice::from_raw_parts_mut(out.cast::<u8>().add(pos), m.len);
            m.read(0, dst);
        }
    }
    Ok((pos + m.len) as Count)
}

/// Unpack `m` from `inp[pos..]` of `insize` bytes; returns the new position.
///
/// # Safety
/// `m`'s bytes are writable; `inp` has `insize` readable bytes.
unsafe fn unpack(m: &Msg, inp: *const c_void, insize: usize, pos: Count) -> Result<Count> {
    let pos = nonneg(pos, "position")?;
    if pos.checked_add(m.len).is_none_or(|e| e > insize) {
        return err(
            ErrorClass::Truncate,
            format!(
                "unpacking {} bytes at position {pos} reads past the {insize}-byte buffer",
                m.len
            ),
        );
    }
    if m.len > 0 {
        if inp.is_null() {
            return err(ErrorClass::Buffer, "inbuf is NULL");
        }
        // SAFETY: the caller's contract; pos + len <= insize.
        unsafe {
            let src = std::slice::from_raw_parts(inp.cast::<u8>().add(pos), m.len);
            m.write(0, src);
        }
    }
    Ok((pos + m.len) as Count)
}

mpi_fn! {
    fn MPI_Pack / PMPI_Pack(inbuf: *const c_void, incount: c_int, datatype: Handle, outbuf: *mut c_void, outsize: c_int, position: *mut c_int, comm: Handle) -> c_int {
        dcall("MPI_Pack", || {
            live_comm(comm)?;
            let m = message_c(inbuf, incount as Count, datatype)?;
            if position.is_null() {
                return err(ErrorClass::Arg, "position is NULL");
            }
            // SAFETY: buffers and position per the standard.
            unsafe {
                let p = pack(&m, outbuf, nonneg(outsize.into(), "outsize")?, (*position).into())?;
                *position = c_int::try_from(p).map_err(|_| too_large())?;
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Pack_c / PMPI_Pack_c(inbuf: *const c_void, incount: Count, datatype: Handle, outbuf: *mut c_void, outsize: Count, position: *mut Count, comm: Handle) -> c_int {
        dcall("MPI_Pack_c", || {
            live_comm(comm)?;
            let m = message_c(inbuf, incount, datatype)?;
            if position.is_null() {
                return err(ErrorClass::Arg, "position is NULL");
            }
            // SAFETY: buffers and position per the standard.
            unsafe { *position = pack(&m, outbuf, nonneg(outsize, "outsize")?, *position)? };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Unpack / PMPI_Unpack(inbuf: *const c_void, insize: c_int, position: *mut c_int, outbuf: *mut c_void, outcount: c_int, datatype: Handle, comm: Handle) -> c_int {
        dcall("MPI_Unpack", || {
            live_comm(comm)?;
            let m = message_c(outbuf, outcount as Count, datatype)?;
            if position.is_null() {
                return err(ErrorClass::Arg, "position is NULL");
            }
            // SAFETY: buffers and position per the standard.
            unsafe {
                let p = unpack(&m, inbuf, nonneg(insize.into(), "insize")?, (*position).into())?;
                *position = c_int::try_from(p).map_err(|_| too_large())?;
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Unpack_c / PMPI_Unpack_c(inbuf: *const c_void, insize: Count, position: *mut Count, outbuf: *mut c_void, outcount: Count, datatype: Handle, comm: Handle) -> c_int {
        dcall("MPI_Unpack_c", || {
            live_comm(comm)?;
            let m = message_c(outbuf, outcount, datatype)?;
            if position.is_null() {
                return err(ErrorClass::Arg, "position is NULL");
            }
            // SAFETY: buffers and position per the standard.
            unsafe { *position = unpack(&m, inbuf, nonneg(insize, "insize")?, *position)? };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Pack_size / PMPI_Pack_size(incount: c_int, datatype: Handle, comm: Handle, size: *mut c_int) -> c_int {
        dcall("MPI_Pack_size", || {
            live_comm(comm)?;
            let n = packed_bytes(incount, datatype)?;
            // SAFETY: size is NULL or writable, per the standard.
            unsafe { put(size, c_int::try_from(n).map_err(|_| too_large())?, "size") }
        })
    }
}

mpi_fn! {
    fn MPI_Pack_size_c / PMPI_Pack_size_c(incount: Count, datatype: Handle, comm: Handle, size: *mut Count) -> c_int {
        dcall("MPI_Pack_size_c", || {
            live_comm(comm)?;
            let n = nonneg(incount, "incount")?.checked_mul(type_size(datatype)?).ok_or_else(too_large)?;
            // SAFETY: size is NULL or writable, per the standard.
            unsafe { put(size, n as Count, "size") }
        })
    }
}

/// Basic elements of `datatype` a status's byte count holds; None when not a whole number.
///
/// # Safety
/// `status` is NULL or points to a readable MPI_Status.
unsafe fn elements(status: *const MpiStatus, datatype: Handle) -> Result<Option<usize>> {
    if status.is_null() {
        return err(ErrorClass::Arg, "status is NULL");
    }
    // SAFETY: checked non-NULL; the caller's contract.
    let bytes = unsafe { (*status).count() };
    let l = old(datatype)?;
    if let Some(n) = l.elements_in(bytes) {
        return Ok(Some(n));
    }
    // Basic types of several sizes: walk the type map's sequence of basic elements.
    let h = datatype as usize;
    let c = table::contents(h)?;
    let Ok(seq) = crate::datatype::external32::sequence(&l, c.as_deref(), h) else {
        return Ok(None);
    };
    Ok(partial_elements(&l, &seq, bytes))
}

/// Basic elements in the first `bytes` of a message of `l`, whose one element's basic types
/// are `seq`; None when `bytes` ends inside a basic element (or a pair type is involved).
fn partial_elements(l: &Layout, seq: &[(usize, usize)], bytes: usize) -> Option<usize> {
    if l.size() == 0 {
        return Some(0);
    }
    let per: usize = seq.iter().map(|&(_, n)| n).sum();
    let (full, mut rem) = (bytes / l.size(), bytes % l.size());
    let mut n = full.checked_mul(per)?;
    for &(h, k) in seq {
        if rem == 0 {
            break;
        }
        if matches!(h, 0x228..=0x22d | 0x230..=0x232) {
            return None;
        }
        let es = crate::datatype::lookup(h)?.size.max(1);
        let take = (rem / es).min(k);
        n += take;
        rem -= take * es;
        if take < k {
            break;
        }
    }
    (rem == 0).then_some(n)
}

mpi_fn! {
    fn MPI_Get_elements / PMPI_Get_elements(status: *const MpiStatus, datatype: Handle, count: *mut c_int) -> c_int {
        dcall("MPI_Get_elements", || {
            // SAFETY: status and count per the standard.
            unsafe {
                let n = elements(status, datatype)?.and_then(|n| c_int::try_from(n).ok());
                put(count, n.unwrap_or(MPI_UNDEFINED), "count")
            }
        })
    }
}

mpi_fn! {
    fn MPI_Get_elements_c / PMPI_Get_elements_c(status: *const MpiStatus, datatype: Handle, count: *mut Count) -> c_int {
        dcall("MPI_Get_elements_c", || {
            // SAFETY: status and count per the standard.
            unsafe {
                let n = elements(status, datatype)?.map_or(MPI_UNDEFINED as Count, |n| n as Count);
                put(count, n, "count")
            }
        })
    }
}

mpi_fn! {
    fn MPI_Get_elements_x / PMPI_Get_elements_x(status: *const MpiStatus, datatype: Handle, count: *mut Count) -> c_int {
        dcall("MPI_Get_elements_x", || {
            // SAFETY: status and count per the standard.
            unsafe {
                let n = elements(status, datatype)?.map_or(MPI_UNDEFINED as Count, |n| n as Count);
                put(count, n, "count")
            }
        })
    }
}
