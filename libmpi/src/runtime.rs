//! The process-wide MPI state: start-up (PMI, transports), the progress loop that waiting calls
//! spin in, and shut-down. One `Runtime` per process. Under MPI_THREAD_FUNNELED it belongs to the
//! thread that initialised MPI and other threads get a clear error instead of a data race; under
//! MPI_THREAD_SERIALIZED any thread may take it for one call, and a call that overlaps another
//! (a user bug) gets an error; under MPI_THREAD_MULTIPLE a thread that finds it taken waits its
//! turn, and blocking calls wait outside it (`poll_outside`), one progress turn per taking.
//! Under MULTIPLE the runtime starts *biased* to the thread that initialised it (`BIAS`), so
//! that a program that asks for MULTIPLE and calls from one thread (every mpi4py program)
//! takes no lock at all.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicI32, AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;

use crate::btl::sm::SmBtl;
use crate::comm::{self, Comm};
use crate::datatype::Msg;
use crate::error::{err, Error, ErrorClass, Result};
use crate::pmi::{self, Pmi};
use crate::pml::{Pml, ReqId, Started, Status};

pub const PROC_NULL: i32 = -3;
pub const TAG_UB: i32 = i32::MAX;
// The send fast path checks tags with `tag >= 0`.
const _: () = assert!(TAG_UB == i32::MAX);

const NOT_STARTED: u8 = 0;
const RUNNING: u8 = 1;
const FINALIZED: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(NOT_STARTED);

/// `owner` under MPI_THREAD_SERIALIZED between calls: any thread may take the runtime. Thread
/// pointers are aligned, so no thread's id is 1.
const FREE: usize = 1;
/// `owner` while a thread takes the runtime from the thread it was biased to (`revoke_bias`).
const REVOKED: usize = 2;

/// Under MULTIPLE: whether the runtime is biased to the thread that initialised MPI. While it
/// is, that thread keeps `owner` between its calls, as under FUNNELED, and enters with plain
/// loads and stores instead of a `lock cmpxchg` per call (which cost osu_bw 1-256 B 11-27 % and
/// osu_bibw 7-21 %). The first call from any other thread revokes the bias for the rest of the
/// run (`revoke_bias`). Off with the async progress thread, which takes turns from the start.
const UNBIASED: u8 = 0;
const BIASED: u8 = 1;
const REVOKING: u8 = 2;
static BIAS: AtomicU8 = AtomicU8::new(UNBIASED);
/// `btl_base_verbose`: say when the bias is taken and revoked (stderr).
static BIAS_VERBOSE: AtomicBool = AtomicBool::new(false);

/// The runtime. A process-wide slot with an owner check rather than a `thread_local!`: in a
/// shared library every thread-local access is a `__tls_get_addr` call, paid on every MPI call.
struct Slot {
    /// The thread that may use the runtime now: under FUNNELED the one that initialised MPI, for
    /// the whole run; under SERIALIZED and MULTIPLE the one inside a call, else `FREE`. 0 while
    /// MPI is not running.
    owner: AtomicUsize,
    /// Written by the owner only: its id while a call runs, else 0, so that a call from inside
    /// a callback is refused and code inside a call knows it is (`held`); read by a thread
    /// revoking the bias, which waits for it to clear.
    busy: AtomicUsize,
    /// Written by the biased owner only: its id while it runs `held` between calls, else 0.
    /// Until it ends, the runtime stays that thread's even if the bias is being revoked (a
    /// runtime call inside `held` enters on it).
    holding: AtomicUsize,
    /// Owner-only.
    rt: UnsafeCell<Option<Runtime>>,
}

// SAFETY: `rt` is only touched by the thread whose id is in `owner` (checked on every access;
// other threads get an error, or under MULTIPLE wait in `take`). A thread becomes owner either
// at init (FUNNELED, biased MULTIPLE) or by a compare-exchange from `FREE` with Acquire that
// pairs with the previous owner's Release store of `FREE` (SERIALIZED, MULTIPLE), so accesses
// never overlap and each sees the last one. The biased owner sets `busy` and then checks
// `owner` again before touching `rt` (`enter`); a revoking thread swaps `owner` and then waits
// out `busy` after a process-wide barrier (`revoke_bias`), so one of the two sees the other.
// No `&mut Runtime` outlives a call: a thread waiting under MULTIPLE gives the runtime back
// between turns (`poll_outside`) and keeps only ids.
unsafe impl Sync for Slot {}

static SLOT: Slot = Slot {
    owner: AtomicUsize::new(0),
    busy: AtomicUsize::new(0),
    holding: AtomicUsize::new(0),
    rt: UnsafeCell::new(None),
};

/// The thread level the runtime was started with (set once, before it runs).
static LEVEL: AtomicU8 = AtomicU8::new(Level::Funneled as u8);
/// Under MULTIPLE: threads waiting in `take` for the runtime. A thread that gives the runtime
/// back between the turns of a wait lets them in first (`poll_outside`).
static WAITERS: AtomicUsize = AtomicUsize::new(0);

/// Under MULTIPLE: application threads inside a call that waits (`poll_outside` and the calls
/// around it). While there are some, they make progress, this rank counts as waiting in MPI
/// for peers that would ask it to copy (`Runtime::sync_waiting`), and the async progress
/// thread sleeps.
static BLOCKED: AtomicUsize = AtomicUsize::new(0);

/// One thread inside a waiting call, from `new` to `release` (inside the call's last turn
/// under the runtime, so that the turn's end sees the wait over) or drop.
struct Blocked(Cell<bool>);

impl Blocked {
    fn new() -> Blocked {
        BLOCKED.fetch_add(1, Ordering::SeqCst);
        crate::async_progress::wait_started();
        Blocked(Cell::new(false))
    }

    fn release(&self) {
        if !self.0.replace(true) && BLOCKED.fetch_sub(1, Ordering::SeqCst) == 1 {
            crate::async_progress::wait_over();
        }
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        self.release();
    }
}

/// Whether an application thread waits in MPI (MULTIPLE).
pub(crate) fn blocked() -> bool {
    BLOCKED.load(Ordering::SeqCst) > 0
}

/// The thread levels the runtime distinguishes (SINGLE runs as FUNNELED).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
#[repr(u8)]
pub enum Level {
    /// Only the initialising thread calls MPI.
    Funneled = 0,
    /// Any thread, one call at a time (the application orders them).
    Serialized = 1,
    /// Any thread, calls at once.
    Multiple = 2,
}
/// The thread that initialised MPI (MPI_Is_thread_main).
static MAIN: AtomicUsize = AtomicUsize::new(0);

/// A value unique to the calling thread among live threads.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
fn this_thread() -> usize {
    let tp: usize;
    // SAFETY: the x86-64 ELF TLS ABI keeps the thread pointer itself at %fs:0 (what
    // pthread_self derives from, without the call); the load has no side effects.
    unsafe {
        std::arch::asm!("mov {}, fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags, pure))
    };
    tp
}

/// A value unique to the calling thread among live threads.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[inline(always)]
fn this_thread() -> usize {
    // SAFETY: pthread_self has no preconditions and cannot fail.
    unsafe { libc::pthread_self() as usize }
}

/// Ownership taken for one call under MPI_THREAD_SERIALIZED or MULTIPLE; given back on drop,
/// unless it is the biased owner's (`give_back` false), which it keeps.
struct Taken {
    give_back: bool,
}

impl Drop for Taken {
    fn drop(&mut self) {
        if self.give_back {
            // Release: the next owner's Acquire sees everything this call did.
            SLOT.owner.store(FREE, Ordering::Release);
        }
    }
}

/// The slow side of the owner check: under SERIALIZED, take the runtime if no call is running;
/// under MULTIPLE, wait until it is free and take it (the biased owner has it already). Never
/// reached under FUNNELED by the owner thread, so its fast path stays one load.
fn take() -> Result<Taken> {
    let me = this_thread();
    // The biased owner: no read-modify-write (`enter` checks again once `busy` is set).
    if (SLOT.owner.load(Ordering::Acquire) == me && BIAS.load(Ordering::Relaxed) == BIASED)
        || SLOT.holding.load(Ordering::Relaxed) == me
        || SLOT.busy.load(Ordering::Relaxed) == me
    {
        return Ok(Taken { give_back: false });
    }
    match SLOT
        .owner
        .compare_exchange(FREE, me, Ordering::Acquire, Ordering::Relaxed)
    {
        Ok(_) => Ok(Taken { give_back: true }),
        Err(_) if is_multiple() && STATE.load(Ordering::Acquire) == RUNNING => take_waiting(me),
        Err(_) => err(ErrorClass::Other, not_running_reason()),
    }
}

/// Mark this thread inside a call (`busy`), then check that it still owns the runtime: the
/// owner half of the handshake with `revoke_bias`. False (and `busy` clear again) when the
/// bias was revoked meanwhile; the caller then takes the runtime as other threads do. Under
/// FUNNELED and for a thread that took the runtime by compare-exchange, `owner` cannot change
/// under it, and the second load costs an L1 hit.
#[inline(always)]
fn enter(me: usize) -> bool {
    // Another thread inside: this thread's `owner` check was read before a revocation that
    // has completed since (the new owner is in a call).
    if SLOT.busy.load(Ordering::Relaxed) != 0 {
        return false;
    }
    SLOT.busy.store(me, Ordering::Relaxed);
    // Only the compiler may not reorder here: `revoke_bias`'s membarrier puts a full barrier
    // into this thread wherever it runs, so either the revoker sees `busy` set or this load
    // sees `owner` revoked.
    compiler_fence(Ordering::SeqCst);
    if SLOT.owner.load(Ordering::Relaxed) == me || SLOT.holding.load(Ordering::Relaxed) == me {
        return true;
    }
    SLOT.busy.store(0, Ordering::Release);
    false
}

/// Under MULTIPLE at init: bias the runtime to the initialising thread when the kernel offers
/// the barrier that revoking needs (membarrier's private expedited command, Linux 4.14).
fn try_bias() -> bool {
    // SAFETY: membarrier takes plain integers and touches no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
            0,
            0,
        )
    };
    r == 0
}

const MEMBARRIER_CMD_GLOBAL: libc::c_int = 1;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// A thread other than the biased owner wants the runtime: take the bias away for good. Swap
/// `owner` to `REVOKED`, make every thread of the process pass a full barrier (so the owner's
/// `busy` store and its next `owner` load in `enter` are ordered around the swap), then wait
/// until the owner is out of the call it may be in (a waiting call leaves at its next turn, as
/// `WAITERS` is raised), and free the runtime for the compare-exchange of `take_waiting`.
#[cold]
fn revoke_bias() {
    if BIAS
        .compare_exchange(BIASED, REVOKING, Ordering::Acquire, Ordering::Acquire)
        .is_err()
    {
        // Another thread revokes it: wait for that to finish.
        while BIAS.load(Ordering::Acquire) != UNBIASED {
            std::thread::yield_now();
        }
        return;
    }
    let held = SLOT.owner.swap(REVOKED, Ordering::AcqRel);
    // SAFETY: membarrier takes plain integers and touches no memory of ours.
    let barrier = |cmd: libc::c_int| unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) } == 0;
    // Registered at init (no bias otherwise); the global command (slower) covers a kernel
    // that refuses anyway. Without either, no wait would order the owner's plain stores
    // against the swap: end the process rather than let two threads into the runtime.
    if !barrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) && !barrier(MEMBARRIER_CMD_GLOBAL) {
        eprintln!(
            "rmpi: MPI_THREAD_MULTIPLE: membarrier(2) failed after it was registered ({}); \
             aborting rather than run two threads in the library at once",
            std::io::Error::last_os_error()
        );
        std::process::abort();
    }
    let mut tries = 0u32;
    while SLOT.busy.load(Ordering::Acquire) != 0 || SLOT.holding.load(Ordering::Acquire) != 0 {
        tries += 1;
        if tries < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    // Finalized meanwhile (`owner` 0): leave it so.
    let next = if held == 0 { 0 } else { FREE };
    let _ = SLOT
        .owner
        .compare_exchange(REVOKED, next, Ordering::Release, Ordering::Relaxed);
    BIAS.store(UNBIASED, Ordering::Release);
    if BIAS_VERBOSE.load(Ordering::Relaxed) {
        eprintln!(
            "rmpi: pid {}: MPI_THREAD_MULTIPLE: another thread called MPI; the runtime is no \
             longer biased to the initialising thread",
            std::process::id()
        );
    }
}

/// MULTIPLE: another thread is inside a call. Spin a little (calls are short), then yield the
/// CPU between tries: on an oversubscribed node the holder may need this core to finish.
#[cold]
fn take_waiting(me: usize) -> Result<Taken> {
    if SLOT.owner.load(Ordering::Relaxed) == me {
        // Nested inside our own call (a callback): `with` reports it.
        return err(
            ErrorClass::Other,
            "MPI called re-entrantly (from inside an MPI callback)",
        );
    }
    WAITERS.fetch_add(1, Ordering::Relaxed);
    if BIAS.load(Ordering::Acquire) != UNBIASED {
        revoke_bias();
    }
    let mut tries = 0u32;
    let r = loop {
        match SLOT.owner.load(Ordering::Relaxed) {
            FREE if SLOT
                .owner
                .compare_exchange(FREE, me, Ordering::Acquire, Ordering::Relaxed)
                .is_ok() =>
            {
                break Ok(Taken { give_back: true });
            }
            // Finalized (or never started) meanwhile: nothing to wait for.
            0 => break err(ErrorClass::Other, not_running_reason()),
            _ => {}
        }
        tries += 1;
        if tries < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    };
    WAITERS.fetch_sub(1, Ordering::Relaxed);
    r
}

/// Run `f` on the runtime if this thread may use it now; false (nothing done) otherwise. For
/// fast paths that fall back to the general path, which reports the error.
#[inline(always)]
pub fn try_with(f: impl FnOnce(&mut Runtime) -> bool) -> bool {
    // MULTIPLE's biased owner too goes the general way: these fast paths may wait inside.
    if SLOT.owner.load(Ordering::Acquire) != this_thread() || is_multiple() {
        return try_with_taken(f);
    }
    run_try(f)
}

/// `try_with`'s body, on the thread that owns the runtime now.
#[inline(always)]
fn run_try(f: impl FnOnce(&mut Runtime) -> bool) -> bool {
    if !enter(this_thread()) {
        return false;
    }
    let _busy = Busy;
    // SAFETY: as in `with`.
    match unsafe { &mut *SLOT.rt.get() } {
        Some(rt) => f(rt),
        None => false,
    }
}

#[inline(never)]
fn try_with_taken(f: impl FnOnce(&mut Runtime) -> bool) -> bool {
    // The fast paths may wait inside the runtime (MPI_Recv's): under MULTIPLE the general
    // paths, which wait outside it, do the work.
    if is_multiple() {
        return false;
    }
    match take() {
        Ok(_taken) => run_try(f),
        Err(_) => false,
    }
}

/// `try_with` for fast paths that never wait (a send handed to the transport, a receive or send
/// posted): under MULTIPLE they run too, when the runtime is free at once (else false: the
/// general path queues for it).
#[inline(always)]
pub fn try_with_nowait(f: impl FnOnce(&mut Runtime) -> bool) -> bool {
    if SLOT.owner.load(Ordering::Acquire) != this_thread() {
        return try_with_nowait_taken(f);
    }
    run_try(f)
}

#[inline(never)]
fn try_with_nowait_taken(f: impl FnOnce(&mut Runtime) -> bool) -> bool {
    if !is_multiple() {
        return try_with_taken(f);
    }
    if SLOT
        .owner
        .compare_exchange(FREE, this_thread(), Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return false;
    }
    let _taken = Taken { give_back: true };
    run_try(f)
}

/// Clears `busy` when a call ends, by return or by unwinding.
struct Busy;

impl Drop for Busy {
    #[inline(always)]
    fn drop(&mut self) {
        // Release: a revoking thread that sees it clear sees the call's work.
        SLOT.busy.store(0, Ordering::Release);
    }
}

pub fn is_initialized() -> bool {
    STATE.load(Ordering::Acquire) != NOT_STARTED
}

pub fn is_finalized() -> bool {
    STATE.load(Ordering::Acquire) == FINALIZED
}

/// The thread level the runtime runs under.
pub fn level() -> Level {
    match LEVEL.load(Ordering::Acquire) {
        0 => Level::Funneled,
        1 => Level::Serialized,
        _ => Level::Multiple,
    }
}

/// Whether the runtime runs under MPI_THREAD_MULTIPLE.
#[inline]
pub fn is_multiple() -> bool {
    LEVEL.load(Ordering::Relaxed) == Level::Multiple as u8
}

/// Whether the calling thread initialised MPI (MPI_Is_thread_main).
pub fn is_main_thread() -> bool {
    MAIN.load(Ordering::Acquire) == this_thread()
}

/// Run `f` on the runtime if no thread holds it and none waits for it (MULTIPLE; never
/// waits): the async progress thread's turn, which must not queue in front of the
/// application's calls. None when it did not run.
pub(crate) fn try_turn<R>(f: impl FnOnce(&mut Runtime) -> R) -> Option<R> {
    if WAITERS.load(Ordering::Relaxed) > 0 {
        return None;
    }
    SLOT.owner
        .compare_exchange(FREE, this_thread(), Ordering::Acquire, Ordering::Relaxed)
        .ok()?;
    let _taken = Taken { give_back: true };
    run_owned_by(false, |rt| Ok(f(rt))).ok()
}

/// Run `f` on this process's runtime.
#[inline]
pub fn with<R>(f: impl FnOnce(&mut Runtime) -> Result<R>) -> Result<R> {
    // Acquire pairs with init's Release (FUNNELED) or the previous owner's (SERIALIZED,
    // MULTIPLE): the runtime as last left is visible (this also covers a new thread reusing an
    // id).
    if SLOT.owner.load(Ordering::Acquire) != this_thread() {
        return with_taken(f);
    }
    run_owned(f)
}

/// `with`'s body, on the thread that owns the runtime now.
#[inline(always)]
fn run_owned<R>(f: impl FnOnce(&mut Runtime) -> Result<R>) -> Result<R> {
    run_owned_by(true, f)
}

/// `run_owned`, for an application call (`app`) or the async progress thread's turn.
#[inline(always)]
fn run_owned_by<R>(app: bool, f: impl FnOnce(&mut Runtime) -> Result<R>) -> Result<R> {
    let me = this_thread();
    if SLOT.busy.load(Ordering::Relaxed) == me {
        return err(
            ErrorClass::Other,
            "MPI called re-entrantly (from inside an MPI callback)",
        );
    }
    if !enter(me) {
        // The bias was revoked between the caller's check and now.
        return with_taken(f);
    }
    let _busy = Busy;
    // SAFETY: we are the owner thread (checked by the caller) and no other borrow of the
    // runtime is live (`busy` was clear); `owner` is set only while `rt` holds a runtime.
    match unsafe { &mut *SLOT.rt.get() } {
        Some(rt) => {
            let watched = app && crate::async_progress::on();
            if watched {
                crate::async_progress::call_started();
            }
            let r = f(rt);
            // A completed MPI_Comm_idup's communicator is usable from the next call on.
            if rt.idups.any_pending() {
                rt.resolve_idups();
            }
            if is_multiple() {
                rt.sync_waiting();
            }
            if watched {
                crate::async_progress::call_over(rt);
            }
            r
        }
        None => err(ErrorClass::Other, not_running_reason()),
    }
}

#[inline(never)]
fn with_taken<R>(f: impl FnOnce(&mut Runtime) -> Result<R>) -> Result<R> {
    let _taken = take()?;
    // Owner now.
    run_owned(f)
}

/// A blocking call: `start` it, then `finish` it (which waits). At FUNNELED and SERIALIZED
/// both run in one runtime call, as `with(|rt| finish(rt, start(rt)?))`. Under MULTIPLE the
/// wait happens outside the runtime, so other threads' calls go on meanwhile: `start` in one
/// call, then turns of progress until `ready` says `finish` would not wait, then `finish` in
/// another call. `ready` must say true whenever `finish` would fail at once.
#[inline]
pub fn blocking<T, R>(
    start: impl FnOnce(&mut Runtime) -> Result<T>,
    ready: impl FnMut(&mut Runtime, &T) -> bool,
    finish: impl FnOnce(&mut Runtime, T) -> Result<R>,
) -> Result<R> {
    if SLOT.owner.load(Ordering::Acquire) != this_thread() || is_multiple() {
        return blocking_taken(start, ready, finish);
    }
    run_owned(|rt| {
        let t = start(rt)?;
        finish(rt, t)
    })
}

#[inline(never)]
fn blocking_taken<T, R>(
    start: impl FnOnce(&mut Runtime) -> Result<T>,
    mut ready: impl FnMut(&mut Runtime, &T) -> bool,
    finish: impl FnOnce(&mut Runtime, T) -> Result<R>,
) -> Result<R> {
    if !is_multiple() {
        return with_taken(|rt| {
            let t = start(rt)?;
            finish(rt, t)
        });
    }
    // Started and ready at once (an eager send, a message already there): one turn under the
    // runtime, as at the other levels.
    let mut finish = Some(finish);
    let t = match with_taken(|rt| {
        let t = start(rt)?;
        if ready(rt, &t) || rt.spin_until(|rt| ready(rt, &t)) {
            let f = finish.take().expect("first use");
            return f(rt, t).map(Ok);
        }
        Ok(Err(t))
    })? {
        Ok(r) => return Ok(r),
        Err(t) => t,
    };
    let finish = finish.expect("not used yet");
    let blocked = Blocked::new();
    poll_outside(|rt| Ok(ready(rt, &t).then_some(())))?;
    with(|rt| {
        blocked.release();
        finish(rt, t)
    })
}

/// A call that may wait: under MULTIPLE, first wait outside the runtime until `ready` says `f`
/// would not wait (true too when `f` would fail at once), then `with(f)`; at the other levels
/// just `with(f)`, which waits inside.
#[inline]
pub fn with_ready<R>(
    ready: impl FnMut(&mut Runtime) -> bool,
    f: impl FnOnce(&mut Runtime) -> Result<R>,
) -> Result<R> {
    if SLOT.owner.load(Ordering::Acquire) != this_thread() || is_multiple() {
        return with_ready_taken(ready, f);
    }
    run_owned(f)
}

#[inline(never)]
fn with_ready_taken<R>(
    mut ready: impl FnMut(&mut Runtime) -> bool,
    f: impl FnOnce(&mut Runtime) -> Result<R>,
) -> Result<R> {
    if is_multiple() {
        // Ready at once (requests already complete): one turn under the runtime.
        let mut f = Some(f);
        let done = with_taken(|rt| match ready(rt) || rt.spin_until(&mut ready) {
            true => f.take().expect("first use")(rt).map(Some),
            false => Ok(None),
        })?;
        if let Some(r) = done {
            return Ok(r);
        }
        let f = f.expect("not used yet");
        let blocked = Blocked::new();
        poll_outside(|rt| Ok(ready(rt).then_some(())))?;
        return with_taken(|rt| {
            blocked.release();
            f(rt)
        });
    }
    with_taken(f)
}

/// Wait for request `req` and retire it (`Runtime::wait`); under MULTIPLE the wait happens
/// outside the runtime.
#[inline]
pub fn wait_request(req: ReqId) -> Result<Status> {
    with_ready(
        |rt| !rt.pml.is_valid(req) || rt.pml.is_complete(req),
        |rt| rt.wait(req),
    )
}

/// A call that waits for something that `attempt` (which must not wait) may find: at FUNNELED
/// and SERIALIZED `with(f)`, where `f` waits inside; under MULTIPLE `poll_outside(attempt)`. For
/// calls whose condition another thread may undo between a `ready` and a finish (MPI_Probe,
/// MPI_Mprobe: another thread may receive the message), so the finding and the taking are one
/// turn.
#[inline]
pub fn with_poll<R>(
    attempt: impl FnMut(&mut Runtime) -> Result<Option<R>>,
    f: impl FnOnce(&mut Runtime) -> Result<R>,
) -> Result<R> {
    if SLOT.owner.load(Ordering::Acquire) != this_thread() || is_multiple() {
        return with_poll_taken(attempt, f);
    }
    run_owned(f)
}

#[inline(never)]
fn with_poll_taken<R>(
    attempt: impl FnMut(&mut Runtime) -> Result<Option<R>>,
    f: impl FnOnce(&mut Runtime) -> Result<R>,
) -> Result<R> {
    if is_multiple() {
        return poll_outside(attempt);
    }
    with_taken(f)
}

/// Under MULTIPLE, whether a wait inside the runtime gives it up: another thread waits for it
/// (`WAITERS`), ranks are oversubscribed, or 2000 turns in a row moved nothing. One rule for
/// `poll_outside`, `Runtime::spin_until` and `Runtime::recv_now_yielding`.
#[inline(always)]
fn leave_runtime(yield_when_idle: bool, idle: u32) -> bool {
    WAITERS.load(Ordering::Relaxed) > 0 || yield_when_idle || idle > 2000
}

/// How a thread waits under MULTIPLE: `attempt` runs under the runtime, then (if it gave
/// nothing) a progress turn and `attempt` again, and so on while no other thread waits for the
/// runtime; the runtime is given back as soon as one does (`WAITERS`), so every thread's call
/// goes on between the turns. No `&mut Runtime` lives across a give-back: another thread may
/// change the runtime in between. After 2000 idle turns (at once when oversubscribed) the
/// runtime is given back and the CPU yielded. For MULTIPLE only: at the other levels calls wait
/// inside the runtime.
pub fn poll_outside<R>(mut attempt: impl FnMut(&mut Runtime) -> Result<Option<R>>) -> Result<R> {
    let blocked = Blocked::new();
    let mut idle = 0u32;
    loop {
        let got = with(|rt| loop {
            rt.sync_waiting();
            if let Some(r) = attempt(rt)? {
                blocked.release();
                return Ok(Some(r));
            }
            let moved = rt.pml.progress() > 0;
            if moved {
                idle = 0;
                if let Some(r) = attempt(rt)? {
                    blocked.release();
                    return Ok(Some(r));
                }
            } else {
                idle = idle.saturating_add(1);
            }
            if leave_runtime(rt.yield_when_idle, idle) {
                return Ok(None);
            }
        })?;
        if let Some(r) = got {
            return Ok(r);
        }
        std::thread::yield_now();
    }
}

/// Run `f` where only the thread that may use the runtime now may: for process-wide MPI state
/// kept beside the runtime (windows, files, user ops, ports). Inside a runtime call, or on the
/// owner thread, this is one load; otherwise as `with`.
#[inline]
pub fn held<R>(f: impl FnOnce() -> R) -> Result<R> {
    let me = this_thread();
    // Inside a call of this thread (`busy`; `owner` may read REVOKED there while the bias is
    // being revoked), inside its `held`, or the owner of an unbiased runtime.
    if SLOT.busy.load(Ordering::Relaxed) == me
        || SLOT.holding.load(Ordering::Relaxed) == me
        || (SLOT.owner.load(Ordering::Acquire) == me && BIAS.load(Ordering::Relaxed) == UNBIASED)
    {
        return Ok(f());
    }
    held_taken(f)
}

/// `held` on another thread, or on the biased owner between its calls: that one marks itself
/// `holding` (not `busy`: `f` may make runtime calls) so that a revoking thread waits for `f`.
#[inline(never)]
fn held_taken<R>(f: impl FnOnce() -> R) -> Result<R> {
    let taken = take()?;
    if taken.give_back {
        return Ok(f());
    }
    let me = this_thread();
    SLOT.holding.store(me, Ordering::Relaxed);
    // As in `enter`.
    compiler_fence(Ordering::SeqCst);
    let holding = Holding;
    if SLOT.owner.load(Ordering::Relaxed) == me {
        return Ok(f());
    }
    drop(holding);
    // Revoked meanwhile: wait for a turn as other threads do.
    let _taken = take()?;
    Ok(f())
}

/// Clears `holding` when `held_taken`'s `f` ends, by return or by unwinding.
struct Holding;

impl Drop for Holding {
    fn drop(&mut self) {
        SLOT.holding.store(0, Ordering::Release);
    }
}

/// Process-wide MPI state used under the runtime's thread rule (`held`), in place of a
/// `thread_local!` (which would give a second thread under SERIALIZED a table of its own).
pub struct Local<T>(T);

// SAFETY: the value is reached only through `Local::with`, which runs on the thread allowed to
// use the runtime at that moment (`held`; under MULTIPLE it waits for its turn): one thread at
// a time, with happens-before between owners. Values it shares with the runtime (`Rc`s) are under the same rule, hence no
// `T: Send` bound. `T` is not `Sync` (a `RefCell`), so a reference cannot leave `f` for
// another thread.
unsafe impl<T> Sync for Local<T> {}

impl<T> Local<T> {
    pub const fn new(v: T) -> Self {
        Local(v)
    }

    /// `f` on the value, if this thread may use MPI now; else the runtime's error.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&T) -> R) -> Result<R> {
        held(|| f(&self.0))
    }
}

fn not_running_reason() -> &'static str {
    match STATE.load(Ordering::Acquire) {
        NOT_STARTED => "MPI has not been initialized",
        FINALIZED => "MPI has already been finalized",
        _ if level() == Level::Serialized => "MPI called from two threads at once (thread level MPI_THREAD_SERIALIZED: one call at a time, the application must serialize them)",
        _ => "MPI was initialized by another thread (thread level MPI_THREAD_FUNNELED: only that thread may call MPI; ask MPI_Init_thread for MPI_THREAD_SERIALIZED)",
    }
}

pub struct Runtime {
    pmi: Option<Pmi>,
    /// Ends the process if the launcher goes away (no orphans); stopped at MPI_Finalize.
    watch: Option<crate::launcher_watch::Watch>,
    pub pml: Pml,
    pub comms: Vec<Option<Comm>>,
    /// Groups, keyvals, user error handlers, the next free context id.
    pub objs: crate::registry::Objects,
    yield_when_idle: bool,
    pub processor_name: String,
    start: Instant,
    /// The attached buffer of buffered sends.
    pub bsend: crate::p2p::Bsend,
    /// Context ids this process chooses alone, and the idups waiting for theirs.
    pub(crate) idups: crate::comm_idup::Own,
    /// Schedules of blocking collectives, for calls that repeat their arguments.
    pub(crate) coll_cache: crate::coll::cache::Cache,
    /// Under MULTIPLE: what this rank's "waiting in MPI" word says now (`sync_waiting`).
    waiting_marked: bool,
}

/// `btl_base_verbose` set to anything but 0.
fn base_verbose() -> bool {
    mca("btl_base_verbose").is_some_and(|v| v != "0")
}

fn mca(name: &str) -> Option<String> {
    std::env::var(format!("RMPI_MCA_{name}")).ok()
}

/// Whether an idle wait yields the CPU at its `idle`th turn without progress: at every turn
/// when `always` (oversubscribed); otherwise after 2000 turns, in case something else wants
/// this core (another job, oversubscription we were not told of), and then only one turn in
/// 64. Each yield is a syscall, and a sender yielding at every turn while it waits slowed the
/// receiver's process_vm_readv of its pages by 3 % (osu_bw 128 KiB); 64 turns are 1-3 us.
#[inline]
fn idle_yield(idle: u32, always: bool) -> bool {
    always || (idle > 2000 && idle.is_multiple_of(64))
}

/// Whether waiting ranks should yield the CPU at once: asked for (`mpi_yield_when_idle`), told
/// by our mpirun (`RMPI_YIELD`, set when oversubscribed), or, under another launcher, more local
/// ranks than online CPUs. Not the affinity mask: a rank bound to one core is not oversubscribed.
fn yield_when_idle(local_ranks: usize) -> bool {
    if let Some(v) = mca("mpi_yield_when_idle").filter(|v| v.trim() != "auto") {
        return v.trim() == "1" || v.trim() == "true";
    }
    if let Ok(v) = std::env::var("RMPI_YIELD") {
        return v == "1";
    }
    // SAFETY: sysconf reads a system value and touches no memory of ours.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1);
    local_ranks as i64 > online
}

fn other(msg: impl Into<String>) -> Error {
    Error::new(ErrorClass::Other, msg)
}

/// MPI_Init: connect to the launcher, set up the transports, publish the runtime at thread
/// level `level`.
pub fn init(level: Level) -> Result<()> {
    if STATE
        .compare_exchange(NOT_STARTED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return err(
            ErrorClass::Other,
            "MPI_Init called more than once (MPI can be initialized once per process)",
        );
    }
    let progress_thread = match crate::async_progress::config(mca) {
        Ok(c) => c,
        Err(e) => {
            STATE.store(NOT_STARTED, Ordering::Release);
            return err(ErrorClass::Arg, e);
        }
    };
    // The progress thread takes turns on the runtime beside the application's threads.
    let level = if progress_thread.is_some() {
        Level::Multiple
    } else {
        level
    };
    LEVEL.store(level as u8, Ordering::Release);
    let biased = level == Level::Multiple && progress_thread.is_none() && try_bias();
    let serialized = level != Level::Funneled && !biased;
    match Runtime::start(progress_thread.is_some()) {
        Ok(rt) => {
            // SAFETY: no thread owns the slot yet (STATE moved from NOT_STARTED just now, once
            // per process), so nothing else accesses `rt`.
            unsafe { *SLOT.rt.get() = Some(rt) };
            MAIN.store(this_thread(), Ordering::Release);
            if biased {
                BIAS.store(BIASED, Ordering::Release);
            }
            if level == Level::Multiple && base_verbose() {
                BIAS_VERBOSE.store(true, Ordering::Relaxed);
                eprintln!(
                    "rmpi: pid {}: MPI_THREAD_MULTIPLE: {}",
                    std::process::id(),
                    if biased {
                        "the runtime is biased to the initialising thread until another \
                         thread calls MPI"
                    } else {
                        "not biased (async progress thread, or no membarrier(2))"
                    }
                );
            }
            SLOT.owner.store(this_thread(), Ordering::Release);
            // A spawned process joins its parents before MPI_Init returns.
            let r = crate::dpm::connect_parent();
            if serialized {
                // Release: the next thread to take the runtime sees it started.
                SLOT.owner.store(FREE, Ordering::Release);
            }
            if let (Ok(()), Some(cfg)) = (&r, progress_thread) {
                let doorbell = with(|rt| {
                    rt.pml.set_lazy_gets();
                    Ok(rt.pml.doorbell())
                })?;
                crate::async_progress::start(cfg, doorbell)
                    .map_err(|e| other(format!("cannot start the async progress thread: {e}")))?;
            }
            r
        }
        Err(e) => {
            STATE.store(NOT_STARTED, Ordering::Release);
            Err(e)
        }
    }
}

impl Runtime {
    /// `doorbells`: the job runs async progress threads, which peers wake by ringing.
    fn start(doorbells: bool) -> Result<Runtime> {
        let mut pmi = Pmi::from_env()?;
        let (rank, size) = pmi.as_ref().map_or((0, 1), |p| (p.rank, p.size));
        if !(0..size).contains(&rank) {
            return err(
                ErrorClass::Other,
                format!("PMI gave rank {rank} outside a job of size {size}"),
            );
        }
        let local = match pmi.as_mut() {
            Some(p) => local_ranks(p)?,
            None => vec![0],
        };
        let me_local = local
            .iter()
            .position(|&r| r == rank)
            .ok_or_else(|| other("this rank is missing from its node"))?;

        let yield_when_idle = yield_when_idle(local.len());
        crate::memhook::start(rank);
        // After memhook has patched the release functions: a thread running them while their
        // code is rewritten could crash.
        let watch = match pmi.as_ref() {
            Some(p) => Some(
                crate::launcher_watch::Watch::start(p.raw_fd(), rank)
                    .map_err(|e| other(format!("cannot watch the launcher connection: {e}")))?,
            ),
            None => None,
        };
        let verbose = base_verbose();
        let sel = btl_ib::BtlSelection::from_env().map_err(other)?;
        let params = btl_sm::Params::from_env(local.len()).map_err(|e| other(e.to_string()))?;
        let seg = match pmi.as_mut() {
            Some(p) if sel.sm => attach_segment(p, &local, me_local, &params)?,
            _ => None,
        };
        let sm = match seg {
            Some(seg) => {
                let transport =
                    btl_sm::SmTransport::new(seg, me_local).map_err(|e| other(e.to_string()))?;
                // Auto is CMA: measured with unmodified OSU 5.3, streaming through the channel
                // wins only while both ranks share a cache and loses 1.7-7x when they do not
                // (other chiplet or socket), which no rank can tell from here. CMA is the
                // peers' rate in every placement; a CMA failure falls back to streaming.
                let cma = match params.single_copy {
                    btl_sm::SingleCopy::Cma | btl_sm::SingleCopy::Auto => true,
                    btl_sm::SingleCopy::None => false,
                };
                // A descheduled sender would stall the receiver that asked it for help.
                let coop = params.coop_copy_min > 0 && !yield_when_idle;
                // Every peer gets the same limits unless btl_sm_eager_limit_far asks for a
                // line probe of each pair (btl/sm.rs).
                let n_sm = transport.n();
                let eager = crate::btl::sm::probe_eager_limits(
                    &transport,
                    &params,
                    yield_when_idle,
                    rank,
                    &local,
                    verbose,
                );
                // Page tables for the rings we send on, now instead of inside the first
                // ~130 iterations of the application's loop.
                transport.prefault_senders();
                let mut sm = SmBtl::new(transport, cma, coop);
                if doorbells {
                    sm.enable_doorbells();
                }
                sm.set_coalesce(params.coalesce && !doorbells);
                sm.set_eager_limits(
                    eager.unwrap_or_else(|| vec![params.eager_limits_for(None); n_sm]),
                );
                // MPI_Alloc_mem from a memfd the peers map: their reads of it are a memcpy.
                if params.xmem && cma {
                    if let Err(e) = crate::xmem::start(params.xmem_size) {
                        if verbose {
                            eprintln!(
                                "rmpi: rank {rank}: no shared memory source for MPI_Alloc_mem \
                                 ({e}); it uses malloc"
                            );
                        }
                    }
                    // With memhook's ptmalloc, large malloc'd blocks too.
                    if let Some((fd, base, len)) = memory_manager::shared_source() {
                        btl_sm::xmem::register_local(btl_sm::xmem::Range { fd, base, len });
                    }
                    sm.enable_xmem(verbose);
                }
                Some(sm)
            }
            None => None,
        };
        if let Some(p) = pmi.as_ref() {
            PMI_ABORT_FD.store(p.raw_fd(), Ordering::Relaxed);
        }
        // A transport that fails in progress ends the job through the launcher.
        crate::btl::set_fatal(abort_from_progress);
        let choice =
            crate::btl::select::choose(pmi.as_mut(), rank, size, &local, sel, sm, verbose)?;

        let processor_name = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "localhost".into());
        let mut pml = Pml::new(
            choice.btls,
            choice.endpoints,
            params.eager_limit,
            params.coop_copy_min,
            params.coop_window_min,
        );
        if verbose {
            eprintln!(
                "rmpi: rank {rank}: transports {} ({} local ranks, {params:?})",
                pml.btl_names().join(","),
                local.len()
            );
        }
        pml.set_verbose(verbose);
        Ok(Runtime {
            pmi,
            watch,
            pml,
            comms: comm::initial(rank, size),
            objs: crate::registry::Objects::new(local.clone()),
            yield_when_idle,
            processor_name,
            start: Instant::now(),
            bsend: Default::default(),
            idups: Default::default(),
            coll_cache: Default::default(),
            waiting_marked: false,
        })
    }

    /// The launcher connection (None for a singleton), for dynamic processes (`dpm`).
    pub(crate) fn pmi_mut(&mut self) -> Option<&mut Pmi> {
        self.pmi.as_mut()
    }

    pub fn wtime(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    #[inline]
    pub fn comm(&self, id: usize) -> Result<&Comm> {
        match self.comms.get(id) {
            Some(Some(c)) => Ok(c),
            _ => err(
                ErrorClass::Comm,
                "invalid communicator (freed, or not a communicator)",
            ),
        }
    }

    pub fn comm_mut(&mut self, id: usize) -> Result<&mut Comm> {
        match self.comms.get_mut(id) {
            Some(Some(c)) => Ok(c),
            _ => err(
                ErrorClass::Comm,
                "invalid communicator (freed, or not a communicator)",
            ),
        }
    }

    /// Under MULTIPLE: tell peers this rank waits in MPI while any of its threads does, so that
    /// a receiver may ask it to write half of a rendezvous (as `progress_until` does at the
    /// other levels). Called at each turn; the word lags the last wait's end by one turn at
    /// most, which costs a receiver nothing (it reads what no sender claims).
    pub(crate) fn sync_waiting(&mut self) {
        let want = blocked();
        if want != self.waiting_marked {
            self.waiting_marked = want;
            self.pml.set_waiting(want);
        }
    }

    /// One turn of the async progress thread: (whether anything moved, whether work is still
    /// in flight).
    pub(crate) fn async_turn(&mut self) -> (bool, bool) {
        self.sync_waiting();
        // No thread of ours waits (the thread does not poll while one does): our core computes.
        self.pml.set_delegating(!self.waiting_marked);
        let moved = self.pml.progress() > 0;
        self.pml.set_delegating(false);
        (moved, self.pml.in_flight())
    }

    /// Spin on progress until `done`; back off to yielding the CPU when idle.
    ///
    /// The spin has no `pause`: one progress turn already spaces the loads of the line a
    /// sender is about to write, and a pause on top only delays noticing it (measured: about
    /// 9 ns of a 70 ns one-way latency). Oversubscribed ranks yield at every idle turn.
    #[inline]
    pub fn progress_until(&mut self, mut done: impl FnMut(&mut Pml) -> bool) {
        if done(&mut self.pml) {
            return;
        }
        // Peers may ask a waiting rank to copy half of a rendezvous (pml/rndv.rs).
        self.pml.set_waiting(true);
        self.progress_spin(done);
        self.pml.set_waiting(false);
    }

    /// Under MULTIPLE, a wait's first stretch: progress turns inside the runtime until `ready`,
    /// as long as no other thread wants the runtime (then false, and the caller waits outside
    /// it, `poll_outside`). A single thread's short wait thus costs one taking of the runtime
    /// and none of the `Blocked` bookkeeping (Irecv/Send/Wait ping-pong 0.227 against
    /// FUNNELED's 0.208 us before). Not beside the async progress thread, which needs `BLOCKED`
    /// to know when to sleep.
    fn spin_until(&mut self, mut ready: impl FnMut(&mut Runtime) -> bool) -> bool {
        if crate::async_progress::on() {
            return false;
        }
        // Peers may ask a waiting rank to copy half of a rendezvous, as in `progress_until`.
        self.pml.set_waiting(true);
        let mut idle = 0u32;
        let done = loop {
            if leave_runtime(self.yield_when_idle, idle) {
                break false;
            }
            if self.pml.progress() > 0 {
                idle = 0;
            } else {
                idle += 1;
            }
            // Every turn, as `poll_outside`: some conditions move without a progress report
            // (a flag a peer stores in shared memory).
            if ready(self) {
                break true;
            }
        };
        self.pml.set_waiting(self.waiting_marked);
        done
    }

    #[inline]
    fn progress_spin(&mut self, mut done: impl FnMut(&mut Pml) -> bool) {
        let mut idle = 0u32;
        while !done(&mut self.pml) {
            if self.pml.progress() > 0 {
                idle = 0;
                continue;
            }
            idle = idle.saturating_add(1);
            if idle_yield(idle, self.yield_when_idle) {
                std::thread::yield_now();
            }
        }
    }

    /// Run a blocking collective's schedule `s` (from `coll::cache` or just built) to the
    /// end under the communicator's next collective tag; its error class, 0 if none. No
    /// request: the schedule is advanced here and by nothing else, so it can be kept.
    pub fn run_cached(&mut self, s: &mut crate::coll::Schedule) -> i32 {
        self.start_cached(s);
        self.progress_until(|p| s.advance(p));
        s.error
    }

    /// `run_cached` in steps, for waits outside the runtime (MULTIPLE): arm `s` under the
    /// next collective tag ...
    pub fn start_cached(&mut self, s: &mut crate::coll::Schedule) {
        s.rearm();
        s.set_tag(crate::coll::next_tag(
            &mut self.pml,
            s.seq_key(),
            crate::coll::Space::Blocking,
        ));
    }

    /// ... then advance it as far as it goes now; true once it is over (its error in
    /// `s.error`).
    pub fn advance_cached(&mut self, s: &mut crate::coll::Schedule) -> bool {
        s.advance(&mut self.pml)
    }

    pub fn wait(&mut self, req: ReqId) -> Result<Status> {
        if let Some(st) = self.pml.take_if_complete(req) {
            return Ok(st);
        }
        if !self.pml.is_valid(req) {
            return err(ErrorClass::Request, "invalid request");
        }
        self.progress_until(|p| p.is_complete(req));
        Ok(self.pml.take(req).expect("completed request exists"))
    }

    /// Finish a started operation: a status, or a request to wait on later.
    pub fn finish(&mut self, s: Started) -> Result<Status> {
        match s {
            Started::Done(st) => Ok(st),
            Started::Pending(req) => self.wait(req),
        }
    }

    pub(crate) fn check_tag(tag: i32, recv: bool) -> Result<()> {
        if (0..=TAG_UB).contains(&tag) || (recv && tag == crate::pml::ANY_TAG) {
            Ok(())
        } else {
            err(
                ErrorClass::Tag,
                format!(
                    "tag {tag} is invalid (valid: 0..={TAG_UB}{})",
                    if recv { " or MPI_ANY_TAG" } else { "" }
                ),
            )
        }
    }

    /// Start a send of `len` bytes to communicator rank `dest`; `None` for MPI_PROC_NULL.
    ///
    /// # Safety
    /// `buf` must hold `len` readable bytes that stay unmodified until the send completes.
    #[inline]
    pub unsafe fn start_send(
        &mut self,
        comm: usize,
        buf: *const u8,
        len: usize,
        dest: i32,
        tag: i32,
    ) -> Result<Started> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.start_send_msg(comm, Msg::bytes(buf, len), dest, tag) }
    }

    /// Start a send of message `m` (contiguous or through a datatype) to communicator rank `dest`.
    ///
    /// # Safety
    /// Every byte `m` maps to must stay readable and unmodified until the send completes.
    #[inline]
    pub unsafe fn start_send_msg(
        &mut self,
        comm: usize,
        m: Msg,
        dest: i32,
        tag: i32,
    ) -> Result<Started> {
        Self::check_tag(tag, false)?;
        // The communicator is checked even for MPI_PROC_NULL: a bad handle is an error.
        let c = self.comm(comm)?;
        if dest == PROC_NULL {
            return Ok(Started::Done(Status::default()));
        }
        let (world, ctx, me) = (c.world_of(dest)?, c.ctx, c.rank);
        // SAFETY: forwarded from this function's contract.
        Ok(unsafe { self.pml.isend_msg(m, world, ctx, me, tag) })
    }

    /// The checks `start_send_msg` makes before sending anything, for calls that must refuse a
    /// bad send before they start their receive (MPI_Isendrecv).
    pub(crate) fn check_send(&self, comm: usize, dest: i32, tag: i32) -> Result<()> {
        Self::check_tag(tag, false)?;
        let c = self.comm(comm)?;
        if dest != PROC_NULL {
            c.world_of(dest)?;
        }
        Ok(())
    }

    /// MPI_Send's fast path: `len` contiguous bytes to communicator rank `dest`, handed to the
    /// transport at once (unless not `blocking`: MPI_Isend's may be held to go with the next
    /// ones, `Btl::try_send_batched`). False (nothing done) whenever anything is unusual: the
    /// general path then sends, or reports the error.
    ///
    /// # Safety
    /// `buf` holds `len` readable bytes (or `len` is 0).
    #[inline(always)]
    pub unsafe fn send_now(
        &mut self,
        comm: usize,
        buf: *const u8,
        len: usize,
        dest: i32,
        tag: i32,
        blocking: bool,
    ) -> bool {
        let Some(Some(c)) = self.comms.get(comm) else {
            return false;
        };
        // A negative dest (MPI_PROC_NULL, or wrong) is out of range as usize.
        let Some(&world) = c.peers().get(dest as usize) else {
            return false;
        };
        // TAG_UB is i32::MAX: every non-negative tag is valid.
        // SAFETY: forwarded from this function's contract.
        tag >= 0
            && unsafe {
                self.pml
                    .send_now(buf, len, world as usize, c.ctx, c.rank, tag, !blocking)
            }
    }

    /// MPI_Recv's fast path: wait for a message of up to `cap` bytes from communicator rank
    /// `src` (or ANY_SOURCE) without a request. None (nothing consumed) whenever anything is
    /// unusual: the general path then receives, or reports the error.
    ///
    /// # Safety
    /// `buf` has `cap` writable bytes that nothing else touches during the call.
    #[inline]
    pub unsafe fn recv_now(
        &mut self,
        comm: usize,
        buf: *mut u8,
        cap: usize,
        src: i32,
        tag: i32,
    ) -> Option<Status> {
        // SAFETY: forwarded from this function's contract; we wait below until it is over.
        if !unsafe { self.recv_direct_begin(comm, buf, cap, src, tag) } {
            return None;
        }
        self.progress_until(|p| !p.recv_direct_waiting());
        self.pml.recv_direct_end()
    }

    /// The direct receive `recv_now` and `recv_now_yielding` wait for, begun if the arguments
    /// are usual and nothing is posted or unmatched (false: the general path receives).
    ///
    /// # Safety
    /// As `recv_now`, until the receive is over or given up.
    #[inline(always)]
    unsafe fn recv_direct_begin(
        &mut self,
        comm: usize,
        buf: *mut u8,
        cap: usize,
        src: i32,
        tag: i32,
    ) -> bool {
        let Some(Some(c)) = self.comms.get(comm) else {
            return false;
        };
        if (tag < 0 && tag != crate::pml::ANY_TAG)
            || (src != crate::pml::ANY_SOURCE && c.peers().get(src as usize).is_none())
        {
            return false;
        }
        // SAFETY: forwarded from this function's contract.
        unsafe { self.pml.recv_direct_begin(buf, cap, c.ctx, src, tag) }
    }

    /// `recv_now` under MULTIPLE: it waits inside the runtime only while no other thread waits
    /// for it; when one does (or after 2000 idle turns) before anything matched, it gives up,
    /// nothing consumed (None), and the general path waits outside the runtime instead.
    ///
    /// # Safety
    /// As `recv_now`.
    #[inline]
    pub unsafe fn recv_now_yielding(
        &mut self,
        comm: usize,
        buf: *mut u8,
        cap: usize,
        src: i32,
        tag: i32,
    ) -> Option<Status> {
        // SAFETY: forwarded from this function's contract; we wait below until it is over, or
        // give it up before anything was written.
        if !unsafe { self.recv_direct_begin(comm, buf, cap, src, tag) } {
            return None;
        }
        if !self.pml.recv_direct_waiting() {
            return self.pml.recv_direct_end();
        }
        // As `progress_until`; the word goes back to what the other threads' waits say.
        self.pml.set_waiting(true);
        let mut idle = 0u32;
        while self.pml.recv_direct_waiting() {
            if leave_runtime(self.yield_when_idle, idle) && self.pml.recv_direct_abandon() {
                break;
            }
            if self.pml.progress() > 0 {
                idle = 0;
                continue;
            }
            idle = idle.saturating_add(1);
            if idle_yield(idle, self.yield_when_idle) {
                // Being streamed into (it cannot be given up): let the sender run.
                std::thread::yield_now();
            }
        }
        self.pml.set_waiting(self.waiting_marked);
        self.pml.recv_direct_end()
    }

    /// Start a receive of up to `cap` bytes from communicator rank `src` (or ANY_SOURCE).
    ///
    /// # Safety
    /// `buf` must hold `cap` writable bytes that nothing else touches until the receive completes.
    #[inline]
    pub unsafe fn start_recv(
        &mut self,
        comm: usize,
        buf: *mut u8,
        cap: usize,
        src: i32,
        tag: i32,
    ) -> Result<Started> {
        Ok(match self.recv_ctx(comm, src, tag)? {
            None => Started::Done(Self::proc_null_status()),
            // SAFETY: forwarded from this function's contract.
            Some(ctx) => match unsafe { self.pml.post_recv(buf, cap, ctx, src, tag) } {
                Some(req) => Started::Pending(req),
                // SAFETY: as above.
                None => unsafe { self.pml.irecv_msg(Msg::bytes(buf, cap), ctx, src, tag) },
            },
        })
    }

    /// `start_recv` when it can post at once (no error, not MPI_PROC_NULL, no message waiting
    /// unexpected): the new request's id, else None. MPI_Irecv's fast path: an id comes back
    /// in a register, where a `Result<Started>` went through memory and stalled on store
    /// forwarding.
    ///
    /// # Safety
    /// As `start_recv`.
    #[inline]
    pub unsafe fn post_recv(
        &mut self,
        comm: usize,
        buf: *mut u8,
        cap: usize,
        src: i32,
        tag: i32,
    ) -> Option<ReqId> {
        let ctx = self.recv_ctx(comm, src, tag).ok()??;
        // SAFETY: forwarded from this function's contract.
        unsafe { self.pml.post_recv(buf, cap, ctx, src, tag) }
    }

    /// The context a receive from `src` on `comm` matches in, after checking the tag and the
    /// rank; None for MPI_PROC_NULL.
    #[inline]
    fn recv_ctx(&self, comm: usize, src: i32, tag: i32) -> Result<Option<u32>> {
        Self::check_tag(tag, true)?;
        let c = self.comm(comm)?;
        if src == PROC_NULL {
            return Ok(None);
        }
        if src != crate::pml::ANY_SOURCE {
            c.world_of(src)?;
        }
        Ok(Some(c.ctx))
    }

    /// What a receive from MPI_PROC_NULL completes with.
    fn proc_null_status() -> Status {
        Status {
            source: PROC_NULL,
            tag: crate::pml::ANY_TAG,
            ..Status::default()
        }
    }

    /// Start a receive into message `m` from communicator rank `src` (or ANY_SOURCE).
    ///
    /// # Safety
    /// Every byte `m` maps to must stay writable, and untouched by anything else, until the
    /// receive completes.
    #[inline]
    pub unsafe fn start_recv_msg(
        &mut self,
        comm: usize,
        m: Msg,
        src: i32,
        tag: i32,
    ) -> Result<Started> {
        Ok(match self.recv_ctx(comm, src, tag)? {
            None => Started::Done(Self::proc_null_status()),
            // SAFETY: forwarded from this function's contract.
            Some(ctx) => unsafe { self.pml.irecv_msg(m, ctx, src, tag) },
        })
    }

    /// Dissemination barrier over the communicator's collective context: ceil(log2 n) rounds.
    pub fn barrier(&mut self, comm: usize) -> Result<()> {
        let c = self.comm(comm)?;
        if c.is_inter() {
            return self.inter_barrier(comm);
        }
        if crate::coll::algos::barrier_needs_schedule(c) {
            // The same schedule as MPI_Ibarrier: a forced algorithm or the L3 domains apply.
            let s = {
                let mut b = crate::coll::Builder::new(c, None);
                crate::coll::algos::barrier(&mut b);
                b.finish()
            };
            let id = crate::coll::start_blocking(&mut self.pml, s);
            let st = self.wait(id)?;
            return match ErrorClass::from_code(st.error) {
                Some(e) if st.error != 0 => Err(Error::new(e, e.description())),
                _ => Ok(()),
            };
        }
        let (n, me, ctx) = (c.size(), c.rank, c.coll_ctx());
        let mut dist = 1;
        let mut round = 0;
        while dist < n {
            let to = self.comm(comm)?.world_of((me + dist) % n)?;
            let from = (me - dist).rem_euclid(n);
            // SAFETY: zero-byte messages never touch their buffers.
            let s = unsafe { self.pml.isend(std::ptr::null(), 0, to, ctx, me, round) };
            // SAFETY: as above.
            let r = unsafe { self.pml.irecv(std::ptr::null_mut(), 0, ctx, from, round) };
            self.finish(r)?;
            self.finish(s)?;
            dist *= 2;
            round += 1;
        }
        Ok(())
    }

    /// Flush what is queued and tell the launcher this rank is done.
    fn shutdown(&mut self) -> Result<()> {
        self.bsend_flush();
        // A barrier that progresses, as MPICH's and Open MPI's finalize have: a request the
        // user freed while active may be one a peer still waits on outside MPI_Finalize (a freed
        // receive whose rendezvous the sender waits to finish, MPICH's pt2pt/rqfree), and it is
        // served here. The launcher's barrier below then blocks with no rank progressing, so no
        // rank sees a peer's connection close as it exits.
        if self.comms[crate::comm::WORLD].is_some() {
            self.barrier(crate::comm::WORLD)?;
        }
        // After the barrier: its own last sends may still wait in a transport (a tcp
        // connection still opening), and a peer waits for them in its barrier.
        self.progress_until(|p| p.queued() == 0 && p.btls_flushed());
        if base_verbose() {
            let s = self.pml.rndv_stats();
            eprintln!(
                "rmpi: rank {}: rendezvous receives: {} read by single copy, {} split with the sender ({} of them left whole to it, {} read whole after all: the sender was late), {} streamed; {} single-copy reads by memcpy from the peer's shared source",
                self.comms[crate::comm::WORLD].as_ref().map_or(-1, |c| c.rank),
                s.gets,
                s.coop,
                s.delegated,
                s.coop_back,
                s.streamed,
                self.pml.shared_reads()
            );
        }
        // From here the launcher may close our connection while we run on.
        drop(self.watch.take());
        if let Some(p) = self.pmi.as_mut() {
            p.barrier()?;
            p.finalize()?;
        }
        Ok(())
    }

    pub fn abort(&mut self, code: i32, message: &str) -> ! {
        abort_process(self.pmi.as_mut(), code, message)
    }
}

fn abort_process(pmi: Option<&mut Pmi>, code: i32, message: &str) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    match pmi {
        Some(p) => p.abort(code, message),
        None => eprintln!("rmpi: {message}"),
    }
    // Exit with the code at once; the launcher kills the other ranks.
    std::process::exit(if code == 0 { 1 } else { code })
}

/// The launcher connection's descriptor, for aborts from inside the progress loop (where the
/// runtime, and its `Pmi`, are borrowed); -1 without a launcher.
static PMI_ABORT_FD: AtomicI32 = AtomicI32::new(-1);

/// A transport failed in a way that leaves a pair unusable: say so and end the job with
/// `code` (an MPI error class), through the launcher like MPI_Abort.
#[cold]
pub fn abort_from_progress(code: i32, message: &str) -> ! {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("rmpi: {message} (aborting the job)\n").as_bytes());
    let _ = std::io::stdout().flush();
    let fd = PMI_ABORT_FD.load(Ordering::Relaxed);
    if fd >= 0 {
        let msg: String = message
            .chars()
            .map(|c| if c.is_ascii_whitespace() { '_' } else { c })
            .collect();
        let line = format!("cmd=abort exitcode={code} message={msg}\n");
        // SAFETY: `fd` is the launcher socket the runtime owns for the life of the process
        // (it is never closed before exit); no PMI request is in flight while progress runs,
        // so this line cannot interleave with another.
        unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) };
    }
    std::process::exit(if code == 0 { 1 } else { code })
}

/// A fatal error in MPI_Init: said once, here (a launcher told of an abort does not print its
/// message), then the job ends as for MPI_Abort.
pub fn fail_init(code: i32, message: &str) -> ! {
    use std::io::Write;
    eprintln!("rmpi: {message}");
    if let Ok(Some(mut p)) = Pmi::from_env() {
        abort_process(Some(&mut p), code, message)
    }
    let _ = std::io::stdout().flush();
    std::process::exit(if code == 0 { 1 } else { code })
}

/// MPI_Abort before or without a runtime.
pub fn abort_without_runtime(code: i32, message: &str) -> ! {
    let mut pmi = Pmi::from_env().ok().flatten();
    abort_process(pmi.as_mut(), code, message)
}

/// MPI_Finalize.
pub fn finalize() -> Result<()> {
    // Before the runtime goes: a turn it is taking ends first.
    crate::async_progress::stop();
    let mut taken = if SLOT.owner.load(Ordering::Acquire) != this_thread() {
        Some(take()?)
    } else {
        None
    };
    if SLOT.busy.load(Ordering::Relaxed) == this_thread() {
        return err(
            ErrorClass::Other,
            "MPI_Finalize called from inside an MPI callback",
        );
    }
    // Marked inside while the runtime is taken out, so that a thread revoking the bias waits.
    if !enter(this_thread()) {
        taken = Some(take()?);
        if !enter(this_thread()) {
            return err(ErrorClass::Other, not_running_reason());
        }
    }
    let busy = Busy;
    // The runtime goes away: `owner` becomes 0 below, not FREE, so no thread can take it after.
    std::mem::forget(taken);
    // SAFETY: owner thread, no borrow live (`busy` was clear and is ours now).
    let Some(mut rt) = (unsafe { &mut *SLOT.rt.get() }).take() else {
        return err(ErrorClass::Other, not_running_reason());
    };
    SLOT.owner.store(0, Ordering::Release);
    drop(busy);
    let r = rt.shutdown();
    crate::memhook::finish();
    STATE.store(FINALIZED, Ordering::Release);
    drop(rt);
    r
}

/// World ranks on this node, from the launcher's process mapping or by comparing host names.
fn local_ranks(p: &mut Pmi) -> Result<Vec<i32>> {
    if let Some(m) = p.get("PMI_process_mapping")? {
        if let Some(v) = pmi::local_ranks_from_mapping(&m, p.rank, p.size) {
            return Ok(v);
        }
    }
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default();
    p.put(&format!("rmpi-host-{}", p.rank), &host)?;
    p.barrier()?;
    let mut v = Vec::new();
    for r in 0..p.size {
        if p.get(&format!("rmpi-host-{r}"))?.as_deref() == Some(host.as_str()) {
            v.push(r);
        }
    }
    Ok(v)
}

/// The node segment: inherited from our mpirun, or created by local rank 0 under another launcher.
/// None when this rank is alone on its node.
fn attach_segment(
    p: &mut Pmi,
    local: &[i32],
    me_local: usize,
    params: &btl_sm::Params,
) -> Result<Option<btl_sm::Segment>> {
    let alone = local.len() < 2;
    if let Ok(fd) = std::env::var("RMPI_SM_FD") {
        if alone {
            return Ok(None);
        }
        let fd = fd
            .trim()
            .parse()
            .map_err(|_| other(format!("RMPI_SM_FD={fd} is not a file descriptor")))?;
        if let Ok(size) = std::env::var("RMPI_SM_SIZE") {
            let expected = btl_sm::segment_size(params);
            if size.trim().parse::<usize>().ok() != Some(expected) {
                return err(
                    ErrorClass::Other,
                    format!("the launcher sized the shared segment {size} bytes but this rank computes {expected}: mpirun and libmpi disagree on btl_sm parameters"),
                );
            }
        }
        return btl_sm::Segment::attach_fd(fd, params)
            .map(Some)
            .map_err(|e| other(e.to_string()));
    }
    // A foreign launcher: a named segment, unlinked as soon as every local rank has mapped it.
    // PMI barriers are job-wide, so every rank enters both, alone on its node or not.
    if alone {
        p.barrier()?;
        p.barrier()?;
        return Ok(None);
    }
    let key = format!("rmpi-sm-{}", local[0]);
    let seg = if me_local == 0 {
        let name = format!("/rmpi-{}-{}-{}", p.kvsname, std::process::id(), local[0]);
        let seg = btl_sm::Segment::create_named(&name, params).map_err(|e| other(e.to_string()))?;
        p.put(&key, &name)?;
        p.barrier()?;
        p.barrier()?;
        btl_sm::Segment::unlink_named(&name)
            .map_err(|e| other(format!("shm_unlink {name}: {e}")))?;
        seg
    } else {
        p.barrier()?;
        let name = p
            .get(&key)?
            .ok_or_else(|| other(format!("local rank 0 did not publish {key}")))?;
        let seg = btl_sm::Segment::open_named(&name, params);
        // The second barrier is entered even on failure so local rank 0 still unlinks.
        p.barrier()?;
        seg.map_err(|e| other(e.to_string()))?
    };
    Ok(Some(seg))
}
