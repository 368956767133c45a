//! Group calls of the C ABI. Empty results are MPI_GROUP_EMPTY; others live in the runtime's
//! group table at `GROUP_BASE + slot`, a range of their own so that a communicator or request
//! passed as a group is caught.

use std::ffi::c_int;

use super::*;
use crate::group::{Comparison, Group};

/// Group handles: `GROUP_BASE + slot`, below `GROUP_BASE + KIND_SPAN` (fits an int for MPI_Group_toint).
const GROUP_BASE: usize = 0x2000_0000;
const KIND_SPAN: usize = 0x1000_0000;
const IDENT: c_int = 201;
const SIMILAR: c_int = 203;
const UNEQUAL: c_int = 204;

/// The group behind a handle (a copy: groups are small).
pub(super) fn group_of(rt: &Runtime, h: Handle) -> Result<Group> {
    match h as usize {
        GROUP_EMPTY => Ok(Group::empty()),
        GROUP_NULL => Err(Error::new(
            ErrorClass::Group,
            "MPI_GROUP_NULL is not a valid group here",
        )),
        v if (GROUP_BASE..GROUP_BASE + KIND_SPAN).contains(&v) => {
            rt.objs.group(v - GROUP_BASE).cloned()
        }
        v => Err(Error::new(
            ErrorClass::Group,
            format!("{v:#x} is not a group handle"),
        )),
    }
}

/// A handle for `g`: MPI_GROUP_EMPTY when it has no members.
pub(super) fn new_group(rt: &mut Runtime, g: Group) -> Handle {
    if g.size() == 0 {
        return GROUP_EMPTY as Handle;
    }
    (GROUP_BASE + rt.objs.add_group(g)) as Handle
}

fn out_check(out: *mut Handle) -> Result<()> {
    if out.is_null() {
        return Err(Error::new(ErrorClass::Arg, "newgroup pointer is NULL"));
    }
    Ok(())
}

/// A `n`-element array argument as a slice (empty when n is 0, whatever the pointer).
///
/// # Safety
/// For n > 0, `p` is NULL or points to `n` readable elements.
unsafe fn array<'a, T>(p: *const T, n: c_int, what: &str) -> Result<&'a [T]> {
    if n < 0 {
        return Err(Error::new(ErrorClass::Arg, format!("n {n} is negative")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: guaranteed by the caller for n > 0, checked non-NULL.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

mpi_fn! {
    fn MPI_Group_size / PMPI_Group_size(group: Handle, size: *mut c_int) -> c_int {
        call("MPI_Group_size", crate::comm::WORLD, |rt| {
            let g = group_of(rt, group)?;
            if size.is_null() {
                return Err(Error::new(ErrorClass::Arg, "size pointer is NULL"));
            }
            // SAFETY: checked non-NULL.
            unsafe { *size = g.size() };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Group_rank / PMPI_Group_rank(group: Handle, rank: *mut c_int) -> c_int {
        call("MPI_Group_rank", crate::comm::WORLD, |rt| {
            let g = group_of(rt, group)?;
            if rank.is_null() {
                return Err(Error::new(ErrorClass::Arg, "rank pointer is NULL"));
            }
            let me = rt.comm(crate::comm::WORLD)?.rank;
            // SAFETY: checked non-NULL.
            unsafe { *rank = g.rank_of(me).unwrap_or(MPI_UNDEFINED) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Group_free / PMPI_Group_free(group: *mut Handle) -> c_int {
        call("MPI_Group_free", crate::comm::WORLD, |rt| {
            if group.is_null() {
                return Err(Error::new(ErrorClass::Arg, "group pointer is NULL"));
            }
            // SAFETY: checked non-NULL; the caller's MPI_Group.
            match unsafe { *group } as usize {
                GROUP_EMPTY => {}
                v if (GROUP_BASE..GROUP_BASE + KIND_SPAN).contains(&v) => rt.objs.free_group(v - GROUP_BASE)?,
                v => return Err(Error::new(ErrorClass::Group, format!("{v:#x} is not a group that can be freed"))),
            }
            // SAFETY: as above.
            unsafe { *group = GROUP_NULL as Handle };
            Ok(())
        })
    }
}

/// Shared body of the calls that make one group from another and a rank list.
fn derive(
    name: &str,
    group: Handle,
    newgroup: *mut Handle,
    f: impl FnOnce(&Group) -> Result<Group>,
) -> c_int {
    call(name, crate::comm::WORLD, |rt| {
        let g = group_of(rt, group)?;
        out_check(newgroup)?;
        let out = f(&g)?;
        let h = new_group(rt, out);
        // SAFETY: checked non-NULL.
        unsafe { *newgroup = h };
        Ok(())
    })
}

/// Shared body of the set operations on two groups.
fn combine(
    name: &str,
    a: Handle,
    b: Handle,
    newgroup: *mut Handle,
    f: impl FnOnce(&Group, &Group) -> Group,
) -> c_int {
    call(name, crate::comm::WORLD, |rt| {
        let (ga, gb) = (group_of(rt, a)?, group_of(rt, b)?);
        out_check(newgroup)?;
        let h = new_group(rt, f(&ga, &gb));
        // SAFETY: checked non-NULL.
        unsafe { *newgroup = h };
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Group_incl / PMPI_Group_incl(group: Handle, n: c_int, ranks: *const c_int, newgroup: *mut Handle) -> c_int {
        derive("MPI_Group_incl", group, newgroup, |g| {
            // SAFETY: the standard passes n ranks.
            g.incl(unsafe { array(ranks, n, "ranks")? })
        })
    }
}

mpi_fn! {
    fn MPI_Group_excl / PMPI_Group_excl(group: Handle, n: c_int, ranks: *const c_int, newgroup: *mut Handle) -> c_int {
        derive("MPI_Group_excl", group, newgroup, |g| {
            // SAFETY: the standard passes n ranks.
            g.excl(unsafe { array(ranks, n, "ranks")? })
        })
    }
}

mpi_fn! {
    fn MPI_Group_range_incl / PMPI_Group_range_incl(group: Handle, n: c_int, ranges: *const [c_int; 3], newgroup: *mut Handle) -> c_int {
        derive("MPI_Group_range_incl", group, newgroup, |g| {
            // SAFETY: the standard passes n (first, last, stride) triples.
            g.range_incl(unsafe { array(ranges, n, "ranges")? })
        })
    }
}

mpi_fn! {
    fn MPI_Group_range_excl / PMPI_Group_range_excl(group: Handle, n: c_int, ranges: *const [c_int; 3], newgroup: *mut Handle) -> c_int {
        derive("MPI_Group_range_excl", group, newgroup, |g| {
            // SAFETY: the standard passes n (first, last, stride) triples.
            g.range_excl(unsafe { array(ranges, n, "ranges")? })
        })
    }
}

mpi_fn! {
    fn MPI_Group_union / PMPI_Group_union(group1: Handle, group2: Handle, newgroup: *mut Handle) -> c_int {
        combine("MPI_Group_union", group1, group2, newgroup, Group::union)
    }
}

mpi_fn! {
    fn MPI_Group_intersection / PMPI_Group_intersection(group1: Handle, group2: Handle, newgroup: *mut Handle) -> c_int {
        combine("MPI_Group_intersection", group1, group2, newgroup, Group::intersection)
    }
}

mpi_fn! {
    fn MPI_Group_difference / PMPI_Group_difference(group1: Handle, group2: Handle, newgroup: *mut Handle) -> c_int {
        combine("MPI_Group_difference", group1, group2, newgroup, Group::difference)
    }
}

mpi_fn! {
    fn MPI_Group_translate_ranks / PMPI_Group_translate_ranks(group1: Handle, n: c_int, ranks1: *const c_int, group2: Handle, ranks2: *mut c_int) -> c_int {
        call("MPI_Group_translate_ranks", crate::comm::WORLD, |rt| {
            let (a, b) = (group_of(rt, group1)?, group_of(rt, group2)?);
            // SAFETY: the standard passes n ranks.
            let out = a.translate(unsafe { array(ranks1, n, "ranks1")? }, &b)?;
            if n > 0 && ranks2.is_null() {
                return Err(Error::new(ErrorClass::Arg, "ranks2 is NULL"));
            }
            // SAFETY: the standard gives room for n ranks at ranks2 (checked non-NULL if n > 0).
            unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), ranks2, out.len()) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Group_compare / PMPI_Group_compare(group1: Handle, group2: Handle, result: *mut c_int) -> c_int {
        call("MPI_Group_compare", crate::comm::WORLD, |rt| {
            let (a, b) = (group_of(rt, group1)?, group_of(rt, group2)?);
            if result.is_null() {
                return Err(Error::new(ErrorClass::Arg, "result pointer is NULL"));
            }
            let r = match a.compare(&b) {
                Comparison::Identical | Comparison::Congruent => IDENT,
                Comparison::Similar => SIMILAR,
                Comparison::Unequal => UNEQUAL,
            };
            // SAFETY: checked non-NULL.
            unsafe { *result = r };
            Ok(())
        })
    }
}
