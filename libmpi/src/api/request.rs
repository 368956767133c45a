//! Non-blocking operations. A `Request` borrows its buffer for a `Scope`; when the scope ends,
//! every request started in it has completed, so buffers are never freed or touched while the
//! transport may still use them, even if a request is leaked with `mem::forget`.

use std::cell::RefCell;
use std::marker::PhantomData;

use super::status::Status;
use crate::error::Result;
use crate::pml::ReqId;
use crate::runtime;

/// Requests started within a `scope` call; all are completed before it returns.
/// `'env` is the caller's environment: buffers borrowed from it outlive every `'scope`.
pub struct Scope<'scope, 'env: 'scope> {
    pending: RefCell<Vec<ReqId>>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
    _not_send: PhantomData<*const ()>,
}

/// Run `f` with a scope for non-blocking operations; waits for any it left unfinished
/// (also when `f` panics), so a buffer is never released while the transport may use it.
pub fn scope<'env, F, R>(f: F) -> R
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
{
    let s = Scope {
        pending: RefCell::new(Vec::new()),
        _scope: PhantomData,
        _env: PhantomData,
        _not_send: PhantomData,
    };
    let _guard = WaitLeft(&s.pending);
    f(&s)
}

/// Completes what a scope left pending when the scope ends, by return or by panic.
struct WaitLeft<'a>(&'a RefCell<Vec<ReqId>>);

impl Drop for WaitLeft<'_> {
    fn drop(&mut self) {
        for req in std::mem::take(&mut *self.0.borrow_mut()) {
            // A leaked (forgotten) request still owns its buffer until it completes; a leaked
            // persistent request is then freed too (a no-op for the others, already gone).
            // Under MULTIPLE the wait happens outside the runtime (`with_ready`).
            let ready =
                |rt: &mut runtime::Runtime| !rt.pml.is_valid(req) || rt.pml.is_complete(req);
            let _ = runtime::with_ready(ready, |rt| {
                let r = rt.wait(req);
                rt.pml.free(req);
                r
            });
        }
    }
}

impl<'scope> Scope<'scope, '_> {
    pub(crate) fn register(&'scope self, req: ReqId) -> Request<'scope> {
        self.pending.borrow_mut().push(req);
        Request {
            req: Some(req),
            pending: &self.pending,
        }
    }

    /// Track a request this scope must complete (and free) if it is leaked; returns the list
    /// to `forget` it from once completed another way.
    pub(crate) fn track(&'scope self, req: ReqId) -> &'scope RefCell<Vec<ReqId>> {
        self.pending.borrow_mut().push(req);
        &self.pending
    }
}

pub(crate) fn forget(pending: &RefCell<Vec<ReqId>>, req: ReqId) {
    let mut p = pending.borrow_mut();
    if let Some(i) = p.iter().position(|&r| r == req) {
        p.swap_remove(i);
    }
}

/// A pending non-blocking operation. Dropping it waits for it to complete.
#[must_use = "a request must be waited on (dropping it waits)"]
pub struct Request<'scope> {
    req: Option<ReqId>,
    pending: &'scope RefCell<Vec<ReqId>>,
}

impl Request<'_> {
    /// The pml request id (None once used up).
    pub(crate) fn raw(&self) -> Option<ReqId> {
        self.req
    }

    /// Block until the operation completes.
    pub fn wait(mut self) -> Result<Status> {
        let req = self.req.take().expect("a live request has an id");
        forget(self.pending, req);
        let st = runtime::wait_request(req)?;
        super::comm::check(st)
    }

    /// The status if the operation has completed (the request is then used up), else None.
    pub fn test(&mut self) -> Result<Option<Status>> {
        let Some(req) = self.req else { return Ok(None) };
        let done = runtime::with(|rt| {
            rt.pml.progress();
            Ok(if rt.pml.is_complete(req) {
                rt.pml.take(req)
            } else {
                None
            })
        })?;
        match done {
            Some(st) => {
                self.req = None;
                forget(self.pending, req);
                super::comm::check(st).map(Some)
            }
            None => Ok(None),
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if let Some(req) = self.req.take() {
            forget(self.pending, req);
            let _ = runtime::wait_request(req);
        }
    }
}

/// Wait for all of `reqs`; the first error is returned after all have completed.
pub fn wait_all(reqs: Vec<Request<'_>>) -> Result<Vec<Status>> {
    let mut out = Vec::with_capacity(reqs.len());
    let mut first_err = None;
    for r in reqs {
        match r.wait() {
            Ok(s) => out.push(s),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}
