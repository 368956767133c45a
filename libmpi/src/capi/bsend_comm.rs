//! MPI 4.1's buffer calls: flushing the process's buffer (MPI_Buffer_flush, _iflush) and a
//! communicator's own buffer (MPI_Comm_attach_buffer, _detach_buffer, _flush_buffer,
//! _iflush_buffer, int and `_c` forms). Buffered sends on a communicator with a buffer of its
//! own use it instead of the process's (`crate::p2p::Bsend::of`). A communicator freed with a
//! buffer still attached keeps it until MPI_Finalize (detach it first).

use std::ffi::{c_int, c_void};

use super::p2p_modes::{hand_back, BUFFER_AUTOMATIC};
use super::*;

mpi_fn! {
    fn MPI_Buffer_flush / PMPI_Buffer_flush() -> c_int {
        call_ready("MPI_Buffer_flush", crate::comm::WORLD, |rt| rt.bsend_flushed_one(None), |rt| {
            rt.bsend_flush_one(None);
            Ok(())
        })
    }
}

/// Write `id` to a request pointer (MPI_ERR_REQUEST when NULL).
fn out_request(request: *mut Handle, id: pml::ReqId) -> Result<()> {
    if request.is_null() {
        return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
    }
    // SAFETY: checked non-NULL; the caller's MPI_Request.
    unsafe { request.write(request_handle(id)) };
    Ok(())
}

mpi_fn! {
    fn MPI_Buffer_iflush / PMPI_Buffer_iflush(request: *mut Handle) -> c_int {
        call("MPI_Buffer_iflush", crate::comm::WORLD, |rt| {
            let id = rt.bsend.iflush(&mut rt.pml);
            out_request(request, id)
        })
    }
}

fn comm_attach(name: &str, comm: Handle, buffer: *mut c_void, size: Count) -> c_int {
    let ci = comm_index(comm).unwrap_or(crate::comm::WORLD);
    call(name, ci, |rt| {
        let c = comm_index(comm)?;
        rt.comm(c)?;
        if size < 0 {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("buffer size {size} is negative"),
            ));
        }
        let automatic = buffer as usize == BUFFER_AUTOMATIC;
        rt.bsend
            .comm_attach(c, buffer.cast(), size as usize, automatic)
    })
}

mpi_fn! {
    fn MPI_Comm_attach_buffer / PMPI_Comm_attach_buffer(comm: Handle, buffer: *mut c_void, size: c_int) -> c_int {
        comm_attach("MPI_Comm_attach_buffer", comm, buffer, size as Count)
    }
}

mpi_fn! {
    fn MPI_Comm_attach_buffer_c / PMPI_Comm_attach_buffer_c(comm: Handle, buffer: *mut c_void, size: Count) -> c_int {
        comm_attach("MPI_Comm_attach_buffer_c", comm, buffer, size)
    }
}

/// Whether `comm`'s own buffer has no buffered send in flight (also when it has none, or the
/// handle is bad: the call then reports that).
fn comm_flushed(rt: &mut Runtime, comm: Handle) -> bool {
    comm_index(comm).map_or(true, |c| rt.bsend_flushed_one(Some(c)))
}

/// MPI_Comm_detach_buffer(_c): flush, then hand back the buffer; `store` writes the size in
/// the call's width (the int form refuses a size an int cannot hold, leaving it attached).
fn comm_detach(
    name: &str,
    comm: Handle,
    buffer_addr: *mut c_void,
    size_max: usize,
    store: impl FnOnce(usize),
) -> c_int {
    let ci = comm_index(comm).unwrap_or(crate::comm::WORLD);
    call_ready(
        name,
        ci,
        |rt| comm_flushed(rt, comm),
        |rt| {
            let c = comm_index(comm)?;
            rt.comm(c)?;
            if buffer_addr.is_null() {
                return Err(Error::new(
                    ErrorClass::Arg,
                    "buffer address or size pointer is NULL",
                ));
            }
            let Some(b) = rt.bsend.comm(c) else {
                return Err(Error::new(
                    ErrorClass::Buffer,
                    "the communicator has no buffer attached",
                ));
            };
            if b.size() > size_max {
                return Err(Error::new(ErrorClass::Count, format!(
                "the attached buffer's {} bytes do not fit the size argument (at most {size_max}); use {name}_c",
                b.size())));
            }
            let automatic = b.is_automatic();
            rt.bsend_flush_one(Some(c));
            let (base, n) = rt.bsend.comm_detach(c)?;
            // SAFETY: buffer_addr checked non-NULL above.
            unsafe { hand_back(buffer_addr, automatic, base, n, store) };
            Ok(())
        },
    )
}

mpi_fn! {
    fn MPI_Comm_detach_buffer / PMPI_Comm_detach_buffer(comm: Handle, buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
        if size.is_null() {
            return comm_detach("MPI_Comm_detach_buffer", comm, std::ptr::null_mut(), 0, |_| ());
        }
        // SAFETY: checked non-NULL: the caller's int.
        comm_detach("MPI_Comm_detach_buffer", comm, buffer_addr, c_int::MAX as usize, |n| unsafe { size.write(n as c_int) })
    }
}

mpi_fn! {
    fn MPI_Comm_detach_buffer_c / PMPI_Comm_detach_buffer_c(comm: Handle, buffer_addr: *mut c_void, size: *mut Count) -> c_int {
        if size.is_null() {
            return comm_detach("MPI_Comm_detach_buffer_c", comm, std::ptr::null_mut(), 0, |_| ());
        }
        // SAFETY: checked non-NULL: the caller's MPI_Count.
        comm_detach("MPI_Comm_detach_buffer_c", comm, buffer_addr, Count::MAX as usize, |n| unsafe { size.write(n as Count) })
    }
}

mpi_fn! {
    fn MPI_Comm_flush_buffer / PMPI_Comm_flush_buffer(comm: Handle) -> c_int {
        let ci = comm_index(comm).unwrap_or(crate::comm::WORLD);
        call_ready("MPI_Comm_flush_buffer", ci, |rt| comm_flushed(rt, comm), |rt| {
            let c = comm_index(comm)?;
            rt.comm(c)?;
            rt.bsend_flush_one(Some(c));
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_iflush_buffer / PMPI_Comm_iflush_buffer(comm: Handle, request: *mut Handle) -> c_int {
        let ci = comm_index(comm).unwrap_or(crate::comm::WORLD);
        call("MPI_Comm_iflush_buffer", ci, |rt| {
            let c = comm_index(comm)?;
            rt.comm(c)?;
            // A communicator without a buffer of its own: nothing of its own to flush.
            let id = match rt.bsend.comm(c) {
                Some(b) => b.iflush(&mut rt.pml),
                None => rt.pml.request_for(pml::Started::Done(empty_status())),
            };
            out_request(request, id)
        })
    }
}
