//! The few internal exchanges communicator creation needs, written directly on the pml so they
//! do not depend on the general collectives: an allgather of small integer vectors over a
//! communicator's collective context, under a tag no user or collective message can carry.

use crate::error::Result;
use crate::pml::Started;
use crate::runtime::Runtime;

/// Negative, so never a valid user tag (checked) nor ANY_TAG (-2).
const AGREE_TAG: i32 = -1000;

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
        let (n, me, ctx, group) = (c.size() as usize, c.rank, c.coll_ctx(), c.group.clone());
        let k = mine.len();
        let mut all = vec![0u8; n * k * 4];
        all[me as usize * k * 4..(me as usize + 1) * k * 4].copy_from_slice(&to_bytes(mine));
        if me == 0 {
            let mut recvs: Vec<Started> = Vec::with_capacity(n);
            for (r, chunk) in all.chunks_mut(k * 4).enumerate().skip(1) {
                // SAFETY: `chunk` is part of `all`, which outlives the receive: it is waited
                // for below before `all` is read or dropped.
                recvs.push(unsafe {
                    self.pml
                        .irecv(chunk.as_mut_ptr(), chunk.len(), ctx, r as i32, AGREE_TAG)
                });
            }
            for r in recvs {
                self.finish(r)?;
            }
            let mut sends = Vec::with_capacity(n);
            for &w in &group[1..] {
                // SAFETY: `all` is not modified until every send has finished (below).
                sends.push(unsafe {
                    self.pml
                        .isend(all.as_ptr(), all.len(), w as usize, ctx, 0, AGREE_TAG)
                });
            }
            for s in sends {
                self.finish(s)?;
            }
        } else {
            let out = to_bytes(mine);
            // SAFETY: `out` lives until the send is finished below.
            let s = unsafe {
                self.pml.isend(
                    out.as_ptr(),
                    out.len(),
                    group[0] as usize,
                    ctx,
                    me,
                    AGREE_TAG,
                )
            };
            // SAFETY: `all` is not touched until the receive is finished below.
            let r = unsafe {
                self.pml
                    .irecv(all.as_mut_ptr(), all.len(), ctx, 0, AGREE_TAG)
            };
            self.finish(s)?;
            self.finish(r)?;
        }
        Ok(from_bytes(&all))
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
