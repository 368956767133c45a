//! Collective operations in the Rust API: methods on `Communicator`, typed by `Equivalence`.
//!
//! ```no_run
//! use rmpi::Op;
//! let universe = rmpi::initialize().unwrap();
//! let world = universe.world();
//! let mut sum = [0u64; 2];
//! world.all_reduce(&[1u64, world.rank() as u64], &mut sum, Op::Sum).unwrap();
//! // A non-commutative user operation, applied in rank order: "keep the lower rank's value"
//! // gives everyone rank 0's contribution.
//! let first = |a: &[i32], b: &mut [i32]| b.copy_from_slice(a);
//! let mut r = [0];
//! world.all_reduce(&[world.rank()], &mut r, rmpi::UserOp::non_commutative(&first)).unwrap();
//! assert_eq!(r[0], 0);
//! ```

use std::rc::Rc;

use super::coll_inter;
use super::comm::Communicator;
use super::datatype::{as_bytes, as_bytes_mut, Equivalence};
use super::request::{Request, Scope};
use crate::coll::stage::{self, Dir, Shape};
use crate::coll::{self, algos, At, Buf, Builder, Red};
use crate::error::{Error, ErrorClass, Result};
use crate::op::{self, Builtin};
use crate::runtime;

/// The predefined reduction operations that apply to Rust's primitive element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Sum,
    Prod,
    Min,
    Max,
    /// Logical and, or, xor (nonzero is true): integers only.
    Land,
    Lor,
    Lxor,
    /// Bitwise and, or, xor: integers only.
    Band,
    Bor,
    Bxor,
}

/// A user reduction over slices of `T`: `f(a, b)` must set `b[i] = a[i] op b[i]`, where `a`
/// holds the contribution of lower ranks.
pub struct UserOp<'f, T> {
    f: &'f dyn Fn(&[T], &mut [T]),
    commutative: bool,
}

impl<'f, T> UserOp<'f, T> {
    pub fn commutative(f: &'f dyn Fn(&[T], &mut [T])) -> UserOp<'f, T> {
        UserOp {
            f,
            commutative: true,
        }
    }

    /// Applied strictly in rank order.
    pub fn non_commutative(f: &'f dyn Fn(&[T], &mut [T])) -> UserOp<'f, T> {
        UserOp {
            f,
            commutative: false,
        }
    }
}

/// A predefined or user operation, as the reduction methods take it.
pub enum Operation<'f, T> {
    Predefined(Op),
    User(UserOp<'f, T>),
}

impl<T> From<Op> for Operation<'_, T> {
    fn from(op: Op) -> Self {
        Operation::Predefined(op)
    }
}

impl<'f, T> From<UserOp<'f, T>> for Operation<'f, T> {
    fn from(op: UserOp<'f, T>) -> Self {
        Operation::User(op)
    }
}

/// A typed view of reduction bytes: borrowed when aligned, else copied.
fn typed<T: Equivalence>(b: &[u8]) -> std::borrow::Cow<'_, [T]> {
    let size = std::mem::size_of::<T>();
    if b.as_ptr().cast::<T>().is_aligned() {
        // SAFETY: aligned for T, `b.len() / size` whole elements in range, and every bit
        // pattern is a valid `Equivalence` type (plain integers and floats).
        std::borrow::Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(b.as_ptr().cast::<T>(), b.len() / size)
        })
    } else {
        // SAFETY: all-zero bytes are a valid value of every `Equivalence` type.
        let mut v = vec![unsafe { std::mem::zeroed::<T>() }; b.len() / size];
        as_bytes_mut(&mut v).copy_from_slice(b);
        std::borrow::Cow::Owned(v)
    }
}

fn run_user<T: Equivalence>(f: &dyn Fn(&[T], &mut [T]), a: &[u8], b: &mut [u8]) {
    let a = typed::<T>(a);
    let size = std::mem::size_of::<T>();
    if b.as_ptr().cast::<T>().is_aligned() {
        // SAFETY: as in `typed`, mutably: any bytes the closure writes are valid `T`s.
        let bt =
            unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<T>(), b.len() / size) };
        f(&a, bt);
    } else {
        let mut v = typed::<T>(b).into_owned();
        f(&a, &mut v);
        b.copy_from_slice(as_bytes(&v));
    }
}

/// A user op over raw element bytes, borrowing for `'f`.
type BytesFn<'f> = Rc<dyn Fn(&[u8], &mut [u8]) + 'f>;

/// The library's form of an operation on `T`.
///
/// # Safety
/// The returned op must be dropped before `'f` ends: the collective that holds it has to
/// complete (and its schedule be dropped) within `'f`.
pub(super) unsafe fn lower<'f, T: Equivalence>(op: Operation<'f, T>) -> Result<Red> {
    let dt = T::DATATYPE;
    let op = match op {
        Operation::Predefined(o) => op::Op::Builtin(match o {
            Op::Sum => Builtin::Sum,
            Op::Prod => Builtin::Prod,
            Op::Min => Builtin::Min,
            Op::Max => Builtin::Max,
            Op::Land => Builtin::Land,
            Op::Lor => Builtin::Lor,
            Op::Lxor => Builtin::Lxor,
            Op::Band => Builtin::Band,
            Op::Bor => Builtin::Bor,
            Op::Bxor => Builtin::Bxor,
        }),
        Operation::User(UserOp { f, commutative }) => {
            let w: BytesFn<'f> = Rc::new(move |a, b| run_user(f, a, b));
            // SAFETY: only the lifetime is erased; this function's contract keeps every use
            // (and the drop) of the closure within 'f.
            let w: op::RustFn = unsafe { std::mem::transmute::<BytesFn<'f>, BytesFn<'static>>(w) };
            op::Op::Rust {
                f: w,
                commute: commutative,
            }
        }
    };
    op::check(&op, dt)?;
    Ok(Red { op, dt })
}

fn rd<T: Equivalence>(s: &[T]) -> At {
    At(Buf::User(s.as_ptr() as *mut u8), 0)
}

fn wr<T: Equivalence>(s: &mut [T]) -> At {
    At(Buf::User(s.as_mut_ptr().cast()), 0)
}

fn count_err(msg: String) -> Error {
    Error::new(ErrorClass::Count, msg)
}

pub(super) fn same_len(what: &str, a: usize, b: usize) -> Result<()> {
    if a != b {
        return Err(count_err(format!(
            "{what}: the send buffer has {a} elements but the receive buffer {b}"
        )));
    }
    Ok(())
}

pub(super) fn check_root(n: i32, root: i32) -> Result<()> {
    if !(0..n).contains(&root) {
        return Err(Error::new(
            ErrorClass::Root,
            format!("root {root} is out of range (size {n})"),
        ));
    }
    Ok(())
}

/// Counts and displacements in elements of `T` as byte lengths and offsets, checked against a
/// buffer of `len` elements.
pub(super) fn layout<T: Equivalence>(
    what: &str,
    counts: &[usize],
    displs: &[usize],
    n: i32,
    len: usize,
) -> Result<(Vec<usize>, Vec<usize>)> {
    if counts.len() != n as usize || displs.len() != n as usize {
        return Err(count_err(format!(
            "{what}: {} counts and {} displacements for {n} ranks",
            counts.len(),
            displs.len()
        )));
    }
    if let Some(i) = (0..counts.len()).find(|&i| counts[i] + displs[i] > len) {
        return Err(count_err(format!(
            "{what}: block {i} ends at element {} but the buffer has {len}",
            counts[i] + displs[i]
        )));
    }
    let size = std::mem::size_of::<T>();
    Ok((
        counts.iter().map(|c| c * size).collect(),
        displs.iter().map(|d| d * size).collect(),
    ))
}

/// Elements per block when `len` splits into `n` equal blocks.
pub(super) fn equal_blocks(what: &str, len: usize, n: i32) -> Result<usize> {
    let block = len / n as usize;
    if block * n as usize != len {
        return Err(count_err(format!(
            "{what}: {len} elements do not split into {n} equal blocks"
        )));
    }
    Ok(block)
}

pub(super) fn uniform(n: i32, bytes: usize) -> (Vec<usize>, Vec<usize>) {
    let n = n as usize;
    (vec![bytes; n], (0..n).map(|i| i * bytes).collect())
}

fn bytes_of<T>(s: &[T]) -> usize {
    std::mem::size_of_val(s)
}

/// A buffer as a schedule sees it: where it is and how many elements of `T` it holds. Made
/// once from the caller's slice, so that a persistent request's accessors and the library use
/// the same pointer.
pub(super) struct Span<T> {
    pub(super) ptr: *mut T,
    pub(super) len: usize,
}

impl<T> Clone for Span<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Span<T> {}

impl<T> Span<T> {
    /// A buffer the collective only reads.
    pub(super) fn of(s: &[T]) -> Span<T> {
        Span {
            ptr: s.as_ptr().cast_mut(),
            len: s.len(),
        }
    }

    pub(super) fn of_mut(s: &mut [T]) -> Span<T> {
        Span {
            ptr: s.as_mut_ptr(),
            len: s.len(),
        }
    }

    pub(super) fn at(self) -> At {
        At(Buf::User(self.ptr.cast()), 0)
    }

    pub(super) fn len(self) -> usize {
        self.len
    }

    pub(super) fn bytes(self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
}

/// A collective ready to build: its reduction and the schedule builder, which a blocking call
/// runs once, a non-blocking one starts, and a persistent one (`persistent_coll`) keeps.
pub(super) struct Plan {
    pub(super) red: Option<Red>,
    pub(super) build: Build,
}

/// A schedule builder, run once.
pub(super) type Build = Box<dyn FnOnce(&mut Builder) -> Result<()>>;

impl Plan {
    pub(super) fn new(
        red: Option<Red>,
        build: impl FnOnce(&mut Builder) -> Result<()> + 'static,
    ) -> Plan {
        Plan {
            red,
            build: Box::new(build),
        }
    }
}

impl Communicator {
    /// Start a plan on an intra- or an intercommunicator; its request id.
    pub(super) fn start_plan(&self, p: Plan) -> Result<crate::pml::ReqId> {
        self.start_any(p.red, p.build, coll::Space::Nonblocking)
    }

    /// Start a plan and wait for it (the caller borrows its buffers for the whole call).
    pub(super) fn run_plan(&self, p: Plan) -> Result<()> {
        let id = self.start_any(p.red, p.build, coll::Space::Blocking)?;
        let st = runtime::wait_request(id)?;
        super::comm::check(st).map(|_| ())
    }

    /// MPI_ERR_COMM naming `what` on an intercommunicator (scan, exscan, the in-place forms).
    pub(super) fn intra_only(&self, what: &str) -> Result<()> {
        if self.is_inter() {
            return Err(Error::new(
                ErrorClass::Comm,
                format!("{what} is not defined on an intercommunicator"),
            ));
        }
        Ok(())
    }

    /// Build and start a schedule of the intracommunicator algorithms; its request id
    /// (MPI_ERR_COMM on an intercommunicator, whose collectives route to `coll_inter` first).
    pub(super) fn start_coll(
        &self,
        red: Option<Red>,
        build: impl FnOnce(&mut Builder) -> Result<()>,
    ) -> Result<crate::pml::ReqId> {
        self.intra_only("this collective")?;
        self.start_any(red, build, coll::Space::Nonblocking)
    }

    fn start_any(
        &self,
        red: Option<Red>,
        build: impl FnOnce(&mut Builder) -> Result<()>,
        space: coll::Space,
    ) -> Result<crate::pml::ReqId> {
        runtime::with(|rt| {
            let s = {
                let mut b = Builder::new(rt.comm(self.id)?, red);
                build(&mut b)?;
                b.finish()
            };
            Ok(coll::start_in(&mut rt.pml, s, space))
        })
    }

    /// Start a schedule and wait for it; the buffers it uses are borrowed by the caller for
    /// the whole call.
    pub(super) fn run_coll(
        &self,
        red: Option<Red>,
        build: impl FnOnce(&mut Builder) -> Result<()>,
    ) -> Result<()> {
        self.intra_only("this collective")?;
        let id = self.start_any(red, build, coll::Space::Blocking)?;
        let st = runtime::wait_request(id)?;
        super::comm::check(st).map(|_| ())
    }

    /// The number of per-peer blocks: the remote group's size on an intercommunicator.
    fn peer_count(&self) -> i32 {
        self.remote_size().unwrap_or_else(|| self.size())
    }

    fn size_rank(&self) -> (i32, i32) {
        (self.size(), self.rank())
    }

    /// Reduce-scatter-block's counts: `recv` elements for each rank of the (local) group,
    /// whose sum `send` must hold.
    fn block_counts(&self, send: usize, recv: usize) -> Result<Vec<usize>> {
        let n = self.size() as usize;
        same_len("reduce_scatter_block", send, recv * n)?;
        Ok(vec![recv; n])
    }

    /// Broadcast `buf` from `root` to every rank.
    ///
    /// MPI_Bcast, on intra- and intercommunicators (`coll_inter`).
    pub fn broadcast<T: Equivalence>(&self, buf: &mut [T], root: i32) -> Result<()> {
        if self.is_inter() {
            return self.run_plan(coll_inter::broadcast(self, Span::of_mut(buf), root)?);
        }
        check_root(self.size(), root)?;
        let (at, len) = (wr(buf), bytes_of(buf));
        self.run_coll(None, |b| {
            algos::bcast(b, at, len, root);
            Ok(())
        })
    }

    /// Reduce every rank's `send` into `recv` at `root` (`recv` is ignored elsewhere).
    ///
    /// MPI_Reduce, on intra- and intercommunicators (`coll_inter`).
    pub fn reduce<'f, T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: impl Into<Operation<'f, T>>,
        root: i32,
    ) -> Result<()> {
        if self.is_inter() {
            // SAFETY: the op is dropped when the schedule completes, within this call.
            let red = unsafe { lower(op.into())? };
            return self.run_plan(coll_inter::reduce(
                self,
                Span::of(send),
                Span::of_mut(recv),
                red,
                root,
            )?);
        }
        let (n, me) = self.size_rank();
        check_root(n, root)?;
        if me == root {
            same_len("reduce", send.len(), recv.len())?;
        }
        // SAFETY: the op is dropped when the schedule completes, within this call.
        let red = unsafe { lower(op.into())? };
        let (s, r, c) = (rd(send), wr(recv), send.len());
        self.run_coll(Some(red), |b| {
            algos::reduce(b, Some(s), r, c, root);
            Ok(())
        })
    }

    /// Reduce with the root's input and result both in `buf` (MPI_IN_PLACE at the root;
    /// elsewhere `buf` is the input).
    ///
    /// MPI_Reduce with MPI_IN_PLACE; intracommunicators only (MPI_ERR_COMM on an intercommunicator).
    pub fn reduce_in_place<'f, T: Equivalence>(
        &self,
        buf: &mut [T],
        op: impl Into<Operation<'f, T>>,
        root: i32,
    ) -> Result<()> {
        self.intra_only("reduce_in_place (MPI_IN_PLACE)")?;
        let (n, me) = self.size_rank();
        check_root(n, root)?;
        // SAFETY: as in `reduce`.
        let red = unsafe { lower(op.into())? };
        let (a, c) = (wr(buf), buf.len());
        let send = (me != root).then_some(a);
        self.run_coll(Some(red), |b| {
            algos::reduce(b, send, a, c, root);
            Ok(())
        })
    }

    /// Reduce everyone's `send` into every rank's `recv`.
    ///
    /// MPI_Allreduce, on intra- and intercommunicators (`coll_inter`).
    pub fn all_reduce<'f, T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: impl Into<Operation<'f, T>>,
    ) -> Result<()> {
        if self.is_inter() {
            // SAFETY: the op is dropped when the schedule completes, within this call.
            let red = unsafe { lower(op.into())? };
            return self.run_plan(coll_inter::all_reduce(
                Span::of(send),
                Span::of_mut(recv),
                red,
            )?);
        }
        same_len("all_reduce", send.len(), recv.len())?;
        // SAFETY: as in `reduce`.
        let red = unsafe { lower(op.into())? };
        let (s, r, c) = (rd(send), wr(recv), send.len());
        self.run_coll(Some(red), |b| {
            algos::allreduce(b, Some(s), r, c);
            Ok(())
        })
    }

    /// All-reduce with input and result in `buf` (MPI_IN_PLACE).
    ///
    /// MPI_Allreduce with MPI_IN_PLACE; intracommunicators only (MPI_ERR_COMM on an intercommunicator).
    pub fn all_reduce_in_place<'f, T: Equivalence>(
        &self,
        buf: &mut [T],
        op: impl Into<Operation<'f, T>>,
    ) -> Result<()> {
        self.intra_only("all_reduce_in_place (MPI_IN_PLACE)")?;
        // SAFETY: as in `reduce`.
        let red = unsafe { lower(op.into())? };
        let (r, c) = (wr(buf), buf.len());
        self.run_coll(Some(red), |b| {
            algos::allreduce(b, None, r, c);
            Ok(())
        })
    }

    /// Inclusive prefix reduction: rank i gets `send(0) op ... op send(i)`.
    ///
    /// MPI_Scan; intracommunicators only (MPI_ERR_COMM on an intercommunicator).
    pub fn scan<'f, T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: impl Into<Operation<'f, T>>,
    ) -> Result<()> {
        self.intra_only("scan")?;
        same_len("scan", send.len(), recv.len())?;
        // SAFETY: as in `reduce`.
        let red = unsafe { lower(op.into())? };
        let (s, r, c) = (rd(send), wr(recv), send.len());
        self.run_coll(Some(red), |b| {
            algos::scan(b, Some(s), r, c);
            Ok(())
        })
    }

    /// Exclusive prefix reduction: rank i > 0 gets `send(0) op ... op send(i-1)`; rank 0's
    /// `recv` is left as it was.
    ///
    /// MPI_Exscan; intracommunicators only (MPI_ERR_COMM on an intercommunicator).
    pub fn exscan<'f, T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: impl Into<Operation<'f, T>>,
    ) -> Result<()> {
        self.intra_only("exscan")?;
        same_len("exscan", send.len(), recv.len())?;
        // SAFETY: as in `reduce`.
        let red = unsafe { lower(op.into())? };
        let (s, r, c) = (rd(send), wr(recv), send.len());
        self.run_coll(Some(red), |b| {
            algos::exscan(b, Some(s), r, c);
            Ok(())
        })
    }

    /// Reduce `send` (size × `recv.len()` elements) and give block i of the result to rank i.
    ///
    /// MPI_Reduce_scatter_block, on intra- and intercommunicators (`coll_inter`).
    pub fn reduce_scatter_block<'f, T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: impl Into<Operation<'f, T>>,
    ) -> Result<()> {
        if self.is_inter() {
            // SAFETY: the op is dropped when the schedule completes, within this call.
            let red = unsafe { lower(op.into())? };
            return self.run_plan(coll_inter::reduce_scatter(
                Span::of(send),
                Span::of_mut(recv),
                self.block_counts(send.len(), recv.len())?,
                red,
            )?);
        }
        let n = self.size();
        same_len("reduce_scatter_block", send.len(), recv.len() * n as usize)?;
        // SAFETY: as in `reduce`.
        let red = unsafe { lower(op.into())? };
        let counts = vec![recv.len(); n as usize];
        let (s, r) = (rd(send), wr(recv));
        self.run_coll(Some(red), |b| {
            algos::reduce_scatter(b, Some(s), r, &counts);
            Ok(())
        })
    }

    /// Gather every rank's `send` into `recv` at `root`, in rank order (`recv` is ignored
    /// elsewhere; at the root it holds size × `send.len()` elements).
    ///
    /// MPI_Gather, on intra- and intercommunicators (`coll_inter`).
    pub fn gather<T: Equivalence>(&self, send: &[T], recv: &mut [T], root: i32) -> Result<()> {
        if self.is_inter() {
            return self.run_plan(coll_inter::gather(
                self,
                Span::of(send),
                Span::of_mut(recv),
                None,
                root,
            )?);
        }
        let (n, me) = self.size_rank();
        check_root(n, root)?;
        if me == root {
            same_len("gather", send.len() * n as usize, recv.len())?;
        }
        let (l, d) = uniform(n, bytes_of(send));
        let (s, sl, r) = (rd(send), bytes_of(send), wr(recv));
        self.run_coll(None, |b| {
            algos::gatherv(b, Some((s, sl)), r, &l, &d, root);
            Ok(())
        })
    }

    /// Gather with per-rank counts and displacements (in elements) into the root's `recv`.
    ///
    /// MPI_Gatherv, on intra- and intercommunicators (`coll_inter`).
    pub fn gather_varcount<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
        root: i32,
    ) -> Result<()> {
        if self.is_inter() {
            return self.run_plan(coll_inter::gather(
                self,
                Span::of(send),
                Span::of_mut(recv),
                Some((counts, displs)),
                root,
            )?);
        }
        let (n, me) = self.size_rank();
        check_root(n, root)?;
        let (l, d) = if me == root {
            layout::<T>("gather_varcount", counts, displs, n, recv.len())?
        } else {
            (Vec::new(), Vec::new())
        };
        let (s, sl, r) = (rd(send), bytes_of(send), wr(recv));
        self.run_coll(None, |b| {
            algos::gatherv(b, Some((s, sl)), r, &l, &d, root);
            Ok(())
        })
    }

    /// Scatter block i of the root's `send` (size × `recv.len()` elements) to rank i's `recv`.
    ///
    /// MPI_Scatter, on intra- and intercommunicators (`coll_inter`).
    pub fn scatter<T: Equivalence>(&self, send: &[T], recv: &mut [T], root: i32) -> Result<()> {
        if self.is_inter() {
            return self.run_plan(coll_inter::scatter(
                self,
                Span::of(send),
                None,
                Span::of_mut(recv),
                root,
            )?);
        }
        let (n, me) = self.size_rank();
        check_root(n, root)?;
        if me == root {
            same_len("scatter", send.len(), recv.len() * n as usize)?;
        }
        let (l, d) = uniform(n, bytes_of(recv));
        let (s, r, rl) = (rd(send), wr(recv), bytes_of(recv));
        self.run_coll(None, |b| {
            algos::scatterv(b, s, &l, &d, Some((r, rl)), root);
            Ok(())
        })
    }

    /// Scatter with per-rank counts and displacements (in elements) of the root's `send`.
    ///
    /// MPI_Scatterv, on intra- and intercommunicators (`coll_inter`).
    pub fn scatter_varcount<T: Equivalence>(
        &self,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
        root: i32,
    ) -> Result<()> {
        if self.is_inter() {
            return self.run_plan(coll_inter::scatter(
                self,
                Span::of(send),
                Some((counts, displs)),
                Span::of_mut(recv),
                root,
            )?);
        }
        let (n, me) = self.size_rank();
        check_root(n, root)?;
        let (l, d) = if me == root {
            layout::<T>("scatter_varcount", counts, displs, n, send.len())?
        } else {
            (Vec::new(), Vec::new())
        };
        let (s, r, rl) = (rd(send), wr(recv), bytes_of(recv));
        self.run_coll(None, |b| {
            algos::scatterv(b, s, &l, &d, Some((r, rl)), root);
            Ok(())
        })
    }

    /// Every rank's `send`, in rank order, into every rank's `recv` (size × `send.len()`).
    ///
    /// MPI_Allgather, on intra- and intercommunicators (`coll_inter`).
    pub fn all_gather<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        if self.is_inter() {
            return self.run_plan(coll_inter::all_gather(
                self,
                Span::of(send),
                Span::of_mut(recv),
                None,
            )?);
        }
        let n = self.size();
        same_len("all_gather", send.len() * n as usize, recv.len())?;
        let (l, d) = uniform(n, bytes_of(send));
        let (s, sl, r) = (rd(send), bytes_of(send), wr(recv));
        self.run_coll(None, |b| {
            algos::allgatherv(b, Some((s, sl)), r, &l, &d);
            Ok(())
        })
    }

    /// All-gather with per-rank counts and displacements (in elements) of `recv`.
    ///
    /// MPI_Allgatherv, on intra- and intercommunicators (`coll_inter`).
    pub fn all_gather_varcount<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        if self.is_inter() {
            return self.run_plan(coll_inter::all_gather(
                self,
                Span::of(send),
                Span::of_mut(recv),
                Some((counts, displs)),
            )?);
        }
        let n = self.size();
        let (l, d) = layout::<T>("all_gather_varcount", counts, displs, n, recv.len())?;
        let (s, sl, r) = (rd(send), bytes_of(send), wr(recv));
        self.run_coll(None, |b| {
            algos::allgatherv(b, Some((s, sl)), r, &l, &d);
            Ok(())
        })
    }

    /// Block i of `send` to rank i; block j of `recv` from rank j (equal blocks).
    ///
    /// MPI_Alltoall, on intra- and intercommunicators (`coll_inter`).
    pub fn all_to_all<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        if self.is_inter() {
            return self.run_plan(coll_inter::all_to_all(
                self,
                Span::of(send),
                Span::of_mut(recv),
                None,
            )?);
        }
        let n = self.size();
        same_len("all_to_all", send.len(), recv.len())?;
        let block = equal_blocks("all_to_all", send.len(), n)?;
        let (l, d) = uniform(n, block * std::mem::size_of::<T>());
        let (s, r) = (rd(send), wr(recv));
        self.run_coll(None, |b| {
            algos::alltoallw(b, Some(s), &l, &d, r, &l, &d);
            Ok(())
        })
    }

    /// All-to-all with per-rank counts and displacements (in elements) on both sides.
    ///
    /// MPI_Alltoallv, on intra- and intercommunicators (`coll_inter`).
    pub fn all_to_all_varcount<T: Equivalence>(
        &self,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        if self.is_inter() {
            return self.run_plan(coll_inter::all_to_all(
                self,
                Span::of(send),
                Span::of_mut(recv),
                Some((send_counts, send_displs, recv_counts, recv_displs)),
            )?);
        }
        let n = self.size();
        let (sl, sd) = layout::<T>(
            "all_to_all_varcount",
            send_counts,
            send_displs,
            n,
            send.len(),
        )?;
        let (rl, rdp) = layout::<T>(
            "all_to_all_varcount",
            recv_counts,
            recv_displs,
            n,
            recv.len(),
        )?;
        let (s, r) = (rd(send), wr(recv));
        self.run_coll(None, |b| {
            algos::alltoallw(b, Some(s), &sl, &sd, r, &rl, &rdp);
            Ok(())
        })
    }

    /// Start a barrier.
    ///
    /// MPI_Ibarrier, on intra- and intercommunicators (`coll_inter`).
    pub fn ibarrier<'scope>(&self, scope: &'scope Scope<'scope, '_>) -> Result<Request<'scope>> {
        if self.is_inter() {
            let id = self.start_plan(coll_inter::barrier())?;
            return Ok(scope.register(id));
        }
        let id = self.start_coll(None, |b| {
            algos::barrier(b);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start a broadcast; `buf` stays borrowed until the request completes.
    ///
    /// MPI_Ibcast, on intra- and intercommunicators (`coll_inter`).
    pub fn ibroadcast<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        root: i32,
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            let id = self.start_plan(coll_inter::broadcast(self, Span::of_mut(buf), root)?)?;
            return Ok(scope.register(id));
        }
        check_root(self.size(), root)?;
        let (at, len) = (wr(buf), bytes_of(buf));
        let id = self.start_coll(None, |b| {
            algos::bcast(b, at, len, root);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start an all-reduce; the buffers (and a user op) stay borrowed until it completes.
    ///
    /// MPI_Iallreduce, on intra- and intercommunicators (`coll_inter`).
    pub fn iall_reduce<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: impl Into<Operation<'scope, T>>,
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            // SAFETY: the scope completes the request, dropping the op, before 'scope ends.
            let red = unsafe { lower(op.into())? };
            let id = self.start_plan(coll_inter::all_reduce(
                Span::of(send),
                Span::of_mut(recv),
                red,
            )?)?;
            return Ok(scope.register(id));
        }
        same_len("iall_reduce", send.len(), recv.len())?;
        // SAFETY: the scope completes the request, dropping the op, before 'scope ends.
        let red = unsafe { lower(op.into())? };
        let (s, r, c) = (rd(send), wr(recv), send.len());
        let id = self.start_coll(Some(red), |b| {
            algos::allreduce(b, Some(s), r, c);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start a reduce to `root` (`recv` is ignored elsewhere).
    ///
    /// MPI_Ireduce, on intra- and intercommunicators (`coll_inter`).
    pub fn ireduce<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: impl Into<Operation<'scope, T>>,
        root: i32,
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            // SAFETY: the scope completes the request, dropping the op, before 'scope ends.
            let red = unsafe { lower(op.into())? };
            let id = self.start_plan(coll_inter::reduce(
                self,
                Span::of(send),
                Span::of_mut(recv),
                red,
                root,
            )?)?;
            return Ok(scope.register(id));
        }
        let (n, me) = self.size_rank();
        check_root(n, root)?;
        if me == root {
            same_len("ireduce", send.len(), recv.len())?;
        }
        // SAFETY: as in `iall_reduce`.
        let red = unsafe { lower(op.into())? };
        let (s, r, c) = (rd(send), wr(recv), send.len());
        let id = self.start_coll(Some(red), |b| {
            algos::reduce(b, Some(s), r, c, root);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start an all-gather.
    ///
    /// MPI_Iallgather, on intra- and intercommunicators (`coll_inter`).
    pub fn iall_gather<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            let id = self.start_plan(coll_inter::all_gather(
                self,
                Span::of(send),
                Span::of_mut(recv),
                None,
            )?)?;
            return Ok(scope.register(id));
        }
        let n = self.size();
        same_len("iall_gather", send.len() * n as usize, recv.len())?;
        let (l, d) = uniform(n, bytes_of(send));
        let (s, sl, r) = (rd(send), bytes_of(send), wr(recv));
        let id = self.start_coll(None, |b| {
            algos::allgatherv(b, Some((s, sl)), r, &l, &d);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start an all-to-all with equal blocks.
    ///
    /// MPI_Ialltoall, on intra- and intercommunicators (`coll_inter`).
    pub fn iall_to_all<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            let id = self.start_plan(coll_inter::all_to_all(
                self,
                Span::of(send),
                Span::of_mut(recv),
                None,
            )?)?;
            return Ok(scope.register(id));
        }
        let n = self.size();
        same_len("iall_to_all", send.len(), recv.len())?;
        let block = equal_blocks("iall_to_all", send.len(), n)?;
        let (l, d) = uniform(n, block * std::mem::size_of::<T>());
        let (s, r) = (rd(send), wr(recv));
        let id = self.start_coll(None, |b| {
            algos::alltoallw(b, Some(s), &l, &d, r, &l, &d);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start an inclusive scan.
    ///
    /// MPI_Iscan; intracommunicators only (MPI_ERR_COMM on an intercommunicator).
    pub fn iscan<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: impl Into<Operation<'scope, T>>,
    ) -> Result<Request<'scope>> {
        self.intra_only("iscan")?;
        same_len("iscan", send.len(), recv.len())?;
        // SAFETY: as in `iall_reduce`.
        let red = unsafe { lower(op.into())? };
        let (s, r, c) = (rd(send), wr(recv), send.len());
        let id = self.start_coll(Some(red), |b| {
            algos::scan(b, Some(s), r, c);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start an exclusive scan (rank 0's `recv` is left as it was).
    ///
    /// MPI_Iexscan; intracommunicators only (MPI_ERR_COMM on an intercommunicator).
    pub fn iexscan<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: impl Into<Operation<'scope, T>>,
    ) -> Result<Request<'scope>> {
        self.intra_only("iexscan")?;
        same_len("iexscan", send.len(), recv.len())?;
        // SAFETY: as in `iall_reduce`.
        let red = unsafe { lower(op.into())? };
        let (s, r, c) = (rd(send), wr(recv), send.len());
        let id = self.start_coll(Some(red), |b| {
            algos::exscan(b, Some(s), r, c);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start a gather to `root` (`recv`, size × `send.len()` elements, is ignored elsewhere).
    ///
    /// MPI_Igather, on intra- and intercommunicators (`coll_inter`).
    pub fn igather<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        root: i32,
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            let id = self.start_plan(coll_inter::gather(
                self,
                Span::of(send),
                Span::of_mut(recv),
                None,
                root,
            )?)?;
            return Ok(scope.register(id));
        }
        let (n, me) = self.size_rank();
        check_root(n, root)?;
        if me == root {
            same_len("igather", send.len() * n as usize, recv.len())?;
        }
        let (l, d) = uniform(n, bytes_of(send));
        let (s, sl, r) = (rd(send), bytes_of(send), wr(recv));
        let id = self.start_coll(None, |b| {
            algos::gatherv(b, Some((s, sl)), r, &l, &d, root);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start a scatter from `root` (`send`, size × `recv.len()` elements, is ignored elsewhere).
    ///
    /// MPI_Iscatter, on intra- and intercommunicators (`coll_inter`).
    pub fn iscatter<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        root: i32,
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            let id = self.start_plan(coll_inter::scatter(
                self,
                Span::of(send),
                None,
                Span::of_mut(recv),
                root,
            )?)?;
            return Ok(scope.register(id));
        }
        let (n, me) = self.size_rank();
        check_root(n, root)?;
        if me == root {
            same_len("iscatter", send.len(), recv.len() * n as usize)?;
        }
        let (l, d) = uniform(n, bytes_of(recv));
        let (s, r, rl) = (rd(send), wr(recv), bytes_of(recv));
        let id = self.start_coll(None, |b| {
            algos::scatterv(b, s, &l, &d, Some((r, rl)), root);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start a reduce-scatter with equal blocks of `recv.len()` elements.
    ///
    /// MPI_Ireduce_scatter_block, on intra- and intercommunicators (`coll_inter`).
    pub fn ireduce_scatter_block<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: impl Into<Operation<'scope, T>>,
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            // SAFETY: the scope completes the request, dropping the op, before 'scope ends.
            let red = unsafe { lower(op.into())? };
            let id = self.start_plan(coll_inter::reduce_scatter(
                Span::of(send),
                Span::of_mut(recv),
                self.block_counts(send.len(), recv.len())?,
                red,
            )?)?;
            return Ok(scope.register(id));
        }
        let n = self.size();
        same_len("ireduce_scatter_block", send.len(), recv.len() * n as usize)?;
        // SAFETY: as in `iall_reduce`.
        let red = unsafe { lower(op.into())? };
        let counts = vec![recv.len(); n as usize];
        let (s, r) = (rd(send), wr(recv));
        let id = self.start_coll(Some(red), |b| {
            algos::reduce_scatter(b, Some(s), r, &counts);
            Ok(())
        })?;
        Ok(scope.register(id))
    }
}

/// Combine two local buffers without communication: `inout[i] = input[i] op inout[i]`
/// (MPI_Reduce_local; `input` plays the lower ranks' part for a non-commutative op).
pub fn reduce_local<'f, T: Equivalence>(
    input: &[T],
    inout: &mut [T],
    op: impl Into<Operation<'f, T>>,
) -> Result<()> {
    same_len("reduce_local", input.len(), inout.len())?;
    // SAFETY: the op is used and dropped within this call.
    let red = unsafe { lower(op.into())? };
    let n = input.len();
    op::apply(&red.op, red.dt, n, as_bytes(input), as_bytes_mut(inout));
    Ok(())
}

/// The varcount forms that were missing: reduce-scatter with per-rank counts (blocking and
/// not) and the non-blocking gather/scatter/all-gather/all-to-all with counts and
/// displacements (in elements), checked like their blocking forms.
impl Communicator {
    /// Reduce `send` (the sum of `counts` elements) and give rank i its `counts[i]` elements.
    ///
    /// MPI_Reduce_scatter, on intra- and intercommunicators (`coll_inter`).
    pub fn reduce_scatter<'f, T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: impl Into<Operation<'f, T>>,
    ) -> Result<()> {
        self.check_reduce_scatter("reduce_scatter", send.len(), recv.len(), counts)?;
        // SAFETY: as in `reduce`.
        let red = unsafe { lower(op.into())? };
        if self.is_inter() {
            return self.run_plan(coll_inter::reduce_scatter(
                Span::of(send),
                Span::of_mut(recv),
                counts.to_vec(),
                red,
            )?);
        }
        let (s, r) = (rd(send), wr(recv));
        self.run_coll(Some(red), |b| {
            algos::reduce_scatter(b, Some(s), r, counts);
            Ok(())
        })
    }

    /// Start a reduce-scatter with per-rank counts.
    ///
    /// MPI_Ireduce_scatter, on intra- and intercommunicators (`coll_inter`).
    pub fn ireduce_scatter<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        counts: &[usize],
        op: impl Into<Operation<'scope, T>>,
    ) -> Result<Request<'scope>> {
        self.check_reduce_scatter("ireduce_scatter", send.len(), recv.len(), counts)?;
        // SAFETY: as in `iall_reduce`.
        let red = unsafe { lower(op.into())? };
        if self.is_inter() {
            let plan = coll_inter::reduce_scatter(
                Span::of(send),
                Span::of_mut(recv),
                counts.to_vec(),
                red,
            )?;
            return Ok(scope.register(self.start_plan(plan)?));
        }
        let (s, r) = (rd(send), wr(recv));
        let id = self.start_coll(Some(red), |b| {
            algos::reduce_scatter(b, Some(s), r, counts);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    fn check_reduce_scatter(
        &self,
        what: &str,
        send: usize,
        recv: usize,
        c: &[usize],
    ) -> Result<()> {
        let (n, me) = self.size_rank();
        if c.len() != n as usize {
            return Err(count_err(format!(
                "{what}: {} counts for {n} ranks",
                c.len()
            )));
        }
        same_len(what, send, c.iter().sum())?;
        same_len(what, c[me as usize], recv)
    }

    /// Start a gather with per-rank counts and displacements into the root's `recv`.
    ///
    /// MPI_Igatherv, on intra- and intercommunicators (`coll_inter`).
    pub fn igather_varcount<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        counts: &[usize],
        displs: &[usize],
        root: i32,
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            let id = self.start_plan(coll_inter::gather(
                self,
                Span::of(send),
                Span::of_mut(recv),
                Some((counts, displs)),
                root,
            )?)?;
            return Ok(scope.register(id));
        }
        let (n, me) = self.size_rank();
        check_root(n, root)?;
        let (l, d) = if me == root {
            layout::<T>("igather_varcount", counts, displs, n, recv.len())?
        } else {
            (Vec::new(), Vec::new())
        };
        let (s, sl, r) = (rd(send), bytes_of(send), wr(recv));
        let id = self.start_coll(None, |b| {
            algos::gatherv(b, Some((s, sl)), r, &l, &d, root);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start a scatter with per-rank counts and displacements of the root's `send`.
    ///
    /// MPI_Iscatterv, on intra- and intercommunicators (`coll_inter`).
    pub fn iscatter_varcount<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        counts: &[usize],
        displs: &[usize],
        recv: &'scope mut [T],
        root: i32,
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            let id = self.start_plan(coll_inter::scatter(
                self,
                Span::of(send),
                Some((counts, displs)),
                Span::of_mut(recv),
                root,
            )?)?;
            return Ok(scope.register(id));
        }
        let (n, me) = self.size_rank();
        check_root(n, root)?;
        let (l, d) = if me == root {
            layout::<T>("iscatter_varcount", counts, displs, n, send.len())?
        } else {
            (Vec::new(), Vec::new())
        };
        let (s, r, rl) = (rd(send), wr(recv), bytes_of(recv));
        let id = self.start_coll(None, |b| {
            algos::scatterv(b, s, &l, &d, Some((r, rl)), root);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start an all-gather with per-rank counts and displacements of `recv`.
    ///
    /// MPI_Iallgatherv, on intra- and intercommunicators (`coll_inter`).
    pub fn iall_gather_varcount<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            let id = self.start_plan(coll_inter::all_gather(
                self,
                Span::of(send),
                Span::of_mut(recv),
                Some((counts, displs)),
            )?)?;
            return Ok(scope.register(id));
        }
        let n = self.size();
        let (l, d) = layout::<T>("iall_gather_varcount", counts, displs, n, recv.len())?;
        let (s, sl, r) = (rd(send), bytes_of(send), wr(recv));
        let id = self.start_coll(None, |b| {
            algos::allgatherv(b, Some((s, sl)), r, &l, &d);
            Ok(())
        })?;
        Ok(scope.register(id))
    }

    /// Start an all-to-all with per-rank counts and displacements on both sides.
    ///
    /// MPI_Ialltoallv, on intra- and intercommunicators (`coll_inter`).
    #[allow(clippy::too_many_arguments)]
    pub fn iall_to_all_varcount<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &'scope mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<Request<'scope>> {
        if self.is_inter() {
            let id = self.start_plan(coll_inter::all_to_all(
                self,
                Span::of(send),
                Span::of_mut(recv),
                Some((send_counts, send_displs, recv_counts, recv_displs)),
            )?)?;
            return Ok(scope.register(id));
        }
        let n = self.size();
        let what = "iall_to_all_varcount";
        let (sl, sd) = layout::<T>(what, send_counts, send_displs, n, send.len())?;
        let (rl, rdp) = layout::<T>(what, recv_counts, recv_displs, n, recv.len())?;
        let (s, r) = (rd(send), wr(recv));
        let id = self.start_coll(None, |b| {
            algos::alltoallw(b, Some(s), &sl, &sd, r, &rl, &rdp);
            Ok(())
        })?;
        Ok(scope.register(id))
    }
}

/// One rank's block in `all_to_all_w`: `count` elements of `datatype` at byte offset `displ`.
/// Any datatype: blocks with holes, a non-zero lower bound or a resized extent are packed
/// through a temporary (`coll::stage`); every byte a block reaches must lie in the buffer.
#[derive(Clone, Copy)]
pub struct WBlock<'t> {
    pub count: usize,
    pub displ: usize,
    pub datatype: &'t super::usertype::UserDatatype,
}

/// Staged all-to-all-w blocks, exchanged with the communicator's peers: the remote group's
/// ranks on an intercommunicator (`coll::inter`), the communicator's otherwise.
fn all_to_all_blocks(b: &mut Builder, s: &stage::Blocks, r: &stage::Blocks) {
    if b.is_inter() {
        coll::inter::alltoallw(b, s.at, &s.lens, &s.displs, r.at, &r.lens, &r.displs);
    } else {
        algos::alltoallw(b, Some(s.at), &s.lens, &s.displs, r.at, &r.lens, &r.displs);
    }
}

/// The blocks as staging shapes, checked against the rank count and the buffer.
fn w_blocks(
    what: &str,
    blocks: &[WBlock<'_>],
    n: i32,
    len: usize,
) -> Result<Vec<(Shape, usize, isize)>> {
    if blocks.len() != n as usize {
        return Err(count_err(format!(
            "{what}: {} blocks for {n} ranks",
            blocks.len()
        )));
    }
    let mut v = Vec::with_capacity(blocks.len());
    for (i, b) in blocks.iter().enumerate() {
        let l = b.datatype.layout();
        let (lo, hi) = l
            .span(b.count)
            .ok_or_else(|| count_err(format!("{what}: block {i} overflows")))?;
        let d = isize::try_from(b.displ)
            .map_err(|_| count_err(format!("{what}: block {i}'s displacement overflows")))?;
        let inside = d.checked_add(lo).is_some_and(|s| s >= 0)
            && d.checked_add(hi).is_some_and(|e| e as usize <= len);
        if hi > lo && !inside {
            return Err(count_err(format!(
                "{what}: block {i} reaches bytes [{}, {}) of a {len}-byte buffer",
                d.saturating_add(lo),
                d.saturating_add(hi)
            )));
        }
        v.push((Shape::of(l), b.count, d));
    }
    Ok(v)
}

impl Communicator {
    /// All-to-all with a count, byte displacement and datatype per rank (MPI_Alltoallw).
    pub fn all_to_all_w(
        &self,
        send: &[u8],
        sends: &[WBlock<'_>],
        recv: &mut [u8],
        recvs: &[WBlock<'_>],
    ) -> Result<()> {
        let n = self.peer_count();
        let sb = w_blocks("all_to_all_w", sends, n, send.len())?;
        let rb = w_blocks("all_to_all_w", recvs, n, recv.len())?;
        let (s, r) = (send.as_ptr().cast_mut(), recv.as_mut_ptr());
        self.run_plan(Plan::new(None, move |b| {
            let s = stage::stage_mixed(b, s, &sb, Dir::In)?;
            let r = stage::stage_mixed(b, r, &rb, Dir::Out)?;
            all_to_all_blocks(b, &s, &r);
            Ok(())
        }))
    }

    /// Start an all-to-all with per-rank datatypes (MPI_Ialltoallw); the buffers stay borrowed
    /// until the request completes.
    pub fn iall_to_all_w<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        send: &'scope [u8],
        sends: &[WBlock<'_>],
        recv: &'scope mut [u8],
        recvs: &[WBlock<'_>],
    ) -> Result<Request<'scope>> {
        let n = self.peer_count();
        let sb = w_blocks("iall_to_all_w", sends, n, send.len())?;
        let rb = w_blocks("iall_to_all_w", recvs, n, recv.len())?;
        let (s, r) = (send.as_ptr().cast_mut(), recv.as_mut_ptr());
        let id = self.start_any(
            None,
            |b| {
                let s = stage::stage_mixed(b, s, &sb, Dir::In)?;
                let r = stage::stage_mixed(b, r, &rb, Dir::Out)?;
                all_to_all_blocks(b, &s, &r);
                Ok(())
            },
            coll::Space::Nonblocking,
        )?;
        Ok(scope.register(id))
    }
}
