//! Persistent collectives (MPI_Bcast_init, ..., MPI_Neighbor_alltoallw_init, int and `_c`
//! forms): the init call builds the schedule once (checking the arguments; nothing is sent),
//! takes the communicator's next collective tag and keeps both; each MPI_Start starts a copy of
//! that schedule as the I- form would, with that tag. So runs match across ranks by the order of
//! the init calls (which MPI-4 makes collective), whatever order the starts come in; successive
//! runs of one request reuse the tag, which is safe because each pair's messages of a run
//! precede those of the next and match in order. The count, displacement and datatype arrays
//! are read only at init: a caller may free them once it returns (mpi4py does), as Open MPI
//! and MPICH allow; the buffers must stay valid until the request is freed.

use std::ffi::c_int;

use super::*;
use crate::coll::Builder;

type Build = Box<dyn Fn(&mut Builder) -> Result<()>>;

/// MPI_*_init: check the arguments and build the schedule now, then hand out an inactive
/// persistent request.
pub(super) fn coll_init(
    name: &str,
    comm: Handle,
    info: Handle,
    request: *mut Handle,
    build: Build,
) -> c_int {
    let ci = comm_index(comm).unwrap_or(crate::comm::WORLD);
    call(name, ci, |rt| {
        let comm = comm_index(comm)?;
        rt.comm(comm)?;
        if request.is_null() {
            return Err(Error::new(ErrorClass::Arg, "request pointer is NULL"));
        }
        super::info::hints(info)?;
        let id = crate::persist::coll_init(rt, comm, None, build)?;
        // SAFETY: checked non-NULL; the caller passes a writable MPI_Request.
        unsafe { request.write(request_handle(id)) };
        Ok(())
    })
}

/// Export a persistent collective's int and large-count forms around the schedule builder
/// its blocking and I- forms use (same argument syntax as `coll_fns!`).
macro_rules! init_fns {
    ($name:ident / $pname:ident, $cname:ident / $pcname:ident,
     $build:ident ( $($arg:ident : $ty:ty $(| $cty:ty)?),* )) => {
        mpi_fn! {
            fn $name / $pname($($arg: $ty,)* comm: Handle, info: Handle, request: *mut Handle) -> c_int {
                // SAFETY: the caller passes arguments as the standard requires and keeps the
                // buffers and arrays valid until the request is freed.
                $crate::capi::coll_init::coll_init(stringify!($name), comm, info, request,
                    Box::new(move |b| unsafe { $build(b, $($arg),*) }))
            }
        }
        mpi_fn! {
            fn $cname / $pcname($($arg: pick!($ty $(, $cty)?),)* comm: Handle, info: Handle, request: *mut Handle) -> c_int {
                // SAFETY: as for the int form.
                $crate::capi::coll_init::coll_init(stringify!($cname), comm, info, request,
                    Box::new(move |b| unsafe { $build(b, $($arg),*) }))
            }
        }
    };
}
pub(super) use init_fns;

mpi_fn! {
    fn MPI_Barrier_init / PMPI_Barrier_init(comm: Handle, info: Handle, request: *mut Handle) -> c_int {
        coll_init("MPI_Barrier_init", comm, info, request, Box::new(|b| {
            crate::coll::algos::barrier(b);
            Ok(())
        }))
    }
}
