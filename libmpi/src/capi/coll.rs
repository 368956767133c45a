//! Collective calls of the C ABI: this module's helpers, the barrier, broadcast and the
//! reductions; gathers, scatters and all-to-alls are in `coll_v`, the reduction operations in
//! `ops`. Every collective checks its arguments, builds a schedule (`crate::coll`) and either
//! waits for it (blocking form) or hands out its request (the I- form), which
//! MPI_Wait/Test/Waitall complete like any other. Each comes in four forms (blocking and I-,
//! int and large-count `_c`) around one generic builder: counts arrive as any `Wide` integer.

use std::ffi::{c_int, c_void};

use super::datatype::byte_len;
use super::*;
use crate::coll::{self, algos, At, Buf, Builder, Red};
use crate::datatype::Datatype;
use crate::op;

const IN_PLACE: usize = 1;

/// A count or displacement as the C call passes it: int in the int forms, MPI_Count or
/// MPI_Aint in the large-count (`_c`) forms. The builders take any of them, so both forms of a
/// collective are one code path.
pub(super) trait Wide: Copy + std::fmt::Display {
    fn wide(self) -> Count;
}

impl Wide for c_int {
    fn wide(self) -> Count {
        self as Count
    }
}

impl Wide for Count {
    fn wide(self) -> Count {
        self
    }
}

impl Wide for Aint {
    fn wide(self) -> Count {
        self as Count
    }
}

pub(super) fn in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

pub(super) fn at(p: *const c_void) -> At {
    At(Buf::User(p as *mut u8), 0)
}

pub(super) fn dtype(h: Handle) -> Result<Datatype> {
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
/// `(count, datatype)` into a length (derived datatypes will pack here). MPI_ERR_COUNT past
/// the largest message rmpi supports.
pub(super) fn span(count: usize, dt: Datatype) -> Result<usize> {
    byte_len(count, dt.size)
}

/// A count as a usize: MPI_ERR_COUNT when it is negative.
pub(super) fn count_of(count: impl Wide, what: &str) -> Result<usize> {
    usize::try_from(count.wide())
        .map_err(|_| Error::new(ErrorClass::Count, format!("{what} {count} is negative")))
}

pub(super) fn bytes(count: impl Wide, dt: Handle) -> Result<usize> {
    span(count_of(count, "count")?, dtype(dt)?)
}

/// A buffer of `len` bytes must be a real one: not NULL, not MPI_IN_PLACE where that is not
/// allowed (callers have already taken MPI_IN_PLACE where it is).
pub(super) fn check_buf(p: *const c_void, len: usize, what: &str) -> Result<()> {
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

pub(super) fn check_root(b: &Builder, root: c_int) -> Result<()> {
    if root < 0 || root >= b.size() {
        return Err(Error::new(
            ErrorClass::Root,
            format!("root {root} is out of range (size {})", b.size()),
        ));
    }
    Ok(())
}

/// `n` non-negative counts (or displacements) from a C array.
///
/// # Safety
/// `p` is NULL or points to `n` readable values.
pub(super) unsafe fn ints<T: Wide>(p: *const T, n: usize, what: &str) -> Result<Vec<usize>> {
    if p.is_null() {
        return Err(Error::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    let v = unsafe { std::slice::from_raw_parts(p, n) };
    v.iter()
        .map(|&c| {
            usize::try_from(c.wide()).map_err(|_| {
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
/// Both arrays hold `n` values (or are NULL, an error).
pub(super) unsafe fn layout(
    counts: *const impl Wide,
    displs: *const impl Wide,
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
        c.iter().map(|&x| span(x, dt)).collect::<Result<_>>()?,
        d.iter().map(|&x| span(x, dt)).collect::<Result<_>>()?,
    ))
}

/// `n` equal blocks of `len` bytes, one after another: a gather's or scatter's layout
/// (MPI_ERR_COUNT when the whole buffer is larger than a message may be).
pub(super) fn uniform(len: usize, n: usize) -> Result<(Vec<usize>, Vec<usize>)> {
    byte_len(n, len)?;
    Ok((vec![len; n], (0..n).map(|i| i * len).collect()))
}

/// The bytes a layout spans (for the NULL-buffer check only: saturating).
pub(super) fn extent_of(lens: &[usize], displs: &[usize]) -> usize {
    lens.iter()
        .zip(displs)
        .map(|(l, d)| l.saturating_add(*d))
        .max()
        .unwrap_or(0)
}

pub(super) fn reduction(op: Handle, datatype: Handle) -> Result<Red> {
    let dt = dtype(datatype)?;
    let op = op::lookup(op as usize)?;
    op::check(&op, dt)?;
    Ok(Red { op, dt })
}

/// Build a collective's schedule on `comm` and start it: blocking (`request` None) waits for
/// it; otherwise its request goes to `*request`.
pub(super) fn coll(
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

/// The type of a parameter in the large-count form: the second type when one is given
/// (`count: c_int | Count`), the same type otherwise.
macro_rules! pick {
    ($t:ty) => {
        $t
    };
    ($t:ty, $c:ty) => {
        $c
    };
}
pub(super) use pick;

/// Export a collective's four forms around one schedule builder: blocking and non-blocking,
/// each with int and large-count (`_c`) parameters (`name: int type | large-count type`).
macro_rules! coll_fns {
    ($name:ident / $pname:ident, $iname:ident / $piname:ident,
     $cname:ident / $pcname:ident, $icname:ident / $picname:ident,
     $build:ident ( $($arg:ident : $ty:ty $(| $cty:ty)?),* )) => {
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
        mpi_fn! {
            fn $cname / $pcname($($arg: pick!($ty $(, $cty)?),)* comm: Handle) -> c_int {
                // SAFETY: as for the int form.
                coll(stringify!($cname), comm, None, |b| unsafe { $build(b, $($arg),*) })
            }
        }
        mpi_fn! {
            fn $icname / $picname($($arg: pick!($ty $(, $cty)?),)* comm: Handle, request: *mut Handle) -> c_int {
                // SAFETY: as for the int form.
                coll(stringify!($icname), comm, Some(request), |b| unsafe { $build(b, $($arg),*) })
            }
        }
    };
}
pub(super) use coll_fns;

unsafe fn barrier(b: &mut Builder) -> Result<()> {
    if b.is_inter() {
        coll::inter::barrier(b);
        return Ok(());
    }
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
    count: impl Wide,
    datatype: Handle,
    root: c_int,
) -> Result<()> {
    if b.is_inter() {
        return super::coll_inter::bcast(b, buffer, count, datatype, root);
    }
    check_root(b, root)?;
    let len = bytes(count, datatype)?;
    check_buf(buffer, len, "buffer")?;
    algos::bcast(b, at(buffer), len, root);
    Ok(())
}
coll_fns!(MPI_Bcast / PMPI_Bcast, MPI_Ibcast / PMPI_Ibcast,
    MPI_Bcast_c / PMPI_Bcast_c, MPI_Ibcast_c / PMPI_Ibcast_c,
    bcast(buffer: *mut c_void, count: c_int | Count, datatype: Handle, root: c_int));

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
    count: impl Wide,
    datatype: Handle,
    op: Handle,
    root: c_int,
) -> Result<()> {
    if b.is_inter() {
        return super::coll_inter::reduce(b, sendbuf, recvbuf, count, datatype, op, root);
    }
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
    algos::reduce(b, send, at(recvbuf), count.wide() as usize, root);
    Ok(())
}
coll_fns!(MPI_Reduce / PMPI_Reduce, MPI_Ireduce / PMPI_Ireduce,
    MPI_Reduce_c / PMPI_Reduce_c, MPI_Ireduce_c / PMPI_Ireduce_c,
    reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int | Count, datatype: Handle, op: Handle, root: c_int));

unsafe fn allreduce(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Wide,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    if b.is_inter() {
        return super::coll_inter::allreduce(b, sendbuf, recvbuf, count, datatype, op);
    }
    let len = bytes(count, datatype)?;
    b.set_red(reduction(op, datatype)?);
    let send = red_send(sendbuf, len)?;
    check_buf(recvbuf, len, "recvbuf")?;
    algos::allreduce(b, send, at(recvbuf), count.wide() as usize);
    Ok(())
}
coll_fns!(MPI_Allreduce / PMPI_Allreduce, MPI_Iallreduce / PMPI_Iallreduce,
    MPI_Allreduce_c / PMPI_Allreduce_c, MPI_Iallreduce_c / PMPI_Iallreduce_c,
    allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int | Count, datatype: Handle, op: Handle));

unsafe fn scan(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Wide,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    if b.is_inter() {
        return super::coll_inter::no_scan("MPI_Scan");
    }
    let len = bytes(count, datatype)?;
    b.set_red(reduction(op, datatype)?);
    let send = red_send(sendbuf, len)?;
    check_buf(recvbuf, len, "recvbuf")?;
    algos::scan(b, send, at(recvbuf), count.wide() as usize);
    Ok(())
}
coll_fns!(MPI_Scan / PMPI_Scan, MPI_Iscan / PMPI_Iscan,
    MPI_Scan_c / PMPI_Scan_c, MPI_Iscan_c / PMPI_Iscan_c,
    scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int | Count, datatype: Handle, op: Handle));

unsafe fn exscan(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Wide,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    if b.is_inter() {
        return super::coll_inter::no_scan("MPI_Exscan");
    }
    let len = bytes(count, datatype)?;
    b.set_red(reduction(op, datatype)?);
    let send = red_send(sendbuf, len)?;
    if b.rank() != 0 {
        check_buf(recvbuf, len, "recvbuf")?;
    }
    algos::exscan(b, send, at(recvbuf), count.wide() as usize);
    Ok(())
}
coll_fns!(MPI_Exscan / PMPI_Exscan, MPI_Iexscan / PMPI_Iexscan,
    MPI_Exscan_c / PMPI_Exscan_c, MPI_Iexscan_c / PMPI_Iexscan_c,
    exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int | Count, datatype: Handle, op: Handle));

unsafe fn reduce_scatter_counts(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Vec<usize>,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    if b.is_inter() {
        return super::coll_inter::reduce_scatter(b, sendbuf, recvbuf, counts, datatype, op);
    }
    b.set_red(reduction(op, datatype)?);
    let dt = dtype(datatype)?;
    let sum = counts.iter().try_fold(0usize, |t, &c| t.checked_add(c));
    let total = span(sum.unwrap_or(usize::MAX), dt)?;
    let send = red_send(sendbuf, total)?;
    let mine = counts[b.rank() as usize];
    check_buf(
        recvbuf,
        if send.is_none() {
            total
        } else {
            span(mine, dt)?
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
    recvcounts: *const impl Wide,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    // SAFETY: recvcounts holds one int per rank (MPI_Reduce_scatter's contract).
    let counts = unsafe { ints(recvcounts, b.size() as usize, "recvcounts")? };
    // SAFETY: forwarded.
    unsafe { reduce_scatter_counts(b, sendbuf, recvbuf, counts, datatype, op) }
}
coll_fns!(MPI_Reduce_scatter / PMPI_Reduce_scatter, MPI_Ireduce_scatter / PMPI_Ireduce_scatter,
    MPI_Reduce_scatter_c / PMPI_Reduce_scatter_c, MPI_Ireduce_scatter_c / PMPI_Ireduce_scatter_c,
    reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, datatype: Handle, op: Handle));

unsafe fn reduce_scatter_block(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: impl Wide,
    datatype: Handle,
    op: Handle,
) -> Result<()> {
    bytes(recvcount, datatype)?;
    let counts = vec![recvcount.wide() as usize; b.size() as usize];
    // SAFETY: forwarded.
    unsafe { reduce_scatter_counts(b, sendbuf, recvbuf, counts, datatype, op) }
}
coll_fns!(MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block, MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block,
    MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c, MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c,
    reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int | Count, datatype: Handle, op: Handle));

// The persistent forms (MPI_*_init), around the same builders (capi/coll_init.rs).
use super::coll_init::init_fns;
init_fns!(MPI_Bcast_init / PMPI_Bcast_init, MPI_Bcast_init_c / PMPI_Bcast_init_c,
    bcast(buffer: *mut c_void, count: c_int | Count, datatype: Handle, root: c_int));
init_fns!(MPI_Reduce_init / PMPI_Reduce_init, MPI_Reduce_init_c / PMPI_Reduce_init_c,
    reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int | Count, datatype: Handle, op: Handle, root: c_int));
init_fns!(MPI_Allreduce_init / PMPI_Allreduce_init, MPI_Allreduce_init_c / PMPI_Allreduce_init_c,
    allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int | Count, datatype: Handle, op: Handle));
init_fns!(MPI_Scan_init / PMPI_Scan_init, MPI_Scan_init_c / PMPI_Scan_init_c,
    scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int | Count, datatype: Handle, op: Handle));
init_fns!(MPI_Exscan_init / PMPI_Exscan_init, MPI_Exscan_init_c / PMPI_Exscan_init_c,
    exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int | Count, datatype: Handle, op: Handle));
init_fns!(MPI_Reduce_scatter_init / PMPI_Reduce_scatter_init, MPI_Reduce_scatter_init_c / PMPI_Reduce_scatter_init_c,
    reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int | *const Count, datatype: Handle, op: Handle));
init_fns!(MPI_Reduce_scatter_block_init / PMPI_Reduce_scatter_block_init, MPI_Reduce_scatter_block_init_c / PMPI_Reduce_scatter_block_init_c,
    reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int | Count, datatype: Handle, op: Handle));
