//! Point-to-point messaging layer: matching on (context, source, tag) in MPI's non-overtaking
//! order, an unexpected-message queue, and the protocols over the btls:
//! eager (MATCH + CONT fragments) up to the eager limit, rendezvous above it (RTS, then a
//! single-copy get by the receiver and FIN; or CTS and streamed DATA when no single copy).

pub mod driven;
mod dynamic;
mod group;
mod onesided;
mod pair;
mod place;
mod posted;

pub(crate) use posted::KeyHasher;
mod probe;
pub mod request;
mod rndv;
pub mod wire;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::btl::Btl;
use crate::datatype::segment::{self, Msg};
use crate::datatype::Layout;
use crate::error::ErrorClass;
use request::{Coop, Kind, Request, Requests, Rndv};
pub use request::{ReqId, Status, SEND_DONE};
use wire::{MatchHdr, RtsHdr};

pub const ANY_SOURCE: i32 = -1;
pub const ANY_TAG: i32 = -2;

pub use crate::btl::Endpoint;

/// An operation either finished at once (no request needed) or is pending.
#[derive(Debug)]
pub enum Started {
    Done(Status),
    Pending(ReqId),
}

struct Unexpected {
    id: u64,
    /// World rank it came from.
    from: usize,
    hdr: MatchHdr,
    body: UnexpectedBody,
}

enum UnexpectedBody {
    Eager { data: Vec<u8>, complete: bool },
    Rts { addr: u64, sreq: u64, key: u64 },
}

enum StreamDest {
    Req(ReqId),
    Unexpected(u64),
    /// The direct receive (MPI_Recv's latency path), in `Streaming` state.
    Direct,
}

/// The eager message whose CONT fragments a peer is sending (a peer sends one message's
/// fragments back to back, so one slot per peer is enough).
struct Stream {
    dest: StreamDest,
    hdr: MatchHdr,
    got: usize,
}

enum SendWork {
    Eager {
        req: Option<ReqId>,
        hdr: MatchHdr,
        msg: Msg,
        off: usize,
        started: bool,
    },
    Rts {
        hdr: RtsHdr,
    },
    Ctrl {
        tag: u8,
        words: [u8; wire::CTRL_MAX],
        len: usize,
    },
    Data {
        req: ReqId,
        rreq: u64,
        msg: Msg,
        off: usize,
    },
}

pub struct Pml {
    btls: Vec<Box<dyn Btl>>,
    /// Per btl: it reads large fragments into place (`Btl::enable_placement`, `place.rs`).
    placing: Vec<bool>,
    /// Per btl: it may hold small frames back to batch them (`Btl::coalesces`).
    bursty: Vec<bool>,
    /// A send went through `Btl::try_send_batched` since the last `end_bursts`.
    batched: bool,
    st: State,
    /// This rank's "waiting in MPI" word in a transport peers read (sm), if any.
    waiting: Option<*const AtomicU32>,
    /// Operations of layers above (collective schedules) in flight, advanced by every
    /// `progress` call (`driven.rs`).
    driven: driven::DrivenOps,
    /// Their sequence numbers (collective tags).
    pub seqs: driven::Sequences,
    /// MPI_Isendrecv(_replace) requests in flight (`pair.rs`).
    pairs: Vec<pair::Pair>,
    /// Requests made of many parts (partitioned runs).
    groups: Vec<group::Group>,
    /// Upper layers' deferred work (`Pml::watch`).
    watchers: Vec<group::Watcher>,
    /// A layer above that must run at every progress turn (one-sided targets apply incoming
    /// operations there: `osc::progress`). A plain function, so the pml imports nothing of it.
    pub ext: Option<fn(&mut Pml) -> usize>,
}

/// MPI_Recv waiting without a request (the latency path). It starts only while nothing is
/// posted and nothing has arrived unmatched, so it is first in matching order: an arriving
/// message is checked against it before the posted queue.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DirectState {
    Idle,
    Waiting,
    /// Delivered: `status` says how.
    Done,
    /// A matching message arrived that is not one whole eager fragment; it went to the
    /// unexpected queue, where the general receive path finds it.
    Blocked,
    /// A matching eager message of several fragments is being copied in as they arrive
    /// (pipelined: the sender writes the next fragment while we copy this one).
    Streaming,
}

struct Direct {
    state: DirectState,
    buf: *mut u8,
    cap: usize,
    ctx: u32,
    src: i32,
    tag: i32,
    status: Status,
}

impl Direct {
    const IDLE: Direct = Direct {
        state: DirectState::Idle,
        buf: std::ptr::null_mut(),
        cap: 0,
        ctx: 0,
        src: 0,
        tag: 0,
        status: Status {
            source: 0,
            tag: 0,
            error: 0,
            count: 0,
            cancelled: false,
        },
    };

    /// Whether it is waiting for `h`'s message.
    #[inline(always)]
    fn wants(&self, h: &MatchHdr) -> bool {
        self.state == DirectState::Waiting && matches(self.ctx, self.src, self.tag, h)
    }

    /// Copy the bytes at `offset` of the matched message into the buffer (what fits).
    #[inline(always)]
    fn copy_in(&mut self, offset: usize, data: &[u8]) {
        let n = data.len().min(self.cap.saturating_sub(offset));
        if n > 0 {
            // SAFETY: recv_direct_begin's contract: `buf` has `cap` writable bytes nothing
            // else accesses while the receive waits or streams; offset + n <= cap and
            // n <= data.len().
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.buf.add(offset), n) };
        }
    }

    /// The whole message `h` is in: done.
    #[inline(always)]
    fn finish(&mut self, h: &MatchHdr) {
        self.status = recv_status(h, h.total as usize, self.cap, None);
        self.state = DirectState::Done;
    }
}

struct State {
    direct: Direct,
    endpoints: Vec<Endpoint>,
    /// By btl, then btl peer index: the world rank.
    peer_world: Vec<Vec<usize>>,
    reqs: Requests,
    posted: posted::Posted,
    unexpected: VecDeque<Unexpected>,
    next_unexpected: u64,
    streams: Vec<Option<Stream>>,
    /// By world rank: the eager message being read into its receive (`place.rs`).
    match_placing: Vec<Option<place::MatchPlacing>>,
    /// By world rank: where such a message goes first when its receive cannot take it as
    /// one block (non-contiguous, or too small: it is then cut as usual).
    place_scratch: Vec<Vec<u8>>,
    sendq: Vec<VecDeque<SendWork>>,
    /// By world rank: how eager messages go to that peer.
    flow: Vec<Flow>,
    queued: usize,
    gets: Vec<ReqId>,
    /// `run_gets`'s whole reads from one peer, made in one call (kept for its capacity: a
    /// ping-pong's one read a turn then allocates nothing).
    batch: Vec<rndv::Batched>,
    /// PUTs receivers asked of this rank's rendezvous sends (cooperative rendezvous).
    puts: Vec<rndv::PutWork>,
    /// Claim tickets of split receives that are over: (btl, ticket), closed after delivery.
    coop_closed: Vec<(usize, u64)>,
    /// Smallest rendezvous split with a waiting sender (usize::MAX: never).
    coop_min: usize,
    /// In a window of reads, smaller messages are read whole (`btl_sm_coop_window_min`).
    coop_window_min: usize,
    /// The receive buffer of the last rendezvous read.
    last_get_buf: usize,
    stats: rndv::RndvStats,
    /// The job's eager limit: a collective's sends are eager up to it at least (`isend_coll`).
    /// sm's smaller limit toward far peers wins bandwidth for a stream of large sends; a
    /// collective's tree instead waits at each level for a rendezvous handshake (measured on
    /// 16 cores, osu_bcast 8 KiB at 8 and 16 ranks: 7.9-13.4 us by rendezvous, 4.8-7.0 eager).
    eager_limit: usize,
    verbose: bool,
    /// Where a fragment of a non-contiguous message is packed on its way out.
    scratch: Vec<u8>,
    /// Messages matched by MPI_Mprobe, waiting for MPI_Mrecv (slot = message handle).
    matched: Vec<Option<Unexpected>>,
    /// Rendezvous sends finished by a FIN: (btl, peer, addr, len) to unexpose once the btl
    /// that delivered the FIN has returned from its progress.
    unexpose: Vec<(usize, usize, usize, usize)>,
    /// Turns of the async progress thread (`Pml::set_delegating`): a waiting sender is asked
    /// to write a whole rendezvous rather than half of it.
    delegating: bool,
    /// A progress thread runs (`Pml::set_lazy_gets`): a receive that matches a waiting RTS
    /// leaves a large read to progress instead of copying inside MPI_Irecv.
    lazy_gets: bool,
    /// The turn at the end of an application call (`Pml::set_defer_gets`): large reads wait
    /// for the progress thread's turn, which may leave them to a waiting sender.
    defer_gets: bool,
    /// Receives in `Coop::Delegated`, checked each turn until the sender claims or we do.
    delegated: Vec<ReqId>,
    /// Posted receives of `BIG_RECV` bytes or more (a large rendezvous may come for them).
    big_posted: usize,
    /// By world rank: our rendezvous sends to that peer not yet finished (RTS out, no FIN or
    /// last DATA yet). A peer reading from us is busy: we do not ask it to write half of one
    /// of our receives (osu_bibw: splitting both ways only adds round trips).
    rndv_out: Vec<u32>,
}

/// A rendezvous this large is worth waking the async progress thread for (10-20 µs of its
/// core on a VM; the copy of 256 KiB takes 15-60 µs): a posted receive of this size counts as
/// in flight (`Pml::in_flight`), and the end of an application call leaves its read to the
/// thread (`run_gets`).
const BIG_RECV: usize = 256 << 10;

fn matches(ctx: u32, src: i32, tag: i32, h: &MatchHdr) -> bool {
    ctx == h.ctx && (src == ANY_SOURCE || src == h.src) && (tag == ANY_TAG || tag == h.tag)
}

/// Send a whole eager message (`data` is all of it) as one fragment, behind the short match
/// header where it can be written; false when the transport is full.
#[inline(always)]
fn send_whole(btl: &mut dyn Btl, peer: usize, hdr: &MatchHdr, data: &[u8]) -> bool {
    match hdr.encode_short() {
        Some(short) => btl.try_send(peer, wire::MATCH_SHORT, &short, data),
        None => btl.try_send(peer, wire::MATCH, &hdr.encode(), data),
    }
}

/// `send_whole` through `Btl::try_send_batched`.
fn send_whole_batched(btl: &mut dyn Btl, peer: usize, hdr: &MatchHdr, data: &[u8]) -> bool {
    match hdr.encode_short() {
        Some(short) => btl.try_send_batched(peer, wire::MATCH_SHORT, &short, data),
        None => btl.try_send_batched(peer, wire::MATCH, &hdr.encode(), data),
    }
}

/// How eager messages go to one peer. A send that answers the peer (a MATCH or RTS from it
/// arrived after our last send to it: a ping-pong) takes the latency choices, one that follows
/// our own sends (a stream, e.g. a window of MPI_Isend) the bandwidth ones:
/// - a reply of `(split_lo, split_hi]` bytes goes as two halves, so the receiver copies out the
///   first while the second is written (4 KiB one way 0.87 against 1.03 us whole); a stream
///   goes whole: halves only add fragments there (osu_bw 4 KiB 9.6-9.7 against 7.3-8.4 GB/s
///   split, osu_bibw 9.5-12.0 against 8.1-8.4, probe 123-160 ns);
/// - the eager limits differ where the transport says so (`Btl::eager_limit_stream`: sm's
///   mid-distance peers).
#[derive(Clone, Copy, Default)]
struct Flow {
    /// Largest eager message of a reply and of a stream (the transport's choice for that
    /// peer, e.g. sm's per-pair limits from the line probe, else the job's eager limit).
    eager: usize,
    eager_stream: usize,
    /// The largest message `send_now` hands straight to the transport: the eager limit, or
    /// less where one fragment carries less.
    one_frag: usize,
    one_frag_stream: usize,
    split_lo: usize,
    split_hi: usize,
    /// A MATCH or RTS from that peer arrived after our last send to it.
    replied: bool,
}

impl Flow {
    fn new(btl: &dyn Btl, peer: usize, eager_limit: usize) -> Flow {
        let eager = btl.eager_limit(peer).unwrap_or(eager_limit);
        let eager_stream = btl.eager_limit_stream(peer).unwrap_or(eager);
        let frag = btl.max_eager_frag().saturating_sub(wire::MATCH_LEN);
        let (split_lo, split_hi) = split_lens(btl);
        Flow {
            eager,
            eager_stream,
            one_frag: eager.min(frag),
            one_frag_stream: eager_stream.min(frag),
            split_lo,
            split_hi,
            replied: false,
        }
    }

    #[inline(always)]
    fn eager(&self) -> usize {
        if self.replied {
            self.eager
        } else {
            self.eager_stream
        }
    }

    #[inline(always)]
    fn one_frag(&self) -> usize {
        if self.replied {
            self.one_frag
        } else {
            self.one_frag_stream
        }
    }

    /// Whether an eager message of `len` bytes goes as two halves.
    #[inline(always)]
    fn splits(&self, len: usize) -> bool {
        self.replied && self.split_lo < len && len <= self.split_hi
    }
}

/// `Btl::eager_split`'s fragment sizes as message lengths, for a message sent whole behind the
/// short match header.
fn split_lens(btl: &dyn Btl) -> (usize, usize) {
    btl.eager_split().map_or((0, 0), |(lo, hi)| {
        (
            lo.saturating_sub(wire::SHORT_LEN),
            hi.saturating_sub(wire::SHORT_LEN),
        )
    })
}

impl Pml {
    /// `endpoints[world_rank]` names the btl and its peer index; `peer_world[btl][peer]` the reverse.
    /// Rendezvous messages of `coop_min` bytes or more are split with a waiting sender, in a
    /// window of reads only from `coop_window_min`.
    pub fn new(
        btls: Vec<Box<dyn Btl>>,
        endpoints: Vec<Endpoint>,
        eager_limit: usize,
        coop_min: usize,
        coop_window_min: usize,
    ) -> Pml {
        let mut peer_world: Vec<Vec<usize>> = btls.iter().map(|_| Vec::new()).collect();
        for (world, ep) in endpoints.iter().enumerate() {
            let v = &mut peer_world[ep.btl];
            if v.len() <= ep.peer {
                v.resize(ep.peer + 1, usize::MAX);
            }
            v[ep.peer] = world;
        }
        let n = endpoints.len();
        let flow = endpoints
            .iter()
            .map(|ep| Flow::new(&*btls[ep.btl], ep.peer, eager_limit))
            .collect();
        let waiting = btls.iter().find_map(|b| b.waiting_word());
        let mut btls = btls;
        let placing = btls
            .iter_mut()
            .map(|b| place::enable_placement(&mut **b))
            .collect();
        let bursty = btls.iter().map(|b| b.coalesces()).collect();
        Pml {
            btls,
            bursty,
            batched: false,
            placing,
            waiting,
            st: State {
                direct: Direct::IDLE,
                endpoints,
                peer_world,
                reqs: Requests::default(),
                posted: Default::default(),
                unexpected: VecDeque::new(),
                next_unexpected: 0,
                streams: (0..n).map(|_| None).collect(),
                match_placing: vec![None; n],
                place_scratch: vec![Vec::new(); n],
                sendq: (0..n).map(|_| VecDeque::new()).collect(),
                flow,
                queued: 0,
                gets: Vec::new(),
                batch: Vec::new(),
                puts: Vec::new(),
                coop_closed: Vec::new(),
                coop_min: if coop_min == 0 { usize::MAX } else { coop_min },
                coop_window_min,
                last_get_buf: 0,
                stats: Default::default(),
                eager_limit,
                verbose: false,
                scratch: Vec::new(),
                matched: Vec::new(),
                unexpose: Vec::new(),
                delegating: false,
                lazy_gets: false,
                defer_gets: false,
                delegated: Vec::new(),
                big_posted: 0,
                rndv_out: vec![0; n],
            },
            driven: driven::DrivenOps::default(),
            seqs: driven::Sequences::default(),
            pairs: Vec::new(),
            groups: Vec::new(),
            watchers: Vec::new(),
            ext: None,
        }
    }

    /// Whether every transport has sent everything it accepted (at finalize).
    pub fn btls_flushed(&self) -> bool {
        self.btls.iter().all(|b| b.flushed())
    }

    pub fn btl_names(&self) -> Vec<&'static str> {
        self.btls.iter().map(|b| b.name()).collect()
    }

    /// The name of the transport that reaches world rank `world` (osc's direct path asks).
    pub fn btl_name_of(&self, world: usize) -> Option<&'static str> {
        let ep = self.st.endpoints.get(world)?;
        Some(self.btls[ep.btl].name())
    }

    /// Say to the node's ranks that this one is (or is no longer) spinning in a blocking wait,
    /// where it serves a PUT at once (see pml/rndv.rs).
    #[inline]
    pub fn set_waiting(&self, on: bool) {
        if let Some(w) = self.waiting {
            // SAFETY: the word lies in the mapping of a transport this Pml owns (Btl::waiting_word).
            unsafe { &*w }.store(on as u32, Ordering::Relaxed);
        }
    }

    /// How rendezvous data has moved so far.
    pub fn rndv_stats(&self) -> rndv::RndvStats {
        self.st.stats
    }

    /// Single-copy reads served by memcpy from a peer's shared memory source, all transports.
    pub fn shared_reads(&self) -> u64 {
        self.btls.iter().map(|b| b.shared_reads()).sum()
    }

    /// Report why single copy fell back to streaming (once per process) when verbose.
    pub fn set_verbose(&mut self, on: bool) {
        self.st.verbose = on;
    }

    /// Start a send of `len` bytes at `buf` to world rank `dest`.
    ///
    /// # Safety
    /// `buf` must stay valid and unmodified until the send completes (`Done`, or the request
    /// reported complete).
    pub unsafe fn isend(
        &mut self,
        buf: *const u8,
        len: usize,
        dest: usize,
        ctx: u32,
        src: i32,
        tag: i32,
    ) -> Started {
        // SAFETY: forwarded contract.
        unsafe { self.isend_msg_sync(Msg::bytes(buf, len), dest, ctx, src, tag, false) }
    }

    /// Start a send of message `m` (contiguous or through a datatype layout) to world rank `dest`.
    ///
    /// # Safety
    /// Every byte `m` maps to must stay valid and unmodified until the send completes.
    #[inline]
    pub unsafe fn isend_msg(
        &mut self,
        m: Msg,
        dest: usize,
        ctx: u32,
        src: i32,
        tag: i32,
    ) -> Started {
        let limit = self.st.flow[dest].eager();
        // SAFETY: forwarded contract.
        unsafe { self.isend_up_to(m, dest, ctx, src, tag, limit) }
    }

    /// `isend_msg` for a collective's schedule: eager up to the peer's limit or the job's,
    /// whichever is larger.
    ///
    /// # Safety
    /// As `isend_msg`.
    #[inline]
    pub unsafe fn isend_coll(
        &mut self,
        m: Msg,
        dest: usize,
        ctx: u32,
        src: i32,
        tag: i32,
    ) -> Started {
        let limit = self.st.flow[dest].eager().max(self.st.eager_limit);
        // SAFETY: forwarded contract.
        unsafe { self.isend_up_to(m, dest, ctx, src, tag, limit) }
    }

    /// The fast path when it applies, else a send eager up to `limit` bytes.
    ///
    /// # Safety
    /// As `isend_msg`.
    #[inline(always)]
    unsafe fn isend_up_to(
        &mut self,
        m: Msg,
        dest: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        limit: usize,
    ) -> Started {
        // SAFETY: forwarded contract.
        if m.layout.is_none() && unsafe { self.send_now(m.ptr, m.len, dest, ctx, src, tag, false) }
        {
            return Started::Done(Status::default());
        }
        // SAFETY: forwarded contract.
        unsafe { self.isend_general(m, dest, ctx, src, tag, Some(limit)) }
    }

    /// The small-message fast path: `len` contiguous bytes that fit one eager fragment go
    /// straight to the transport when nothing is queued for `dest`. False if they did not (the
    /// general path then takes over, in order). `batch`: MPI_Isend's, which the transport may
    /// hold to write with the next ones (`Btl::try_send_batched`).
    ///
    /// # Safety
    /// `buf` holds `len` readable bytes (or `len` is 0); the transport copies them before
    /// returning.
    #[inline(always)]
    pub unsafe fn send_now(
        &mut self,
        buf: *const u8,
        len: usize,
        dest: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        batch: bool,
    ) -> bool {
        let st = &mut self.st;
        let flow = &mut st.flow[dest];
        if len > flow.one_frag() || flow.splits(len) || !st.sendq[dest].is_empty() {
            return false;
        }
        flow.replied = false;
        let ep = st.endpoints[dest];
        let hdr = MatchHdr {
            ctx,
            src,
            tag,
            total: len as u64,
        };
        let data = if len == 0 {
            &[][..]
        } else {
            // SAFETY: the caller's contract: `len` readable bytes at `buf`.
            unsafe { std::slice::from_raw_parts(buf, len) }
        };
        if batch && self.bursty[ep.btl] {
            self.batched = true;
            return send_whole_batched(&mut *self.btls[ep.btl], ep.peer, &hdr, data);
        }
        send_whole(&mut *self.btls[ep.btl], ep.peer, &hdr, data)
    }

    /// Start a send of `m`; with `sync`, a synchronous send: always rendezvous, so it completes
    /// only once the receiver has matched it (FIN after its single copy, or the streamed data
    /// after its CTS).
    ///
    /// # Safety
    /// As `isend_msg`.
    pub unsafe fn isend_msg_sync(
        &mut self,
        m: Msg,
        dest: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        sync: bool,
    ) -> Started {
        let eager = (!sync).then(|| self.st.flow[dest].eager());
        // SAFETY: forwarded contract.
        unsafe { self.isend_general(m, dest, ctx, src, tag, eager) }
    }

    /// A send eager up to `eager` bytes (None: always rendezvous, a synchronous send).
    ///
    /// # Safety
    /// As `isend_msg`.
    unsafe fn isend_general(
        &mut self,
        m: Msg,
        dest: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        eager: Option<usize>,
    ) -> Started {
        let (buf, len) = (m.ptr.cast_const(), m.len);
        let st = &mut self.st;
        let ep = st.endpoints[dest];
        let hdr = MatchHdr {
            ctx,
            src,
            tag,
            total: len as u64,
        };
        if eager.is_some_and(|e| len <= e) {
            let btl = &mut self.btls[ep.btl];
            if st.sendq[dest].is_empty()
                && wire::MATCH_LEN + len <= btl.max_eager_frag()
                && !st.flow[dest].splits(len)
            {
                // SAFETY: the caller's contract on `m`; the btl copies it before returning.
                if send_whole(&mut **btl, ep.peer, &hdr, unsafe {
                    m.slice(0, len, &mut st.scratch)
                }) {
                    st.flow[dest].replied = false;
                    return Started::Done(Status::default());
                }
            }
            let req = st
                .reqs
                .insert_with(|| Request::send(buf, len).with_layout(m.layout.clone()));
            st.enqueue(
                dest,
                SendWork::Eager {
                    req: Some(req),
                    hdr,
                    msg: m,
                    off: 0,
                    started: false,
                },
            );
            st.push_queue(&mut self.btls, dest);
            st.flow[dest].replied = false;
            Started::Pending(req)
        } else {
            // A non-contiguous buffer cannot be read with a single copy: address 0 asks the
            // receiver to have it streamed (CTS).
            // The transport may need the buffer registered first (ib); if it cannot, stream.
            let (addr, key) = if m.is_contiguous() && !buf.is_null() {
                match self.btls[ep.btl].expose(ep.peer, buf as usize, len) {
                    Some(key) => (buf as u64, key),
                    None => (0, 0),
                }
            } else {
                (0, 0)
            };
            let req = st
                .reqs
                .insert_with(|| Request::send(buf, len).with_layout(m.layout));
            let hdr = RtsHdr {
                m: hdr,
                addr,
                sreq: req as u64,
                key,
            };
            st.rndv_out[dest] += 1;
            st.enqueue(dest, SendWork::Rts { hdr });
            st.push_queue(&mut self.btls, dest);
            st.flow[dest].replied = false;
            Started::Pending(req)
        }
    }

    /// MPI_Recv's latency path, step 1: wait for the message without a request if nothing is
    /// posted or unmatched now; false otherwise (the general path then receives).
    ///
    /// # Safety
    /// `buf` must stay valid for writes of `cap` bytes, and not be otherwise accessed, until
    /// `recv_direct_end`.
    #[inline]
    pub unsafe fn recv_direct_begin(
        &mut self,
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        src: i32,
        tag: i32,
    ) -> bool {
        let st = &mut self.st;
        if !st.unexpected.is_empty() || !st.posted.is_empty() {
            return false;
        }
        st.direct = Direct {
            state: DirectState::Waiting,
            buf,
            cap,
            ctx,
            src,
            tag,
            ..Direct::IDLE
        };
        true
    }

    /// Step 2: whether it is still waiting (progress until it is not).
    #[inline(always)]
    pub fn recv_direct_waiting(&self) -> bool {
        matches!(
            self.st.direct.state,
            DirectState::Waiting | DirectState::Streaming
        )
    }

    /// Gives the latency path up if nothing has matched it yet (true: nothing was consumed, the
    /// general path may receive instead); false once a message is being delivered into it.
    #[inline]
    pub fn recv_direct_abandon(&mut self) -> bool {
        let d = &mut self.st.direct;
        let idle = d.state == DirectState::Waiting;
        if idle {
            d.state = DirectState::Idle;
        }
        idle
    }

    /// Step 3: the status if the message was delivered; None if it needs the general path
    /// (it is then first among the unexpected messages that match).
    #[inline]
    pub fn recv_direct_end(&mut self) -> Option<Status> {
        let d = &mut self.st.direct;
        let done = d.state == DirectState::Done;
        d.state = DirectState::Idle;
        done.then_some(d.status)
    }

    /// Start a receive into `cap` bytes at `buf` from communicator rank `src` (or ANY_SOURCE).
    ///
    /// # Safety
    /// `buf` must stay valid for writes of `cap` bytes, and not be otherwise accessed, until
    /// the receive completes.
    pub unsafe fn irecv(
        &mut self,
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        src: i32,
        tag: i32,
    ) -> Started {
        // SAFETY: forwarded contract.
        unsafe { self.irecv_msg(Msg::bytes(buf, cap), ctx, src, tag) }
    }

    /// Start a receive into message `m` (contiguous or through a datatype layout).
    ///
    /// # Safety
    /// Every byte `m` maps to must stay writable, and not be otherwise accessed, until the
    /// receive completes.
    /// Post a receive of `cap` contiguous bytes at `buf` when no message waits unexpected (the
    /// message-rate path, a window of MPI_Irecv): its request, or None (`irecv_msg` then).
    /// Scalars in, an id out: a `Msg` or `Started` passed through memory stalled on store
    /// forwarding.
    ///
    /// # Safety
    /// As `irecv`.
    #[inline]
    pub unsafe fn post_recv(
        &mut self,
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        src: i32,
        tag: i32,
    ) -> Option<ReqId> {
        let st = &mut self.st;
        if !st.unexpected.is_empty() {
            return None;
        }
        Some(st.post(buf, cap, ctx, src, tag, None))
    }

    pub unsafe fn irecv_msg(&mut self, m: Msg, ctx: u32, src: i32, tag: i32) -> Started {
        let (buf, cap, layout) = (m.ptr, m.len, m.layout);
        let st = &mut self.st;
        let found = if st.unexpected.is_empty() {
            None
        } else {
            st.unexpected
                .iter()
                .position(|u| matches(ctx, src, tag, &u.hdr))
        };
        let Some(i) = found else {
            return Started::Pending(st.post(buf, cap, ctx, src, tag, layout));
        };
        let u = st.unexpected.remove(i).expect("position found it");
        // SAFETY: forwarded contract.
        unsafe { self.deliver(u, buf, cap, layout, ctx, src, tag) }
    }

    /// Receive an arrived (unexpected or mprobe-matched) message into `buf`.
    ///
    /// # Safety
    /// As `irecv`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn deliver(
        &mut self,
        u: Unexpected,
        buf: *mut u8,
        cap: usize,
        layout: Option<Arc<Layout>>,
        ctx: u32,
        src: i32,
        tag: i32,
    ) -> Started {
        let st = &mut self.st;
        let total = u.hdr.total as usize;
        match u.body {
            UnexpectedBody::Eager {
                data,
                complete: true,
            } => {
                let n = total.min(cap);
                // SAFETY: caller's contract: `m` maps `cap` writable bytes; n <= cap.
                unsafe { segment::write_at(buf, layout.as_deref(), 0, &data[..n]) };
                Started::Done(recv_status(&u.hdr, total, cap, layout.as_deref()))
            }
            UnexpectedBody::Eager {
                data,
                complete: false,
            } => {
                let req = st.reqs.insert_with(|| {
                    Request::recv(buf, cap, ctx, src, tag, None).with_layout(layout)
                });
                st.copy_into(req, 0, &data);
                if let Some(s) = st.streams[u.from].as_mut() {
                    s.dest = StreamDest::Req(req);
                }
                Started::Pending(req)
            }
            UnexpectedBody::Rts { addr, sreq, key } => {
                let rndv = Rndv {
                    peer: u.from,
                    addr,
                    key,
                    sreq,
                    total,
                    got: 0,
                    hdr: u.hdr,
                    coop: Coop::Off,
                };
                let req = st.reqs.insert_with(|| {
                    Request::recv(buf, cap, ctx, src, tag, Some(rndv)).with_layout(layout)
                });
                st.gets.push(req);
                // With a progress thread a large read is its (or a wait's): this call returns.
                st.defer_gets = st.lazy_gets;
                st.run_gets(&mut self.btls);
                st.defer_gets = false;
                Started::Pending(req)
            }
        }
    }

    /// Poll every transport once and push queued fragments; returns how many fragments arrived.
    #[inline]
    pub fn progress(&mut self) -> usize {
        let Pml {
            btls, st, placing, ..
        } = self;
        let mut n = 0;
        for (bi, btl) in btls.iter_mut().enumerate() {
            n += if placing[bi] {
                btl.progress_into(&mut place::Placer { st, btl: bi })
            } else {
                btl.progress(&mut |peer, tag, frag| st.on_frag(bi, peer, tag, frag))
            };
        }
        if !st.unexpose.is_empty() {
            for (bi, peer, addr, len) in st.unexpose.drain(..) {
                btls[bi].unexpose(peer, addr, len);
            }
        }
        for (bi, ticket) in st.coop_closed.drain(..) {
            btls[bi].coop_close(ticket);
        }
        if !st.puts.is_empty() {
            st.run_puts(btls);
        }
        if !st.delegated.is_empty() {
            st.run_delegated(btls);
        }
        if !st.gets.is_empty() {
            st.run_gets(btls);
        }
        if st.queued > 0 {
            for dest in 0..st.sendq.len() {
                if !st.sendq[dest].is_empty() {
                    st.push_queue(btls, dest);
                }
            }
        }
        if !self.driven.is_idle() {
            n += self.progress_driven();
        }
        if !self.pairs.is_empty() {
            n += self.progress_pairs();
        }
        if !self.watchers.is_empty() {
            n += self.progress_watchers();
        }
        if !self.groups.is_empty() {
            n += self.progress_groups();
        }
        if let Some(f) = self.ext {
            n += f(self);
        }
        n
    }

    #[inline]
    pub fn is_complete(&self, req: ReqId) -> bool {
        match self.st.reqs.get(req) {
            Some(Request {
                kind: Kind::Persistent { active, .. },
                ..
            }) => !active.is_some_and(|a| !self.is_complete(a)),
            r => r.is_some_and(|r| r.complete),
        }
    }

    pub fn is_valid(&self, req: ReqId) -> bool {
        self.st.reqs.get(req).is_some()
    }

    /// The status of `req` if it is complete (and not persistent), removing it; None
    /// otherwise. The wait path's one-lookup shortcut.
    #[inline]
    pub fn take_if_complete(&mut self, req: ReqId) -> Option<Status> {
        self.st.reqs.take_complete(req)
    }

    /// `take_if_complete`, handing the status to `f` where it lies (`Requests::take_complete_with`).
    #[inline(always)]
    pub fn take_complete_with<R>(&mut self, req: ReqId, f: impl FnOnce(&Status) -> R) -> Option<R> {
        self.st.reqs.take_complete_with(req, f)
    }

    /// Remove a completed request and return its status.
    pub fn take(&mut self, req: ReqId) -> Option<Status> {
        debug_assert!(self.is_complete(req));
        if let Some(Request {
            kind: Kind::Persistent { active, .. },
            ..
        }) = self.st.reqs.get_mut(req)
        {
            // A persistent request stays; its run ends (inactive: an empty status).
            return Some(match active.take() {
                Some(a) => self
                    .st
                    .reqs
                    .remove(a)
                    .map_or_else(probe::empty_status, |r| r.status),
                None => probe::empty_status(),
            });
        }
        self.st.reqs.remove_status(req)
    }

    /// The request of a started operation, creating a completed one when it finished at once
    /// (non-blocking calls always hand out a request).
    pub fn request_for(&mut self, s: Started) -> ReqId {
        match s {
            Started::Done(st) => self.completed(st),
            Started::Pending(r) => r,
        }
    }

    /// A request that is already complete.
    fn completed(&mut self, status: Status) -> ReqId {
        let Status {
            source,
            tag,
            error,
            count,
            cancelled,
        } = status;
        self.st
            .reqs
            .insert_completed(source, tag, error, count, cancelled)
    }

    /// A pending request completed by someone other than the pml (a collective schedule).
    pub fn pending_request(&mut self) -> ReqId {
        self.st
            .reqs
            .insert_with(|| Request::send(std::ptr::null(), 0))
    }

    /// Complete a request from `pending_request` with `status` (removed at once when the user
    /// freed it already, e.g. a persistent collective's run freed while active).
    pub fn complete_request(&mut self, req: ReqId, status: Status) {
        if let Some(r) = self.st.reqs.get_mut(req) {
            r.status = status;
            r.complete = true;
        }
        self.st.reap_detached(req);
    }

    /// Have the transports write the sends they hold to batch them (`Btl::try_send_batched`):
    /// MPI_Wait and its kin call this, since they may return without a progress turn (the
    /// requests were complete) and the caller may then compute for long.
    #[inline]
    pub fn end_bursts(&mut self) {
        if self.batched {
            self.batched = false;
            for (b, &bursty) in self.btls.iter_mut().zip(&self.bursty) {
                if bursty {
                    b.end_bursts();
                }
            }
        }
    }

    /// Fragments still waiting for room in a transport.
    pub fn queued(&self) -> usize {
        self.st.queued
    }

    /// Whether the turns that follow are the async progress thread's, on a rank no thread of
    /// which waits in MPI: its core is computing, so a rendezvous whose sender waits is left
    /// whole to the sender (`Coop::Delegated`) instead of being split.
    pub fn set_delegating(&mut self, on: bool) {
        self.st.delegating = on;
    }

    /// A progress thread runs: receives do not read a large rendezvous inside the receive
    /// call.
    pub fn set_lazy_gets(&mut self) {
        self.st.lazy_gets = true;
    }

    /// Whether the turns that follow leave large single-copy reads for a later turn (the one
    /// at the end of an application call: the thread's turn reads, or leaves the copy to a
    /// waiting sender, while the application computes).
    pub fn set_defer_gets(&mut self, on: bool) {
        self.st.defer_gets = on;
    }

    /// The doorbell every peer of this rank rings after sending to it (see
    /// `Btl::doorbell_word`): when every transport that reaches a peer rings it; else None,
    /// and an async progress thread polls on a timer.
    pub fn doorbell(&self) -> Option<*const AtomicU32> {
        let mut word = None;
        for b in self.btls.iter().filter(|b| b.name() != "self") {
            match (b.doorbell_word(), word) {
                (Some(w), None) => word = Some(w),
                _ => return None,
            }
        }
        word
    }

    /// Whether work in flight may move without a fragment arriving (sends queued behind a
    /// full transport, receives left to a sender that may never claim them, reads left for a
    /// later turn), so an async progress thread must poll (or be woken) even where peers ring
    /// it.
    pub fn needs_polling(&self) -> bool {
        self.st.queued > 0 || !self.st.delegated.is_empty() || !self.st.gets.is_empty()
    }

    /// Whether something of this rank's is in flight that a fragment's arrival can move with
    /// work worth a progress thread's wake-up (10-20 µs of its core on a VM), or that moves
    /// without one: receives large enough for a rendezvous (`BIG_RECV`), streams, queued
    /// sends, single-copy reads and writes, collective schedules and the like, windows whose
    /// targets apply incoming operations (`ext`). Not small receives (their eager data waits in
    /// the ring for the next call at no cost), nor rendezvous sends waiting for their FIN, nor
    /// completed requests, nor a receive whose data a sender is writing. The async progress
    /// thread sleeps through arrivals while this is false. Linear in the job's size (streams).
    pub fn in_flight(&self) -> bool {
        let st = &self.st;
        st.big_posted > 0
            || st.queued > 0
            || !st.gets.is_empty()
            || !st.puts.is_empty()
            || !st.delegated.is_empty()
            || !self.driven.is_idle()
            || !self.pairs.is_empty()
            || !self.groups.is_empty()
            || !self.watchers.is_empty()
            || self.ext.is_some()
            || st.streams.iter().any(Option::is_some)
    }
}

/// A receive's status: MPI_ERR_TRUNCATE past `cap`; MPI_ERR_TYPE when a message unpacked
/// through `layout` (a non-contiguous receive type) ends inside a basic element of it, so its
/// type signature cannot match (as MPICH tells; a contiguous receive just takes the bytes).
fn recv_status(h: &MatchHdr, total: usize, cap: usize, layout: Option<&Layout>) -> Status {
    let mut s = Status {
        source: h.src,
        tag: h.tag,
        error: 0,
        count: total.min(cap),
        cancelled: false,
    };
    if total > cap {
        s.error = ErrorClass::Truncate as i32;
    } else if layout.is_some_and(|l| l.splits_element(total)) {
        s.error = ErrorClass::Type as i32;
    }
    s
}

impl State {
    /// A new posted receive: its request, in the posted queue.
    #[inline(always)]
    fn post(
        &mut self,
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        layout: Option<Arc<Layout>>,
    ) -> ReqId {
        let req = self.reqs.insert_recv(buf, cap, ctx, src, tag, layout);
        self.posted.push(req, ctx, src, tag);
        self.big_posted += (cap >= BIG_RECV) as usize;
        req
    }

    fn enqueue(&mut self, dest: usize, w: SendWork) {
        self.sendq[dest].push_back(w);
        self.queued += 1;
    }

    fn ctrl(&mut self, dest: usize, tag: u8, words: [u8; wire::CTRL_MAX], len: usize) {
        self.enqueue(dest, SendWork::Ctrl { tag, words, len });
    }

    fn complete(&mut self, req: ReqId) {
        if let Some(r) = self.reqs.get_mut(req) {
            r.complete = true;
        }
        self.reap_detached(req);
    }

    /// Remove a completed request the user already freed (MPI_Request_free while active).
    fn reap_detached(&mut self, req: ReqId) {
        if self.reqs.get(req).is_some_and(|r| r.detached && r.complete) {
            self.reqs.remove(req);
        }
    }

    /// Push as much of `dest`'s queue as its transport takes now, in order.
    fn push_queue(&mut self, btls: &mut [Box<dyn Btl>], dest: usize) {
        let ep = self.endpoints[dest];
        let btl = &mut btls[ep.btl];
        let maxf = btl.max_frag();
        let eagerf = btl.max_eager_frag();
        while let Some(w) = self.sendq[dest].front_mut() {
            let done_req = match w {
                SendWork::Eager {
                    req,
                    hdr,
                    msg,
                    off,
                    started,
                } => {
                    let len = msg.len;
                    loop {
                        if !*started {
                            // The first half of a split message ends on a cache line.
                            let n = if self.flow[dest].splits(len) {
                                (len / 2).next_multiple_of(64)
                            } else {
                                len
                            }
                            .min(eagerf - wire::MATCH_LEN);
                            // SAFETY: the pending send request keeps `msg`'s memory valid
                            // (isend's contract).
                            let first = unsafe { msg.slice(0, n, &mut self.scratch) };
                            let sent = if n == len {
                                send_whole(&mut **btl, ep.peer, hdr, first)
                            } else {
                                btl.try_send(ep.peer, wire::MATCH, &hdr.encode(), first)
                            };
                            if !sent {
                                return;
                            }
                            *started = true;
                            *off = n;
                        } else {
                            let n = (len - *off).min(eagerf);
                            // SAFETY: as above; off + n <= len.
                            if !btl.try_send(ep.peer, wire::CONT, &[], unsafe {
                                msg.slice(*off, n, &mut self.scratch)
                            }) {
                                return;
                            }
                            *off += n;
                        }
                        if *off == len {
                            break;
                        }
                    }
                    *req
                }
                SendWork::Rts { hdr } => {
                    if !btl.try_send(ep.peer, wire::RTS, &hdr.encode(), &[]) {
                        return;
                    }
                    None
                }
                SendWork::Ctrl { tag, words, len } => {
                    if !btl.try_send(ep.peer, *tag, &words[..*len], &[]) {
                        return;
                    }
                    None
                }
                SendWork::Data {
                    req,
                    rreq,
                    msg,
                    off,
                } => {
                    while *off < msg.len {
                        let n = (msg.len - *off).min(maxf - wire::DATA_LEN);
                        let h = wire::encode_words([*rreq, *off as u64]);
                        // SAFETY: the rendezvous send request keeps `msg`'s memory valid;
                        // off + n <= len.
                        if !btl.try_send(ep.peer, wire::DATA, &h[..wire::DATA_LEN], unsafe {
                            msg.slice(*off, n, &mut self.scratch)
                        }) {
                            return;
                        }
                        *off += n;
                    }
                    if let Some(Request {
                        kind: Kind::Send { buf, len },
                        ..
                    }) = self.reqs.get(*req)
                    {
                        btl.unexpose(ep.peer, *buf as usize, *len);
                    }
                    self.rndv_out[dest] = self.rndv_out[dest].saturating_sub(1);
                    Some(*req)
                }
            };
            self.sendq[dest].pop_front();
            self.queued -= 1;
            if let Some(r) = done_req {
                self.complete(r);
            }
        }
    }

    /// The first posted receive that matches, removed from the posted queue.
    #[inline]
    fn take_posted(&mut self, h: &MatchHdr) -> Option<ReqId> {
        let req = self.posted.take(h)?;
        self.unpost(req);
        Some(req)
    }

    /// Receive `req` left the posted queue: `big_posted` counts it no more.
    #[inline]
    fn unpost(&mut self, req: ReqId) {
        if self.big_posted > 0
            && matches!(self.reqs.get(req), Some(Request { kind: Kind::Recv { cap, .. }, .. }) if *cap >= BIG_RECV)
        {
            self.big_posted -= 1;
        }
    }

    /// Copy `data` into receive `req`'s buffer at `offset`, dropping what does not fit.
    fn copy_into(&mut self, req: ReqId, offset: usize, data: &[u8]) {
        if let Some(Request {
            kind: Kind::Recv { buf, cap, .. },
            layout,
            ..
        }) = self.reqs.get(req)
        {
            if offset < *cap && !data.is_empty() {
                let n = data.len().min(*cap - offset);
                // SAFETY: irecv's contract: `buf` (through `layout`) maps `cap` writable bytes
                // owned by this request until it completes; offset + n <= cap.
                unsafe { segment::write_at(*buf, layout.as_deref(), offset, &data[..n]) };
            }
        }
    }

    /// `n` more bytes of the rendezvous receive `rreq` are in its buffer.
    fn data_arrived(&mut self, rreq: ReqId, n: usize) {
        let mut done = None;
        if let Some(Request {
            kind: Kind::Recv { rndv: Some(r), .. },
            ..
        }) = self.reqs.get_mut(rreq)
        {
            r.got += n;
            if r.got >= r.total {
                done = Some(r.hdr);
            }
        }
        if let Some(h) = done {
            self.finish_recv(rreq, &h);
        }
    }

    fn finish_recv(&mut self, req: ReqId, h: &MatchHdr) {
        if let Some(r) = self.reqs.get_mut(req) {
            let cap = match r.kind {
                Kind::Recv { cap, .. } => cap,
                _ => 0,
            };
            r.status = recv_status(h, h.total as usize, cap, r.layout.as_deref());
            r.complete = true;
        }
        self.reap_detached(req);
    }

    fn on_frag(&mut self, btl: usize, peer: usize, tag: u8, frag: &[u8]) {
        let from = self.peer_world[btl][peer];
        match tag {
            wire::MATCH_SHORT => {
                self.on_match(from, MatchHdr::decode_short(frag), &frag[wire::SHORT_LEN..])
            }
            wire::MATCH => self.on_match(from, MatchHdr::decode(frag), &frag[wire::MATCH_LEN..]),
            wire::CONT => self.on_cont(from, frag),
            wire::RTS => {
                self.flow[from].replied = true;
                let h = RtsHdr::decode(frag);
                if self.direct.wants(&h.m) {
                    self.direct.state = DirectState::Blocked;
                }
                if let Some(req) = self.take_posted(&h.m) {
                    let rndv = Rndv {
                        peer: from,
                        addr: h.addr,
                        key: h.key,
                        sreq: h.sreq,
                        total: h.m.total as usize,
                        got: 0,
                        hdr: h.m,
                        coop: Coop::Off,
                    };
                    if let Some(Request {
                        kind: Kind::Recv { rndv: slot, .. },
                        ..
                    }) = self.reqs.get_mut(req)
                    {
                        *slot = Some(Box::new(rndv));
                    }
                    self.gets.push(req);
                } else {
                    let id = self.next_unexpected;
                    self.next_unexpected += 1;
                    let body = UnexpectedBody::Rts {
                        addr: h.addr,
                        sreq: h.sreq,
                        key: h.key,
                    };
                    self.unexpected.push_back(Unexpected {
                        id,
                        from,
                        hdr: h.m,
                        body,
                    });
                }
            }
            wire::FIN => {
                let sreq = wire::word(frag, 0) as ReqId;
                if let Some(Request {
                    kind: Kind::Send { buf, len },
                    ..
                }) = self.reqs.get(sreq)
                {
                    self.unexpose.push((btl, peer, *buf as usize, *len));
                }
                self.rndv_out[from] = self.rndv_out[from].saturating_sub(1);
                self.complete(sreq)
            }
            wire::CTS => {
                let (sreq, rreq) = (wire::word(frag, 0) as ReqId, wire::word(frag, 1));
                if let Some(Request {
                    kind: Kind::Send { buf, len },
                    layout,
                    ..
                }) = self.reqs.get(sreq)
                {
                    let msg = Msg {
                        ptr: buf.cast_mut(),
                        len: *len,
                        layout: layout.clone(),
                    };
                    let w = SendWork::Data {
                        req: sreq,
                        rreq,
                        msg,
                        off: 0,
                    };
                    self.enqueue(from, w);
                }
            }
            wire::DATA => {
                let (rreq, off) = (wire::word(frag, 0) as ReqId, wire::word(frag, 1) as usize);
                let data = &frag[wire::DATA_LEN..];
                self.copy_into(rreq, off, data);
                self.data_arrived(rreq, data.len());
            }
            wire::PUT => self.on_put(from, frag),
            wire::PUT_FIN => self.on_put_fin(wire::word(frag, 0) as ReqId, wire::word(frag, 1)),
            other => {
                eprintln!("rmpi: internal error: unknown fragment tag {other} from rank {from}");
                std::process::abort();
            }
        }
    }

    fn on_match(&mut self, from: usize, h: MatchHdr, chunk: &[u8]) {
        self.flow[from].replied = true;
        let total = h.total as usize;
        let complete = chunk.len() == total;
        if self.direct.wants(&h) {
            self.direct.copy_in(0, chunk);
            if complete {
                self.direct.finish(&h);
            } else {
                self.direct.state = DirectState::Streaming;
                self.streams[from] = Some(Stream {
                    dest: StreamDest::Direct,
                    hdr: h,
                    got: chunk.len(),
                });
            }
            return;
        }
        if let Some(req) = self.take_posted(&h) {
            if complete && self.recv_whole(req, &h, chunk) {
                return;
            }
            self.copy_into(req, 0, chunk);
            if complete {
                self.finish_recv(req, &h);
            } else {
                self.streams[from] = Some(Stream {
                    dest: StreamDest::Req(req),
                    hdr: h,
                    got: chunk.len(),
                });
            }
        } else {
            let id = self.next_unexpected;
            self.next_unexpected += 1;
            let mut data = Vec::with_capacity(total);
            data.extend_from_slice(chunk);
            self.unexpected.push_back(Unexpected {
                id,
                from,
                hdr: h,
                body: UnexpectedBody::Eager { data, complete },
            });
            if !complete {
                self.streams[from] = Some(Stream {
                    dest: StreamDest::Unexpected(id),
                    hdr: h,
                    got: chunk.len(),
                });
            }
        }
    }

    /// A whole eager message for posted receive `req`, with one request lookup: copy,
    /// status, complete. False (nothing done) unless `req` is a plain contiguous receive
    /// still attached to its user.
    #[inline]
    fn recv_whole(&mut self, req: ReqId, h: &MatchHdr, data: &[u8]) -> bool {
        let Some(Request {
            kind: Kind::Recv { buf, cap, .. },
            layout: None,
            detached: false,
            complete,
            status,
        }) = self.reqs.get_mut(req)
        else {
            return false;
        };
        let n = data.len().min(*cap);
        if n > 0 {
            // SAFETY: irecv's contract: `buf` has `cap` writable bytes owned by this pending
            // request; n <= cap and n <= data.len().
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), *buf, n) };
        }
        *status = recv_status(h, h.total as usize, *cap, None);
        *complete = true;
        true
    }

    fn on_cont(&mut self, from: usize, data: &[u8]) {
        let Some(mut s) = self.streams[from].take() else {
            eprintln!(
                "rmpi: internal error: continuation fragment from rank {from} without a message"
            );
            std::process::abort();
        };
        match s.dest {
            StreamDest::Req(req) => self.copy_into(req, s.got, data),
            StreamDest::Direct => self.direct.copy_in(s.got, data),
            StreamDest::Unexpected(id) => {
                if let Some(u) = self.arrived_mut(id) {
                    if let UnexpectedBody::Eager { data: buf, .. } = &mut u.body {
                        buf.extend_from_slice(data);
                    }
                }
            }
        }
        s.got += data.len();
        if s.got < s.hdr.total as usize {
            self.streams[from] = Some(s);
            return;
        }
        match s.dest {
            StreamDest::Req(req) => self.finish_recv(req, &s.hdr),
            StreamDest::Direct => self.direct.finish(&s.hdr),
            StreamDest::Unexpected(id) => {
                if let Some(u) = self.arrived_mut(id) {
                    if let UnexpectedBody::Eager { complete, .. } = &mut u.body {
                        *complete = true;
                    }
                }
            }
        }
    }
}
