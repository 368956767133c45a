//! Epochs: fence, post/start/complete/wait (PSCW), and passive target (lock, unlock, flush).
//! Each rests on the target applying one origin's requests in order (see mod.rs).

use super::wire::{self, Hdr};
use std::sync::atomic::Ordering;

use super::{direct, with_win, Epoch, Window};
use crate::comm_agree::{finish_each, Outside, Waiter};
use crate::error::{err, ErrorClass, Result};
use crate::pml::Pml;
use crate::runtime::{self, Runtime};

fn marker() -> Vec<u8> {
    wire::encode(Hdr::default(), &[], 0).0
}

/// Progress until `done` holds for window `id`, waiting where `w` waits: the calls of the
/// C ABI and the Rust API wait outside the runtime (`Outside`: under MPI_THREAD_MULTIPLE a
/// turn at a time, the runtime given back between turns, so a synchronisation on one window
/// does not keep out another thread's on another that the peers wait for).
fn wait_win(
    w: &mut impl Waiter,
    id: usize,
    mut done: impl FnMut(&mut Window, &Pml) -> bool,
) -> Result<()> {
    w.wait_until(|pml| match with_win(id, |win| Ok(done(win, pml))) {
        Ok(d) => Ok(d),
        Err(_) => err(ErrorClass::Win, "the window was freed while waiting on it"),
    })
}

fn sync_err<T>(msg: impl Into<String>) -> Result<T> {
    err(ErrorClass::RmaSync, msg)
}

/// Flushes need a passive-target epoch: lock_all, or a lock at `rank` (any lock for the
/// `_all` forms).
fn check_passive(w: &Window, rank: Option<i32>, call: &str) -> Result<()> {
    match (w.access, rank) {
        (Epoch::LockAll, _) | (Epoch::Lock, None) => Ok(()),
        (Epoch::Lock, Some(r)) if w.held[r as usize] != 0 => Ok(()),
        (Epoch::Lock, Some(r)) => sync_err(format!("{call}: rank {r} is not locked")),
        _ => sync_err(format!(
            "{call} outside a passive-target epoch (MPI_Win_lock or MPI_Win_lock_all)"
        )),
    }
}

/// Window rank `r` checked against the window's size.
fn check_rank(w: &Window, r: i32) -> Result<()> {
    if r < 0 || r >= w.size() {
        return err(
            ErrorClass::Rank,
            format!("rank {r} is not in the window (size {})", w.size()),
        );
    }
    Ok(())
}

/// MPI_Win_fence: not inside a lock, lock_all or PSCW epoch. It opens a fence epoch unless
/// `nosucceed` (MPI_MODE_NOSUCCEED) says none follows. Called outside the runtime.
pub fn fence(id: usize, nosucceed: bool) -> Result<()> {
    with_win(id, |w| {
        let fenceable = |e| matches!(e, Epoch::None | Epoch::Refence | Epoch::Fence);
        if !fenceable(w.access) || !fenceable(w.exposure) {
            return sync_err(format!(
                "MPI_Win_fence in another epoch (access {:?}, exposure {:?})",
                w.access, w.exposure
            ));
        }
        Ok(())
    })?;
    fence_all(id)?;
    with_win(id, |w| {
        let e = if nosucceed {
            Epoch::None
        } else {
            Epoch::Refence
        };
        (w.access, w.exposure) = (e, e);
        Ok(())
    })
}

/// The fence itself (MPI_Win_free's too): send a marker to every rank, wait for everyone's
/// (all operations before them are then applied here) and for this rank's own operations to
/// complete; then a barrier, so no rank starts the next epoch (a get, say) at a target still
/// applying the last one. Called outside the runtime.
pub fn fence_all(id: usize) -> Result<()> {
    let comm = with_win(id, |w| Ok(w.comm))?;
    if direct::is_direct(id)? {
        // Every operation completed in its call: order our copies, meet, order theirs. PSCW
        // markers still in flight are waited for (MPI_Win_free drops their buffers next).
        wait_win(&mut Outside, id, |w, pml| w.quiet(pml))?;
        std::sync::atomic::fence(Ordering::SeqCst);
        crate::comm_ops::barrier_outside(comm)?;
        std::sync::atomic::fence(Ordering::SeqCst);
        return Ok(());
    }
    let goal = runtime::with(|rt| {
        with_win(id, |w| {
            w.fences += 1;
            w.unacked.iter_mut().for_each(|u| *u = 0);
            for r in 0..w.size() {
                let ctx = w.ctx;
                w.send(&mut rt.pml, r, ctx, wire::FENCE, marker());
            }
            Ok(w.fences)
        })
    })?;
    wait_win(&mut Outside, id, |w, pml| {
        w.fence_in.iter().all(|&c| c >= goal) && w.quiet(pml)
    })?;
    crate::comm_ops::barrier_outside(comm)
}

/// MPI_Win_post: expose the window to `ranks`.
pub fn post(rt: &mut Runtime, id: usize, ranks: Vec<i32>) -> Result<()> {
    with_win(id, |w| {
        if !matches!(w.exposure, Epoch::None | Epoch::Refence) {
            return sync_err(format!(
                "MPI_Win_post in another exposure epoch ({:?})",
                w.exposure
            ));
        }
        w.exposure = Epoch::Post;
        for &r in &ranks {
            let ctx = w.ctx;
            w.send(&mut rt.pml, r, ctx, wire::POST, marker());
        }
        w.post_group = ranks;
        Ok(())
    })
}

/// MPI_Win_start: wait until every rank of the group has posted. Called outside the runtime:
/// the posts are other threads' calls at the targets.
pub fn start(id: usize, ranks: Vec<i32>) -> Result<()> {
    with_win(id, |w| {
        if !matches!(w.access, Epoch::None | Epoch::Refence) {
            return sync_err(format!(
                "MPI_Win_start in another access epoch ({:?})",
                w.access
            ));
        }
        w.access = Epoch::Start;
        w.start_group = ranks.clone();
        Ok(())
    })?;
    wait_win(&mut Outside, id, |w, _| {
        ranks
            .iter()
            .all(|&r| w.post_in[r as usize] > w.post_used[r as usize])
    })?;
    with_win(id, |w| {
        for &r in &ranks {
            w.post_used[r as usize] += 1;
        }
        Ok(())
    })
}

/// MPI_Win_complete: tell the group's ranks this access epoch is over.
pub fn complete(w: &mut impl Waiter, id: usize) -> Result<()> {
    with_win(id, |w| {
        if w.access != Epoch::Start {
            return sync_err("MPI_Win_complete without MPI_Win_start");
        }
        w.access = Epoch::None;
        Ok(())
    })?;
    // Direct copies are done; they reach the targets before the markers do.
    std::sync::atomic::fence(Ordering::SeqCst);
    w.with(|rt| {
        with_win(id, |w| {
            let group = std::mem::take(&mut w.start_group);
            for r in group {
                let ctx = w.ctx;
                w.send(&mut rt.pml, r, ctx, wire::COMPLETE, marker());
            }
            Ok(())
        })
    })?;
    wait_win(w, id, |w, pml| w.quiet(pml))
}

fn completed(w: &Window) -> bool {
    w.post_group
        .iter()
        .all(|&r| w.complete_in[r as usize] > w.complete_used[r as usize])
}

fn end_exposure(w: &mut Window) {
    w.exposure = Epoch::None;
    for r in std::mem::take(&mut w.post_group) {
        w.complete_used[r as usize] += 1;
    }
}

fn check_posted(w: &Window, call: &str) -> Result<()> {
    if w.exposure != Epoch::Post {
        return sync_err(format!("{call} without MPI_Win_post"));
    }
    Ok(())
}

/// MPI_Win_wait: every origin of the exposure epoch completed (its operations are applied).
/// Called outside the runtime: the completes are other threads' calls at the origins.
pub fn wait(id: usize) -> Result<()> {
    with_win(id, |w| check_posted(w, "MPI_Win_wait"))?;
    wait_win(&mut Outside, id, |w, _| completed(w))?;
    with_win(id, |w| {
        end_exposure(w);
        Ok(())
    })
}

/// MPI_Win_test: `wait` without blocking.
pub fn test(rt: &mut Runtime, id: usize) -> Result<bool> {
    with_win(id, |w| check_posted(w, "MPI_Win_test"))?;
    rt.pml.progress();
    with_win(id, |w| {
        let done = completed(w);
        if done {
            end_exposure(w);
        }
        Ok(done)
    })
}

/// Send `kind` to each of `ranks` and wait for all their (empty) replies.
fn round_trip(wt: &mut impl Waiter, id: usize, kind: i32, arg: u64, ranks: &[i32]) -> Result<()> {
    let reqs = wt.with(|rt| {
        with_win(id, |w| {
            let mut reqs = Vec::with_capacity(ranks.len());
            for &r in ranks {
                check_rank(w, r)?;
                let tag = w.reply_tag();
                // SAFETY: an empty receive never touches its buffer.
                reqs.push(unsafe { rt.pml.irecv(std::ptr::null_mut(), 0, w.rctx, r, tag) });
                let h = Hdr {
                    arg,
                    reply: tag as u64,
                    ..Hdr::default()
                };
                let ctx = w.ctx;
                w.send(&mut rt.pml, r, ctx, kind, wire::encode(h, &[], 0).0);
            }
            Ok(reqs)
        })
    })?;
    finish_each(wt, reqs)
}

/// Wait for this rank's operations on the window to complete locally (gets arrived).
pub fn flush_local(w: &mut impl Waiter, id: usize) -> Result<()> {
    wait_win(w, id, |w, pml| w.quiet(pml))
}

/// MPI_Win_flush_local (`Some(rank)`) or MPI_Win_flush_local_all: `flush_local` in a
/// passive-target epoch.
pub fn flush_local_at(wt: &mut impl Waiter, id: usize, rank: Option<i32>) -> Result<()> {
    with_win(id, |w| {
        if let Some(r) = rank {
            check_rank(w, r)?;
        }
        check_passive(w, rank, "MPI_Win_flush_local")
    })?;
    flush_local(wt, id)
}

/// MPI_Win_lock: ask the target for the lock and wait until it grants it.
pub fn lock(wt: &mut impl Waiter, id: usize, exclusive: bool, rank: i32) -> Result<()> {
    with_win(id, |w| {
        check_rank(w, rank)?;
        match w.access {
            Epoch::None | Epoch::Refence => Ok(()),
            Epoch::Lock if w.held[rank as usize] == 0 => Ok(()),
            Epoch::Lock => sync_err(format!(
                "rank {rank} of the window is already locked by this process"
            )),
            e => sync_err(format!("MPI_Win_lock in another access epoch ({e:?})")),
        }
    })?;
    if !direct::lock(wt, id, exclusive, &[rank])? {
        round_trip(wt, id, wire::LOCK, exclusive as u64, &[rank])?;
    }
    with_win(id, |w| {
        w.held[rank as usize] = 1 + exclusive as u8;
        w.access = Epoch::Lock;
        Ok(())
    })
}

/// MPI_Win_unlock: the target acknowledges once all our operations there are applied.
pub fn unlock(wt: &mut impl Waiter, id: usize, rank: i32) -> Result<()> {
    let excl = with_win(id, |w| {
        check_rank(w, rank)?;
        if w.access != Epoch::Lock || w.held[rank as usize] == 0 {
            return sync_err(format!(
                "rank {rank} of the window is not locked by MPI_Win_lock"
            ));
        }
        Ok(w.held[rank as usize] == 2)
    })?;
    if !direct::unlock(id, &[(rank, excl)])? {
        round_trip(wt, id, wire::UNLOCK, 0, &[rank])?;
        flush_local(wt, id)?;
    }
    with_win(id, |w| {
        w.held[rank as usize] = 0;
        w.unacked[rank as usize] = 0;
        if w.held.iter().all(|&h| h == 0) {
            w.access = Epoch::None;
        }
        Ok(())
    })
}

fn all_ranks(id: usize) -> Result<Vec<i32>> {
    with_win(id, |w| Ok((0..w.size()).collect()))
}

/// MPI_Win_lock_all: a shared lock at every rank.
pub fn lock_all(wt: &mut impl Waiter, id: usize) -> Result<()> {
    let ranks = all_ranks(id)?;
    with_win(id, |w| {
        if !matches!(w.access, Epoch::None | Epoch::Refence) {
            return sync_err(format!(
                "MPI_Win_lock_all in another access epoch ({:?})",
                w.access
            ));
        }
        Ok(())
    })?;
    if !direct::lock(wt, id, false, &ranks)? {
        round_trip(wt, id, wire::LOCK, 0, &ranks)?;
    }
    with_win(id, |w| {
        w.access = Epoch::LockAll;
        Ok(())
    })
}

/// MPI_Win_unlock_all.
pub fn unlock_all(wt: &mut impl Waiter, id: usize) -> Result<()> {
    let ranks = all_ranks(id)?;
    with_win(id, |w| {
        if w.access != Epoch::LockAll {
            return sync_err("MPI_Win_unlock_all without MPI_Win_lock_all");
        }
        Ok(())
    })?;
    let shared: Vec<(i32, bool)> = ranks.iter().map(|&r| (r, false)).collect();
    if !direct::unlock(id, &shared)? {
        round_trip(wt, id, wire::UNLOCK, 0, &ranks)?;
        flush_local(wt, id)?;
    }
    with_win(id, |w| {
        w.access = Epoch::None;
        w.unacked.iter_mut().for_each(|u| *u = 0);
        Ok(())
    })
}

/// MPI_Win_flush (`Some(rank)`) or MPI_Win_flush_all: operations applied at the target(s).
pub fn flush(wt: &mut impl Waiter, id: usize, rank: Option<i32>) -> Result<()> {
    with_win(id, |w| {
        if let Some(r) = rank {
            check_rank(w, r)?;
        }
        check_passive(w, rank, "MPI_Win_flush")
    })?;
    let ranks = match rank {
        Some(r) => vec![r],
        None => all_ranks(id)?,
    };
    if direct::is_direct(id)? {
        // Complete already: make our copies visible before whatever follows.
        std::sync::atomic::fence(Ordering::SeqCst);
        return Ok(());
    }
    // Only targets with requests that have no reply of their own need the round trip.
    let ranks = with_win(id, |w| {
        let mut v = Vec::new();
        for r in ranks {
            check_rank(w, r)?;
            if std::mem::take(&mut w.unacked[r as usize]) > 0 {
                v.push(r);
            }
        }
        Ok(v)
    })?;
    round_trip(wt, id, wire::FLUSH, 0, &ranks)?;
    flush_local(wt, id)
}
