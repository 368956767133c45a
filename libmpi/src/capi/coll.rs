//! Collective calls and reduction operations of the C ABI. Every collective checks its
//! arguments, builds a schedule (`crate::coll`) and either waits for it (blocking form) or hands
//! out its request (the I- form), which MPI_Wait/Test/Waitall complete like any other.

use std::ffi::{c_int, c_void};

use super::*;
use crate::coll::{self, algos, At, Buf, Builder, Red};
use crate::datatype::Datatype;
use crate::op;

const IN_PLACE: usize = 1;

fn in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

fn at(p: *const c_void) -> At {
    At(Buf::User(p as *mut u8), 0)
}

fn dtype(h: Handle) -> Result<Datatype> {
    if let Some(d) = crate::datatype::lookup(h as usize) {
        return Ok(d);
    }
    dense_derived(h as usize)
}

/// A committed derived type whose elements tile memory from offset 0 (no holes, lb 0, extent =
/// size) moves through a schedule like a predefined type of that size. Schedules move plain
/// byte ranges, so any other derived type is refused with a clear MPI_ERR_TYPE rather than
/// sending the wrong bytes.
fn dense_derived(h: usize) -> Result<Datatype> {
    let l = crate::datatype::table::committed(h)?;
    let size = l.size();
    let dense =
        l.lb() == 0 && l.extent() == size as isize && l.contiguous_run(2) == Some((0, 2 * size));
    if dense || size == 0 {
        return Ok(Datatype { handle: h, size });
    }
    Err(Error::new(
        ErrorClass::Type,
        format!(
            "datatype {h:#x} is not contiguous (holes, lb {} or extent {} != size {}); \
             collectives take predefined and contiguous derived datatypes only \
             (MPI_Pack into MPI_PACKED instead)",
            l.lb(),
            l.extent(),
            size
        ),
    ))
}

/// The bytes `count` elements of `dt` occupy: the one place a collective turns
/// `(count, datatype)` into a length (derived datatypes will pack here).
fn span(count: usize, dt: Datatype) -> usize {
    count * dt.size
}

fn bytes(count: c_int, dt: Handle) -> Result<usize> {
    if count < 0 {
        return Err(Error::new(
            ErrorClass::Count,
            format!("count {count} is negative"),
        ));
    }
    Ok(span(count as usize, dtype(dt)?))
}

/// A buffer of `len` bytes must be a real one: not NULL, not MPI_IN_PLACE where that is not
/// allowed (callers have already taken MPI_IN_PLACE where it is).
fn check_buf(p: *const c_void, len: usize, what: &str) -> Result<()> {
    if p.is_null() && len > 0 {
        return Err(Error::new(
            ErrorClass::Buffer,
            format!("{what} is NULL but holds {len} bytes"),
        ));
    }
    if in_place(p) && len > 0 {
        return Err(Error::new(
            ErrorClass::Buffer,
            format!("{what} cannot be MPI_IN_PLACE here"),
        ));
    }
    Ok(())
}

fn check_root(b: &Builder, root: c_int) -> Result<()> {
    if root < 0 || root >= b.size() {
        return Err(Error::new(
            ErrorClass::Root,
            format!("root {root} is out of range (size {})", b.size()),
        ));
    }
    Ok(())
}

/// `n` non-negative ints from a C array.
///
/// # Safety
/// `p` is NULL or points to `n` readable ints.
unsafe fn ints(p: *const c_int, n: usize, what: &str) -> Result<Vec<usize>> {
    if p.is_null() {
        return Err(Error::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    let v = unsafe { std::slice::from_raw_parts(p, n) };
    v.iter()
        .map(|&c| {
            usize::try_from(c).map_err(|_| {
                Error::new(
                    ErrorClass::Count,
                    format!("{what} has a negative entry ({c})"),
                )
            })
        })
        .collect()
}

/// Counts and displacements (in elements of `dt`) as byte lengths and byte offsets.
///
/// # Safety
/// Both arrays hold `n` ints (or are NULL, an error).
unsafe fn layout(
    counts: *const c_int,
    displs: *const c_int,
    dt: Datatype,
    n: usize,
) -> Result<(Vec<usize>, Vec<usize>)> {
    // SAFETY: forwarded from this function's contract.
    let (c, d) = unsafe {
        (
            ints(counts, n, "counts")?,
            ints(displs, n, "displacements")?,
        )
    };
    Ok((
        c.iter().map(|&x| span(x, dt)).collect(),
        d.iter().map(|&x| span(x, dt)).collect(),
    ))
}

fn extent_of(lens: &[usize], displs: &[usize]) -> usize {
    lens.iter()
        .zip(displs)
        .map(|(l, d)| l + d)
        .max()
        .unwrap_or(0)
}

fn reduction(op: Handle, datatype: Handle) -> Result<Red> {
    let dt = dtype(datatype)?;
    let op = op::lookup(op as usize)?;
    op::check(&op, dt)?;
    Ok(Red { op, dt })
}

/// Build a collective's schedule on `comm` and start it: blocking (`request` None) waits for
/// it; otherwise its request goes to `*request`.
fn coll(
    name: &str,
    comm: Handle,
    request: Option<*mut Handle>,
    build: impl FnOnce(&mut Builder) -> Result<()>,
) -> c_int {
    let ci = comm_index(comm).unwrap_or(crate::comm::WORLD);
    call(name, ci, |rt| {
        if request.is_some_and(|r| r.is_null()) {
            return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
        }
        let s = {
            let mut b = Builder::new(rt.comm(comm_index(comm)?)?, None);
            build(&mut b)?;
            b.finish()
        };
        let id = coll::start(&mut rt.pml, s);
        match request {
            None => status_error(&rt.wait(id)?),
            Some(r) => {
                // SAFETY: checked non-NULL; the caller passes a writable MPI_Request.
                unsafe { r.write(request_handle(id)) };
                Ok(())
            }
        }
    })
}

/// Export a collective's blocking and non-blocking forms around one schedule builder.
macro_rules! coll_fns {
    ($name:ident / $pname:ident, $iname:ident / $piname:ident, $build:ident ( $($arg:ident : $ty:ty),* )) => {
        mpi_fn! {
            fn $name / $pname($($arg: $ty,)* comm: Handle) -> c_int {
                // SAFETY: the caller passes arguments as the standard requires; the call waits
                // for the schedule, so every buffer outlives it.
                coll(stringify!($name), comm, None, |b| unsafe { $build(b, $($arg),*) })
            }
        }
        mpi_fn! {
            fn $iname / $piname($($arg: $ty,)* comm: Handle, request: *mut Handle) -> c_int {
                // SAFETY: the caller passes arguments as the standard requires and keeps the
                // buffers valid until the request completes.
                coll(stringify!($iname), comm, Some(request), |b| unsafe { $build(b, $($arg),*) })
            }
        }
    };
}

unsafe fn barrier(b: &mut Builder) -> Result<()> {
    algos::barrier(b);
    Ok(())
}

mpi_fn! {
    fn MPI_Ibarrier / PMPI_Ibarrier(comm: Handle, request: *mut Handle) -> c_int {
        // SAFETY: a barrier touches no buffers.
        coll("MPI_Ibarrier", comm, Some(request), |b| unsafe { barrier(b) })
    }
}

unsafe fn bcast(
    b: &mut Builder,
    buffer: *mut c_void,
    count: c_int,
    datatype: Handle,
    root: c_int,
) -> Result<()> {
    check_root(b, root)?;
    let len = bytes(count, datatype)?;
    check_buf(buffer, len, "buffer")?;
    algos::bcast(b, at(buffer), len, root);
    Ok(())
}
coll_fns!(MPI_Bcast / PMPI_Bcast, MPI_Ibcast / PMPI_Ibcast,
    bcast(buffer: *mut c_void, count: c_int, datatype: Handle, root: c_int));

/// The send side of a reduction: None for MPI_IN_PLACE.
fn red_send(sendbuf: *const c_void, len: usize) -> Result<Option<At>> {
    if in_place(sendbuf) {
        return Ok(None);
    }
    check_buf(sendbuf, len, "sendbuf")?;
    Ok(Some(at(sendbuf)))
}

unsafe fn reduce(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
    root: c_int,
) -> Result<()> {
    check_root(b, root)?;
    let len = bytes(count, datatype)?;
    b.set_red(reduction(op, datatype)?);
    if in_place(sendbuf) && b.rank() != root {
        return Err(Error::new(
            ErrorClass::Buffer,
            "MPI_IN_PLACE is only valid at the root",
        ));
    }
    let send = red_send(sendbuf, len)?;
    if b.rank() == root {
        check_buf(recvbuf, len, "recvbuf")?;
    }
    algos::reduce(b, send, at(recvbuf), count as usize, root);
    Ok(())
}
coll_fns!(MPI_Reduce / PMPI_Reduce, MPI_Ireduce / PMPI_Ireduce,
    reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle, root: c_int));

unsafe fn allreduce(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    let len = bytes(count, datatype)?;
    b.set_red(reduction(op, datatype)?);
    let send = red_send(sendbuf, len)?;
    check_buf(recvbuf, len, "recvbuf")?;
    algos::allreduce(b, send, at(recvbuf), count as usize);
    Ok(())
}
coll_fns!(MPI_Allreduce / PMPI_Allreduce, MPI_Iallreduce / PMPI_Iallreduce,
    allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle));

unsafe fn scan(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    let len = bytes(count, datatype)?;
    b.set_red(reduction(op, datatype)?);
    let send = red_send(sendbuf, len)?;
    check_buf(recvbuf, len, "recvbuf")?;
    algos::scan(b, send, at(recvbuf), count as usize);
    Ok(())
}
coll_fns!(MPI_Scan / PMPI_Scan, MPI_Iscan / PMPI_Iscan,
    scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle));

unsafe fn exscan(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    let len = bytes(count, datatype)?;
    b.set_red(reduction(op, datatype)?);
    let send = red_send(sendbuf, len)?;
    if b.rank() != 0 {
        check_buf(recvbuf, len, "recvbuf")?;
    }
    algos::exscan(b, send, at(recvbuf), count as usize);
    Ok(())
}
coll_fns!(MPI_Exscan / PMPI_Exscan, MPI_Iexscan / PMPI_Iexscan,
    exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle));

unsafe fn reduce_scatter_counts(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Vec<usize>,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    b.set_red(reduction(op, datatype)?);
    let dt = dtype(datatype)?;
    let total = span(counts.iter().sum(), dt);
    let send = red_send(sendbuf, total)?;
    let mine = counts[b.rank() as usize];
    check_buf(
        recvbuf,
        if send.is_none() {
            total
        } else {
            span(mine, dt)
        },
        "recvbuf",
    )?;
    algos::reduce_scatter(b, send, at(recvbuf), &counts);
    Ok(())
}

unsafe fn reduce_scatter(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    // SAFETY: recvcounts holds one int per rank (MPI_Reduce_scatter's contract).
    let counts = unsafe { ints(recvcounts, b.size() as usize, "recvcounts")? };
    // SAFETY: forwarded.
    unsafe { reduce_scatter_counts(b, sendbuf, recvbuf, counts, datatype, op) }
}
coll_fns!(MPI_Reduce_scatter / PMPI_Reduce_scatter, MPI_Ireduce_scatter / PMPI_Ireduce_scatter,
    reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: Handle, op: Handle));

unsafe fn reduce_scatter_block(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    bytes(recvcount, datatype)?;
    let counts = vec![recvcount as usize; b.size() as usize];
    // SAFETY: forwarded.
    unsafe { reduce_scatter_counts(b, sendbuf, recvbuf, counts, datatype, op) }
}
coll_fns!(MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block, MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block,
    reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: Handle, op: Handle));

/// The send side of a gather/allgather: None for MPI_IN_PLACE.
fn send_side(sendbuf: *const c_void, count: c_int, dt: Handle) -> Result<Option<(At, usize)>> {
    if in_place(sendbuf) {
        return Ok(None);
    }
    let len = bytes(count, dt)?;
    check_buf(sendbuf, len, "sendbuf")?;
    Ok(Some((at(sendbuf), len)))
}

#[allow(clippy::too_many_arguments)]
unsafe fn gatherv_common(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    layout_at_root: impl FnOnce(usize) -> Result<(Vec<usize>, Vec<usize>)>,
    root: c_int,
) -> Result<()> {
    check_root(b, root)?;
    let n = b.size() as usize;
    let is_root = b.rank() == root;
    if in_place(sendbuf) && !is_root {
        return Err(Error::new(
            ErrorClass::Buffer,
            "MPI_IN_PLACE is only valid at the root",
        ));
    }
    let send = send_side(sendbuf, sendcount, sendtype)?;
    let (lens, displs) = if is_root {
        let (l, d) = layout_at_root(n)?;
        check_buf(recvbuf, extent_of(&l, &d), "recvbuf")?;
        (l, d)
    } else {
        (Vec::new(), Vec::new())
    };
    algos::gatherv(b, send, at(recvbuf), &lens, &displs, root);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
unsafe fn gather(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    let f = |n: usize| {
        let l = bytes(recvcount, recvtype)?;
        Ok((vec![l; n], (0..n).map(|i| i * l).collect()))
    };
    // SAFETY: forwarded.
    unsafe { gatherv_common(b, sendbuf, sendcount, sendtype, recvbuf, f, root) }
}
coll_fns!(MPI_Gather / PMPI_Gather, MPI_Igather / PMPI_Igather,
    gather(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, root: c_int));

#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    // SAFETY: at the root both arrays hold one int per rank.
    let f = |n: usize| unsafe { layout(recvcounts, displs, dtype(recvtype)?, n) };
    // SAFETY: forwarded.
    unsafe { gatherv_common(b, sendbuf, sendcount, sendtype, recvbuf, f, root) }
}
coll_fns!(MPI_Gatherv / PMPI_Gatherv, MPI_Igatherv / PMPI_Igatherv,
    gatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Handle, root: c_int));

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv_common(
    b: &mut Builder,
    sendbuf: *const c_void,
    layout_at_root: impl FnOnce(usize) -> Result<(Vec<usize>, Vec<usize>)>,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    check_root(b, root)?;
    let n = b.size() as usize;
    let is_root = b.rank() == root;
    if in_place(recvbuf) && !is_root {
        return Err(Error::new(
            ErrorClass::Buffer,
            "MPI_IN_PLACE is only valid at the root",
        ));
    }
    let recv = if in_place(recvbuf) {
        None
    } else {
        let len = bytes(recvcount, recvtype)?;
        check_buf(recvbuf, len, "recvbuf")?;
        Some((at(recvbuf), len))
    };
    let (lens, displs) = if is_root {
        let (l, d) = layout_at_root(n)?;
        check_buf(sendbuf, extent_of(&l, &d), "sendbuf")?;
        (l, d)
    } else {
        (Vec::new(), Vec::new())
    };
    algos::scatterv(b, at(sendbuf), &lens, &displs, recv, root);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
unsafe fn scatter(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    let f = |n: usize| {
        let l = bytes(sendcount, sendtype)?;
        Ok((vec![l; n], (0..n).map(|i| i * l).collect()))
    };
    // SAFETY: forwarded.
    unsafe { scatterv_common(b, sendbuf, f, recvbuf, recvcount, recvtype, root) }
}
coll_fns!(MPI_Scatter / PMPI_Scatter, MPI_Iscatter / PMPI_Iscatter,
    scatter(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, root: c_int));

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    // SAFETY: at the root both arrays hold one int per rank.
    let f = |n: usize| unsafe { layout(sendcounts, displs, dtype(sendtype)?, n) };
    // SAFETY: forwarded.
    unsafe { scatterv_common(b, sendbuf, f, recvbuf, recvcount, recvtype, root) }
}
coll_fns!(MPI_Scatterv / PMPI_Scatterv, MPI_Iscatterv / PMPI_Iscatterv,
    scatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, root: c_int));

unsafe fn allgatherv_common(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    lens: Vec<usize>,
    displs: Vec<usize>,
) -> Result<()> {
    let send = send_side(sendbuf, sendcount, sendtype)?;
    check_buf(recvbuf, extent_of(&lens, &displs), "recvbuf")?;
    algos::allgatherv(b, send, at(recvbuf), &lens, &displs);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
unsafe fn allgather(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
) -> Result<()> {
    let n = b.size() as usize;
    let l = bytes(recvcount, recvtype)?;
    let (lens, displs) = (vec![l; n], (0..n).map(|i| i * l).collect());
    // SAFETY: forwarded.
    unsafe { allgatherv_common(b, sendbuf, sendcount, sendtype, recvbuf, lens, displs) }
}
coll_fns!(MPI_Allgather / PMPI_Allgather, MPI_Iallgather / PMPI_Iallgather,
    allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle));

#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
) -> Result<()> {
    // SAFETY: both arrays hold one int per rank.
    let (lens, d) = unsafe { layout(recvcounts, displs, dtype(recvtype)?, b.size() as usize)? };
    // SAFETY: forwarded.
    unsafe { allgatherv_common(b, sendbuf, sendcount, sendtype, recvbuf, lens, d) }
}
coll_fns!(MPI_Allgatherv / PMPI_Allgatherv, MPI_Iallgatherv / PMPI_Iallgatherv,
    allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Handle));

/// Alltoall(v/w) once every layout is in bytes.
fn alltoall_common(
    b: &mut Builder,
    sendbuf: *const c_void,
    send: Option<(Vec<usize>, Vec<usize>)>,
    recvbuf: *mut c_void,
    rlens: Vec<usize>,
    rdispls: Vec<usize>,
) -> Result<()> {
    check_buf(recvbuf, extent_of(&rlens, &rdispls), "recvbuf")?;
    match send {
        Some((sl, sd)) => {
            check_buf(sendbuf, extent_of(&sl, &sd), "sendbuf")?;
            algos::alltoallw(
                b,
                Some(at(sendbuf)),
                &sl,
                &sd,
                at(recvbuf),
                &rlens,
                &rdispls,
            );
        }
        None => algos::alltoallw(b, None, &rlens, &rdispls, at(recvbuf), &rlens, &rdispls),
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoall(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
) -> Result<()> {
    let n = b.size() as usize;
    let uniform = |l: usize| (vec![l; n], (0..n).map(|i| i * l).collect::<Vec<_>>());
    let (rl, rd) = uniform(bytes(recvcount, recvtype)?);
    let send = if in_place(sendbuf) {
        None
    } else {
        Some(uniform(bytes(sendcount, sendtype)?))
    };
    alltoall_common(b, sendbuf, send, recvbuf, rl, rd)
}
coll_fns!(MPI_Alltoall / PMPI_Alltoall, MPI_Ialltoall / PMPI_Ialltoall,
    alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle));

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: Handle,
) -> Result<()> {
    let n = b.size() as usize;
    // SAFETY: every array holds one int per rank (the send ones unless MPI_IN_PLACE).
    let (rl, rd) = unsafe { layout(recvcounts, rdispls, dtype(recvtype)?, n)? };
    let send = if in_place(sendbuf) {
        None
    } else {
        // SAFETY: as above.
        Some(unsafe { layout(sendcounts, sdispls, dtype(sendtype)?, n)? })
    };
    alltoall_common(b, sendbuf, send, recvbuf, rl, rd)
}
coll_fns!(MPI_Alltoallv / PMPI_Alltoallv, MPI_Ialltoallv / PMPI_Ialltoallv,
    alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Handle));

/// Alltoallw's per-rank types: byte lengths from counts; displacements are already in bytes.
///
/// # Safety
/// The three arrays hold `n` entries each.
unsafe fn w_layout(
    counts: *const c_int,
    displs: *const c_int,
    types: *const Handle,
    n: usize,
) -> Result<(Vec<usize>, Vec<usize>)> {
    if types.is_null() {
        return Err(Error::new(ErrorClass::Arg, "datatype array is NULL"));
    }
    // SAFETY: the caller's contract.
    let (c, d, t) = unsafe {
        (
            ints(counts, n, "counts")?,
            ints(displs, n, "displacements")?,
            std::slice::from_raw_parts(types, n),
        )
    };
    let lens = c
        .iter()
        .zip(t)
        .map(|(&c, &t)| Ok(span(c, dtype(t)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok((lens, d))
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const Handle,
) -> Result<()> {
    let n = b.size() as usize;
    // SAFETY: every array holds one entry per rank (the send ones unless MPI_IN_PLACE).
    let (rl, rd) = unsafe { w_layout(recvcounts, rdispls, recvtypes, n)? };
    let send = if in_place(sendbuf) {
        None
    } else {
        // SAFETY: as above.
        Some(unsafe { w_layout(sendcounts, sdispls, sendtypes, n)? })
    };
    alltoall_common(b, sendbuf, send, recvbuf, rl, rd)
}
coll_fns!(MPI_Alltoallw / PMPI_Alltoallw, MPI_Ialltoallw / PMPI_Ialltoallw,
    alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const Handle));

mpi_fn! {
    fn MPI_Reduce_local / PMPI_Reduce_local(inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle) -> c_int {
        let r = (|| {
            let len = bytes(count, datatype)?;
            let red = reduction(op, datatype)?;
            check_buf(inbuf, len, "inbuf")?;
            check_buf(inoutbuf, len, "inoutbuf")?;
            if len == 0 {
                return Ok(());
            }
            let (i, o) = (inbuf as usize, inoutbuf as usize);
            if i < o + len && o < i + len {
                return Err(Error::new(ErrorClass::Buffer, "inbuf and inoutbuf overlap"));
            }
            // SAFETY: both buffers hold `count` elements of `datatype` (MPI_Reduce_local's
            // contract) and were just checked not to overlap.
            let (a, b) = unsafe {
                (
                    std::slice::from_raw_parts(inbuf.cast::<u8>(), len),
                    std::slice::from_raw_parts_mut(inoutbuf.cast::<u8>(), len),
                )
            };
            op::apply(&red.op, red.dt, count as usize, a, b);
            Ok(())
        })();
        match r {
            Ok(()) => MPI_SUCCESS,
            Err(e) => fail("MPI_Reduce_local", crate::comm::WORLD, e),
        }
    }
}

mpi_fn! {
    fn MPI_Op_create / PMPI_Op_create(user_fn: Option<op::CUserFn>, commute: c_int, op: *mut Handle) -> c_int {
        let (Some(f), false) = (user_fn, op.is_null()) else {
            return fail("MPI_Op_create", crate::comm::WORLD, Error::new(ErrorClass::Arg, "user function or op pointer is NULL"));
        };
        // SAFETY: checked non-NULL; the caller passes a writable MPI_Op.
        unsafe { op.write(op::create(f, commute != 0) as Handle) };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Op_free / PMPI_Op_free(op: *mut Handle) -> c_int {
        if op.is_null() {
            return fail("MPI_Op_free", crate::comm::WORLD, Error::new(ErrorClass::Arg, "op pointer is NULL"));
        }
        // SAFETY: checked non-NULL; the caller's MPI_Op.
        match op::free(unsafe { *op } as usize) {
            Ok(()) => {
                // SAFETY: as above.
                unsafe { *op = op::OP_NULL as Handle };
                MPI_SUCCESS
            }
            Err(e) => fail("MPI_Op_free", crate::comm::WORLD, e),
        }
    }
}

mpi_fn! {
    fn MPI_Op_commutative / PMPI_Op_commutative(op: Handle, commute: *mut c_int) -> c_int {
        if commute.is_null() {
            return fail("MPI_Op_commutative", crate::comm::WORLD, Error::new(ErrorClass::Arg, "commute pointer is NULL"));
        }
        match op::lookup(op as usize) {
            Ok(o) => {
                // SAFETY: checked non-NULL.
                unsafe { *commute = o.commutative() as c_int };
                MPI_SUCCESS
            }
            Err(e) => fail("MPI_Op_commutative", crate::comm::WORLD, e),
        }
    }
}
