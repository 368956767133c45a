//! How two groups agree on a new intercommunicator: each group gathers its members' words and
//! one proposed context id each, the leaders swap their groups' vectors over a link the caller
//! gives (point-to-point for MPI_Intercomm_create and the calls on an intercommunicator, a
//! socket for MPI_Comm_accept/connect), each leader broadcasts the other side's to its group,
//! and the largest proposal is taken.
//!
//! Every member reserves its own proposal, but under MPI_THREAD_MULTIPLE two agreements of one
//! process on different threads may still end on the same largest value (each took it from
//! another process), so a second round checks that the chosen id is free at every member of
//! both groups, and a clash starts again above it. The same messages at every thread level, so
//! members at different levels match; the `Waiter` says whether this member waits inside the
//! runtime or outside it (under MULTIPLE, giving it to the rank's other threads between turns:
//! creations on different communicators from different threads, in any order at each
//! process, then never wait on each other).

use crate::comm_agree::{bcast_with, gather_with, Members, Waiter};
use crate::error::{err, Error, ErrorClass, Result};
use crate::runtime::Runtime;

/// What an agreement gives: the context id (four from it, reserved here) and every member's
/// words (without the proposal), by index in its group.
pub(crate) struct Agreed {
    pub ctx: u32,
    pub local: Vec<i32>,
    pub remote: Vec<i32>,
}

/// Rounds of the context-id check before giving up. Concurrent agreements of one process clash
/// often when the processes enter them in different orders; `jitter` spreads the proposals of
/// the next rounds apart.
const MAX_ROUNDS: u32 = 64;

/// The agreement of the group `m` (whose member `leader` swaps with the other group's leader
/// through `swap`: our words out, theirs back) with the other group; `mine` is this member's
/// words (the same number at every member of both groups) and `cap` the most words the other
/// group may send.
pub(crate) fn agree<W: Waiter>(
    w: &mut W,
    m: &Members,
    leader: usize,
    mine: &[i32],
    cap: usize,
    mut swap: impl FnMut(&mut W, &[i32]) -> Result<Vec<i32>>,
) -> Result<Agreed> {
    let k = mine.len() + 1;
    let at_leader = m.me() == leader;
    let mut floor = 0u32;
    for round in 0..MAX_ROUNDS {
        let proposal = w.with(|rt| Ok(propose(rt, floor + jitter(round))))?;
        let mut words = vec![proposal as i32];
        words.extend_from_slice(mine);
        let local = gather_with(w, m, &words)?;
        let remote = share(w, m, leader, at_leader, cap, |w| {
            let theirs = swap(w, &local)?;
            if theirs.is_empty() || theirs.len() % k != 0 || theirs.len() > cap {
                return err(
                    ErrorClass::Intern,
                    "the other group's leader sent a malformed group",
                );
            }
            Ok(theirs)
        })?;
        if remote.is_empty() || remote.len() % k != 0 {
            return err(
                ErrorClass::Intern,
                "intercommunicator agreement: short reply",
            );
        }
        let ctx = local
            .chunks_exact(k)
            .chain(remote.chunks_exact(k))
            .map(|c| c[0] as u32)
            .max()
            .unwrap_or(0);
        let free = w.with(|rt| Ok(take_if_free(rt, ctx, proposal)))?;
        let frees = gather_with(w, m, &[free as i32])?;
        let both = share(w, m, leader, at_leader, 1, |w| {
            let ours = frees.iter().all(|&f| f == 1) as i32;
            let theirs = swap(w, &[ours])?;
            Ok(vec![(ours == 1 && theirs.first() == Some(&1)) as i32])
        })?;
        if both.first() == Some(&1) {
            let strip = |all: &[i32]| -> Vec<i32> {
                all.chunks_exact(k).flat_map(|c| c[1..].to_vec()).collect()
            };
            return Ok(Agreed {
                ctx,
                local: strip(&local),
                remote: strip(&remote),
            });
        }
        floor = ctx + 4;
    }
    err(
        ErrorClass::Intern,
        format!("no context id free at every member after {MAX_ROUNDS} rounds"),
    )
}

/// What the leader computes (`at_leader_do`, at most `cap` words), broadcast to its group
/// behind a status word: the leader's failure fails every member.
fn share<W: Waiter>(
    w: &mut W,
    m: &Members,
    leader: usize,
    at_leader: bool,
    cap: usize,
    at_leader_do: impl FnOnce(&mut W) -> Result<Vec<i32>>,
) -> Result<Vec<i32>> {
    let mut failed = None;
    let data = if at_leader {
        match at_leader_do(w) {
            Ok(v) => [vec![0], v].concat(),
            Err(e) => {
                let d = vec![-1, e.class as i32];
                failed = Some(e);
                d
            }
        }
    } else {
        Vec::new()
    };
    let got = bcast_with(w, m, leader, data, cap + 1)?;
    if let Some(e) = failed {
        return Err(e);
    }
    match got.first() {
        Some(0) => Ok(got[1..].to_vec()),
        _ => Err(Error::new(
            got.get(1)
                .and_then(|&c| ErrorClass::from_code(c))
                .unwrap_or(ErrorClass::Intern),
            "the group's leader could not reach the other group",
        )),
    }
}

/// How far above its floor a member proposes in `round`: nothing at first, then a random
/// multiple of 4 below 4 * 2^round (at most 256), so that concurrent agreements which clashed
/// do not clash again by entering their proposals in the same orders as before.
fn jitter(round: u32) -> u32 {
    use std::hash::{BuildHasher, Hasher};
    if round == 0 {
        return 0;
    }
    let r = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    4 * (r % (1u64 << round.min(6))) as u32
}

/// This member's proposal: its next free context id (at least `floor`), reserved at once so
/// that no other agreement or communicator of this process proposes or takes it meanwhile.
fn propose(rt: &mut Runtime, floor: u32) -> u32 {
    let c = rt.objs.next_ctx().max(floor);
    rt.reserve_inter_ctx(c);
    c
}

/// Whether the chosen id `ctx` is free here (this member's own proposal, or above every id
/// this process has used or reserved); taken if so.
fn take_if_free(rt: &mut Runtime, ctx: u32, proposal: u32) -> bool {
    let free = ctx == proposal || ctx >= rt.objs.next_ctx();
    if free {
        rt.reserve_inter_ctx(ctx);
    }
    free
}
