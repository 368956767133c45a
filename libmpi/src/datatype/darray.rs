//! MPI_Type_create_darray: the block of a distributed array one process owns, built from the
//! same constructors as every other type (per dimension a contiguous run or a strided vector,
//! then shifted to the process's first element and resized to the whole array), following the
//! standard's definition (MPI 4.1 §5.1.4, the "block" and "cyclic" helpers).

use super::Layout;
use crate::error::{err, ErrorClass, Result};

/// MPI_DISTRIBUTE_* (ABI values) and MPI_DISTRIBUTE_DFLT_DARG.
pub const NONE: i32 = 16;
pub const BLOCK: i32 = 17;
pub const CYCLIC: i32 = 18;
pub const DFLT_DARG: i64 = 19;

fn arg(msg: String) -> crate::error::Error {
    crate::error::Error::new(ErrorClass::Arg, msg)
}

fn ov() -> crate::error::Error {
    arg("darray size overflows".into())
}

/// Product of `v` in bytes-safe arithmetic.
fn prod(v: &[usize]) -> Result<isize> {
    v.iter()
        .try_fold(1isize, |p, &x| p.checked_mul(x as isize).ok_or_else(ov))
}

/// Stride in bytes between consecutive indices of dimension `dim`.
fn stride_of(gsizes: &[usize], dim: usize, c_order: bool, ext: isize) -> Result<isize> {
    let faster = if c_order {
        &gsizes[dim + 1..]
    } else {
        &gsizes[..dim]
    };
    prod(faster)?.checked_mul(ext).ok_or_else(ov)
}

/// The dimension varied fastest in memory.
fn is_first(dim: usize, n: usize, c_order: bool) -> bool {
    if c_order {
        dim == n - 1
    } else {
        dim == 0
    }
}

#[allow(clippy::too_many_arguments)]
fn block(
    gsizes: &[usize],
    dim: usize,
    nprocs: usize,
    coord: usize,
    darg: i64,
    c_order: bool,
    ext: isize,
    old: &Layout,
) -> Result<(Layout, isize)> {
    let global = gsizes[dim] as i64;
    let blk = if darg == DFLT_DARG {
        (global + nprocs as i64 - 1) / nprocs as i64
    } else {
        if darg <= 0 || darg * (nprocs as i64) < global {
            return err(
                ErrorClass::Arg,
                format!(
                    "dimension {dim}: block size {darg} times {nprocs} processes does not cover {global} elements"
                ),
            );
        }
        darg
    };
    let mysize = (global - blk * coord as i64).clamp(0, blk) as usize;
    let t = if is_first(dim, gsizes.len(), c_order) {
        Layout::contiguous(mysize, old)?
    } else {
        Layout::hvector(mysize, 1, stride_of(gsizes, dim, c_order, ext)?, old)?
    };
    let off = if mysize == 0 { 0 } else { blk * coord as i64 };
    Ok((t, off as isize))
}

#[allow(clippy::too_many_arguments)]
fn cyclic(
    gsizes: &[usize],
    dim: usize,
    nprocs: usize,
    coord: usize,
    darg: i64,
    c_order: bool,
    ext: isize,
    old: &Layout,
) -> Result<(Layout, isize)> {
    let blk = if darg == DFLT_DARG { 1 } else { darg };
    if blk <= 0 {
        return err(
            ErrorClass::Arg,
            format!("dimension {dim}: cyclic block size {darg}"),
        );
    }
    let (np, blk_u) = (nprocs as i64, blk);
    let st = coord as i64 * blk_u;
    let end = gsizes[dim] as i64 - 1;
    let local = if end < st {
        0
    } else {
        let span = end - st + 1;
        (span / (np * blk_u)) * blk_u + (span % (np * blk_u)).min(blk_u)
    };
    let (count, rem) = ((local / blk_u) as usize, (local % blk_u) as usize);
    let stride = (np * blk_u) as isize * stride_of(gsizes, dim, c_order, ext)?;
    let mut t = Layout::hvector(count, blk as usize, stride, old)?;
    if rem > 0 {
        let at = (count as isize).checked_mul(stride).ok_or_else(ov)?;
        t = Layout::structure(&[(1, 0, &t), (rem, at, old)])?;
    }
    if is_first(dim, gsizes.len(), c_order) {
        // Place the process's first block and give the dimension its full extent.
        let disp = (st as isize).checked_mul(ext).ok_or_else(ov)?;
        let full = (gsizes[dim] as isize).checked_mul(ext).ok_or_else(ov)?;
        t = Layout::resized(&Layout::hindexed(&[(1, disp)], &t)?, 0, full)?;
        return Ok((t, 0));
    }
    Ok((t, if local == 0 { 0 } else { st as isize }))
}

/// The layout MPI_Type_create_darray describes for process `rank` of `size`.
#[allow(clippy::too_many_arguments)]
pub fn darray(
    size: usize,
    rank: usize,
    gsizes: &[usize],
    distribs: &[i32],
    dargs: &[i64],
    psizes: &[usize],
    c_order: bool,
    old: &Layout,
) -> Result<Layout> {
    let n = gsizes.len();
    if n == 0 || distribs.len() != n || dargs.len() != n || psizes.len() != n {
        return err(
            ErrorClass::Arg,
            "darray needs ndims >= 1 entries in every array",
        );
    }
    if prod(psizes)? != size as isize || rank >= size {
        return err(
            ErrorClass::Arg,
            format!("process grid {psizes:?} does not hold {size} processes (rank {rank})"),
        );
    }
    // Row-major coordinates of `rank` in the process grid.
    let mut coords = vec![0; n];
    let (mut r, mut s) = (rank, size);
    for i in 0..n {
        s /= psizes[i].max(1);
        coords[i] = r / s.max(1);
        r %= s.max(1);
    }
    let ext = old.extent();
    let dims: Vec<usize> = if c_order {
        (0..n).rev().collect()
    } else {
        (0..n).collect()
    };
    let mut t = old.clone();
    let mut offs = vec![0isize; n];
    for &i in &dims {
        let (nt, off) = match distribs[i] {
            BLOCK => block(gsizes, i, psizes[i], coords[i], dargs[i], c_order, ext, &t)?,
            CYCLIC => cyclic(gsizes, i, psizes[i], coords[i], dargs[i], c_order, ext, &t)?,
            NONE => {
                if psizes[i] != 1 {
                    return err(
                        ErrorClass::Arg,
                        format!(
                            "dimension {i} is not distributed but has {} processes",
                            psizes[i]
                        ),
                    );
                }
                block(gsizes, i, 1, 0, DFLT_DARG, c_order, ext, &t)?
            }
            d => return err(ErrorClass::Arg, format!("dimension {i}: distribution {d}")),
        };
        t = nt;
        offs[i] = off;
    }
    // Element offset of the process's first element, then bytes.
    let mut disp = 0isize;
    let mut mult = 1isize;
    for &i in &dims {
        disp = disp
            .checked_add(offs[i].checked_mul(mult).ok_or_else(ov)?)
            .ok_or_else(ov)?;
        mult = mult.checked_mul(gsizes[i] as isize).ok_or_else(ov)?;
    }
    let disp = disp.checked_mul(ext).ok_or_else(ov)?;
    let full = mult.checked_mul(ext).ok_or_else(ov)?;
    Layout::resized(&Layout::hindexed(&[(1, disp)], &t)?, 0, full)
}
