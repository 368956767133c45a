//! The C collectives on intercommunicators: argument checks with MPI's intercommunicator rules
//! (MPI_ROOT / MPI_PROC_NULL roots, per-peer arrays sized by the remote group, no
//! MPI_IN_PLACE), buffers staged for any datatype (`coll::stage`), then `coll::inter`'s
//! schedules. `coll` and `coll_v` dispatch here when the
//! communicator is an intercommunicator.

use std::ffi::{c_int, c_void};

use super::coll::{at, count_of, in_place, reduction_of, shape, side, Wide};
use super::*;
use crate::coll::inter::{self, Root};
use crate::coll::stage::{Blocks, Dir};
use crate::coll::{At, Builder};

const MPI_ROOT: c_int = -4;
const MPI_PROC_NULL: c_int = -3;

/// The root argument: MPI_ROOT, MPI_PROC_NULL or a rank of the remote group.
pub(super) fn root_of(b: &Builder, root: c_int) -> Result<Root> {
    match root {
        MPI_ROOT => Ok(Root::Me),
        MPI_PROC_NULL => Ok(Root::Idle),
        r if (0..b.peer_size()).contains(&r) => Ok(Root::Remote(r)),
        r => Err(Error::new(
            ErrorClass::Root,
            format!(
                "root {r} is invalid on an intercommunicator (MPI_ROOT, MPI_PROC_NULL or a rank \
                 of the remote group, size {})",
                b.peer_size()
            ),
        )),
    }
}

fn no_in_place(p: *const c_void, what: &str) -> Result<()> {
    if in_place(p) {
        return Err(Error::new(
            ErrorClass::Buffer,
            format!("{what} cannot be MPI_IN_PLACE on an intercommunicator"),
        ));
    }
    Ok(())
}

/// Stage one buffer of `count` elements of `datatype` (any committed type, `coll::stage`).
fn staged(
    b: &mut Builder,
    p: *const c_void,
    count: impl Wide,
    datatype: Handle,
    dir: Dir,
    what: &str,
) -> Result<(At, usize)> {
    no_in_place(p, what)?;
    side(
        b,
        p,
        count_of(count, "count")?,
        &shape(datatype)?,
        dir,
        what,
    )
}

pub(super) fn bcast(
    b: &mut Builder,
    buffer: *mut c_void,
    count: impl Wide,
    datatype: Handle,
    root: c_int,
) -> Result<()> {
    let root = root_of(b, root)?;
    if root == Root::Idle {
        // MPI_PROC_NULL: every other argument is insignificant.
        return Ok(());
    }
    let dir = if root == Root::Me { Dir::In } else { Dir::Out };
    let (buf, len) = staged(b, buffer, count, datatype, dir, "buffer")?;
    inter::bcast(b, buf, len, root);
    Ok(())
}

/// No blocks (a rank whose side of a rooted collective is insignificant).
fn none(p: *const c_void) -> Blocks {
    Blocks {
        at: at(p),
        lens: Vec::new(),
        displs: Vec::new(),
    }
}

/// Gather(v): `stage_at_root(b, n)` stages the root's receive blocks for the `n` remote ranks.
#[allow(clippy::too_many_arguments)]
pub(super) fn gatherv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    stage_at_root: impl FnOnce(&mut Builder, usize) -> Result<Blocks>,
    root: c_int,
) -> Result<()> {
    let root = root_of(b, root)?;
    let (mut send, mut r) = ((at(sendbuf), 0), none(recvbuf));
    match root {
        Root::Me => {
            no_in_place(recvbuf, "recvbuf")?;
            r = stage_at_root(b, b.peer_size() as usize)?;
        }
        Root::Idle => {}
        Root::Remote(_) => {
            send = staged(b, sendbuf, sendcount, sendtype, Dir::In, "sendbuf")?;
        }
    }
    inter::gatherv(b, send, r.at, &r.lens, &r.displs, root);
    Ok(())
}

/// Scatter(v): the mirror of `gatherv`.
pub(super) fn scatterv(
    b: &mut Builder,
    sendbuf: *const c_void,
    stage_at_root: impl FnOnce(&mut Builder, usize) -> Result<Blocks>,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    let root = root_of(b, root)?;
    let (mut recv, mut s) = ((at(recvbuf), 0), none(sendbuf));
    match root {
        Root::Me => {
            no_in_place(sendbuf, "sendbuf")?;
            s = stage_at_root(b, b.peer_size() as usize)?;
        }
        Root::Idle => {}
        Root::Remote(_) => {
            recv = staged(b, recvbuf, recvcount, recvtype, Dir::Out, "recvbuf")?;
        }
    }
    inter::scatterv(b, s.at, &s.lens, &s.displs, recv, root);
    Ok(())
}

/// Allgather(v): `stage_recv` stages the blocks of the remote ranks.
pub(super) fn allgatherv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    stage_recv: impl FnOnce(&mut Builder) -> Result<Blocks>,
) -> Result<()> {
    let send = staged(b, sendbuf, sendcount, sendtype, Dir::In, "sendbuf")?;
    no_in_place(recvbuf, "recvbuf")?;
    let r = stage_recv(b)?;
    inter::allgatherv(b, send, r.at, &r.lens, &r.displs);
    Ok(())
}

/// Alltoall(v/w) with both sides staged by the caller (None: MPI_IN_PLACE, refused).
pub(super) fn alltoallw(
    b: &mut Builder,
    sendbuf: *const c_void,
    send: Option<Blocks>,
    recv: Blocks,
) -> Result<()> {
    let Some(s) = send else {
        return no_in_place(sendbuf, "sendbuf");
    };
    inter::alltoallw(
        b,
        s.at,
        &s.lens,
        &s.displs,
        recv.at,
        &recv.lens,
        &recv.displs,
    );
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(super) fn reduce(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Wide,
    datatype: Handle,
    op: Handle,
    root: c_int,
) -> Result<()> {
    let root = root_of(b, root)?;
    if root == Root::Idle {
        return Ok(());
    }
    let c = count_of(count, "count")?;
    let (red, n, sh) = reduction_of(op, datatype, c)?;
    b.set_red(red);
    let (send, recv) = if root == Root::Me {
        no_in_place(recvbuf, "recvbuf")?;
        let r = side(b, recvbuf, c, &sh, Dir::Out, "recvbuf")?.0;
        (at(sendbuf), r)
    } else {
        no_in_place(sendbuf, "sendbuf")?;
        (side(b, sendbuf, c, &sh, Dir::In, "sendbuf")?.0, at(recvbuf))
    };
    inter::reduce(b, send, recv, n, root);
    Ok(())
}

pub(super) fn allreduce(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Wide,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    let c = count_of(count, "count")?;
    let (red, n, sh) = reduction_of(op, datatype, c)?;
    b.set_red(red);
    no_in_place(sendbuf, "sendbuf")?;
    no_in_place(recvbuf, "recvbuf")?;
    let s = side(b, sendbuf, c, &sh, Dir::In, "sendbuf")?.0;
    let r = side(b, recvbuf, c, &sh, Dir::Out, "recvbuf")?.0;
    inter::allreduce(b, s, r, n);
    Ok(())
}

pub(super) fn reduce_scatter(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Vec<usize>,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    let total = counts
        .iter()
        .try_fold(0usize, |t, &c| t.checked_add(c))
        .ok_or_else(|| Error::new(ErrorClass::Count, "recvcounts overflow"))?;
    let mine = counts[b.rank() as usize];
    let (red, per, sh) = reduction_of(op, datatype, 1)?;
    b.set_red(red);
    no_in_place(sendbuf, "sendbuf")?;
    no_in_place(recvbuf, "recvbuf")?;
    let s = side(b, sendbuf, total, &sh, Dir::In, "sendbuf")?.0;
    let r = side(b, recvbuf, mine, &sh, Dir::Out, "recvbuf")?.0;
    let basic: Vec<usize> = counts.iter().map(|&c| c * per).collect();
    inter::reduce_scatter(b, s, r, &basic);
    Ok(())
}

/// Scan and exscan are not defined on intercommunicators.
pub(super) fn no_scan(name: &str) -> Result<()> {
    Err(Error::new(
        ErrorClass::Comm,
        format!("{name} is not defined on an intercommunicator"),
    ))
}
