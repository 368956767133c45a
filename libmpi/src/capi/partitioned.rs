//! Partitioned communication of the C ABI (MPI_Psend_init, MPI_Precv_init and their `_c`
//! forms, MPI_Pready, MPI_Pready_range, MPI_Pready_list, MPI_Parrived); the protocol is
//! `crate::partitioned`. Runs start with MPI_Start(all) and complete through Wait/Test.

use std::ffi::{c_int, c_void};

use super::*;

/// MPI_Psend_init(_c) (`send`) or MPI_Precv_init(_c).
#[allow(clippy::too_many_arguments)]
fn init(
    name: &str,
    send: bool,
    buf: *mut c_void,
    partitions: i64,
    count: Count,
    datatype: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    info: Handle,
    request: *mut Handle,
) -> c_int {
    let ci = comm_index(comm).unwrap_or(crate::comm::WORLD);
    call(name, ci, |rt| {
        let comm = comm_index(comm)?;
        rt.comm(comm)?;
        if request.is_null() {
            return Err(Error::new(ErrorClass::Arg, "request pointer is NULL"));
        }
        super::info::hints(info)?;
        // One partition's message: checks the type and gives its packed size.
        let part_bytes = message_c(buf, count, datatype)?.len;
        let h = datatype as usize;
        let layout = match crate::datatype::lookup(h) {
            Some(_) if !matches!(h, 0x229 | 0x22a | 0x22c | 0x22d) => None,
            _ => Some(crate::datatype::table::layout(h)?),
        };
        let id = if send {
            rt.psend_init(comm, buf.cast(), layout, partitions, part_bytes, peer, tag)?
        } else {
            rt.precv_init(comm, buf.cast(), layout, partitions, part_bytes, peer, tag)?
        };
        // SAFETY: checked non-NULL; the caller passes a writable MPI_Request.
        unsafe { request.write(request_handle(id)) };
        Ok(())
    })
}

macro_rules! init_fns {
    ($($name:ident / $pname:ident ($pt:ty, $ct:ty) = $send:expr;)*) => {$(
        mpi_fn! {
            fn $name / $pname(buf: *mut c_void, partitions: $pt, count: $ct, datatype: Handle,
                              peer: c_int, tag: c_int, comm: Handle, info: Handle,
                              request: *mut Handle) -> c_int {
                init(stringify!($name), $send, buf, partitions as i64, count as Count, datatype,
                     peer, tag, comm, info, request)
            }
        }
    )*};
}

init_fns! {
    MPI_Psend_init / PMPI_Psend_init (c_int, c_int) = true;
    MPI_Psend_init_c / PMPI_Psend_init_c (c_int, Count) = true;
    MPI_Precv_init / PMPI_Precv_init (c_int, c_int) = false;
    MPI_Precv_init_c / PMPI_Precv_init_c (c_int, Count) = false;
}

fn with_request(
    name: &str,
    request: Handle,
    f: impl FnOnce(&mut Runtime, pml::ReqId) -> Result<()>,
) -> c_int {
    call(name, crate::comm::WORLD, |rt| match request_id(request)? {
        None => Err(Error::new(
            ErrorClass::Request,
            format!("{name} of MPI_REQUEST_NULL"),
        )),
        Some(id) => f(rt, id),
    })
}

mpi_fn! {
    fn MPI_Pready / PMPI_Pready(partition: c_int, request: Handle) -> c_int {
        with_request("MPI_Pready", request, |rt, id| rt.pready(id, [partition as i64]))
    }
}

mpi_fn! {
    fn MPI_Pready_range / PMPI_Pready_range(partition_low: c_int, partition_high: c_int, request: Handle) -> c_int {
        with_request("MPI_Pready_range", request, |rt, id| {
            rt.pready(id, partition_low as i64..=partition_high as i64)
        })
    }
}

mpi_fn! {
    fn MPI_Pready_list / PMPI_Pready_list(length: c_int, array_of_partitions: *const c_int, request: Handle) -> c_int {
        with_request("MPI_Pready_list", request, |rt, id| {
            if length < 0 || (length > 0 && array_of_partitions.is_null()) {
                return Err(Error::new(ErrorClass::Arg, "bad length or NULL array of partitions"));
            }
            let parts: &[c_int] = if length == 0 {
                &[]
            } else {
                // SAFETY: checked non-NULL; the caller passes `length` ints.
                unsafe { std::slice::from_raw_parts(array_of_partitions, length as usize) }
            };
            rt.pready(id, parts.iter().map(|&p| p as i64))
        })
    }
}

mpi_fn! {
    fn MPI_Parrived / PMPI_Parrived(request: Handle, partition: c_int, flag: *mut c_int) -> c_int {
        with_request("MPI_Parrived", request, |rt, id| {
            if flag.is_null() {
                return Err(Error::new(ErrorClass::Arg, "flag is NULL"));
            }
            let arrived = rt.parrived(id, partition as i64)?;
            // SAFETY: checked non-NULL; the caller's int.
            unsafe { flag.write(arrived as c_int) };
            Ok(())
        })
    }
}
