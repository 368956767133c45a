//! Neighbour collectives of the C ABI (MPI_Neighbor_* and MPI_Ineighbor_*, int and `_c`
//! forms): each block is a message of its own (`message_c`), so any datatype the
//! point-to-point layer takes works here; the exchange itself is `crate::topo::neighbor`.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::coll::{coll, coll_fns, in_place, pick, Wide};
use super::*;
use crate::coll::Builder;
use crate::datatype::Msg;
use crate::topo::{neighbor, Topology};

/// The communicator's topology: neighbour collectives need one (MPI_ERR_TOPOLOGY).
fn topology(b: &Builder) -> Result<Arc<Topology>> {
    b.comm().topo.clone().ok_or_else(|| {
        crate::topo::wrong("a topology (cartesian, graph or distributed graph)", None)
    })
}

fn extent(dt: Handle) -> Result<isize> {
    Ok(crate::datatype::table::layout(dt as usize)?.extent())
}

/// `count` elements of `dt` at `base` + `disp` bytes.
fn block(base: *const c_void, disp: i64, count: Count, dt: Handle) -> Result<Msg> {
    let p = base.cast::<u8>().wrapping_offset(disp as isize);
    message_c(p.cast(), count, dt)
}

/// The byte offset of element `i * count` (or of displacement `i` elements) of `dt`.
fn elem_off(i: i64, ext: isize) -> Result<i64> {
    i.checked_mul(ext as i64)
        .ok_or_else(|| Error::new(ErrorClass::Count, "displacement overflows"))
}

/// `n` values of a C array as i64 (NULL only when `n` is 0).
///
/// # Safety
/// `p` is NULL or points to `n` readable values.
unsafe fn vals<T: Wide>(p: *const T, n: usize, what: &str) -> Result<Vec<i64>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(Error::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) }
        .iter()
        .map(|x| x.wide())
        .collect())
}

fn no_in_place(sendbuf: *const c_void) -> Result<()> {
    if in_place(sendbuf) {
        return Err(Error::new(
            ErrorClass::Buffer,
            "MPI_IN_PLACE is not valid in a neighbour collective",
        ));
    }
    Ok(())
}

/// Build the exchange from per-block messages.
fn exchange(b: &mut Builder, t: &Topology, recvs: Vec<Msg>, sends: Vec<Msg>) {
    neighbor::build(b, t, |i| recvs[i].clone(), |j| sends[j].clone());
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgather(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: Handle,
) -> Result<()> {
    no_in_place(sendbuf)?;
    let t = topology(b)?;
    let (ni, no) = t.degrees(b.rank());
    let send = message_c(sendbuf, sendcount.wide(), sendtype)?;
    let (rc, ext) = (recvcount.wide(), extent(recvtype)?);
    let recvs = (0..ni as i64)
        .map(|i| block(recvbuf, elem_off(i * rc, ext)?, rc, recvtype))
        .collect::<Result<_>>()?;
    exchange(b, &t, recvs, vec![send; no]);
    Ok(())
}
coll_fns!(MPI_Neighbor_allgather / PMPI_Neighbor_allgather, MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather,
    MPI_Neighbor_allgather_c / PMPI_Neighbor_allgather_c, MPI_Ineighbor_allgather_c / PMPI_Ineighbor_allgather_c,
    neighbor_allgather(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle));

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgatherv(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const impl Wide,
    displs: *const impl Wide,
    recvtype: Handle,
) -> Result<()> {
    no_in_place(sendbuf)?;
    let t = topology(b)?;
    let (ni, no) = t.degrees(b.rank());
    let send = message_c(sendbuf, sendcount.wide(), sendtype)?;
    let ext = extent(recvtype)?;
    // SAFETY: both arrays hold one entry per in-neighbour.
    let (c, d) = unsafe {
        (
            vals(recvcounts, ni, "recvcounts")?,
            vals(displs, ni, "displs")?,
        )
    };
    let recvs = (0..ni)
        .map(|i| block(recvbuf, elem_off(d[i], ext)?, c[i], recvtype))
        .collect::<Result<_>>()?;
    exchange(b, &t, recvs, vec![send; no]);
    Ok(())
}
coll_fns!(MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv,
    MPI_Neighbor_allgatherv_c / PMPI_Neighbor_allgatherv_c, MPI_Ineighbor_allgatherv_c / PMPI_Ineighbor_allgatherv_c,
    neighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, displs: *const c_int | *const Aint, recvtype: Handle));

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoall(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: Handle,
) -> Result<()> {
    no_in_place(sendbuf)?;
    let t = topology(b)?;
    let (ni, no) = t.degrees(b.rank());
    let (sc, sext) = (sendcount.wide(), extent(sendtype)?);
    let (rc, rext) = (recvcount.wide(), extent(recvtype)?);
    let sends = (0..no as i64)
        .map(|j| block(sendbuf, elem_off(j * sc, sext)?, sc, sendtype))
        .collect::<Result<_>>()?;
    let recvs = (0..ni as i64)
        .map(|i| block(recvbuf, elem_off(i * rc, rext)?, rc, recvtype))
        .collect::<Result<_>>()?;
    exchange(b, &t, recvs, sends);
    Ok(())
}
coll_fns!(MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall, MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall,
    MPI_Neighbor_alltoall_c / PMPI_Neighbor_alltoall_c, MPI_Ineighbor_alltoall_c / PMPI_Ineighbor_alltoall_c,
    neighbor_alltoall(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle));

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallv(
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
    no_in_place(sendbuf)?;
    let t = topology(b)?;
    let (ni, no) = t.degrees(b.rank());
    let (sext, rext) = (extent(sendtype)?, extent(recvtype)?);
    // SAFETY: the send arrays hold one entry per out-neighbour, the receive ones per in-neighbour.
    let (sc, sd, rc, rd) = unsafe {
        (
            vals(sendcounts, no, "sendcounts")?,
            vals(sdispls, no, "sdispls")?,
            vals(recvcounts, ni, "recvcounts")?,
            vals(rdispls, ni, "rdispls")?,
        )
    };
    let sends = (0..no)
        .map(|j| block(sendbuf, elem_off(sd[j], sext)?, sc[j], sendtype))
        .collect::<Result<_>>()?;
    let recvs = (0..ni)
        .map(|i| block(recvbuf, elem_off(rd[i], rext)?, rc[i], recvtype))
        .collect::<Result<_>>()?;
    exchange(b, &t, recvs, sends);
    Ok(())
}
coll_fns!(MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv,
    MPI_Neighbor_alltoallv_c / PMPI_Neighbor_alltoallv_c, MPI_Ineighbor_alltoallv_c / PMPI_Ineighbor_alltoallv_c,
    neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int | *const Count, sdispls: *const c_int | *const Aint, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, rdispls: *const c_int | *const Aint, recvtype: Handle));

/// `n` datatype handles.
///
/// # Safety
/// `p` is NULL or holds `n` handles.
unsafe fn types(p: *const Handle, n: usize, what: &str) -> Result<Vec<Handle>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(Error::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallw(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcounts: *const impl Wide,
    sdispls: *const Aint,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: *const impl Wide,
    rdispls: *const Aint,
    recvtypes: *const Handle,
) -> Result<()> {
    no_in_place(sendbuf)?;
    let t = topology(b)?;
    let (ni, no) = t.degrees(b.rank());
    // SAFETY: the send arrays hold one entry per out-neighbour, the receive ones per in-neighbour;
    // displacements are in bytes.
    let (sc, sd, st, rc, rd, rt) = unsafe {
        (
            vals(sendcounts, no, "sendcounts")?,
            vals(sdispls, no, "sdispls")?,
            types(sendtypes, no, "sendtypes")?,
            vals(recvcounts, ni, "recvcounts")?,
            vals(rdispls, ni, "rdispls")?,
            types(recvtypes, ni, "recvtypes")?,
        )
    };
    let sends = (0..no)
        .map(|j| block(sendbuf, sd[j], sc[j], st[j]))
        .collect::<Result<_>>()?;
    let recvs = (0..ni)
        .map(|i| block(recvbuf, rd[i], rc[i], rt[i]))
        .collect::<Result<_>>()?;
    exchange(b, &t, recvs, sends);
    Ok(())
}
coll_fns!(MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw,
    MPI_Neighbor_alltoallw_c / PMPI_Neighbor_alltoallw_c, MPI_Ineighbor_alltoallw_c / PMPI_Ineighbor_alltoallw_c,
    neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int | *const Count, sdispls: *const Aint, sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, rdispls: *const Aint, recvtypes: *const Handle));

// The persistent forms (MPI_*_init), around the same builders (capi/coll_init.rs).
use super::coll_init::init_fns;
init_fns!(MPI_Neighbor_allgather_init / PMPI_Neighbor_allgather_init, MPI_Neighbor_allgather_init_c / PMPI_Neighbor_allgather_init_c,
    neighbor_allgather(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle));
init_fns!(MPI_Neighbor_allgatherv_init / PMPI_Neighbor_allgatherv_init, MPI_Neighbor_allgatherv_init_c / PMPI_Neighbor_allgatherv_init_c,
    neighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, displs: *const c_int | *const Aint, recvtype: Handle));
init_fns!(MPI_Neighbor_alltoall_init / PMPI_Neighbor_alltoall_init, MPI_Neighbor_alltoall_init_c / PMPI_Neighbor_alltoall_init_c,
    neighbor_alltoall(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle));
init_fns!(MPI_Neighbor_alltoallv_init / PMPI_Neighbor_alltoallv_init, MPI_Neighbor_alltoallv_init_c / PMPI_Neighbor_alltoallv_init_c,
    neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int | *const Count, sdispls: *const c_int | *const Aint, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, rdispls: *const c_int | *const Aint, recvtype: Handle));
init_fns!(MPI_Neighbor_alltoallw_init / PMPI_Neighbor_alltoallw_init, MPI_Neighbor_alltoallw_init_c / PMPI_Neighbor_alltoallw_init_c,
    neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int | *const Count, sdispls: *const Aint, sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, rdispls: *const Aint, recvtypes: *const Handle));
