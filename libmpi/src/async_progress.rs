//! The asynchronous progress thread (`--mca mpi_async_progress 1`): non-blocking operations
//! (rendezvous copies, collective schedules, one-sided targets) advance while the application
//! computes, instead of only inside its MPI calls. As MPICH's `MPIR_CVAR_ASYNC_PROGRESS`, it
//! runs the runtime under MPI_THREAD_MULTIPLE's lock, whatever level the application asked for.
//!
//! The thread never queues for the runtime: it takes a turn only when no call holds it, and
//! sleeps while an application thread waits in MPI (that thread makes progress itself). Else
//! it sleeps on a doorbell word that every peer rings after sending to this rank (btl-sm's
//! slot line; `btl_sm::doorbell`), so it wakes when there is something to do rather than on a
//! timer: a timer wake-up costs its core about 20 µs on a VM, and ranks share their cores with
//! it (one rank per core is the common placement). Work that moves without a message (sends
//! queued behind a full ring) and transports that ring nothing (tcp, ib) fall back to polling
//! every `mpi_async_progress_interval` µs; `0` spins (yielding), for nodes with spare cores.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

use btl_sm::doorbell::{self, AWAKE, QUIET, RING_ME};

/// The word's third value (beside btl-sm's AWAKE, RING_ME and QUIET): asleep and not to be
/// rung at all while an application thread is inside MPI (it progresses). The end of the last
/// call makes it `RING_ME` when something is in flight (or, where peers do not ring, wakes the
/// thread), else `QUIET` (arrivals wait for the next call; a sender stopped by a full ring
/// still wakes the thread to drain it).
const BEHIND_WAIT: u32 = 2;

/// Set `b` to `to` if it holds `RING_ME` or `QUIET` (a sleeping thread that peers may wake).
fn hush(b: &AtomicU32, to: u32) {
    let _ = b.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |v| {
        (v == RING_ME || v == QUIET).then_some(to)
    });
}

/// The word the thread sleeps on: the rank's doorbell in btl-sm's segment when every peer
/// rings it (`PEERS_RING`), else `LOCAL_BELL`, which only this process rings.
static BELL: AtomicPtr<AtomicU32> = AtomicPtr::new(std::ptr::null_mut());
static LOCAL_BELL: AtomicU32 = AtomicU32::new(AWAKE);
static PEERS_RING: AtomicBool = AtomicBool::new(false);
/// Whether the thread runs: the call and wait marks are one load when not.
static ON: AtomicBool = AtomicBool::new(false);
static STOP: AtomicBool = AtomicBool::new(false);
static THREAD: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

/// The longest sleep: a safety net, as every event that matters rings the word.
const PARK: Duration = Duration::from_millis(10);

/// What the thread was asked for: None when off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Between polls where nothing rings; zero spins (yielding the CPU).
    pub interval: Duration,
}

/// `mpi_async_progress` and `mpi_async_progress_interval` (µs, default 100), as `get` reads
/// them; None when off.
pub fn config(get: impl Fn(&str) -> Option<String>) -> Result<Option<Config>, String> {
    let on = match get("mpi_async_progress").as_deref().map(str::trim) {
        None | Some("0") | Some("false") => false,
        Some("1") | Some("true") => true,
        Some(v) => {
            return Err(format!(
                "invalid value {v:?} for MCA parameter mpi_async_progress: expected 0 or 1"
            ))
        }
    };
    let us = match get("mpi_async_progress_interval") {
        None => 100,
        Some(v) => v.trim().parse::<u64>().map_err(|_| {
            format!(
                "invalid value {v:?} for MCA parameter mpi_async_progress_interval: expected \
                 microseconds (0: spin)"
            )
        })?,
    };
    Ok(on.then_some(Config {
        interval: Duration::from_micros(us),
    }))
}

/// The word in use. Only once `start` has run (callers check `on()`, or are the thread).
fn bell() -> &'static AtomicU32 {
    // SAFETY: once set, BELL points to LOCAL_BELL (static) or to the doorbell in btl-sm's
    // mapping, which the runtime keeps until MPI_Finalize; Finalize stops the thread, clears
    // ON (so later calls do not come here) and points BELL back to LOCAL_BELL before it
    // unmaps.
    unsafe { &*BELL.load(Ordering::Acquire) }
}

/// Start the thread; the runtime must be running under MULTIPLE. `doorbell`: the word peers
/// ring (`Pml::doorbell`), valid until `stop`.
pub fn start(cfg: Config, doorbell: Option<*const AtomicU32>) -> std::io::Result<()> {
    STOP.store(false, Ordering::Relaxed);
    PEERS_RING.store(doorbell.is_some(), Ordering::Relaxed);
    let word = doorbell.unwrap_or(&LOCAL_BELL as *const AtomicU32);
    BELL.store(word.cast_mut(), Ordering::Release);
    let h = std::thread::Builder::new()
        .name("rmpi-progress".into())
        .spawn(move || run(cfg))?;
    *THREAD.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
    ON.store(true, Ordering::Release);
    Ok(())
}

/// Stop the thread and wait for it (MPI_Finalize, before it takes the runtime away). A turn
/// in progress ends first.
pub fn stop() {
    let mut slot = THREAD.lock().unwrap_or_else(|e| e.into_inner());
    // MPI_Finalize from a callback the thread runs (a user op) is refused later, not joined.
    if slot
        .as_ref()
        .is_none_or(|h| h.thread().id() == std::thread::current().id())
    {
        return;
    }
    let Some(h) = slot.take() else { return };
    drop(slot);
    ON.store(false, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
    bell().store(AWAKE, Ordering::SeqCst);
    doorbell::wake(bell());
    if h.join().is_err() {
        eprintln!("rmpi: the async progress thread panicked (its message is above)");
    }
    // Never null once set: a call of another thread that raced Finalize (an erroneous program)
    // then touches a word of ours, not the segment about to be unmapped.
    BELL.store(
        (&LOCAL_BELL as *const AtomicU32).cast_mut(),
        Ordering::Release,
    );
}

/// Whether the thread runs.
#[inline(always)]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Application calls running now (each `with` of a thread; the turns of a waiting thread
/// count one by one, its wait as a whole counts in `runtime::blocked`).
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// Whether an application thread is inside MPI: it makes progress itself, or is about to.
fn app_inside() -> bool {
    ACTIVE.load(Ordering::SeqCst) > 0 || crate::runtime::blocked()
}

/// An application call starts: peers need not ring the thread while it runs. (Arrivals during
/// a call come at a high rate, as ranks call MPI in step; each ring would preempt the caller
/// on its own core for nothing.)
#[inline]
pub fn call_started() {
    ACTIVE.fetch_add(1, Ordering::SeqCst);
    hush(bell(), BEHIND_WAIT);
}

/// An application call ends, under the runtime. When it was the last one inside MPI and this
/// rank has something in flight (`Pml::in_flight`), the thread takes over: where peers ring,
/// it sleeps until they do, and one progress turn here takes what came unrung during the call;
/// work that moves without a message, or a transport that rings nothing, wakes it to poll.
/// With nothing in flight it sleeps on unrung (arrivals then wait for the next call).
#[inline]
pub fn call_over(rt: &mut crate::runtime::Runtime) {
    if ACTIVE.fetch_sub(1, Ordering::SeqCst) != 1 || crate::runtime::blocked() {
        return;
    }
    let b = bell();
    if !rt.pml.in_flight() {
        let _ = b.compare_exchange(BEHIND_WAIT, QUIET, Ordering::SeqCst, Ordering::Relaxed);
        return;
    }
    if PEERS_RING.load(Ordering::Relaxed) {
        let _ = b.compare_exchange(BEHIND_WAIT, RING_ME, Ordering::SeqCst, Ordering::Relaxed);
        // The application leaves MPI to compute: this turn matches what came, and leaves
        // the copies to the thread (which may leave them to a waiting sender whole).
        rt.pml.set_defer_gets(true);
        rt.pml.progress();
        rt.pml.set_defer_gets(false);
        if rt.pml.needs_polling() {
            wake_from(b);
        }
    } else {
        wake_from(b);
    }
}

/// An application thread starts waiting in MPI (`runtime::Blocked`).
#[inline]
pub fn wait_started() {
    if on() {
        hush(bell(), BEHIND_WAIT);
    }
}

/// The last application thread waiting in MPI has stopped: where peers ring, the sleeping
/// thread is theirs to wake again; elsewhere it polls again (it cannot know whether work is
/// left).
#[inline]
pub fn wait_over() {
    if !on() || ACTIVE.load(Ordering::SeqCst) > 0 {
        return;
    }
    let b = bell();
    if PEERS_RING.load(Ordering::Relaxed) {
        let _ = b.compare_exchange(BEHIND_WAIT, RING_ME, Ordering::SeqCst, Ordering::Relaxed);
    } else {
        wake_from(b);
    }
}

/// Wake the thread from either sleep.
#[cold]
fn wake_from(b: &AtomicU32) {
    if b.swap(AWAKE, Ordering::SeqCst) != AWAKE {
        doorbell::wake(b);
    }
}

/// `struct sched_attr` of sched_setattr(2).
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

/// Ask the scheduler for short slices (EEVDF, Linux 6.12+: `sched_runtime` of a normal
/// thread): a woken thread with a short slice has an early deadline and preempts the
/// computation on its core at once, where with the default slice it would wait up to a few ms
/// (the length of the computations it should overlap). Best effort: older kernels refuse it.
fn ask_short_slices() {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice: 0,
        priority: 0,
        runtime: 100_000,
        deadline: 0,
        period: 0,
        util_min: 0,
        util_max: 0,
    };
    // SAFETY: sched_setattr reads `attr.size` bytes of the struct on our stack; pid 0 is the
    // calling thread.
    unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
}

fn run(cfg: Config) {
    // Timers of a few µs where it polls: the default slack (50 µs) would stretch every poll.
    // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    ask_short_slices();
    let peers_ring = PEERS_RING.load(Ordering::Relaxed);
    let b = bell();
    while !STOP.load(Ordering::Acquire) {
        if app_inside() {
            // A thread inside MPI makes progress: taking turns beside it would only slow it
            // (and, on a shared core, take its CPU).
            sleep_as(b, BEHIND_WAIT, PARK, app_inside);
            continue;
        }
        // (moved, must poll on a timer, something in flight); None while a call holds the
        // runtime.
        let turn = crate::runtime::try_turn(|rt| {
            let (moved, in_flight) = rt.async_turn();
            let poll = in_flight && (!peers_ring || rt.pml.needs_polling());
            (moved, poll, in_flight)
        });
        let (timeout, ring_me) = match turn {
            Some((true, ..)) => continue,
            Some((false, poll, in_flight)) => {
                if in_flight && cfg.interval.is_zero() {
                    std::thread::yield_now();
                    continue;
                }
                (if poll { cfg.interval } else { PARK }, in_flight)
            }
            None => (cfg.interval, true),
        };
        if ring_me {
            // Asleep until rung, unless a fragment written before a peer could see RING_ME
            // (not rung for) is there.
            sleep_as(b, RING_ME, timeout, || {
                crate::runtime::try_turn(|rt| rt.async_turn().0) != Some(true) && !app_inside()
            });
        } else {
            // Nothing in flight: arrivals can wait for the application's next call, which
            // makes this `RING_ME` again if it leaves something (`call_over`); unless a call
            // that ended before the store left something.
            sleep_as(b, QUIET, PARK, || {
                crate::runtime::try_turn(|rt| rt.pml.in_flight()) != Some(true)
            });
        }
    }
}

/// Sleep on `b` as `state` for at most `timeout` (zero: yield once): store it first, so that
/// wakers see it, then ask `still` whether to sleep after all (what happened before the store
/// woke nobody), and be AWAKE again after.
fn sleep_as(b: &AtomicU32, state: u32, timeout: Duration, still: impl FnOnce() -> bool) {
    b.store(state, Ordering::SeqCst);
    if still() && !STOP.load(Ordering::SeqCst) {
        if timeout.is_zero() {
            std::thread::yield_now();
        } else {
            doorbell::wait(b, state, timeout);
        }
    }
    b.store(AWAKE, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Option<Config>, String> {
        config(|k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn parameters() {
        assert_eq!(cfg(&[]), Ok(None));
        assert_eq!(cfg(&[("mpi_async_progress", "0")]), Ok(None));
        assert_eq!(
            cfg(&[("mpi_async_progress", "1")]),
            Ok(Some(Config {
                interval: Duration::from_micros(100)
            }))
        );
        assert_eq!(
            cfg(&[
                ("mpi_async_progress", "true"),
                ("mpi_async_progress_interval", "0")
            ]),
            Ok(Some(Config {
                interval: Duration::ZERO
            }))
        );
        assert!(cfg(&[("mpi_async_progress", "yes")]).is_err());
        assert!(cfg(&[
            ("mpi_async_progress", "1"),
            ("mpi_async_progress_interval", "-5")
        ])
        .is_err());
    }
}
