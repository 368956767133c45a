//! A collective as a schedule (after libNBC): rounds of point-to-point sends and receives on the
//! communicator's collective context, plus local copies and reductions. A round's steps run in
//! order (local steps at once, transfers started); the next round starts when every transfer of
//! this one has completed. The progress engine advances schedules; nothing here blocks.

use crate::comm::Comm;
use crate::datatype::{Datatype, Msg};
use crate::op::{self, Op};
use crate::pml::{Pml, ReqId, Started};

/// Where a step's bytes live: a caller's buffer or one of the schedule's temporaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buf {
    User(*mut u8),
    Tmp(usize),
}

/// A position in a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At(pub Buf, pub usize);

impl At {
    pub fn add(self, off: usize) -> At {
        At(self.0, self.1 + off)
    }
}

#[derive(Clone)]
enum Step {
    Send {
        at: At,
        len: usize,
        world: usize,
    },
    Recv {
        at: At,
        len: usize,
        peer: i32,
    },
    /// A message of any layout (neighbour collectives take every datatype the pml does).
    SendMsg {
        m: Msg,
        world: usize,
    },
    RecvMsg {
        m: Msg,
        peer: i32,
    },
    /// Transfers between the two groups of an intercommunicator (on `Schedule::xctx`).
    XSend {
        at: At,
        len: usize,
        world: usize,
    },
    XRecv {
        at: At,
        len: usize,
        peer: i32,
    },
    Copy {
        from: At,
        to: At,
        len: usize,
    },
    /// Pack the whole message `m` (user memory, any layout) into `to` (a staging temporary).
    Pack {
        m: Msg,
        to: At,
    },
    /// Unpack `from` (a staging temporary) into the whole message `m`.
    Unpack {
        from: At,
        m: Msg,
    },
    /// `to = from op to` over `count` elements; `rev`: `to = to op from`.
    Reduce {
        from: At,
        to: At,
        count: usize,
        rev: bool,
    },
}

/// The reduction a schedule applies, with the element datatype.
#[derive(Clone)]
pub struct Red {
    pub op: Op,
    pub dt: Datatype,
}

/// Cloneable so that a persistent collective builds it once (capi/coll_init.rs).
#[derive(Clone)]
pub struct Schedule {
    key: super::SeqKey,
    ctx: u32,
    /// An intercommunicator's context between the groups (`ctx` is then the local one).
    xctx: u32,
    me: i32,
    tag: i32,
    /// Every round's steps, one after another (one allocation, not one per round).
    steps: Vec<Step>,
    /// Where each round's steps end in `steps`.
    ends: Vec<usize>,
    /// The next round to start.
    next: usize,
    pending: Vec<ReqId>,
    /// Temporaries, allocated when the schedule is built so their addresses never move.
    tmp: Vec<Vec<u64>>,
    red: Option<Red>,
    /// For `rev` reductions of non-commutative ops.
    scratch: Vec<u8>,
    /// First error class a transfer reported (truncation), 0 if none.
    pub error: i32,
}

/// Builds a schedule for the calling rank of `comm`.
pub struct Builder<'c> {
    comm: &'c Comm,
    s: Schedule,
    /// Steps of the last round, after everything else (unpacking staged receive buffers).
    post: Vec<Step>,
}

impl<'c> Builder<'c> {
    /// A builder; the tag is assigned when the schedule starts (`coll::start_in`).
    pub fn new(comm: &'c Comm, red: Option<Red>) -> Builder<'c> {
        Builder {
            comm,
            s: Schedule {
                key: super::seq_key(comm),
                ctx: comm.local_coll_ctx(),
                xctx: comm.coll_ctx(),
                me: comm.rank,
                tag: 0,
                steps: Vec::with_capacity(8),
                ends: Vec::with_capacity(4),
                next: 0,
                pending: Vec::new(),
                tmp: Vec::new(),
                red,
                scratch: Vec::new(),
                error: 0,
            },
            post: Vec::new(),
        }
    }

    pub fn rank(&self) -> i32 {
        self.comm.rank
    }

    pub fn comm(&self) -> &'c Comm {
        self.comm
    }

    pub fn size(&self) -> i32 {
        self.comm.size()
    }

    /// Whether the communicator is an intercommunicator (`coll::inter` builds its schedules).
    pub fn is_inter(&self) -> bool {
        self.comm.is_inter()
    }

    /// The number of ranks a collective's per-peer arrays cover: the remote group's size on an
    /// intercommunicator, the communicator's otherwise.
    pub fn peer_size(&self) -> i32 {
        self.comm.peers().len() as i32
    }

    /// Set the reduction for the reduction steps.
    pub fn set_red(&mut self, red: Red) {
        self.s.red = Some(red);
    }

    pub fn red(&self) -> &Red {
        self.s.red.as_ref().expect("a reduction schedule has an op")
    }

    pub fn commutative(&self) -> bool {
        self.red().op.commutative()
    }

    pub fn elem(&self) -> usize {
        self.red().dt.size
    }

    /// A temporary of `len` bytes, 8-byte aligned (enough for every Rust element type).
    pub fn tmp(&mut self, len: usize) -> At {
        self.s.tmp.push(vec![0u64; len.div_ceil(8)]);
        At(Buf::Tmp(self.s.tmp.len() - 1), 0)
    }

    fn world(&self, peer: i32) -> usize {
        self.comm.group[peer as usize] as usize
    }

    /// Send `len` bytes to `peer`; nothing for an empty message (both sides know it is empty).
    pub fn send(&mut self, at: At, len: usize, peer: i32) {
        if len > 0 {
            self.send0(at, len, peer);
        }
    }

    /// A send even of zero bytes (a synchronisation message).
    pub fn send0(&mut self, at: At, len: usize, peer: i32) {
        let world = self.world(peer);
        self.push(Step::Send { at, len, world });
    }

    pub fn recv(&mut self, at: At, len: usize, peer: i32) {
        if len > 0 {
            self.recv0(at, len, peer);
        }
    }

    pub fn recv0(&mut self, at: At, len: usize, peer: i32) {
        self.push(Step::Recv { at, len, peer });
    }

    /// Send the message `m` (user memory, any layout) to `peer`; nothing when it is empty.
    pub fn send_msg(&mut self, m: Msg, peer: i32) {
        if m.len > 0 {
            let world = self.world(peer);
            self.push(Step::SendMsg { m, world });
        }
    }

    /// Receive into the message `m` from `peer`; nothing when it is empty.
    pub fn recv_msg(&mut self, m: Msg, peer: i32) {
        if m.len > 0 {
            self.push(Step::RecvMsg { m, peer });
        }
    }

    /// Send `len` bytes to rank `peer` of an intercommunicator's remote group (nothing when
    /// empty, unless `sync`).
    pub fn xsend(&mut self, at: At, len: usize, peer: i32, sync: bool) {
        if len > 0 || sync {
            let remote = self
                .comm
                .remote
                .as_ref()
                .expect("xsend on an intercommunicator");
            let world = remote[peer as usize] as usize;
            self.push(Step::XSend { at, len, world });
        }
    }

    /// Receive from rank `peer` of an intercommunicator's remote group.
    pub fn xrecv(&mut self, at: At, len: usize, peer: i32, sync: bool) {
        if len > 0 || sync {
            self.push(Step::XRecv { at, len, peer });
        }
    }

    pub fn copy(&mut self, from: At, to: At, len: usize) {
        if len > 0 {
            self.push(Step::Copy { from, to, len });
        }
    }

    /// `to = from op to` (`from` holds the lower ranks' data).
    pub fn reduce(&mut self, from: At, to: At, count: usize) {
        if count > 0 {
            self.push(Step::Reduce {
                from,
                to,
                count,
                rev: false,
            });
        }
    }

    /// `to = to op from` (`to` holds the lower ranks' data).
    pub fn reduce_rev(&mut self, from: At, to: At, count: usize) {
        if count > 0 {
            self.push(Step::Reduce {
                from,
                to,
                count,
                rev: true,
            });
        }
    }

    fn push(&mut self, step: Step) {
        self.s.steps.push(step);
    }

    /// End the current round: later steps wait for its transfers.
    pub fn round(&mut self) {
        if self.s.steps.len() > self.s.ends.last().copied().unwrap_or(0) {
            self.s.ends.push(self.s.steps.len());
        }
    }

    /// Pack message `m` into `to` now (before any later step of this round).
    pub fn pack(&mut self, m: Msg, to: At) {
        if m.len > 0 {
            self.push(Step::Pack { m, to });
        }
    }

    /// Unpack `from` into message `m` once everything else has completed.
    pub fn unpack_at_end(&mut self, from: At, m: Msg) {
        if m.len > 0 {
            self.post.push(Step::Unpack { from, m });
        }
    }

    pub fn finish(mut self) -> Schedule {
        self.round();
        let post = std::mem::take(&mut self.post);
        self.s.steps.extend(post);
        self.round();
        self.s
    }
}

impl Schedule {
    pub fn seq_key(&self) -> super::SeqKey {
        self.key
    }

    pub fn set_tag(&mut self, tag: i32) {
        self.tag = tag;
    }

    /// Whether this schedule was built on `comm` (same contexts, group and rank), so that it
    /// can run again there (`coll::cache`).
    pub fn built_for(&self, comm: &crate::comm::Comm) -> bool {
        self.ctx == comm.local_coll_ctx()
            && self.xctx == comm.coll_ctx()
            && self.me == comm.rank
            && self.key == super::seq_key(comm)
    }

    /// Back to its first round, for another run of a finished schedule: every step reads its
    /// buffers when it runs, so nothing else needs resetting.
    pub fn rearm(&mut self) {
        debug_assert!(self.pending.is_empty(), "rearming a schedule still running");
        self.next = 0;
        self.pending.clear();
        self.error = 0;
    }

    fn ptr(&mut self, at: At) -> *mut u8 {
        match at.0 {
            // SAFETY (pointer arithmetic only): offsets stay within the caller's buffer, which
            // the algorithm sized from the call's counts.
            Buf::User(p) => p.wrapping_add(at.1),
            Buf::Tmp(i) => self.tmp[i].as_mut_ptr().cast::<u8>().wrapping_add(at.1),
        }
    }

    /// Advance as far as possible without blocking; true when the whole schedule is done.
    ///
    /// The caller of the collective guaranteed that its buffers stay valid, and are not
    /// touched by anyone else, until the collective's request completes.
    pub fn advance(&mut self, pml: &mut Pml) -> bool {
        loop {
            let mut i = 0;
            while i < self.pending.len() {
                let r = self.pending[i];
                if pml.is_complete(r) {
                    let st = pml.take(r).expect("complete request exists");
                    if st.error != 0 && self.error == 0 {
                        self.error = st.error;
                    }
                    self.pending.swap_remove(i);
                } else {
                    i += 1;
                }
            }
            if !self.pending.is_empty() {
                return false;
            }
            if self.next == self.ends.len() {
                return true;
            }
            let start = self.next.checked_sub(1).map_or(0, |i| self.ends[i]);
            let end = self.ends[self.next];
            self.next += 1;
            // Out of `self` while `run` borrows it mutably; put back, unchanged, right after.
            let steps = std::mem::take(&mut self.steps);
            for step in &steps[start..end] {
                self.run(pml, step);
            }
            self.steps = steps;
        }
    }

    fn run(&mut self, pml: &mut Pml, step: &Step) {
        let started = match *step {
            Step::SendMsg { ref m, world } => {
                // SAFETY: the message lies in the caller's buffers, valid until the schedule
                // completes (the collective's contract).
                unsafe { pml.isend_coll(m.clone(), world, self.ctx, self.me, self.tag) }
            }
            Step::RecvMsg { ref m, peer } => {
                // SAFETY: as above, writable and not otherwise accessed until completion.
                unsafe { pml.irecv_msg(m.clone(), self.ctx, peer, self.tag) }
            }
            Step::Send { at, len, world } => {
                let p = self.ptr(at);
                // SAFETY: `p` points into a buffer valid for `len` bytes until the schedule
                // completes (the collective's contract, or our own temporary).
                unsafe { pml.isend_coll(Msg::bytes(p, len), world, self.ctx, self.me, self.tag) }
            }
            Step::Recv { at, len, peer } => {
                let p = self.ptr(at);
                // SAFETY: as above, writable and not otherwise accessed until completion.
                unsafe { pml.irecv(p, len, self.ctx, peer, self.tag) }
            }
            Step::XSend { at, len, world } => {
                let p = self.ptr(at);
                // SAFETY: as for Send.
                unsafe { pml.isend_coll(Msg::bytes(p, len), world, self.xctx, self.me, self.tag) }
            }
            Step::XRecv { at, len, peer } => {
                let p = self.ptr(at);
                // SAFETY: as for Recv.
                unsafe { pml.irecv(p, len, self.xctx, peer, self.tag) }
            }
            Step::Copy { from, to, len } => {
                let (s, d) = (self.ptr(from), self.ptr(to));
                // SAFETY: both ranges are valid for `len` bytes (see above); `copy` allows overlap.
                unsafe { std::ptr::copy(s, d, len) };
                return;
            }
            Step::Pack { ref m, to } => {
                let d = self.ptr(to);
                // SAFETY: the temporary holds `m.len` bytes from `to` (the staging code sized
                // it); the message's bytes are the caller's readable send data.
                unsafe { m.read(0, std::slice::from_raw_parts_mut(d, m.len)) };
                return;
            }
            Step::Unpack { from, ref m } => {
                let s = self.ptr(from);
                // SAFETY: as for Pack; the message's bytes are the caller's receive buffer,
                // written by nothing else until the schedule completes.
                unsafe { m.write(0, std::slice::from_raw_parts(s.cast_const(), m.len)) };
                return;
            }
            Step::Reduce {
                from,
                to,
                count,
                rev,
            } => return self.reduce(from, to, count, rev),
        };
        match started {
            Started::Done(st) => {
                if st.error != 0 && self.error == 0 {
                    self.error = st.error;
                }
            }
            Started::Pending(r) => self.pending.push(r),
        }
    }

    fn reduce(&mut self, from: At, to: At, count: usize, rev: bool) {
        let red = self.red.clone().expect("a reduction schedule has an op");
        let len = count * red.dt.size;
        let (s, d) = (self.ptr(from), self.ptr(to));
        // SAFETY: both ranges hold `count` elements (the algorithm sized them) and are distinct
        // (a reduction never reads and writes the same block); no transfer is using them now,
        // since rounds only touch data their previous rounds completed.
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts(s.cast_const(), len),
                std::slice::from_raw_parts_mut(d, len),
            )
        };
        if !rev || red.op.commutative() {
            op::apply(&red.op, red.dt, count, a, b);
        } else {
            // to = to op from: compute into a copy of `from`, then move it to `to`.
            self.scratch.clear();
            self.scratch.extend_from_slice(a);
            op::apply(&red.op, red.dt, count, b, &mut self.scratch);
            b.copy_from_slice(&self.scratch);
        }
    }
}

impl crate::pml::driven::Driven for Schedule {
    #[inline]
    fn advance(&mut self, pml: &mut Pml) -> bool {
        Schedule::advance(self, pml)
    }

    fn error(&self) -> i32 {
        self.error
    }

    fn release(&mut self) {
        // Temporaries can be large (a big reduction's): not kept alive in a spare box.
        self.steps = Vec::new();
        self.ends = Vec::new();
        self.pending = Vec::new();
        self.tmp = Vec::new();
        self.red = None;
        self.scratch = Vec::new();
    }
}
