//! Communicator management calls of the C ABI.

use std::ffi::{c_char, c_int, CStr};

use super::*;
use crate::group::{Comparison, Group, UNDEFINED};

const IDENT: c_int = 201;
const CONGRUENT: c_int = 202;
const SIMILAR: c_int = 203;
const UNEQUAL: c_int = 204;
const COMM_TYPE_SHARED: c_int = 221;
const COMM_TYPE_HW_GUIDED: c_int = 223;
const COMM_TYPE_RESOURCE_GUIDED: c_int = 224;
/// The info key of MPI_COMM_TYPE_HW_GUIDED / _RESOURCE_GUIDED, and the value naming the node.
const HW_RESOURCE_TYPE: &str = "mpi_hw_resource_type";
const SHARED_MEMORY: &str = "mpi_shared_memory";
const MAX_OBJECT_NAME: usize = 128;

/// Run `f` without holding the runtime (it may call user callbacks); errors go through `comm`.
pub(super) fn outside(name: &str, comm: usize, f: impl FnOnce() -> Result<()>) -> c_int {
    match f() {
        Ok(()) => MPI_SUCCESS,
        Err(e) => fail(name, comm, e),
    }
}

/// Write a new communicator (or MPI_COMM_NULL) through `out`, checked non-NULL earlier.
///
/// # Safety
/// `out` points to a writable MPI_Comm.
unsafe fn store_comm(out: *mut Handle, id: Option<usize>) {
    let h = id.map_or(COMM_NULL as Handle, comm_handle);
    // SAFETY: guaranteed by the caller.
    unsafe { out.write(h) };
}

fn null_check<T>(p: *const T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{what} pointer is NULL"),
        ));
    }
    Ok(())
}

/// The communicator slot of a handle, for error reporting before it is known to be valid.
fn err_comm(comm: Handle) -> usize {
    comm_index(comm).unwrap_or(crate::comm::WORLD)
}

mpi_fn! {
    fn MPI_Comm_dup / PMPI_Comm_dup(comm: Handle, newcomm: *mut Handle) -> c_int {
        outside("MPI_Comm_dup", err_comm(comm), || {
            let c = comm_index(comm)?;
            null_check(newcomm, "newcomm")?;
            let id = crate::comm_ops::dup(c)?;
            // SAFETY: checked non-NULL.
            unsafe { store_comm(newcomm, Some(id)) };
            Ok(())
        })
    }
}

/// MPI_Comm_dup, then the new communicator's hints are `info`'s instead of the parent's.
fn dup_with_info(name: &str, comm: Handle, info: Handle, newcomm: *mut Handle) -> c_int {
    let hints = match super::info::hints(info) {
        Ok(h) => h,
        Err(e) => return fail(name, err_comm(comm), e),
    };
    // SAFETY: same contract as MPI_Comm_dup for comm and newcomm.
    let rc = unsafe { PMPI_Comm_dup(comm, newcomm) };
    if rc != MPI_SUCCESS {
        return rc;
    }
    call(name, err_comm(comm), |rt| {
        // SAFETY: MPI_Comm_dup succeeded, so newcomm is a valid pointer it wrote.
        let id = comm_index(unsafe { *newcomm })?;
        rt.comm_mut(id)?.info = hints;
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info(comm: Handle, info: Handle, newcomm: *mut Handle) -> c_int {
        dup_with_info("MPI_Comm_dup_with_info", comm, info, newcomm)
    }
}

mpi_fn! {
    fn MPI_Comm_split / PMPI_Comm_split(comm: Handle, color: c_int, key: c_int, newcomm: *mut Handle) -> c_int {
        if multiple_forms(comm) {
            // An intracommunicator (multiple_forms is false for the others), split outside
            // the runtime (comm_ops::split_outside).
            return outside("MPI_Comm_split", err_comm(comm), || {
                null_check(newcomm, "newcomm")?;
                let id = crate::comm_ops::split_outside(comm_index(comm)?, color, key)?;
                // SAFETY: checked non-NULL.
                unsafe { store_comm(newcomm, id) };
                Ok(())
            });
        }
        if is_inter(comm) {
            // Outside the runtime: the agreement waits for both groups there (inter_agree.rs).
            return outside("MPI_Comm_split", err_comm(comm), || {
                null_check(newcomm, "newcomm")?;
                let id = crate::comm_inter::inter_split(&mut crate::comm_agree::Outside, comm_index(comm)?, color, key)?;
                // SAFETY: checked non-NULL.
                unsafe { store_comm(newcomm, id) };
                Ok(())
            });
        }
        call("MPI_Comm_split", err_comm(comm), |rt| {
            let c = comm_index(comm)?;
            null_check(newcomm, "newcomm")?;
            let id = rt.comm_split(c, color, key)?;
            // SAFETY: checked non-NULL.
            unsafe { store_comm(newcomm, id) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_split_type / PMPI_Comm_split_type(comm: Handle, split_type: c_int, key: c_int, info: Handle, newcomm: *mut Handle) -> c_int {
        // What to split by, decided under the runtime; the splits then run as MPI_Comm_split's
        // do (outside the runtime under MULTIPLE).
        let plan = |rt: &mut Runtime| -> Result<(usize, crate::info::Info, c_int, Option<c_int>)> {
            let c = comm_index(comm)?;
            null_check(newcomm, "newcomm")?;
            let hints = super::info::hints(info)?;
            // Every member takes part in the exchange, whatever its split type, so none waits.
            let node = rt.objs.local_ranks.iter().copied().min().unwrap_or(0);
            // The guided kinds name their resource in the info: shared memory is the node;
            // a hardware level (hwloc's names: Package, NUMANode, L3Cache, Core, PU, ...)
            // splits the node by the object mpirun bound each rank within. A rank not held
            // to one such object, or any other request, gets MPI_COMM_NULL.
            let resource = match split_type {
                COMM_TYPE_HW_GUIDED | COMM_TYPE_RESOURCE_GUIDED => hints.get(HW_RESOURCE_TYPE)?,
                _ => None,
            };
            let (color, sub) = match (split_type, resource) {
                (COMM_TYPE_SHARED, _) => (node, None),
                (COMM_TYPE_HW_GUIDED | COMM_TYPE_RESOURCE_GUIDED, Some(SHARED_MEMORY)) => (node, None),
                (COMM_TYPE_HW_GUIDED, Some(r)) => match crate::locality::own(r) {
                    crate::locality::Within::One(i) => (node, Some(i as c_int)),
                    _ => (UNDEFINED, None),
                },
                _ => (UNDEFINED, None),
            };
            // Within the node, by object: a second split over the node's ranks only.
            let second = (split_type == COMM_TYPE_HW_GUIDED && resource != Some(SHARED_MEMORY))
                .then(|| sub.unwrap_or(UNDEFINED));
            Ok((c, hints, color, second))
        };
        let multiple_intra = multiple_forms(comm);
        if multiple_intra {
            return outside("MPI_Comm_split_type", err_comm(comm), || {
                let (c, hints, color, second) = runtime::with(plan)?;
                let mut id = crate::comm_ops::split_outside(c, color, key)?;
                if let (Some(node_comm), Some(sub)) = (id, second) {
                    id = crate::comm_ops::split_outside(node_comm, sub, key)?;
                    // New, so no attributes to delete.
                    runtime::with(|rt| {
                        rt.comms[node_comm] = None;
                        Ok(())
                    })?;
                }
                if let Some(id) = id {
                    runtime::with(|rt| {
                        rt.comm_mut(id)?.info = hints;
                        Ok(())
                    })?;
                }
                // SAFETY: checked non-NULL in `plan`.
                unsafe { store_comm(newcomm, id) };
                Ok(())
            });
        }
        call("MPI_Comm_split_type", err_comm(comm), |rt| {
            let (c, hints, color, second) = plan(rt)?;
            let mut id = rt.comm_split(c, color, key)?;
            if let (Some(node_comm), Some(sub)) = (id, second) {
                id = rt.comm_split(node_comm, sub, key)?;
                rt.comms[node_comm] = None; // new, so no attributes to delete
            }
            if let Some(id) = id {
                rt.comm_mut(id)?.info = hints;
            }
            // SAFETY: checked non-NULL.
            unsafe { store_comm(newcomm, id) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_create / PMPI_Comm_create(comm: Handle, group: Handle, newcomm: *mut Handle) -> c_int {
        if multiple_forms(comm) {
            // An intracommunicator's: the split (outside the runtime) of the group's members,
            // keyed by their rank in the group (the new order). The processes may pass
            // disjoint groups (MPI 2.2), each making its own: the color names the group by its
            // first member's rank in the parent. Anything unusual, errors included, takes the
            // general path below.
            let plan = comm_index(comm).and_then(|c| runtime::with(|rt| {
                let p = rt.comm(c)?;
                let g = super::group::group_of(rt, group)?;
                let fits = !p.is_inter() && g.members().iter().all(|w| p.group.contains(w));
                let first = g.members().first().and_then(|w| p.group.iter().position(|x| x == w));
                let me = p.group[p.rank as usize];
                Ok(fits.then(|| {
                    let color = first.map_or(UNDEFINED, |f| f as i32);
                    (c, g.rank_of(me).map_or((UNDEFINED, 0), |r| (color, r)))
                }))
            }));
            if let Ok(Some((c, (color, key)))) = plan {
                return outside("MPI_Comm_create", err_comm(comm), || {
                    null_check(newcomm, "newcomm")?;
                    let id = crate::comm_ops::split_outside(c, color, key)?;
                    // SAFETY: checked non-NULL.
                    unsafe { store_comm(newcomm, id) };
                    Ok(())
                });
            }
        }
        if is_inter(comm) {
            return outside("MPI_Comm_create", err_comm(comm), || {
                let c = comm_index(comm)?;
                null_check(newcomm, "newcomm")?;
                let g = runtime::with(|rt| super::group::group_of(rt, group))?;
                let id = crate::comm_inter::inter_create(&mut crate::comm_agree::Outside, c, &g)?;
                // SAFETY: checked non-NULL.
                unsafe { store_comm(newcomm, id) };
                Ok(())
            });
        }
        call("MPI_Comm_create", err_comm(comm), |rt| {
            let c = comm_index(comm)?;
            null_check(newcomm, "newcomm")?;
            let g = super::group::group_of(rt, group)?;
            let id = rt.comm_create(c, &g)?;
            // SAFETY: checked non-NULL.
            unsafe { store_comm(newcomm, id) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_free / PMPI_Comm_free(comm: *mut Handle) -> c_int {
        if comm.is_null() {
            return fail("MPI_Comm_free", crate::comm::WORLD, Error::new(ErrorClass::Arg, "comm pointer is NULL"));
        }
        // SAFETY: checked non-NULL; the caller's MPI_Comm.
        let h = unsafe { *comm };
        outside("MPI_Comm_free", err_comm(h), || {
            crate::comm_ops::free(comm_index(h)?)?;
            // SAFETY: checked non-NULL above.
            unsafe { comm.write(COMM_NULL as Handle) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_disconnect / PMPI_Comm_disconnect(comm: *mut Handle) -> c_int {
        if comm.is_null() {
            return fail("MPI_Comm_disconnect", crate::comm::WORLD, Error::new(ErrorClass::Arg, "comm pointer is NULL"));
        }
        // SAFETY: checked non-NULL; the caller's MPI_Comm.
        let h = unsafe { *comm };
        outside("MPI_Comm_disconnect", err_comm(h), || {
            crate::comm_ops::disconnect(comm_index(h)?)?;
            // SAFETY: checked non-NULL above.
            unsafe { comm.write(COMM_NULL as Handle) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_compare / PMPI_Comm_compare(comm1: Handle, comm2: Handle, result: *mut c_int) -> c_int {
        call("MPI_Comm_compare", crate::comm::WORLD, |rt| {
            let (a, b) = (comm_index(comm1)?, comm_index(comm2)?);
            null_check(result, "result")?;
            let (ca, cb) = (rt.comm(a)?, rt.comm(b)?);
            let ga = Group::new(ca.group.clone());
            let gb = Group::new(cb.group.clone());
            // Intercommunicators compare both groups; the weaker result counts.
            let remote = match (&ca.remote, &cb.remote) {
                (None, None) => Comparison::Identical,
                (Some(ra), Some(rb)) => Group::new(ra.clone()).compare(&Group::new(rb.clone())),
                _ => Comparison::Unequal,
            };
            let rank = |c: &Comparison| match c {
                Comparison::Identical | Comparison::Congruent => 0,
                Comparison::Similar => 1,
                Comparison::Unequal => 2,
            };
            let worst = rank(&ga.compare(&gb)).max(rank(&remote));
            let r = match worst {
                _ if a == b => IDENT,
                0 => CONGRUENT,
                1 => SIMILAR,
                _ => UNEQUAL,
            };
            // SAFETY: checked non-NULL.
            unsafe { *result = r };
            Ok(())
        })
    }
}

/// MPI_Comm_idup(_with_info): the duplicate's slot and attributes are made at once and its
/// context id arrives through a collective schedule (`comm_idup.rs`), so the call does not
/// wait for the other members.
fn idup(
    name: &str,
    comm: Handle,
    info: Option<Handle>,
    newcomm: *mut Handle,
    request: *mut Handle,
) -> c_int {
    outside(name, err_comm(comm), || {
        let c = comm_index(comm)?;
        null_check(request, "request")?;
        null_check(newcomm, "newcomm")?;
        let hints = match info {
            Some(h) => Some(runtime::with(|_| super::info::hints(h))?),
            None => None,
        };
        let mut req = None;
        let id = crate::comm_ops::dup_via(c, |rt| {
            let (slot, r) = rt.idup_bare(c, crate::coll::Space::Nonblocking)?;
            req = Some(r);
            Ok(slot)
        })?;
        let req = req.expect("set by a successful dup_via");
        if let Some(h) = hints {
            runtime::with(|rt| {
                rt.comm_mut(id)?.info = h;
                Ok(())
            })?;
        }
        // SAFETY: both checked non-NULL; the caller's MPI_Comm and MPI_Request.
        unsafe {
            store_comm(newcomm, Some(id));
            request.write(request_handle(req));
        }
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Comm_idup / PMPI_Comm_idup(comm: Handle, newcomm: *mut Handle, request: *mut Handle) -> c_int {
        idup("MPI_Comm_idup", comm, None, newcomm, request)
    }
}

mpi_fn! {
    fn MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info(comm: Handle, info: Handle, newcomm: *mut Handle, request: *mut Handle) -> c_int {
        idup("MPI_Comm_idup_with_info", comm, Some(info), newcomm, request)
    }
}

mpi_fn! {
    fn MPI_Comm_set_name / PMPI_Comm_set_name(comm: Handle, comm_name: *const c_char) -> c_int {
        call("MPI_Comm_set_name", err_comm(comm), |rt| {
            let c = comm_index(comm)?;
            null_check(comm_name, "comm_name")?;
            // SAFETY: checked non-NULL; the standard passes a NUL-terminated string.
            let mut name = unsafe { CStr::from_ptr(comm_name) }.to_string_lossy().into_owned();
            // Cut to MPI_MAX_OBJECT_NAME - 1 bytes, on a character boundary.
            while name.len() > MAX_OBJECT_NAME - 1 {
                name.pop();
            }
            rt.comm_mut(c)?.name = name;
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_get_name / PMPI_Comm_get_name(comm: Handle, comm_name: *mut c_char, resultlen: *mut c_int) -> c_int {
        call("MPI_Comm_get_name", err_comm(comm), |rt| {
            null_check(comm_name, "comm_name")?;
            null_check(resultlen, "resultlen")?;
            // MPI_COMM_NULL is named, as Open MPI and MPICH name it (mpi4py's tests expect it).
            let name = if comm as usize == COMM_NULL {
                b"MPI_COMM_NULL".as_slice()
            } else {
                rt.comm(comm_index(comm)?)?.name.as_bytes()
            };
            let n = name.len().min(MAX_OBJECT_NAME - 1);
            // SAFETY: the standard requires MPI_MAX_OBJECT_NAME bytes at comm_name; n + 1 fits.
            unsafe {
                std::ptr::copy_nonoverlapping(name.as_ptr(), comm_name.cast(), n);
                *comm_name.add(n) = 0;
                *resultlen = n as c_int;
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_group / PMPI_Comm_group(comm: Handle, group: *mut Handle) -> c_int {
        call("MPI_Comm_group", err_comm(comm), |rt| {
            let c = comm_index(comm)?;
            null_check(group, "group")?;
            let g = Group::new(rt.comm(c)?.group.clone());
            let h = super::group::new_group(rt, g);
            // SAFETY: checked non-NULL.
            unsafe { *group = h };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_create_group / PMPI_Comm_create_group(comm: Handle, group: Handle, tag: c_int, newcomm: *mut Handle) -> c_int {
        // Waits outside the runtime under MULTIPLE (comm_agree::Outside): only the group's
        // members call, so the threads of one process may be in calls for different groups.
        outside("MPI_Comm_create_group", err_comm(comm), || {
            let c = comm_index(comm)?;
            null_check(newcomm, "newcomm")?;
            let (g, me) = runtime::with(|rt| {
                Ok((super::group::group_of(rt, group)?, rt.comm(crate::comm::WORLD)?.rank))
            })?;
            // Only members call; an empty group (or one without the caller) gives nothing.
            let id = match g.rank_of(me) {
                Some(_) => Some(crate::comm_ops::create_group(&mut crate::comm_agree::Outside, c, &g, tag)?),
                None => None,
            };
            // SAFETY: checked non-NULL.
            unsafe { store_comm(newcomm, id) };
            Ok(())
        })
    }
}

/// Whether `comm` is an intercommunicator (false for a bad handle: the common form reports
/// it). Calls creating from an intercommunicator wait outside the runtime (`comm_inter`).
pub(super) fn is_inter(comm: Handle) -> bool {
    comm_index(comm)
        .and_then(|c| runtime::with(|rt| Ok(rt.comm(c)?.is_inter())))
        .unwrap_or(false)
}

/// Whether `comm`'s members all run MPI_THREAD_MULTIPLE and so take the creation forms that
/// wait outside the runtime (`comm_ops::multiple_forms`, agreed at every level); a bad handle
/// is false, and the common form reports it.
pub(super) fn multiple_forms(comm: Handle) -> bool {
    comm_index(comm)
        .and_then(crate::comm_ops::multiple_forms)
        .unwrap_or(false)
}
