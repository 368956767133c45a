//! The request table: every pending send and receive, addressed by a small integer id.

use std::sync::Arc;

use crate::datatype::Layout;

pub type ReqId = u32;

/// The id every send that completed at once shares (MPI_Isend of a message the transport took
/// whole), as MPICH's lightweight request: nothing to fill when it starts and nothing to free
/// when it is waited for, where a slot costs about 110 instructions of a 570-instruction
/// message in a window of sends. It is complete with an empty status, and reads as such
/// through `get`, `take_complete`, `remove_status` and `remove`; `get_mut` does not see it, so
/// nothing can free, detach or cancel it. Far above any slot a table reaches (and, as a C
/// handle, below i32::MAX).
pub const SEND_DONE: ReqId = 0x7FFE_FFFF;

/// What a completed operation reports (MPI_Status's content).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub source: i32,
    pub tag: i32,
    /// MPI_SUCCESS (0) or an error class.
    pub error: i32,
    /// Bytes received (sends: 0).
    pub count: usize,
    pub cancelled: bool,
}

/// A rendezvous this receive is taking part in: whom to read from and how.
#[derive(Clone, Copy, Debug)]
pub struct Rndv {
    pub peer: usize,
    pub addr: u64,
    /// What the sender's transport needs to let us read `addr` (ib: the rkey).
    pub key: u64,
    pub sreq: u64,
    pub total: usize,
    /// Bytes streamed in so far (fallback path).
    pub got: usize,
    /// The match header it arrived with (source and tag for the status).
    pub hdr: super::wire::MatchHdr,
    /// Whether the sender is writing part of the data (cooperative rendezvous).
    pub coop: Coop,
}

/// A cooperative rendezvous: the receiver asks a sender that waits in MPI to write the tail
/// `[split, total)` into the receive buffer (PUT) while it reads the head itself, so two cores
/// copy at once; the receive completes, and FIN releases the sender, when both parts are in.
/// The tail goes to whoever claims `ticket` first (pml/rndv.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coop {
    /// Not split: the receiver reads (or has streamed) everything.
    Off,
    /// The sender claimed the tail; our read of the head ended as `head`; waiting for its
    /// PUT_FIN.
    Waiting {
        split: usize,
        head: Head,
        ticket: u64,
    },
    /// The sender could not write its part: read `[split, total)` ourselves.
    ReadTail { split: usize },
    /// The async progress thread asked the waiting sender to write all of it (`split` 0), so
    /// that this rank's core keeps computing; past `DELEGATE_WAIT` without the sender's claim,
    /// the receiver claims and reads it itself (pml/rndv.rs).
    Delegated {
        ticket: u64,
        since: std::time::Instant,
    },
}

/// How the receiver's own read of a cooperative rendezvous ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Head {
    Read,
    /// No single copy after all: everything is streamed once the sender's PUT is done.
    Stream,
    /// The read failed: the receive completes with this class once the PUT is done.
    Failed(crate::error::ErrorClass),
}

#[derive(Debug)]
pub enum Kind {
    Send {
        buf: *const u8,
        len: usize,
    },
    // The envelope (ctx, src, tag) is kept with the request for debugging; matching goes
    // through the posted index (pml/posted.rs), which has its own copy.
    #[allow(dead_code)]
    Recv {
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        /// Rank in the communicator, or ANY_SOURCE.
        src: i32,
        /// Tag, or ANY_TAG.
        tag: i32,
        /// Boxed: only rendezvous receives have one, and it keeps `Request` small enough to
        /// be moved without a memcpy call on the small-message path.
        rndv: Option<Box<Rndv>>,
    },
    /// A persistent request (MPI_*_init): what MPI_Start begins, and the request of the run
    /// in progress, if any (inactive when None).
    Persistent {
        op: Starter,
        active: Option<ReqId>,
    },
}

/// What a persistent request starts: a point-to-point operation the pml knows, or one owned by
/// a layer above (a persistent collective, a partitioned operation), opaque here: MPI_Start
/// asks that layer for the run's request (`crate::persist`).
#[derive(Clone, Debug)]
pub enum Starter {
    P2p(PersistentOp),
    Ext(Extension),
}

/// An upper layer's persistent operation (`crate::persist::Ext` inside).
pub type Extension = std::rc::Rc<dyn std::any::Any>;

/// How a send completes (MPI's send modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    Standard,
    /// Completes once matched (always rendezvous).
    Sync,
    /// Copied into the attached buffer; completes at once.
    Buffered,
    /// The receive is known to be posted; sent as a standard send.
    Ready,
}

/// The operation a persistent request starts: a send in some mode or a receive, on a
/// communicator (table index) with a communicator rank (or ANY_SOURCE / PROC_NULL).
#[derive(Clone, Debug)]
pub struct PersistentOp {
    /// None for a receive.
    pub send: Option<SendMode>,
    pub buf: *mut u8,
    pub len: usize,
    /// A derived datatype's layout (`len` packed bytes of it at `buf`); None: contiguous.
    pub layout: Option<Arc<Layout>>,
    pub comm: usize,
    pub peer: i32,
    pub tag: i32,
}

#[derive(Debug)]
pub struct Request {
    pub kind: Kind,
    pub complete: bool,
    pub status: Status,
    /// A derived datatype's layout: `buf` is then the user's buffer and `len`/`cap` count
    /// packed bytes; None for contiguous data.
    pub layout: Option<Arc<Layout>>,
    /// Freed by the user before completing (MPI_Request_free): removed when it completes.
    pub detached: bool,
}

impl Request {
    #[inline]
    pub fn send(buf: *const u8, len: usize) -> Request {
        Request {
            kind: Kind::Send { buf, len },
            complete: false,
            status: Status::default(),
            layout: None,
            detached: false,
        }
    }

    /// What `SEND_DONE` reads as: a completed send with an empty status.
    fn send_done() -> Request {
        Request {
            complete: true,
            ..Request::send(std::ptr::null(), 0)
        }
    }

    /// An inactive persistent request.
    pub fn persistent(op: PersistentOp) -> Request {
        Request {
            kind: Kind::Persistent {
                op: Starter::P2p(op),
                active: None,
            },
            complete: false,
            status: Status::default(),
            layout: None,
            detached: false,
        }
    }

    /// An inactive persistent request started by an upper layer.
    pub fn persistent_ext(ext: Extension) -> Request {
        Request {
            kind: Kind::Persistent {
                op: Starter::Ext(ext),
                active: None,
            },
            ..Request::send(std::ptr::null(), 0)
        }
    }

    /// This request moves its data through `layout` (a non-contiguous message).
    #[inline]
    pub fn with_layout(mut self, layout: Option<Arc<Layout>>) -> Request {
        self.layout = layout;
        self
    }

    #[inline]
    pub fn recv(
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        rndv: Option<Rndv>,
    ) -> Request {
        Request {
            kind: Kind::Recv {
                buf,
                cap,
                ctx,
                src,
                tag,
                rndv: rndv.map(Box::new),
            },
            complete: false,
            status: Status::default(),
            layout: None,
            detached: false,
        }
    }
}

/// A slab of requests with a free list; ids are reused after `free`.
pub struct Requests {
    slots: Vec<Option<Request>>,
    free: Vec<ReqId>,
    live: usize,
    /// What `SEND_DONE` reads as.
    send_done: Request,
}

impl Default for Requests {
    fn default() -> Requests {
        Requests {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            send_done: Request::send_done(),
        }
    }
}

impl Requests {
    #[inline(always)]
    pub fn insert(&mut self, r: Request) -> ReqId {
        self.live += 1;
        if let Some(id) = self.free.pop() {
            self.slots[id as usize] = Some(r);
            id
        } else {
            self.slots.push(Some(r));
            (self.slots.len() - 1) as ReqId
        }
    }

    /// `insert(f())`, with the request built after its slot is chosen: one made before is built
    /// on the stack and copied, and that copy's wide loads of just-written narrow fields stall
    /// on store forwarding. A closure's captures can still be spilled and copied that way: the
    /// hottest paths use `insert_recv` and `insert_completed` instead.
    #[inline(always)]
    pub fn insert_with(&mut self, f: impl FnOnce() -> Request) -> ReqId {
        let id = self.claim();
        let slot = &mut self.slots[id as usize];
        // A free slot is None (`remove*` empty it): nothing to drop, so no call between
        // choosing the slot and writing it.
        debug_assert!(slot.is_none(), "free request slot {id} in use");
        slot.get_or_insert_with(f);
        id
    }

    /// `insert_with(|| Request::recv(buf, cap, ctx, src, tag, None).with_layout(layout))`,
    /// written straight into the slot from the arguments. Through a closure the request was
    /// still built on the stack, its narrow stores then read back by the copy's 16-byte
    /// loads, which stall on store forwarding: half of MPI_Irecv's time in osu_bw's window.
    #[inline(never)]
    pub fn insert_recv(
        &mut self,
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        layout: Option<Arc<Layout>>,
    ) -> ReqId {
        let id = self.claim();
        let slot = &mut self.slots[id as usize];
        debug_assert!(slot.is_none(), "free request slot {id} in use");
        *slot = Some(Request {
            kind: Kind::Recv {
                buf,
                cap,
                ctx,
                src,
                tag,
                rndv: None,
            },
            complete: false,
            status: Status {
                source: 0,
                tag: 0,
                error: 0,
                count: 0,
                cancelled: false,
            },
            layout,
            detached: false,
        });
        id
    }

    /// `insert(Request::completed(status))`, written straight into the slot for the reason
    /// given at `insert_recv` (MPI_Isend's request for a message sent at once: that stall was
    /// 80 % of the send path in osu_bw's window at 64 bytes).
    #[inline(never)]
    pub fn insert_completed(
        &mut self,
        source: i32,
        tag: i32,
        error: i32,
        count: usize,
        cancelled: bool,
    ) -> ReqId {
        let id = self.claim();
        let slot = &mut self.slots[id as usize];
        debug_assert!(slot.is_none(), "free request slot {id} in use");
        *slot = Some(Request {
            kind: Kind::Send {
                buf: std::ptr::null(),
                len: 0,
            },
            complete: true,
            status: Status {
                source,
                tag,
                error,
                count,
                cancelled,
            },
            layout: None,
            detached: false,
        });
        id
    }

    /// A free slot's id, counted live; the caller fills the slot (which holds None) at once.
    #[inline(always)]
    fn claim(&mut self) -> ReqId {
        self.live += 1;
        match self.free.pop() {
            Some(id) => id,
            None => {
                debug_assert!(self.slots.len() < SEND_DONE as usize);
                self.slots.push(None);
                (self.slots.len() - 1) as ReqId
            }
        }
    }

    #[inline]
    pub fn get(&self, id: ReqId) -> Option<&Request> {
        match self.slots.get(id as usize) {
            Some(s) => s.as_ref(),
            None => (id == SEND_DONE).then_some(&self.send_done),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, id: ReqId) -> Option<&mut Request> {
        self.slots.get_mut(id as usize).and_then(|s| s.as_mut())
    }

    pub fn remove(&mut self, id: ReqId) -> Option<Request> {
        let Some(slot) = self.slots.get_mut(id as usize) else {
            return (id == SEND_DONE).then(Request::send_done);
        };
        let r = slot.take()?;
        self.free.push(id);
        self.live -= 1;
        Some(r)
    }

    /// Remove request `id` and return its status; drops it in place rather than moving the
    /// whole request out (the completion path of every small message).
    #[inline]
    pub fn remove_status(&mut self, id: ReqId) -> Option<Status> {
        let Some(slot) = self.slots.get_mut(id as usize) else {
            return (id == SEND_DONE).then(Status::default);
        };
        let status = slot.as_ref()?.status;
        *slot = None;
        self.free.push(id);
        self.live -= 1;
        Some(status)
    }

    /// `remove_status` if `id` is a complete, non-persistent request (one slab lookup: the
    /// wait path of a request that finished already).
    #[inline]
    pub fn take_complete(&mut self, id: ReqId) -> Option<Status> {
        self.take_complete_with(id, |st| *st)
    }

    /// `take_complete`, handing the status to `f` where it lies instead of returning it (a
    /// returned status goes through the stack: see MPI_Waitall).
    #[inline(always)]
    pub fn take_complete_with<R>(&mut self, id: ReqId, f: impl FnOnce(&Status) -> R) -> Option<R> {
        let Some(slot) = self.slots.get_mut(id as usize) else {
            return (id == SEND_DONE).then(|| f(&self.send_done.status));
        };
        let r = slot.as_ref()?;
        if !r.complete || matches!(r.kind, Kind::Persistent { .. }) {
            return None;
        }
        let out = f(&r.status);
        *slot = None;
        self.free.push(id);
        self.live -= 1;
        Some(out)
    }

    /// How many requests exist (pending or completed but not yet freed).
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send() -> Request {
        Request::send(std::ptr::null(), 0)
    }

    #[test]
    fn ids_are_reused() {
        let mut t = Requests::default();
        let a = t.insert(send());
        let b = t.insert(send());
        assert_ne!(a, b);
        assert!(t.remove(a).is_some());
        assert!(t.remove(a).is_none());
        assert_eq!(t.insert(send()), a);
        assert_eq!(t.live(), 2);
    }

    #[test]
    fn send_done_is_shared_and_stays() {
        let mut t = Requests::default();
        for _ in 0..3 {
            assert!(t.get(SEND_DONE).is_some_and(|r| r.complete));
            assert!(t.get_mut(SEND_DONE).is_none());
            assert_eq!(t.take_complete(SEND_DONE), Some(Status::default()));
            assert_eq!(t.remove_status(SEND_DONE), Some(Status::default()));
            assert!(t.remove(SEND_DONE).is_some_and(|r| r.complete));
        }
        assert_eq!(t.live(), 0);
        assert_eq!(t.insert(send()), 0);
    }
}
