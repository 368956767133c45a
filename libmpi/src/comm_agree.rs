//! The few internal exchanges communicator creation needs, written directly on the pml so they
//! do not depend on the general collectives: an allgather of small integer vectors over a
//! communicator's collective context, under a tag no user or collective message can carry.

use crate::error::{Error, ErrorClass, Result};
use crate::pml::{Pml, Started, Status};
use crate::runtime::{self, Runtime};

/// Negative, so never a valid user tag (checked) nor ANY_TAG (-2).
const AGREE_TAG: i32 = -1000;

/// Internal tag for MPI_Comm_create_group's user `tag` (>= 0): far below AGREE_TAG and ANY_TAG,
/// distinct for every tag up to TAG_UB - 1024 (larger ones fold onto smaller ones).
fn group_tag(tag: i32) -> i32 {
    const SPAN: i32 = i32::MAX - 1024;
    i32::MIN + tag % SPAN
}

/// Who takes part in an exchange: their ranks in the parent (the match source), their world
/// ranks (where to send), and which of them this process is. Member 0 gathers.
pub(crate) struct Members {
    ctx: u32,
    tag: i32,
    ranks: Vec<i32>,
    worlds: Vec<i32>,
    me: usize,
}

impl Members {
    /// The local group of `comm` (an intercommunicator's, or an intracommunicator), on its
    /// local collective context, under internal tag `tag`.
    pub(crate) fn local(rt: &Runtime, comm: usize, tag: i32) -> Result<Members> {
        let c = rt.comm(comm)?;
        Ok(Members {
            ctx: c.local_coll_ctx(),
            tag,
            ranks: (0..c.size()).collect(),
            worlds: c.group.clone(),
            me: c.rank as usize,
        })
    }

    /// This member's index.
    pub(crate) fn me(&self) -> usize {
        self.me
    }

    /// How many members.
    pub(crate) fn len(&self) -> usize {
        self.ranks.len()
    }
}

fn to_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_bytes(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

impl Runtime {
    /// Every member's `mine` (all the same length), by rank: gathered at rank 0, sent back.
    /// Linear, which is fine for the handful of integers a communicator creation exchanges.
    pub(crate) fn agree_allgather(&mut self, comm: usize, mine: &[i32]) -> Result<Vec<i32>> {
        let members = Members::local(self, comm, AGREE_TAG)?;
        gather_with(self, &members, mine)
    }

    /// `group` (world ranks, all in `comm`) as the members of an exchange over `comm`'s
    /// collective context under `tag`'s internal tag. The caller must be in `group`.
    fn members_among(&self, comm: usize, group: &[i32], tag: i32) -> Result<Members> {
        let c = self.comm(comm)?;
        let me_world = c.group[c.rank as usize];
        let mut ranks = Vec::with_capacity(group.len());
        for w in group {
            let r = c.group.iter().position(|g| g == w).ok_or_else(|| {
                Error::new(
                    ErrorClass::Group,
                    format!("the group holds world rank {w}, which is not in the communicator"),
                )
            })?;
            ranks.push(r as i32);
        }
        let me = group.iter().position(|&w| w == me_world).ok_or_else(|| {
            Error::new(ErrorClass::Group, "the calling process is not in the group")
        })?;
        Ok(Members {
            ctx: c.coll_ctx(),
            tag: group_tag(tag),
            ranks,
            worlds: group.to_vec(),
            me,
        })
    }

    /// A context id pair free at every member of `comm`: the maximum of their next free ids.
    /// Every member of `comm` calls this, also those that will not be in the new communicator.
    pub(crate) fn agree_ctx(&mut self, comm: usize, extra: &[i32]) -> Result<(u32, Vec<i32>)> {
        let mut mine = vec![self.objs.next_ctx() as i32];
        mine.extend_from_slice(extra);
        let all = self.agree_allgather(comm, &mine)?;
        let ctx = all
            .chunks_exact(mine.len())
            .map(|c| c[0] as u32)
            .max()
            .unwrap_or(0);
        self.objs.used_ctx(ctx);
        Ok((ctx, all))
    }
}

/// Where `create_group_ctx` waits: inside the runtime (`Runtime`, borrowed for the whole call)
/// or outside it (`Outside`, under MULTIPLE: other threads' calls go on meanwhile).
pub(crate) trait Waiter {
    fn with<R>(&mut self, f: impl FnOnce(&mut Runtime) -> Result<R>) -> Result<R>;
    fn finish(&mut self, s: Started) -> Result<Status>;
    /// Progress until `done` holds (its error ends the wait).
    fn wait_until(&mut self, done: impl FnMut(&Pml) -> Result<bool>) -> Result<()>;
}

impl Waiter for Runtime {
    fn with<R>(&mut self, f: impl FnOnce(&mut Runtime) -> Result<R>) -> Result<R> {
        f(self)
    }
    fn finish(&mut self, s: Started) -> Result<Status> {
        Runtime::finish(self, s)
    }
    fn wait_until(&mut self, mut done: impl FnMut(&Pml) -> Result<bool>) -> Result<()> {
        let mut res = Ok(());
        self.progress_until(|pml| match done(pml) {
            Ok(d) => d,
            Err(e) => {
                res = Err(e);
                true
            }
        });
        res
    }
}

/// Waits outside the runtime, taking it for each step (`runtime::with`).
pub(crate) struct Outside;

impl Waiter for Outside {
    fn with<R>(&mut self, f: impl FnOnce(&mut Runtime) -> Result<R>) -> Result<R> {
        runtime::with(f)
    }
    fn finish(&mut self, s: Started) -> Result<Status> {
        match s {
            Started::Done(st) => Ok(st),
            Started::Pending(req) => runtime::wait_request(req),
        }
    }
    fn wait_until(&mut self, mut done: impl FnMut(&Pml) -> Result<bool>) -> Result<()> {
        if !runtime::is_multiple() {
            return runtime::with(|rt| rt.wait_until(done));
        }
        runtime::poll_outside(|rt| Ok(done(&rt.pml)?.then_some(())))
    }
}

/// Finish every operation before reporting the first error (no buffer is released while the
/// pml may still use it).
pub(crate) fn finish_each(w: &mut impl Waiter, ops: Vec<Started>) -> Result<()> {
    let mut first = Ok(());
    for op in ops {
        if let Err(e) = w.finish(op) {
            first = first.and(Err(e));
        }
    }
    first
}

/// Every member's `mine` (all the same length), by index: gathered at member 0, sent back;
/// waiting where `w` waits. Members of the parent not in `m` take no part.
pub(crate) fn gather_with(w: &mut impl Waiter, m: &Members, mine: &[i32]) -> Result<Vec<i32>> {
    let (n, k, me) = (m.ranks.len(), mine.len(), m.me);
    let mut all = vec![0u8; n * k * 4];
    all[me * k * 4..(me + 1) * k * 4].copy_from_slice(&to_bytes(mine));
    if me == 0 {
        let ops = w.with(|rt| {
            let mut recvs = Vec::with_capacity(n);
            for (i, chunk) in all.chunks_mut(k * 4).enumerate().skip(1) {
                // SAFETY: `chunk` is part of `all`, which outlives the receive: it is waited
                // for below before `all` is read or dropped.
                recvs.push(unsafe {
                    rt.pml
                        .irecv(chunk.as_mut_ptr(), chunk.len(), m.ctx, m.ranks[i], m.tag)
                });
            }
            Ok(recvs)
        })?;
        finish_each(w, ops)?;
        let ops = w.with(|rt| {
            let mut sends = Vec::with_capacity(n);
            for &dest in &m.worlds[1..] {
                // SAFETY: `all` is not modified until every send has finished (below).
                sends.push(unsafe {
                    rt.pml.isend(
                        all.as_ptr(),
                        all.len(),
                        dest as usize,
                        m.ctx,
                        m.ranks[0],
                        m.tag,
                    )
                });
            }
            Ok(sends)
        })?;
        finish_each(w, ops)?;
    } else {
        let out = to_bytes(mine);
        let ops = w.with(|rt| {
            // SAFETY: `out` lives until the send is finished below.
            let s = unsafe {
                rt.pml.isend(
                    out.as_ptr(),
                    out.len(),
                    m.worlds[0] as usize,
                    m.ctx,
                    m.ranks[me],
                    m.tag,
                )
            };
            // SAFETY: `all` is not touched until the receive is finished below.
            let r = unsafe {
                rt.pml
                    .irecv(all.as_mut_ptr(), all.len(), m.ctx, m.ranks[0], m.tag)
            };
            Ok(vec![s, r])
        })?;
        finish_each(w, ops)?;
    }
    Ok(from_bytes(&all))
}

/// `data` (at most `cap` integers) from member `root` of `m` to the others; waiting where `w`
/// waits. Linear: a few integers.
pub(crate) fn bcast_with(
    w: &mut impl Waiter,
    m: &Members,
    root: usize,
    data: Vec<i32>,
    cap: usize,
) -> Result<Vec<i32>> {
    if m.me == root {
        let out = to_bytes(&data);
        let ops = w.with(|rt| {
            let mut sends = Vec::new();
            for (i, &dest) in m.worlds.iter().enumerate() {
                if i != root {
                    // SAFETY: `out` lives until every send is finished below.
                    sends.push(unsafe {
                        rt.pml.isend(
                            out.as_ptr(),
                            out.len(),
                            dest as usize,
                            m.ctx,
                            m.ranks[root],
                            m.tag,
                        )
                    });
                }
            }
            Ok(sends)
        })?;
        finish_each(w, ops)?;
        return Ok(data);
    }
    recv_sized(w, m.ctx, m.ranks[root], m.tag, cap).map(|b| from_bytes(&b))
}

/// The next message from `src` under (`ctx`, `tag`), at most `cap` integers: its size is
/// probed first, so the buffer is what it needs (a group's words may be up to a quarter of a
/// million integers, and zeroing a buffer that large at every step cost more than the
/// exchange itself).
pub(crate) fn recv_sized(
    w: &mut impl Waiter,
    ctx: u32,
    src: i32,
    tag: i32,
    cap: usize,
) -> Result<Vec<u8>> {
    let mut len = 0;
    w.wait_until(|pml| Ok(pml.iprobe(ctx, src, tag).map(|st| len = st.count).is_some()))?;
    if len > cap * 4 {
        return Err(Error::new(
            ErrorClass::Intern,
            format!(
                "an agreement message of {len} bytes (at most {} expected)",
                cap * 4
            ),
        ));
    }
    let mut inp = vec![0u8; len];
    // SAFETY: `inp` lives until the receive is finished.
    let r = w.with(|rt| Ok(unsafe { rt.pml.irecv(inp.as_mut_ptr(), len, ctx, src, tag) }))?;
    let st = w.finish(r)?;
    inp.truncate(st.count);
    Ok(inp)
}

/// MPI_Comm_create_group's context id, among `group`'s members alone (world ranks, all in
/// `comm`; the caller among them); `tag` keeps concurrent calls on overlapping groups apart.
/// Every member sends member 0 its next free id and whether it runs MULTIPLE; member 0 sends
/// back the id. When no member runs MULTIPLE that is the maximum of the next free ids, as for
/// the other creations; otherwise an id of member 0's own space (`own_ctx_block`), since a
/// MULTIPLE member may create other communicators from other threads meanwhile, so its next
/// free id may be taken before this call ends. The same messages at every level, so members at
/// different levels match; `w` says whether this one waits inside or outside the runtime.
pub(crate) fn create_group_ctx(
    w: &mut impl Waiter,
    comm: usize,
    group: &[i32],
    tag: i32,
) -> Result<u32> {
    let mut mine = [0i32; 2];
    let mut reply = [0i32; 1];
    let mut all: Vec<i32> = vec![0; 2 * group.len()];
    // The buffers stay where they are, untouched, until the operations on them are finished.
    let (m, ops) = w.with(|rt| {
        let m = rt.members_among(comm, group, tag)?;
        mine = [rt.objs.next_ctx() as i32, runtime::is_multiple() as i32];
        let mut ops = Vec::new();
        if m.me == 0 {
            for (i, chunk) in all.chunks_mut(2).enumerate().skip(1) {
                // SAFETY: `chunk` (8 bytes of `all`) outlives the receive: finished below
                // before `all` is read.
                ops.push(unsafe {
                    rt.pml
                        .irecv(chunk.as_mut_ptr().cast(), 8, m.ctx, m.ranks[i], m.tag)
                });
            }
        } else {
            // SAFETY: `mine` and `reply` are not touched until both are finished below.
            unsafe {
                ops.push(rt.pml.isend(
                    mine.as_ptr().cast(),
                    8,
                    m.worlds[0] as usize,
                    m.ctx,
                    m.ranks[m.me],
                    m.tag,
                ));
                ops.push(
                    rt.pml
                        .irecv(reply.as_mut_ptr().cast(), 4, m.ctx, m.ranks[0], m.tag),
                );
            }
        }
        Ok((m, ops))
    })?;
    finish_each(w, ops)?;
    if m.me == 0 {
        let ops = w.with(|rt| {
            all[..2].copy_from_slice(&mine);
            let pairs = || all.chunks_exact(2);
            reply[0] = if pairs().any(|p| p[1] != 0) {
                // 0 when the space is exhausted: every member then fails.
                rt.own_ctx_block(1).unwrap_or(0) as i32
            } else {
                let ctx = pairs().map(|p| p[0] as u32).max().unwrap_or(0);
                rt.objs.used_ctx(ctx);
                ctx as i32
            };
            let mut ops = Vec::new();
            for &dest in &m.worlds[1..] {
                // SAFETY: `reply` is not touched until every send is finished below.
                ops.push(unsafe {
                    rt.pml.isend(
                        reply.as_ptr().cast(),
                        4,
                        dest as usize,
                        m.ctx,
                        m.ranks[0],
                        m.tag,
                    )
                });
            }
            Ok(ops)
        })?;
        finish_each(w, ops)?;
    }
    let ctx = reply[0] as u32;
    if ctx == 0 {
        return Err(Error::new(
            ErrorClass::Intern,
            "MPI_Comm_create_group: member 0 of the group has no context ids of its own left",
        ));
    }
    if !crate::comm_idup::is_own(ctx) {
        w.with(|rt| {
            rt.objs.used_ctx(ctx);
            Ok(())
        })?;
    }
    Ok(ctx)
}

/// Every member's `mine` (the same number of words everywhere), by rank, sent directly to
/// every other member under `tag` on `comm`'s collective context (`coll`) or its own: the
/// agreement steps of window and file creation and of the collective file calls. Called
/// outside the runtime: under MPI_THREAD_MULTIPLE the wait gives the runtime to the rank's
/// other threads between turns, so such calls on two communicators from two threads, in any
/// order at each rank, never wait on each other.
pub(crate) fn exchange_words(
    comm: usize,
    coll: bool,
    tag: i32,
    mine: &[u64],
) -> Result<Vec<Vec<u64>>> {
    let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut out: Vec<Vec<u8>> = Vec::new();
    let reqs = runtime::with(|rt| {
        let c = rt.comm(comm)?;
        let (n, me) = (c.size() as usize, c.rank);
        let ctx = if coll { c.coll_ctx() } else { c.ctx };
        let worlds: Vec<usize> = (0..n as i32)
            .map(|r| c.world_of(r))
            .collect::<Result<_>>()?;
        out = vec![vec![0u8; bytes.len()]; n];
        let mut reqs = Vec::new();
        for (r, buf) in out.iter_mut().enumerate() {
            if r as i32 == me {
                buf.copy_from_slice(&bytes);
                continue;
            }
            // SAFETY: `out` outlives the receives: all are waited for below.
            reqs.push(unsafe {
                rt.pml
                    .irecv(buf.as_mut_ptr(), buf.len(), ctx, r as i32, tag)
            });
        }
        for (r, &w) in worlds.iter().enumerate() {
            if r as i32 != me {
                // SAFETY: `bytes` outlives the sends: all are waited for below.
                reqs.push(unsafe { rt.pml.isend(bytes.as_ptr(), bytes.len(), w, ctx, me, tag) });
            }
        }
        Ok(reqs)
    })?;
    // Every request is waited for before the first error is returned: none may outlive the
    // buffers.
    let mut first = Ok(());
    for s in reqs {
        if let Started::Pending(id) = s {
            if let Err(e) = crate::comm_ops::wait_request(id) {
                first = first.and(Err(e));
            }
        }
    }
    first?;
    Ok(out
        .into_iter()
        .map(|b| {
            b.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        })
        .collect())
}
