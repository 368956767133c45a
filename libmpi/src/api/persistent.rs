//! Persistent requests (MPI_Send_init, MPI_Recv_init, MPI_Start): an operation prepared once
//! and started many times. The request holds its buffer's exclusive borrow for the scope and
//! lends it back (`buffer`) only between runs; a run still active when the request is dropped
//! or leaked is completed by the drop or by its scope.

use std::cell::RefCell;
use std::marker::PhantomData;

use super::comm::check;
use super::status::Status;
use crate::error::{Error, ErrorClass, Result};
use crate::pml::ReqId;
use crate::runtime;

/// A prepared send or receive on a buffer of `T`.
pub struct Persistent<'scope, T> {
    id: ReqId,
    buf: *mut T,
    len: usize,
    pending: &'scope RefCell<Vec<ReqId>>,
    _buf: PhantomData<&'scope mut [T]>,
}

impl<'scope, T> Persistent<'scope, T> {
    /// `buf`/`len`: the slice the caller borrowed exclusively for 'scope (its borrow is
    /// carried by this request's lifetime).
    pub(crate) fn new(
        id: ReqId,
        buf: *mut T,
        len: usize,
        pending: &'scope RefCell<Vec<ReqId>>,
    ) -> Persistent<'scope, T> {
        Persistent {
            id,
            buf,
            len,
            pending,
            _buf: PhantomData,
        }
    }

    /// Start a run (MPI_Start). Fails if one is already active.
    pub fn start(&mut self) -> Result<()> {
        start(self.id)
    }

    /// Wait for the active run; an inactive request gives an empty status at once.
    pub fn wait(&mut self) -> Result<Status> {
        wait(self.id)
    }

    /// The run's status if it has completed (or the request is inactive), else None.
    pub fn test(&mut self) -> Result<Option<Status>> {
        test(self.id)
    }

    /// Cancel the active run if it is a receive that has not matched (see `Request::cancel`).
    pub fn cancel(&self) -> Result<()> {
        runtime::with(|rt| {
            rt.pml.cancel(self.id);
            Ok(())
        })
    }

    /// The buffer, to fill before a send or read after a receive; only between runs.
    pub fn buffer(&mut self) -> Result<&mut [T]> {
        idle(self.id)?;
        // SAFETY: the request holds the exclusive borrow of this buffer for 'scope; no run is
        // active, so the library does not touch it until the next `start`, which needs
        // `&mut self` and so ends this borrow first.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.buf, self.len) })
    }
}

impl<T> Drop for Persistent<'_, T> {
    fn drop(&mut self) {
        release(self.pending, self.id);
    }
}

/// The persistent request kinds of the Rust API (this module's, `persistent_coll`'s and
/// `partitioned`'s) share these: whether a run is active, MPI_Start, MPI_Wait, MPI_Test, and
/// the drop (wait for an active run, then MPI_Request_free).
pub(super) fn running(id: ReqId) -> bool {
    runtime::with(|rt| Ok(rt.pml.is_active(id))).unwrap_or(false)
}

pub(super) fn start(id: ReqId) -> Result<()> {
    runtime::with(|rt| rt.start_persistent(id))
}

pub(super) fn wait(id: ReqId) -> Result<Status> {
    check(runtime::wait_request(id)?)
}

pub(super) fn test(id: ReqId) -> Result<Option<Status>> {
    let st = runtime::with(|rt| {
        rt.pml.progress();
        Ok(if rt.pml.is_complete(id) {
            rt.pml.take(id)
        } else {
            None
        })
    })?;
    st.map(check).transpose()
}

pub(super) fn release(pending: &RefCell<Vec<ReqId>>, id: ReqId) {
    super::request::forget(pending, id);
    // Under MULTIPLE the wait happens outside the runtime (`with_ready`).
    let ready = |rt: &mut runtime::Runtime| !rt.pml.is_valid(id) || rt.pml.is_complete(id);
    let _ = runtime::with_ready(ready, |rt| {
        let r = rt.wait(id);
        rt.pml.free(id);
        r
    });
}

/// MPI_ERR_REQUEST unless the request is inactive: its buffers are the library's while a run
/// is active.
pub(super) fn idle(id: ReqId) -> Result<()> {
    if running(id) {
        return Err(Error::new(
            ErrorClass::Request,
            "the persistent request is active: wait for it before using its buffer",
        ));
    }
    Ok(())
}
