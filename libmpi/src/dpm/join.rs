//! MPI_Comm_accept / MPI_Comm_connect: two groups meet through a port. The roots swap their
//! groups' words over the port's connection, and the rest is MPI_Intercomm_create's agreement
//! (`comm_inter::build_inter`, `inter_agree.rs`), which waits outside the runtime: a thread's
//! spawn then waits for its children while the rank's other threads, whose own spawns or
//! collectives the peers wait for, go on (MPICH's `threads/spawn/th_taskmanager`). The roots'
//! socket I/O needs no runtime.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::{check_root, dpm, ensure_btl, port_err};
use crate::comm_agree::Outside;
use crate::error::Result;
use crate::runtime::{self, Runtime};

/// How the root reaches the other group's root.
pub enum Meet<'a> {
    Accept(&'a str),
    Connect(&'a str),
}

/// MPI_Comm_accept / MPI_Comm_connect: collective over `comm`; `meet` matters at `root` only.
/// Called outside the runtime.
pub fn join(comm: usize, root: i32, meet: Meet) -> Result<usize> {
    runtime::with(|rt| {
        check_root(rt, comm, root)?;
        // Listening before the other group learns of us, so its first sends find us.
        ensure_btl(rt).map(drop)
    })?;
    // The root's connection to the other root, kept for every round of the agreement.
    let mut link: Option<UnixStream> = None;
    crate::comm_inter::build_inter(&mut Outside, comm, root, |_, words, cap| {
        swap(root_link(&mut link, &meet)?, words, cap)
    })
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

/// Writes `out`, reads the other root's words (at most `cap`).
fn swap(s: &mut UnixStream, out: &[i32], cap: usize) -> Result<Vec<i32>> {
    let io = |e: std::io::Error| port_err(format!("the other group's root: {e}"));
    write_ints(s, out).map_err(io)?;
    read_ints(s, cap).map_err(io)
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

fn read_ints(s: &mut UnixStream, cap: usize) -> std::io::Result<Vec<i32>> {
    let mut n = [0u8; 4];
    s.read_exact(&mut n)?;
    let n = u32::from_le_bytes(n) as usize;
    if n > cap {
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
