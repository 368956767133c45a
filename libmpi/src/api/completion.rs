//! Completing several requests: `wait_any`, `wait_some`, `test_all`, and cancelling.

use super::request::Request;
use super::status::Status;
use crate::error::Result;
use crate::pml::ReqId;
use crate::runtime;

fn ids(reqs: &[Request<'_>]) -> Vec<ReqId> {
    reqs.iter().filter_map(Request::raw).collect()
}

/// Wait until one of `reqs` completes; remove it and return its index and status.
/// None when `reqs` is empty.
pub fn wait_any(reqs: &mut Vec<Request<'_>>) -> Option<(usize, Result<Status>)> {
    let live = ids(reqs);
    if live.is_empty() {
        return None;
    }
    // Under MULTIPLE the wait happens outside the runtime (`with_ready`).
    let done = runtime::with_ready(
        |rt| one_ready(rt, &live),
        |rt| {
            rt.progress_until(|p| live.iter().any(|&r| p.is_complete(r)));
            Ok(reqs
                .iter()
                .position(|r| r.raw().is_some_and(|id| rt.pml.is_complete(id))))
        },
    );
    let i = done.ok().flatten()?;
    Some((i, reqs.remove(i).wait()))
}

/// Wait until at least one of `reqs` completes; remove every completed one and return their
/// indices (in `reqs` as it was) and statuses. Empty when `reqs` is empty.
pub fn wait_some(reqs: &mut Vec<Request<'_>>) -> Vec<(usize, Result<Status>)> {
    let live = ids(reqs);
    if live.is_empty() {
        return Vec::new();
    }
    let _ = runtime::with_ready(
        |rt| one_ready(rt, &live),
        |rt| {
            rt.progress_until(|p| live.iter().any(|&r| p.is_complete(r)));
            Ok(())
        },
    );
    take_completed(reqs)
}

/// Whether one of `live` is complete (or gone: the wait then returns at once).
fn one_ready(rt: &mut runtime::Runtime, live: &[ReqId]) -> bool {
    live.iter()
        .any(|&r| !rt.pml.is_valid(r) || rt.pml.is_complete(r))
}

fn take_completed(reqs: &mut Vec<Request<'_>>) -> Vec<(usize, Result<Status>)> {
    let done: Vec<usize> = runtime::with(|rt| {
        Ok(reqs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.raw().is_some_and(|id| rt.pml.is_complete(id)))
            .map(|(i, _)| i)
            .collect())
    })
    .unwrap_or_default();
    let mut out: Vec<(usize, Result<Status>)> = Vec::with_capacity(done.len());
    for &i in done.iter().rev() {
        out.push((i, reqs.remove(i).wait()));
    }
    out.reverse();
    out
}

/// If every request has completed, take them all and return their statuses (the first
/// error if any failed); otherwise leave them and return None.
pub fn test_all(reqs: &mut Vec<Request<'_>>) -> Result<Option<Vec<Status>>> {
    let live = ids(reqs);
    let all = runtime::with(|rt| {
        rt.pml.progress();
        Ok(live.iter().all(|&r| rt.pml.is_complete(r)))
    })?;
    if !all {
        return Ok(None);
    }
    super::request::wait_all(std::mem::take(reqs)).map(Some)
}

impl Request<'_> {
    /// Ask to cancel the operation (MPI_Cancel). A receive that has not matched a message is
    /// cancelled: waiting on it then gives a status with `is_cancelled()`. Sends and matched
    /// receives are not cancelled here; they complete normally. The request must still be
    /// waited on (or dropped).
    pub fn cancel(&self) -> Result<()> {
        if let Some(id) = self.raw() {
            runtime::with(|rt| {
                rt.pml.cancel(id);
                Ok(())
            })?;
        }
        Ok(())
    }
}
