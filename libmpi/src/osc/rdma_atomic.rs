//! Accumulates by verbs atomics (windows whose `Rdma::atomics` is set: every member reached
//! through ib by a transport with atomics). The route depends only on the element's basic type
//! and address, the same at every origin: elements of an 8-byte integer type at an 8-byte
//! aligned target address take verbs atomics, at every rank including this one (its
//! own window through `atomic_local`, coherent with the peers' atomics), for every
//! accumulate-family call (Accumulate, Get_accumulate, Fetch_and_op, Compare_and_swap).
//! Everything else is applied by the target from a message; the two never meet on one
//! (location, type), which is all the standard's atomicity asks.
//!
//! SUM is one FETCH_AND_ADD, MPI_NO_OP a FETCH_AND_ADD of 0, every other op (REPLACE, MAX,
//! PROD, bitwise...) a CMP_AND_SWP loop applying the op to the value seen, starting from a
//! guess of 0; compare-and-swap is one CMP_AND_SWP. One atomic (or more) per element: fine
//! for the single-element calls, slow for long accumulates (MPICH's get_accumulate_long at
//! 1000 elements times out over the soft provider in a debug build). Floating-point types stay
//! on the message path: their long accumulates are the common case.

use super::rdma::Rdma;
use crate::btl::GetError;
use crate::datatype::{Datatype, Msg};
use crate::error::{err, Result};
use crate::runtime::Runtime;
use btl_ib::verbs::AtomicOp;

/// MPI_SUM and MPI_NO_OP (the ABI's handles).
const OP_SUM: usize = 0x21;
const OP_NO_OP: usize = 0x3d;

/// The 8-byte integer types (MPI_AINT, COUNT, OFFSET, LONG, LONG_LONG, UNSIGNED_LONG,
/// UNSIGNED_LONG_LONG, INT64_T, UINT64_T): SUM is a wrapping add of the word.
fn integer(handle: usize) -> bool {
    matches!(
        handle,
        0x201 | 0x202 | 0x203 | 0x20a | 0x20b | 0x20e | 0x20f | 0x258 | 0x259
    )
}

/// Whether an accumulate of basic type `handle` on these target blocks of `rank` goes by
/// atomics.
pub fn takes(d: &Rdma, handle: Option<usize>, rank: i32, blocks: &[(i64, u64)]) -> bool {
    let base = d.remote(rank).0 as i64;
    d.atomics
        && handle.is_some_and(integer)
        && blocks
            .iter()
            .all(|&(off, len)| (base + off) % 8 == 0 && len % 8 == 0)
}

/// One atomic on the word at window offset `off` of `rank`.
fn one(
    rt: &mut Runtime,
    d: &Rdma,
    world: &[usize],
    me: i32,
    rank: i32,
    off: i64,
    op: AtomicOp,
) -> Result<u64> {
    let (base, key) = d.remote(rank);
    let addr = (base as i64 + off) as usize;
    let r = if rank == me {
        rt.pml.atomic_exposed(d.via, true, addr, 0, op)
    } else {
        rt.pml
            .atomic_exposed(world[rank as usize], false, addr, key, op)
    };
    r.or_else(|e| {
        let why = match e {
            GetError::Unsupported(w) => (crate::error::ErrorClass::Intern, w),
            GetError::Failed { class } => (class, String::from("the transport failed")),
        };
        err(
            why.0,
            format!("one-sided atomic at rank {rank} by RDMA failed: {}", why.1),
        )
    })
}

/// `f` applied to the word by a compare-and-swap loop; the old value.
fn cas_loop(
    rt: &mut Runtime,
    d: &Rdma,
    world: &[usize],
    me: i32,
    (rank, off): (i32, i64),
    f: &mut dyn FnMut(u64) -> u64,
) -> Result<u64> {
    let mut guess = 0u64;
    loop {
        let op = AtomicOp::CmpSwap {
            compare: guess,
            swap: f(guess),
        };
        let old = one(rt, d, world, me, rank, off, op)?;
        if old == guess {
            return Ok(old);
        }
        guess = old;
    }
}

/// MPI_Accumulate / Get_accumulate / Fetch_and_op (`result`: the old values, packed) with
/// predefined `op` over `dt`, element by element; `origin` is None for MPI_NO_OP.
#[allow(clippy::too_many_arguments)]
pub fn accumulate(
    rt: &mut Runtime,
    d: &Rdma,
    world: &[usize],
    me: i32,
    origin: Option<&Msg>,
    result: Option<&Msg>,
    rank: i32,
    blocks: &[(i64, u64)],
    op: usize,
    dt: Datatype,
) -> Result<()> {
    let o = crate::op::lookup(op)?;
    let mut scratch = Vec::new();
    let data: &[u8] = match origin {
        // SAFETY: the origin buffer holds the message (the MPI call's contract).
        Some(m) => unsafe { super::direct::packed(m, &mut scratch) },
        None => &[],
    };
    let mut old = Vec::new();
    let mut pos = 0;
    for &(boff, len) in blocks {
        for i in 0..len as usize / 8 {
            let off = boff + 8 * i as i64;
            let elem = data.get(pos..pos + 8);
            let v = match elem {
                None => one(rt, d, world, me, rank, off, AtomicOp::FetchAdd(0))?,
                Some(_) if op == OP_NO_OP => {
                    one(rt, d, world, me, rank, off, AtomicOp::FetchAdd(0))?
                }
                Some(e) if op == OP_SUM => {
                    let add = u64::from_ne_bytes(e.try_into().unwrap());
                    one(rt, d, world, me, rank, off, AtomicOp::FetchAdd(add))?
                }
                Some(e) => {
                    let mut f = |cur: u64| {
                        let mut b = cur.to_ne_bytes();
                        crate::op::apply(&o, dt, 1, e, &mut b);
                        u64::from_ne_bytes(b)
                    };
                    cas_loop(rt, d, world, me, (rank, off), &mut f)?
                }
            };
            if result.is_some() {
                old.extend_from_slice(&v.to_ne_bytes());
            }
            pos += 8;
        }
    }
    if let Some(r) = result {
        // SAFETY: the result buffer has room for the message (the MPI call's contract).
        unsafe { r.write(0, &old) };
    }
    Ok(())
}

/// MPI_Compare_and_swap of one 8-byte element at window offset `off` of `rank`.
#[allow(clippy::too_many_arguments)]
pub fn compare_and_swap(
    rt: &mut Runtime,
    d: &Rdma,
    world: &[usize],
    me: i32,
    origin: &Msg,
    compare: &Msg,
    result: &Msg,
    rank: i32,
    off: i64,
) -> Result<()> {
    let (mut new, mut cmp) = ([0u8; 8], [0u8; 8]);
    // SAFETY: both buffers hold one element (the MPI call's contract).
    unsafe {
        origin.read(0, &mut new);
        compare.read(0, &mut cmp);
    }
    let op = AtomicOp::CmpSwap {
        compare: u64::from_ne_bytes(cmp),
        swap: u64::from_ne_bytes(new),
    };
    let old = one(rt, d, world, me, rank, off, op)?;
    // SAFETY: the result buffer holds one element.
    unsafe { result.write(0, &old.to_ne_bytes()) };
    Ok(())
}
