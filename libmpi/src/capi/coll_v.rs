//! Gathers, scatters and all-to-alls (with their v- and w- forms) of the C ABI, in all four
//! forms each (blocking and I-, int and large-count `_c`); helpers in `coll`.

use std::ffi::{c_int, c_void};

use super::coll::{
    at, bytes, check_buf, check_root, coll, coll_fns, dtype, extent_of, in_place, ints, layout,
    pick, span, uniform, Wide,
};
use super::*;
use crate::coll::{algos, At, Builder};

/// The send side of a gather/allgather: None for MPI_IN_PLACE.
fn send_side(sendbuf: *const c_void, count: impl Wide, dt: Handle) -> Result<Option<(At, usize)>> {
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
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    layout_at_root: impl FnOnce(usize) -> Result<(Vec<usize>, Vec<usize>)>,
    root: c_int,
) -> Result<()> {
    if b.is_inter() {
        return super::coll_inter::gatherv(
            b,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            layout_at_root,
            root,
        );
    }
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
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    let f = |n: usize| uniform(bytes(recvcount, recvtype)?, n);
    // SAFETY: forwarded.
    unsafe { gatherv_common(b, sendbuf, sendcount, sendtype, recvbuf, f, root) }
}
coll_fns!(MPI_Gather / PMPI_Gather, MPI_Igather / PMPI_Igather,
    MPI_Gather_c / PMPI_Gather_c, MPI_Igather_c / PMPI_Igather_c,
    gather(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle, root: c_int));

#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const impl Wide,
    displs: *const impl Wide,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    // SAFETY: at the root both arrays hold one int per rank.
    let f = |n: usize| unsafe { layout(recvcounts, displs, dtype(recvtype)?, n) };
    // SAFETY: forwarded.
    unsafe { gatherv_common(b, sendbuf, sendcount, sendtype, recvbuf, f, root) }
}
coll_fns!(MPI_Gatherv / PMPI_Gatherv, MPI_Igatherv / PMPI_Igatherv,
    MPI_Gatherv_c / PMPI_Gatherv_c, MPI_Igatherv_c / PMPI_Igatherv_c,
    gatherv(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, displs: *const c_int | *const Aint, recvtype: Handle, root: c_int));

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv_common(
    b: &mut Builder,
    sendbuf: *const c_void,
    layout_at_root: impl FnOnce(usize) -> Result<(Vec<usize>, Vec<usize>)>,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    if b.is_inter() {
        return super::coll_inter::scatterv(
            b,
            sendbuf,
            layout_at_root,
            recvbuf,
            recvcount,
            recvtype,
            root,
        );
    }
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
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    let f = |n: usize| uniform(bytes(sendcount, sendtype)?, n);
    // SAFETY: forwarded.
    unsafe { scatterv_common(b, sendbuf, f, recvbuf, recvcount, recvtype, root) }
}
coll_fns!(MPI_Scatter / PMPI_Scatter, MPI_Iscatter / PMPI_Iscatter,
    MPI_Scatter_c / PMPI_Scatter_c, MPI_Iscatter_c / PMPI_Iscatter_c,
    scatter(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle, root: c_int));

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcounts: *const impl Wide,
    displs: *const impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    // SAFETY: at the root both arrays hold one int per rank.
    let f = |n: usize| unsafe { layout(sendcounts, displs, dtype(sendtype)?, n) };
    // SAFETY: forwarded.
    unsafe { scatterv_common(b, sendbuf, f, recvbuf, recvcount, recvtype, root) }
}
coll_fns!(MPI_Scatterv / PMPI_Scatterv, MPI_Iscatterv / PMPI_Iscatterv,
    MPI_Scatterv_c / PMPI_Scatterv_c, MPI_Iscatterv_c / PMPI_Iscatterv_c,
    scatterv(sendbuf: *const c_void, sendcounts: *const c_int | *const Count, displs: *const c_int | *const Aint, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle, root: c_int));

unsafe fn allgatherv_common(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    lens: Vec<usize>,
    displs: Vec<usize>,
) -> Result<()> {
    if b.is_inter() {
        return super::coll_inter::allgatherv(
            b, sendbuf, sendcount, sendtype, recvbuf, lens, displs,
        );
    }
    let send = send_side(sendbuf, sendcount, sendtype)?;
    check_buf(recvbuf, extent_of(&lens, &displs), "recvbuf")?;
    algos::allgatherv(b, send, at(recvbuf), &lens, &displs);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
unsafe fn allgather(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: Handle,
) -> Result<()> {
    let n = b.peer_size() as usize;
    let (lens, displs) = uniform(bytes(recvcount, recvtype)?, n)?;
    // SAFETY: forwarded.
    unsafe { allgatherv_common(b, sendbuf, sendcount, sendtype, recvbuf, lens, displs) }
}
coll_fns!(MPI_Allgather / PMPI_Allgather, MPI_Iallgather / PMPI_Iallgather,
    MPI_Allgather_c / PMPI_Allgather_c, MPI_Iallgather_c / PMPI_Iallgather_c,
    allgather(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle));

#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const impl Wide,
    displs: *const impl Wide,
    recvtype: Handle,
) -> Result<()> {
    // SAFETY: both arrays hold one int per rank.
    let (lens, d) =
        unsafe { layout(recvcounts, displs, dtype(recvtype)?, b.peer_size() as usize)? };
    // SAFETY: forwarded.
    unsafe { allgatherv_common(b, sendbuf, sendcount, sendtype, recvbuf, lens, d) }
}
coll_fns!(MPI_Allgatherv / PMPI_Allgatherv, MPI_Iallgatherv / PMPI_Iallgatherv,
    MPI_Allgatherv_c / PMPI_Allgatherv_c, MPI_Iallgatherv_c / PMPI_Iallgatherv_c,
    allgatherv(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, displs: *const c_int | *const Aint, recvtype: Handle));

/// Alltoall(v/w) once every layout is in bytes.
fn alltoall_common(
    b: &mut Builder,
    sendbuf: *const c_void,
    send: Option<(Vec<usize>, Vec<usize>)>,
    recvbuf: *mut c_void,
    rlens: Vec<usize>,
    rdispls: Vec<usize>,
) -> Result<()> {
    if b.is_inter() {
        return super::coll_inter::alltoallw(b, sendbuf, send, recvbuf, rlens, rdispls);
    }
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
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: Handle,
) -> Result<()> {
    let n = b.peer_size() as usize;
    let (rl, rd) = uniform(bytes(recvcount, recvtype)?, n)?;
    let send = if in_place(sendbuf) {
        None
    } else {
        Some(uniform(bytes(sendcount, sendtype)?, n)?)
    };
    alltoall_common(b, sendbuf, send, recvbuf, rl, rd)
}
coll_fns!(MPI_Alltoall / PMPI_Alltoall, MPI_Ialltoall / PMPI_Ialltoall,
    MPI_Alltoall_c / PMPI_Alltoall_c, MPI_Ialltoall_c / PMPI_Ialltoall_c,
    alltoall(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle));

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcounts: *const impl Wide,
    sdispls: *const impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const impl Wide,
    rdispls: *const impl Wide,
    recvtype: Handle,
) -> Result<()> {
    let n = b.peer_size() as usize;
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
    MPI_Alltoallv_c / PMPI_Alltoallv_c, MPI_Ialltoallv_c / PMPI_Ialltoallv_c,
    alltoallv(sendbuf: *const c_void, sendcounts: *const c_int | *const Count, sdispls: *const c_int | *const Aint, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, rdispls: *const c_int | *const Aint, recvtype: Handle));

/// Alltoallw's per-rank types: byte lengths from counts; displacements are already in bytes.
///
/// # Safety
/// The three arrays hold `n` entries each.
unsafe fn w_layout(
    counts: *const impl Wide,
    displs: *const impl Wide,
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
        .map(|(&c, &t)| span(c, dtype(t)?))
        .collect::<Result<Vec<_>>>()?;
    Ok((lens, d))
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcounts: *const impl Wide,
    sdispls: *const impl Wide,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: *const impl Wide,
    rdispls: *const impl Wide,
    recvtypes: *const Handle,
) -> Result<()> {
    let n = b.peer_size() as usize;
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
    MPI_Alltoallw_c / PMPI_Alltoallw_c, MPI_Ialltoallw_c / PMPI_Ialltoallw_c,
    alltoallw(sendbuf: *const c_void, sendcounts: *const c_int | *const Count, sdispls: *const c_int | *const Aint, sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, rdispls: *const c_int | *const Aint, recvtypes: *const Handle));

// The persistent forms (MPI_*_init), around the same builders (capi/coll_init.rs).
use super::coll_init::init_fns;
init_fns!(MPI_Gather_init / PMPI_Gather_init, MPI_Gather_init_c / PMPI_Gather_init_c,
    gather(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle, root: c_int));
init_fns!(MPI_Gatherv_init / PMPI_Gatherv_init, MPI_Gatherv_init_c / PMPI_Gatherv_init_c,
    gatherv(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, displs: *const c_int | *const Aint, recvtype: Handle, root: c_int));
init_fns!(MPI_Scatter_init / PMPI_Scatter_init, MPI_Scatter_init_c / PMPI_Scatter_init_c,
    scatter(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle, root: c_int));
init_fns!(MPI_Scatterv_init / PMPI_Scatterv_init, MPI_Scatterv_init_c / PMPI_Scatterv_init_c,
    scatterv(sendbuf: *const c_void, sendcounts: *const c_int | *const Count, displs: *const c_int | *const Aint, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle, root: c_int));
init_fns!(MPI_Allgather_init / PMPI_Allgather_init, MPI_Allgather_init_c / PMPI_Allgather_init_c,
    allgather(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle));
init_fns!(MPI_Allgatherv_init / PMPI_Allgatherv_init, MPI_Allgatherv_init_c / PMPI_Allgatherv_init_c,
    allgatherv(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, displs: *const c_int | *const Aint, recvtype: Handle));
init_fns!(MPI_Alltoall_init / PMPI_Alltoall_init, MPI_Alltoall_init_c / PMPI_Alltoall_init_c,
    alltoall(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle));
init_fns!(MPI_Alltoallv_init / PMPI_Alltoallv_init, MPI_Alltoallv_init_c / PMPI_Alltoallv_init_c,
    alltoallv(sendbuf: *const c_void, sendcounts: *const c_int | *const Count, sdispls: *const c_int | *const Aint, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, rdispls: *const c_int | *const Aint, recvtype: Handle));
init_fns!(MPI_Alltoallw_init / PMPI_Alltoallw_init, MPI_Alltoallw_init_c / PMPI_Alltoallw_init_c,
    alltoallw(sendbuf: *const c_void, sendcounts: *const c_int | *const Count, sdispls: *const c_int | *const Aint, sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, rdispls: *const c_int | *const Aint, recvtypes: *const Handle));
