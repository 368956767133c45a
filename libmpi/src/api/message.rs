//! Matched messages (MPI_Mprobe/MPI_Improbe): a message taken out of matching, so that only
//! its `Message` can receive it.

use super::comm::check;
use super::datatype::{as_bytes_mut, Equivalence};
use super::request::{Request, Scope};
use super::status::Status;
use crate::error::Result;
use crate::runtime;

/// A matched message waiting to be received. Dropping it unreceived discards the message
/// (its data is dropped, so its sender is not left waiting).
#[must_use = "a matched message must be received (no other receive can take it)"]
#[derive(Debug)]
pub struct Message {
    /// None: a probe of PROC_NULL (MPI_MESSAGE_NO_PROC).
    pub(crate) slot: Option<usize>,
}

impl Message {
    /// Whether this is the "no process" message of a probe of `PROC_NULL`.
    pub fn is_no_proc(&self) -> bool {
        self.slot.is_none()
    }

    /// Receive the message into `buf` (MPI_Mrecv); a larger message is `MPI_ERR_TRUNCATE`.
    pub fn recv<T: Equivalence>(mut self, buf: &mut [T]) -> Result<Status> {
        let b = as_bytes_mut(buf);
        let slot = self.slot.take();
        let st = runtime::blocking(
            // SAFETY: `b` is exclusively borrowed for this whole call, which completes the
            // receive.
            |rt| unsafe { rt.start_mrecv(slot, b.as_mut_ptr(), b.len()) },
            super::comm::started_ready,
            |rt, s| rt.finish(s),
        )?;
        check(st)
    }

    /// Start receiving the message into `buf` (MPI_Imrecv).
    pub fn irecv<'scope, T: Equivalence>(
        mut self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
    ) -> Result<Request<'scope>> {
        let b = as_bytes_mut(buf);
        let slot = self.slot.take();
        let req = runtime::with(|rt| {
            // SAFETY: `buf` is borrowed for 'scope and the scope completes the request first.
            let s = unsafe { rt.start_mrecv(slot, b.as_mut_ptr(), b.len())? };
            Ok(rt.pml.request_for(s))
        })?;
        Ok(scope.register(req))
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            // Receive into nothing: the data is dropped (a truncation nobody sees).
            let _ = runtime::blocking(
                // SAFETY: a zero-byte receive never touches its buffer.
                |rt| unsafe { rt.start_mrecv(Some(slot), std::ptr::null_mut(), 0) },
                super::comm::started_ready,
                |rt, s| rt.finish(s),
            );
        }
    }
}
