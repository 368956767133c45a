//! Intercommunicators: creation (MPI_Intercomm_create, _from_groups), merge, and dup, split and
//! create of an intercommunicator, which give intercommunicators (MPI-4.0 7.6).
//!
//! An intercommunicator is a `Comm` with `remote` set: `group` is the local group, `remote` the
//! other one (world ranks). It takes four context ids, agreed by both groups: `ctx` for
//! point-to-point (the sender's local rank is the match source, which is its rank in the
//! receiver's remote group), `ctx + 1` for collective traffic between the groups and `ctx + 3`
//! for collective steps within a group (`Comm::local_coll_ctx`).
//!
//! The agreements here are small blocking exchanges on the pml, like `comm_agree.rs`: within
//! each group (gather at the leader, then a broadcast from it), and between the two leaders.

use crate::comm::Comm;
use crate::error::{err, Error, ErrorClass, Result};
use crate::group::{Group, UNDEFINED};
use crate::pml::Started;
use crate::runtime::Runtime;

/// Internal tags (negative: no user message carries them), above `comm_agree`'s group tags.
const LEADER_TAG: i32 = -1001;
const BCAST_TAG: i32 = -1002;

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
    /// Send `mine` to the other leader and receive its vector (at most `cap` integers).
    fn leader_exchange(&mut self, l: &Link, mine: &[i32], cap: usize) -> Result<Vec<i32>> {
        let out = to_bytes(mine);
        let mut inp = vec![0u8; cap * 4];
        // SAFETY: `out` and `inp` live until both operations are finished below.
        let s = unsafe {
            self.pml
                .isend(out.as_ptr(), out.len(), l.world, l.ctx, l.me, l.tag)
        };
        // SAFETY: as above.
        let r = unsafe {
            self.pml
                .irecv(inp.as_mut_ptr(), inp.len(), l.ctx, l.other, l.tag)
        };
        let rs = self.finish(r);
        let ss = self.finish(s);
        let st = rs?;
        ss?;
        inp.truncate(st.count);
        Ok(from_bytes(&inp))
    }

    /// Broadcast `data` (at most `cap` integers) from local rank `root` of `comm`'s local group
    /// to its other members, on the local collective context. Linear: a few integers.
    pub(crate) fn local_bcast(
        &mut self,
        comm: usize,
        root: i32,
        data: Vec<i32>,
        cap: usize,
    ) -> Result<Vec<i32>> {
        let c = self.comm(comm)?;
        let (ctx, me, group) = (c.local_coll_ctx(), c.rank, c.group.clone());
        if me == root {
            let out = to_bytes(&data);
            let mut sends = Vec::new();
            for (r, &w) in group.iter().enumerate() {
                if r as i32 != root {
                    // SAFETY: `out` lives until every send is finished below.
                    sends.push(unsafe {
                        self.pml
                            .isend(out.as_ptr(), out.len(), w as usize, ctx, me, BCAST_TAG)
                    });
                }
            }
            self.finish_each(sends)?;
            Ok(data)
        } else {
            let mut inp = vec![0u8; cap * 4];
            // SAFETY: `inp` lives until the receive is finished.
            let r = unsafe {
                self.pml
                    .irecv(inp.as_mut_ptr(), inp.len(), ctx, root, BCAST_TAG)
            };
            let st = self.finish(r)?;
            inp.truncate(st.count);
            Ok(from_bytes(&inp))
        }
    }

    fn finish_each(&mut self, ops: Vec<Started>) -> Result<()> {
        let mut first = Ok(());
        for op in ops {
            if let Err(e) = self.finish(op) {
                first = first.and(Err(e));
            }
        }
        first
    }

    /// Every member of an intercommunicator contributes `mine` (the same length everywhere):
    /// the local members' vectors, the remote members' vectors (by rank), and a context id
    /// block free at all of them (four ids reserved).
    fn inter_agree(&mut self, comm: usize, mine: &[i32]) -> Result<(u32, Vec<i32>, Vec<i32>)> {
        let mut v = vec![self.objs.next_ctx() as i32];
        v.extend_from_slice(mine);
        let k = v.len();
        let local = self.agree_allgather(comm, &v)?;
        let c = self.comm(comm)?;
        let m = c.peers().len();
        let remote = if c.rank == 0 {
            let link = Link {
                world: c.peers()[0] as usize,
                ctx: c.coll_ctx(),
                me: 0,
                other: 0,
                tag: LEADER_TAG,
            };
            let remote = self.leader_exchange(&link, &local, m * k)?;
            self.local_bcast(comm, 0, remote, m * k)?
        } else {
            self.local_bcast(comm, 0, Vec::new(), m * k)?
        };
        if remote.len() != m * k {
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
        self.reserve_inter_ctx(ctx);
        let strip = |all: &[i32]| -> Vec<i32> {
            all.chunks_exact(k).flat_map(|c| c[1..].to_vec()).collect()
        };
        Ok((ctx, strip(&local), strip(&remote)))
    }

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

    /// MPI_Intercomm_create: `local` (an intracommunicator) is this side's group; the leaders
    /// meet over `peer` (point-to-point, with the user's `tag`).
    pub(crate) fn intercomm_create(
        &mut self,
        local: usize,
        local_leader: i32,
        peer: usize,
        remote_leader: i32,
        tag: i32,
    ) -> Result<usize> {
        let lc = self.comm(local)?;
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
        let link = if lc.rank == local_leader {
            if !(0..=crate::runtime::TAG_UB).contains(&tag) {
                return err(ErrorClass::Tag, format!("tag {tag} is invalid"));
            }
            let p = self.comm(peer)?;
            Some(Link {
                world: p.world_of(remote_leader)?,
                ctx: p.ctx,
                me: p.rank,
                other: remote_leader,
                tag,
            })
        } else {
            None
        };
        self.intercomm_build(local, local_leader, link)
    }

    /// The common part of the two creations: agree within `local`, exchange at the leader.
    fn intercomm_build(&mut self, local: usize, leader: i32, link: Option<Link>) -> Result<usize> {
        // Members are named across jobs as (job, rank, pid) triples (`dpm::to_global`): the
        // other group may hold spawned processes, whose world ranks here mean nothing there.
        let world_size = self.comm(crate::comm::WORLD)?.size() as usize;
        let cap = 3 * world_size.max(crate::dpm::MAX_GROUP) + 1;
        let mine = [self.objs.next_ctx() as i32, std::process::id() as i32];
        let all = self.agree_allgather(local, &mine)?;
        let my_max = all.chunks_exact(2).map(|p| p[0]).max().unwrap_or(0);
        let pids: Vec<i32> = all.chunks_exact(2).map(|p| p[1]).collect();
        let lc = self.comm(local)?;
        let (group, rank) = (lc.group.clone(), lc.rank);
        // [max context id, remote group's world ranks...]
        let data = match link {
            Some(l) => {
                let mut mine = vec![my_max];
                mine.extend(crate::dpm::to_global(self, &group, &pids)?);
                let theirs = self.leader_exchange(&l, &mine, cap)?;
                let max = theirs.first().copied().unwrap_or(0).max(my_max);
                let mut d = vec![max];
                d.extend_from_slice(&theirs[1..]);
                self.local_bcast(local, leader, d, cap)?
            }
            None => self.local_bcast(local, leader, Vec::new(), cap)?,
        };
        let ctx = data[0] as u32;
        let remote = crate::dpm::from_global(self, &data[1..])?;
        if let Some(w) = remote.iter().find(|w| group.contains(w)) {
            return err(
                ErrorClass::Arg,
                format!("world rank {w} is in both groups of the intercommunicator"),
            );
        }
        self.reserve_inter_ctx(ctx);
        self.add_inter(local, ctx, group, rank, remote)
    }

    /// MPI_Intercomm_create_from_groups: the groups' members meet over MPI_COMM_WORLD (every
    /// process of the job is in it), `tag` standing for the string tag.
    pub(crate) fn intercomm_from_groups(
        &mut self,
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
        let tmp = self.comm_create_group(crate::comm::WORLD, local, tag)?;
        let w = self.comm(crate::comm::WORLD)?;
        let me = w.rank;
        let link = (local.members()[local_leader as usize] == me).then(|| {
            let other = remote.members()[remote_leader as usize];
            Link {
                world: other as usize,
                ctx: w.coll_ctx(),
                me,
                other,
                tag: LEADER_TAG - 1 - (tag & 0xffff),
            }
        });
        let r = self.intercomm_build(tmp, local_leader, link);
        self.comms[tmp] = None;
        r
    }

    /// MPI_Intercomm_merge: the group with `high` false first; with equal flags, the group
    /// whose first member has the lower world rank.
    pub(crate) fn intercomm_merge(&mut self, comm: usize, high: bool) -> Result<usize> {
        let c = self.comm(comm)?;
        if !c.is_inter() {
            return err(ErrorClass::Comm, "not an intercommunicator");
        }
        let (ctx, local, remote) = self.inter_agree(comm, &[high as i32])?;
        let c = self.comm(comm)?;
        let (lg, rg) = (c.group.clone(), c.peers().to_vec());
        let (lh, rh) = (local[0] != 0, remote[0] != 0);
        let local_first = if lh != rh { !lh } else { lg[0] < rg[0] };
        let (group, rank) = if local_first {
            ([lg, rg].concat(), c.rank)
        } else {
            ([rg, lg].concat(), c.rank + c.peers().len() as i32)
        };
        let n = self.child(comm, ctx, group, rank)?;
        Ok(self.add_comm(n))
    }

    /// MPI_Comm_dup (and idup) of an intercommunicator.
    pub(crate) fn inter_dup(&mut self, comm: usize) -> Result<usize> {
        let (ctx, _, _) = self.inter_agree(comm, &[])?;
        let c = self.comm(comm)?;
        let (g, r, rem) = (c.group.clone(), c.rank, c.peers().to_vec());
        self.add_inter(comm, ctx, g, r, rem)
    }

    /// MPI_Comm_split of an intercommunicator: the local members of each color with the remote
    /// members of the same color; MPI_COMM_NULL when either side has none.
    pub(crate) fn inter_split(
        &mut self,
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
        let (ctx, local, remote) = self.inter_agree(comm, &[color, key])?;
        if color == UNDEFINED {
            return Ok(None);
        }
        let c = self.comm(comm)?;
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
        let lg = pick(&local, &c.group);
        let rg = pick(&remote, c.peers());
        if rg.is_empty() {
            return Ok(None);
        }
        let me = c.group[c.rank as usize];
        let rank = lg
            .iter()
            .position(|&w| w == me)
            .expect("member of its color") as i32;
        Ok(Some(self.add_inter(comm, ctx, lg, rank, rg)?))
    }

    /// MPI_Comm_create of an intercommunicator: `group` is a subset of the local group; the
    /// remote group is what the other side passed. MPI_COMM_NULL outside the group, or when
    /// either side's group is empty.
    pub(crate) fn inter_create(&mut self, comm: usize, group: &Group) -> Result<Option<usize>> {
        let c = self.comm(comm)?;
        if let Some(w) = group.members().iter().find(|w| !c.group.contains(w)) {
            return err(
                ErrorClass::Group,
                format!("the group holds world rank {w}, which is not in the local group"),
            );
        }
        let me = c.group[c.rank as usize];
        let mine = group.rank_of(me).unwrap_or(-1);
        let (ctx, _, remote) = self.inter_agree(comm, &[mine])?;
        let Some(rank) = group.rank_of(me) else {
            return Ok(None);
        };
        let c = self.comm(comm)?;
        let mut rg: Vec<(i32, i32)> = remote
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
        Ok(Some(self.add_inter(
            comm,
            ctx,
            group.members().to_vec(),
            rank,
            rg,
        )?))
    }

    /// MPI_Barrier on an intercommunicator: nobody leaves before every member of both groups
    /// has entered (a local barrier, the leaders' handshake, a local barrier).
    pub(crate) fn inter_barrier(&mut self, comm: usize) -> Result<()> {
        let s = {
            let mut b = crate::coll::Builder::new(self.comm(comm)?, None);
            crate::coll::inter::barrier(&mut b);
            b.finish()
        };
        let id = crate::coll::start(&mut self.pml, s);
        self.wait(id).map(|_| ())
    }
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
