//! MPI_Comm_accept / MPI_Comm_connect: two groups meet through a port.
//!
//! Each group gathers its members' (pid, job, rank) and one proposed context id; the roots swap
//! theirs over the port's connection; each root broadcasts the other side's to its group. The
//! intercommunicator takes the largest proposal. Every member reserved its own proposal, but
//! under MPI_THREAD_MULTIPLE two joins of one process on different threads may still end on the
//! same largest value (each took it from another process), so a second round checks that the
//! chosen id is free at every member of both groups, and a clash starts again above it.
//!
//! No step holds the runtime while it waits (the exchanges are collective schedules waited for
//! outside it under MULTIPLE, the port is polled a turn at a time, the roots' socket I/O needs no
//! runtime): a thread's spawn then waits for its children while the rank's other threads, whose
//! own spawns or collectives the peers wait for, go on (MPICH's `threads/spawn/th_taskmanager`).

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::{check_root, dpm, ensure_btl, job_key, port_err, remember, world_of_pid, MAX_GROUP};
use crate::comm_ops::{allgather_ints, bcast_ints};
use crate::error::{err, Error, ErrorClass, Result};
use crate::runtime::{self, Runtime};

/// How the root reaches the other group's root.
pub enum Meet<'a> {
    Accept(&'a str),
    Connect(&'a str),
}

/// Rounds of the context-id check before giving up. Concurrent joins of one process clash
/// often when the processes enter them in different orders; `jitter` spreads the proposals of
/// the next rounds apart.
const MAX_ROUNDS: u32 = 64;

/// MPI_Comm_accept / MPI_Comm_connect: collective over `comm`; `meet` matters at `root` only.
/// Called outside the runtime.
pub fn join(comm: usize, root: i32, meet: Meet) -> Result<usize> {
    let (btl, me, wrank, job) = runtime::with(|rt| {
        check_root(rt, comm, root)?;
        let btl = ensure_btl(rt)?;
        let wrank = rt.comm(crate::comm::WORLD)?.rank;
        Ok((btl, rt.comm(comm)?.rank, wrank, job_key(rt)))
    })?;
    let at_root = me == root;
    // The root's connection to the other root, kept for every round.
    let mut link: Option<UnixStream> = None;
    let mut floor = 0u32;
    for round in 0..MAX_ROUNDS {
        let proposal = runtime::with(|rt| Ok(propose(rt, floor + jitter(round))))?;
        let mine = [proposal as i32, std::process::id() as i32, job, wrank];
        let all = allgather_ints(comm, &mine)?;
        // [largest proposal of both groups, (pid, job, rank) of each remote member]
        let data = share(comm, root, at_root, || {
            let my_max = all.chunks_exact(4).map(|p| p[0]).max().unwrap_or(0);
            let mut out = vec![my_max];
            out.extend(all.chunks_exact(4).flat_map(|p| p[1..].to_vec()));
            let theirs = swap(root_link(&mut link, &meet)?, &out)?;
            if theirs.is_empty() || (theirs.len() - 1) % 3 != 0 {
                return Err(port_err("the other group's root sent a malformed group"));
            }
            let mut d = vec![theirs[0].max(my_max)];
            d.extend_from_slice(&theirs[1..]);
            Ok(d)
        })?;
        if data.len() < 4 || (data.len() - 1) % 3 != 0 {
            return err(ErrorClass::Intern, "accept/connect: short agreement");
        }
        let ctx = data[0] as u32;
        let free_here = runtime::with(|rt| Ok(take_if_free(rt, ctx, proposal)))?;
        let frees = allgather_ints(comm, &[free_here as i32])?;
        let both = share(comm, root, at_root, || {
            let ours = frees.iter().all(|&f| f == 1) as i32;
            let theirs = swap(root_link(&mut link, &meet)?, &[ours])?;
            Ok(vec![(ours == 1 && theirs.first() == Some(&1)) as i32])
        })?;
        if both.first() == Some(&1) {
            return runtime::with(|rt| add_inter(rt, comm, btl, ctx, &data[1..]));
        }
        floor = ctx + 4;
    }
    err(
        ErrorClass::Intern,
        format!("accept/connect: no context id free at every member after {MAX_ROUNDS} rounds"),
    )
}

/// How far above its floor a member proposes in `round`: nothing at first, then a random
/// multiple of 4 below 4 * 2^round (at most 256), so that concurrent joins which clashed do not
/// clash again by entering their proposals in the same orders as before.
fn jitter(round: u32) -> u32 {
    use std::hash::{BuildHasher, Hasher};
    if round == 0 {
        return 0;
    }
    let r = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    4 * (r % (1u64 << round.min(6))) as u32
}

/// This member's proposal: its next free context id (at least `floor`), reserved at once so
/// that no other join or communicator of this process proposes or takes it meanwhile.
fn propose(rt: &mut Runtime, floor: u32) -> u32 {
    let c = rt.objs.next_ctx().max(floor);
    rt.reserve_inter_ctx(c);
    c
}

/// Whether the chosen id `ctx` is free here (this member's own proposal, or above every id
/// this process has used or reserved); taken if so.
fn take_if_free(rt: &mut Runtime, ctx: u32, proposal: u32) -> bool {
    let free = ctx == proposal || ctx >= rt.objs.next_ctx();
    if free {
        rt.reserve_inter_ctx(ctx);
    }
    free
}

/// The intercommunicator of the members of `comm` and the remote (pid, job, rank) triples.
fn add_inter(
    rt: &mut Runtime,
    comm: usize,
    btl: usize,
    ctx: u32,
    triples: &[i32],
) -> Result<usize> {
    let mine = job_key(rt);
    let remote: Vec<i32> = triples
        .chunks_exact(3)
        .map(|p| {
            Ok(if p[1] == mine {
                p[2] // of this job: its own transport reaches it
            } else {
                let w = world_of_pid(rt, btl, p[0] as u32)?;
                remember(w, (p[1], p[2], p[0] as u32))?;
                w as i32
            })
        })
        .collect::<Result<_>>()?;
    let c = rt.comm(comm)?;
    let (group, me) = (c.group.clone(), c.rank);
    rt.add_inter(comm, ctx, group, me, remote)
}

/// What the root computes (`at_root`), shared with every member of `comm`: a header (length,
/// or -1 and the error class) and then the words. A root's failure fails every member.
fn share(
    comm: usize,
    root: i32,
    at_root: bool,
    at_root_do: impl FnOnce() -> Result<Vec<i32>>,
) -> Result<Vec<i32>> {
    let mut mine = if at_root { Some(at_root_do()) } else { None };
    let mut head = match &mine {
        Some(Ok(v)) => [v.len() as i32, 0],
        Some(Err(e)) => [-1, e.class as i32],
        None => [0, 0],
    };
    bcast_ints(comm, root, &mut head)?;
    if head[0] < 0 {
        return match mine.take() {
            Some(Err(e)) => Err(e),
            _ => Err(Error::new(
                ErrorClass::from_code(head[1]).unwrap_or(ErrorClass::Port),
                "the root could not reach the other group",
            )),
        };
    }
    let mut data = match mine {
        Some(Ok(v)) => v,
        _ => vec![0; (head[0] as usize).min(3 * MAX_GROUP + 1)],
    };
    bcast_ints(comm, root, &mut data)?;
    Ok(data)
}

/// The root's connection to the other root: accepted on or connected to the port the first
/// time.
fn root_link<'a>(link: &'a mut Option<UnixStream>, meet: &Meet) -> Result<&'a mut UnixStream> {
    if link.is_none() {
        *link = Some(match meet {
            Meet::Accept(p) => accept_on(p)?,
            Meet::Connect(p) => connect_to(p)?,
        });
    }
    Ok(link.as_mut().expect("set above"))
}

/// Writes `out`, reads the other root's words.
fn swap(s: &mut UnixStream, out: &[i32]) -> Result<Vec<i32>> {
    let io = |e: std::io::Error| port_err(format!("the other group's root: {e}"));
    write_ints(s, out).map_err(io)?;
    read_ints(s).map_err(io)
}

/// Waits for a connection on `port`, progressing MPI meanwhile (under MULTIPLE a turn at a
/// time, giving the runtime back between turns).
fn accept_on(port: &str) -> Result<UnixStream> {
    let l = dpm(|d| {
        d.ports
            .get(port)
            .map(|l| l.try_clone())
            .transpose()
            .map_err(|e| port_err(e.to_string()))
    })??;
    let Some(l) = l else {
        return Err(port_err(format!(
            "port \"{port}\" is not open in this process (MPI_Open_port)"
        )));
    };
    let attempt = |_: &mut Runtime| match l.accept() {
        Ok((s, _)) => Ok(Some(s)),
        Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
            Ok(None)
        }
        Err(e) => Err(port_err(format!("accept on {port}: {e}"))),
    };
    if runtime::is_multiple() {
        return runtime::poll_outside(attempt);
    }
    runtime::with(|rt| loop {
        if let Some(s) = attempt(rt)? {
            return Ok(s);
        }
        if rt.pml.progress() == 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    })
}

fn connect_to(port: &str) -> Result<UnixStream> {
    let addr = super::sock::abstract_addr(port).map_err(|e| port_err(e.to_string()))?;
    UnixStream::connect_addr(&addr)
        .map_err(|e| port_err(format!("cannot connect to port \"{port}\": {e}")))
}

fn write_ints(s: &mut UnixStream, v: &[i32]) -> std::io::Result<()> {
    let mut b = (v.len() as u32).to_le_bytes().to_vec();
    for x in v {
        b.extend_from_slice(&x.to_le_bytes());
    }
    s.write_all(&b)
}

fn read_ints(s: &mut UnixStream) -> std::io::Result<Vec<i32>> {
    let mut n = [0u8; 4];
    s.read_exact(&mut n)?;
    let n = u32::from_le_bytes(n) as usize;
    if n > 3 * MAX_GROUP + 1 {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            "group too large",
        ));
    }
    let mut b = vec![0u8; n * 4];
    s.read_exact(&mut b)?;
    Ok(b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}
