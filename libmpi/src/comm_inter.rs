//! Intercommunicators: creation (MPI_Intercomm_create, _from_groups), merge, and dup, split and
//! create of an intercommunicator, which give intercommunicators (MPI-4.0 7.6).
//!
//! An intercommunicator is a `Comm` with `remote` set: `group` is the local group, `remote` the
//! other one (world ranks). It takes four context ids, agreed by both groups: `ctx` for
//! point-to-point (the sender's local rank is the match source, which is its rank in the
//! receiver's remote group), `ctx + 1` for collective traffic between the groups and `ctx + 3`
//! for collective steps within a group (`Comm::local_coll_ctx`).
//!
//! Every creation is one agreement (`inter_agree.rs`): small exchanges on the pml within each
//! group (gather at the leader, then a broadcast from it, `comm_agree.rs`) and between the two
//! leaders (`leader_swap`), waiting where the caller's `Waiter` says: outside the runtime from
//! MPI calls, inside it for the callers already there.

use crate::comm::Comm;
use crate::comm_agree::{Members, Waiter};
use crate::error::{err, Error, ErrorClass, Result};
use crate::group::{Group, UNDEFINED};
use crate::inter_agree::{self, Agreed};
use crate::runtime::Runtime;

/// Internal tags (negative: no user message carries them), above `comm_agree`'s group tags.
const LEADER_TAG: i32 = -1001;
/// The steps within each group (`comm_agree::gather_with`, `bcast_with`).
const AGREE_TAG: i32 = -1002;

fn to_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_bytes(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Where the two leaders meet: their point-to-point addresses and the match tag.
struct Link {
    /// World rank of the other leader.
    world: usize,
    ctx: u32,
    /// This leader's rank as the other one names it (the match source), and the other's.
    me: i32,
    other: i32,
    tag: i32,
}

impl Runtime {
    /// An intercommunicator takes `ctx..ctx + 4`.
    pub(crate) fn reserve_inter_ctx(&mut self, ctx: u32) {
        self.objs.used_ctx(ctx + 2);
    }

    pub(crate) fn add_inter(
        &mut self,
        parent: usize,
        ctx: u32,
        group: Vec<i32>,
        rank: i32,
        remote: Vec<i32>,
    ) -> Result<usize> {
        let c = Comm {
            ctx,
            rank,
            group,
            errhandler: self.comm(parent)?.errhandler,
            name: String::new(),
            attrs: Vec::new(),
            topo: None,
            info: crate::info::Info::new(),
            remote: Some(remote),
            all_multiple: None,
        };
        Ok(self.add_comm(c))
    }

    /// MPI_Barrier on an intercommunicator: nobody leaves before every member of both groups
    /// has entered (a local barrier, the leaders' handshake, a local barrier).
    pub(crate) fn inter_barrier(&mut self, comm: usize) -> Result<()> {
        let s = {
            let mut b = crate::coll::Builder::new(self.comm(comm)?, None);
            crate::coll::inter::barrier(&mut b);
            b.finish()
        };
        let id = crate::coll::start_blocking(&mut self.pml, s);
        self.wait(id).map(|_| ())
    }
}

/// Send `mine` to the other leader over `l` and receive its vector (at most `cap` integers),
/// waiting where `w` waits.
fn leader_swap(w: &mut impl Waiter, l: &Link, mine: &[i32], cap: usize) -> Result<Vec<i32>> {
    let out = to_bytes(mine);
    let s = w.with(|rt| {
        // SAFETY: `out` lives until the send is finished below.
        Ok(unsafe {
            rt.pml
                .isend(out.as_ptr(), out.len(), l.world, l.ctx, l.me, l.tag)
        })
    })?;
    let rs = crate::comm_agree::recv_sized(w, l.ctx, l.other, l.tag, cap);
    let ss = w.finish(s);
    let inp = rs?;
    ss?;
    Ok(from_bytes(&inp))
}

/// Every member of intercommunicator `comm` contributes `mine` (the same length everywhere):
/// the local and the remote members' words (by rank) and a context id free at all of them
/// (four ids, reserved). The leaders are the groups' rank 0.
fn inter_agree(w: &mut impl Waiter, comm: usize, mine: &[i32]) -> Result<Agreed> {
    let (m, link, cap) = w.with(|rt| {
        let c = rt.comm(comm)?;
        let link = Link {
            world: need_inter(c)?[0] as usize,
            ctx: c.coll_ctx(),
            me: 0,
            other: 0,
            tag: LEADER_TAG,
        };
        let cap = c.peers().len() * (mine.len() + 1);
        Ok((Members::local(rt, comm, AGREE_TAG)?, link, cap))
    })?;
    inter_agree::agree(w, &m, 0, mine, cap, |w, v| leader_swap(w, &link, v, cap))
}

/// MPI_Intercomm_create: `local` (an intracommunicator) is this side's group; the leaders
/// meet over `peer` (point-to-point, with the user's `tag`).
pub(crate) fn intercomm_create(
    w: &mut impl Waiter,
    local: usize,
    local_leader: i32,
    peer: usize,
    remote_leader: i32,
    tag: i32,
) -> Result<usize> {
    let link = w.with(|rt| {
        let lc = rt.comm(local)?;
        if lc.is_inter() {
            return err(
                ErrorClass::Comm,
                "local_comm of MPI_Intercomm_create must be an intracommunicator",
            );
        }
        if local_leader < 0 || local_leader >= lc.size() {
            return err(
                ErrorClass::Rank,
                format!(
                    "local_leader {local_leader} is out of range (size {})",
                    lc.size()
                ),
            );
        }
        if lc.rank != local_leader {
            return Ok(None);
        }
        if !(0..=crate::runtime::TAG_UB).contains(&tag) {
            return err(ErrorClass::Tag, format!("tag {tag} is invalid"));
        }
        let p = rt.comm(peer)?;
        Ok(Some(Link {
            world: p.world_of(remote_leader)?,
            ctx: p.ctx,
            me: p.rank,
            other: remote_leader,
            tag,
        }))
    })?;
    build_inter(w, local, local_leader, |w, v, cap| {
        let l = link.as_ref().expect("only the leader swaps");
        leader_swap(w, l, v, cap)
    })
}

/// The intercommunicator of `local`'s members (an intracommunicator) and another group whose
/// leader this group's `leader` reaches through `swap` (our words, the most words they may
/// send; theirs back): what MPI_Intercomm_create(_from_groups) and MPI_Comm_accept/connect
/// share. Members are named across jobs by their job, world rank and dynamic-transport address
/// (`dpm::to_global`): the other group may hold spawned processes, whose world ranks here mean
/// nothing there.
pub(crate) fn build_inter<W: Waiter>(
    w: &mut W,
    local: usize,
    leader: i32,
    mut swap: impl FnMut(&mut W, &[i32], usize) -> Result<Vec<i32>>,
) -> Result<usize> {
    let (m, mine, cap) = w.with(|rt| {
        let world_size = rt.comm(crate::comm::WORLD)?.size() as usize;
        // A proposal and a name per member.
        let cap = (1 + crate::dpm::GLOBAL_WORDS) * world_size.max(crate::dpm::MAX_GROUP);
        let c = rt.comm(local)?;
        let me_world = c.group[c.rank as usize];
        let mine = crate::dpm::to_global(rt, me_world)?;
        Ok((Members::local(rt, local, AGREE_TAG)?, mine, cap))
    })?;
    if leader < 0 || leader as usize >= m.len() {
        return err(ErrorClass::Rank, format!("leader {leader} is out of range"));
    }
    let a = inter_agree::agree(w, &m, leader as usize, &mine, cap, |w, v| swap(w, v, cap))?;
    w.with(|rt| {
        let remote = crate::dpm::from_global(rt, &a.remote)?;
        let lc = rt.comm(local)?;
        let (group, rank) = (lc.group.clone(), lc.rank);
        if let Some(w) = remote.iter().find(|w| group.contains(w)) {
            return err(
                ErrorClass::Arg,
                format!("world rank {w} is in both groups of the intercommunicator"),
            );
        }
        rt.add_inter(local, a.ctx, group, rank, remote)
    })
}

/// MPI_Intercomm_create_from_groups: the groups' members meet over MPI_COMM_WORLD (every
/// process of the job is in it), `tag` standing for the string tag.
pub(crate) fn intercomm_from_groups(
    w: &mut impl Waiter,
    local: &Group,
    local_leader: i32,
    remote: &Group,
    remote_leader: i32,
    tag: i32,
) -> Result<usize> {
    if local_leader < 0 || local_leader >= local.size() {
        return err(
            ErrorClass::Rank,
            format!("local_leader {local_leader} is out of range"),
        );
    }
    if remote_leader < 0 || remote_leader >= remote.size() {
        return err(
            ErrorClass::Rank,
            format!("remote_leader {remote_leader} is out of range"),
        );
    }
    let tmp = crate::comm_ops::create_group(w, crate::comm::WORLD, local, tag)?;
    let link = w.with(|rt| {
        let wc = rt.comm(crate::comm::WORLD)?;
        let me = wc.rank;
        Ok((local.members()[local_leader as usize] == me).then(|| {
            let other = remote.members()[remote_leader as usize];
            Link {
                world: other as usize,
                ctx: wc.coll_ctx(),
                me,
                other,
                tag: LEADER_TAG - 1 - (tag & 0xffff),
            }
        }))
    })?;
    let r = build_inter(w, tmp, local_leader, |w, v, cap| {
        let l = link.as_ref().expect("only the leader swaps");
        leader_swap(w, l, v, cap)
    });
    w.with(|rt| {
        rt.comms[tmp] = None;
        Ok(())
    })?;
    r
}

/// MPI_Intercomm_merge: the group with `high` false first; with equal flags, the group
/// whose first member has the lower world rank.
pub(crate) fn intercomm_merge(w: &mut impl Waiter, comm: usize, high: bool) -> Result<usize> {
    w.with(|rt| need_inter(rt.comm(comm)?).map(drop))?;
    let a = inter_agree(w, comm, &[high as i32])?;
    w.with(|rt| {
        let c = rt.comm(comm)?;
        let (lg, rg) = (c.group.clone(), c.peers().to_vec());
        let (lh, rh) = (a.local[0] != 0, a.remote[0] != 0);
        let local_first = if lh != rh { !lh } else { lg[0] < rg[0] };
        let (group, rank) = if local_first {
            ([lg, rg].concat(), c.rank)
        } else {
            ([rg, lg].concat(), c.rank + c.peers().len() as i32)
        };
        let n = rt.child(comm, a.ctx, group, rank)?;
        Ok(rt.add_comm(n))
    })
}

/// MPI_Comm_dup (and idup) of an intercommunicator.
pub(crate) fn inter_dup(w: &mut impl Waiter, comm: usize) -> Result<usize> {
    let a = inter_agree(w, comm, &[])?;
    w.with(|rt| {
        let c = rt.comm(comm)?;
        let (g, r, rem) = (c.group.clone(), c.rank, c.peers().to_vec());
        rt.add_inter(comm, a.ctx, g, r, rem)
    })
}

/// MPI_Comm_split of an intercommunicator: the local members of each color with the remote
/// members of the same color; MPI_COMM_NULL when either side has none.
pub(crate) fn inter_split(
    w: &mut impl Waiter,
    comm: usize,
    color: i32,
    key: i32,
) -> Result<Option<usize>> {
    if color < 0 && color != UNDEFINED {
        return err(
            ErrorClass::Arg,
            format!("color {color} is invalid (a color is >= 0 or MPI_UNDEFINED)"),
        );
    }
    let a = inter_agree(w, comm, &[color, key])?;
    if color == UNDEFINED {
        return Ok(None);
    }
    w.with(|rt| {
        let c = rt.comm(comm)?;
        let pick = |all: &[i32], worlds: &[i32]| -> Vec<i32> {
            let mut m: Vec<(i32, usize)> = all
                .chunks_exact(2)
                .enumerate()
                .filter(|(_, ck)| ck[0] == color)
                .map(|(r, ck)| (ck[1], r))
                .collect();
            m.sort_unstable();
            m.iter().map(|&(_, r)| worlds[r]).collect()
        };
        let lg = pick(&a.local, &c.group);
        let rg = pick(&a.remote, c.peers());
        if rg.is_empty() {
            return Ok(None);
        }
        let me = c.group[c.rank as usize];
        let rank = lg
            .iter()
            .position(|&w| w == me)
            .expect("member of its color") as i32;
        Ok(Some(rt.add_inter(comm, a.ctx, lg, rank, rg)?))
    })
}

/// MPI_Comm_create of an intercommunicator: `group` is a subset of the local group; the
/// remote group is what the other side passed. MPI_COMM_NULL outside the group, or when
/// either side's group is empty.
pub(crate) fn inter_create(
    w: &mut impl Waiter,
    comm: usize,
    group: &Group,
) -> Result<Option<usize>> {
    let mine = w.with(|rt| {
        let c = rt.comm(comm)?;
        if let Some(w) = group.members().iter().find(|w| !c.group.contains(w)) {
            return err(
                ErrorClass::Group,
                format!("the group holds world rank {w}, which is not in the local group"),
            );
        }
        Ok(group.rank_of(c.group[c.rank as usize]).unwrap_or(-1))
    })?;
    let a = inter_agree(w, comm, &[mine])?;
    if mine < 0 {
        return Ok(None);
    }
    w.with(|rt| {
        let c = rt.comm(comm)?;
        let mut rg: Vec<(i32, i32)> = a
            .remote
            .iter()
            .zip(c.peers())
            .filter(|(r, _)| **r >= 0)
            .map(|(&r, &w)| (r, w))
            .collect();
        rg.sort_unstable();
        if rg.is_empty() {
            return Ok(None);
        }
        let rg = rg.into_iter().map(|(_, w)| w).collect();
        Ok(Some(rt.add_inter(
            comm,
            a.ctx,
            group.members().to_vec(),
            mine,
            rg,
        )?))
    })
}

/// The error of the intercommunicator-only calls on an intracommunicator.
pub(crate) fn need_inter(c: &Comm) -> Result<&[i32]> {
    c.remote.as_deref().ok_or_else(|| {
        Error::new(
            ErrorClass::Comm,
            "not an intercommunicator (the call needs one)",
        )
    })
}
