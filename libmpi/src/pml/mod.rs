//! Point-to-point messaging layer: matching on (context, source, tag) in MPI's non-overtaking
//! order, an unexpected-message queue, and the protocols over the btls:
//! eager (MATCH + CONT fragments) up to the eager limit, rendezvous above it (RTS, then a
//! single-copy get by the receiver and FIN; or CTS and streamed DATA when no single copy).

mod posted;
mod probe;
pub mod request;
pub mod wire;

use std::collections::VecDeque;

use crate::btl::Btl;
use crate::error::ErrorClass;
use request::{Kind, Request, Requests, Rndv};
pub use request::{ReqId, Status};
use wire::{MatchHdr, RtsHdr};

pub const ANY_SOURCE: i32 = -1;
pub const ANY_TAG: i32 = -2;

/// Which transport reaches a world rank, and the rank's index in that transport.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint {
    pub btl: usize,
    pub peer: usize,
}

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
    Rts { addr: u64, sreq: u64 },
}

enum StreamDest {
    Req(ReqId),
    Unexpected(u64),
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
        buf: *const u8,
        len: usize,
        off: usize,
        started: bool,
    },
    Rts {
        hdr: RtsHdr,
    },
    Ctrl {
        tag: u8,
        words: [u8; 16],
        len: usize,
    },
    Data {
        req: ReqId,
        rreq: u64,
        buf: *const u8,
        len: usize,
        off: usize,
    },
}

pub struct Pml {
    btls: Vec<Box<dyn Btl>>,
    st: State,
}

struct State {
    endpoints: Vec<Endpoint>,
    /// By btl, then btl peer index: the world rank.
    peer_world: Vec<Vec<usize>>,
    reqs: Requests,
    posted: posted::Posted,
    unexpected: VecDeque<Unexpected>,
    next_unexpected: u64,
    streams: Vec<Option<Stream>>,
    sendq: Vec<VecDeque<SendWork>>,
    queued: usize,
    gets: Vec<ReqId>,
    eager_limit: usize,
    verbose: bool,
    /// Messages matched by MPI_Mprobe, waiting for MPI_Mrecv (slot = message handle).
    matched: Vec<Option<Unexpected>>,
}

/// View `len` bytes at `buf`. A zero length never touches the pointer (C may pass NULL).
///
/// # Safety
/// For len > 0, `buf` must point to `len` readable bytes that stay valid and unmodified while
/// the returned slice is used: the caller's send buffer, kept alive by MPI's rules (C) or by a
/// borrow held across the request's life (Rust API).
#[inline]
unsafe fn bytes<'a>(buf: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: guaranteed by this function's contract.
        unsafe { std::slice::from_raw_parts(buf, len) }
    }
}

fn matches(ctx: u32, src: i32, tag: i32, h: &MatchHdr) -> bool {
    ctx == h.ctx && (src == ANY_SOURCE || src == h.src) && (tag == ANY_TAG || tag == h.tag)
}

impl Pml {
    /// `endpoints[world_rank]` names the btl and its peer index; `peer_world[btl][peer]` the reverse.
    pub fn new(btls: Vec<Box<dyn Btl>>, endpoints: Vec<Endpoint>, eager_limit: usize) -> Pml {
        let mut peer_world: Vec<Vec<usize>> = btls.iter().map(|_| Vec::new()).collect();
        for (world, ep) in endpoints.iter().enumerate() {
            let v = &mut peer_world[ep.btl];
            if v.len() <= ep.peer {
                v.resize(ep.peer + 1, usize::MAX);
            }
            v[ep.peer] = world;
        }
        let n = endpoints.len();
        Pml {
            btls,
            st: State {
                endpoints,
                peer_world,
                reqs: Requests::default(),
                posted: Default::default(),
                unexpected: VecDeque::new(),
                next_unexpected: 0,
                streams: (0..n).map(|_| None).collect(),
                sendq: (0..n).map(|_| VecDeque::new()).collect(),
                queued: 0,
                gets: Vec::new(),
                eager_limit,
                verbose: false,
                matched: Vec::new(),
            },
        }
    }

    pub fn btl_names(&self) -> Vec<&'static str> {
        self.btls.iter().map(|b| b.name()).collect()
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
        unsafe { self.isend_sync(buf, len, dest, ctx, src, tag, false) }
    }

    /// `isend`, or with `sync` a synchronous send: always rendezvous, so it completes only
    /// once the receiver has matched it (FIN after its single copy, or the streamed data
    /// after its CTS).
    ///
    /// # Safety
    /// As `isend`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn isend_sync(
        &mut self,
        buf: *const u8,
        len: usize,
        dest: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        sync: bool,
    ) -> Started {
        let st = &mut self.st;
        let ep = st.endpoints[dest];
        let m = MatchHdr {
            ctx,
            src,
            tag,
            total: len as u64,
        };
        if !sync && len <= st.eager_limit {
            let btl = &mut self.btls[ep.btl];
            if st.sendq[dest].is_empty() && wire::MATCH_LEN + len <= btl.max_frag() {
                // SAFETY: the caller's contract on `buf`; the btl copies it before returning.
                if btl.try_send(ep.peer, wire::MATCH, &m.encode(), unsafe {
                    bytes(buf, len)
                }) {
                    return Started::Done(Status::default());
                }
            }
            let req = st.reqs.insert(Request::send(buf, len));
            st.enqueue(
                dest,
                SendWork::Eager {
                    req: Some(req),
                    hdr: m,
                    buf,
                    len,
                    off: 0,
                    started: false,
                },
            );
            st.push_queue(&mut self.btls, dest);
            Started::Pending(req)
        } else {
            let req = st.reqs.insert(Request::send(buf, len));
            let hdr = RtsHdr {
                m,
                addr: buf as u64,
                sreq: req as u64,
            };
            st.enqueue(dest, SendWork::Rts { hdr });
            st.push_queue(&mut self.btls, dest);
            Started::Pending(req)
        }
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
        let st = &mut self.st;
        let Some(i) = st
            .unexpected
            .iter()
            .position(|u| matches(ctx, src, tag, &u.hdr))
        else {
            let req = st.reqs.insert(Request::recv(buf, cap, ctx, src, tag, None));
            st.posted.push(req, ctx, src, tag);
            return Started::Pending(req);
        };
        let u = st.unexpected.remove(i).expect("position found it");
        // SAFETY: forwarded contract.
        unsafe { self.deliver(u, buf, cap, ctx, src, tag) }
    }

    /// Receive an arrived (unexpected or mprobe-matched) message into `buf`.
    ///
    /// # Safety
    /// As `irecv`.
    unsafe fn deliver(
        &mut self,
        u: Unexpected,
        buf: *mut u8,
        cap: usize,
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
                if n > 0 {
                    // SAFETY: caller's contract: `buf` has `cap` writable bytes; n <= cap.
                    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf, n) };
                }
                Started::Done(recv_status(&u.hdr, total, cap))
            }
            UnexpectedBody::Eager {
                data,
                complete: false,
            } => {
                let req = st.reqs.insert(Request::recv(buf, cap, ctx, src, tag, None));
                st.copy_into(req, 0, &data);
                if let Some(s) = st.streams[u.from].as_mut() {
                    s.dest = StreamDest::Req(req);
                }
                Started::Pending(req)
            }
            UnexpectedBody::Rts { addr, sreq } => {
                let rndv = Rndv {
                    peer: u.from,
                    addr,
                    sreq,
                    total,
                    got: 0,
                    hdr: u.hdr,
                };
                let req = st
                    .reqs
                    .insert(Request::recv(buf, cap, ctx, src, tag, Some(rndv)));
                st.gets.push(req);
                st.run_gets(&mut self.btls);
                Started::Pending(req)
            }
        }
    }

    /// Poll every transport once and push queued fragments; returns how many fragments arrived.
    #[inline]
    pub fn progress(&mut self) -> usize {
        let Pml { btls, st } = self;
        let mut n = 0;
        for (bi, btl) in btls.iter_mut().enumerate() {
            n += btl.progress(&mut |peer, tag, frag| st.on_frag(bi, peer, tag, frag));
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
        self.st.reqs.remove(req).map(|r| r.status)
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
        self.st.reqs.insert(Request::completed(status))
    }

    /// Fragments still waiting for room in a transport.
    pub fn queued(&self) -> usize {
        self.st.queued
    }
}

fn recv_status(h: &MatchHdr, total: usize, cap: usize) -> Status {
    let mut s = Status {
        source: h.src,
        tag: h.tag,
        error: 0,
        count: total.min(cap),
        cancelled: false,
    };
    if total > cap {
        s.error = ErrorClass::Truncate as i32;
    }
    s
}

impl State {
    fn enqueue(&mut self, dest: usize, w: SendWork) {
        self.sendq[dest].push_back(w);
        self.queued += 1;
    }

    fn ctrl(&mut self, dest: usize, tag: u8, words: [u8; 16], len: usize) {
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
        while let Some(w) = self.sendq[dest].front_mut() {
            let done_req = match w {
                SendWork::Eager {
                    req,
                    hdr,
                    buf,
                    len,
                    off,
                    started,
                } => {
                    loop {
                        if !*started {
                            let n = (*len).min(maxf - wire::MATCH_LEN);
                            // SAFETY: the pending send request keeps `buf` valid (isend's contract).
                            if !btl.try_send(ep.peer, wire::MATCH, &hdr.encode(), unsafe {
                                bytes(*buf, n)
                            }) {
                                return;
                            }
                            *started = true;
                            *off = n;
                        } else {
                            let n = (*len - *off).min(maxf);
                            // SAFETY: as above; off + n <= len.
                            if !btl.try_send(ep.peer, wire::CONT, &[], unsafe {
                                bytes(buf.add(*off), n)
                            }) {
                                return;
                            }
                            *off += n;
                        }
                        if *off == *len {
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
                    buf,
                    len,
                    off,
                } => {
                    while *off < *len {
                        let n = (*len - *off).min(maxf - wire::DATA_LEN);
                        let h = wire::encode_words([*rreq, *off as u64]);
                        // SAFETY: the rendezvous send request keeps `buf` valid; off + n <= len.
                        if !btl
                            .try_send(ep.peer, wire::DATA, &h, unsafe { bytes(buf.add(*off), n) })
                        {
                            return;
                        }
                        *off += n;
                    }
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
    fn take_posted(&mut self, h: &MatchHdr) -> Option<ReqId> {
        self.posted.take(h)
    }

    /// Copy `data` into receive `req`'s buffer at `offset`, dropping what does not fit.
    fn copy_into(&mut self, req: ReqId, offset: usize, data: &[u8]) {
        if let Some(Request {
            kind: Kind::Recv { buf, cap, .. },
            ..
        }) = self.reqs.get(req)
        {
            if offset < *cap && !data.is_empty() {
                let n = data.len().min(*cap - offset);
                // SAFETY: irecv's contract: `buf` has `cap` writable bytes owned by this request
                // until it completes; offset + n <= cap.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf.add(offset), n) };
            }
        }
    }

    fn finish_recv(&mut self, req: ReqId, h: &MatchHdr) {
        if let Some(r) = self.reqs.get_mut(req) {
            let cap = match r.kind {
                Kind::Recv { cap, .. } => cap,
                _ => 0,
            };
            r.status = recv_status(h, h.total as usize, cap);
            r.complete = true;
        }
        self.reap_detached(req);
    }

    fn on_frag(&mut self, btl: usize, peer: usize, tag: u8, frag: &[u8]) {
        let from = self.peer_world[btl][peer];
        match tag {
            wire::MATCH => self.on_match(from, MatchHdr::decode(frag), &frag[wire::MATCH_LEN..]),
            wire::CONT => self.on_cont(from, frag),
            wire::RTS => {
                let h = RtsHdr::decode(frag);
                if let Some(req) = self.take_posted(&h.m) {
                    let rndv = Rndv {
                        peer: from,
                        addr: h.addr,
                        sreq: h.sreq,
                        total: h.m.total as usize,
                        got: 0,
                        hdr: h.m,
                    };
                    if let Some(Request {
                        kind: Kind::Recv { rndv: slot, .. },
                        ..
                    }) = self.reqs.get_mut(req)
                    {
                        *slot = Some(rndv);
                    }
                    self.gets.push(req);
                } else {
                    let id = self.next_unexpected;
                    self.next_unexpected += 1;
                    let body = UnexpectedBody::Rts {
                        addr: h.addr,
                        sreq: h.sreq,
                    };
                    self.unexpected.push_back(Unexpected {
                        id,
                        from,
                        hdr: h.m,
                        body,
                    });
                }
            }
            wire::FIN => self.complete(wire::word(frag, 0) as ReqId),
            wire::CTS => {
                let (sreq, rreq) = (wire::word(frag, 0) as ReqId, wire::word(frag, 1));
                if let Some(Request {
                    kind: Kind::Send { buf, len },
                    ..
                }) = self.reqs.get(sreq)
                {
                    let w = SendWork::Data {
                        req: sreq,
                        rreq,
                        buf: *buf,
                        len: *len,
                        off: 0,
                    };
                    self.enqueue(from, w);
                }
            }
            wire::DATA => {
                let (rreq, off) = (wire::word(frag, 0) as ReqId, wire::word(frag, 1) as usize);
                let data = &frag[wire::DATA_LEN..];
                self.copy_into(rreq, off, data);
                let mut done = None;
                if let Some(Request {
                    kind: Kind::Recv { rndv: Some(r), .. },
                    ..
                }) = self.reqs.get_mut(rreq)
                {
                    r.got += data.len();
                    if r.got >= r.total {
                        done = Some(r.hdr);
                    }
                }
                if let Some(h) = done {
                    self.finish_recv(rreq, &h);
                }
            }
            other => {
                eprintln!("rmpi: internal error: unknown fragment tag {other} from rank {from}");
                std::process::abort();
            }
        }
    }

    fn on_match(&mut self, from: usize, h: MatchHdr, chunk: &[u8]) {
        let total = h.total as usize;
        let complete = chunk.len() == total;
        if let Some(req) = self.take_posted(&h) {
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

    fn on_cont(&mut self, from: usize, data: &[u8]) {
        let Some(mut s) = self.streams[from].take() else {
            eprintln!(
                "rmpi: internal error: continuation fragment from rank {from} without a message"
            );
            std::process::abort();
        };
        match s.dest {
            StreamDest::Req(req) => self.copy_into(req, s.got, data),
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
            StreamDest::Unexpected(id) => {
                if let Some(u) = self.arrived_mut(id) {
                    if let UnexpectedBody::Eager { complete, .. } = &mut u.body {
                        *complete = true;
                    }
                }
            }
        }
    }

    /// Read matched rendezvous data with a single copy; FIN on success, CTS to fall back.
    fn run_gets(&mut self, btls: &mut [Box<dyn Btl>]) {
        for req in std::mem::take(&mut self.gets) {
            let Some(Request {
                kind:
                    Kind::Recv {
                        buf,
                        cap,
                        rndv: Some(r),
                        ..
                    },
                ..
            }) = self.reqs.get(req)
            else {
                continue;
            };
            let (buf, r) = (*buf, *r);
            let n = r.total.min(*cap);
            let ep = self.endpoints[r.peer];
            let ok = n == 0
                || {
                    // SAFETY: irecv's contract: `buf` has `cap` >= n writable bytes owned by this
                    // pending request.
                    let local = unsafe { std::slice::from_raw_parts_mut(buf, n) };
                    match btls[ep.btl].get(ep.peer, r.addr as usize, local) {
                        Ok(()) => true,
                        Err(crate::btl::GetError::Unsupported(why)) => {
                            if std::mem::take(&mut self.verbose) {
                                eprintln!("rmpi: single copy from rank {} unavailable ({why}); streaming instead", r.peer);
                            }
                            false
                        }
                    }
                };
            if ok {
                self.finish_recv(req, &r.hdr);
                self.ctrl(
                    r.peer,
                    wire::FIN,
                    wire::encode_words([r.sreq]),
                    wire::FIN_LEN,
                );
            } else {
                self.ctrl(
                    r.peer,
                    wire::CTS,
                    wire::encode_words([r.sreq, req as u64]),
                    wire::CTS_LEN,
                );
            }
        }
    }
}
