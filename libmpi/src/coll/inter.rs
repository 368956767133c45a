//! Collectives on intercommunicators (MPI-4.0 6.2.2): simple, correct schedules built from the
//! intracommunicator algorithms run within each group (`algos`, on the local context) and
//! transfers between the groups (`Builder::xsend`/`xrecv`, on the intercommunicator's context).
//!
//! Rooted collectives: the root passes MPI_ROOT (`Root::Me`), the other members of its group
//! MPI_PROC_NULL (`Root::Idle`, they take no part), and the other group the root's rank in it
//! (`Root::Remote`). Data always flows from one group to the other, never within a group.

use super::algos;
use super::schedule::{At, Buf, Builder};

/// A rooted collective's `root` argument on an intercommunicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// MPI_ROOT: this process is the root.
    Me,
    /// MPI_PROC_NULL: in the root's group, not the root.
    Idle,
    /// The root's rank in the remote group.
    Remote(i32),
}

fn zero() -> At {
    At(Buf::User(std::ptr::null_mut()), 0)
}

/// Nobody leaves before every member of both groups has entered: a local barrier, a handshake
/// of the leaders, then a local barrier that holds everyone until its leader is back.
pub fn barrier(b: &mut Builder) {
    algos::barrier(b);
    b.round();
    if b.rank() == 0 {
        b.xsend(zero(), 0, 0, true);
        b.xrecv(zero(), 0, 0, true);
        b.round();
    }
    algos::barrier(b);
    b.round();
}

/// Broadcast from the root to every member of the other group: the root sends to that group's
/// rank 0, which broadcasts within its group.
pub fn bcast(b: &mut Builder, buf: At, len: usize, root: Root) {
    match root {
        Root::Me => b.xsend(buf, len, 0, false),
        Root::Idle => {}
        Root::Remote(r) => {
            if b.rank() == 0 {
                b.xrecv(buf, len, r, false);
            }
            b.round();
            algos::bcast(b, buf, len, 0);
        }
    }
    b.round();
}

/// Gather(v) at the root of the blocks of every member of the other group (linear).
pub fn gatherv(
    b: &mut Builder,
    send: (At, usize),
    recv: At,
    lens: &[usize],
    displs: &[usize],
    root: Root,
) {
    match root {
        Root::Me => {
            for (i, (&l, &d)) in lens.iter().zip(displs).enumerate() {
                b.xrecv(recv.add(d), l, i as i32, false);
            }
        }
        Root::Idle => {}
        Root::Remote(r) => b.xsend(send.0, send.1, r, false),
    }
    b.round();
}

/// Scatter(v) from the root to every member of the other group (linear).
pub fn scatterv(
    b: &mut Builder,
    send: At,
    lens: &[usize],
    displs: &[usize],
    recv: (At, usize),
    root: Root,
) {
    match root {
        Root::Me => {
            for (i, (&l, &d)) in lens.iter().zip(displs).enumerate() {
                b.xsend(send.add(d), l, i as i32, false);
            }
        }
        Root::Idle => {}
        Root::Remote(r) => b.xrecv(recv.0, recv.1, r, false),
    }
    b.round();
}

/// Allgather(v): each member receives the blocks of every member of the other group (block i
/// from remote rank i) and sends its own block to each of them.
pub fn allgatherv(b: &mut Builder, send: (At, usize), recv: At, lens: &[usize], displs: &[usize]) {
    for (i, (&l, &d)) in lens.iter().zip(displs).enumerate() {
        b.xrecv(recv.add(d), l, i as i32, false);
        b.xsend(send.0, send.1, i as i32, false);
    }
    b.round();
}

/// Alltoall(v/w): block i of `send` goes to remote rank i, block i of `recv` comes from it.
pub fn alltoallw(
    b: &mut Builder,
    send: At,
    slens: &[usize],
    sdispls: &[usize],
    recv: At,
    rlens: &[usize],
    rdispls: &[usize],
) {
    for i in 0..slens.len().max(rlens.len()) {
        if let (Some(&l), Some(&d)) = (rlens.get(i), rdispls.get(i)) {
            b.xrecv(recv.add(d), l, i as i32, false);
        }
        if let (Some(&l), Some(&d)) = (slens.get(i), sdispls.get(i)) {
            b.xsend(send.add(d), l, i as i32, false);
        }
    }
    b.round();
}

/// Reduce: the other group reduces within itself to its rank 0, which sends the result to the
/// root. `count` elements of the schedule's reduction type.
pub fn reduce(b: &mut Builder, send: At, recv: At, count: usize, root: Root) {
    match root {
        Root::Me => {
            let len = count * b.elem();
            b.xrecv(recv, len, 0, false)
        }
        Root::Idle => {}
        Root::Remote(r) => {
            let len = count * b.elem();
            let t = b.tmp(len);
            algos::reduce(b, Some(send), t, count, 0);
            b.round();
            if b.rank() == 0 {
                b.xsend(t, len, r, false);
            }
        }
    }
    b.round();
}

/// Reduce each group's data to its rank 0 (into a new temporary), then swap the results
/// between the leaders: the returned temporary holds, at rank 0, the other group's reduction.
fn reduce_and_swap(b: &mut Builder, send: At, count: usize) -> At {
    let len = count * b.elem();
    let (mine, theirs) = (b.tmp(len), b.tmp(len));
    algos::reduce(b, Some(send), mine, count, 0);
    b.round();
    if b.rank() == 0 {
        b.xsend(mine, len, 0, false);
        b.xrecv(theirs, len, 0, false);
    }
    b.round();
    theirs
}

/// Allreduce: every member gets the reduction of the other group's data.
pub fn allreduce(b: &mut Builder, send: At, recv: At, count: usize) {
    let len = count * b.elem();
    let theirs = reduce_and_swap(b, send, count);
    if b.rank() == 0 {
        b.copy(theirs, recv, len);
    }
    b.round();
    algos::bcast(b, recv, len, 0);
    b.round();
}

/// Reduce-scatter: the other group's reduction (sum(counts) elements, the same total in both
/// groups) is scattered over this group, `counts[i]` elements to rank i.
pub fn reduce_scatter(b: &mut Builder, send: At, recv: At, counts: &[usize]) {
    let e = b.elem();
    let total: usize = counts.iter().sum();
    let theirs = reduce_and_swap(b, send, total);
    let lens: Vec<usize> = counts.iter().map(|c| c * e).collect();
    let mut displs = Vec::with_capacity(lens.len());
    let mut o = 0;
    for l in &lens {
        displs.push(o);
        o += l;
    }
    let mine = lens[b.rank() as usize];
    algos::scatterv(b, theirs, &lens, &displs, Some((recv, mine)), 0);
    b.round();
}
