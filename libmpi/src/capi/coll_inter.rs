//! The C collectives on intercommunicators: argument checks with MPI's intercommunicator rules
//! (MPI_ROOT / MPI_PROC_NULL roots, per-peer arrays sized by the remote group, no
//! MPI_IN_PLACE), then `coll::inter`'s schedules. `coll` and `coll_v` dispatch here when the
//! communicator is an intercommunicator.

use std::ffi::{c_int, c_void};

use super::coll::{at, bytes, check_buf, extent_of, in_place, reduction, span, Wide};
use super::*;
use crate::coll::inter::{self, Root};
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

/// A buffer of `len` bytes that is read or written here.
fn buf(p: *const c_void, len: usize, what: &str) -> Result<(At, usize)> {
    no_in_place(p, what)?;
    check_buf(p, len, what)?;
    Ok((at(p), len))
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
    let len = bytes(count, datatype)?;
    buf(buffer, len, "buffer")?;
    inter::bcast(b, at(buffer), len, root);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(super) fn gatherv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    layout_at_root: impl FnOnce(usize) -> Result<(Vec<usize>, Vec<usize>)>,
    root: c_int,
) -> Result<()> {
    let root = root_of(b, root)?;
    let (mut send, mut lens, mut displs) = ((at(sendbuf), 0), Vec::new(), Vec::new());
    match root {
        Root::Me => {
            (lens, displs) = layout_at_root(b.peer_size() as usize)?;
            no_in_place(recvbuf, "recvbuf")?;
            check_buf(recvbuf, extent_of(&lens, &displs), "recvbuf")?;
        }
        Root::Idle => {}
        Root::Remote(_) => send = buf(sendbuf, bytes(sendcount, sendtype)?, "sendbuf")?,
    }
    inter::gatherv(b, send, at(recvbuf), &lens, &displs, root);
    Ok(())
}

pub(super) fn scatterv(
    b: &mut Builder,
    sendbuf: *const c_void,
    layout_at_root: impl FnOnce(usize) -> Result<(Vec<usize>, Vec<usize>)>,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    let root = root_of(b, root)?;
    let (mut recv, mut lens, mut displs) = ((at(recvbuf), 0), Vec::new(), Vec::new());
    match root {
        Root::Me => {
            (lens, displs) = layout_at_root(b.peer_size() as usize)?;
            no_in_place(sendbuf, "sendbuf")?;
            check_buf(sendbuf, extent_of(&lens, &displs), "sendbuf")?;
        }
        Root::Idle => {}
        Root::Remote(_) => recv = buf(recvbuf, bytes(recvcount, recvtype)?, "recvbuf")?,
    }
    inter::scatterv(b, at(sendbuf), &lens, &displs, recv, root);
    Ok(())
}

pub(super) fn allgatherv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    lens: Vec<usize>,
    displs: Vec<usize>,
) -> Result<()> {
    let send = buf(sendbuf, bytes(sendcount, sendtype)?, "sendbuf")?;
    no_in_place(recvbuf, "recvbuf")?;
    check_buf(recvbuf, extent_of(&lens, &displs), "recvbuf")?;
    inter::allgatherv(b, send, at(recvbuf), &lens, &displs);
    Ok(())
}

pub(super) fn alltoallw(
    b: &mut Builder,
    sendbuf: *const c_void,
    send: Option<(Vec<usize>, Vec<usize>)>,
    recvbuf: *mut c_void,
    rlens: Vec<usize>,
    rdispls: Vec<usize>,
) -> Result<()> {
    let Some((sl, sd)) = send else {
        return no_in_place(sendbuf, "sendbuf");
    };
    check_buf(sendbuf, extent_of(&sl, &sd), "sendbuf")?;
    no_in_place(recvbuf, "recvbuf")?;
    check_buf(recvbuf, extent_of(&rlens, &rdispls), "recvbuf")?;
    inter::alltoallw(b, at(sendbuf), &sl, &sd, at(recvbuf), &rlens, &rdispls);
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
    let len = bytes(count, datatype)?;
    b.set_red(reduction(op, datatype)?);
    match root {
        Root::Me => buf(recvbuf, len, "recvbuf")?,
        _ => buf(sendbuf, len, "sendbuf")?,
    };
    inter::reduce(b, at(sendbuf), at(recvbuf), count.wide() as usize, root);
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
    let len = bytes(count, datatype)?;
    b.set_red(reduction(op, datatype)?);
    buf(sendbuf, len, "sendbuf")?;
    buf(recvbuf, len, "recvbuf")?;
    inter::allreduce(b, at(sendbuf), at(recvbuf), count.wide() as usize);
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
    b.set_red(reduction(op, datatype)?);
    let dt = super::coll::dtype(datatype)?;
    let sum = counts.iter().try_fold(0usize, |t, &c| t.checked_add(c));
    buf(sendbuf, span(sum.unwrap_or(usize::MAX), dt)?, "sendbuf")?;
    buf(recvbuf, span(counts[b.rank() as usize], dt)?, "recvbuf")?;
    inter::reduce_scatter(b, at(sendbuf), at(recvbuf), &counts);
    Ok(())
}

/// Scan and exscan are not defined on intercommunicators.
pub(super) fn no_scan(name: &str) -> Result<()> {
    Err(Error::new(
        ErrorClass::Comm,
        format!("{name} is not defined on an intercommunicator"),
    ))
}
