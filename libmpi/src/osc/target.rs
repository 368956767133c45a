//! The target side: receive the window's requests in arrival order and apply each one
//! whole before taking the next (so accumulates are atomic per element and each origin's
//! operations stay in order); answer gets, locks and flushes on the reply context.

use super::wire::{self, Hdr};
use super::{Incoming, Window};
use crate::datatype::Msg;
use crate::pml::{Pml, Started, ANY_SOURCE, ANY_TAG};

/// Take and apply what arrived for `win`; returns how many requests were applied.
pub(super) fn progress(win: &mut Window, pml: &mut Pml) -> usize {
    let mut n = 0;
    loop {
        if let Some(inc) = win.cur.take() {
            if !pml.is_complete(inc.req) {
                win.cur = Some(inc);
                return n;
            }
            let st = pml.take(inc.req).unwrap_or_default();
            if inc.apply {
                let mut buf = inc.buf;
                // SAFETY: the completed receive wrote the whole message.
                unsafe { buf.set_len(inc.len) };
                apply(win, pml, st.source, st.tag, &buf);
            }
            n += 1;
            continue;
        }
        let Some((msg, st)) = pml.improbe(win.ctx, ANY_SOURCE, ANY_TAG) else {
            return n;
        };
        // Not zeroed: the receive writes all of it before anything reads it (`set_len`).
        let mut buf = Vec::<u8>::with_capacity(st.count);
        // SAFETY: `buf`'s block has room for st.count bytes and lives in `win.cur` (or here)
        // until the receive completes; a Vec's heap block does not move when the Vec does.
        match unsafe { pml.mrecv_msg(msg, Msg::bytes(buf.as_mut_ptr(), st.count)) } {
            Some(Started::Done(s)) => {
                // SAFETY: the completed receive wrote the whole message, st.count bytes.
                unsafe { buf.set_len(st.count) };
                apply(win, pml, s.source, s.tag, &buf);
                n += 1;
            }
            Some(Started::Pending(req)) => {
                win.cur = Some(Incoming {
                    req,
                    buf,
                    len: st.count,
                    apply: true,
                });
                return n;
            }
            None => return n,
        }
    }
}

/// The address of target offset `off` (an address itself in a dynamic window).
fn addr(win: &Window, off: i64) -> *mut u8 {
    (win.base as i64).wrapping_add(off) as usize as *mut u8
}

/// Whether the blocks lie inside this rank's window memory.
fn in_bounds(win: &Window, blocks: &[(i64, u64)]) -> bool {
    blocks.iter().all(|&(off, len)| {
        let len = len as usize;
        if win.flavor == super::FLAVOR_DYNAMIC {
            // Covered by attached ranges, possibly several adjacent ones.
            let (mut a, end) = (off as usize, (off as usize).saturating_add(len));
            while a < end {
                match win.attached.iter().find(|&&(b, l)| a >= b && a < b + l) {
                    Some(&(b, l)) => a = b + l,
                    None => return false,
                }
            }
            true
        } else {
            off >= 0
                && (off as usize)
                    .checked_add(len)
                    .is_some_and(|e| e <= win.size)
        }
    })
}

/// Gather the target blocks into one packed buffer.
fn pack(win: &Window, blocks: &[(i64, u64)]) -> Vec<u8> {
    let total: u64 = blocks.iter().map(|b| b.1).sum();
    let mut v = Vec::with_capacity(total as usize);
    for &(off, len) in blocks {
        // SAFETY: checked in bounds of the window memory, which the window owner keeps
        // valid while the window exists.
        v.extend_from_slice(unsafe { std::slice::from_raw_parts(addr(win, off), len as usize) });
    }
    v
}

/// Scatter packed bytes over the target blocks.
fn unpack(win: &Window, blocks: &[(i64, u64)], data: &[u8]) {
    let mut at = 0;
    for &(off, len) in blocks {
        let len = len as usize;
        let Some(src) = data.get(at..at + len) else {
            return;
        };
        // SAFETY: checked in bounds, as in `pack`; MPI makes concurrent local access to the
        // same bytes during an epoch erroneous.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), addr(win, off), len) };
        at += len;
    }
}

/// The op applied element by element: target = origin op target (MPI_REPLACE, MPI_NO_OP too).
fn accumulate(win: &Window, h: &Hdr, blocks: &[(i64, u64)], data: &[u8]) {
    let Some(dt) = crate::datatype::lookup(h.dt as usize) else {
        return;
    };
    let Ok(op) = crate::op::lookup(h.arg as usize) else {
        return;
    };
    let total: u64 = blocks.iter().map(|b| b.1).sum();
    if total != data.len() as u64 || dt.size == 0 {
        return;
    }
    // In place when every block holds whole elements of a type without padding.
    if pair_shape(dt.handle).is_none() && blocks.iter().all(|b| b.1 % dt.size as u64 == 0) {
        let mut at = 0;
        for &(off, len) in blocks {
            let len = len as usize;
            // SAFETY: checked in bounds of the window memory (see `pack`).
            let t = unsafe { std::slice::from_raw_parts_mut(addr(win, off), len) };
            crate::op::apply(&op, dt, len / dt.size, &data[at..at + len], t);
            at += len;
        }
        return;
    }
    let mut cur = pack(win, blocks);
    combine(&op, dt, data, &mut cur);
    unpack(win, blocks, &cur);
}

/// `cur = data op cur` over packed elements of `dt` (the MINLOC/MAXLOC pairs travel packed
/// but the op works on their C struct, padding included).
pub(super) fn combine(
    op: &crate::op::Op,
    dt: crate::datatype::Datatype,
    data: &[u8],
    cur: &mut Vec<u8>,
) {
    if data.len() != cur.len() || dt.size == 0 {
        return;
    }
    match pair_shape(dt.handle) {
        Some((vlen, ioff)) => {
            let elem = vlen + 4;
            let count = cur.len() / elem;
            let (a, mut b) = (
                widen(data, vlen, ioff, dt.size),
                widen(cur, vlen, ioff, dt.size),
            );
            crate::op::apply(op, dt, count, &a, &mut b);
            let mut out = Vec::with_capacity(cur.len());
            for e in b.chunks_exact(dt.size) {
                out.extend_from_slice(&e[..vlen]);
                out.extend_from_slice(&e[ioff..ioff + 4]);
            }
            *cur = out;
        }
        None => {
            let count = cur.len() / dt.size;
            crate::op::apply(op, dt, count, data, cur);
        }
    }
}

/// The MINLOC/MAXLOC pair types with padding: (value bytes, offset of the int).
pub(super) fn pair_shape(h: usize) -> Option<(usize, usize)> {
    match h {
        0x229 | 0x22a => Some((8, 8)),
        0x22c => Some((2, 4)),
        0x22d => Some((16, 16)),
        _ => None,
    }
}

/// Packed (value, int) pairs laid out as their C struct of `size` bytes.
fn widen(packed: &[u8], vlen: usize, ioff: usize, size: usize) -> Vec<u8> {
    let mut v = vec![0u8; packed.len() / (vlen + 4) * size];
    for (p, e) in packed.chunks_exact(vlen + 4).zip(v.chunks_exact_mut(size)) {
        e[..vlen].copy_from_slice(&p[..vlen]);
        e[ioff..ioff + 4].copy_from_slice(&p[vlen..]);
    }
    v
}

fn apply(win: &mut Window, pml: &mut Pml, src: i32, kind: i32, body: &[u8]) {
    let Some((h, blocks, data)) = wire::decode(body) else {
        eprintln!("rmpi: one-sided: malformed request from rank {src} ignored");
        return;
    };
    let reply = h.reply as i32;

    let rctx = win.rctx;
    if matches!(
        kind,
        wire::PUT | wire::GET | wire::ACC | wire::GACC | wire::CAS
    ) && !in_bounds(win, &blocks)
    {
        eprintln!(
            "rmpi: one-sided: rank {src} accessed memory outside rank {}'s window; ignored",
            win.rank
        );
        if matches!(kind, wire::GET | wire::GACC | wire::CAS) {
            // The origin waits for a reply: send zeros of the requested size.
            let total: u64 = blocks.iter().map(|b| b.1).sum();
            let len = if kind == wire::CAS {
                data.len() / 2
            } else {
                total as usize
            };
            win.send(pml, src, rctx, reply, vec![0; len]);
        }
        return;
    }
    match kind {
        wire::PUT => unpack(win, &blocks, data),
        wire::PUT_DIRECT => {
            // The origin's next message holds the data: receive it into the window (or, out
            // of bounds, into a scratch buffer that is dropped). Nothing else is applied
            // until it has arrived, which keeps every origin's order.
            let (dst, len, scratch) = match blocks.as_slice() {
                [(off, len)] if in_bounds(win, &blocks) => {
                    (addr(win, *off), *len as usize, Vec::new())
                }
                _ => {
                    let len = h.dt as usize;
                    let mut v = Vec::<u8>::with_capacity(len);
                    (v.as_mut_ptr(), len, v)
                }
            };
            // SAFETY: window memory checked in bounds (kept valid by the window's owner), or
            // the scratch buffer moved into `win.cur` until the receive completes.
            let r = unsafe { pml.irecv(dst, len, win.ctx, src, wire::DATA) };
            if let Started::Pending(req) = r {
                win.cur = Some(Incoming {
                    req,
                    buf: scratch,
                    len: 0,
                    apply: false,
                });
            }
        }
        wire::GET => {
            let v = pack(win, &blocks);
            win.send(pml, src, rctx, reply, v);
        }
        wire::ACC => accumulate(win, &h, &blocks, data),
        wire::GACC => {
            let old = pack(win, &blocks);
            accumulate(win, &h, &blocks, data);
            win.send(pml, src, rctx, reply, old);
        }
        wire::CAS => {
            // data: the new value, then the compare value; one element.
            let old = pack(win, &blocks);
            let half = data.len() / 2;
            if old.len() == half && old == data[half..] {
                unpack(win, &blocks, &data[..half]);
            }
            win.send(pml, src, rctx, reply, old);
        }
        wire::LOCK => {
            let excl = h.arg == 1;
            if win.lock.queue.is_empty() && grantable(win, excl) {
                grant(win, pml, src, excl, h.reply);
            } else {
                win.lock.queue.push_back((src, excl, h.reply));
            }
        }
        wire::UNLOCK => {
            if win.lock.exclusive == Some(src) {
                win.lock.exclusive = None;
            } else {
                win.lock.shared = win.lock.shared.saturating_sub(1);
            }
            win.send(pml, src, rctx, reply, Vec::new());
            while let Some(&(o, excl, tag)) = win.lock.queue.front() {
                if !grantable(win, excl) {
                    break;
                }
                win.lock.queue.pop_front();
                grant(win, pml, o, excl, tag);
            }
        }
        wire::FLUSH => win.send(pml, src, rctx, reply, Vec::new()),
        wire::FENCE => win.fence_in[src as usize] += 1,
        wire::POST => win.post_in[src as usize] += 1,
        wire::COMPLETE => win.complete_in[src as usize] += 1,
        _ => eprintln!("rmpi: one-sided: unknown request {kind} from rank {src} ignored"),
    }
}

fn grantable(win: &Window, excl: bool) -> bool {
    win.lock.exclusive.is_none() && (!excl || win.lock.shared == 0)
}

fn grant(win: &mut Window, pml: &mut Pml, origin: i32, excl: bool, tag: u64) {
    if excl {
        win.lock.exclusive = Some(origin);
    } else {
        win.lock.shared += 1;
    }
    win.send(pml, origin, win.rctx, tag as i32, Vec::new());
}
