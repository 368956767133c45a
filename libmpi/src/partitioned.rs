//! Partitioned communication (MPI_Psend_init, MPI_Precv_init, MPI_Pready*, MPI_Parrived):
//! persistent requests of `crate::persist` whose runs are pml groups (`pml/group.rs`).
//!
//! Protocol, all on the communicator's collective context with negative tags (collectives use
//! non-negative ones):
//! - MPI_Precv_init takes a channel number (unique among this process's live partitioned
//!   receives) and sends the source a handshake `(channel, partitions, partition bytes)` with a
//!   tag derived from the user's tag; MPI_Psend_init posts the matching receive. The pml's
//!   ordered matching pairs the k-th send init with the k-th receive init of the same
//!   (source, tag), as MPI requires.
//! - Each receiver partition is one message, tagged `(channel, partition)`: the receiver's
//!   MPI_Start posts one receive per partition; the sender sends receiver partition k once
//!   every sender partition overlapping it is ready, so the two sides may partition
//!   differently. MPI_Parrived asks whether partition k's receive has completed.
//! - The sender needs the handshake before it can send; MPI_Start and MPI_Pready never wait
//!   for it: a pml watcher (`Pml::watch`), registered at init, takes it when it arrives, sizes
//!   the run in progress and sends what is ready by then.
//!
//! Any datatype: a receive partition is whole elements of its type; a sender range that splits
//! elements of a non-contiguous type is packed into a copy kept until the next run (so a send
//! request of that kind must not be freed while active; nor a receive, whose channel could be
//! taken again while its receives are posted). Limits: at most 2^20 receive partitions and 1024 live partitioned
//! receives per process; handshake tags fold user tags modulo 2^29 (two partitioned pairs
//! between the same ranks whose tags differ by a multiple of 2^29 could cross).

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use crate::datatype::{Layout, Msg};
use crate::error::{err, Error, ErrorClass, Result};
use crate::persist::{self, Start};
use crate::pml::{Pml, ReqId, Status, ANY_SOURCE};
use crate::runtime::{Runtime, PROC_NULL, TAG_UB};

const MAX_PARTS: usize = 1 << 20;
const MAX_CHANNELS: usize = 1024;
const HS_LEN: usize = 20;

fn hs_tag(tag: i32) -> i32 {
    -(3 + (tag & 0x1FFF_FFFF))
}

fn data_tag(chan: u32, part: usize) -> i32 {
    -((1 << 30) + ((chan as i32) << 20 | part as i32))
}

/// Channel numbers of the live partitioned receives of this process.
static CHANNELS: Mutex<Vec<bool>> = Mutex::new(Vec::new());

fn take_channel() -> Result<u32> {
    let mut c = CHANNELS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = c.iter().position(|used| !used) {
        c[i] = true;
        return Ok(i as u32);
    }
    if c.len() >= MAX_CHANNELS {
        return err(
            ErrorClass::NoMem,
            format!("more than {MAX_CHANNELS} partitioned receives at once"),
        );
    }
    c.push(true);
    Ok(c.len() as u32 - 1)
}

/// One side's common arguments, checked.
struct Side {
    /// The peer's rank in the communicator (PROC_NULL: nothing moves).
    peer: i32,
    peer_world: usize,
    me: i32,
    ctx: u32,
    tag: i32,
    buf: *mut u8,
    /// The datatype's layout when it is not a predefined one (partitions then move through
    /// it, element by element).
    layout: Option<Arc<Layout>>,
    parts: usize,
    part_bytes: usize,
}

impl Side {
    /// Bytes `[lo, hi)` of this side's packed data as a message; None when the range splits
    /// an element of a non-contiguous datatype.
    fn range(&self, lo: usize, hi: usize) -> Option<Msg> {
        let Some(l) = &self.layout else {
            return Some(Msg::bytes(self.buf.wrapping_add(lo), hi - lo));
        };
        let size = l.size();
        if !lo.is_multiple_of(size) || !hi.is_multiple_of(size) {
            return None;
        }
        let first = (lo / size) as isize * l.extent();
        Some(Msg::typed(
            self.buf.wrapping_offset(first),
            (hi - lo) / size,
            l,
        ))
    }

    /// Bytes `[lo, hi)` packed into a new buffer (a range that splits elements).
    fn pack(&self, lo: usize, hi: usize) -> Vec<u8> {
        let l = self
            .layout
            .as_ref()
            .expect("only non-contiguous data is packed");
        let whole = Msg::typed(self.buf, self.parts * self.part_bytes / l.size(), l);
        let mut v = vec![0u8; hi - lo];
        // SAFETY: MPI_Psend_init's contract: the buffer holds the partitions' elements, and
        // [lo, hi) lies inside the packed stream.
        unsafe { whole.read(lo, &mut v) };
        v
    }
}

#[allow(clippy::too_many_arguments)]
fn side(
    rt: &Runtime,
    comm: usize,
    buf: *mut u8,
    layout: Option<Arc<Layout>>,
    parts: i64,
    part_bytes: usize,
    peer: i32,
    tag: i32,
    what: &str,
) -> Result<Side> {
    if !(0..=TAG_UB).contains(&tag) {
        return err(
            ErrorClass::Tag,
            format!("tag {tag} is invalid (valid: 0..={TAG_UB}; no wildcards)"),
        );
    }
    if parts < 1 {
        return err(
            ErrorClass::Arg,
            format!("{parts} partitions: at least one is needed"),
        );
    }
    let parts = parts as usize;
    if parts
        .checked_mul(part_bytes)
        .is_none_or(|t| t > isize::MAX as usize)
    {
        return err(ErrorClass::Count, "the partitioned message is too large");
    }
    if buf.is_null() && part_bytes > 0 {
        return err(ErrorClass::Buffer, "buffer is NULL");
    }
    let c = rt.comm(comm)?;
    if peer == ANY_SOURCE {
        return err(
            ErrorClass::Rank,
            format!("MPI_ANY_SOURCE is not allowed as the {what} of a partitioned operation"),
        );
    }
    // Data whose elements all lie in one run (any contiguous datatype) moves as bytes.
    let (buf, layout) = match layout {
        Some(l) if l.size() > 0 => {
            let whole = Msg::typed(buf, parts * (part_bytes / l.size()), &l);
            if whole.is_contiguous() {
                (whole.ptr, None)
            } else {
                (buf, Some(l))
            }
        }
        _ => (buf, None),
    };
    let peer_world = if peer == PROC_NULL {
        0
    } else {
        c.world_of(peer)?
    };
    Ok(Side {
        peer,
        peer_world,
        me: c.rank,
        ctx: c.coll_ctx(),
        tag,
        buf,
        layout,
        parts,
        part_bytes,
    })
}

/// A partitioned receive (MPI_Precv_init).
pub struct PRecv {
    s: Side,
    chan: u32,
}

impl Drop for PRecv {
    fn drop(&mut self) {
        if self.s.peer != PROC_NULL {
            let mut c = CHANNELS.lock().unwrap_or_else(|e| e.into_inner());
            c[self.chan as usize] = false;
        }
    }
}

impl Start for PRecv {
    fn start(&self, rt: &mut Runtime, _req: ReqId) -> Result<ReqId> {
        let s = &self.s;
        if s.peer == PROC_NULL {
            return Ok(rt.pml.group(Some(0), crate::p2p::proc_null_status()));
        }
        let status = Status {
            source: s.peer,
            tag: s.tag,
            count: s.parts * s.part_bytes,
            ..Status::default()
        };
        let g = rt.pml.group(Some(s.parts), status);
        for k in 0..s.parts {
            let m = s
                .range(k * s.part_bytes, (k + 1) * s.part_bytes)
                .expect("a receive partition is whole elements");
            // SAFETY: MPI_Precv_init's contract: the buffer stays valid and untouched while a
            // run is active.
            let st = unsafe { rt.pml.irecv_msg(m, s.ctx, s.peer, data_tag(self.chan, k)) };
            rt.pml.group_add(g, k, st);
        }
        Ok(g)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The receiver's handshake, as the sender learns it.
#[derive(Clone, Copy)]
struct Peer {
    chan: u32,
    parts: usize,
    part_bytes: usize,
}

enum Hs {
    /// The handshake receive, into the boxed buffer.
    Waiting(ReqId, Box<[u8; HS_LEN]>),
    Known(Peer),
}

struct Run {
    group: ReqId,
    ready: Vec<bool>,
    /// Receiver partitions sent in this run (sized once the handshake is known).
    sent: Vec<bool>,
    /// Packed copies of partitions that split datatype elements, kept until the next run.
    packed: Vec<Vec<u8>>,
}

/// What a partitioned send shares with its watcher (the deferred work of a handshake that
/// had not come when MPI_Start or MPI_Pready ran).
struct SendState {
    hs: Hs,
    /// The two sides' sizes differ: every run fails with MPI_ERR_TRUNCATE.
    mismatch: bool,
    run: Option<Run>,
}

impl Drop for SendState {
    fn drop(&mut self) {
        // Gone before the handshake came (only at the end of the job: the watcher keeps the
        // state until then): its receive is still posted and may write into the buffer.
        if let Hs::Waiting(_, b) = std::mem::replace(&mut self.hs, Hs::Known(NO_PEER)) {
            std::mem::forget(b);
        }
    }
}

/// A partitioned send (MPI_Psend_init).
pub struct PSend {
    s: Rc<Side>,
    st: Rc<RefCell<SendState>>,
}

const NO_PEER: Peer = Peer {
    chan: 0,
    parts: 0,
    part_bytes: 0,
};

/// The watcher's turn: take the handshake if it came (then size the run in progress and send
/// what is ready). True once the handshake is known.
fn take_handshake(s: &Side, st: &mut SendState, pml: &mut Pml) -> bool {
    let (req, p) = match &st.hs {
        Hs::Known(_) => return true,
        Hs::Waiting(req, buf) => {
            if !pml.is_complete(*req) {
                return false;
            }
            let word = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
            let p = Peer {
                chan: u32::from_le_bytes(buf[0..4].try_into().expect("4 bytes")),
                parts: word(4) as usize,
                part_bytes: word(12) as usize,
            };
            (*req, p)
        }
    };
    pml.take(req);
    st.hs = Hs::Known(p);
    st.mismatch = s.parts * s.part_bytes != p.parts * p.part_bytes;
    if let Some(run) = st.run.as_mut() {
        if st.mismatch {
            pml.group_fail(run.group, ErrorClass::Truncate as i32);
        } else {
            run.sent = vec![false; p.parts];
            pml.group_expect(run.group, p.parts);
            send_ready(s, p, run, pml, 0..p.parts);
        }
    }
    true
}

/// Send every receiver partition in `ks` not yet sent whose sender partitions are all ready.
fn send_ready(s: &Side, p: Peer, run: &mut Run, pml: &mut Pml, ks: std::ops::Range<usize>) {
    let total = s.parts * s.part_bytes;
    for k in ks {
        if run.sent[k] {
            continue;
        }
        let (lo, hi) = (k * p.part_bytes, (k + 1) * p.part_bytes);
        let whole = if total == 0 {
            run.ready.iter().all(|&r| r)
        } else {
            (lo / s.part_bytes..hi.div_ceil(s.part_bytes)).all(|i| run.ready[i])
        };
        if !whole {
            continue;
        }
        let m = match s.range(lo, hi) {
            Some(m) => m,
            None => {
                let v = s.pack(lo, hi);
                let m = Msg::bytes(v.as_ptr(), v.len());
                run.packed.push(v);
                m
            }
        };
        run.sent[k] = true;
        // SAFETY: MPI_Psend_init's contract: the buffer stays valid and unmodified (for a
        // ready partition) while the run is active; packed copies live in the run.
        let st = unsafe { pml.isend_msg(m, s.peer_world, s.ctx, s.me, data_tag(p.chan, k)) };
        pml.group_add(run.group, k, st);
    }
}

impl PSend {
    /// MPI_Pready of partition `j`: send every receiver partition it completes (once the
    /// handshake is known; before, the watcher sends them when it comes). Never waits.
    fn ready(&self, rt: &mut Runtime, req: ReqId, j: usize) -> Result<()> {
        let s = &*self.s;
        if j >= s.parts {
            return err(
                ErrorClass::Arg,
                format!("partition {j} out of range ({} partitions)", s.parts),
            );
        }
        let mut st = self.st.borrow_mut();
        let active = rt.pml.active_run(req);
        if active.is_none() || st.run.as_ref().map(|r| r.group) != active {
            return err(
                ErrorClass::Request,
                "MPI_Pready on an inactive partitioned request (call MPI_Start first)",
            );
        }
        let st = &mut *st;
        let run = st.run.as_mut().expect("checked active");
        if run.ready[j] {
            return err(
                ErrorClass::Arg,
                format!("partition {j} is already marked ready in this run"),
            );
        }
        run.ready[j] = true;
        let p = match st.hs {
            Hs::Known(p) if s.peer != PROC_NULL && !st.mismatch => p,
            _ => return Ok(()),
        };
        // Receiver partitions overlapping bytes [j * pb, (j + 1) * pb); with no bytes at all,
        // every one waits for the last sender partition.
        let ks = if s.parts * s.part_bytes == 0 {
            0..p.parts
        } else if s.part_bytes == 0 {
            0..0
        } else {
            let (lo, hi) = (j * s.part_bytes, (j + 1) * s.part_bytes);
            lo / p.part_bytes..hi.div_ceil(p.part_bytes).min(p.parts)
        };
        send_ready(s, p, run, &mut rt.pml, ks);
        Ok(())
    }
}

impl Start for PSend {
    fn start(&self, rt: &mut Runtime, _req: ReqId) -> Result<ReqId> {
        let s = &*self.s;
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let (group, sent) = match st.hs {
            _ if s.peer == PROC_NULL => (rt.pml.group(Some(0), Status::default()), Vec::new()),
            Hs::Known(p) => {
                let g = rt.pml.group(Some(p.parts), Status::default());
                if st.mismatch {
                    rt.pml.group_fail(g, ErrorClass::Truncate as i32);
                }
                (g, vec![false; p.parts])
            }
            // Sized by the watcher when the handshake comes.
            Hs::Waiting(..) => (rt.pml.group(None, Status::default()), Vec::new()),
        };
        st.run = Some(Run {
            group,
            ready: vec![false; s.parts],
            sent,
            packed: Vec::new(),
        });
        Ok(group)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Runtime {
    /// MPI_Precv_init: `parts` partitions of `part_bytes` bytes at `buf`.
    #[allow(clippy::too_many_arguments)]
    pub fn precv_init(
        &mut self,
        comm: usize,
        buf: *mut u8,
        layout: Option<Arc<Layout>>,
        parts: i64,
        part_bytes: usize,
        source: i32,
        tag: i32,
    ) -> Result<ReqId> {
        let s = side(
            self, comm, buf, layout, parts, part_bytes, source, tag, "source",
        )?;
        if s.parts > MAX_PARTS {
            return err(
                ErrorClass::Count,
                format!("{} receive partitions: at most {MAX_PARTS}", s.parts),
            );
        }
        let chan = if s.peer == PROC_NULL {
            0
        } else {
            take_channel()?
        };
        if s.peer != PROC_NULL {
            let mut hs = [0u8; HS_LEN];
            hs[0..4].copy_from_slice(&chan.to_le_bytes());
            hs[4..12].copy_from_slice(&(s.parts as u64).to_le_bytes());
            hs[12..20].copy_from_slice(&(s.part_bytes as u64).to_le_bytes());
            // SAFETY: `hs` lives until the send completes: we wait for it here (an eager
            // send of 20 bytes completes locally).
            let st = unsafe {
                self.pml.isend(
                    hs.as_ptr(),
                    HS_LEN,
                    s.peer_world,
                    s.ctx,
                    s.me,
                    hs_tag(s.tag),
                )
            };
            let r = self.pml.request_for(st);
            self.progress_until(|p| p.is_complete(r));
            self.pml.take(r);
        }
        Ok(persist::register(self, Box::new(PRecv { s, chan })))
    }

    /// MPI_Psend_init: `parts` partitions of `part_bytes` bytes at `buf`.
    #[allow(clippy::too_many_arguments)]
    pub fn psend_init(
        &mut self,
        comm: usize,
        buf: *mut u8,
        layout: Option<Arc<Layout>>,
        parts: i64,
        part_bytes: usize,
        dest: i32,
        tag: i32,
    ) -> Result<ReqId> {
        let s = side(
            self,
            comm,
            buf,
            layout,
            parts,
            part_bytes,
            dest,
            tag,
            "destination",
        )?;
        let hs = if s.peer == PROC_NULL {
            Hs::Known(NO_PEER)
        } else {
            let mut b = Box::new([0u8; HS_LEN]);
            // SAFETY: the box lives in the shared state until the receive completes (the
            // watcher below holds the state until then).
            let st = unsafe {
                self.pml
                    .irecv(b.as_mut_ptr(), HS_LEN, s.ctx, s.peer, hs_tag(s.tag))
            };
            Hs::Waiting(self.pml.request_for(st), b)
        };
        let waiting = matches!(hs, Hs::Waiting(..));
        let op = PSend {
            s: Rc::new(s),
            st: Rc::new(RefCell::new(SendState {
                hs,
                mismatch: false,
                run: None,
            })),
        };
        if waiting {
            let (side, state) = (op.s.clone(), op.st.clone());
            self.pml.watch(Box::new(move |pml| {
                // Busy: a call of ours is using the state; try again at the next progress.
                let Ok(mut st) = state.try_borrow_mut() else {
                    return false;
                };
                take_handshake(&side, &mut st, pml)
            }));
            self.pml.progress();
        }
        Ok(persist::register(self, Box::new(op)))
    }

    fn psend(&self, req: ReqId) -> Result<std::rc::Rc<dyn Any>> {
        match persist::lookup(self, req) {
            Some((op, _)) if persist::downcast::<PSend>(&op).is_some() => Ok(op),
            _ => err(
                ErrorClass::Request,
                "not a partitioned send request (MPI_Psend_init)",
            ),
        }
    }

    /// MPI_Pready, MPI_Pready_range, MPI_Pready_list: mark partitions ready.
    pub fn pready(&mut self, req: ReqId, parts: impl IntoIterator<Item = i64>) -> Result<()> {
        let op = self.psend(req)?;
        let ps = persist::downcast::<PSend>(&op).expect("checked");
        for j in parts {
            let j = usize::try_from(j)
                .map_err(|_| Error::new(ErrorClass::Arg, format!("partition {j} is negative")))?;
            ps.ready(self, req, j)?;
        }
        Ok(())
    }

    /// MPI_Parrived: whether receive partition `k` of `req` has arrived (an inactive request:
    /// yes).
    pub fn parrived(&mut self, req: ReqId, k: i64) -> Result<bool> {
        let op = match persist::lookup(self, req) {
            Some((op, _)) if persist::downcast::<PRecv>(&op).is_some() => op,
            _ => {
                return err(
                    ErrorClass::Request,
                    "not a partitioned receive request (MPI_Precv_init)",
                )
            }
        };
        let pr = persist::downcast::<PRecv>(&op).expect("checked");
        if k < 0 || k as usize >= pr.s.parts {
            return err(
                ErrorClass::Arg,
                format!("partition {k} out of range ({} partitions)", pr.s.parts),
            );
        }
        let Some(run) = self.pml.active_run(req) else {
            return Ok(true);
        };
        self.pml.progress();
        Ok(self.pml.group_part_done(run, k as usize))
    }
}
