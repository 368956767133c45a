//! The posted-receive queue. A few posted receives (the latency path) sit in a short list
//! scanned in order. Past `SMALL` of them the queue becomes an index, so that matching an
//! arriving message does not scan every posted receive: receives naming source and tag sit in
//! a bucket per (ctx, source, tag), ANY_SOURCE receives in a bucket per (ctx, tag), and only
//! ANY_TAG receives in a list that is scanned. Each receive gets a sequence number at posting;
//! the earliest posted of the (at most three) candidates wins, which is MPI's matching order.
//! The index turns back into the list once empty.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use super::wire::MatchHdr;
use super::{matches, ReqId, ANY_SOURCE, ANY_TAG};

/// Posted receives kept in the plain list before switching to the index. A window of
/// receives (OSU-style benchmarks post 64) stays a list: messages arrive in posting order, so
/// the scan stops at the first entry, which costs less than hashing into the index.
const SMALL: usize = 64;

/// A small multiplicative hasher for the integer keys (the default SipHash would cost more
/// than the rest of matching on the latency path). Also the collectives' sequence table's.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    fn write_i32(&mut self, v: i32) {
        self.write_u64(v as u32 as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type Map<K> = HashMap<K, VecDeque<(u64, ReqId)>, BuildHasherDefault<KeyHasher>>;

/// A list-mode entry, (seq, req, ctx, src, tag) in three words. Built from whole words, so
/// that `VecDeque::push_back`, which copies it out of line with word loads, reads back what
/// word stores wrote: from five narrower fields those loads stalled on store forwarding (8 %
/// of the receiver's time in osu_bw's window of 8-byte messages).
#[derive(Clone, Copy)]
struct Entry {
    seq: u64,
    req_ctx: u64,
    src_tag: u64,
}

impl Entry {
    #[inline(always)]
    fn new(seq: u64, req: ReqId, ctx: u32, src: i32, tag: i32) -> Entry {
        Entry {
            seq,
            req_ctx: req as u64 | (ctx as u64) << 32,
            src_tag: src as u32 as u64 | (tag as u32 as u64) << 32,
        }
    }

    #[inline(always)]
    fn req(&self) -> ReqId {
        self.req_ctx as ReqId
    }

    /// (seq, req, ctx, src, tag).
    #[inline(always)]
    fn fields(&self) -> (u64, ReqId, u32, i32, i32) {
        (
            self.seq,
            self.req(),
            (self.req_ctx >> 32) as u32,
            self.src_tag as u32 as i32,
            (self.src_tag >> 32) as u32 as i32,
        )
    }

    #[inline(always)]
    fn matches(&self, h: &MatchHdr) -> bool {
        let (_, _, ctx, src, tag) = self.fields();
        matches(ctx, src, tag, h)
    }
}

#[derive(Default)]
pub struct Posted {
    seq: u64,
    /// Receives in the index (0 when in list mode).
    indexed: usize,
    /// List mode, in posting order.
    small: VecDeque<Entry>,
    exact: Map<(u32, i32, i32)>,
    any_src: Map<(u32, i32)>,
    /// ANY_TAG receives: (seq, req, ctx, src or ANY_SOURCE), in posting order.
    any_tag: VecDeque<(u64, ReqId, u32, i32)>,
}

fn front<K: std::hash::Hash + Eq>(m: &Map<K>, k: &K) -> Option<u64> {
    m.get(k).and_then(|q| q.front()).map(|e| e.0)
}

fn pop<K: std::hash::Hash + Eq>(m: &mut Map<K>, k: &K) -> Option<ReqId> {
    let q = m.get_mut(k)?;
    let (_, req) = q.pop_front()?;
    if q.is_empty() {
        m.remove(k);
    }
    Some(req)
}

impl Posted {
    /// No receive is posted.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.indexed == 0 && self.small.is_empty()
    }

    #[inline]
    pub fn push(&mut self, req: ReqId, ctx: u32, src: i32, tag: i32) {
        self.seq += 1;
        if self.indexed == 0 && self.small.len() < SMALL {
            self.small
                .push_back(Entry::new(self.seq, req, ctx, src, tag));
            return;
        }
        self.push_indexed(req, ctx, src, tag);
    }

    /// `push` past the list: kept out of line so the list path stays small.
    #[inline(never)]
    fn push_indexed(&mut self, req: ReqId, ctx: u32, src: i32, tag: i32) {
        if self.indexed == 0 {
            for e in std::mem::take(&mut self.small) {
                let (seq, req, ctx, src, tag) = e.fields();
                self.index(seq, req, ctx, src, tag);
            }
        }
        self.index(self.seq, req, ctx, src, tag);
    }

    fn index(&mut self, seq: u64, req: ReqId, ctx: u32, src: i32, tag: i32) {
        self.indexed += 1;
        let e = (seq, req);
        if tag == ANY_TAG {
            self.any_tag.push_back((seq, req, ctx, src));
        } else if src == ANY_SOURCE {
            self.any_src.entry((ctx, tag)).or_default().push_back(e);
        } else {
            self.exact.entry((ctx, src, tag)).or_default().push_back(e);
        }
    }

    /// Remove and return the earliest posted receive that matches `h`.
    #[inline]
    pub fn take(&mut self, h: &MatchHdr) -> Option<ReqId> {
        if self.indexed == 0 {
            // Messages usually arrive in posting order: try the front before a general scan
            // (VecDeque::remove costs far more than pop_front).
            if let Some(e) = self.small.front() {
                if e.matches(h) {
                    let req = e.req();
                    self.small.pop_front();
                    return Some(req);
                }
            }
            return self.take_scan(h);
        }
        let r = self.take_indexed(h);
        if r.is_some() {
            self.indexed -= 1;
        }
        r
    }

    /// List mode, the front did not match: scan the rest.
    #[inline(never)]
    fn take_scan(&mut self, h: &MatchHdr) -> Option<ReqId> {
        let i = self.small.iter().position(|e| e.matches(h))?;
        self.small.remove(i).map(|e| e.req())
    }

    #[inline(never)]
    fn take_indexed(&mut self, h: &MatchHdr) -> Option<ReqId> {
        let ek = (h.ctx, h.src, h.tag);
        let ak = (h.ctx, h.tag);
        let e = if self.exact.is_empty() {
            None
        } else {
            front(&self.exact, &ek)
        };
        let a = if self.any_src.is_empty() {
            None
        } else {
            front(&self.any_src, &ak)
        };
        let t = self
            .any_tag
            .iter()
            .position(|&(_, _, ctx, src)| ctx == h.ctx && (src == ANY_SOURCE || src == h.src));
        let ts = t.map(|i| self.any_tag[i].0);
        let best = [e, a, ts].into_iter().flatten().min()?;
        if e == Some(best) {
            pop(&mut self.exact, &ek)
        } else if a == Some(best) {
            pop(&mut self.any_src, &ak)
        } else {
            self.any_tag
                .remove(t.expect("the ANY_TAG candidate"))
                .map(|x| x.1)
        }
    }

    /// Remove `req` (a cancelled receive); false if it is not posted.
    pub fn remove(&mut self, req: ReqId) -> bool {
        if let Some(i) = self.small.iter().position(|x| x.req() == req) {
            self.small.remove(i);
            return true;
        }
        let found = if let Some(i) = self.any_tag.iter().position(|x| x.1 == req) {
            self.any_tag.remove(i);
            true
        } else {
            remove_from(&mut self.exact, req) || remove_from(&mut self.any_src, req)
        };
        if found {
            self.indexed -= 1;
        }
        found
    }
}

fn remove_from<K: std::hash::Hash + Eq + Copy>(m: &mut Map<K>, req: ReqId) -> bool {
    let found = m
        .iter()
        .find_map(|(k, q)| q.iter().position(|x| x.1 == req).map(|i| (*k, i)));
    let Some((k, i)) = found else { return false };
    let q = m.get_mut(&k).expect("found above");
    q.remove(i);
    if q.is_empty() {
        m.remove(&k);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(src: i32, tag: i32) -> MatchHdr {
        MatchHdr {
            ctx: 0,
            src,
            tag,
            total: 0,
        }
    }

    #[test]
    fn earliest_posted_candidate_wins() {
        let mut p = Posted::default();
        p.push(1, 0, ANY_SOURCE, ANY_TAG);
        p.push(2, 0, 3, 7);
        p.push(3, 0, ANY_SOURCE, 7);
        p.push(4, 0, 3, 7);
        assert_eq!(p.take(&hdr(3, 7)), Some(1));
        assert_eq!(p.take(&hdr(3, 7)), Some(2));
        assert_eq!(p.take(&hdr(5, 7)), Some(3));
        assert_eq!(p.take(&hdr(5, 7)), None);
        assert_eq!(p.take(&hdr(3, 8)), None);
        assert!(p.remove(4));
        assert!(!p.remove(4));
        assert_eq!(p.take(&hdr(3, 7)), None);
    }

    #[test]
    fn list_and_index_agree() {
        // Past SMALL receives the queue is indexed; the order must not change.
        let mut p = Posted::default();
        let n = 3 * SMALL as u32;
        for i in 0..n {
            let (src, tag) = match i % 3 {
                0 => (1, 5),
                1 => (ANY_SOURCE, 5),
                _ => (1, ANY_TAG),
            };
            p.push(i, 0, src, tag);
        }
        for i in 0..n {
            assert_eq!(p.take(&hdr(1, 5)), Some(i));
        }
        assert_eq!(p.take(&hdr(1, 5)), None);
        assert_eq!(p.indexed, 0);
        p.push(7, 0, 1, 1);
        assert_eq!(p.small.len(), 1, "back to the list once empty");
    }

    #[test]
    fn contexts_are_separate() {
        let mut p = Posted::default();
        p.push(1, 2, ANY_SOURCE, ANY_TAG);
        assert_eq!(p.take(&hdr(0, 0)), None);
        p.push(2, 0, 0, ANY_TAG);
        assert_eq!(p.take(&hdr(1, 0)), None);
        assert_eq!(p.take(&hdr(0, 0)), Some(2));
    }
}
