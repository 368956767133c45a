//! Communicators in the Rust API: point-to-point and barrier.

use std::marker::PhantomData;

use super::datatype::{as_bytes, as_bytes_mut, Equivalence};
use super::request::{Request, Scope};
use super::status::Status;
use crate::comm as table;
use crate::error::{Error, ErrorClass, Result};
use crate::pml;
use crate::runtime;

/// Where a receive takes its message from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Rank(i32),
    Any,
}

impl From<i32> for Source {
    fn from(r: i32) -> Source {
        Source::Rank(r)
    }
}

impl Source {
    pub(crate) fn raw(self) -> i32 {
        match self {
            Source::Rank(r) => r,
            Source::Any => pml::ANY_SOURCE,
        }
    }
}

/// Which tags a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    Is(i32),
    Any,
}

impl From<i32> for Tag {
    fn from(t: i32) -> Tag {
        Tag::Is(t)
    }
}

impl Tag {
    pub(crate) fn raw(self) -> i32 {
        match self {
            Tag::Is(t) => t,
            Tag::Any => pml::ANY_TAG,
        }
    }
}

/// Sender rank for "no process": sends to it and receives from it complete at once.
pub const PROC_NULL: i32 = runtime::PROC_NULL;

/// Turn a status carrying an error (truncation) into an `Err`.
pub(crate) fn check(st: pml::Status) -> Result<Status> {
    match ErrorClass::from_code(st.error) {
        None => Ok(Status(st)),
        Some(ErrorClass::Truncate) => Err(Error::new(
            ErrorClass::Truncate,
            format!(
                "message from rank {} with tag {} is larger than the receive buffer",
                st.source, st.tag
            ),
        )),
        Some(c) => Err(Error::new(c, c.description())),
    }
}

/// Whether a started operation is over (or cannot be waited for: `finish` says why).
pub(super) fn started_ready(rt: &mut runtime::Runtime, s: &pml::Started) -> bool {
    match *s {
        pml::Started::Done(_) => true,
        pml::Started::Pending(r) => !rt.pml.is_valid(r) || rt.pml.is_complete(r),
    }
}

/// A sendrecv's receive and send, started together.
pub(super) type Pair = (pml::Started, Result<pml::Started>);

/// Whether both of a sendrecv's operations are over (or would fail at once).
pub(super) fn pair_ready(rt: &mut runtime::Runtime, (r, s): &Pair) -> bool {
    started_ready(rt, r) && s.as_ref().map_or(true, |s| started_ready(rt, s))
}

/// Finish both: the receive's status, or the first error.
pub(super) fn pair_finish(rt: &mut runtime::Runtime, (r, s): Pair) -> Result<pml::Status> {
    let rs = rt.finish(r);
    rt.finish(s?)?;
    rs
}

/// A communicator handle. Not `Send`: MPI is used from the thread that initialised it (under
/// MPI_THREAD_MULTIPLE, `Communicator::shared` gives a handle that is).
#[derive(Clone, Copy, Debug)]
pub struct Communicator {
    pub(crate) id: usize,
    _not_send: PhantomData<*const ()>,
}

/// A communicator handle for several threads at once (MPI_THREAD_MULTIPLE): `Send + Sync`, so
/// scoped threads may share it; every `Communicator` method through `Deref`. Made only by
/// `Communicator::shared`, which needs the runtime to run MULTIPLE.
///
/// ```no_run
/// let (universe, level) = rmpi::initialize_with_threading(rmpi::Threading::Multiple).unwrap();
/// assert_eq!(level, rmpi::Threading::Multiple);
/// let world = universe.world().shared().unwrap();
/// std::thread::scope(|s| {
///     for t in 0..2 {
///         s.spawn(move || world.barrier().unwrap());
///     }
/// });
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SharedCommunicator(Communicator);

// SAFETY: a `Communicator` is an index into the runtime's table; `!Send` marks only the
// FUNNELED rule (one thread uses MPI). A `SharedCommunicator` exists only when the runtime runs
// MPI_THREAD_MULTIPLE, where every access to the runtime and the state beside it takes the
// runtime's lock (`runtime::with`, `held`), from whichever thread: no data is reached unlocked.
unsafe impl Send for SharedCommunicator {}
// SAFETY: as for `Send`: `&SharedCommunicator` gives only `Copy` ids and locked calls.
unsafe impl Sync for SharedCommunicator {}

impl std::ops::Deref for SharedCommunicator {
    type Target = Communicator;
    fn deref(&self) -> &Communicator {
        &self.0
    }
}

impl Communicator {
    /// This communicator as a handle that threads may share, when MPI_THREAD_MULTIPLE was
    /// provided (`rmpi::initialize_with_threading(Threading::Multiple)`); MPI_ERR_OTHER else.
    /// The handle does not keep the communicator alive: freeing it (dropping its
    /// `UserCommunicator`) while threads use it makes their calls fail.
    pub fn shared(&self) -> Result<SharedCommunicator> {
        if !runtime::is_multiple() {
            return Err(Error::new(
                ErrorClass::Other,
                "a communicator can be shared between threads only under MPI_THREAD_MULTIPLE \
                 (rmpi::initialize_with_threading(Threading::Multiple))",
            ));
        }
        Ok(SharedCommunicator(*self))
    }

    pub(crate) fn new(id: usize) -> Communicator {
        Communicator {
            id,
            _not_send: PhantomData,
        }
    }

    pub fn rank(&self) -> i32 {
        runtime::with(|rt| Ok(rt.comm(self.id)?.rank)).expect("a live communicator has a rank")
    }

    pub fn size(&self) -> i32 {
        runtime::with(|rt| Ok(rt.comm(self.id)?.size())).expect("a live communicator has a size")
    }

    /// Blocking send of `buf` to rank `dest`.
    pub fn send<T: Equivalence>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        let b = as_bytes(buf);
        // The latency path: straight to the transport (under MULTIPLE when the runtime is free
        // at once; else the general path below sends).
        // SAFETY: `b` is borrowed for this whole call; the transport copies it at once.
        if runtime::try_with_nowait(|rt| unsafe {
            rt.send_now(self.id, b.as_ptr(), b.len(), dest, tag, true)
        }) {
            return Ok(());
        }
        runtime::blocking(
            |rt| {
                // SAFETY: `b` is borrowed for this whole call, which returns only once sent.
                unsafe { rt.start_send(self.id, b.as_ptr(), b.len(), dest, tag) }
            },
            started_ready,
            |rt, s| rt.finish(s).map(|_| ()),
        )
    }

    /// Blocking receive into `buf`; a larger message is an `MPI_ERR_TRUNCATE` error.
    pub fn recv<T: Equivalence>(
        &self,
        buf: &mut [T],
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Status> {
        let b = as_bytes_mut(buf);
        let (src, tag) = (source.into().raw(), tag.into().raw());
        // The latency path: a direct receive, which waits inside the runtime (under MULTIPLE
        // only while no other thread waits for it); anything unusual takes the general path
        // below.
        let mut got = None;
        let fast = runtime::try_with(|rt| {
            // SAFETY: `b` is exclusively borrowed for this whole call, which returns only once
            // the receive has completed.
            got = unsafe { rt.recv_now(self.id, b.as_mut_ptr(), b.len(), src, tag) };
            got.is_some()
        }) || (runtime::is_multiple()
            && runtime::try_with_nowait(|rt| {
                // SAFETY: as above (given up before anything was written, if at all).
                got = unsafe { rt.recv_now_yielding(self.id, b.as_mut_ptr(), b.len(), src, tag) };
                got.is_some()
            }));
        if fast {
            return check(got.expect("set when try_with says so"));
        }
        let st = runtime::blocking(
            |rt| {
                // SAFETY: as above.
                unsafe { rt.start_recv(self.id, b.as_mut_ptr(), b.len(), src, tag) }
            },
            started_ready,
            |rt, s| rt.finish(s),
        )?;
        check(st)
    }

    /// Send `sendbuf` to `dest` and receive into `recvbuf` from `source` at the same time.
    pub fn sendrecv<S: Equivalence, R: Equivalence>(
        &self,
        sendbuf: &[S],
        dest: i32,
        sendtag: i32,
        recvbuf: &mut [R],
        source: impl Into<Source>,
        recvtag: impl Into<Tag>,
    ) -> Result<Status> {
        let sb = as_bytes(sendbuf);
        let rb = as_bytes_mut(recvbuf);
        let (src, rtag) = (source.into().raw(), recvtag.into().raw());
        let st = runtime::blocking(
            |rt| {
                // SAFETY: both buffers are borrowed for this whole call, which completes both
                // operations.
                let r = unsafe { rt.start_recv(self.id, rb.as_mut_ptr(), rb.len(), src, rtag)? };
                // SAFETY: as above.
                let s = unsafe { rt.start_send(self.id, sb.as_ptr(), sb.len(), dest, sendtag) };
                Ok((r, s))
            },
            pair_ready,
            pair_finish,
        )?;
        check(st)
    }

    /// Start a send; `buf` stays borrowed until the request completes.
    pub fn isend<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'scope>> {
        let b = as_bytes(buf);
        let req = runtime::with(|rt| {
            // SAFETY: `buf` is borrowed for 'scope, and the scope completes the request before
            // 'scope ends (Request and Scope wait in their Drop).
            let s = unsafe { rt.start_send(self.id, b.as_ptr(), b.len(), dest, tag)? };
            Ok(rt.pml.request_for(s))
        })?;
        Ok(scope.register(req))
    }

    /// Start a receive; `buf` stays exclusively borrowed until the request completes.
    pub fn irecv<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Request<'scope>> {
        let b = as_bytes_mut(buf);
        let (src, tag) = (source.into().raw(), tag.into().raw());
        let req = runtime::with(|rt| {
            // SAFETY: as in `isend`, with the buffer borrowed mutably for 'scope.
            let s = unsafe { rt.start_recv(self.id, b.as_mut_ptr(), b.len(), src, tag)? };
            Ok(rt.pml.request_for(s))
        })?;
        Ok(scope.register(req))
    }

    /// Block until every rank of the communicator has entered the barrier (MPI_Barrier; on an
    /// intercommunicator, every member of both groups).
    pub fn barrier(&self) -> Result<()> {
        if crate::comm_ops::multiple_forms(self.id)? {
            // MPI_Ibarrier's schedule, waited for outside the runtime.
            let id = runtime::with(|rt| {
                let c = rt.comm(self.id)?;
                let s = {
                    let mut b = crate::coll::Builder::new(c, None);
                    if c.is_inter() {
                        crate::coll::inter::barrier(&mut b);
                    } else {
                        crate::coll::algos::barrier(&mut b);
                    }
                    b.finish()
                };
                Ok(crate::coll::start_blocking(&mut rt.pml, s))
            })?;
            return check(runtime::wait_request(id)?).map(|_| ());
        }
        runtime::with(|rt| rt.barrier(self.id))
    }

    /// Abort the whole job with `code` (MPI_Abort).
    pub fn abort(&self, code: i32) -> ! {
        let msg = format!("MPI_Abort called with error code {code}");
        let r = runtime::with(|rt| -> Result<()> { rt.abort(code, &msg) });
        // Only reached when the runtime is gone (wrong thread or finalized).
        let _ = r;
        runtime::abort_without_runtime(code, &msg)
    }
}

pub(crate) fn world() -> Communicator {
    Communicator::new(table::WORLD)
}

pub(crate) fn self_comm() -> Communicator {
    Communicator::new(table::SELF)
}
