//! Fragments a transport reads from its socket straight into the receive buffer (tcp:
//! `Btl::enable_placement`): rendezvous DATA, and a whole eager message (MATCH, MATCH_SHORT)
//! that matches a posted receive when its header arrives. Each saves the copy out of the
//! transport's buffer. An eager message is matched at its header, which keeps MPI's order: the
//! transport delivers every earlier frame of that peer first, and nothing else of it until this
//! one is in.

use super::wire::{self, MatchHdr};
use super::{DirectState, Kind, ReqId, Request, State};
use crate::btl::Btl;

/// Fragments of at least this many bytes are read into place: smaller ones cost more in the
/// extra read than the copy they save.
const PLACE_MIN: usize = 16 << 10;

/// The header bytes a transport reads before it asks where the rest goes: the longer of the
/// two headers, so a DATA fragment's head carries its first data bytes too.
const PLACE_HEAD: usize = wire::MATCH_LEN;
const _: () = assert!(wire::DATA_LEN <= PLACE_HEAD);

pub(super) fn enable_placement(b: &mut dyn Btl) -> bool {
    b.enable_placement(PLACE_HEAD, PLACE_MIN)
}

/// An eager message being read into place, and for which receive.
#[derive(Clone, Copy)]
pub(super) struct MatchPlacing {
    hdr: MatchHdr,
    to: Target,
    /// Read into `place_scratch` first (the receive cannot take it as one block).
    scratch: bool,
}

#[derive(Clone, Copy)]
enum Target {
    Req(ReqId),
    /// MPI_Recv's latency path (`State::direct`).
    Direct,
}

impl State {
    /// Where the `rest` bytes after a DATA fragment's head may be read straight into: its
    /// receive's buffer at their offset, when that is contiguous and they fit (else the
    /// fragment comes whole, and `copy_into` cuts or scatters it). The head's data bytes are
    /// copied here.
    fn place_data(&mut self, head: &[u8], rest: usize) -> Option<*mut u8> {
        let (rreq, off) = (wire::word(head, 0) as ReqId, wire::word(head, 1) as usize);
        let first = &head[wire::DATA_LEN..];
        match self.reqs.get(rreq) {
            Some(Request {
                kind:
                    Kind::Recv {
                        buf,
                        cap,
                        rndv: Some(_),
                        ..
                    },
                layout: None,
                ..
            }) if off
                .checked_add(first.len() + rest)
                .is_some_and(|end| end <= *cap) =>
            {
                let dst = buf.wrapping_add(off);
                // SAFETY: irecv's contract: `buf` has `cap` writable bytes owned by this
                // pending rendezvous receive; off + first.len() + rest <= cap was checked.
                unsafe { std::ptr::copy_nonoverlapping(first.as_ptr(), dst, first.len()) };
                Some(dst.wrapping_add(first.len()))
            }
            _ => None,
        }
    }

    /// Where the rest of an eager message from world rank `from` may be read, `first` its
    /// bytes that came with the header `h`: it is matched now. Only a message in one fragment
    /// (`first` and `rest` are all of it); one that matches nothing comes whole, as do the
    /// others (`on_match`).
    fn place_match(
        &mut self,
        from: usize,
        h: MatchHdr,
        first: &[u8],
        rest: usize,
    ) -> Option<*mut u8> {
        self.flow[from].replied = true;
        let total = first.len() + rest;
        if h.total != total as u64 {
            return None;
        }
        let (to, dst) = if self.direct.wants(&h) {
            // Nothing else matches it now, and it can no longer be given up.
            self.direct.state = DirectState::Streaming;
            (
                Target::Direct,
                (total <= self.direct.cap).then_some(self.direct.buf),
            )
        } else {
            let req = self.take_posted(&h)?;
            let dst = match self.reqs.get(req) {
                Some(Request {
                    kind: Kind::Recv { buf, cap, .. },
                    layout: None,
                    ..
                }) if total <= *cap => Some(*buf),
                _ => None,
            };
            (Target::Req(req), dst)
        };
        let scratch = dst.is_none();
        let dst = dst.unwrap_or_else(|| {
            let s = &mut self.place_scratch[from];
            s.resize(total, 0);
            s.as_mut_ptr()
        });
        // SAFETY: `dst` has `total` writable bytes: the receive's contiguous buffer of `cap`
        // >= total bytes (irecv's or recv_direct_begin's contract; the receive is matched,
        // so nothing else writes there), or the scratch vector just sized.
        unsafe { std::ptr::copy_nonoverlapping(first.as_ptr(), dst, first.len()) };
        self.match_placing[from] = Some(MatchPlacing {
            hdr: h,
            to,
            scratch,
        });
        Some(dst.wrapping_add(first.len()))
    }

    /// The eager message from `from` is in: complete its receive.
    fn match_placed(&mut self, from: usize) {
        let Some(p) = self.match_placing[from].take() else {
            return;
        };
        let data = if p.scratch {
            std::mem::take(&mut self.place_scratch[from])
        } else {
            Vec::new()
        };
        match p.to {
            Target::Direct => {
                self.direct.copy_in(0, &data);
                self.direct.finish(&p.hdr);
            }
            Target::Req(req) => {
                self.copy_into(req, 0, &data);
                self.finish_recv(req, &p.hdr);
            }
        }
        if p.scratch {
            self.place_scratch[from] = data;
        }
    }
}

/// The pml's deliveries from a transport that places (`Btl::progress_into`).
pub(super) struct Placer<'a> {
    pub(super) st: &'a mut State,
    pub(super) btl: usize,
}

impl crate::btl::Sink for Placer<'_> {
    fn frag(&mut self, peer: usize, tag: u8, frag: &[u8]) {
        self.st.on_frag(self.btl, peer, tag, frag)
    }

    fn place(&mut self, peer: usize, tag: u8, head: &[u8], rest: usize) -> Option<*mut u8> {
        if head.len() != PLACE_HEAD {
            return None;
        }
        match tag {
            wire::DATA => self.st.place_data(head, rest),
            wire::MATCH => {
                let from = self.st.peer_world[self.btl][peer];
                let h = MatchHdr::decode(head);
                self.st.place_match(from, h, &head[wire::MATCH_LEN..], rest)
            }
            wire::MATCH_SHORT => {
                let from = self.st.peer_world[self.btl][peer];
                let mut h = MatchHdr::decode_short(head);
                h.total = (head.len() - wire::SHORT_LEN + rest) as u64;
                self.st.place_match(from, h, &head[wire::SHORT_LEN..], rest)
            }
            _ => None,
        }
    }

    fn placed(&mut self, peer: usize, tag: u8, head: &[u8], rest: usize) {
        if tag == wire::MATCH || tag == wire::MATCH_SHORT {
            let from = self.st.peer_world[self.btl][peer];
            self.st.match_placed(from);
        } else {
            // A rendezvous receive that has sent its CTS cannot be cancelled: it is still
            // there, and completes only here.
            let first = head.len() - wire::DATA_LEN;
            self.st
                .data_arrived(wire::word(head, 0) as ReqId, first + rest);
        }
    }
}
