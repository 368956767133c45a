//! One-sided communication (MPI RMA), after Open MPI's `osc` framework. One portable
//! component over every btl, by active messages through the pml (like Open MPI's osc/pt2pt and
//! MPICH's ch3 RMA): each window has a communicator of its own (a dup: two fresh contexts).
//! Requests (put, get, accumulate, lock, fence markers, ...) go to the target on the first
//! context, tagged by kind (`wire.rs`); the target applies them one at a time, in arrival
//! order, whenever it makes MPI progress (`progress`, the pml's `ext` hook), which makes every
//! accumulate atomic per element and orders each origin's operations. Replies come back on the
//! second context under a tag the origin picked.
//!
//! Synchronisation (`sync.rs`) rests on that order: a fence sends a FENCE marker to every rank
//! and waits for everyone's, so all earlier operations have been applied; PSCW sends POST and
//! COMPLETE markers; passive target asks the target for a lock (granted by a reply, queued
//! otherwise), and flush/unlock are a round trip that the target answers after applying what
//! came before. Origin data is packed into the request, so puts and accumulates are locally
//! complete at once.

pub mod direct;
pub mod ops;
pub mod rdma;
pub mod rdma_atomic;
pub mod shm;
pub mod sync;
mod target;
pub mod wire;

use std::cell::RefCell;
use std::collections::VecDeque;

use crate::comm::ErrHandler;
use crate::error::{err, ErrorClass, Result};
use crate::pml::{Pml, ReqId, Started};
use crate::runtime;

pub const FLAVOR_CREATE: i32 = 311;
pub const FLAVOR_ALLOCATE: i32 = 312;
pub const FLAVOR_DYNAMIC: i32 = 313;
pub const FLAVOR_SHARED: i32 = 314;
pub const MODEL_UNIFIED: i32 = 321;

/// Tag of the window-creation exchange on the new communicator's collective context: clear
/// of the barrier's round tags and of the collectives' sequence tags (2^30 + seq).
const EXCH_TAG: i32 = 0x2000_0001;
/// Reply tags: `REPLY_BASE + counter`, below the exchange tag.
const REPLY_BASE: u32 = 0x0010_0000;
const REPLY_SPAN: u32 = 0x1000_0000;

/// What a peer told at creation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Peer {
    pub size: usize,
    pub disp_unit: usize,
}

/// The target side's lock: one exclusive holder or any number of shared ones, and the
/// requests waiting in arrival order (origin, exclusive, reply tag).
#[derive(Default)]
struct LockState {
    exclusive: Option<i32>,
    shared: usize,
    queue: VecDeque<(i32, bool, u64)>,
}

/// The epoch a window is in at this process, on the access side (`Window::access`) and the
/// exposure side (`Window::exposure`): what MPI_ERR_RMA_SYNC is decided on (MPICH's ch4 states).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Epoch {
    #[default]
    None,
    /// After a fence without MPI_MODE_NOSUCCEED: a fence epoch if RMA calls follow, but a
    /// lock, start or post may still come instead (the fence then only closed the last one).
    Refence,
    /// A fence epoch that RMA calls used: only a fence ends it.
    Fence,
    /// Access: MPI_Win_start .. MPI_Win_complete.
    Start,
    /// Access: at least one MPI_Win_lock held (`Window::held` says at which targets).
    Lock,
    LockAll,
    /// Exposure: MPI_Win_post .. MPI_Win_wait / a true MPI_Win_test.
    Post,
}

/// A request message being received (a rendezvous still moving its data).
struct Incoming {
    req: ReqId,
    /// Room for `len` bytes, filled when the receive completes.
    buf: Vec<u8>,
    len: usize,
    /// A request to apply when it arrives; false for a direct put's data, which the
    /// receive itself wrote into the window.
    apply: bool,
}

/// Memory the library allocated for the window, released at MPI_Win_free.
pub enum Memory {
    User,
    /// An anonymous mapping of this many bytes.
    Heap(*mut u8, usize),
    /// Kept for its Drop (the mapping goes with the window).
    Shared(#[allow(dead_code)] shm::Segment),
}

pub struct Window {
    /// The window's own communicator (a slot in `Runtime::comms`), its two contexts.
    pub comm: usize,
    pub ctx: u32,
    pub rctx: u32,
    pub rank: i32,
    /// World rank of each window rank.
    pub world: Vec<usize>,
    pub base: usize,
    pub size: usize,
    pub flavor: i32,
    pub peers: Vec<Peer>,
    pub memory: Memory,
    /// Shared windows: each rank's part in this process's mapping.
    pub shared_bases: Vec<usize>,
    /// Dynamic windows: attached (address, length) ranges.
    pub attached: Vec<(usize, usize)>,
    /// Direct access (load/store or CMA) for every operation, or None: messages.
    pub direct: Option<direct::Direct>,
    /// Puts and gets by RDMA (over ib), or None.
    pub rdma: Option<rdma::Rdma>,
    pub name: String,
    pub errhandler: ErrHandler,
    pub attrs: Vec<(i32, usize)>,
    pub info: crate::info::Info,
    /// Values the predefined attributes point at: size, disp_unit, flavor, model.
    pub attr_vals: Box<(isize, i32, i32, i32)>,

    // Target side.
    cur: Option<Incoming>,
    lock: LockState,
    pub fence_in: Vec<u64>,
    pub post_in: Vec<u64>,
    pub post_used: Vec<u64>,
    pub complete_in: Vec<u64>,
    pub complete_used: Vec<u64>,

    // Origin side.
    next_reply: u32,
    pub fences: u64,
    /// Sends in flight with the buffers they read (requests and replies).
    sends: Vec<(ReqId, Vec<u8>)>,
    /// Receives of reply data in flight (gets, get-accumulates, compare-and-swaps).
    pub gets: Vec<ReqId>,
    /// Request-based operations: (internal receive, the user's request it completes).
    linked: Vec<(ReqId, ReqId)>,
    /// Ranks of the current PSCW access epoch (MPI_Win_start) and exposure epoch (post).
    pub start_group: Vec<i32>,
    pub post_group: Vec<i32>,
    /// Passive-target locks this rank holds, per target: 0 none, 1 shared, 2 exclusive.
    pub held: Vec<u8>,
    /// The access and exposure epochs this process has the window in (MPI_ERR_RMA_SYNC).
    pub access: Epoch,
    pub exposure: Epoch,
    /// Per target: requests sent without a reply (puts, accumulates) since the last flush;
    /// a flush of a target with none needs no round trip (replies come after applying).
    pub unacked: Vec<u32>,
}

impl Window {
    pub fn size(&self) -> i32 {
        self.world.len() as i32
    }

    /// A fresh reply tag.
    pub fn reply_tag(&mut self) -> i32 {
        self.next_reply = (self.next_reply + 1) % REPLY_SPAN;
        (REPLY_BASE + self.next_reply) as i32
    }

    /// Send `buf` (a request or reply) to window rank `to` on context `ctx`; the window keeps
    /// the buffer until the send completes.
    pub fn send(&mut self, pml: &mut Pml, to: i32, ctx: u32, tag: i32, buf: Vec<u8>) {
        let dest = self.world[to as usize];
        // SAFETY: the buffer is moved into `sends` below (a Vec's heap block does not move)
        // and dropped only once the send completed.
        let s = unsafe { pml.isend(buf.as_ptr(), buf.len(), dest, ctx, self.rank, tag) };
        if let Started::Pending(r) = s {
            self.sends.push((r, buf));
        }
    }

    /// Whether every send and reply receive of this window completed.
    pub fn quiet(&self, pml: &Pml) -> bool {
        self.sends.iter().all(|(r, _)| pml.is_complete(*r))
            && self.gets.iter().all(|r| pml.is_complete(*r))
            && self.linked.iter().all(|(r, _)| pml.is_complete(*r))
    }

    /// Send the origin data `m` itself (a direct put's second message); the window tracks
    /// the send (or `user` gets a request for it).
    ///
    /// # Safety
    /// The bytes `m` maps to stay valid and unmodified until the send completes (MPI: until
    /// the operation is completed by a synchronisation call or its request).
    pub unsafe fn send_data(
        &mut self,
        pml: &mut Pml,
        to: i32,
        m: crate::datatype::Msg,
        user: bool,
    ) -> Option<ReqId> {
        let dest = self.world[to as usize];
        // SAFETY: forwarded contract.
        let s = unsafe { pml.isend_msg(m, dest, self.ctx, self.rank, wire::DATA) };
        if user {
            return Some(self.link(pml, s));
        }
        if let Started::Pending(r) = s {
            self.sends.push((r, Vec::new()));
        }
        None
    }

    /// Drop what completed: sends and their buffers, finished reply receives, and complete
    /// the user requests linked to finished receives.
    fn reap(&mut self, pml: &mut Pml) {
        self.sends.retain(|(r, _)| {
            if pml.is_complete(*r) {
                pml.take(*r);
                false
            } else {
                true
            }
        });
        self.gets.retain(|r| {
            if pml.is_complete(*r) {
                pml.take(*r);
                false
            } else {
                true
            }
        });
        self.linked.retain(|&(inner, user)| {
            if pml.is_complete(inner) {
                let st = pml.take(inner).unwrap_or_default();
                pml.complete_request(user, st);
                false
            } else {
                true
            }
        });
    }

    /// Link a user request to the internal receive `inner`: it completes when `inner` does.
    pub fn link(&mut self, pml: &mut Pml, inner: Started) -> ReqId {
        match inner {
            Started::Done(st) => pml.request_for(Started::Done(st)),
            Started::Pending(r) => {
                let user = pml.pending_request();
                self.linked.push((r, user));
                user
            }
        }
    }

    /// An RMA call to `rank` (a member, not MPI_PROC_NULL) needs an access epoch that includes
    /// it: a fence epoch, lock_all, a lock at `rank`, or a start whose group has `rank`. The
    /// first call after a fence turns it into a fence epoch.
    pub fn check_access(&mut self, rank: i32) -> Result<()> {
        let why = match self.access {
            Epoch::Fence | Epoch::LockAll => return Ok(()),
            Epoch::Refence => {
                if self.exposure == Epoch::Refence {
                    self.access = Epoch::Fence;
                    self.exposure = Epoch::Fence;
                }
                return Ok(());
            }
            Epoch::Start if self.start_group.contains(&rank) => return Ok(()),
            Epoch::Lock if self.held[rank as usize] != 0 => return Ok(()),
            Epoch::Start => "the group of MPI_Win_start does not have it",
            Epoch::Lock => "it is not locked (MPI_Win_lock holds other targets)",
            Epoch::None | Epoch::Post => "no access epoch is open (fence, start, lock, lock_all)",
        };
        err(
            ErrorClass::RmaSync,
            format!("RMA call to rank {rank} outside an access epoch to it: {why}"),
        )
    }

    /// Comm rank of a world rank in this window, if a member.
    pub fn rank_of_world(&self, w: i32) -> Option<i32> {
        self.world
            .iter()
            .position(|&x| x as i32 == w)
            .map(|i| i as i32)
    }
}

/// Windows by handle slot, used by whichever thread may call MPI now (runtime.rs).
static WINS: crate::runtime::Local<RefCell<Vec<Option<Window>>>> =
    crate::runtime::Local::new(RefCell::new(Vec::new()));

/// Run `f` on window `id`; MPI_ERR_WIN if there is none.
pub fn with_win<R>(id: usize, f: impl FnOnce(&mut Window) -> Result<R>) -> Result<R> {
    WINS.with(|w| {
        let mut w = w.borrow_mut();
        match w.get_mut(id) {
            Some(Some(win)) => f(win),
            _ => err(ErrorClass::Win, "invalid window (freed, or not a window)"),
        }
    })?
}

/// Whether `id` names a live window (false on a thread that may not call MPI now).
pub fn exists(id: usize) -> bool {
    WINS.with(|w| matches!(w.borrow().get(id), Some(Some(_))))
        .unwrap_or(false)
}

fn insert(win: Window) -> Result<usize> {
    WINS.with(|w| {
        let mut w = w.borrow_mut();
        match w.iter().position(Option::is_none) {
            Some(i) => {
                w[i] = Some(win);
                i
            }
            None => {
                w.push(Some(win));
                w.len() - 1
            }
        }
    })
}

fn remove(id: usize) -> Result<Option<Window>> {
    WINS.with(|w| w.borrow_mut().get_mut(id).and_then(Option::take))
}

/// The pml's progress hook: apply what arrived for every window, reap finished sends.
pub fn progress(pml: &mut Pml) -> usize {
    WINS.with(|w| {
        // Inside a window call that holds the table (it never progresses while it does).
        let Ok(mut w) = w.try_borrow_mut() else {
            return 0;
        };
        let mut n = 0;
        for win in w.iter_mut().flatten() {
            n += target::progress(win, pml);
            win.reap(pml);
        }
        n
    })
    .unwrap_or(0)
}

/// Everything a new window needs but its memory: the communicator and the peers' figures.
struct Setup {
    comm: usize,
    peers: Vec<Peer>,
    words: Vec<Vec<u64>>,
}

/// Exchange `mine` (the same number of words at every rank) among the members of `comm`, on
/// its collective context. Called outside the runtime (`comm_agree::exchange_words`).
fn allgather(comm: usize, mine: &[u64]) -> Result<Vec<Vec<u64>>> {
    crate::comm_agree::exchange_words(comm, true, EXCH_TAG, mine)
}

/// Duplicate `parent` for a new window and exchange (size, disp_unit, extra...) with its
/// members.
fn setup(parent: usize, size: usize, disp_unit: usize, extra: &[u64]) -> Result<Setup> {
    if runtime::with(|rt| Ok(rt.comm(parent)?.is_inter()))? {
        return err(ErrorClass::Comm, "a window needs an intracommunicator");
    }
    let comm = crate::comm_ops::bare_dup(parent)?;
    let mut mine = vec![size as u64, disp_unit as u64];
    mine.extend_from_slice(extra);
    let words = match allgather(comm, &mine) {
        Ok(w) => w,
        Err(e) => {
            drop_comm(comm);
            return Err(e);
        }
    };
    let peers = words
        .iter()
        .map(|w| Peer {
            size: w[0] as usize,
            disp_unit: w[1] as usize,
        })
        .collect();
    Ok(Setup { comm, peers, words })
}

fn build(
    s: Setup,
    base: usize,
    flavor: i32,
    memory: Memory,
    info: crate::info::Info,
) -> Result<usize> {
    let (world, rank, ctx, rctx, errhandler, eligible) = runtime::with(|rt| {
        let c = rt.comm(s.comm)?;
        let n = c.size() as usize;
        let world = (0..n as i32)
            .map(|r| c.world_of(r))
            .collect::<Result<Vec<_>>>()?;
        let (rank, ctx, rctx, errhandler) = (c.rank, c.ctx, c.coll_ctx(), c.errhandler);
        Ok((
            world,
            rank,
            ctx,
            rctx,
            errhandler,
            direct::eligible(rt, s.comm),
        ))
    })?;
    let n = world.len();
    let me = s.peers[rank as usize];
    let rdma = if flavor != FLAVOR_DYNAMIC && !eligible {
        rdma::setup(s.comm, &world, rank as usize, base, me.size)?
    } else {
        None
    };
    let win = Window {
        comm: s.comm,
        ctx,
        rctx,
        rank,
        world,
        base,
        size: me.size,
        flavor,
        peers: s.peers,
        memory,
        shared_bases: Vec::new(),
        attached: Vec::new(),
        direct: None,
        rdma,
        name: String::new(),
        errhandler,
        attrs: Vec::new(),
        info,
        attr_vals: Box::new((me.size as isize, me.disp_unit as i32, flavor, MODEL_UNIFIED)),
        cur: None,
        lock: LockState::default(),
        fence_in: vec![0; n],
        post_in: vec![0; n],
        post_used: vec![0; n],
        complete_in: vec![0; n],
        complete_used: vec![0; n],
        next_reply: 0,
        fences: 0,
        sends: Vec::new(),
        gets: Vec::new(),
        linked: Vec::new(),
        start_group: Vec::new(),
        post_group: Vec::new(),
        held: vec![0; n],
        access: Epoch::None,
        exposure: Epoch::None,
        unacked: vec![0; n],
    };
    runtime::with(|rt| {
        rt.pml.ext = Some(progress);
        insert(win)
    })
}

/// Forget a window's communicator that will not be used (its creation failed).
fn drop_comm(comm: usize) {
    let _ = runtime::with(|rt| {
        rt.comms[comm] = None;
        Ok(())
    });
}

fn check_sizes(size: isize, disp_unit: isize) -> Result<(usize, usize)> {
    if size < 0 {
        return err(ErrorClass::Size, format!("window size {size} is negative"));
    }
    if disp_unit <= 0 {
        return err(
            ErrorClass::Disp,
            format!("disp_unit {disp_unit} must be positive"),
        );
    }
    Ok((size as usize, disp_unit as usize))
}

/// MPI_Win_create: a window over the caller's memory.
pub fn create(
    comm: usize,
    base: usize,
    size: isize,
    disp_unit: isize,
    info: crate::info::Info,
) -> Result<usize> {
    let (size, du) = check_sizes(size, disp_unit)?;
    if base == 0 && size > 0 {
        return err(ErrorClass::Base, "base is NULL but the size is not zero");
    }
    let s = setup(comm, size, du, &[std::process::id() as u64, base as u64])?;
    let (eligible, me) =
        runtime::with(|rt| Ok((direct::eligible(rt, s.comm), rt.comm(s.comm)?.rank as usize)))?;
    let d = if eligible {
        let pids = s.words.iter().map(|w| w[2] as i32).collect();
        let bases = s.words.iter().map(|w| w[3] as usize).collect();
        let sizes: Vec<usize> = s.peers.iter().map(|p| p.size).collect();
        direct::cma(s.comm, me, pids, bases, &sizes)?
    } else {
        None
    };
    let id = build(s, base, FLAVOR_CREATE, Memory::User, info)?;
    with_win(id, |w| {
        w.direct = d;
        Ok(())
    })?;
    Ok(id)
}

/// Parts of `sizes` laid out in rank order, each on a 64-byte boundary: (offsets, the control
/// region's offset, 128-aligned, and the segment's length with it).
fn direct_layout(sizes: &[usize]) -> (Vec<usize>, usize, usize) {
    let mut offs = Vec::with_capacity(sizes.len());
    let mut at = 0usize;
    for &sz in sizes {
        offs.push(at);
        at = (at + sz).next_multiple_of(64);
    }
    let ctl = at.next_multiple_of(direct::CTL_LINE);
    (offs, ctl, ctl + sizes.len() * direct::CTL_LINE)
}

/// MPI_Win_allocate with direct access: every member's part in one segment all map.
fn allocate_direct(
    comm: usize,
    size: usize,
    du: usize,
    info: crate::info::Info,
) -> Result<Option<(usize, usize)>> {
    let s = setup(comm, size, du, &[])?;
    let sizes: Vec<usize> = s.peers.iter().map(|p| p.size).collect();
    let (offs, ctl, len) = direct_layout(&sizes);
    let Some(seg) = direct::segment(s.comm, len, true)? else {
        drop_comm(s.comm);
        return Ok(None);
    };
    let bases: Vec<usize> = offs.iter().map(|o| seg.base as usize + o).collect();
    let ctl = seg.base as usize + ctl;
    let me = runtime::with(|rt| Ok(rt.comm(s.comm)?.rank as usize))?;
    let base = bases[me];
    let id = build(s, base, FLAVOR_ALLOCATE, Memory::Shared(seg), info)?;
    with_win(id, |w| {
        w.direct = Some(direct::Direct::mapped(bases, ctl));
        Ok(())
    })?;
    Ok(Some((id, base)))
}

/// MPI_Win_allocate: fresh anonymous pages (page-aligned, zero, touched only when used: a
/// large window costs nothing until written).
pub fn allocate(
    comm: usize,
    size: isize,
    disp_unit: isize,
    info: crate::info::Info,
) -> Result<(usize, usize)> {
    let (size, du) = check_sizes(size, disp_unit)?;
    if runtime::with(|rt| Ok(direct::eligible(rt, comm)))? {
        if let Some(r) = allocate_direct(comm, size, du, info.clone())? {
            return Ok(r);
        }
    }
    let len = size.max(1);
    // SAFETY: a new private anonymous mapping at an address the kernel picks.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return err(
            ErrorClass::NoMem,
            format!(
                "cannot allocate {size} bytes for the window: {}",
                std::io::Error::last_os_error()
            ),
        );
    }
    let p = p.cast::<u8>();
    let s = match setup(comm, size, du, &[]) {
        Ok(s) => s,
        Err(e) => {
            // SAFETY: mapped above, not handed out.
            unsafe { libc::munmap(p.cast(), len) };
            return Err(e);
        }
    };
    let id = build(s, p as usize, FLAVOR_ALLOCATE, Memory::Heap(p, len), info)?;
    Ok((id, p as usize))
}

/// MPI_Win_allocate_shared: one segment all members map; each rank's part follows the
/// previous rank's (contiguous, as the standard's default).
pub fn allocate_shared(
    comm: usize,
    size: isize,
    disp_unit: isize,
    info: crate::info::Info,
) -> Result<(usize, usize)> {
    let (size, du) = check_sizes(size, disp_unit)?;
    runtime::with(|rt| {
        let c = rt.comm(comm)?;
        let locals = &rt.objs.local_ranks;
        if c.group.iter().any(|w| !locals.contains(w)) {
            return err(
                ErrorClass::RmaShared,
                "MPI_Win_allocate_shared needs a communicator whose ranks share a node",
            );
        }
        Ok(())
    })?;
    // Every rank learns every size first, so the first rank can size the segment.
    let pid = std::process::id() as u64;
    let s = setup(comm, size, du, &[pid])?;
    let total: usize = s.peers.iter().map(|p| p.size).sum();
    // Direct access: the control region follows the parts.
    let (direct, first, me) = runtime::with(|rt| {
        let rank = rt.comm(s.comm)?.rank;
        Ok((direct::eligible(rt, s.comm), rank == 0, rank as usize))
    })?;
    let ctl_off = total.next_multiple_of(direct::CTL_LINE);
    let seg_len = if direct {
        ctl_off + s.peers.len() * direct::CTL_LINE
    } else {
        total
    };
    let created = if first {
        Some(shm::Segment::create(seg_len))
    } else {
        None
    };
    let fd = match &created {
        Some(Ok(seg)) => std::os::fd::AsRawFd::as_raw_fd(&seg.fd) as u64,
        _ => u64::MAX,
    };
    let fds = allgather(s.comm, &[fd])?;
    let (pid0, fd0) = (s.words[0][2] as i32, fds[0][0]);
    if fd0 == u64::MAX {
        let why = match created {
            Some(Err(e)) => e.to_string(),
            _ => "the first rank could not create it".into(),
        };
        return err(
            ErrorClass::RmaShared,
            format!("shared window segment of {total} bytes: {why}"),
        );
    }
    let seg = match created {
        Some(Ok(seg)) => seg,
        _ => shm::Segment::attach(pid0, fd0 as i32, seg_len).map_err(|e| {
            crate::error::Error::new(
                ErrorClass::RmaShared,
                format!("cannot map the shared window segment: {e}"),
            )
        })?,
    };
    // Everyone mapped it before the creator may go on (and, later, free it).
    let _ = allgather(s.comm, &[0])?;
    let mut bases = Vec::with_capacity(s.peers.len());
    let mut off = 0;
    for p in &s.peers {
        bases.push(seg.base as usize + off);
        off += p.size;
    }
    let base = bases[me];
    let ctl = seg.base as usize + ctl_off;
    let id = build(s, base, FLAVOR_SHARED, Memory::Shared(seg), info)?;
    with_win(id, |w| {
        if direct {
            w.direct = Some(direct::Direct::mapped(bases.clone(), ctl));
        }
        w.shared_bases = bases;
        Ok(())
    })?;
    Ok((id, base))
}

/// MPI_Win_create_dynamic: no memory until attached; displacements are addresses.
pub fn create_dynamic(comm: usize, info: crate::info::Info) -> Result<usize> {
    let s = setup(comm, 0, 1, &[])?;
    build(s, 0, FLAVOR_DYNAMIC, Memory::User, info)
}

/// MPI_Win_free's check, before anything is done: no lock, lock_all, start or post epoch may
/// still be open (a fence epoch is completed by the free's own fence).
pub fn check_free(id: usize) -> Result<()> {
    with_win(id, |w| match (w.access, w.exposure) {
        (Epoch::Start | Epoch::Lock | Epoch::LockAll, _) => err(
            ErrorClass::RmaSync,
            format!("MPI_Win_free in an access epoch ({:?})", w.access),
        ),
        (_, Epoch::Post) => err(
            ErrorClass::RmaSync,
            "MPI_Win_free in an exposure epoch (MPI_Win_post without MPI_Win_wait)",
        ),
        _ => Ok(()),
    })
}

/// MPI_Win_free, after the attributes were deleted: every rank's operations on this window
/// are applied (a fence's marker exchange), then the memory and the communicator go.
pub fn free(id: usize) -> Result<()> {
    sync::fence_all(id)?;
    let w = runtime::with(|rt| {
        let mut w = remove(id)?.expect("fence checked the window");
        if let Some(r) = w.rdma.take() {
            r.release(rt);
        }
        rt.comms[w.comm] = None;
        if WINS.with(|w| w.borrow().iter().all(Option::is_none))? {
            // No window left: progress no longer calls in.
            rt.pml.ext = None;
        }
        Ok(w)
    })?;
    if let Memory::Heap(p, len) = w.memory {
        // SAFETY: mapped by `allocate` with this length; the window is gone.
        unsafe { libc::munmap(p.cast(), len) };
    }
    Ok(())
}
