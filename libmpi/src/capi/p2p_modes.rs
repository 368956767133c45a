//! Send modes (synchronous, buffered, ready), the attached buffer, persistent requests and
//! MPI_Sendrecv_replace in the C ABI.

use std::ffi::{c_int, c_void};

use super::p2p::{check_buf, err_comm};
use super::*;
use crate::pml::request::{PersistentOp, SendMode};

/// MPI_BUFFER_AUTOMATIC as the ABI defines it.
const BUFFER_AUTOMATIC: usize = 2;

fn write_request(request: *mut Handle, id: pml::ReqId) -> Result<()> {
    if request.is_null() {
        return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
    }
    // SAFETY: checked non-NULL; the caller passes a writable MPI_Request.
    unsafe { request.write(request_handle(id)) };
    Ok(())
}

/// A blocking send in `mode`.
#[allow(clippy::too_many_arguments)]
fn send(
    name: &str,
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    mode: SendMode,
) -> c_int {
    call(name, err_comm(comm), |rt| {
        let (c, n) = (comm_index(comm)?, message_bytes(count, datatype)?);
        check_buf(buf, n)?;
        // SAFETY: the send's contract: buf holds count elements; we return once it completes.
        let s = unsafe { rt.start_send_mode(c, buf.cast(), n, dest, tag, mode)? };
        rt.finish(s).map(|_| ())
    })
}

/// A non-blocking send in `mode`.
#[allow(clippy::too_many_arguments)]
fn isend(
    name: &str,
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
    mode: SendMode,
) -> c_int {
    call(name, err_comm(comm), |rt| {
        let (c, n) = (comm_index(comm)?, message_bytes(count, datatype)?);
        check_buf(buf, n)?;
        if request.is_null() {
            return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
        }
        // SAFETY: the call's contract: buf stays valid and unmodified until the request completes.
        let s = unsafe { rt.start_send_mode(c, buf.cast(), n, dest, tag, mode)? };
        let id = rt.pml.request_for(s);
        write_request(request, id)
    })
}

/// A persistent send (`Some(mode)`) or receive (`None`).
#[allow(clippy::too_many_arguments)]
fn init(
    name: &str,
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
    send: Option<SendMode>,
) -> c_int {
    call(name, err_comm(comm), |rt| {
        let (c, n) = (comm_index(comm)?, message_bytes(count, datatype)?);
        check_buf(buf, n)?;
        if request.is_null() {
            return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
        }
        let op = PersistentOp {
            send,
            buf: buf as *mut u8,
            len: n,
            comm: c,
            peer,
            tag,
        };
        let id = rt.persistent(op)?;
        write_request(request, id)
    })
}

macro_rules! send_fns {
    ($($name:ident / $pname:ident = $mode:ident;)*) => {$(
        mpi_fn! {
            fn $name / $pname(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int {
                send(stringify!($name), buf, count, datatype, dest, tag, comm, SendMode::$mode)
            }
        }
    )*};
}

macro_rules! isend_fns {
    ($($name:ident / $pname:ident = $mode:ident;)*) => {$(
        mpi_fn! {
            fn $name / $pname(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int {
                isend(stringify!($name), buf, count, datatype, dest, tag, comm, request, SendMode::$mode)
            }
        }
    )*};
}

macro_rules! init_fns {
    ($($name:ident / $pname:ident = $mode:expr;)*) => {$(
        mpi_fn! {
            fn $name / $pname(buf: *const c_void, count: c_int, datatype: Handle, peer: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int {
                init(stringify!($name), buf, count, datatype, peer, tag, comm, request, $mode)
            }
        }
    )*};
}

send_fns! {
    MPI_Ssend / PMPI_Ssend = Sync;
    MPI_Bsend / PMPI_Bsend = Buffered;
    MPI_Rsend / PMPI_Rsend = Ready;
}

isend_fns! {
    MPI_Issend / PMPI_Issend = Sync;
    MPI_Ibsend / PMPI_Ibsend = Buffered;
    MPI_Irsend / PMPI_Irsend = Ready;
}

init_fns! {
    MPI_Send_init / PMPI_Send_init = Some(SendMode::Standard);
    MPI_Ssend_init / PMPI_Ssend_init = Some(SendMode::Sync);
    MPI_Bsend_init / PMPI_Bsend_init = Some(SendMode::Buffered);
    MPI_Rsend_init / PMPI_Rsend_init = Some(SendMode::Ready);
}

mpi_fn! {
    fn MPI_Recv_init / PMPI_Recv_init(buf: *mut c_void, count: c_int, datatype: Handle, source: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int {
        init("MPI_Recv_init", buf, count, datatype, source, tag, comm, request, None)
    }
}

mpi_fn! {
    fn MPI_Start / PMPI_Start(request: *mut Handle) -> c_int {
        call("MPI_Start", crate::comm::WORLD, |rt| {
            if request.is_null() {
                return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
            }
            // SAFETY: checked non-NULL; the caller's MPI_Request.
            match request_id(unsafe { *request })? {
                None => Err(Error::new(ErrorClass::Request, "MPI_Start of MPI_REQUEST_NULL")),
                Some(id) => rt.start_persistent(id),
            }
        })
    }
}

mpi_fn! {
    fn MPI_Startall / PMPI_Startall(count: c_int, requests: *mut Handle) -> c_int {
        call("MPI_Startall", crate::comm::WORLD, |rt| {
            if count < 0 || (requests.is_null() && count > 0) {
                return Err(Error::new(ErrorClass::Arg, "bad count or NULL array of requests"));
            }
            for i in 0..count as usize {
                // SAFETY: the caller passes `count` requests.
                match request_id(unsafe { *requests.add(i) })? {
                    None => return Err(Error::new(ErrorClass::Request, format!("MPI_Startall: request {i} is MPI_REQUEST_NULL"))),
                    Some(id) => rt.start_persistent(id)?,
                }
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Buffer_attach / PMPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int {
        call("MPI_Buffer_attach", crate::comm::WORLD, |rt| {
            if size < 0 {
                return Err(Error::new(ErrorClass::Arg, format!("buffer size {size} is negative")));
            }
            let automatic = buffer as usize == BUFFER_AUTOMATIC;
            rt.bsend.attach(buffer.cast(), size as usize, automatic)
        })
    }
}

mpi_fn! {
    fn MPI_Buffer_detach / PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
        call("MPI_Buffer_detach", crate::comm::WORLD, |rt| {
            if buffer_addr.is_null() || size.is_null() {
                return Err(Error::new(ErrorClass::Arg, "buffer address or size pointer is NULL"));
            }
            let automatic = rt.bsend.is_automatic();
            let (base, n) = rt.buffer_detach()?;
            let base = if automatic { BUFFER_AUTOMATIC as *mut c_void } else { base.cast() };
            // SAFETY: checked non-NULL; MPI passes the address of a `void *` as buffer_addr
            // and an int for the size.
            unsafe {
                buffer_addr.cast::<*mut c_void>().write(base);
                size.write(n as c_int);
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace(
        buf: *mut c_void, count: c_int, datatype: Handle, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: Handle, status: *mut MpiStatus
    ) -> c_int {
        call("MPI_Sendrecv_replace", err_comm(comm), |rt| {
            let (c, n) = (comm_index(comm)?, message_bytes(count, datatype)?);
            check_buf(buf, n)?;
            let mut tmp = vec![0u8; n];
            // SAFETY: `tmp` lives until both operations complete below.
            let r = unsafe { rt.start_recv(c, tmp.as_mut_ptr(), n, source, recvtag)? };
            // SAFETY: buf holds count elements (the call's contract), unmodified until the
            // send completes below.
            let s = unsafe { rt.start_send(c, buf.cast(), n, dest, sendtag) };
            let st = rt.finish(r);
            rt.finish(s?)?;
            let st = st?;
            if st.count > 0 {
                // SAFETY: buf has room for n >= st.count bytes; tmp holds st.count received bytes.
                unsafe { std::ptr::copy_nonoverlapping(tmp.as_ptr(), buf.cast::<u8>(), st.count) };
            }
            // SAFETY: status is MPI_STATUS_IGNORE or writable.
            unsafe { store_status(status, &st) };
            super::status_error(&st)
        })
    }
}
