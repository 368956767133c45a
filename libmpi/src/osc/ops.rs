//! The origin side of the communication calls: describe the target memory as blocks, pack
//! the origin data into the request, and receive replies straight into the origin buffer.

use std::sync::Arc;

use super::wire::{self, Hdr};
use super::{direct, rdma, rdma_atomic, with_win, Window, FLAVOR_DYNAMIC};
use crate::datatype::{Datatype, Layout, Msg};
use crate::error::{err, ErrorClass, Result};
use crate::pml::{ReqId, Started};
use crate::runtime::Runtime;

/// MPI_NO_OP: Get_accumulate then only reads.
const OP_NO_OP: usize = 0x3d;

/// The target of an operation: window rank, displacement (in its disp units), and `count`
/// elements of a datatype there.
pub struct Target {
    pub rank: i32,
    pub disp: isize,
    pub count: usize,
    pub layout: Arc<Layout>,
}

/// The target blocks (offsets from the target's window base, or addresses in a dynamic
/// window), adjacent ones merged, and their total length; checked against the window.
fn blocks(w: &Window, t: &Target) -> Result<(Vec<(i64, u64)>, usize)> {
    if t.rank < 0 || t.rank >= w.size() {
        return err(
            ErrorClass::Rank,
            format!(
                "target rank {} is not in the window (size {})",
                t.rank,
                w.size()
            ),
        );
    }
    let peer = w.peers[t.rank as usize];
    let start = (t.disp as i64).wrapping_mul(peer.disp_unit as i64);
    let ext = t.layout.extent() as i64;
    let mut v: Vec<(i64, u64)> = Vec::new();
    let mut total = 0usize;
    // Elements that form one run (predefined types, contiguous ones): one block at once.
    let run = if t.count == 0 {
        None
    } else {
        t.layout.contiguous_run(t.count)
    };
    if let Some((off, len)) = run {
        if len > 0 {
            v.push((start + off as i64, len as u64));
            total = len;
        }
    }
    for i in 0..if run.is_some() { 0 } else { t.count as i64 } {
        let e = start + i * ext;
        t.layout.for_each_block(|off, len| {
            if len == 0 {
                return;
            }
            let off = e + off as i64;
            total += len;
            match v.last_mut() {
                Some(last) if last.0 + last.1 as i64 == off => last.1 += len as u64,
                _ => v.push((off, len as u64)),
            }
        });
    }
    if w.flavor != FLAVOR_DYNAMIC {
        for &(off, len) in &v {
            if off < 0 || off as u64 + len > peer.size as u64 {
                return err(
                    ErrorClass::RmaRange,
                    format!(
                        "target bytes [{off}, {}) are outside rank {}'s window of {} bytes",
                        off as u64 + len,
                        t.rank,
                        peer.size
                    ),
                );
            }
        }
    }
    Ok((v, total))
}

fn same_size(origin: usize, target: usize) -> Result<()> {
    if origin != target {
        return err(
            ErrorClass::Type,
            format!("the origin describes {origin} bytes but the target {target}"),
        );
    }
    Ok(())
}

/// Send a request carrying `data` (packed from `origin`, or nothing).
fn send_request(
    rt: &mut Runtime,
    w: &mut Window,
    kind: i32,
    h: Hdr,
    blocks: &[(i64, u64)],
    origin: &[&Msg],
    rank: i32,
) {
    let len: usize = origin.iter().map(|m| m.len).sum();
    let (mut buf, mut off) = wire::encode(h, blocks, len);
    for m in origin {
        // SAFETY: the caller's buffer holds the message (the MPI call's contract); we copy
        // it out before returning, so the origin buffer is free at once.
        unsafe { m.read(0, &mut buf[off..off + m.len]) };
        off += m.len;
    }
    let ctx = w.ctx;
    w.send(&mut rt.pml, rank, ctx, kind, buf);
}

/// Puts of at least this many bytes into one contiguous target block send the origin data
/// itself as a second message, received straight into the window: no copy at either end.
const DIRECT_MIN: usize = 64 * 1024;

/// MPI_Put (MPI_Rput with `user`: a request that completes when the data has left).
pub fn put(
    rt: &mut Runtime,
    id: usize,
    origin: Msg,
    t: Target,
    user: bool,
) -> Result<Option<ReqId>> {
    with_win(id, |w| {
        let (b, total) = blocks(w, &t)?;
        w.check_access(t.rank)?;
        same_size(origin.len, total)?;
        if let Some(d) = &w.direct {
            direct::put(d, &origin, t.rank, &b)?;
            return Ok(None);
        }
        if let Some(r) = w.rdma.as_ref().filter(|r| r.takes(t.rank, w.rank, &b)) {
            if rdma::put(rt, r, w.world[t.rank as usize], &origin, t.rank, &b)? {
                return Ok(None);
            }
        }
        w.unacked[t.rank as usize] += 1;
        if total >= DIRECT_MIN && b.len() == 1 {
            let h = Hdr {
                dt: total as u64,
                ..Hdr::default()
            };
            send_request(rt, w, wire::PUT_DIRECT, h, &b, &[], t.rank);
            // SAFETY: MPI keeps the origin buffer unmodified until the put completes, which
            // every synchronisation call (and the request) waits for.
            return Ok(unsafe { w.send_data(&mut rt.pml, t.rank, origin, user) });
        }
        send_request(rt, w, wire::PUT, Hdr::default(), &b, &[&origin], t.rank);
        Ok(user.then(|| {
            rt.pml
                .request_for(Started::Done(crate::pml::Status::default()))
        }))
    })
}

/// MPI_Accumulate with predefined `op` over basic type `dt`.
pub fn accumulate(
    rt: &mut Runtime,
    id: usize,
    origin: Msg,
    t: Target,
    op: usize,
    dt: Datatype,
) -> Result<()> {
    with_win(id, |w| {
        let (b, total) = blocks(w, &t)?;
        w.check_access(t.rank)?;
        same_size(origin.len, total)?;
        if let Some(d) = &w.direct {
            return direct::accumulate(d, Some(&origin), None, t.rank, &b, total, op, dt);
        }
        if let Some(r) = w
            .rdma
            .as_ref()
            .filter(|r| rdma_atomic::takes(r, Some(dt.handle), t.rank, &b))
        {
            let (world, me) = (&w.world, w.rank);
            return rdma_atomic::accumulate(
                rt,
                r,
                world,
                me,
                Some(&origin),
                None,
                t.rank,
                &b,
                op,
                dt,
            );
        }
        let h = Hdr {
            arg: op as u64,
            dt: dt.handle as u64,
            ..Hdr::default()
        };
        send_request(rt, w, wire::ACC, h, &b, &[&origin], t.rank);
        w.unacked[t.rank as usize] += 1;
        Ok(())
    })
}

/// Post the reply's receive into `result`, then send the request. The receive is the
/// operation's completion.
#[allow(clippy::too_many_arguments)]
fn with_reply(
    rt: &mut Runtime,
    w: &mut Window,
    kind: i32,
    mut h: Hdr,
    b: &[(i64, u64)],
    origin: &[&Msg],
    result: Msg,
    rank: i32,
) -> Started {
    let tag = w.reply_tag();
    h.reply = tag as u64;
    // SAFETY: the result buffer stays valid until the operation completes (the MPI call's
    // contract: until the epoch ends or the request completes).
    let r = unsafe { rt.pml.irecv_msg(result, w.rctx, rank, tag) };
    send_request(rt, w, kind, h, b, origin, rank);
    r
}

/// Track `r` as an internal completion (`user` false) or hand out a user request for it.
fn finish(rt: &mut Runtime, w: &mut Window, r: Started, user: bool) -> Option<ReqId> {
    if user {
        return Some(w.link(&mut rt.pml, r));
    }
    if let Started::Pending(q) = r {
        w.gets.push(q);
    }
    None
}

/// MPI_Get (or MPI_Rget with `user`).
pub fn get(
    rt: &mut Runtime,
    id: usize,
    origin: Msg,
    t: Target,
    user: bool,
) -> Result<Option<ReqId>> {
    with_win(id, |w| {
        let (b, total) = blocks(w, &t)?;
        w.check_access(t.rank)?;
        same_size(origin.len, total)?;
        if let Some(d) = &w.direct {
            direct::get(d, &origin, t.rank, &b)?;
            return Ok(None);
        }
        if let Some(r) = w.rdma.as_ref().filter(|r| r.takes(t.rank, w.rank, &b)) {
            if rdma::get(rt, r, w.world[t.rank as usize], &origin, t.rank, &b)? {
                return Ok(None);
            }
        }
        let r = with_reply(rt, w, wire::GET, Hdr::default(), &b, &[], origin, t.rank);
        Ok(finish(rt, w, r, user))
    })
}

/// MPI_Get_accumulate / MPI_Fetch_and_op: the old target data into `result`, then the op.
#[allow(clippy::too_many_arguments)]
pub fn get_accumulate(
    rt: &mut Runtime,
    id: usize,
    origin: Msg,
    result: Msg,
    t: Target,
    op: usize,
    dt: Datatype,
    user: bool,
) -> Result<Option<ReqId>> {
    with_win(id, |w| {
        let (b, total) = blocks(w, &t)?;
        w.check_access(t.rank)?;
        same_size(result.len, total)?;
        let no_op = op == OP_NO_OP;
        if !no_op {
            same_size(origin.len, total)?;
        }
        if let Some(d) = &w.direct {
            let o = (!no_op).then_some(&origin);
            direct::accumulate(d, o, Some(&result), t.rank, &b, total, op, dt)?;
            return Ok(None);
        }
        if let Some(r) = w
            .rdma
            .as_ref()
            .filter(|r| rdma_atomic::takes(r, Some(dt.handle), t.rank, &b))
        {
            let o = (!no_op).then_some(&origin);
            let (world, me) = (&w.world, w.rank);
            rdma_atomic::accumulate(rt, r, world, me, o, Some(&result), t.rank, &b, op, dt)?;
            return Ok(None);
        }
        let h = Hdr {
            arg: op as u64,
            dt: dt.handle as u64,
            ..Hdr::default()
        };
        let data: &[&Msg] = if no_op { &[] } else { &[&origin] };
        let r = with_reply(rt, w, wire::GACC, h, &b, data, result, t.rank);
        Ok(finish(rt, w, r, user))
    })
}

/// MPI_Compare_and_swap: one element of `dt`.
pub fn compare_and_swap(
    rt: &mut Runtime,
    id: usize,
    origin: Msg,
    compare: Msg,
    result: Msg,
    t: Target,
) -> Result<()> {
    with_win(id, |w| {
        let (b, total) = blocks(w, &t)?;
        w.check_access(t.rank)?;
        same_size(result.len, total)?;
        if let Some(d) = &w.direct {
            return direct::compare_and_swap(d, &origin, &compare, &result, t.rank, &b, total);
        }
        if let Some(r) = w
            .rdma
            .as_ref()
            .filter(|r| b.len() == 1 && rdma_atomic::takes(r, t.layout.basic_type(), t.rank, &b))
        {
            let (world, me, off) = (&w.world, w.rank, b[0].0);
            return rdma_atomic::compare_and_swap(
                rt, r, world, me, &origin, &compare, &result, t.rank, off,
            );
        }
        let r = with_reply(
            rt,
            w,
            wire::CAS,
            Hdr::default(),
            &b,
            &[&origin, &compare],
            result,
            t.rank,
        );
        finish(rt, w, r, false);
        Ok(())
    })
}
