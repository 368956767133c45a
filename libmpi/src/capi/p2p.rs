//! Point-to-point calls of the C ABI.

use std::ffi::{c_int, c_void};

use super::*;

/// World-comm index of a comm handle for error reporting, before it is known to be valid.
pub(super) fn err_comm(comm: Handle) -> usize {
    comm_index(comm).unwrap_or(crate::comm::WORLD)
}

/// MPI_Send(_c): one code path for both count widths.
#[inline(always)]
fn send(
    name: &str,
    buf: *const c_void,
    count: Count,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    // The latency path: a predefined type that fits one fragment goes straight to the
    // transport; anything else (errors included) takes the general path below.
    if let (Some(n), Ok(c)) = (plain_bytes(buf, count, datatype), comm_index(comm)) {
        // SAFETY: MPI_Send's contract: buf holds count elements, n bytes.
        if runtime::try_with_nowait(|rt| unsafe { rt.send_now(c, buf.cast(), n, dest, tag, true) })
        {
            return MPI_SUCCESS;
        }
    }
    call_blocking(
        name,
        err_comm(comm),
        |rt| {
            let (c, m) = (comm_index(comm)?, message_c(buf, count, datatype)?);
            // SAFETY: MPI_Send's contract: buf holds count elements; the call returns only
            // once sent.
            unsafe { rt.start_send_msg(c, m, dest, tag) }
        },
        started_ready,
        |rt, s| rt.finish(s).map(|_| ()),
    )
}

/// MPI_Recv(_c).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn recv(
    name: &str,
    buf: *mut c_void,
    count: Count,
    datatype: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    // The latency path: a predefined type, waited for without a request; anything else
    // (errors included) takes the general path below.
    if let (Some(n), Ok(c)) = (plain_bytes(buf, count, datatype), comm_index(comm)) {
        let mut got = None;
        let fast = if runtime::is_multiple() {
            // Under MULTIPLE (where `try_with` steps aside): a direct receive that gives the
            // runtime up to any other thread before a message matches.
            runtime::try_with_nowait(|rt| {
                // SAFETY: MPI_Recv's contract: buf has room for count elements, n bytes.
                got = unsafe { rt.recv_now_yielding(c, buf.cast(), n, source, tag) };
                got.is_some()
            })
        } else {
            runtime::try_with(|rt| {
                // SAFETY: as above.
                got = unsafe { rt.recv_now(c, buf.cast(), n, source, tag) };
                got.is_some()
            })
        };
        if fast {
            let st = got.expect("set when try_with says so");
            // SAFETY: status is MPI_STATUS_IGNORE or writable, per the standard.
            unsafe { store_status(status, &st) };
            if st.error == 0 {
                return MPI_SUCCESS;
            }
            return match super::status_error(&st) {
                Ok(()) => MPI_SUCCESS,
                Err(e) => fail(name, c, e),
            };
        }
    }
    call_blocking(
        name,
        err_comm(comm),
        |rt| {
            let (c, m) = (comm_index(comm)?, message_c(buf, count, datatype)?);
            // SAFETY: MPI_Recv's contract: buf has room for count elements; completes before
            // return.
            unsafe { rt.start_recv_msg(c, m, source, tag) }
        },
        started_ready,
        |rt, s| {
            let st = rt.finish(s)?;
            // SAFETY: status is MPI_STATUS_IGNORE or writable.
            unsafe { store_status(status, &st) };
            super::status_error(&st)
        },
    )
}

/// MPI_Isend(_c) (`send`) and MPI_Irecv(_c).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn istart(
    name: &str,
    send: bool,
    buf: *const c_void,
    count: Count,
    datatype: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    // The message-rate path (a window of MPI_Isend/MPI_Irecv): a predefined type and a valid
    // communicator skip the general message description; a send that fits one fragment goes
    // straight to the transport as MPI_Send's does. Anything else, errors included, takes the
    // general path below.
    if let (Some(n), Ok(c), false) = (
        plain_bytes(buf, count, datatype),
        comm_index(comm),
        request.is_null(),
    ) {
        let mut id = None;
        // SAFETY: MPI_Isend's / MPI_Irecv's contract: buf holds count elements (n bytes) and
        // stays valid (for a receive: writable and untouched) until the request completes.
        let fast = runtime::try_with_nowait(|rt| unsafe {
            id = if send {
                // Gone whole: the shared completed request, no slot of its own.
                rt.send_now(c, buf.cast(), n, peer, tag, false)
                    .then_some(pml::SEND_DONE)
            } else {
                let buf = buf.cast_mut().cast();
                rt.post_recv(c, buf, n, peer, tag).or_else(|| {
                    rt.start_recv(c, buf, n, peer, tag)
                        .ok()
                        .map(|s| rt.pml.request_for(s))
                })
            };
            id.is_some()
        });
        if fast {
            // SAFETY: checked non-NULL; the caller passes a writable MPI_Request.
            unsafe { request.write(request_handle(id.expect("set when try_with says so"))) };
            return MPI_SUCCESS;
        }
    }
    call(name, err_comm(comm), |rt| {
        let (c, m) = (comm_index(comm)?, message_c(buf, count, datatype)?);
        if request.is_null() {
            return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
        }
        // SAFETY: the call's contract: buf stays valid (and, for a send, unmodified; for a
        // receive, untouched) until the request completes.
        let s = unsafe {
            if send {
                rt.start_send_msg(c, m, peer, tag)?
            } else {
                rt.start_recv_msg(c, m, peer, tag)?
            }
        };
        let id = rt.pml.request_for(s);
        // SAFETY: checked non-NULL; the caller passes a writable MPI_Request.
        unsafe { request.write(request_handle(id)) };
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Send / PMPI_Send(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int {
        send("MPI_Send", buf, count as Count, datatype, dest, tag, comm)
    }
}

mpi_fn! {
    fn MPI_Send_c / PMPI_Send_c(buf: *const c_void, count: Count, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int {
        send("MPI_Send_c", buf, count, datatype, dest, tag, comm)
    }
}

mpi_fn! {
    fn MPI_Recv / PMPI_Recv(buf: *mut c_void, count: c_int, datatype: Handle, source: c_int, tag: c_int, comm: Handle, status: *mut MpiStatus) -> c_int {
        recv("MPI_Recv", buf, count as Count, datatype, source, tag, comm, status)
    }
}

mpi_fn! {
    fn MPI_Recv_c / PMPI_Recv_c(buf: *mut c_void, count: Count, datatype: Handle, source: c_int, tag: c_int, comm: Handle, status: *mut MpiStatus) -> c_int {
        recv("MPI_Recv_c", buf, count, datatype, source, tag, comm, status)
    }
}

mpi_fn! {
    fn MPI_Isend / PMPI_Isend(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int {
        istart("MPI_Isend", true, buf, count as Count, datatype, dest, tag, comm, request)
    }
}

mpi_fn! {
    fn MPI_Isend_c / PMPI_Isend_c(buf: *const c_void, count: Count, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int {
        istart("MPI_Isend_c", true, buf, count, datatype, dest, tag, comm, request)
    }
}

mpi_fn! {
    fn MPI_Irecv / PMPI_Irecv(buf: *mut c_void, count: c_int, datatype: Handle, source: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int {
        istart("MPI_Irecv", false, buf, count as Count, datatype, source, tag, comm, request)
    }
}

mpi_fn! {
    fn MPI_Irecv_c / PMPI_Irecv_c(buf: *mut c_void, count: Count, datatype: Handle, source: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int {
        istart("MPI_Irecv_c", false, buf, count, datatype, source, tag, comm, request)
    }
}

mpi_fn! {
    fn MPI_Wait / PMPI_Wait(request: *mut Handle, status: *mut MpiStatus) -> c_int {
        let ready = |rt: &mut Runtime| {
            // SAFETY: a non-NULL request points to the caller's MPI_Request.
            match (!request.is_null()).then(|| request_id(unsafe { *request })) {
                Some(Ok(Some(id))) => request_ready(rt, id),
                _ => true,
            }
        };
        call_ready("MPI_Wait", crate::comm::WORLD, ready, |rt| {
            if request.is_null() {
                return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
            }
            // SAFETY: checked non-NULL; points to the caller's MPI_Request.
            let id = request_id(unsafe { *request })?;
            // Complete already: the status goes to the caller from the request, as in
            // MPI_Waitall.
            if let Some(id) = id.filter(|_| super::grequest::none_live()) {
                // SAFETY: status is MPI_STATUS_IGNORE or writable.
                let done = rt.pml.take_complete_with(id, |st| unsafe {
                    store_status(status, st);
                    super::status_error(st)
                });
                if let Some(r) = done {
                    // SAFETY: checked non-NULL.
                    unsafe { *request = REQUEST_NULL as Handle };
                    return r;
                }
            }
            let st = match id {
                None => empty_status(),
                Some(id) => {
                    let st = super::grequest::finish(id, rt.wait(id)?);
                    // A persistent request stays, inactive.
                    if !rt.pml.is_persistent(id) {
                        // SAFETY: as above.
                        unsafe { *request = REQUEST_NULL as Handle };
                    }
                    st
                }
            };
            // SAFETY: status is MPI_STATUS_IGNORE or writable.
            unsafe { store_status(status, &st) };
            super::status_error(&st)
        })
    }
}

mpi_fn! {
    fn MPI_Test / PMPI_Test(request: *mut Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
        call("MPI_Test", crate::comm::WORLD, |rt| {
            if request.is_null() || flag.is_null() {
                return Err(Error::new(ErrorClass::Arg, "request or flag pointer is NULL"));
            }
            // SAFETY: checked non-NULL; the caller's MPI_Request.
            let st = match request_id(unsafe { *request })? {
                None => Some(empty_status()),
                Some(id) => {
                    if !rt.pml.is_valid(id) {
                        return Err(Error::new(ErrorClass::Request, "invalid request"));
                    }
                    rt.pml.progress();
                    // SAFETY: checked non-NULL: the caller's MPI_Request.
                    rt.pml.is_complete(id).then(|| super::p2p_completion::retire(rt, unsafe { &mut *request }, id))
                }
            };
            // SAFETY: flag checked non-NULL; status NULL or writable.
            unsafe {
                *flag = st.is_some() as c_int;
                if let Some(st) = &st {
                    store_status(status, st);
                }
            }
            st.map_or(Ok(()), |s| super::status_error(&s))
        })
    }
}

mpi_fn! {
    fn MPI_Waitall / PMPI_Waitall(count: c_int, requests: *mut Handle, statuses: *mut MpiStatus) -> c_int {
        // Under MULTIPLE it is asked at every progress turn: it resumes at the first request it
        // found incomplete (a complete one stays so until this call retires it), so a window
        // of 64 is not read again per turn.
        let mut first = 0;
        let ready = move |rt: &mut Runtime| {
            if count <= 0 || requests.is_null() {
                return true;
            }
            while first < count as usize {
                // SAFETY: the caller passes `count` requests.
                match request_id(unsafe { *requests.add(first) }) {
                    Ok(Some(id)) if !request_ready(rt, id) => return false,
                    _ => first += 1,
                }
            }
            true
        };
        call_ready("MPI_Waitall", crate::comm::WORLD, ready, |rt| {
            if count < 0 {
                return Err(Error::new(ErrorClass::Count, format!("count {count} is negative")));
            }
            if requests.is_null() && count > 0 {
                return Err(Error::new(ErrorClass::Request, "array of requests is NULL"));
            }
            let mut failed = false;
            for i in 0..count as usize {
                // SAFETY: the caller passes `count` requests (and statuses unless IGNORE).
                let slot = unsafe { &mut *requests.add(i) };
                let out = if statuses.is_null() {
                    std::ptr::null_mut()
                } else {
                    // SAFETY: as above: `count` writable statuses.
                    unsafe { statuses.add(i) }
                };
                let id = request_id(*slot)?;
                // Complete already (a window's common case), and no generalized request
                // about: the status goes from the request to the caller's MPI_Status where it
                // lies. Returned by value it went through the stack, whose word loads stalled
                // on store forwarding (11 % of the receiver's time in osu_bw's window).
                if let Some(id) = id.filter(|_| super::grequest::none_live()) {
                    // SAFETY: `out` is NULL or the caller's writable MPI_Status.
                    let error = rt.pml.take_complete_with(id, |st| unsafe {
                        store_status_all(out, st);
                        st.error
                    });
                    if let Some(error) = error {
                        *slot = REQUEST_NULL as Handle;
                        failed |= error != 0;
                        continue;
                    }
                }
                let st = match id {
                    None => empty_status(),
                    Some(id) => {
                        let st = super::grequest::finish(id, rt.wait(id)?);
                        if !rt.pml.is_persistent(id) {
                            *slot = REQUEST_NULL as Handle;
                        }
                        st
                    }
                };
                failed |= st.error != 0;
                // SAFETY: as above.
                unsafe { store_status_all(out, &st) };
            }
            if failed {
                return Err(Error::new(ErrorClass::InStatus, "one or more requests failed; see the statuses' MPI_ERROR"));
            }
            Ok(())
        })
    }
}

/// MPI_Sendrecv(_c).
fn sendrecv(
    name: &str,
    (sendbuf, sendcount, sendtype, dest, sendtag): (*const c_void, Count, Handle, c_int, c_int),
    (recvbuf, recvcount, recvtype, source, recvtag): (*mut c_void, Count, Handle, c_int, c_int),
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    call_blocking(
        name,
        err_comm(comm),
        |rt| {
            let c = comm_index(comm)?;
            let (sm, rm) = (
                message_c(sendbuf, sendcount, sendtype)?,
                message_c(recvbuf, recvcount, recvtype)?,
            );
            // SAFETY: both buffers valid per MPI_Sendrecv's contract; both complete before
            // return.
            let r = unsafe { rt.start_recv_msg(c, rm, source, recvtag)? };
            // SAFETY: as above.
            let s = unsafe { rt.start_send_msg(c, sm, dest, sendtag) };
            Ok((r, s))
        },
        |rt, (r, s)| started_ready(rt, r) && s.as_ref().map_or(true, |s| started_ready(rt, s)),
        |rt, (r, s)| {
            let st = rt.finish(r);
            rt.finish(s?)?;
            let st = st?;
            // SAFETY: status is MPI_STATUS_IGNORE or writable.
            unsafe { store_status(status, &st) };
            super::status_error(&st)
        },
    )
}

mpi_fn! {
    fn MPI_Sendrecv / PMPI_Sendrecv(
        sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, source: c_int, recvtag: c_int,
        comm: Handle, status: *mut MpiStatus
    ) -> c_int {
        sendrecv("MPI_Sendrecv", (sendbuf, sendcount as Count, sendtype, dest, sendtag),
            (recvbuf, recvcount as Count, recvtype, source, recvtag), comm, status)
    }
}

mpi_fn! {
    fn MPI_Sendrecv_c / PMPI_Sendrecv_c(
        sendbuf: *const c_void, sendcount: Count, sendtype: Handle, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: Count, recvtype: Handle, source: c_int, recvtag: c_int,
        comm: Handle, status: *mut MpiStatus
    ) -> c_int {
        sendrecv("MPI_Sendrecv_c", (sendbuf, sendcount, sendtype, dest, sendtag),
            (recvbuf, recvcount, recvtype, source, recvtag), comm, status)
    }
}

/// MPI_Isendrecv(_c): a receive and a send started at once, one request for both.
fn isendrecv(
    name: &str,
    (sendbuf, sendcount, sendtype, dest, sendtag): (*const c_void, Count, Handle, c_int, c_int),
    (recvbuf, recvcount, recvtype, source, recvtag): (*mut c_void, Count, Handle, c_int, c_int),
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    call(name, err_comm(comm), |rt| {
        let c = comm_index(comm)?;
        let (sm, rm) = (
            message_c(sendbuf, sendcount, sendtype)?,
            message_c(recvbuf, recvcount, recvtype)?,
        );
        if request.is_null() {
            return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
        }
        rt.check_send(c, dest, sendtag)?;
        // SAFETY: MPI_Isendrecv's contract: both buffers stay valid (the receive buffer
        // untouched) until the request completes.
        let r = unsafe { rt.start_recv_msg(c, rm, source, recvtag)? };
        // SAFETY: as above.
        let s = unsafe { rt.start_send_msg(c, sm, dest, sendtag)? };
        let id = rt.pml.pair(s, r, None);
        // SAFETY: checked non-NULL.
        unsafe { request.write(request_handle(id)) };
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Isendrecv / PMPI_Isendrecv(
        sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, source: c_int, recvtag: c_int,
        comm: Handle, request: *mut Handle
    ) -> c_int {
        isendrecv("MPI_Isendrecv", (sendbuf, sendcount as Count, sendtype, dest, sendtag),
            (recvbuf, recvcount as Count, recvtype, source, recvtag), comm, request)
    }
}

mpi_fn! {
    fn MPI_Isendrecv_c / PMPI_Isendrecv_c(
        sendbuf: *const c_void, sendcount: Count, sendtype: Handle, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: Count, recvtype: Handle, source: c_int, recvtag: c_int,
        comm: Handle, request: *mut Handle
    ) -> c_int {
        isendrecv("MPI_Isendrecv_c", (sendbuf, sendcount, sendtype, dest, sendtag),
            (recvbuf, recvcount, recvtype, source, recvtag), comm, request)
    }
}

/// MPI_Isendrecv_replace(_c): the outgoing data is copied first, so the receive can land in
/// the buffer while the copy is sent; the copy lives with the request.
#[allow(clippy::too_many_arguments)]
fn isendrecv_replace(
    name: &str,
    buf: *mut c_void,
    count: Count,
    datatype: Handle,
    (dest, sendtag): (c_int, c_int),
    (source, recvtag): (c_int, c_int),
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    call(name, err_comm(comm), |rt| {
        let (c, m) = (comm_index(comm)?, message_c(buf, count, datatype)?);
        let n = m.len;
        if request.is_null() {
            return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
        }
        rt.check_send(c, dest, sendtag)?;
        // The outgoing data, packed (any layout).
        let mut out = vec![0u8; n];
        // SAFETY: the message's bytes are readable (the call's contract, checked by message_c).
        unsafe { m.read(0, &mut out) };
        // SAFETY: buf stays valid and untouched until the request completes (the contract).
        let r = unsafe { rt.start_recv_msg(c, m, source, recvtag)? };
        // SAFETY: `out` moves into the pair below, its heap block unmoved, and lives until
        // the pair completes.
        let s = unsafe { rt.start_send(c, out.as_ptr(), n, dest, sendtag)? };
        let id = rt.pml.pair(s, r, Some(out));
        // SAFETY: checked non-NULL.
        unsafe { request.write(request_handle(id)) };
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Isendrecv_replace / PMPI_Isendrecv_replace(
        buf: *mut c_void, count: c_int, datatype: Handle, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: Handle, request: *mut Handle
    ) -> c_int {
        isendrecv_replace("MPI_Isendrecv_replace", buf, count as Count, datatype, (dest, sendtag), (source, recvtag), comm, request)
    }
}

mpi_fn! {
    fn MPI_Isendrecv_replace_c / PMPI_Isendrecv_replace_c(
        buf: *mut c_void, count: Count, datatype: Handle, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: Handle, request: *mut Handle
    ) -> c_int {
        isendrecv_replace("MPI_Isendrecv_replace_c", buf, count, datatype, (dest, sendtag), (source, recvtag), comm, request)
    }
}

mpi_fn! {
    fn MPI_Get_count / PMPI_Get_count(status: *const MpiStatus, datatype: Handle, count: *mut c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Get_count", crate::comm::WORLD, e);
        }
        if status.is_null() || count.is_null() {
            return fail("MPI_Get_count", crate::comm::WORLD, Error::new(ErrorClass::Arg, "status or count pointer is NULL"));
        }
        let size = match type_size(datatype) {
            Ok(s) => s,
            Err(e) => return fail("MPI_Get_count", crate::comm::WORLD, e),
        };
        // SAFETY: both checked non-NULL; the caller passes a status and an int.
        unsafe {
            let bytes = (*status).count();
            *count = if size == 0 {
                0
            } else if !bytes.is_multiple_of(size) || bytes / size > c_int::MAX as usize {
                MPI_UNDEFINED
            } else {
                (bytes / size) as c_int
            };
        }
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Barrier / PMPI_Barrier(comm: Handle) -> c_int {
        if super::comm::multiple_forms(comm) {
            // MPI_Ibarrier's schedule, waited for outside the runtime.
            // SAFETY: a barrier touches no buffers.
            return super::coll::coll("MPI_Barrier", comm, None, |b| unsafe { super::coll::barrier(b) });
        }
        call("MPI_Barrier", err_comm(comm), |rt| rt.barrier(comm_index(comm)?))
    }
}
