//! Collective calls of the C ABI: this module's helpers, the barrier, broadcast and the
//! reductions; gathers, scatters and all-to-alls are in `coll_v`, the reduction operations in
//! `ops`. Every collective checks its arguments, builds a schedule (`crate::coll`) and either
//! waits for it (blocking form) or hands out its request (the I- form), which
//! MPI_Wait/Test/Waitall complete like any other. Each comes in four forms (blocking and I-,
//! int and large-count `_c`) around one generic builder: counts arrive as any `Wide` integer.

use std::ffi::{c_int, c_void};

use super::*;
use crate::coll::stage::{self, Blocks, Dir, Shape};
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

/// MPI forbids passing one buffer as both the send and the receive buffer (MPI_IN_PLACE says
/// that instead): MPI_ERR_BUFFER, checked where the receive buffer matters, before any traffic.
pub(super) fn no_alias(
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    count: impl Wide,
) -> Result<()> {
    if count.wide() > 0 && !sendbuf.is_null() && !in_place(sendbuf) && sendbuf == recvbuf {
        return Err(Error::new(
            ErrorClass::Buffer,
            "sendbuf and recvbuf are the same buffer (aliased arguments; use MPI_IN_PLACE)",
        ));
    }
    Ok(())
}

pub(super) fn at(p: *const c_void) -> At {
    At(Buf::User(p as *mut u8), 0)
}

pub(super) fn dtype(h: Handle) -> Result<Datatype> {
    if let Some(d) = crate::datatype::lookup(h as usize) {
        return Ok(d);
    }
    let l = crate::datatype::table::committed(h as usize)?;
    if l.is_dense() {
        return Ok(Datatype {
            handle: h as usize,
            size: l.size(),
        });
    }
    // The intracommunicator collectives stage such types (`shape`); the intercommunicator
    // ones (`coll_inter`) move plain byte ranges and refuse them rather than move wrong bytes.
    Err(Error::new(
        ErrorClass::Type,
        format!(
            "datatype {:#x} is not contiguous (holes, lb {} or extent {} != size {}); \
             intercommunicator collectives take contiguous datatypes only",
            h as usize,
            l.lb(),
            l.extent(),
            l.size()
        ),
    ))
}

/// The shape of `h`'s elements for staging (`coll::stage`): predefined types (the MINLOC pairs
/// with their padding, as the reductions expect them) and dense derived types move in place.
pub(super) fn shape(h: Handle) -> Result<Shape> {
    if let Some(d) = crate::datatype::lookup(h as usize) {
        return Ok(Shape::dense(d.size));
    }
    Ok(Shape::of(&crate::datatype::table::committed(h as usize)?))
}

/// A count as a usize: MPI_ERR_COUNT when it is negative.
pub(super) fn count_of(count: impl Wide, what: &str) -> Result<usize> {
    usize::try_from(count.wide())
        .map_err(|_| Error::new(ErrorClass::Count, format!("{what} {count} is negative")))
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

/// Stage one buffer of `count` elements of `datatype` for `dir` (see `coll::stage`): a
/// position and length in bytes the algorithms can move. A dense type's buffer must not be NULL
/// when it holds data; a derived one may be (MPI_BOTTOM with absolute displacements).
pub(super) fn side(
    b: &mut Builder,
    buf: *const c_void,
    count: usize,
    sh: &Shape,
    dir: Dir,
    what: &str,
) -> Result<(At, usize)> {
    let len = sh.bytes(count)?;
    if sh.layout.is_none() || in_place(buf) {
        check_buf(buf, len, what)?;
    }
    stage::stage_one(b, buf as *mut u8, sh, count, dir)
}

/// Stage blocks of `counts[i]` elements at element displacements `displs[i]` (in extents).
pub(super) fn side_v(
    b: &mut Builder,
    buf: *const c_void,
    counts: &[usize],
    displs: &[isize],
    sh: &Shape,
    dir: Dir,
    what: &str,
) -> Result<Blocks> {
    let bytes = displs
        .iter()
        .map(|&d| sh.offset(d))
        .collect::<Result<Vec<_>>>()?;
    side_bytes(b, buf, counts, &bytes, sh, dir, what)
}

/// As `side_v` with displacements already in bytes (MPI_Alltoallw).
pub(super) fn side_bytes(
    b: &mut Builder,
    buf: *const c_void,
    counts: &[usize],
    displs: &[isize],
    sh: &Shape,
    dir: Dir,
    what: &str,
) -> Result<Blocks> {
    let blocks = stage::stage(b, buf as *mut u8, sh, counts, displs, dir)?;
    if matches!(blocks.at.0, Buf::User(_)) || in_place(buf) {
        check_buf(buf, extent_of(&blocks.lens, &blocks.displs), what)?;
    }
    Ok(blocks)
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

/// `n` displacements from a C array; negative ones are allowed (the staging handles them).
///
/// # Safety
/// `p` is NULL or points to `n` readable values.
pub(super) unsafe fn displs<T: Wide>(p: *const T, n: usize, what: &str) -> Result<Vec<isize>> {
    if p.is_null() {
        return Err(Error::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    let v = unsafe { std::slice::from_raw_parts(p, n) };
    v.iter()
        .map(|&c| {
            isize::try_from(c.wide())
                .map_err(|_| Error::new(ErrorClass::Arg, format!("{what} entry {c} overflows")))
        })
        .collect()
}

/// Counts and element displacements of a v-collective.
///
/// # Safety
/// Both arrays hold `n` values (or are NULL, an error).
pub(super) unsafe fn layout(
    counts: *const impl Wide,
    displs_p: *const impl Wide,
    n: usize,
) -> Result<(Vec<usize>, Vec<isize>)> {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        Ok((
            ints(counts, n, "counts")?,
            displs(displs_p, n, "displacements")?,
        ))
    }
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

/// A reduction over `count` elements of `datatype`: the op, the number of elements it applies
/// to, and the shape the buffers are staged with. A predefined op works on the type map's
/// basic type (MPI requires it to be one predefined type), so a derived type's data is packed
/// into basic elements. A user op receives the caller's datatype: a derived type must then
/// keep its data inside its extent from lb 0, and whole extents move (holes included).
pub(super) fn reduction_of(
    op_h: Handle,
    datatype: Handle,
    count: usize,
) -> Result<(Red, usize, Shape)> {
    let h = datatype as usize;
    if crate::datatype::lookup(h).is_some() {
        let red = reduction(op_h, datatype)?;
        let sh = Shape::dense(red.dt.size);
        return Ok((red, count, sh));
    }
    let l = crate::datatype::table::committed(h)?;
    let op = op::lookup(op_h as usize)?;
    if !matches!(op, op::Op::Builtin(_)) {
        if l.is_dense() {
            let dt = Datatype {
                handle: h,
                size: l.size(),
            };
            return Ok((Red { op, dt }, count, Shape::dense(l.size())));
        }
        let ext = l.extent();
        if l.lb() == 0 && l.true_lb() >= 0 && l.true_lb() + l.true_extent() <= ext {
            let dt = Datatype {
                handle: h,
                size: ext as usize,
            };
            return Ok((Red { op, dt }, count, Shape::dense(ext as usize)));
        }
        return Err(Error::new(
            ErrorClass::Type,
            format!("a user reduction over datatype {h:#x} needs its data inside [0, extent)"),
        ));
    }
    let basic = l.basic_type().and_then(crate::datatype::lookup);
    let Some(bdt) = basic.filter(|d| {
        l.size() % d.size.max(1) == 0 && !matches!(d.handle, 0x229 | 0x22a | 0x22c | 0x22d)
    }) else {
        return Err(Error::new(
            ErrorClass::Op,
            format!(
                "datatype {h:#x} mixes basic types (or uses a padded MINLOC pair): \
                 a predefined reduction needs one basic type"
            ),
        ));
    };
    op::check(&op, bdt)?;
    let per = l.size() / bdt.size.max(1);
    let n = count
        .checked_mul(per)
        .ok_or_else(|| Error::new(ErrorClass::Count, "count overflows"))?;
    Ok((Red { op, dt: bdt }, n, Shape::of(&l)))
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
    let start = |rt: &mut Runtime| {
        if request.is_some_and(|r| r.is_null()) {
            return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
        }
        let s = {
            let mut b = Builder::new(rt.comm(comm_index(comm)?)?, None);
            build(&mut b)?;
            b.finish()
        };
        let space = match request {
            None => coll::Space::Blocking,
            Some(_) => coll::Space::Nonblocking,
        };
        Ok(coll::start_in(&mut rt.pml, s, space))
    };
    match request {
        // Blocking: under MULTIPLE the schedule is waited for outside the runtime.
        None => call_blocking(
            name,
            ci,
            start,
            |rt, &id| request_ready(rt, id),
            |rt, id| status_error(&rt.wait(id)?),
        ),
        Some(r) => call(name, ci, |rt| {
            let id = start(rt)?;
            // SAFETY: checked non-NULL in `start`; the caller passes a writable MPI_Request.
            unsafe { r.write(request_handle(id)) };
            Ok(())
        }),
    }
}

/// A blocking collective: runs the schedule a previous call with the same arguments left in
/// the runtime's cache (`coll::cache`), or builds one with `build` and keeps it. `args` are
/// the call's arguments as cache key parts (None for arrays: never cached).
pub(super) fn coll_blocking(
    name: &'static str,
    comm: Handle,
    args: &[Option<u64>],
    build: impl FnOnce(&mut Builder) -> Result<()>,
) -> c_int {
    let ci = comm_index(comm).unwrap_or(crate::comm::WORLD);
    if !runtime::is_multiple() {
        return coll_blocking_held(name, comm, args, build);
    }
    // MULTIPLE: the schedule is taken out of the cache (or built), run outside the runtime one
    // progress turn at a time (it is advanced by this thread alone), and put back.
    let r = runtime::blocking(
        |rt| {
            let (key, mut s) = schedule_for(rt, name, comm, args, build)?;
            rt.start_cached(&mut s);
            Ok((key, std::cell::RefCell::new(s)))
        },
        |rt, (_, s)| rt.advance_cached(&mut s.borrow_mut()),
        |rt, (key, s)| {
            let s = s.into_inner();
            let error = s.error;
            if let Some(k) = key {
                rt.coll_cache.put(k, s);
            }
            Ok(error)
        },
    );
    match r.and_then(|error| {
        status_error(&crate::pml::Status {
            source: crate::pml::ANY_SOURCE,
            tag: crate::pml::ANY_TAG,
            error,
            ..Default::default()
        })
    }) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => fail(name, ci, e),
    }
}

/// The call's schedule: the cached one, taken out of the cache, if it was built for this
/// communicator, else a new one from `build`; with the key to put it back under (None: not
/// cached).
fn schedule_for(
    rt: &mut Runtime,
    name: &'static str,
    comm: Handle,
    args: &[Option<u64>],
    build: impl FnOnce(&mut Builder) -> Result<()>,
) -> Result<(Option<coll::cache::Key>, Box<coll::Schedule>)> {
    let c = comm_index(comm)?;
    // Not the neighbourhood collectives ("MPI_N..."): they also depend on the topology.
    let key = (name.as_bytes().get(4) != Some(&b'N'))
        .then(|| coll::cache::Key::new(name, c, args))
        .flatten();
    let cached = key.as_ref().and_then(|k| rt.coll_cache.take(k));
    let comm_ref = rt.comm(c)?;
    let s = match cached {
        Some(s) if s.built_for(comm_ref) => s,
        _ => {
            let mut b = Builder::new(comm_ref, None);
            build(&mut b)?;
            Box::new(b.finish())
        }
    };
    Ok((key, s))
}

/// `coll_blocking` at FUNNELED and SERIALIZED: the whole call inside the runtime.
fn coll_blocking_held(
    name: &'static str,
    comm: Handle,
    args: &[Option<u64>],
    build: impl FnOnce(&mut Builder) -> Result<()>,
) -> c_int {
    let ci = comm_index(comm).unwrap_or(crate::comm::WORLD);
    call(name, ci, |rt| {
        let (key, mut s) = schedule_for(rt, name, comm, args, build)?;
        let error = rt.run_cached(&mut s);
        if let Some(k) = key {
            rt.coll_cache.put(k, s);
        }
        status_error(&crate::pml::Status {
            source: crate::pml::ANY_SOURCE,
            tag: crate::pml::ANY_TAG,
            error,
            ..Default::default()
        })
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
                let key = [$($crate::coll::cache::KeyArg::key($arg)),*];
                // SAFETY: the caller passes arguments as the standard requires; the call waits
                // for the schedule, so every buffer outlives it.
                $crate::capi::coll::coll_blocking(stringify!($name), comm, &key, |b| unsafe { $build(b, $($arg),*) })
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
                let key = [$($crate::coll::cache::KeyArg::key($arg)),*];
                // SAFETY: as for the int form.
                $crate::capi::coll::coll_blocking(stringify!($cname), comm, &key, |b| unsafe { $build(b, $($arg),*) })
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

pub(super) unsafe fn barrier(b: &mut Builder) -> Result<()> {
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
    let sh = shape(datatype)?;
    let dir = if b.rank() == root { Dir::In } else { Dir::Out };
    let (buf, len) = side(b, buffer, count_of(count, "count")?, &sh, dir, "buffer")?;
    algos::bcast(b, buf, len, root);
    Ok(())
}
coll_fns!(MPI_Bcast / PMPI_Bcast, MPI_Ibcast / PMPI_Ibcast,
    MPI_Bcast_c / PMPI_Bcast_c, MPI_Ibcast_c / PMPI_Ibcast_c,
    bcast(buffer: *mut c_void, count: c_int | Count, datatype: Handle, root: c_int));

/// A reduction's buffers, staged: the send side (None for MPI_IN_PLACE) and the receive side,
/// which also holds the input with MPI_IN_PLACE. `recv_count` elements at the receive side
/// (`count` for most; the whole input for an in-place reduce-scatter).
struct RedBufs {
    send: Option<At>,
    recv: At,
    count: usize,
}

/// Set up a reduction of `count` elements: the op on the builder, the buffers staged.
/// `recv_here`: whether this rank's recvbuf is significant (the root of a reduce).
#[allow(clippy::too_many_arguments)]
fn red_bufs(
    b: &mut Builder,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    recv_count: usize,
    datatype: Handle,
    op: Handle,
    recv_here: bool,
) -> Result<RedBufs> {
    let (red, n, sh) = reduction_of(op, datatype, count)?;
    b.set_red(red);
    let send = if in_place(sendbuf) {
        None
    } else {
        Some(side(b, sendbuf, count, &sh, Dir::In, "sendbuf")?.0)
    };
    let recv = if recv_here {
        let dir = if send.is_none() { Dir::InOut } else { Dir::Out };
        side(b, recvbuf, recv_count, &sh, dir, "recvbuf")?.0
    } else {
        at(recvbuf)
    };
    Ok(RedBufs {
        send,
        recv,
        count: n,
    })
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
    if in_place(sendbuf) && b.rank() != root {
        return Err(Error::new(
            ErrorClass::Buffer,
            "MPI_IN_PLACE is only valid at the root",
        ));
    }
    let c = count_of(count, "count")?;
    let is_root = b.rank() == root;
    if is_root {
        no_alias(sendbuf, recvbuf, count)?;
    }
    let r = red_bufs(b, sendbuf, recvbuf, c, c, datatype, op, is_root)?;
    algos::reduce(b, r.send, r.recv, r.count, root);
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
    no_alias(sendbuf, recvbuf, count)?;
    let c = count_of(count, "count")?;
    let r = red_bufs(b, sendbuf, recvbuf, c, c, datatype, op, true)?;
    algos::allreduce(b, r.send, r.recv, r.count);
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
    no_alias(sendbuf, recvbuf, count)?;
    let c = count_of(count, "count")?;
    let r = red_bufs(b, sendbuf, recvbuf, c, c, datatype, op, true)?;
    algos::scan(b, r.send, r.recv, r.count);
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
    no_alias(sendbuf, recvbuf, count)?;
    let c = count_of(count, "count")?;
    // Rank 0's recvbuf is undefined: staged in and out so it is left as it was.
    let (red, n, sh) = reduction_of(op, datatype, c)?;
    b.set_red(red);
    let send = if in_place(sendbuf) {
        None
    } else {
        Some(side(b, sendbuf, c, &sh, Dir::In, "sendbuf")?.0)
    };
    let dir = if send.is_none() || b.rank() == 0 {
        Dir::InOut
    } else {
        Dir::Out
    };
    let recv = if b.rank() == 0 && recvbuf.is_null() {
        at(recvbuf)
    } else {
        side(b, recvbuf, c, &sh, dir, "recvbuf")?.0
    };
    algos::exscan(b, send, recv, n);
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
    let sum = counts.iter().try_fold(0usize, |t, &c| t.checked_add(c));
    let total = sum.ok_or_else(|| Error::new(ErrorClass::Count, "recvcounts overflow"))?;
    let mine = counts[b.rank() as usize];
    no_alias(sendbuf, recvbuf, mine as Count)?;
    let recv_count = if in_place(sendbuf) { total } else { mine };
    // Basic elements per element of `datatype` (the algorithm counts those).
    let per = reduction_of(op, datatype, 1)?.1;
    let r = red_bufs(b, sendbuf, recvbuf, total, recv_count, datatype, op, true)?;
    let basic: Vec<usize> = counts.iter().map(|&c| c * per).collect();
    algos::reduce_scatter(b, r.send, r.recv, &basic);
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
    let counts = vec![count_of(recvcount, "recvcount")?; b.size() as usize];
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
