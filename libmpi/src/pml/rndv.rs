//! Rendezvous data movement, receiver and sender side: the receiver's single-copy read (with a
//! fallback to streaming), and the cooperative split, where a sender that waits in MPI writes
//! the second half of the data into the receive buffer while the receiver reads the first, so
//! two cores copy at once (measured 1.6x at 64 KiB, 2x from 256 KiB with CMA).
//!
//! The second half goes to whoever claims the receive's ticket first (a compare-and-swap on a
//! claim word in the receiver's slot line): the sender before writing, the receiver as soon as
//! its own half is read. So a sender that left MPI after the receiver asked costs the receiver
//! nothing (it reads the rest itself), and a sender that claimed is copying right now.

use super::request::{Coop, Head};
use super::wire;
use super::{Kind, ReqId, Request, Rndv, State};
use crate::btl::{Btl, CoopOpen, GetError, GetPart};
use crate::datatype::segment;

/// A PUT this rank (the sender) was asked to do: write `[off, off + len)` of send `sreq` at
/// `addr + off` in world rank `from`'s memory, then tell receive `rreq` with PUT_FIN.
#[derive(Clone, Copy, Debug)]
pub(super) struct PutWork {
    from: usize,
    sreq: ReqId,
    rreq: u64,
    addr: usize,
    off: usize,
    len: usize,
    ticket: u64,
}

/// How rendezvous data moved, for `btl_base_verbose` at finalize.
#[derive(Clone, Copy, Debug, Default)]
pub struct RndvStats {
    /// Read whole by the receiver with a single copy.
    pub gets: u64,
    /// Split with the sender (PUT asked).
    pub coop: u64,
    /// Of those, read whole after all: the sender had not claimed its half in time.
    pub coop_back: u64,
    /// Of the splits, left whole to the sender (the async progress thread's, `Coop::Delegated`).
    pub delegated: u64,
    /// Streamed through the transport (CTS).
    pub streamed: u64,
}

/// How long a receive left whole to a waiting sender (`Coop::Delegated`) waits for the sender
/// to claim it: a sender spinning in MPI claims within a few µs of the PUT; one that has left
/// MPI since never does, and the receiver then reads it all itself.
const DELEGATE_WAIT: std::time::Duration = std::time::Duration::from_micros(30);

/// PUT_FIN's result word.
const PUT_DONE: u64 = 0;
const PUT_REFUSED: u64 = 1;

/// Whole reads up to this size wait for the others of their peer's window (`read_batch`):
/// beyond it one call's fixed cost is under 2 % of the copy, and deferring a read to the end
/// of the turn can cost more: in osu_bw 1 MiB (a window mixing split and whole reads: a sender
/// not yet waiting is not asked to split) runs with those reads batched gave 25-31 GB/s where
/// the unbatched build gave 46-48 (both builds vary between such levels at 1 MiB).
const BATCH_MAX: usize = 512 << 10;

/// A whole rendezvous read waiting in `run_gets` for the others of its peer.
pub(super) struct Batched {
    req: ReqId,
    r: Rndv,
    buf: *mut u8,
    n: usize,
}

impl State {
    /// Single-copy read of `n` contiguous bytes at `addr` in `peer` into a receive laid out by
    /// `layout`, through the scratch buffer a bounded chunk at a time; false if unsupported.
    #[allow(clippy::too_many_arguments)]
    fn get_unpacked(
        &mut self,
        btls: &mut [Box<dyn Btl>],
        peer: usize,
        addr: u64,
        key: u64,
        buf: *mut u8,
        layout: &crate::datatype::Layout,
        n: usize,
    ) -> bool {
        const CHUNK: usize = 256 << 10;
        let ep = self.endpoints[peer];
        let mut off = 0;
        while off < n {
            let k = (n - off).min(CHUNK);
            self.scratch.resize(k, 0);
            let remote = addr as usize + off;
            if btls[ep.btl]
                .get(ep.peer, remote, key, &mut self.scratch[..k])
                .is_err()
            {
                return false;
            }
            // SAFETY: irecv's contract: `buf` through `layout` maps `cap` >= n writable bytes
            // owned by this pending request; off + k <= n.
            unsafe { segment::write_at(buf, Some(layout), off, &self.scratch[..k]) };
            off += k;
        }
        true
    }

    /// Read matched rendezvous data with a single copy; FIN on success, CTS to fall back. A
    /// large contiguous message from a sender that waits in MPI is split: PUT asks it for the
    /// second half first, then we read the first half.
    pub(super) fn run_gets(&mut self, btls: &mut [Box<dyn Btl>]) {
        let mut later = Vec::new();
        self.run_gets_but(btls, &mut later);
        self.gets.extend(later);
    }

    /// `run_gets`, except reads of `BIG_RECV` bytes or more while `defer_gets` (the end of an
    /// application call with a progress thread), which go to `later`: smaller ones cost less
    /// here than waking the thread would.
    fn run_gets_but(&mut self, btls: &mut [Box<dyn Btl>], later: &mut Vec<ReqId>) {
        // Drained rather than consumed, so its capacity comes back (one read a turn then
        // allocates nothing).
        let mut taken = std::mem::take(&mut self.gets);
        let mut gets = taken.drain(..);
        let mut batch = std::mem::take(&mut self.batch);
        while let Some(req) = gets.next() {
            let Some(Request {
                kind:
                    Kind::Recv {
                        buf,
                        cap,
                        rndv: Some(r),
                        ..
                    },
                layout,
                ..
            }) = self.reqs.get(req)
            else {
                continue;
            };
            let (buf, r) = (*buf, **r);
            let n = r.total.min(*cap);
            if self.defer_gets && n >= super::BIG_RECV {
                later.push(req);
                continue;
            }
            let ep = self.endpoints[r.peer];
            // A non-contiguous sender (address 0) streams; a non-contiguous receive reads by
            // single copy through the scratch buffer, chunk by chunk, or streams.
            if n > 0 && (layout.is_some() || r.addr == 0) {
                let layout = layout.clone();
                let ok = r.addr != 0
                    && layout.is_some_and(|l| {
                        self.get_unpacked(btls, r.peer, r.addr, r.key, buf, &l, n)
                    });
                if ok {
                    self.stats.gets += 1;
                    self.finish_rndv(req, &r);
                } else {
                    self.stream(req, &r);
                }
                continue;
            }
            // The buffer the last read went to again: its lines are in our cache.
            let hot = self.last_get_buf == buf as usize;
            let (from, to, coop) = match r.coop {
                Coop::ReadTail { split } => (split, n, None),
                // Not with a peer that is reading rendezvous data of ours: it is busy. Not in
                // a window of reads (more queued behind this one) into a hot buffer, for a
                // message that fits the cache: that copy is fast alone, and the split's
                // handshake costs more than it saves.
                _ if n >= self.coop_min
                    && self.rndv_out[r.peer] == 0
                    && (gets.len() == 0 || !hot || n >= self.coop_window_min) =>
                {
                    match btls[ep.btl].coop_open(ep.peer) {
                        CoopOpen::Busy => {
                            // Every claim word is taken by a split in flight: this and the rest
                            // wait for a PUT_FIN to free one (a later progress turn), so that a
                            // window of receives is split throughout rather than 13 of them.
                            self.gets.push(req);
                            self.gets.extend(gets);
                            self.read_batch(btls, &mut batch);
                            self.batch = batch;
                            return;
                        }
                        CoopOpen::Ticket(ticket) => {
                            // Page-aligned, so the two copies never share a page. All of it
                            // when this rank's core computes (the async progress thread's
                            // turn): the idle sender copies, we don't.
                            let split = if self.delegating { 0 } else { (n / 2) & !4095 };
                            let words = wire::encode_words([
                                r.sreq,
                                req as u64,
                                buf as u64,
                                split as u64,
                                (n - split) as u64,
                                ticket,
                            ]);
                            self.ctrl(r.peer, wire::PUT, words, wire::PUT_LEN);
                            // Out now: the sender copies while we do.
                            self.push_queue(btls, r.peer);
                            self.stats.coop += 1;
                            if split == 0 {
                                self.stats.delegated += 1;
                                let since = std::time::Instant::now();
                                self.set_coop(req, Coop::Delegated { ticket, since });
                                self.delegated.push(req);
                                continue;
                            }
                            (0, split, Some((split, ticket)))
                        }
                        CoopOpen::No => (0, n, None),
                    }
                }
                _ => (0, n, None),
            };
            self.last_get_buf = buf as usize;
            if coop.is_none() && from == 0 && r.coop == Coop::Off && to <= BATCH_MAX {
                if batch.first().is_some_and(|b| b.r.peer != r.peer) {
                    self.read_batch(btls, &mut batch);
                }
                batch.push(Batched { req, r, buf, n: to });
                continue;
            }
            let mut head = self.read(btls, &r, buf, from, to);
            if let Some((split, ticket)) = coop {
                if !btls[ep.btl].coop_claim(ep.peer, ticket, false) {
                    // The sender claimed the second half and is writing it: wait for PUT_FIN.
                    self.set_coop(
                        req,
                        Coop::Waiting {
                            split,
                            head,
                            ticket,
                        },
                    );
                    continue;
                }
                // The sender has not started (it is not in MPI now): read the rest ourselves.
                btls[ep.btl].coop_close(ticket);
                self.stats.coop_back += 1;
                if head == Head::Read {
                    head = self.read(btls, &r, buf, split, n);
                }
            } else if head == Head::Read && r.coop == Coop::Off {
                self.stats.gets += 1;
            }
            self.end_read(req, &r, head);
        }
        self.read_batch(btls, &mut batch);
        self.batch = batch;
        drop(gets);
        if self.gets.is_empty() {
            self.gets = taken;
        }
    }

    /// Make the whole reads in `batch` (all from one peer) in one `Btl::get_many`, and end
    /// them; if it fails, each one again on its own, so that each gets its own outcome.
    fn read_batch(&mut self, btls: &mut [Box<dyn Btl>], batch: &mut Vec<Batched>) {
        let ok = match batch.as_slice() {
            [] => return,
            [_] => false,
            [first, ..] => {
                let ep = self.endpoints[first.r.peer];
                let parts: Vec<GetPart> = batch
                    .iter()
                    .map(|b| GetPart {
                        remote: b.r.addr as usize,
                        key: b.r.key,
                        local: b.buf,
                        len: b.n,
                    })
                    .collect();
                // SAFETY: irecv's contract: each `buf` has `cap` >= n writable bytes owned by
                // its pending request; no sender writes into any of them (no split here).
                unsafe { btls[ep.btl].get_many(ep.peer, &parts) }.is_ok()
            }
        };
        for b in batch.drain(..) {
            let head = if ok {
                Head::Read
            } else {
                self.read(btls, &b.r, b.buf, 0, b.n)
            };
            if head == Head::Read {
                self.stats.gets += 1;
            }
            self.end_read(b.req, &b.r, head);
        }
    }

    /// Single-copy read of `[from, to)` of rendezvous `r` into `buf` at the same offsets.
    fn read(
        &mut self,
        btls: &mut [Box<dyn Btl>],
        r: &Rndv,
        buf: *mut u8,
        from: usize,
        to: usize,
    ) -> Head {
        if to <= from {
            return Head::Read;
        }
        let ep = self.endpoints[r.peer];
        // SAFETY: irecv's contract: `buf` has `cap` >= to writable bytes owned by this pending
        // request; while we read [from, to), a sender writes only a part it claimed, never this.
        let local = unsafe { std::slice::from_raw_parts_mut(buf.add(from), to - from) };
        match btls[ep.btl].get(ep.peer, r.addr as usize + from, r.key, local) {
            Ok(()) => Head::Read,
            Err(GetError::Unsupported(why)) => {
                if std::mem::take(&mut self.verbose) {
                    eprintln!(
                        "rmpi: single copy from rank {} unavailable ({why}); streaming instead",
                        r.peer
                    );
                }
                Head::Stream
            }
            Err(GetError::Failed { class, .. }) => Head::Failed(class),
        }
    }

    /// Receives left whole to their senders (`Coop::Delegated`): past `DELEGATE_WAIT`, claim
    /// the ones no sender has claimed and read them ourselves; a sender that claimed is writing
    /// (its PUT_FIN completes the receive).
    pub(super) fn run_delegated(&mut self, btls: &mut [Box<dyn Btl>]) {
        let mut i = 0;
        while i < self.delegated.len() {
            let req = self.delegated[i];
            let Some(Request {
                kind: Kind::Recv { rndv: Some(r), .. },
                ..
            }) = self.reqs.get(req)
            else {
                self.delegated.swap_remove(i);
                continue;
            };
            let Coop::Delegated { ticket, since } = r.coop else {
                // PUT_FIN came.
                self.delegated.swap_remove(i);
                continue;
            };
            if since.elapsed() < DELEGATE_WAIT {
                i += 1;
                continue;
            }
            self.delegated.swap_remove(i);
            let ep = self.endpoints[r.peer];
            if btls[ep.btl].coop_claim(ep.peer, ticket, false) {
                btls[ep.btl].coop_close(ticket);
                self.stats.coop_back += 1;
                self.set_coop(req, Coop::ReadTail { split: 0 });
                self.gets.push(req);
            } else {
                let head = Head::Read;
                self.set_coop(
                    req,
                    Coop::Waiting {
                        split: 0,
                        head,
                        ticket,
                    },
                );
            }
        }
    }

    /// Our read is over and nothing else is writing into the buffer: complete the receive (FIN
    /// releases the sender), or have everything streamed.
    fn end_read(&mut self, req: ReqId, r: &Rndv, head: Head) {
        match head {
            Head::Read => self.finish_rndv(req, r),
            Head::Stream => self.stream(req, r),
            // The receive fails with the class; the FIN still releases the sender, which must
            // not wait for a transfer that cannot happen.
            Head::Failed(class) => {
                self.finish_rndv(req, r);
                if let Some(rq) = self.reqs.get_mut(req) {
                    rq.status.error = class as i32;
                }
            }
        }
    }

    fn finish_rndv(&mut self, req: ReqId, r: &Rndv) {
        self.set_coop(req, Coop::Off);
        self.finish_recv(req, &r.hdr);
        self.ctrl(
            r.peer,
            wire::FIN,
            wire::encode_words([r.sreq]),
            wire::FIN_LEN,
        );
    }

    /// No single copy: ask the sender to stream the whole message (CTS).
    fn stream(&mut self, req: ReqId, r: &Rndv) {
        self.stats.streamed += 1;
        self.set_coop(req, Coop::Off);
        let words = wire::encode_words([r.sreq, req as u64]);
        self.ctrl(r.peer, wire::CTS, words, wire::CTS_LEN);
    }

    fn set_coop(&mut self, req: ReqId, coop: Coop) {
        if let Some(Request {
            kind: Kind::Recv { rndv: Some(r), .. },
            ..
        }) = self.reqs.get_mut(req)
        {
            r.coop = coop;
        }
    }

    /// PUT_FIN from the sender of receive `rreq`: its part is in (or it could not write it).
    pub(super) fn on_put_fin(&mut self, rreq: ReqId, result: u64) {
        let Some(Request {
            kind: Kind::Recv {
                rndv: Some(r), cap, ..
            },
            ..
        }) = self.reqs.get(rreq)
        else {
            return;
        };
        let (r, cap) = (**r, *cap);
        let (split, head, ticket) = match r.coop {
            Coop::Waiting {
                split,
                head,
                ticket,
            } => (split, head, ticket),
            Coop::Delegated { ticket, .. } => (0, Head::Read, ticket),
            _ => return,
        };
        // The claim word may be reused once we are out of the transport's delivery callback.
        self.coop_closed.push((self.endpoints[r.peer].btl, ticket));
        match head {
            Head::Read if result != PUT_DONE => {
                self.set_coop(rreq, Coop::ReadTail { split });
                self.gets.push(rreq);
            }
            // The sender wrote the whole message and completed its send then (`run_puts`):
            // no FIN, whose send request may be another one by now.
            Head::Read if split == 0 && r.total <= cap => {
                self.set_coop(rreq, Coop::Off);
                self.finish_recv(rreq, &r.hdr);
            }
            _ => self.end_read(rreq, &r, head),
        }
    }

    /// PUT from the receiver of send `sreq` (world rank `from`): done after this progress turn,
    /// outside the transport's delivery callback.
    pub(super) fn on_put(&mut self, from: usize, frag: &[u8]) {
        let w = |i| wire::word(frag, i);
        self.puts.push(PutWork {
            from,
            sreq: w(0) as ReqId,
            rreq: w(1),
            addr: w(2) as usize,
            off: w(3) as usize,
            len: w(4) as usize,
            ticket: w(5),
        });
    }

    /// Write the parts receivers asked for and we claim, each answered with PUT_FIN.
    ///
    /// Not while we have rendezvous reads of our own to do (both directions busy, as in
    /// osu_bibw): our core is then not idle, and helping only adds the PUT's round trip. The
    /// receiver, finding the ticket unclaimed after its half, reads the rest itself.
    pub(super) fn run_puts(&mut self, btls: &mut [Box<dyn Btl>]) {
        let busy = !self.gets.is_empty();
        for p in std::mem::take(&mut self.puts) {
            let ep = self.endpoints[p.from];
            if busy || !btls[ep.btl].coop_claim(ep.peer, p.ticket, true) {
                // The receiver read it all itself: nothing to write, nothing to answer.
                continue;
            }
            let mut whole = None;
            let result = match self.reqs.get(p.sreq) {
                Some(Request {
                    kind: Kind::Send { buf, len },
                    layout: None,
                    complete: false,
                    ..
                }) if p.off.checked_add(p.len).is_some_and(|e| e <= *len) => {
                    // SAFETY: a rendezvous send keeps its contiguous buffer valid and unmodified
                    // until the FIN, which the receiver sends only after our PUT_FIN (we hold
                    // the claim, so it waits for it); off + len <= len was checked.
                    let local = unsafe { std::slice::from_raw_parts(buf.add(p.off), p.len) };
                    if p.off == 0 && p.len == *len {
                        whole = Some((*buf as usize, *len));
                    }
                    match btls[ep.btl].put(ep.peer, p.addr.wrapping_add(p.off), local) {
                        Ok(()) => PUT_DONE,
                        Err(_) => PUT_REFUSED,
                    }
                }
                _ => PUT_REFUSED,
            };
            // All of it written (a receive left whole to us, `Coop::Delegated`): the send is
            // over now, and the receiver, told by PUT_FIN, sends no FIN. A rank computing
            // beside its progress thread then needs no turn to release us.
            if let (Some((buf, len)), PUT_DONE) = (whole, result) {
                self.unexpose.push((ep.btl, ep.peer, buf, len));
                self.rndv_out[p.from] = self.rndv_out[p.from].saturating_sub(1);
                self.complete(p.sreq);
            }
            let words = wire::encode_words([p.rreq, result]);
            self.ctrl(p.from, wire::PUT_FIN, words, wire::PUT_FIN_LEN);
            self.push_queue(btls, p.from);
        }
    }
}
