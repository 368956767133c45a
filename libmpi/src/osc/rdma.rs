//! Puts and gets by RDMA (`osc_direct=auto` over ib): at creation each member registers its
//! window memory through the transport's registration cache (`Pml::expose_to`, the rendezvous'
//! path) and sends every peer its key; a put or get of a few contiguous target blocks is then
//! one RDMA WRITE or READ per block, complete when the call returns, with no target
//! involvement. When every member's transport has atomics (`Btl::atomics`: the soft provider),
//! the window also takes every accumulate-family operation on aligned 8-byte elements by
//! verbs atomics (`osc/rdma_atomic.rs`), this rank's own window included, so those never meet
//! a message-based accumulate. Everything else (other accumulates, applied by the target;
//! locks; many-block layouts; puts and gets on this rank itself) stays on the message path.

use super::allgather;
use crate::btl::GetError;
use crate::datatype::Msg;
use crate::error::{err, Result};
use crate::runtime::Runtime;

/// Target layouts of more blocks than this go as messages (one RDMA round trip per block
/// would cost more than one message the target scatters).
const MAX_BLOCKS: usize = 8;

pub struct Rdma {
    /// By window rank: the key that rank gave this one (0 for this rank itself).
    keys: Vec<u64>,
    /// By window rank: its window base address.
    bases: Vec<usize>,
    /// World ranks this rank exposed its window to, with (base, size), released at free.
    exposed: Vec<usize>,
    base: usize,
    size: usize,
    /// Whether aligned 8-byte accumulates go by verbs atomics (every member agreed).
    pub atomics: bool,
    /// The world rank of another member: the transport that does this rank's own atomics.
    pub via: usize,
}

/// Register this rank's `[base, base + size)` for every other member (all reached through
/// ib) and learn their keys; None at every member if any member could not. Called outside the
/// runtime (the exchange waits as `allgather` does).
pub fn setup(
    comm: usize,
    world: &[usize],
    me: usize,
    base: usize,
    size: usize,
) -> Result<Option<Rdma>> {
    let n = world.len();
    let all_ib = super::direct::wanted()
        && crate::runtime::with(|rt| {
            Ok(world
                .iter()
                .enumerate()
                .all(|(r, &w)| r == me || rt.pml.btl_name_of(w) == Some("ib")))
        })?;
    // Every member sees the same world, so `all_ib` agrees: no exchange when it is false.
    if !all_ib || n < 2 {
        return Ok(None);
    }
    let (mine, exposed) = crate::runtime::with(|rt| Ok(expose(rt, world, me, base, size)))?;
    let words = allgather(comm, &mine)?;
    let r = Rdma {
        keys: words.iter().map(|w| w[2 + me]).collect(),
        bases: words.iter().map(|w| w[1] as usize).collect(),
        exposed,
        base,
        size,
        atomics: words.iter().all(|w| w[0] & 2 != 0),
        via: world[if me == 0 { 1 } else { 0 }],
    };
    if words.iter().any(|w| w[0] & 1 == 0) {
        crate::runtime::with(|rt| {
            r.release(rt);
            Ok(())
        })?;
        return Ok(None);
    }
    Ok(Some(r))
}

/// This rank's words for `setup`'s exchange (flags, base, a key per member) and the world ranks
/// its window was exposed to.
fn expose(
    rt: &mut Runtime,
    world: &[usize],
    me: usize,
    base: usize,
    size: usize,
) -> (Vec<u64>, Vec<usize>) {
    // Bit 0: registered for every peer; bit 1: every peer's transport has atomics.
    let atomics = world
        .iter()
        .enumerate()
        .all(|(r, &w)| r == me || rt.pml.atomics_to(w));
    let mut mine = vec![1u64 | (atomics as u64) << 1, base as u64];
    let mut exposed = Vec::new();
    for (r, &w) in world.iter().enumerate() {
        let key = if r == me || size == 0 {
            0
        } else {
            match rt.pml.expose_to(w, base, size) {
                Some(k) => {
                    exposed.push(w);
                    k
                }
                None => {
                    mine[0] &= !1;
                    0
                }
            }
        };
        mine.push(key);
    }
    (mine, exposed)
}

impl Rdma {
    /// Give back the registrations (MPI_Win_free, after its fence).
    pub fn release(self, rt: &mut Runtime) {
        for w in self.exposed {
            rt.pml.unexpose_to(w, self.base, self.size);
        }
    }

    /// Whether an operation on `rank` with these target blocks goes by RDMA.
    pub fn takes(&self, rank: i32, me: i32, blocks: &[(i64, u64)]) -> bool {
        rank != me && blocks.len() <= MAX_BLOCKS && self.keys[rank as usize] != 0
    }

    /// `rank`'s window base address and key (0 for this rank).
    pub fn remote(&self, rank: i32) -> (usize, u64) {
        (self.bases[rank as usize], self.keys[rank as usize])
    }
}

fn failed(e: GetError, what: &str, rank: i32) -> Result<bool> {
    match e {
        // Not registrable here (pinned-memory limit): the caller sends a message instead.
        GetError::Unsupported(_) => Ok(false),
        GetError::Failed { class } => err(
            class,
            format!("one-sided {what} of rank {rank} by RDMA failed"),
        ),
    }
}

/// MPI_Put by RDMA WRITE; Ok(false): use the message path for this one.
pub fn put(
    rt: &mut Runtime,
    d: &Rdma,
    world: usize,
    origin: &Msg,
    rank: i32,
    blocks: &[(i64, u64)],
) -> Result<bool> {
    let mut scratch = Vec::new();
    // SAFETY: the origin buffer holds the message (the MPI call's contract).
    let data = unsafe { super::direct::packed(origin, &mut scratch) };
    let (base, key) = (d.bases[rank as usize], d.keys[rank as usize]);
    let mut pos = 0;
    for &(off, len) in blocks {
        let len = len as usize;
        let remote = (base as i64).wrapping_add(off) as usize;
        if let Err(e) = rt
            .pml
            .write_exposed(world, remote, key, &data[pos..pos + len])
        {
            return failed(e, "put", rank);
        }
        pos += len;
    }
    Ok(true)
}

/// MPI_Get by RDMA READ; Ok(false): use the message path for this one.
pub fn get(
    rt: &mut Runtime,
    d: &Rdma,
    world: usize,
    origin: &Msg,
    rank: i32,
    blocks: &[(i64, u64)],
) -> Result<bool> {
    let (base, key) = (d.bases[rank as usize], d.keys[rank as usize]);
    let mut v;
    let buf: &mut [u8] = if origin.is_contiguous() {
        // SAFETY: the origin buffer has room for `len` bytes (the MPI call's contract) and
        // nothing else uses it until the call returns.
        unsafe { std::slice::from_raw_parts_mut(origin.ptr, origin.len) }
    } else {
        v = vec![0u8; origin.len];
        &mut v
    };
    let mut pos = 0;
    for &(off, len) in blocks {
        let len = len as usize;
        let remote = (base as i64).wrapping_add(off) as usize;
        if let Err(e) = rt
            .pml
            .read_exposed(world, remote, key, &mut buf[pos..pos + len])
        {
            return failed(e, "get", rank);
        }
        pos += len;
    }
    if !origin.is_contiguous() {
        // SAFETY: the origin buffer has room for the message (the MPI call's contract).
        unsafe { origin.write(0, buf) };
    }
    Ok(true)
}
