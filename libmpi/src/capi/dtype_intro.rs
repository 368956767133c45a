//! Datatype introspection of the C ABI: MPI_Type_get_envelope/_contents (the constructor
//! recorded beside each derived type, `datatype::contents`), MPI_Type_match_size and
//! MPI_Type_get_value_index.

use std::ffi::c_int;
use std::sync::Arc;

use super::*;
use crate::datatype::contents::{combiner, Contents};
use crate::datatype::{table, Layout};

const TYPECLASS_INTEGER: c_int = 192;
const TYPECLASS_REAL: c_int = 193;
const TYPECLASS_COMPLEX: c_int = 194;

/// Run a datatype call; errors go to MPI_COMM_WORLD's handler (no runtime needed).
fn dcall(name: &str, f: impl FnOnce() -> Result<()>) -> c_int {
    match running().and_then(|()| f()) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => fail(name, crate::comm::WORLD, e),
    }
}

fn arg_err(what: &str) -> Error {
    Error::new(ErrorClass::Arg, format!("{what} is NULL"))
}

/// The recorded constructor of `h`; None for a predefined (named) type.
fn recorded(h: Handle) -> Result<Option<Arc<Contents>>> {
    let h = h as usize;
    if crate::datatype::lookup(h).is_some() {
        return Ok(None);
    }
    table::layout(h)?;
    match table::contents(h)? {
        Some(c) => Ok(Some(c)),
        None => Err(Error::new(
            ErrorClass::Type,
            format!("datatype {h:#x} was not made by an MPI constructor"),
        )),
    }
}

/// (integers, addresses, large counts, datatypes, combiner) of `h`.
fn envelope(h: Handle) -> Result<(usize, usize, usize, usize, c_int)> {
    Ok(match recorded(h)? {
        None => (0, 0, 0, 0, combiner::NAMED),
        Some(c) => {
            let (i, a, l) = c.split();
            (i.len(), a.len(), l.len(), c.types.len(), c.combiner)
        }
    })
}

/// The int queries cannot describe a type whose arguments are large counts (MPI 4.1 §5.1.13).
fn needs_large(call: &str) -> Error {
    Error::new(
        ErrorClass::Type,
        format!("the datatype was made by a large-count constructor with a count beyond an int: {call}_c describes it, {call} cannot"),
    )
}

mpi_fn! {
    fn MPI_Type_get_envelope / PMPI_Type_get_envelope(datatype: Handle, num_integers: *mut c_int, num_addresses: *mut c_int, num_datatypes: *mut c_int, combiner: *mut c_int) -> c_int {
        dcall("MPI_Type_get_envelope", || {
            if num_integers.is_null() || num_addresses.is_null() || num_datatypes.is_null() || combiner.is_null() {
                return Err(arg_err("an output pointer"));
            }
            let (i, a, l, d, c) = envelope(datatype)?;
            if l > 0 {
                return Err(needs_large("MPI_Type_get_envelope"));
            }
            // SAFETY: all four checked non-NULL; the caller passes writable ints.
            unsafe {
                *num_integers = i as c_int;
                *num_addresses = a as c_int;
                *num_datatypes = d as c_int;
                *combiner = c;
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Type_get_envelope_c / PMPI_Type_get_envelope_c(datatype: Handle, num_integers: *mut Count, num_addresses: *mut Count, num_large_counts: *mut Count, num_datatypes: *mut Count, combiner: *mut c_int) -> c_int {
        dcall("MPI_Type_get_envelope_c", || {
            if num_integers.is_null() || num_addresses.is_null() || num_large_counts.is_null()
                || num_datatypes.is_null() || combiner.is_null() {
                return Err(arg_err("an output pointer"));
            }
            let (i, a, l, d, c) = envelope(datatype)?;
            // SAFETY: all checked non-NULL; the caller passes writable values.
            unsafe {
                *num_integers = i as Count;
                *num_addresses = a as Count;
                *num_large_counts = l as Count;
                *num_datatypes = d as Count;
                *combiner = c;
            }
            Ok(())
        })
    }
}

/// MPI_Type_get_contents(_c): copy the recorded arguments out; derived argument types come
/// back as new handles the caller frees.
///
/// `large` is None for the int call (MPI_ERR_TYPE if the type needs large counts), else the
/// large-count array and its size.
///
/// # Safety
/// Each array is NULL or holds its `max_*` entries.
unsafe fn contents_out(
    datatype: Handle,
    (max_i, max_a, max_d): (Count, Count, Count),
    ints: *mut c_int,
    aints: *mut Aint,
    large: Option<(*mut Count, Count)>,
    types: *mut Handle,
) -> Result<()> {
    let Some(c) = recorded(datatype)? else {
        return Err(Error::new(
            ErrorClass::Type,
            "MPI_Type_get_contents of a predefined (named) datatype",
        ));
    };
    let (c_ints, c_aints, c_large) = c.split();
    let (larges, max_l) = match large {
        Some(l) => l,
        None if !c_large.is_empty() => return Err(needs_large("MPI_Type_get_contents")),
        None => (std::ptr::null_mut(), 0),
    };
    let fits = |n: usize, max: Count| max >= 0 && n as Count <= max;
    if !fits(c_ints.len(), max_i)
        || !fits(c_aints.len(), max_a)
        || !fits(c_large.len(), max_l)
        || !fits(c.types.len(), max_d)
    {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "the arrays are too small: the constructor has {} integers, {} addresses, {} large counts, {} datatypes",
                c_ints.len(),
                c_aints.len(),
                c_large.len(),
                c.types.len()
            ),
        ));
    }
    if (ints.is_null() && !c_ints.is_empty())
        || (aints.is_null() && !c_aints.is_empty())
        || (larges.is_null() && !c_large.is_empty())
        || (types.is_null() && !c.types.is_empty())
    {
        return Err(arg_err("an output array"));
    }
    for (i, &v) in c_ints.iter().enumerate() {
        let v = c_int::try_from(v).map_err(|_| {
            Error::new(
                ErrorClass::Count,
                format!("integer argument {v} does not fit an int"),
            )
        })?;
        // SAFETY: the array holds max_i >= ints.len() entries (checked above).
        unsafe { *ints.add(i) = v };
    }
    for (i, &v) in c_aints.iter().enumerate() {
        // SAFETY: as above, for max_a.
        unsafe { *aints.add(i) = v as Aint };
    }
    for (i, &v) in c_large.iter().enumerate() {
        // SAFETY: as above, for max_l.
        unsafe { *larges.add(i) = v as Count };
    }
    for (i, t) in c.types.iter().enumerate() {
        // SAFETY: as above, for max_d.
        unsafe { *types.add(i) = table::handle_for(t) as Handle };
    }
    Ok(())
}

mpi_fn! {
    fn MPI_Type_get_contents / PMPI_Type_get_contents(datatype: Handle, max_integers: c_int, max_addresses: c_int, max_datatypes: c_int, array_of_integers: *mut c_int, array_of_addresses: *mut Aint, array_of_datatypes: *mut Handle) -> c_int {
        dcall("MPI_Type_get_contents", || {
            let max = (max_integers.into(), max_addresses.into(), max_datatypes.into());
            // SAFETY: the arrays hold their max_* entries (the call's contract).
            unsafe { contents_out(datatype, max, array_of_integers, array_of_addresses, None, array_of_datatypes) }
        })
    }
}

mpi_fn! {
    fn MPI_Type_get_contents_c / PMPI_Type_get_contents_c(datatype: Handle, max_integers: Count, max_addresses: Count, max_large_counts: Count, max_datatypes: Count, array_of_integers: *mut c_int, array_of_addresses: *mut Aint, array_of_large_counts: *mut Count, array_of_datatypes: *mut Handle) -> c_int {
        dcall("MPI_Type_get_contents_c", || {
            // SAFETY: the arrays hold their max_* entries (the call's contract).
            unsafe { contents_out(datatype, (max_integers, max_addresses, max_datatypes), array_of_integers, array_of_addresses, Some((array_of_large_counts, max_large_counts)), array_of_datatypes) }
        })
    }
}

/// The Fortran-style predefined type of `class` and `size` bytes (MPI_Type_match_size).
fn match_size(class: c_int, size: c_int) -> Result<usize> {
    let h = match (class, size) {
        (TYPECLASS_INTEGER, 1) => 0x2c1,
        (TYPECLASS_INTEGER, 2) => 0x2c9,
        (TYPECLASS_INTEGER, 4) => 0x2d1,
        (TYPECLASS_INTEGER, 8) => 0x2d9,
        (TYPECLASS_INTEGER, 16) => 0x2e1,
        (TYPECLASS_REAL, 2) => 0x2ca,
        (TYPECLASS_REAL, 4) => 0x2d2,
        (TYPECLASS_REAL, 8) => 0x2da,
        (TYPECLASS_REAL, 16) => 0x2e2,
        (TYPECLASS_COMPLEX, 4) => 0x2d3,
        (TYPECLASS_COMPLEX, 8) => 0x2db,
        (TYPECLASS_COMPLEX, 16) => 0x2e3,
        (TYPECLASS_COMPLEX, 32) => 0x2eb,
        (TYPECLASS_INTEGER | TYPECLASS_REAL | TYPECLASS_COMPLEX, _) => {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("no predefined type of type class {class} has {size} bytes"),
            ))
        }
        _ => {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{class} is not an MPI_TYPECLASS_* value"),
            ))
        }
    };
    Ok(h)
}

mpi_fn! {
    fn MPI_Type_match_size / PMPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut Handle) -> c_int {
        dcall("MPI_Type_match_size", || {
            if datatype.is_null() {
                return Err(arg_err("datatype pointer"));
            }
            let h = match_size(typeclass, size)?;
            // SAFETY: checked non-NULL.
            unsafe { *datatype = h as Handle };
            Ok(())
        })
    }
}

/// MPI_Type_get_value_index: the predefined pair type when there is one, else a new struct
/// {value; index} laid out as C would (combiner MPI_COMBINER_VALUE_INDEX).
fn value_index(value: Handle, index: Handle) -> Result<usize> {
    let (v, i) = (value as usize, index as usize);
    let pre = match (v, i) {
        (0x210, 0x209) => Some(0x228), // MPI_FLOAT, MPI_INT: MPI_FLOAT_INT
        (0x214, 0x209) => Some(0x229), // MPI_DOUBLE_INT
        (0x20a, 0x209) => Some(0x22a), // MPI_LONG_INT
        (0x209, 0x209) => Some(0x22b), // MPI_2INT
        (0x208, 0x209) => Some(0x22c), // MPI_SHORT_INT
        (0x220, 0x209) => Some(0x22d), // MPI_LONG_DOUBLE_INT
        (0x21a, 0x21a) => Some(0x230), // MPI_2REAL
        (0x21c, 0x21c) => Some(0x231), // MPI_2DOUBLE_PRECISION
        (0x219, 0x219) => Some(0x232), // MPI_2INTEGER
        _ => None,
    };
    if let Some(h) = pre {
        return Ok(h);
    }
    // No predefined pair type: MPI_DATATYPE_NULL (MPI 4.1, MPI_TYPE_GET_VALUE_INDEX), once both are valid types.
    table::type_arg(v)?;
    table::type_arg(i)?;
    Ok(table::DATATYPE_NULL)
}

mpi_fn! {
    fn MPI_Type_get_value_index / PMPI_Type_get_value_index(value_type: Handle, index_type: Handle, pair_type: *mut Handle) -> c_int {
        dcall("MPI_Type_get_value_index", || {
            if pair_type.is_null() {
                return Err(arg_err("pair_type pointer"));
            }
            let h = value_index(value_type, index_type)?;
            // SAFETY: checked non-NULL.
            unsafe { *pair_type = h as Handle };
            Ok(())
        })
    }
}

/// MPI_Type_create_darray(_c): the layout from `datatype::darray`, recorded as
/// MPI_COMBINER_DARRAY with the call's integers.
#[allow(clippy::too_many_arguments)]
fn darray(
    size: c_int,
    rank: c_int,
    gsizes: &[Count],
    distribs: &[c_int],
    dargs: &[c_int],
    psizes: &[c_int],
    order: c_int,
    oldtype: Handle,
    large_count: bool,
) -> Result<usize> {
    use crate::datatype::darray;
    let nonneg = |v: i64, what: &str| {
        usize::try_from(v)
            .map_err(|_| Error::new(ErrorClass::Arg, format!("{what} {v} is negative")))
    };
    let c_order = match order {
        0xC => true,
        0xF => false,
        o => {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("order {o:#x} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"),
            ))
        }
    };
    let g = gsizes
        .iter()
        .map(|&x| nonneg(x, "gsize"))
        .collect::<Result<Vec<_>>>()?;
    let p = psizes
        .iter()
        .map(|&x| nonneg(x.into(), "psize"))
        .collect::<Result<Vec<_>>>()?;
    let d: Vec<i64> = dargs.iter().map(|&x| x.into()).collect();
    let old = table::type_arg(oldtype as usize)?;
    let l = darray::darray(
        nonneg(size.into(), "size")?,
        nonneg(rank.into(), "rank")?,
        &g,
        distribs,
        &d,
        &p,
        c_order,
        &old.layout,
    )?;
    let mut ints = vec![size as i64, rank as i64, g.len() as i64];
    ints.extend_from_slice(gsizes);
    ints.extend(distribs.iter().map(|&x| x as i64));
    ints.extend(d);
    ints.extend(psizes.iter().map(|&x| x as i64));
    ints.push(order as i64);
    let mut c = Contents::new(combiner::DARRAY, ints, vec![], vec![old]);
    if large_count {
        c = c.large_count();
    }
    Ok(table::insert_with(Arc::new(l), Some(c)))
}

/// `n` entries at `p` (NULL is an error unless n is 0).
///
/// # Safety
/// `p` is NULL or holds `n` values.
unsafe fn arr<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(arg_err(what));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

mpi_fn! {
    fn MPI_Type_create_darray / PMPI_Type_create_darray(size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const c_int, array_of_distribs: *const c_int, array_of_dargs: *const c_int, array_of_psizes: *const c_int, order: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_darray", || {
            let n = usize::try_from(ndims).map_err(|_| Error::new(ErrorClass::Arg, "ndims is negative"))?;
            if newtype.is_null() {
                return Err(arg_err("newtype pointer"));
            }
            // SAFETY: every array holds ndims entries (the call's contract).
            let (g, ds, da, ps) = unsafe {
                (arr(array_of_gsizes, n, "array_of_gsizes")?, arr(array_of_distribs, n, "array_of_distribs")?,
                 arr(array_of_dargs, n, "array_of_dargs")?, arr(array_of_psizes, n, "array_of_psizes")?)
            };
            let g: Vec<Count> = g.iter().map(|&x| x as Count).collect();
            let h = darray(size, rank, &g, ds, da, ps, order, oldtype, false)?;
            // SAFETY: checked non-NULL.
            unsafe { *newtype = h as Handle };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Type_create_darray_c / PMPI_Type_create_darray_c(size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const Count, array_of_distribs: *const c_int, array_of_dargs: *const c_int, array_of_psizes: *const c_int, order: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int {
        dcall("MPI_Type_create_darray_c", || {
            let n = usize::try_from(ndims).map_err(|_| Error::new(ErrorClass::Arg, "ndims is negative"))?;
            if newtype.is_null() {
                return Err(arg_err("newtype pointer"));
            }
            // SAFETY: every array holds ndims entries (the call's contract).
            let (g, ds, da, ps) = unsafe {
                (arr(array_of_gsizes, n, "array_of_gsizes")?, arr(array_of_distribs, n, "array_of_distribs")?,
                 arr(array_of_dargs, n, "array_of_dargs")?, arr(array_of_psizes, n, "array_of_psizes")?)
            };
            let h = darray(size, rank, g, ds, da, ps, order, oldtype, true)?;
            // SAFETY: checked non-NULL.
            unsafe { *newtype = h as Handle };
            Ok(())
        })
    }
}

/// MPI_Type_create_f90_*: the sized predefined type that holds precision `p` and range `r`
/// (MPI_UNDEFINED: no requirement), as a derived handle recording the call (combiner
/// MPI_COMBINER_F90_*), one per distinct call, never to be freed by the user.
fn f90(comb: i32, p: c_int, r: c_int) -> Result<usize> {
    use std::sync::Mutex;
    /// (combiner, p, r) of a call and the handle it made.
    type Made = ((i32, c_int, c_int), usize);
    static CACHE: Mutex<Vec<Made>> = Mutex::new(Vec::new());
    let key = (comb, p, r);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, h)) = cache.iter().find(|(k, _)| *k == key) {
        return Ok(h);
    }
    let req = |v: c_int| if v == MPI_UNDEFINED { 0 } else { v };
    let (pp, rr) = (req(p), req(r));
    let pick = |four: usize, eight: usize, sixteen: usize| match (pp, rr) {
        (..=6, ..=37) => Some(four),
        (..=15, ..=307) => Some(eight),
        (..=33, ..=4931) => Some(sixteen),
        _ => None,
    };
    let (h, ints) = match comb {
        F90_REAL => (pick(0x2d2, 0x2da, 0x2e2), vec![p as i64, r as i64]),
        F90_COMPLEX => (pick(0x2db, 0x2e3, 0x2eb), vec![p as i64, r as i64]),
        _ => {
            let h = match rr {
                ..=2 => Some(0x2c1),
                3..=4 => Some(0x2c9),
                5..=9 => Some(0x2d1),
                10..=18 => Some(0x2d9),
                _ => None,
            };
            (h, vec![r as i64])
        }
    };
    let Some(h) = h else {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("no predefined type has precision {p} and range {r}"),
        ));
    };
    let size = crate::datatype::lookup(h).map_or(0, |d| d.size);
    let c = Contents::new(comb, ints, vec![], vec![]);
    let nh = table::insert_with(Arc::new(Layout::predefined(h, size)), Some(c));
    table::commit(nh)?;
    cache.push((key, nh));
    Ok(nh)
}

const F90_REAL: i32 = 113;
const F90_COMPLEX: i32 = 114;
const F90_INTEGER: i32 = 115;

fn f90_out(name: &str, comb: i32, p: c_int, r: c_int, newtype: *mut Handle) -> c_int {
    dcall(name, || {
        if newtype.is_null() {
            return Err(arg_err("newtype pointer"));
        }
        let h = f90(comb, p, r)?;
        // SAFETY: checked non-NULL.
        unsafe { *newtype = h as Handle };
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Type_create_f90_real / PMPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut Handle) -> c_int {
        f90_out("MPI_Type_create_f90_real", F90_REAL, p, r, newtype)
    }
}

mpi_fn! {
    fn MPI_Type_create_f90_complex / PMPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut Handle) -> c_int {
        f90_out("MPI_Type_create_f90_complex", F90_COMPLEX, p, r, newtype)
    }
}

mpi_fn! {
    fn MPI_Type_create_f90_integer / PMPI_Type_create_f90_integer(r: c_int, newtype: *mut Handle) -> c_int {
        f90_out("MPI_Type_create_f90_integer", F90_INTEGER, MPI_UNDEFINED, r, newtype)
    }
}
