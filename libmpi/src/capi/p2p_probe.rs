//! Probes and matched messages in the C ABI: MPI_Probe, MPI_Iprobe, MPI_Mprobe, MPI_Improbe,
//! MPI_Mrecv, MPI_Imrecv. A message handle is `DYNAMIC_BASE + slot`; MPI_MESSAGE_NO_PROC
//! stands for a probe of MPI_PROC_NULL.

use std::ffi::{c_int, c_void};

use super::p2p::err_comm;
use super::*;

const MESSAGE_NULL: usize = 0x128;
const MESSAGE_NO_PROC: usize = 0x129;

fn message_handle(m: Option<usize>) -> Handle {
    match m {
        None => MESSAGE_NO_PROC as Handle,
        Some(slot) => (DYNAMIC_BASE + slot) as Handle,
    }
}

/// The matched message behind a handle: None for MPI_MESSAGE_NO_PROC.
fn message_slot(h: Handle) -> Result<Option<usize>> {
    match h as usize {
        MESSAGE_NO_PROC => Ok(None),
        MESSAGE_NULL => Err(Error::new(
            ErrorClass::Request,
            "MPI_MESSAGE_NULL cannot be received",
        )),
        v if v >= DYNAMIC_BASE => Ok(Some(v - DYNAMIC_BASE)),
        v => Err(Error::new(
            ErrorClass::Request,
            format!("{v:#x} is not a message handle"),
        )),
    }
}

mpi_fn! {
    fn MPI_Probe / PMPI_Probe(source: c_int, tag: c_int, comm: Handle, status: *mut MpiStatus) -> c_int {
        // Under MULTIPLE a turn that sees the message reports it (runtime::with_poll).
        match runtime::with_poll(
            |rt| rt.iprobe(comm_index(comm)?, source, tag),
            |rt| rt.probe(comm_index(comm)?, source, tag),
        ) {
            Ok(st) => {
                // SAFETY: status is MPI_STATUS_IGNORE or writable.
                unsafe { store_status(status, &st) };
                MPI_SUCCESS
            }
            Err(e) => fail("MPI_Probe", err_comm(comm), e),
        }
    }
}

mpi_fn! {
    fn MPI_Iprobe / PMPI_Iprobe(source: c_int, tag: c_int, comm: Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
        call("MPI_Iprobe", err_comm(comm), |rt| {
            if flag.is_null() {
                return Err(Error::new(ErrorClass::Arg, "flag pointer is NULL"));
            }
            let st = rt.iprobe(comm_index(comm)?, source, tag)?;
            // SAFETY: flag checked non-NULL; status is MPI_STATUS_IGNORE or writable.
            unsafe {
                flag.write(st.is_some() as c_int);
                if let Some(st) = &st {
                    store_status(status, st);
                }
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Mprobe / PMPI_Mprobe(source: c_int, tag: c_int, comm: Handle, message: *mut Handle, status: *mut MpiStatus) -> c_int {
        if message.is_null() {
            return fail("MPI_Mprobe", err_comm(comm), Error::new(ErrorClass::Arg, "message pointer is NULL"));
        }
        // Under MULTIPLE the turn that finds the message takes it (MPI_Improbe's matching),
        // so no other thread's probe or receive can have it.
        match runtime::with_poll(
            |rt| rt.improbe(comm_index(comm)?, source, tag),
            |rt| rt.mprobe(comm_index(comm)?, source, tag),
        ) {
            Ok((m, st)) => {
                // SAFETY: message checked non-NULL; status is MPI_STATUS_IGNORE or writable.
                unsafe {
                    message.write(message_handle(m));
                    store_status(status, &st);
                }
                MPI_SUCCESS
            }
            Err(e) => fail("MPI_Mprobe", err_comm(comm), e),
        }
    }
}

mpi_fn! {
    fn MPI_Improbe / PMPI_Improbe(source: c_int, tag: c_int, comm: Handle, flag: *mut c_int, message: *mut Handle, status: *mut MpiStatus) -> c_int {
        call("MPI_Improbe", err_comm(comm), |rt| {
            if flag.is_null() || message.is_null() {
                return Err(Error::new(ErrorClass::Arg, "flag or message pointer is NULL"));
            }
            let got = rt.improbe(comm_index(comm)?, source, tag)?;
            // SAFETY: flag and message checked non-NULL; status is IGNORE or writable.
            unsafe {
                flag.write(got.is_some() as c_int);
                if let Some((m, st)) = &got {
                    message.write(message_handle(*m));
                    store_status(status, st);
                }
            }
            Ok(())
        })
    }
}

/// MPI_Mrecv(_c).
fn mrecv(
    name: &str,
    buf: *mut c_void,
    count: Count,
    datatype: Handle,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    call_blocking(
        name,
        crate::comm::WORLD,
        |rt| {
            let msg = message_c(buf, count, datatype)?;
            if message.is_null() {
                return Err(Error::new(ErrorClass::Arg, "message pointer is NULL"));
            }
            // SAFETY: checked non-NULL; the caller's MPI_Message.
            let m = message_slot(unsafe { *message })?;
            // SAFETY: buf has room for count elements; the receive completes before return.
            let s = unsafe { rt.start_mrecv_msg(m, msg)? };
            // SAFETY: as above.
            unsafe { message.write(MESSAGE_NULL as Handle) };
            Ok(s)
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

/// MPI_Imrecv(_c).
fn imrecv(
    name: &str,
    buf: *mut c_void,
    count: Count,
    datatype: Handle,
    message: *mut Handle,
    request: *mut Handle,
) -> c_int {
    call(name, crate::comm::WORLD, |rt| {
        let msg = message_c(buf, count, datatype)?;
        if message.is_null() || request.is_null() {
            return Err(Error::new(
                ErrorClass::Arg,
                "message or request pointer is NULL",
            ));
        }
        // SAFETY: checked non-NULL; the caller's MPI_Message.
        let m = message_slot(unsafe { *message })?;
        // SAFETY: buf stays valid until the request completes (MPI_Imrecv's contract).
        let s = unsafe { rt.start_mrecv_msg(m, msg)? };
        let id = rt.pml.request_for(s);
        // SAFETY: both checked non-NULL.
        unsafe {
            message.write(MESSAGE_NULL as Handle);
            request.write(request_handle(id));
        }
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Mrecv / PMPI_Mrecv(buf: *mut c_void, count: c_int, datatype: Handle, message: *mut Handle, status: *mut MpiStatus) -> c_int {
        mrecv("MPI_Mrecv", buf, count as Count, datatype, message, status)
    }
}

mpi_fn! {
    fn MPI_Mrecv_c / PMPI_Mrecv_c(buf: *mut c_void, count: Count, datatype: Handle, message: *mut Handle, status: *mut MpiStatus) -> c_int {
        mrecv("MPI_Mrecv_c", buf, count, datatype, message, status)
    }
}

mpi_fn! {
    fn MPI_Imrecv / PMPI_Imrecv(buf: *mut c_void, count: c_int, datatype: Handle, message: *mut Handle, request: *mut Handle) -> c_int {
        imrecv("MPI_Imrecv", buf, count as Count, datatype, message, request)
    }
}

mpi_fn! {
    fn MPI_Imrecv_c / PMPI_Imrecv_c(buf: *mut c_void, count: Count, datatype: Handle, message: *mut Handle, request: *mut Handle) -> c_int {
        imrecv("MPI_Imrecv_c", buf, count, datatype, message, request)
    }
}
