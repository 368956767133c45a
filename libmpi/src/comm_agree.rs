//! The few internal exchanges communicator creation needs, written directly on the pml so they
//! do not depend on the general collectives: an allgather of small integer vectors over a
//! communicator's collective context, under a tag no user or collective message can carry.

use crate::error::Result;
use crate::pml::Started;
use crate::runtime::Runtime;

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
struct Members {
    ctx: u32,
    tag: i32,
    ranks: Vec<i32>,
    worlds: Vec<i32>,
    me: usize,
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
        let c = self.comm(comm)?;
        let members = Members {
            // Within the local group (an intercommunicator's local context).
            ctx: c.local_coll_ctx(),
            tag: AGREE_TAG,
            ranks: (0..c.size()).collect(),
            worlds: c.group.clone(),
            me: c.rank as usize,
        };
        self.gather_among(&members, mine)
    }

    /// The allgather among `m`'s members only (members of the parent not in it take no part).
    fn gather_among(&mut self, m: &Members, mine: &[i32]) -> Result<Vec<i32>> {
        let (n, k, me) = (m.ranks.len(), mine.len(), m.me);
        let mut all = vec![0u8; n * k * 4];
        all[me * k * 4..(me + 1) * k * 4].copy_from_slice(&to_bytes(mine));
        if me == 0 {
            let mut recvs: Vec<Started> = Vec::with_capacity(n);
            for (i, chunk) in all.chunks_mut(k * 4).enumerate().skip(1) {
                // SAFETY: `chunk` is part of `all`, which outlives the receive: it is waited
                // for below before `all` is read or dropped.
                recvs.push(unsafe {
                    self.pml
                        .irecv(chunk.as_mut_ptr(), chunk.len(), m.ctx, m.ranks[i], m.tag)
                });
            }
            self.finish_all(recvs)?;
            let mut sends = Vec::with_capacity(n);
            for &w in &m.worlds[1..] {
                // SAFETY: `all` is not modified until every send has finished (below).
                sends.push(unsafe {
                    self.pml.isend(
                        all.as_ptr(),
                        all.len(),
                        w as usize,
                        m.ctx,
                        m.ranks[0],
                        m.tag,
                    )
                });
            }
            self.finish_all(sends)?;
        } else {
            let out = to_bytes(mine);
            // SAFETY: `out` lives until the send is finished below.
            let s = unsafe {
                self.pml.isend(
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
                self.pml
                    .irecv(all.as_mut_ptr(), all.len(), m.ctx, m.ranks[0], m.tag)
            };
            self.finish_all(vec![s, r])?;
        }
        Ok(from_bytes(&all))
    }

    /// Finish every operation before reporting the first error, so no buffer is released while
    /// the pml may still use it.
    fn finish_all(&mut self, ops: Vec<Started>) -> Result<()> {
        let mut first = Ok(());
        for op in ops {
            if let Err(e) = self.finish(op) {
                first = first.and(Err(e));
            }
        }
        first
    }

    /// A context id pair free at every member of `group` (world ranks, all in `comm`), agreed
    /// among them alone over `comm`'s collective context (MPI_Comm_create_group); `tag` keeps
    /// concurrent calls on overlapping groups apart. The caller must be in `group`.
    pub(crate) fn agree_ctx_among(&mut self, comm: usize, group: &[i32], tag: i32) -> Result<u32> {
        let c = self.comm(comm)?;
        let me_world = c.group[c.rank as usize];
        let mut ranks = Vec::with_capacity(group.len());
        for w in group {
            let r = c.group.iter().position(|g| g == w).ok_or_else(|| {
                crate::error::Error::new(
                    crate::error::ErrorClass::Group,
                    format!("the group holds world rank {w}, which is not in the communicator"),
                )
            })?;
            ranks.push(r as i32);
        }
        let me = group.iter().position(|&w| w == me_world).ok_or_else(|| {
            crate::error::Error::new(
                crate::error::ErrorClass::Group,
                "the calling process is not in the group",
            )
        })?;
        let members = Members {
            ctx: c.coll_ctx(),
            tag: group_tag(tag),
            ranks,
            worlds: group.to_vec(),
            me,
        };
        let all = self.gather_among(&members, &[self.objs.next_ctx() as i32])?;
        let ctx = all.iter().map(|&c| c as u32).max().unwrap_or(0);
        self.objs.used_ctx(ctx);
        Ok(ctx)
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
