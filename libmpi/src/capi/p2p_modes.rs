//! Send modes (synchronous, buffered, ready), the attached buffer, persistent requests and
//! MPI_Sendrecv_replace in the C ABI.

use std::ffi::{c_int, c_void};

use super::p2p::err_comm;
use super::*;
use crate::pml::request::{PersistentOp, SendMode};

/// MPI_BUFFER_AUTOMATIC as the ABI defines it.
pub(super) const BUFFER_AUTOMATIC: usize = 2;

/// A detached buffer goes back to the caller of a detach call (process, communicator or
/// session): its address at `buffer_addr` (MPI_BUFFER_AUTOMATIC for an automatic one) and its
/// size through `store`.
///
/// # Safety
/// `buffer_addr` is non-NULL: the address of the caller's `void *`, as MPI passes it.
pub(super) unsafe fn hand_back(
    buffer_addr: *mut c_void,
    automatic: bool,
    base: *mut u8,
    size: usize,
    store: impl FnOnce(usize),
) {
    let base = if automatic {
        BUFFER_AUTOMATIC as *mut c_void
    } else {
        base.cast()
    };
    // SAFETY: the caller's contract.
    unsafe { buffer_addr.cast::<*mut c_void>().write(base) };
    store(size);
}

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
    count: Count,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    mode: SendMode,
) -> c_int {
    call_blocking(
        name,
        err_comm(comm),
        |rt| {
            let (c, m) = (comm_index(comm)?, message_c(buf, count, datatype)?);
            // SAFETY: the send's contract: buf holds count elements; we return once it
            // completes.
            unsafe { rt.start_send_mode_msg(c, m, dest, tag, mode) }
        },
        started_ready,
        |rt, s| rt.finish(s).map(|_| ()),
    )
}

/// A non-blocking send in `mode`.
#[allow(clippy::too_many_arguments)]
fn isend(
    name: &str,
    buf: *const c_void,
    count: Count,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
    mode: SendMode,
) -> c_int {
    call(name, err_comm(comm), |rt| {
        let (c, m) = (comm_index(comm)?, message_c(buf, count, datatype)?);
        if request.is_null() {
            return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
        }
        // SAFETY: the call's contract: buf stays valid and unmodified until the request completes.
        let s = unsafe { rt.start_send_mode_msg(c, m, dest, tag, mode)? };
        let id = rt.pml.request_for(s);
        write_request(request, id)
    })
}

/// A persistent send (`Some(mode)`) or receive (`None`).
#[allow(clippy::too_many_arguments)]
fn init(
    name: &str,
    buf: *const c_void,
    count: Count,
    datatype: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
    send: Option<SendMode>,
) -> c_int {
    call(name, err_comm(comm), |rt| {
        let (c, m) = (comm_index(comm)?, message_c(buf, count, datatype)?);
        if request.is_null() {
            return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
        }
        let op = PersistentOp {
            send,
            buf: m.ptr,
            len: m.len,
            layout: m.layout,
            comm: c,
            peer,
            tag,
        };
        let id = rt.persistent(op)?;
        write_request(request, id)
    })
}

/// Each mode's int form and its large-count (`_c`) form: one body, `count` widened to MPI_Count.
macro_rules! send_fns {
    ($($name:ident / $pname:ident, $cname:ident / $pcname:ident = $mode:ident;)*) => {$(
        mpi_fn! {
            fn $name / $pname(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int {
                send(stringify!($name), buf, count as Count, datatype, dest, tag, comm, SendMode::$mode)
            }
        }
        mpi_fn! {
            fn $cname / $pcname(buf: *const c_void, count: Count, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int {
                send(stringify!($cname), buf, count, datatype, dest, tag, comm, SendMode::$mode)
            }
        }
    )*};
}

macro_rules! isend_fns {
    ($($name:ident / $pname:ident, $cname:ident / $pcname:ident = $mode:ident;)*) => {$(
        mpi_fn! {
            fn $name / $pname(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int {
                isend(stringify!($name), buf, count as Count, datatype, dest, tag, comm, request, SendMode::$mode)
            }
        }
        mpi_fn! {
            fn $cname / $pcname(buf: *const c_void, count: Count, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int {
                isend(stringify!($cname), buf, count, datatype, dest, tag, comm, request, SendMode::$mode)
            }
        }
    )*};
}

macro_rules! init_fns {
    ($($name:ident / $pname:ident, $cname:ident / $pcname:ident = $mode:expr;)*) => {$(
        mpi_fn! {
            fn $name / $pname(buf: *mut c_void, count: c_int, datatype: Handle, peer: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int {
                init(stringify!($name), buf, count as Count, datatype, peer, tag, comm, request, $mode)
            }
        }
        mpi_fn! {
            fn $cname / $pcname(buf: *mut c_void, count: Count, datatype: Handle, peer: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int {
                init(stringify!($cname), buf, count, datatype, peer, tag, comm, request, $mode)
            }
        }
    )*};
}

send_fns! {
    MPI_Ssend / PMPI_Ssend, MPI_Ssend_c / PMPI_Ssend_c = Sync;
    MPI_Bsend / PMPI_Bsend, MPI_Bsend_c / PMPI_Bsend_c = Buffered;
    MPI_Rsend / PMPI_Rsend, MPI_Rsend_c / PMPI_Rsend_c = Ready;
}

isend_fns! {
    MPI_Issend / PMPI_Issend, MPI_Issend_c / PMPI_Issend_c = Sync;
    MPI_Ibsend / PMPI_Ibsend, MPI_Ibsend_c / PMPI_Ibsend_c = Buffered;
    MPI_Irsend / PMPI_Irsend, MPI_Irsend_c / PMPI_Irsend_c = Ready;
}

init_fns! {
    MPI_Send_init / PMPI_Send_init, MPI_Send_init_c / PMPI_Send_init_c = Some(SendMode::Standard);
    MPI_Ssend_init / PMPI_Ssend_init, MPI_Ssend_init_c / PMPI_Ssend_init_c = Some(SendMode::Sync);
    MPI_Bsend_init / PMPI_Bsend_init, MPI_Bsend_init_c / PMPI_Bsend_init_c = Some(SendMode::Buffered);
    MPI_Rsend_init / PMPI_Rsend_init, MPI_Rsend_init_c / PMPI_Rsend_init_c = Some(SendMode::Ready);
    MPI_Recv_init / PMPI_Recv_init, MPI_Recv_init_c / PMPI_Recv_init_c = None;
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
            if count < 0 {
                return Err(Error::new(ErrorClass::Count, format!("count {count} is negative")));
            }
            if requests.is_null() && count > 0 {
                return Err(Error::new(ErrorClass::Arg, "NULL array of requests"));
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

/// MPI_Buffer_attach(_c).
fn buffer_attach(name: &str, buffer: *mut c_void, size: Count) -> c_int {
    call(name, crate::comm::WORLD, |rt| {
        if size < 0 {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("buffer size {size} is negative"),
            ));
        }
        let automatic = buffer as usize == BUFFER_AUTOMATIC;
        rt.bsend.attach(buffer.cast(), size as usize, automatic)
    })
}

/// MPI_Buffer_detach(_c): `store` writes the size in the call's width; the int form refuses
/// (MPI_ERR_COUNT, buffer left attached) a buffer whose size an int cannot hold.
fn buffer_detach(
    name: &str,
    buffer_addr: *mut c_void,
    size_max: usize,
    store: impl FnOnce(usize),
) -> c_int {
    call_ready(
        name,
        crate::comm::WORLD,
        |rt| rt.bsend_flushed(),
        |rt| {
            if buffer_addr.is_null() {
                return Err(Error::new(
                    ErrorClass::Arg,
                    "buffer address or size pointer is NULL",
                ));
            }
            if rt.bsend.size() > size_max {
                return Err(Error::new(ErrorClass::Count, format!(
                "the attached buffer's {} bytes do not fit the size argument (at most {size_max}); use MPI_Buffer_detach_c",
                rt.bsend.size())));
            }
            let automatic = rt.bsend.is_automatic();
            let (base, n) = rt.buffer_detach()?;
            // SAFETY: buffer_addr checked non-NULL above.
            unsafe { hand_back(buffer_addr, automatic, base, n, store) };
            Ok(())
        },
    )
}

mpi_fn! {
    fn MPI_Buffer_attach / PMPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int {
        buffer_attach("MPI_Buffer_attach", buffer, size as Count)
    }
}

mpi_fn! {
    fn MPI_Buffer_attach_c / PMPI_Buffer_attach_c(buffer: *mut c_void, size: Count) -> c_int {
        buffer_attach("MPI_Buffer_attach_c", buffer, size)
    }
}

mpi_fn! {
    fn MPI_Buffer_detach / PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
        if size.is_null() {
            return buffer_detach("MPI_Buffer_detach", std::ptr::null_mut(), 0, |_| ());
        }
        // SAFETY: checked non-NULL: the caller's int.
        buffer_detach("MPI_Buffer_detach", buffer_addr, c_int::MAX as usize, |n| unsafe { size.write(n as c_int) })
    }
}

mpi_fn! {
    fn MPI_Buffer_detach_c / PMPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut Count) -> c_int {
        if size.is_null() {
            return buffer_detach("MPI_Buffer_detach_c", std::ptr::null_mut(), 0, |_| ());
        }
        // SAFETY: checked non-NULL: the caller's MPI_Count.
        buffer_detach("MPI_Buffer_detach_c", buffer_addr, Count::MAX as usize, |n| unsafe { size.write(n as Count) })
    }
}

/// MPI_Sendrecv_replace(_c).
#[allow(clippy::too_many_arguments)]
fn sendrecv_replace(
    name: &str,
    buf: *mut c_void,
    count: Count,
    datatype: Handle,
    (dest, sendtag): (c_int, c_int),
    (source, recvtag): (c_int, c_int),
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    call_blocking(
        name,
        err_comm(comm),
        |rt| {
            let (c, m) = (comm_index(comm)?, message_c(buf, count, datatype)?);
            let n = m.len;
            let mut tmp = vec![0u8; n];
            // SAFETY: `tmp` lives until both operations complete below (moving the Vec does not
            // move its heap buffer).
            let r = unsafe { rt.start_recv(c, tmp.as_mut_ptr(), n, source, recvtag)? };
            // SAFETY: buf holds count elements (the call's contract), unmodified until the
            // send completes below.
            let s = unsafe { rt.start_send_msg(c, m.clone(), dest, sendtag) };
            Ok((m, tmp, r, s))
        },
        |rt, (_, _, r, s)| {
            started_ready(rt, r) && s.as_ref().map_or(true, |s| started_ready(rt, s))
        },
        |rt, (m, tmp, r, s)| {
            let st = rt.finish(r);
            rt.finish(s?)?;
            let st = st?;
            if st.count > 0 {
                // SAFETY: the message has room for n >= st.count packed bytes (any layout);
                // tmp holds st.count received bytes.
                unsafe { m.write(0, &tmp[..st.count]) };
            }
            // SAFETY: status is MPI_STATUS_IGNORE or writable.
            unsafe { store_status(status, &st) };
            super::status_error(&st)
        },
    )
}

mpi_fn! {
    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace(
        buf: *mut c_void, count: c_int, datatype: Handle, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: Handle, status: *mut MpiStatus
    ) -> c_int {
        sendrecv_replace("MPI_Sendrecv_replace", buf, count as Count, datatype, (dest, sendtag), (source, recvtag), comm, status)
    }
}

mpi_fn! {
    fn MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c(
        buf: *mut c_void, count: Count, datatype: Handle, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: Handle, status: *mut MpiStatus
    ) -> c_int {
        sendrecv_replace("MPI_Sendrecv_replace_c", buf, count, datatype, (dest, sendtag), (source, recvtag), comm, status)
    }
}
