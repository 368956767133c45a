//! Gathers, scatters and all-to-alls (with their v- and w- forms) of the C ABI, in all four
//! forms each (blocking and I-, int and large-count `_c`); helpers in `coll`.

use std::ffi::{c_int, c_void};

use super::coll::{
    at, check_buf, check_root, coll, coll_fns, count_of, extent_of, in_place, layout, pick, shape,
    side, side_bytes, side_v, Wide,
};
use super::*;
use crate::coll::stage::{self, Blocks, Dir};
use crate::coll::{algos, At, Buf, Builder};

/// The send side of a gather/allgather: None for MPI_IN_PLACE.
fn send_side(
    b: &mut Builder,
    sendbuf: *const c_void,
    count: impl Wide,
    dt: Handle,
) -> Result<Option<(At, usize)>> {
    if in_place(sendbuf) {
        return Ok(None);
    }
    let sh = shape(dt)?;
    Ok(Some(side(
        b,
        sendbuf,
        count_of(count, "sendcount")?,
        &sh,
        Dir::In,
        "sendbuf",
    )?))
}

/// A send block that overlaps the receive blocks is aliasing MPI forbids (MPI_ERR_BUFFER),
/// caught before the schedule could overwrite data it is still to send.
fn no_overlap(send: &Option<(At, usize)>, r: &Blocks) -> Result<()> {
    let (Some((At(Buf::User(s), so), sn)), At(Buf::User(rp), ro)) = (send, &r.at) else {
        return Ok(());
    };
    let s_lo = *s as usize + so;
    let s_hi = s_lo.saturating_add(*sn);
    let base = *rp as usize + ro;
    let hit = r.lens.iter().zip(&r.displs).any(|(&l, &d)| {
        let lo = base.saturating_add(d);
        *sn > 0 && l > 0 && lo < s_hi && s_lo < lo.saturating_add(l)
    });
    if hit {
        return Err(Error::new(
            ErrorClass::Buffer,
            "sendbuf overlaps recvbuf (aliased arguments; use MPI_IN_PLACE)",
        ));
    }
    Ok(())
}

/// `n` blocks of `count` elements one after another (a gather's or scatter's root buffer),
/// or the blocks `counts`/`displs` (element displacements) describe.
enum Layout {
    Uniform(usize),
    V(Vec<usize>, Vec<isize>),
}

impl Layout {
    fn stage(
        self,
        b: &mut Builder,
        buf: *const c_void,
        dt: Handle,
        n: usize,
        dir: Dir,
        what: &str,
    ) -> Result<Blocks> {
        let sh = shape(dt)?;
        let (counts, displs) = match self {
            Layout::Uniform(c) => {
                let step = isize::try_from(c)
                    .map_err(|_| Error::new(ErrorClass::Count, "count overflows"))?;
                (vec![c; n], (0..n as isize).map(|i| i * step).collect())
            }
            Layout::V(c, d) => (c, d),
        };
        side_v(b, buf, &counts, &displs, &sh, dir, what)
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn gatherv_common(
    b: &mut Builder,
    sendbuf: *const c_void,
    sendcount: impl Wide,
    sendtype: Handle,
    recvbuf: *mut c_void,
    layout_at_root: impl FnOnce(usize) -> Result<Layout>,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    if b.is_inter() {
        let f = |b: &mut Builder, n: usize| {
            layout_at_root(n)?.stage(b, recvbuf, recvtype, n, Dir::Out, "recvbuf")
        };
        return super::coll_inter::gatherv(b, sendbuf, sendcount, sendtype, recvbuf, f, root);
    }
    check_root(b, root)?;
    let n = b.size() as usize;
    let is_root = b.rank() == root;
    if is_root {
        super::coll::no_alias(sendbuf, recvbuf, sendcount)?;
    }
    if in_place(sendbuf) && !is_root {
        return Err(Error::new(
            ErrorClass::Buffer,
            "MPI_IN_PLACE is only valid at the root",
        ));
    }
    let send = send_side(b, sendbuf, sendcount, sendtype)?;
    let r = if is_root {
        let dir = if send.is_none() { Dir::InOut } else { Dir::Out };
        layout_at_root(n)?.stage(b, recvbuf, recvtype, n, dir, "recvbuf")?
    } else {
        Blocks {
            at: at(recvbuf),
            lens: Vec::new(),
            displs: Vec::new(),
        }
    };
    algos::gatherv(b, send, r.at, &r.lens, &r.displs, root);
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
    let f = |_| Ok(Layout::Uniform(count_of(recvcount, "recvcount")?));
    // SAFETY: forwarded.
    unsafe { gatherv_common(b, sendbuf, sendcount, sendtype, recvbuf, f, recvtype, root) }
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
    let f = |n: usize| unsafe { layout(recvcounts, displs, n) }.map(|(c, d)| Layout::V(c, d));
    // SAFETY: forwarded.
    unsafe { gatherv_common(b, sendbuf, sendcount, sendtype, recvbuf, f, recvtype, root) }
}
coll_fns!(MPI_Gatherv / PMPI_Gatherv, MPI_Igatherv / PMPI_Igatherv,
    MPI_Gatherv_c / PMPI_Gatherv_c, MPI_Igatherv_c / PMPI_Igatherv_c,
    gatherv(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, displs: *const c_int | *const Aint, recvtype: Handle, root: c_int));

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv_common(
    b: &mut Builder,
    sendbuf: *const c_void,
    layout_at_root: impl FnOnce(usize) -> Result<Layout>,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    recvtype: Handle,
    root: c_int,
) -> Result<()> {
    if b.is_inter() {
        let f = |b: &mut Builder, n: usize| {
            layout_at_root(n)?.stage(b, sendbuf, sendtype, n, Dir::In, "sendbuf")
        };
        return super::coll_inter::scatterv(b, sendbuf, f, recvbuf, recvcount, recvtype, root);
    }
    check_root(b, root)?;
    let n = b.size() as usize;
    let is_root = b.rank() == root;
    if is_root {
        super::coll::no_alias(sendbuf, recvbuf, recvcount)?;
    }
    if in_place(recvbuf) && !is_root {
        return Err(Error::new(
            ErrorClass::Buffer,
            "MPI_IN_PLACE is only valid at the root",
        ));
    }
    let recv = if in_place(recvbuf) {
        None
    } else {
        let sh = shape(recvtype)?;
        let c = count_of(recvcount, "recvcount")?;
        Some(side(b, recvbuf, c, &sh, Dir::Out, "recvbuf")?)
    };
    let s = if is_root {
        layout_at_root(n)?.stage(b, sendbuf, sendtype, n, Dir::In, "sendbuf")?
    } else {
        Blocks {
            at: at(sendbuf.cast_mut()),
            lens: Vec::new(),
            displs: Vec::new(),
        }
    };
    algos::scatterv(b, s.at, &s.lens, &s.displs, recv, root);
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
    let f = |_| Ok(Layout::Uniform(count_of(sendcount, "sendcount")?));
    // SAFETY: forwarded.
    unsafe { scatterv_common(b, sendbuf, f, sendtype, recvbuf, recvcount, recvtype, root) }
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
    let f = |n: usize| unsafe { layout(sendcounts, displs, n) }.map(|(c, d)| Layout::V(c, d));
    // SAFETY: forwarded.
    unsafe { scatterv_common(b, sendbuf, f, sendtype, recvbuf, recvcount, recvtype, root) }
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
    l: Layout,
    recvtype: Handle,
) -> Result<()> {
    if b.is_inter() {
        let n = b.peer_size() as usize;
        let f = |b: &mut Builder| l.stage(b, recvbuf, recvtype, n, Dir::Out, "recvbuf");
        return super::coll_inter::allgatherv(b, sendbuf, sendcount, sendtype, recvbuf, f);
    }
    super::coll::no_alias(sendbuf, recvbuf, sendcount)?;
    let n = b.size() as usize;
    let send = send_side(b, sendbuf, sendcount, sendtype)?;
    let dir = if send.is_none() { Dir::InOut } else { Dir::Out };
    let r = l.stage(b, recvbuf, recvtype, n, dir, "recvbuf")?;
    no_overlap(&send, &r)?;
    algos::allgatherv(b, send, r.at, &r.lens, &r.displs);
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
    let l = Layout::Uniform(count_of(recvcount, "recvcount")?);
    // SAFETY: forwarded.
    unsafe { allgatherv_common(b, sendbuf, sendcount, sendtype, recvbuf, l, recvtype) }
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
    let (c, d) = unsafe { layout(recvcounts, displs, b.peer_size() as usize)? };
    // SAFETY: forwarded.
    unsafe {
        allgatherv_common(
            b,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            Layout::V(c, d),
            recvtype,
        )
    }
}
coll_fns!(MPI_Allgatherv / PMPI_Allgatherv, MPI_Iallgatherv / PMPI_Iallgatherv,
    MPI_Allgatherv_c / PMPI_Allgatherv_c, MPI_Iallgatherv_c / PMPI_Iallgatherv_c,
    allgatherv(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, displs: *const c_int | *const Aint, recvtype: Handle));

/// One side of an all-to-all: per-rank counts, byte displacements and datatypes.
struct Per {
    counts: Vec<usize>,
    displs: Vec<isize>,
    types: Vec<Handle>,
}

/// Alltoall(v/w) once every side is described: each rank's block staged on its own (a type
/// per rank in the w- form), so the blocks are grouped by type here.
fn alltoall_common(
    b: &mut Builder,
    sendbuf: *const c_void,
    send: Option<Per>,
    recvbuf: *mut c_void,
    recv: Per,
) -> Result<()> {
    if b.is_inter() {
        let s = match &send {
            Some(sp) => Some(stage_per(b, sendbuf, sp, Dir::In, "sendbuf")?),
            None => None,
        };
        let r = stage_per(b, recvbuf, &recv, Dir::Out, "recvbuf")?;
        return super::coll_inter::alltoallw(b, sendbuf, s, r);
    }
    // Aliasing only matters when both sides move data (mpi4py passes one empty buffer twice).
    let moves = |p: &Per| p.counts.iter().any(|&c| c > 0);
    let both = send.as_ref().is_some_and(moves) && moves(&recv);
    super::coll::no_alias(sendbuf, recvbuf, both as c_int)?;
    let rdir = if send.is_none() { Dir::InOut } else { Dir::Out };
    let r = stage_per(b, recvbuf, &recv, rdir, "recvbuf")?;
    match send {
        Some(sp) => {
            let s = stage_per(b, sendbuf, &sp, Dir::In, "sendbuf")?;
            algos::alltoallw(b, Some(s.at), &s.lens, &s.displs, r.at, &r.lens, &r.displs);
        }
        None => algos::alltoallw(b, None, &r.lens, &r.displs, r.at, &r.lens, &r.displs),
    }
    Ok(())
}

/// Stage an all-to-all side. With one datatype for every rank, one staging; with several
/// (alltoallw), each rank's block on its own, then expressed relative to one temporary base
/// when they all landed in one place, else copied together.
fn stage_per(b: &mut Builder, buf: *const c_void, p: &Per, dir: Dir, what: &str) -> Result<Blocks> {
    let n = p.counts.len();
    if p.types.windows(2).all(|w| w[0] == w[1]) {
        let sh = shape(p.types.first().copied().unwrap_or(0x247 as Handle))?;
        return side_bytes(b, buf, &p.counts, &p.displs, &sh, dir, what);
    }
    // Per-rank types: each block through its own type.
    let blocks = (0..n)
        .map(|i| Ok((shape(p.types[i])?, p.counts[i], p.displs[i])))
        .collect::<Result<Vec<_>>>()?;
    let staged = stage::stage_mixed(b, buf as *mut u8, &blocks, dir)?;
    if matches!(staged.at.0, Buf::User(_)) || in_place(buf) {
        check_buf(buf, extent_of(&staged.lens, &staged.displs), what)?;
    }
    Ok(staged)
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
    let uniform = |c: usize, t: Handle| -> Result<Per> {
        let sh = shape(t)?;
        let step = sh.offset(c as isize)?;
        Ok(Per {
            counts: vec![c; n],
            displs: (0..n as isize).map(|i| i * step).collect(),
            types: vec![t; n],
        })
    };
    let recv = uniform(count_of(recvcount, "recvcount")?, recvtype)?;
    let send = if in_place(sendbuf) {
        None
    } else {
        Some(uniform(count_of(sendcount, "sendcount")?, sendtype)?)
    };
    alltoall_common(b, sendbuf, send, recvbuf, recv)
}
coll_fns!(MPI_Alltoall / PMPI_Alltoall, MPI_Ialltoall / PMPI_Ialltoall,
    MPI_Alltoall_c / PMPI_Alltoall_c, MPI_Ialltoall_c / PMPI_Ialltoall_c,
    alltoall(sendbuf: *const c_void, sendcount: c_int | Count, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int | Count, recvtype: Handle));

/// A v-form side: counts and element displacements (in extents of `t`) as a `Per`.
///
/// # Safety
/// Both arrays hold `n` entries.
unsafe fn per_v(
    counts: *const impl Wide,
    displs: *const impl Wide,
    t: Handle,
    n: usize,
) -> Result<Per> {
    // SAFETY: forwarded.
    let (c, d) = unsafe { layout(counts, displs, n)? };
    let sh = shape(t)?;
    let d = d
        .iter()
        .map(|&x| sh.offset(x))
        .collect::<Result<Vec<_>>>()?;
    Ok(Per {
        counts: c,
        displs: d,
        types: vec![t; n],
    })
}

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
    let recv = unsafe { per_v(recvcounts, rdispls, recvtype, n)? };
    let send = if in_place(sendbuf) {
        None
    } else {
        // SAFETY: as above.
        Some(unsafe { per_v(sendcounts, sdispls, sendtype, n)? })
    };
    alltoall_common(b, sendbuf, send, recvbuf, recv)
}
coll_fns!(MPI_Alltoallv / PMPI_Alltoallv, MPI_Ialltoallv / PMPI_Ialltoallv,
    MPI_Alltoallv_c / PMPI_Alltoallv_c, MPI_Ialltoallv_c / PMPI_Ialltoallv_c,
    alltoallv(sendbuf: *const c_void, sendcounts: *const c_int | *const Count, sdispls: *const c_int | *const Aint, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, rdispls: *const c_int | *const Aint, recvtype: Handle));

/// Alltoallw's per-rank types; displacements are already in bytes.
///
/// # Safety
/// The three arrays hold `n` entries each.
unsafe fn w_layout(
    counts: *const impl Wide,
    displs: *const impl Wide,
    types: *const Handle,
    n: usize,
) -> Result<Per> {
    if types.is_null() {
        return Err(Error::new(ErrorClass::Arg, "datatype array is NULL"));
    }
    // SAFETY: the caller's contract.
    let (c, d, t) = unsafe {
        let (c, d) = layout(counts, displs, n)?;
        (c, d, std::slice::from_raw_parts(types, n))
    };
    Ok(Per {
        counts: c,
        displs: d,
        types: t.to_vec(),
    })
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
    let recv = unsafe { w_layout(recvcounts, rdispls, recvtypes, n)? };
    let send = if in_place(sendbuf) {
        None
    } else {
        // SAFETY: as above.
        Some(unsafe { w_layout(sendcounts, sdispls, sendtypes, n)? })
    };
    alltoall_common(b, sendbuf, send, recvbuf, recv)
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
