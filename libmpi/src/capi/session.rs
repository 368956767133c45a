//! MPI Sessions in the C ABI, and who holds the runtime up. The runtime starts at the first of
//! MPI_Init / MPI_Session_init and goes down when the last of MPI_Finalize /
//! MPI_Session_finalize ends; MPI_Initialized and MPI_Finalized say what the world model
//! did. A runtime, once down, cannot start again (PMI has said goodbye to the launcher), and
//! the standard lets a process start sessions again after finalizing all of them: so when the
//! last holder is a session, the teardown waits for the process's exit (an atexit handler) or
//! for the next MPI_Init + MPI_Finalize, and a new session in between finds it up. MPI_Finalize
//! with no session left tears down at once, as before. Process sets: `mpi://WORLD` and
//! `mpi://SELF`.

use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

use super::p2p_modes::{hand_back, BUFFER_AUTOMATIC};
use super::*;
use crate::errhandler::ErrFn;
use crate::group::Group;

const SESSION_NULL: usize = 0x120;
/// Session handles: `SESSION_BASE + slot`.
const SESSION_BASE: usize = 0x6800_0000;
const KIND_SPAN: usize = 0x0800_0000;
const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

/// The world model: 0 not started, 1 between MPI_Init and MPI_Finalize, 2 finalized.
static WORLD: AtomicU8 = AtomicU8::new(0);

struct Session {
    errhandler: ErrHandler,
    info: crate::info::Info,
}

/// Live sessions by slot (process-wide: a session may outlive the world model).
static SESSIONS: Mutex<Vec<Option<Session>>> = Mutex::new(Vec::new());

fn sessions() -> std::sync::MutexGuard<'static, Vec<Option<Session>>> {
    SESSIONS.lock().unwrap_or_else(|p| p.into_inner())
}

fn live_sessions() -> usize {
    sessions().iter().flatten().count()
}

pub(super) fn world_initialized() -> bool {
    WORLD.load(Ordering::Acquire) != 0
}

pub(super) fn world_finalized() -> bool {
    WORLD.load(Ordering::Acquire) == 2
}

/// Start the runtime unless a session already holds it up; `level` is the thread level asked
/// for (the first start fixes the runtime's: SERIALIZED or MULTIPLE when asked for, else
/// FUNNELED).
fn runtime_up(level: c_int) -> Result<()> {
    if runtime::with(|_| Ok(())).is_ok() {
        return Ok(());
    }
    if runtime::is_finalized() {
        return Err(Error::new(
            ErrorClass::Other,
            "MPI has been finalized in this process and cannot be started again",
        ));
    }
    runtime::init(if level >= super::env::THREAD_MULTIPLE {
        runtime::Level::Multiple
    } else if level >= super::env::THREAD_SERIALIZED {
        runtime::Level::Serialized
    } else {
        runtime::Level::Funneled
    })
}

/// The thread level the runtime provides to a request for `required` (MPI_Init_thread's rule).
pub(super) fn provided_level(required: c_int) -> c_int {
    let top = match runtime::level() {
        runtime::Level::Multiple => super::env::THREAD_MULTIPLE,
        runtime::Level::Serialized => super::env::THREAD_SERIALIZED,
        runtime::Level::Funneled => super::env::THREAD_FUNNELED,
    };
    required.min(top)
}

pub(super) fn level_name(level: c_int) -> &'static str {
    match level {
        l if l >= super::env::THREAD_MULTIPLE => "MPI_THREAD_MULTIPLE",
        l if l >= super::env::THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        l if l >= super::env::THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        _ => "MPI_THREAD_SINGLE",
    }
}

/// A session's `thread_level` hint as a level (MPI 4.1 §11.3.1); absent or not a level name:
/// FUNNELED, as before (a hint this library does not understand is ignored).
fn level_of(hint: Option<&str>) -> c_int {
    match hint.map(str::trim) {
        Some(v) if v.eq_ignore_ascii_case("MPI_THREAD_SINGLE") => 0,
        Some(v) if v.eq_ignore_ascii_case("MPI_THREAD_SERIALIZED") => super::env::THREAD_SERIALIZED,
        Some(v) if v.eq_ignore_ascii_case("MPI_THREAD_MULTIPLE") => super::env::THREAD_MULTIPLE,
        _ => super::env::THREAD_FUNNELED,
    }
}

/// MPI_Init's start: the world model begins (the runtime too, unless a session started it).
pub(super) fn world_init(level: c_int) -> Result<()> {
    if WORLD.load(Ordering::Acquire) != 0 {
        return Err(Error::new(
            ErrorClass::Other,
            "MPI_Init called more than once (MPI can be initialized once per process)",
        ));
    }
    runtime_up(level)?;
    WORLD.store(1, Ordering::Release);
    Ok(())
}

/// MPI_Finalize: the world model ends; the runtime too unless a session still holds it.
pub(super) fn world_finalize() -> Result<()> {
    if WORLD.load(Ordering::Acquire) != 1 {
        return Err(Error::new(
            ErrorClass::Other,
            "MPI_Finalize without MPI_Init, or twice",
        ));
    }
    crate::comm_ops::delete_self_attrs_at_finalize();
    if live_sessions() > 0 {
        // The runtime must be usable: check we are its thread before saying yes.
        runtime::with(|_| Ok(()))?;
        WORLD.store(2, Ordering::Release);
        return Ok(());
    }
    let r = runtime::finalize();
    WORLD.store(2, Ordering::Release);
    r
}

/// The last session ended with no world model running: tear the runtime down when the process
/// exits, unless MPI_Finalize has done it by then (a later session may still use it).
fn finalize_at_exit() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    extern "C" fn at_exit() {
        if live_sessions() == 0 && WORLD.load(Ordering::Acquire) != 1 {
            // Not running any more (MPI_Finalize did it), or another thread exits: nothing to do.
            let _ = runtime::finalize();
        }
    }
    REGISTERED.call_once(|| {
        // SAFETY: atexit registers a function with no arguments that may run at exit; it
        // touches only process-wide state that outlives main.
        unsafe { libc::atexit(at_exit) };
    });
}

fn session_index(h: Handle) -> Result<usize> {
    let v = h as usize;
    if v == SESSION_NULL {
        return Err(Error::new(
            ErrorClass::Session,
            "MPI_SESSION_NULL is not a valid session here",
        ));
    }
    match v.checked_sub(SESSION_BASE) {
        Some(i) if i < KIND_SPAN && matches!(sessions().get(i), Some(Some(_))) => Ok(i),
        _ => Err(Error::new(
            ErrorClass::Session,
            format!("{v:#x} is not a session handle (or it was finalized)"),
        )),
    }
}

/// A failed call on session `id`: its handler (MPI_COMM_WORLD's for an invalid session).
#[cold]
fn session_fail(name: &str, id: Option<usize>, code: c_int, e: &dyn std::fmt::Display) -> c_int {
    let Some(id) = id else {
        return fail_code(name, crate::comm::WORLD, code, e);
    };
    let handler = sessions()
        .get(id)
        .and_then(|s| s.as_ref().map(|s| s.errhandler))
        .unwrap_or(ErrHandler::Return);
    match handler {
        ErrHandler::Return => code,
        ErrHandler::User(h) => {
            if let Ok(f) = crate::errhandler::get(h) {
                let (mut handle, mut c) = ((SESSION_BASE + id) as Handle, code);
                // SAFETY: a function registered with MPI_Session_create_errhandler, called
                // with pointers to the session handle and the code, as
                // MPI_Session_errhandler_function prescribes; no lock or runtime borrow held.
                unsafe { f(&mut handle, &mut c) };
            }
            code
        }
        ErrHandler::Fatal | ErrHandler::Abort => {
            let msg = format!("{name}: {e}");
            eprintln!("rmpi: {msg} (session error handler: aborting the job)");
            let _ = runtime::with(|rt| -> Result<()> { rt.abort(code, &msg) });
            runtime::abort_without_runtime(code, &msg)
        }
    }
}

/// Run `f` on session `h` with the runtime; errors through the session's handler.
fn scall(name: &str, h: Handle, f: impl FnOnce(&mut Runtime, usize) -> Result<()>) -> c_int {
    let id = match session_index(h) {
        Ok(id) => id,
        Err(e) => return session_fail(name, None, e.code(), &e),
    };
    match runtime::with(|rt| f(rt, id)) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => session_fail(name, Some(id), e.code(), &e),
    }
}

/// `scall` of a body that may wait: under MULTIPLE it runs once `ready` (`runtime::with_ready`).
fn scall_ready(
    name: &str,
    h: Handle,
    mut ready: impl FnMut(&mut Runtime, usize) -> bool,
    f: impl FnOnce(&mut Runtime, usize) -> Result<()>,
) -> c_int {
    let id = match session_index(h) {
        Ok(id) => id,
        Err(e) => return session_fail(name, None, e.code(), &e),
    };
    match runtime::with_ready(|rt| ready(rt, id), |rt| f(rt, id)) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => session_fail(name, Some(id), e.code(), &e),
    }
}

/// Whether session `id`'s buffer (if any) has no buffered send in flight.
fn flushed(rt: &mut Runtime, id: usize) -> bool {
    rt.bsend_flushed_one(Some(buffer_key(id)))
}

fn out<T>(p: *mut T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{what} pointer is NULL"),
        ));
    }
    Ok(())
}

/// # Safety
/// `p` is NULL (an error) or a NUL-terminated string.
unsafe fn pset_name<'a>(p: *const c_char) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::new(ErrorClass::Arg, "pset_name is NULL"));
    }
    // SAFETY: the caller's contract.
    let s = unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("");
    // Process set names are case-insensitive in their scheme part; ours are all fixed.
    PSETS
        .iter()
        .find(|n| n.eq_ignore_ascii_case(s))
        .copied()
        .ok_or_else(|| {
            Error::new(
                ErrorClass::Arg,
                format!("no process set named {s:?} (there are mpi://WORLD and mpi://SELF)"),
            )
        })
}

fn pset_group(rt: &Runtime, name: &str) -> Result<Group> {
    let world = rt.comm(crate::comm::WORLD)?;
    Ok(if name == PSETS[0] {
        Group::new(world.group.clone())
    } else {
        Group::new(vec![world.group[world.rank as usize]])
    })
}

mpi_fn! {
    fn MPI_Session_init / PMPI_Session_init(info: Handle, errhandler: Handle, session: *mut Handle) -> c_int {
        let r = (|| {
            out(session, "session")?;
            let hints = super::info::hints(info)?;
            // The one key the standard defines for sessions: its values are the four levels.
            if let Some(v) = hints.get("thread_level")? {
                const LEVELS: [&str; 4] = ["MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"];
                if !LEVELS.iter().any(|l| l.eq_ignore_ascii_case(v)) {
                    return Err(Error::new(ErrorClass::InfoValue, format!("thread_level {v:?} is not a thread support level")));
                }
            }
            // Checked before the runtime starts: a bad handler then leaves nothing to undo.
            let eh = super::env::errhandler_of(errhandler)?;
            runtime_up(level_of(hints.get("thread_level")?))?;
            let mut t = sessions();
            let s = Session { errhandler: eh, info: hints };
            let i = match t.iter().position(Option::is_none) {
                Some(i) => { t[i] = Some(s); i }
                None => { t.push(Some(s)); t.len() - 1 }
            };
            // SAFETY: checked non-NULL.
            unsafe { *session = (SESSION_BASE + i) as Handle };
            Ok(())
        })();
        match r {
            Ok(()) => MPI_SUCCESS,
            Err(e) => e.code(),
        }
    }
}

mpi_fn! {
    fn MPI_Session_finalize / PMPI_Session_finalize(session: *mut Handle) -> c_int {
        if session.is_null() {
            let e = Error::new(ErrorClass::Arg, "session pointer is NULL");
            return session_fail("MPI_Session_finalize", None, e.code(), &e);
        }
        // SAFETY: checked non-NULL.
        let id = match session_index(unsafe { *session }) {
            Ok(id) => id,
            Err(e) => return session_fail("MPI_Session_finalize", None, e.code(), &e),
        };
        let _ = runtime::with(|rt| {
            end_session(rt, id);
            Ok(())
        });
        sessions()[id] = None;
        // SAFETY: checked non-NULL.
        unsafe { *session = SESSION_NULL as Handle };
        if live_sessions() == 0 && WORLD.load(Ordering::Acquire) != 1 {
            finalize_at_exit();
        }
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_Session_get_num_psets / PMPI_Session_get_num_psets(session: Handle, info: Handle, npset_names: *mut c_int) -> c_int {
        scall("MPI_Session_get_num_psets", session, |_, _| {
            super::info::hints(info)?;
            out(npset_names, "npset_names")?;
            // SAFETY: checked non-NULL.
            unsafe { *npset_names = PSETS.len() as c_int };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Session_get_nth_pset / PMPI_Session_get_nth_pset(session: Handle, info: Handle, n: c_int, pset_len: *mut c_int, pset_name: *mut c_char) -> c_int {
        scall("MPI_Session_get_nth_pset", session, |_, _| {
            super::info::hints(info)?;
            out(pset_len, "pset_len")?;
            let name = usize::try_from(n).ok().and_then(|i| PSETS.get(i)).ok_or_else(|| {
                Error::new(ErrorClass::Arg, format!("n {n} is out of range (there are {} process sets)", PSETS.len()))
            })?;
            // SAFETY: checked non-NULL.
            let cap = unsafe { *pset_len };
            if cap <= 0 {
                // SAFETY: checked non-NULL. A length of 0 asks for the length (with the NUL).
                unsafe { *pset_len = name.len() as c_int + 1 };
                return Ok(());
            }
            out(pset_name, "pset_name")?;
            let k = name.len().min(cap as usize - 1);
            // SAFETY: the caller gives `cap` writable bytes at pset_name (checked non-NULL).
            unsafe {
                std::ptr::copy_nonoverlapping(name.as_ptr(), pset_name.cast::<u8>(), k);
                *pset_name.add(k) = 0;
                *pset_len = name.len() as c_int + 1;
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Session_get_pset_info / PMPI_Session_get_pset_info(session: Handle, pset_name: *const c_char, info: *mut Handle) -> c_int {
        scall("MPI_Session_get_pset_info", session, |rt, _| {
            out(info, "info")?;
            // SAFETY: the standard passes a NUL-terminated string.
            let name = unsafe { self::pset_name(pset_name)? };
            let size = pset_group(rt, name)?.size();
            let mut i = crate::info::Info::new();
            i.set("mpi_size", &size.to_string())?;
            // SAFETY: checked non-NULL.
            unsafe { *info = super::info::new_handle(i) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Session_get_info / PMPI_Session_get_info(session: Handle, info_used: *mut Handle) -> c_int {
        scall("MPI_Session_get_info", session, |_, id| {
            out(info_used, "info_used")?;
            let mut i = sessions()[id].as_ref().map(|s| s.info.clone()).unwrap_or_default();
            // The level provided: what was asked for, capped by what the runtime runs under;
            // without a hint, the runtime's own level (a session made in a process that runs
            // at MULTIPLE may be used from several threads at once, MPICH's mult_session).
            let asked = match i.get("thread_level")? {
                Some(v) => level_of(Some(v)),
                None => super::env::THREAD_MULTIPLE,
            };
            i.set("thread_level", level_name(provided_level(asked)))?;
            // SAFETY: checked non-NULL.
            unsafe { *info_used = super::info::new_handle(i) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Group_from_session_pset / PMPI_Group_from_session_pset(session: Handle, pset_name: *const c_char, newgroup: *mut Handle) -> c_int {
        scall("MPI_Group_from_session_pset", session, |rt, id| {
            out(newgroup, "newgroup")?;
            // SAFETY: the standard passes a NUL-terminated string.
            let name = unsafe { self::pset_name(pset_name)? };
            let g = pset_group(rt, name)?;
            let members = g.members().to_vec();
            let h = super::group::new_group(rt, g);
            // A live group's handle is unique: an entry with it is of a freed group.
            let mut t = groups();
            t.retain(|e| e.0 != h as usize);
            t.push((h as usize, id, members));
            // SAFETY: checked non-NULL.
            unsafe { *newgroup = h };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Session_create_errhandler / PMPI_Session_create_errhandler(function: Option<ErrFn>, errhandler: *mut Handle) -> c_int {
        // Callable before any session or MPI_Init (MPI 4.1 §11.4.1): MPI_Session_init takes
        // the handler.
        super::comm::outside("MPI_Session_create_errhandler", crate::comm::WORLD, || {
            super::errh::create(function, errhandler)
        })
    }
}

mpi_fn! {
    fn MPI_Session_set_errhandler / PMPI_Session_set_errhandler(session: Handle, errhandler: Handle) -> c_int {
        scall("MPI_Session_set_errhandler", session, |_rt, id| {
            let h = super::env::errhandler_of(errhandler)?;
            if let Some(Some(s)) = sessions().get_mut(id) {
                s.errhandler = h;
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Session_get_errhandler / PMPI_Session_get_errhandler(session: Handle, errhandler: *mut Handle) -> c_int {
        scall("MPI_Session_get_errhandler", session, |_rt, id| {
            out(errhandler, "errhandler")?;
            let h = sessions()[id].as_ref().map_or(ErrHandler::Return, |s| s.errhandler);
            let v = match h {
                ErrHandler::Fatal => ERRORS_ARE_FATAL,
                ErrHandler::Return => ERRORS_RETURN,
                ErrHandler::Abort => ERRORS_ABORT,
                ErrHandler::User(i) => {
                    // The caller gets a handle of its own, which it frees.
                    crate::errhandler::retain(i);
                    super::errh::ERRH_BASE + i
                }
            };
            // SAFETY: checked non-NULL.
            unsafe { *errhandler = v as Handle };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Session_call_errhandler / PMPI_Session_call_errhandler(session: Handle, errorcode: c_int) -> c_int {
        let id = match session_index(session) {
            Ok(id) => id,
            Err(e) => return session_fail("MPI_Session_call_errhandler", None, e.code(), &e),
        };
        let msg = format!("error code {errorcode} raised by the program");
        session_fail("MPI_Session_call_errhandler", Some(id), errorcode, &msg);
        MPI_SUCCESS
    }
}

// --- session buffers ---
//
// A session's buffer is kept with the communicators' own (`p2p::Bsend`) under a key of its own;
// buffered sends on a communicator made from the session's group (MPI_Comm_create_from_group)
// use it unless the communicator has one of its own.

/// The buffer key of session `id`: above every communicator index.
fn buffer_key(id: usize) -> usize {
    (1 << 48) + id
}

/// Groups made by MPI_Group_from_session_pset: (handle, session, members). The members are
/// kept so that a freed handle reused for another group is not taken for it.
static GROUPS: Mutex<Vec<(usize, usize, Vec<i32>)>> = Mutex::new(Vec::new());

fn groups() -> std::sync::MutexGuard<'static, Vec<(usize, usize, Vec<i32>)>> {
    GROUPS.lock().unwrap_or_else(|p| p.into_inner())
}

/// MPI_Comm_create_from_group made communicator `comm` from `group`: if that group came from a
/// session, buffered sends on it use the session's buffer.
pub(super) fn note_comm(rt: &mut Runtime, group: Handle, comm: usize) {
    let Ok(g) = super::group::group_of(rt, group) else {
        return;
    };
    let session = groups()
        .iter()
        .find(|(h, _, m)| *h == group as usize && m.as_slice() == g.members())
        .map(|e| e.1);
    if let Some(s) = session {
        rt.bsend.set_session(comm, buffer_key(s));
    }
}

/// Session `id` ends: its buffer is flushed and dropped, its groups forgotten.
fn end_session(rt: &mut Runtime, id: usize) {
    let key = buffer_key(id);
    if rt.bsend.comm(key).is_some() {
        rt.bsend_flush_one(Some(key));
        let _ = rt.bsend.comm_detach(key);
    }
    groups().retain(|e| e.1 != id);
}

fn attach(name: &str, session: Handle, buffer: *mut std::ffi::c_void, size: Count) -> c_int {
    scall(name, session, |rt, id| {
        if size < 0 {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("buffer size {size} is negative"),
            ));
        }
        let automatic = buffer as usize == BUFFER_AUTOMATIC;
        rt.bsend
            .comm_attach(buffer_key(id), buffer.cast(), size as usize, automatic)
            .map_err(|_| {
                Error::new(
                    ErrorClass::Buffer,
                    "the session has a buffer attached already",
                )
            })
    })
}

fn detach(
    name: &str,
    session: Handle,
    buffer_addr: *mut std::ffi::c_void,
    size_max: usize,
    store: impl FnOnce(usize),
) -> c_int {
    scall_ready(name, session, flushed, |rt, id| {
        out(buffer_addr, "buffer_addr")?;
        let key = buffer_key(id);
        let Some(b) = rt.bsend.comm(key) else {
            return Err(Error::new(
                ErrorClass::Buffer,
                "the session has no buffer attached",
            ));
        };
        if b.size() > size_max {
            return Err(Error::new(
                ErrorClass::Count,
                format!(
                    "the buffer's {} bytes do not fit the size argument; use {name}_c",
                    b.size()
                ),
            ));
        }
        let automatic = b.is_automatic();
        rt.bsend_flush_one(Some(key));
        let (base, n) = rt.bsend.comm_detach(key)?;
        // SAFETY: buffer_addr checked non-NULL above (`out`).
        unsafe { hand_back(buffer_addr, automatic, base, n, store) };
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Session_attach_buffer / PMPI_Session_attach_buffer(session: Handle, buffer: *mut std::ffi::c_void, size: c_int) -> c_int {
        attach("MPI_Session_attach_buffer", session, buffer, size as Count)
    }
}

mpi_fn! {
    fn MPI_Session_attach_buffer_c / PMPI_Session_attach_buffer_c(session: Handle, buffer: *mut std::ffi::c_void, size: Count) -> c_int {
        attach("MPI_Session_attach_buffer_c", session, buffer, size)
    }
}

mpi_fn! {
    fn MPI_Session_detach_buffer / PMPI_Session_detach_buffer(session: Handle, buffer_addr: *mut std::ffi::c_void, size: *mut c_int) -> c_int {
        if size.is_null() {
            return detach("MPI_Session_detach_buffer", session, std::ptr::null_mut(), 0, |_| ());
        }
        // SAFETY: checked non-NULL: the caller's int.
        detach("MPI_Session_detach_buffer", session, buffer_addr, c_int::MAX as usize, |n| unsafe { size.write(n as c_int) })
    }
}

mpi_fn! {
    fn MPI_Session_detach_buffer_c / PMPI_Session_detach_buffer_c(session: Handle, buffer_addr: *mut std::ffi::c_void, size: *mut Count) -> c_int {
        if size.is_null() {
            return detach("MPI_Session_detach_buffer_c", session, std::ptr::null_mut(), 0, |_| ());
        }
        // SAFETY: checked non-NULL: the caller's MPI_Count.
        detach("MPI_Session_detach_buffer_c", session, buffer_addr, Count::MAX as usize, |n| unsafe { size.write(n as Count) })
    }
}

mpi_fn! {
    fn MPI_Session_flush_buffer / PMPI_Session_flush_buffer(session: Handle) -> c_int {
        scall_ready("MPI_Session_flush_buffer", session, flushed, |rt, id| {
            rt.bsend_flush_one(Some(buffer_key(id)));
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Session_iflush_buffer / PMPI_Session_iflush_buffer(session: Handle, request: *mut Handle) -> c_int {
        scall("MPI_Session_iflush_buffer", session, |rt, id| {
            if request.is_null() {
                return Err(Error::new(ErrorClass::Arg, "request pointer is NULL"));
            }
            // A session without a buffer: nothing to flush.
            let req = match rt.bsend.comm(buffer_key(id)) {
                Some(b) => b.iflush(&mut rt.pml),
                None => rt.pml.request_for(pml::Started::Done(empty_status())),
            };
            // SAFETY: checked non-NULL; the caller's MPI_Request.
            unsafe { request.write(request_handle(req)) };
            Ok(())
        })
    }
}
