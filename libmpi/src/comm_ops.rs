//! Creating and freeing communicators, and their attributes. Shared by the C ABI and the Rust API.
//!
//! User callbacks (attribute copy/delete) may call MPI, so they run outside the runtime's
//! borrow: each operation collects what to call under `runtime::with`, releases it, calls, and
//! then borrows again to finish.

use crate::comm::{Comm, SELF, WORLD};
use crate::comm_agree::{create_group_ctx, Waiter};
use crate::error::{err, Error, ErrorClass, Result};
use crate::group::{Group, UNDEFINED};
use crate::registry::{Copy, Keyval};
use crate::runtime::{self, Runtime};

impl Runtime {
    /// Put `c` in the first free slot after WORLD and SELF.
    pub(crate) fn add_comm(&mut self, c: Comm) -> usize {
        match self.comms.iter().skip(2).position(Option::is_none) {
            Some(i) => {
                self.comms[i + 2] = Some(c);
                i + 2
            }
            None => {
                self.comms.push(Some(c));
                self.comms.len() - 1
            }
        }
    }

    pub(crate) fn child(
        &self,
        parent: usize,
        ctx: u32,
        group: Vec<i32>,
        rank: i32,
    ) -> Result<Comm> {
        Ok(Comm {
            ctx,
            rank,
            group,
            errhandler: self.comm(parent)?.errhandler,
            name: String::new(),
            attrs: Vec::new(),
            topo: None,
            info: crate::info::Info::new(),
            remote: None,
            // Members of an all-MULTIPLE parent are all MULTIPLE; otherwise they agree anew.
            all_multiple: self.comm(parent)?.all_multiple.filter(|&all| all),
        })
    }

    /// MPI_Comm_dup without the attributes: same group and topology, fresh contexts.
    pub(crate) fn dup_bare(&mut self, parent: usize) -> Result<usize> {
        if self.comm(parent)?.is_inter() {
            return crate::comm_inter::inter_dup(self, parent);
        }
        let (ctx, _) = self.agree_ctx(parent, &[])?;
        let p = self.comm(parent)?;
        let mut c = self.child(parent, ctx, p.group.clone(), p.rank)?;
        c.topo = p.topo.clone();
        Ok(self.add_comm(c))
    }

    /// MPI_Comm_split: members with the same color, ordered by (key, rank in the parent).
    /// None for MPI_UNDEFINED. Colors are exchanged before being checked, so a bad color
    /// fails the call at every member instead of leaving the others waiting.
    pub(crate) fn comm_split(
        &mut self,
        parent: usize,
        color: i32,
        key: i32,
    ) -> Result<Option<usize>> {
        if self.comm(parent)?.is_inter() {
            return crate::comm_inter::inter_split(self, parent, color, key);
        }
        let (ctx, all) = self.agree_ctx(parent, &[color, key])?;
        if let Some(bad) = all
            .chunks_exact(3)
            .map(|c| c[1])
            .find(|&c| c < 0 && c != UNDEFINED)
        {
            return err(
                ErrorClass::Arg,
                format!("color {bad} is invalid (a color is >= 0 or MPI_UNDEFINED)"),
            );
        }
        if color == UNDEFINED {
            return Ok(None);
        }
        let p = self.comm(parent)?;
        let mut members: Vec<(i32, usize)> = all
            .chunks_exact(3)
            .enumerate()
            .filter(|(_, c)| c[1] == color)
            .map(|(r, c)| (c[2], r))
            .collect();
        members.sort_unstable();
        let group: Vec<i32> = members.iter().map(|&(_, r)| p.group[r]).collect();
        let rank = members
            .iter()
            .position(|&(_, r)| r == p.rank as usize)
            .expect("a member with a color is in its color's group") as i32;
        let c = self.child(parent, ctx, group, rank)?;
        Ok(Some(self.add_comm(c)))
    }

    /// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): one communicator per node.
    pub(crate) fn comm_split_shared(&mut self, parent: usize, key: i32) -> Result<usize> {
        let node = self.objs.local_ranks.iter().copied().min().unwrap_or(0);
        Ok(self
            .comm_split(parent, node, key)?
            .expect("a node color is never MPI_UNDEFINED"))
    }

    /// MPI_Comm_create: `group` (a subset of the parent's) in its own order; None outside it.
    pub(crate) fn comm_create(&mut self, parent: usize, group: &Group) -> Result<Option<usize>> {
        let p = self.comm(parent)?;
        if p.is_inter() {
            return crate::comm_inter::inter_create(self, parent, group);
        }
        if let Some(w) = group.members().iter().find(|w| !p.group.contains(w)) {
            return err(
                ErrorClass::Group,
                format!("the group holds world rank {w}, which is not in the communicator"),
            );
        }
        let (ctx, _) = self.agree_ctx(parent, &[])?;
        let me = self.comm(parent)?.group[self.comm(parent)?.rank as usize];
        let Some(rank) = group.rank_of(me) else {
            return Ok(None);
        };
        let c = self.child(parent, ctx, group.members().to_vec(), rank)?;
        Ok(Some(self.add_comm(c)))
    }
}

/// MPI_Comm_create_group of `parent` (an intracommunicator) by `group`'s members, the caller
/// among them; `w` says where it waits (`comm_agree::create_group_ctx`).
pub(crate) fn create_group(
    w: &mut impl Waiter,
    parent: usize,
    group: &Group,
    tag: i32,
) -> Result<usize> {
    w.with(|rt| {
        if rt.comm(parent)?.is_inter() {
            return err(
                ErrorClass::Comm,
                "MPI_Comm_create_group needs an intracommunicator",
            );
        }
        Ok(())
    })?;
    if !(0..=crate::runtime::TAG_UB).contains(&tag) {
        return err(
            ErrorClass::Tag,
            format!(
                "tag {tag} is invalid (valid: 0..={})",
                crate::runtime::TAG_UB
            ),
        );
    }
    let ctx = create_group_ctx(w, parent, group.members(), tag)?;
    w.with(|rt| {
        let p = rt.comm(parent)?;
        let me = p.group[p.rank as usize];
        let rank = group
            .rank_of(me)
            .expect("create_group_ctx checked membership");
        let c = rt.child(parent, ctx, group.members().to_vec(), rank)?;
        Ok(rt.add_comm(c))
    })
}

/// A callback's non-zero return as an error.
fn callback_error(what: &str, rc: i32) -> Error {
    let msg = format!("{what} callback returned error {rc}");
    match ErrorClass::from_code(rc) {
        Some(class) => Error::new(class, msg),
        // A user-defined class or code: the call returns it (MPICH errors/comm/userdup).
        None if rc > 16383 => Error::with_user_code(rc, msg),
        None => Error::new(ErrorClass::Other, msg),
    }
}

/// Run an attribute's delete callback, if any (outside the runtime borrow).
fn call_delete(comm: usize, key: i32, kv: Option<Keyval>, val: usize) -> Result<()> {
    let Some(f) = kv.and_then(|kv| kv.delete) else {
        return Ok(());
    };
    let extra = kv.map_or(0, |kv| kv.extra);
    // SAFETY: a C function registered with MPI_Comm_create_keyval, called with the arguments
    // its type (MPI_Comm_delete_attr_function) prescribes; the runtime is not borrowed.
    let rc = unsafe {
        f(
            crate::capi::comm_handle(comm),
            key,
            val as *mut _,
            extra as *mut _,
        )
    };
    if rc != 0 {
        return Err(callback_error("attribute delete", rc));
    }
    Ok(())
}

/// MPI_Comm_dup: a new communicator with the attributes the copy callbacks keep.
pub(crate) fn dup(parent: usize) -> Result<usize> {
    if multiple_forms(parent)? || runtime::with(|rt| Ok(rt.comm(parent)?.is_inter()))? {
        let new = bare_dup(parent)?;
        return dup_via(parent, |_| Ok(new));
    }
    dup_via(parent, |rt| rt.dup_bare(parent))
}

/// A duplicate of `parent` without its attributes and hints (the communicator of a topology
/// or a window). Where every member runs MULTIPLE, MPI_Comm_idup's bare duplicate, waited for
/// outside the runtime: its context id needs no agreement, so dups on different communicators
/// from different threads, in any order at each process, never wait on one another.
pub(crate) fn bare_dup(parent: usize) -> Result<usize> {
    if runtime::with(|rt| Ok(rt.comm(parent)?.is_inter()))? {
        // The agreement of both groups, waiting outside the runtime (inter_agree.rs).
        return crate::comm_inter::inter_dup(&mut crate::comm_agree::Outside, parent);
    }
    if multiple_forms(parent)? {
        let (new, id) = runtime::with(|rt| rt.idup_bare(parent, crate::coll::Space::Blocking))?;
        wait_request(id)?;
        return Ok(new);
    }
    runtime::with(|rt| rt.dup_bare(parent))
}

/// Whether `comm`'s members use the MULTIPLE forms of communicator creation and MPI_Barrier
/// (which wait outside the runtime but send other messages than the common forms): only when
/// every member runs MPI_THREAD_MULTIPLE. Agreed once per communicator by an allgather of the
/// members' levels, run at every level so that all members take the same branch; a job that
/// mixes levels (MPMD, a MULTIPLE parent and the children it spawned) keeps the common forms
/// on the communicators they share. An intercommunicator always keeps them.
pub(crate) fn multiple_forms(comm: usize) -> Result<bool> {
    let (known, inter) = runtime::with(|rt| {
        let c = rt.comm(comm)?;
        Ok((c.all_multiple, c.is_inter()))
    })?;
    if let Some(all) = known {
        return Ok(all);
    }
    if inter {
        return Ok(false);
    }
    let mut levels: Vec<i32> = Vec::new();
    let mine = [runtime::is_multiple() as i32];
    let (_, _, id) = runtime::with(|rt| start_allgather(rt, comm, &mine, &mut levels))?;
    wait_request(id)?;
    let all = levels.iter().all(|&l| l == 1);
    runtime::with(|rt| {
        rt.comm_mut(comm)?.all_multiple = Some(all);
        Ok(())
    })?;
    Ok(all)
}

/// Starts an allgather on `comm` of `mine` (the same number of i32s at every member) into
/// `all`, which it sizes; (members, this member's rank, the request). `all` must not be
/// touched until the request is complete.
fn start_allgather(
    rt: &mut runtime::Runtime,
    comm: usize,
    mine: &[i32],
    all: &mut Vec<i32>,
) -> Result<(usize, usize, crate::pml::ReqId)> {
    use crate::coll::{self, algos, At, Buf, Builder};
    let c = rt.comm(comm)?;
    let (n, me, k) = (c.size() as usize, c.rank as usize, mine.len());
    *all = vec![0; k * n];
    all[k * me..k * (me + 1)].copy_from_slice(mine);
    let at = At(Buf::User(all.as_mut_ptr().cast()), 0);
    let s = {
        let mut b = Builder::new(c, None);
        let displs: Vec<usize> = (0..n).map(|i| 4 * k * i).collect();
        algos::allgatherv(&mut b, None, at, &vec![4 * k; n], &displs);
        b.finish()
    };
    Ok((n, me, coll::start_blocking(&mut rt.pml, s)))
}

/// `buf` (the same length at every member) from `root` to every member of `comm`, over its
/// collective schedules; under MULTIPLE the wait is outside the runtime (MPI_Comm_spawn's
/// result, `crate::dpm`).
pub(crate) fn bcast_ints(comm: usize, root: i32, buf: &mut [i32]) -> Result<()> {
    use crate::coll::{self, algos, At, Buf, Builder};
    let id = runtime::with(|rt| {
        let c = rt.comm(comm)?;
        let at = At(Buf::User(buf.as_mut_ptr().cast()), 0);
        let s = {
            let mut b = Builder::new(c, None);
            algos::bcast(&mut b, at, 4 * buf.len(), root);
            b.finish()
        };
        Ok(coll::start_blocking(&mut rt.pml, s))
    })?;
    // `buf` is borrowed for the whole call, so nothing touches it before the request is over.
    wait_request(id)?;
    Ok(())
}

/// Wait for internal request `id` and retire it: under MULTIPLE outside the runtime, at the
/// other levels inside it.
pub(crate) fn wait_request(id: crate::pml::ReqId) -> Result<crate::pml::Status> {
    if runtime::is_multiple() {
        runtime::poll_outside(|rt| {
            Ok((!rt.pml.is_valid(id) || rt.pml.is_complete(id)).then_some(()))
        })?;
    }
    let st = runtime::with(|rt| rt.wait(id))?;
    match ErrorClass::from_code(st.error) {
        Some(e) if st.error != 0 => Err(Error::new(e, e.description())),
        _ => Ok(st),
    }
}

/// MPI_Comm_split of an intracommunicator under MULTIPLE, waiting outside the runtime: an
/// allgather of (color, key) over the parent's collective schedules, then the parent's rank 0
/// takes one context id per color from its own space (`comm_idup`: no other process takes
/// those) and broadcasts the first. No agreement on free ids, so no step waits for anything
/// but the parent's members entering this same call (MPI orders collectives on one
/// communicator); splits of different communicators from different threads go on at once.
pub(crate) fn split_outside(parent: usize, color: i32, key: i32) -> Result<Option<usize>> {
    use crate::coll::{self, algos, At, Buf, Builder};
    let mut all: Vec<i32> = Vec::new();
    // `all` is not touched until the request is complete (wait_request below).
    let (n, me, id) = runtime::with(|rt| start_allgather(rt, parent, &[color, key], &mut all))?;
    wait_request(id)?;
    let mut colors: Vec<i32> = (0..n).map(|r| all[2 * r]).collect();
    if let Some(&bad) = colors.iter().find(|&&c| c < 0 && c != UNDEFINED) {
        return err(
            ErrorClass::Arg,
            format!("color {bad} is invalid (a color is >= 0 or MPI_UNDEFINED)"),
        );
    }
    colors.retain(|&c| c != UNDEFINED);
    colors.sort_unstable();
    colors.dedup();
    // The first id of the block; 0 when rank 0 has none left (every member then fails).
    let mut base = Box::new(0u32);
    let id = runtime::with(|rt| {
        if me == 0 {
            *base = rt.own_ctx_block(colors.len() as u32).unwrap_or(0);
        }
        let p = rt.comm(parent)?;
        let at = At(Buf::User((&mut *base as *mut u32).cast()), 0);
        let s = {
            let mut b = Builder::new(p, None);
            algos::bcast(&mut b, at, 4, 0);
            b.finish()
        };
        Ok(coll::start_blocking(&mut rt.pml, s))
    })?;
    wait_request(id)?;
    if *base == 0 {
        return err(
            ErrorClass::Intern,
            "MPI_Comm_split: rank 0 of the communicator has no context ids of its own left",
        );
    }
    if color == UNDEFINED {
        return Ok(None);
    }
    let ctx = *base + 4 * colors.iter().position(|&c| c == color).expect("own color") as u32;
    let mut members: Vec<(i32, usize)> = (0..n)
        .filter(|&r| all[2 * r] == color)
        .map(|r| (all[2 * r + 1], r))
        .collect();
    members.sort_unstable();
    runtime::with(|rt| {
        let p = rt.comm(parent)?;
        let group: Vec<i32> = members.iter().map(|&(_, r)| p.group[r]).collect();
        let rank = members
            .iter()
            .position(|&(_, r)| r == me)
            .expect("a member with a color is in its color's group") as i32;
        let c = rt.child(parent, ctx, group, rank)?;
        Ok(Some(rt.add_comm(c)))
    })
}

/// MPI_Comm_dup with the bare duplicate made by `bare` (MPI_Comm_idup's starts it).
pub(crate) fn dup_via(
    parent: usize,
    bare: impl FnOnce(&mut Runtime) -> Result<usize>,
) -> Result<usize> {
    let (new, attrs) = runtime::with(|rt| {
        let new = bare(rt)?;
        // MPI_Comm_dup duplicates the hints too (MPI-4.0 7.4.2).
        rt.comm_mut(new)?.info = rt.comm(parent)?.info.clone();
        let attrs: Vec<(i32, usize, Option<Keyval>)> = rt
            .comm(parent)?
            .attrs
            .iter()
            .map(|&(k, v)| (k, v, rt.objs.keyval_any(k)))
            .collect();
        Ok((new, attrs))
    })?;
    let mut kept = Vec::new();
    for (key, val, kv) in attrs {
        let Some(kv) = kv else { continue };
        let out = match kv.copy {
            Copy::None => None,
            Copy::Dup => Some(val),
            Copy::User(f) => {
                let (mut out, mut flag) = (0usize, 0i32);
                // SAFETY: a C copy callback called as MPI_Comm_copy_attr_function prescribes,
                // with valid out-pointers; the runtime is not borrowed.
                let rc = unsafe {
                    f(
                        crate::capi::comm_handle(parent),
                        key,
                        kv.extra as *mut _,
                        val as *mut _,
                        (&mut out as *mut usize).cast(),
                        &mut flag,
                    )
                };
                if rc != 0 {
                    // The new communicator exists; free it (deleting what was copied so far).
                    set_attrs(new, kept)?;
                    let _ = free(new);
                    return Err(callback_error("attribute copy", rc));
                }
                (flag != 0).then_some(out)
            }
        };
        if let Some(v) = out {
            kept.push((key, v));
        }
    }
    set_attrs(new, kept)?;
    Ok(new)
}

fn set_attrs(comm: usize, attrs: Vec<(i32, usize)>) -> Result<()> {
    runtime::with(|rt| {
        rt.comm_mut(comm)?.attrs = attrs;
        Ok(())
    })
}

/// MPI_Comm_free: delete the attributes (callbacks), then release the slot.
pub(crate) fn free(comm: usize) -> Result<()> {
    if comm == WORLD || comm == SELF {
        return err(
            ErrorClass::Comm,
            "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed",
        );
    }
    delete_all_attrs(comm)?;
    runtime::with(|rt| {
        rt.comm(comm)?;
        rt.comms[comm] = None;
        rt.bsend.forget_comm(comm);
        Ok(())
    })
}

/// MPI_Comm_disconnect of an intracommunicator: MPI_Comm_free, collectively, once what the
/// library still has in flight (buffered sends, fragments waiting for room) has left, so the
/// communicator is gone with nothing of it pending (the user's own requests are complete, as
/// the standard requires).
pub(crate) fn disconnect(comm: usize) -> Result<()> {
    if comm == WORLD || comm == SELF {
        return err(
            ErrorClass::Comm,
            "MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected",
        );
    }
    runtime::with_ready(
        |rt| rt.bsend_flushed(),
        |rt| {
            rt.comm(comm)?;
            rt.bsend_flush();
            Ok(())
        },
    )?;
    runtime::with_ready(
        |rt| rt.pml.queued() == 0 && rt.pml.btls_flushed(),
        |rt| {
            rt.progress_until(|p| p.queued() == 0 && p.btls_flushed());
            Ok(())
        },
    )?;
    barrier_outside(comm)?;
    free(comm)
}

/// MPI_Barrier's messages on `comm`, waited for outside the runtime under MULTIPLE where they
/// can be: an intercommunicator's barrier is always a schedule, and an intracommunicator's
/// when its members use the MULTIPLE forms. So a thread disconnecting from its spawned
/// children does not hold the runtime that another thread's spawn, which those members wait
/// for, needs.
pub(crate) fn barrier_outside(comm: usize) -> Result<()> {
    use crate::coll::{self, algos, Builder};
    let inter = runtime::with(|rt| Ok(rt.comm(comm)?.is_inter()))?;
    if !inter && !multiple_forms(comm)? {
        return runtime::with(|rt| rt.barrier(comm));
    }
    let id = runtime::with(|rt| {
        let s = {
            let mut b = Builder::new(rt.comm(comm)?, None);
            if inter {
                coll::inter::barrier(&mut b);
            } else {
                algos::barrier(&mut b);
            }
            b.finish()
        };
        Ok(coll::start_blocking(&mut rt.pml, s))
    })?;
    wait_request(id).map(|_| ())
}

/// MPI-2: COMM_SELF's attributes are deleted as MPI_Finalize starts, so libraries can clean up.
pub(crate) fn delete_self_attrs_at_finalize() {
    if runtime::is_initialized() && !runtime::is_finalized() {
        if let Err(e) = delete_all_attrs(SELF) {
            eprintln!("rmpi: MPI_Finalize: deleting MPI_COMM_SELF's attributes: {e}");
        }
    }
}

/// Delete every attribute of `comm`, last set first, calling the delete callbacks.
pub(crate) fn delete_all_attrs(comm: usize) -> Result<()> {
    let attrs = runtime::with(|rt| {
        let c = rt.comm_mut(comm)?;
        let attrs = std::mem::take(&mut c.attrs);
        Ok(attrs
            .into_iter()
            .rev()
            .map(|(k, v)| (k, v, rt.objs.keyval_any(k)))
            .collect::<Vec<_>>())
    })?;
    let mut first = Ok(());
    for (k, v, kv) in attrs {
        if let Err(e) = call_delete(comm, k, kv, v) {
            first = first.and(Err(e));
        }
    }
    first
}

/// MPI_Comm_set_attr: a value replaced is deleted (callback) first.
pub(crate) fn set_attr(comm: usize, key: i32, val: usize) -> Result<()> {
    let old = runtime::with(|rt| {
        let kv = rt.objs.keyval(key)?;
        let c = rt.comm(comm)?;
        Ok(c.attrs.iter().find(|a| a.0 == key).map(|a| (a.1, kv)))
    })?;
    if let Some((v, kv)) = old {
        call_delete(comm, key, Some(kv), v)?;
    }
    runtime::with(|rt| {
        let c = rt.comm_mut(comm)?;
        match c.attrs.iter_mut().find(|a| a.0 == key) {
            Some(a) => a.1 = val,
            None => c.attrs.push((key, val)),
        }
        Ok(())
    })
}

/// MPI_Comm_get_attr for a user keyval.
pub(crate) fn get_attr(comm: usize, key: i32) -> Result<Option<usize>> {
    runtime::with(|rt| {
        let kv = rt.objs.keyval_known(key)?;
        let c = rt.comm(comm)?;
        let v = c.attrs.iter().find(|a| a.0 == key).map(|a| a.1);
        // A freed keyval reaches only the attributes set before its free.
        if kv.freed && v.is_none() {
            return err(
                ErrorClass::Keyval,
                format!("{key} is not a valid keyval (freed)"),
            );
        }
        Ok(v)
    })
}

/// MPI_Comm_delete_attr: the delete callback runs; the attribute must exist.
pub(crate) fn delete_attr(comm: usize, key: i32) -> Result<()> {
    let (v, kv) = runtime::with(|rt| {
        let kv = rt.objs.keyval_known(key)?;
        let c = rt.comm(comm)?;
        match c.attrs.iter().find(|a| a.0 == key) {
            Some(a) => Ok((a.1, kv)),
            None => err(
                ErrorClass::Keyval,
                format!("keyval {key} has no attribute on this communicator"),
            ),
        }
    })?;
    call_delete(comm, key, Some(kv), v)?;
    runtime::with(|rt| {
        rt.comm_mut(comm)?.attrs.retain(|a| a.0 != key);
        Ok(())
    })
}
