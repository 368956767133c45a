//! The pml beyond plain send and receive: probing the unexpected queue, matched messages
//! (MPI_Mprobe/MPI_Mrecv), cancelling receives, persistent requests and freeing requests
//! that are still active.

use super::request::{Extension, Kind, PersistentOp, Request, Starter};
use super::{matches, Pml, ReqId, Started, State, Status, Unexpected, ANY_SOURCE, ANY_TAG};

/// The status of an inactive or null request (MPI's "empty status").
pub fn empty_status() -> Status {
    Status {
        source: ANY_SOURCE,
        tag: ANY_TAG,
        ..Status::default()
    }
}

/// What a probe reports about an arrived message: its source, tag and full size.
fn probe_status(u: &Unexpected) -> Status {
    Status {
        source: u.hdr.src,
        tag: u.hdr.tag,
        count: u.hdr.total as usize,
        ..Status::default()
    }
}

impl State {
    /// An arrived message still receiving CONT fragments: in the unexpected queue (searched
    /// from the back, where the message in flight is) or already matched by a probe.
    pub(super) fn arrived_mut(&mut self, id: u64) -> Option<&mut Unexpected> {
        if let Some(i) = self.unexpected.iter().rposition(|u| u.id == id) {
            return self.unexpected.get_mut(i);
        }
        self.matched.iter_mut().flatten().find(|u| u.id == id)
    }
}

impl Pml {
    /// The first arrived message that a receive (ctx, src, tag) would match, without taking it.
    pub fn iprobe(&self, ctx: u32, src: i32, tag: i32) -> Option<Status> {
        self.st
            .unexpected
            .iter()
            .find(|u| matches(ctx, src, tag, &u.hdr))
            .map(probe_status)
    }

    /// Match an arrived message and take it out of the unexpected queue, so only
    /// `mrecv(handle)` can receive it. Returns the message handle and its status.
    pub fn improbe(&mut self, ctx: u32, src: i32, tag: i32) -> Option<(usize, Status)> {
        let st = &mut self.st;
        let i = st
            .unexpected
            .iter()
            .position(|u| matches(ctx, src, tag, &u.hdr))?;
        let u = st.unexpected.remove(i).expect("position found it");
        let status = probe_status(&u);
        let slot = match st.matched.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                st.matched.push(None);
                st.matched.len() - 1
            }
        };
        st.matched[slot] = Some(u);
        Some((slot, status))
    }

    /// Receive the matched message `msg` into `m` (contiguous or through a datatype layout).
    ///
    /// # Safety
    /// As `irecv_msg`.
    pub unsafe fn mrecv_msg(&mut self, msg: usize, m: crate::datatype::Msg) -> Option<Started> {
        let u = self.st.matched.get_mut(msg)?.take()?;
        let (ctx, src, tag) = (u.hdr.ctx, u.hdr.src, u.hdr.tag);
        // SAFETY: forwarded contract.
        Some(unsafe { self.deliver(u, m.ptr, m.len, m.layout, ctx, src, tag) })
    }

    /// Cancel a receive that has not matched yet: it completes with a cancelled status.
    /// Sends, and receives already matched, are not cancelled (false).
    pub fn cancel(&mut self, req: ReqId) -> bool {
        let req = match self.st.reqs.get(req) {
            Some(Request {
                kind: Kind::Persistent { active, .. },
                ..
            }) => match active {
                Some(a) => *a,
                None => return false,
            },
            _ => req,
        };
        if !self.st.posted.remove(req) {
            return false;
        }
        self.st.unpost(req);
        if let Some(r) = self.st.reqs.get_mut(req) {
            r.status = Status {
                cancelled: true,
                ..empty_status()
            };
        }
        self.st.complete(req);
        true
    }

    /// The status of a completed request without freeing it (MPI_Request_get_status).
    pub fn peek(&self, req: ReqId) -> Option<Status> {
        match self.st.reqs.get(req)? {
            Request {
                kind: Kind::Persistent { active, .. },
                ..
            } => match active {
                None => Some(empty_status()),
                Some(a) => self.peek(*a),
            },
            r => r.complete.then_some(r.status),
        }
    }

    /// Free a request (MPI_Request_free): at once when complete or inactive, else when it
    /// completes. A persistent request's run in progress goes on in the background.
    pub fn free(&mut self, req: ReqId) {
        let st = &mut self.st;
        let inner = match st.reqs.get_mut(req) {
            None => return,
            Some(Request {
                kind: Kind::Persistent { active, .. },
                ..
            }) => {
                let a = *active;
                st.reqs.remove(req);
                match a {
                    Some(a) => a,
                    None => return,
                }
            }
            Some(_) => req,
        };
        if let Some(r) = st.reqs.get_mut(inner) {
            r.detached = true;
        }
        st.reap_detached(inner);
    }

    /// A new inactive persistent request.
    pub fn persistent(&mut self, op: PersistentOp) -> ReqId {
        self.st.reqs.insert(Request::persistent(op))
    }

    /// A persistent request's operation and whether it is running; None if `req` is not one.
    pub fn persistent_op(&self, req: ReqId) -> Option<(PersistentOp, bool)> {
        match self.st.reqs.get(req)? {
            Request {
                kind:
                    Kind::Persistent {
                        op: Starter::P2p(op),
                        active,
                    },
                ..
            } => Some((op.clone(), active.is_some())),
            _ => None,
        }
    }

    /// A new inactive persistent request started by an upper layer.
    pub fn persistent_ext(&mut self, ext: Extension) -> ReqId {
        self.st.reqs.insert(Request::persistent_ext(ext))
    }

    /// An upper layer's persistent request: its operation and whether it is running.
    pub fn persistent_ext_op(&self, req: ReqId) -> Option<(Extension, bool)> {
        match self.st.reqs.get(req)? {
            Request {
                kind:
                    Kind::Persistent {
                        op: Starter::Ext(e),
                        active,
                    },
                ..
            } => Some((e.clone(), active.is_some())),
            _ => None,
        }
    }

    /// The request of a persistent request's run in progress, if any.
    pub fn active_run(&self, req: ReqId) -> Option<ReqId> {
        match self.st.reqs.get(req)? {
            Request {
                kind: Kind::Persistent { active, .. },
                ..
            } => *active,
            _ => None,
        }
    }

    /// Record the request of a persistent request's new run (MPI_Start).
    pub fn set_active(&mut self, req: ReqId, run: ReqId) {
        if let Some(Request {
            kind: Kind::Persistent { active, .. },
            ..
        }) = self.st.reqs.get_mut(req)
        {
            *active = Some(run);
        }
    }

    pub fn is_persistent(&self, req: ReqId) -> bool {
        matches!(
            self.st.reqs.get(req),
            Some(Request {
                kind: Kind::Persistent { .. },
                ..
            })
        )
    }

    /// Whether completion calls wait for it: every request but an inactive persistent one.
    pub fn is_active(&self, req: ReqId) -> bool {
        !self.is_persistent(req) || self.active_run(req).is_some()
    }
}
