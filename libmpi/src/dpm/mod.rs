//! Dynamic process management (Open MPI's framework name): MPI_Comm_spawn(_multiple),
//! MPI_Comm_get_parent, ports with MPI_Comm_accept/connect, and the name service.
//!
//! Two groups meet through a port: an abstract Unix socket the accepting root listens on
//! (`rmpi-port-<pid>-<n>`). The roots swap, over one connection, their group's pids and the
//! largest free context id of the group; each root broadcasts the other side's to its group
//! (`join.rs`, which also says how the calls wait outside the runtime); every member then reaches the remote pids through the `sock` transport, added to the pml as
//! endpoints past this job's world (`pml/dynamic.rs`), and builds an ordinary
//! intercommunicator. MPI_Comm_spawn is open a port, ask mpirun (PMI `mcmd=spawn`) to start the
//! children with the port in their environment (`RMPI_PARENT_PORT`), accept; a child's
//! MPI_Init connects to it and keeps the result as its parent.

pub mod addr;
mod join;
pub mod pmi_dpm;
pub mod sock;

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::rc::Rc;

use crate::error::{err, Error, ErrorClass, Result};
use crate::runtime::{self, Runtime};

pub use join::{join, Meet};
pub use pmi_dpm::SpawnCmd;

/// Largest group that can join through a port (integers the root broadcasts).
pub const MAX_GROUP: usize = 1 << 16;

#[derive(Default)]
struct Dpm {
    /// The pml index of the socket transport, once opened.
    btl: Option<usize>,
    peers: Rc<RefCell<sock::Peers>>,
    /// Where this process listens, once the transport is open.
    me: Option<addr::Addr>,
    /// Extended world rank of each remote process, by (host, pid).
    world_of: HashMap<(u32, u32), usize>,
    /// Extended world rank of each remote (job, rank).
    by_key: HashMap<(i32, i32), usize>,
    ports: HashMap<String, join::PortListener>,
    next_port: u32,
    /// The parent intercommunicator (slot, context id), for a spawned process.
    parent: Option<(usize, u32)>,
    /// MPI_UNIVERSE_SIZE from the launcher, read at MPI_Init.
    universe: Option<i32>,
}

// Used by whichever thread may call MPI now (runtime.rs).
static DPM: crate::runtime::Local<RefCell<Option<Dpm>>> =
    crate::runtime::Local::new(RefCell::new(None));

/// `f` on the DPM state (made at first use); the runtime's error on a thread that may not call MPI.
fn dpm<R>(f: impl FnOnce(&mut Dpm) -> R) -> Result<R> {
    DPM.with(|d| f(d.borrow_mut().get_or_insert_with(Dpm::default)))
}

fn port_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorClass::Port, msg)
}

/// Opens the socket transport (and its listener) the first time.
fn ensure_btl(rt: &mut Runtime) -> Result<usize> {
    dpm(|d| {
        if let Some(b) = d.btl {
            return Ok(b);
        }
        let t = sock::DynBtl::open(d.peers.clone()).map_err(|e| {
            Error::new(
                ErrorClass::Other,
                format!("cannot listen for dynamic peers: {e}"),
            )
        })?;
        d.me = Some(t.addr());
        let b = rt.pml.add_btl(Box::new(t));
        d.btl = Some(b);
        Ok(b)
    })?
}

/// The extended world rank that reaches the process at `a` (added the first time).
fn world_of_addr(rt: &mut Runtime, btl: usize, a: addr::Addr) -> Result<usize> {
    dpm(|d| {
        if let Some(&w) = d.world_of.get(&a.key()) {
            return w;
        }
        let peer = {
            let mut p = d.peers.borrow_mut();
            let i = p.addrs.len();
            // A hello may have told its address already (it named itself before it listened).
            let a = match p.learnt.remove(&a.key()) {
                Some(l) if a.port == 0 => l,
                _ => a,
            };
            p.addrs.push(a);
            p.by_key.insert(a.key(), i);
            if !a.same_host() {
                // It learns our address from the hello, in case we had none when we named
                // ourselves to its group.
                p.announce.push(i);
            }
            i
        };
        let w = rt.pml.add_endpoint(btl, peer, 0);
        d.world_of.insert(a.key(), w);
        w
    })
}

/// MPI_Open_port: a new port name, listened on by this process (`join::PortListener`).
pub fn open_port() -> Result<String> {
    dpm(|d| {
        let base = format!("rmpi-port-{}-{}", std::process::id(), d.next_port);
        d.next_port += 1;
        let (name, l) = join::PortListener::open(&base)?;
        d.ports.insert(name.clone(), l);
        Ok(name)
    })?
}

/// MPI_Close_port.
pub fn close_port(name: &str) -> Result<()> {
    dpm(|d| match d.ports.remove(name) {
        Some(_) => Ok(()),
        None => Err(port_err(format!(
            "port \"{name}\" was not opened by this process (or is closed already)"
        ))),
    })?
}

fn check_root(rt: &Runtime, comm: usize, root: i32) -> Result<()> {
    let c = rt.comm(comm)?;
    if c.is_inter() {
        return err(
            ErrorClass::Comm,
            "the communicator must be an intracommunicator",
        );
    }
    if root < 0 || root >= c.size() {
        return err(
            ErrorClass::Root,
            format!("root {root} is out of range (size {})", c.size()),
        );
    }
    Ok(())
}

/// What one MPI_Comm_spawn(_multiple) call gives: how many processes were asked for (the
/// root's count, which every member learns, for its array_of_errcodes), and the
/// intercommunicator or why not.
/// Words of the root's failure reason sent with the spawn result (longer reasons are cut).
const REASON_WORDS: usize = 64;

/// `msg` as at most `REASON_WORDS` words of UTF-8 bytes, zero-padded.
fn reason_words(msg: &str) -> Vec<i32> {
    let mut b: Vec<u8> = msg.bytes().take(REASON_WORDS * 4).collect();
    b.resize(b.len().div_ceil(4) * 4, 0);
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The reason `reason_words` packed (lossy where the cut split a character).
fn reason_text(words: &[i32]) -> String {
    let b: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Called outside the runtime (it waits for the children and the other members).
pub fn spawn(comm: usize, root: i32, cmds: &[SpawnCmd]) -> (usize, Result<usize>) {
    let me = match runtime::with(|rt| {
        check_root(rt, comm, root)?;
        Ok(rt.comm(comm)?.rank)
    }) {
        Ok(me) => me,
        Err(e) => return (0, Err(e)),
    };
    // The root starts them; every member learns whether that worked:
    // [0 or error class, total, reason words].
    let mut words = vec![0; 2 + REASON_WORDS];
    let started = if me == root {
        let total: i32 = cmds.iter().map(|c| c.maxprocs).sum();
        let r = runtime::with(|rt| {
            let port = open_port()?;
            let pmi = rt.pmi_mut().ok_or_else(|| {
                Error::new(
                    ErrorClass::Spawn,
                    "MPI_Comm_spawn needs a launcher (run the program under mpirun)",
                )
            })?;
            if let Err(e) = pmi.spawn(cmds, &port) {
                let _ = close_port(&port);
                return Err(e);
            }
            Ok(port)
        });
        words[1] = total;
        if let Err(e) = &r {
            words[0] = e.class as i32;
            let w = reason_words(&e.message);
            words[2..2 + w.len()].copy_from_slice(&w);
        }
        Some(r)
    } else {
        None
    };
    let shared = crate::comm_ops::bcast_ints(comm, root, &mut words);
    let total = words[1].max(0) as usize;
    let port = match started {
        Some(Ok(port)) => port,
        Some(Err(e)) => return (total, Err(e)),
        None if shared.is_ok() && words[0] != 0 => {
            return (
                total,
                // The root's reason too: under MPI_ERRORS_ARE_FATAL whichever rank aborts
                // first is the one the job reports.
                err(
                    ErrorClass::Spawn,
                    format!(
                        "the root could not start the processes: {}",
                        reason_text(&words[2..])
                    ),
                ),
            );
        }
        None => String::new(),
    };
    if let Err(e) = shared {
        if !port.is_empty() {
            let _ = close_port(&port);
        }
        return (total, Err(e));
    }
    let r = join(comm, root, Meet::Accept(&port));
    if !port.is_empty() {
        let _ = close_port(&port);
    }
    (total, r)
}

/// A spawned process's MPI_Init: join the parents through the port in the environment.
/// Called outside the runtime.
pub fn connect_parent() -> Result<()> {
    let universe = runtime::with(|rt| Ok(rt.pmi_mut().and_then(|p| p.universe_size())))?;
    dpm(|d| d.universe = universe)?;
    let Ok(port) = std::env::var("RMPI_PARENT_PORT") else {
        return Ok(());
    };
    let id = join(crate::comm::WORLD, 0, Meet::Connect(&port)).map_err(|e| {
        Error::new(
            e.class,
            format!("cannot join the parents that spawned this process: {e}"),
        )
    })?;
    runtime::with(|rt| {
        // MPI-4.0 11.8.2: its default name.
        rt.comm_mut(id)?.name = "MPI_COMM_PARENT".into();
        let ctx = rt.comm(id)?.ctx;
        dpm(|d| d.parent = Some((id, ctx)))
    })
}

/// MPI_Comm_get_parent: the slot of the parent intercommunicator while it exists.
pub fn parent(rt: &Runtime) -> Option<usize> {
    let (id, ctx) = dpm(|d| d.parent).ok()??;
    match rt.comm(id) {
        Ok(c) if c.ctx == ctx && c.is_inter() => Some(id),
        _ => None,
    }
}

/// MPI_UNIVERSE_SIZE, when the launcher said.
pub fn universe() -> Option<i32> {
    dpm(|d| d.universe).ok().flatten()
}

/// MPI_APPNUM: which command of the spawn call started this process (0 under mpirun).
pub fn appnum() -> i32 {
    std::env::var("RMPI_APPNUM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// MPI_Comm_join: both ends open a port and swap names over `fd`; the smaller name accepts.
/// Called outside the runtime.
pub fn comm_join(fd: std::os::fd::RawFd) -> Result<usize> {
    use std::os::fd::FromRawFd;
    // SAFETY: F_GETFD only reads the descriptor table.
    if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return err(
            ErrorClass::Arg,
            format!("fd {fd} is not an open descriptor"),
        );
    }
    // SAFETY: open (checked above) and the caller's for the whole call; ManuallyDrop leaves it
    // open afterwards, as MPI_Comm_join must.
    let mut sock = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let port = open_port()?;
    let io =
        |e: std::io::Error| Error::new(ErrorClass::Arg, format!("MPI_Comm_join over fd {fd}: {e}"));
    let swap = (|| -> std::io::Result<String> {
        let mut b = (port.len() as u32).to_le_bytes().to_vec();
        b.extend_from_slice(port.as_bytes());
        sock.write_all(&b)?;
        let mut n = [0u8; 4];
        sock.read_exact(&mut n)?;
        let n = u32::from_le_bytes(n) as usize;
        if n > 1024 {
            return Err(std::io::Error::new(
                ErrorKind::InvalidData,
                "not a port name",
            ));
        }
        let mut other = vec![0u8; n];
        sock.read_exact(&mut other)?;
        String::from_utf8(other)
            .map_err(|_| std::io::Error::new(ErrorKind::InvalidData, "not a port name"))
    })();
    let r = match swap {
        Ok(other) if port < other => join(crate::comm::SELF, 0, Meet::Accept(&port)),
        Ok(other) => join(crate::comm::SELF, 0, Meet::Connect(&other)),
        Err(e) => Err(io(e)),
    };
    let _ = close_port(&port);
    r
}

/// This job's name among jobs: a hash of the PMI kvsname (a singleton: its pid).
fn job_key(rt: &mut Runtime) -> i32 {
    match rt.pmi_mut() {
        Some(p) => {
            let mut h: u32 = 0x811c_9dc5;
            for b in p.kvsname.bytes() {
                h = (h ^ b as u32).wrapping_mul(0x0100_0193);
            }
            (h & 0x7fff_ffff) as i32
        }
        None => std::process::id() as i32 | i32::MIN,
    }
}

/// Words of a process's name across jobs: (job, rank in its world) and its `addr::Addr`.
pub const GLOBAL_WORDS: usize = 2 + addr::WORDS;

/// This process (world rank `me_world`) named so that it means the same in every job: its
/// job, its world rank and where the dynamic transport reaches it.
pub fn to_global(rt: &mut Runtime, me_world: i32) -> Result<Vec<i32>> {
    let job = job_key(rt);
    let a = dpm(|d| d.me)?.unwrap_or_else(addr::Addr::local_only);
    let mut v = vec![job, me_world];
    v.extend_from_slice(&a.words());
    Ok(v)
}

/// The world ranks (here) of processes named by `to_global`: a process of another job met for
/// the first time is reached through the dynamic transport.
pub fn from_global(rt: &mut Runtime, names: &[i32]) -> Result<Vec<i32>> {
    let mine = job_key(rt);
    let mut out = Vec::with_capacity(names.len() / GLOBAL_WORDS);
    for t in names.chunks_exact(GLOBAL_WORDS) {
        if t[0] == mine {
            out.push(t[1]);
            continue;
        }
        let known = dpm(|d| d.by_key.get(&(t[0], t[1])).copied())?;
        let w = match known {
            Some(w) => w,
            None => {
                let a = addr::Addr::from_words(&t[2..]);
                if a.pid == 0 {
                    return err(
                        ErrorClass::Comm,
                        format!("rank {} of another job cannot be reached", t[1]),
                    );
                }
                let btl = ensure_btl(rt)?;
                let w = world_of_addr(rt, btl, a)?;
                dpm(|d| d.by_key.insert((t[0], t[1]), w))?;
                w
            }
        };
        out.push(w as i32);
    }
    Ok(out)
}
