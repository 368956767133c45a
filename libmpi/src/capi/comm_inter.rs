//! Intercommunicator calls of the C ABI (`crate::comm_inter` does the work), and
//! MPI_Comm_create_from_group, which shares the string-tag handling.

use std::ffi::{c_char, c_int, CStr};

use super::*;
use crate::comm_agree::Outside;
use crate::group::Group;

fn null_check<T>(p: *const T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{what} pointer is NULL"),
        ));
    }
    Ok(())
}

fn err_comm(comm: Handle) -> usize {
    comm_index(comm).unwrap_or(crate::comm::WORLD)
}

/// A string tag as a valid integer tag (0..=TAG_UB): the same string gives the same tag in
/// every process (FNV-1a, not the process-seeded std hasher).
///
/// # Safety
/// `s` is NULL (an error) or a NUL-terminated string.
unsafe fn string_tag(s: *const c_char) -> Result<i32> {
    null_check(s, "stringtag")?;
    // SAFETY: the caller's contract.
    let bytes = unsafe { CStr::from_ptr(s) }.to_bytes();
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    Ok((h & 0x7fff_ffff) as i32)
}

mpi_fn! {
    fn MPI_Intercomm_create / PMPI_Intercomm_create(local_comm: Handle, local_leader: c_int, peer_comm: Handle, remote_leader: c_int, tag: c_int, newintercomm: *mut Handle) -> c_int {
        // Outside the runtime: the agreement waits for both groups there (inter_agree.rs).
        super::comm::outside("MPI_Intercomm_create", err_comm(local_comm), || {
            let local = comm_index(local_comm)?;
            null_check(newintercomm, "newintercomm")?;
            // peer_comm is significant only at the local leader.
            let leader = runtime::with(|rt| Ok(rt.comm(local)?.rank == local_leader))?;
            let peer = if leader { comm_index(peer_comm)? } else { crate::comm::WORLD };
            let id = crate::comm_inter::intercomm_create(&mut Outside, local, local_leader, peer, remote_leader, tag)?;
            // SAFETY: checked non-NULL.
            unsafe { newintercomm.write(comm_handle(id)) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Intercomm_create_from_groups / PMPI_Intercomm_create_from_groups(local_group: Handle, local_leader: c_int, remote_group: Handle, remote_leader: c_int, stringtag: *const c_char, info: Handle, errhandler: Handle, newintercomm: *mut Handle) -> c_int {
        // Errors go to the errhandler argument.
        match (|| {
            null_check(newintercomm, "newintercomm")?;
            let (lg, rg, me) = runtime::with(|rt| {
                let lg = super::group::group_of(rt, local_group)?;
                let rg = super::group::group_of(rt, remote_group)?;
                Ok((lg, rg, rt.comm(crate::comm::WORLD)?.rank))
            })?;
            let hints = super::info::hints(info)?;
            let eh = super::env::errhandler_of(errhandler)?;
            // SAFETY: the standard passes a NUL-terminated string.
            let tag = unsafe { string_tag(stringtag)? };
            if lg.rank_of(me).is_none() {
                return Err(Error::new(ErrorClass::Group, "the calling process is not in local_group"));
            }
            let id = crate::comm_inter::intercomm_from_groups(&mut Outside, &lg, local_leader, &rg, remote_leader, tag)?;
            runtime::with(|rt| {
                let c = rt.comm_mut(id)?;
                c.info = hints;
                c.errhandler = eh;
                Ok(())
            })?;
            // SAFETY: checked non-NULL.
            unsafe { newintercomm.write(comm_handle(id)) };
            Ok(())
        })() {
            Ok(()) => MPI_SUCCESS,
            Err(e) => fail_through("MPI_Intercomm_create_from_groups", errhandler, e),
        }
    }
}

mpi_fn! {
    fn MPI_Comm_create_from_group / PMPI_Comm_create_from_group(group: Handle, stringtag: *const c_char, info: Handle, errhandler: Handle, newcomm: *mut Handle) -> c_int {
        // Errors go to the errhandler argument.
        // As MPI_Comm_create_group, waiting outside the runtime under MULTIPLE.
        match (|| {
            null_check(newcomm, "newcomm")?;
            let (g, hints, eh, tag, me) = runtime::with(|rt| {
                let g = super::group::group_of(rt, group)?;
                let hints = super::info::hints(info)?;
                let eh = super::env::errhandler_of(errhandler)?;
                // SAFETY: the standard passes a NUL-terminated string.
                let tag = unsafe { string_tag(stringtag)? };
                Ok((g, hints, eh, tag, rt.comm(crate::comm::WORLD)?.rank))
            })?;
            let id = match g.rank_of(me) {
                // Every process of the job is in MPI_COMM_WORLD: the group's members meet there.
                Some(_) => {
                    let id = crate::comm_ops::create_group(&mut crate::comm_agree::Outside, crate::comm::WORLD, &g, tag)?;
                    runtime::with(|rt| {
                        let c = rt.comm_mut(id)?;
                        c.info = hints;
                        c.errhandler = eh;
                        super::session::note_comm(rt, group, id);
                        Ok(comm_handle(id))
                    })?
                }
                None => COMM_NULL as Handle,
            };
            // SAFETY: checked non-NULL.
            unsafe { newcomm.write(id) };
            Ok(())
        })() {
            Ok(()) => MPI_SUCCESS,
            Err(e) => fail_through("MPI_Comm_create_from_group", errhandler, e),
        }
    }
}

mpi_fn! {
    fn MPI_Intercomm_merge / PMPI_Intercomm_merge(intercomm: Handle, high: c_int, newintracomm: *mut Handle) -> c_int {
        super::comm::outside("MPI_Intercomm_merge", err_comm(intercomm), || {
            let c = comm_index(intercomm)?;
            null_check(newintracomm, "newintracomm")?;
            let id = crate::comm_inter::intercomm_merge(&mut Outside, c, high != 0)?;
            // SAFETY: checked non-NULL.
            unsafe { newintracomm.write(comm_handle(id)) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_test_inter / PMPI_Comm_test_inter(comm: Handle, flag: *mut c_int) -> c_int {
        call("MPI_Comm_test_inter", err_comm(comm), |rt| {
            let inter = rt.comm(comm_index(comm)?)?.is_inter();
            null_check(flag, "flag")?;
            // SAFETY: checked non-NULL.
            unsafe { *flag = inter as c_int };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_remote_size / PMPI_Comm_remote_size(comm: Handle, size: *mut c_int) -> c_int {
        call("MPI_Comm_remote_size", err_comm(comm), |rt| {
            let n = crate::comm_inter::need_inter(rt.comm(comm_index(comm)?)?)?.len();
            null_check(size, "size")?;
            // SAFETY: checked non-NULL.
            unsafe { *size = n as c_int };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_remote_group / PMPI_Comm_remote_group(comm: Handle, group: *mut Handle) -> c_int {
        call("MPI_Comm_remote_group", err_comm(comm), |rt| {
            let g = crate::comm_inter::need_inter(rt.comm(comm_index(comm)?)?)?.to_vec();
            null_check(group, "group")?;
            let h = super::group::new_group(rt, Group::new(g));
            // SAFETY: checked non-NULL.
            unsafe { *group = h };
            Ok(())
        })
    }
}
