//! The rest of MPI's point-to-point completion and send modes in the Rust API: non-blocking
//! buffered and ready sends (MPI_Ibsend, MPI_Irsend), the non-blocking forms of the
//! any/some completions (MPI_Testany, MPI_Testsome) and MPI_Startall.

use super::comm::Communicator;
use super::datatype::{as_bytes, Equivalence};
use super::persistent::Persistent;
use super::request::{Request, Scope};
use super::status::Status;
use crate::error::Result;
use crate::pml::request::SendMode;
use crate::runtime;

impl Communicator {
    fn isend_mode<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope [T],
        dest: i32,
        tag: i32,
        mode: SendMode,
    ) -> Result<Request<'scope>> {
        let b = as_bytes(buf);
        let req = runtime::with(|rt| {
            // SAFETY: `buf` is borrowed for 'scope, and the scope completes the request first.
            let s = unsafe { rt.start_send_mode(self.id, b.as_ptr(), b.len(), dest, tag, mode)? };
            Ok(rt.pml.request_for(s))
        })?;
        Ok(scope.register(req))
    }

    /// Start a buffered send: the data is copied into the attached buffer (`attach_buffer`)
    /// at once; `MPI_ERR_BUFFER` when none is attached or the message does not fit.
    pub fn ibsend<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'scope>> {
        self.isend_mode(scope, buf, dest, tag, SendMode::Buffered)
    }

    /// Start a ready send: the caller knows the matching receive is posted.
    pub fn irsend<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'scope>> {
        self.isend_mode(scope, buf, dest, tag, SendMode::Ready)
    }
}

/// Indices of the completed requests of `reqs`, after one progress pass.
fn completed(reqs: &[Request<'_>]) -> Vec<usize> {
    runtime::with(|rt| {
        rt.pml.progress();
        Ok(reqs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.raw().is_some_and(|id| rt.pml.is_complete(id)))
            .map(|(i, _)| i)
            .collect())
    })
    .unwrap_or_default()
}

/// If one of `reqs` has completed, remove it and return its index and status; None when none
/// has (or `reqs` is empty). Never blocks.
pub fn test_any(reqs: &mut Vec<Request<'_>>) -> Option<(usize, Result<Status>)> {
    let i = *completed(reqs).first()?;
    Some((i, reqs.remove(i).wait()))
}

/// Remove every request of `reqs` that has completed and return their indices (in `reqs` as
/// it was) and statuses; empty when none has. Never blocks.
pub fn test_some(reqs: &mut Vec<Request<'_>>) -> Vec<(usize, Result<Status>)> {
    let done = completed(reqs);
    let mut out: Vec<(usize, Result<Status>)> = Vec::with_capacity(done.len());
    for &i in done.iter().rev() {
        out.push((i, reqs.remove(i).wait()));
    }
    out.reverse();
    out
}

/// Start a run of every request of `reqs`, in order (MPI_Startall); stops at the first that
/// fails (one already active).
pub fn start_all<T>(reqs: &mut [Persistent<'_, T>]) -> Result<()> {
    reqs.iter_mut().try_for_each(Persistent::start)
}
