//! Direct access (`osc_direct=auto`): RMA without the target's help, for windows whose every
//! member is on this node and reached by the sm transport.
//!
//! - Memory the library allocates (`MPI_Win_allocate`, `MPI_Win_allocate_shared`) lies in one
//!   memfd every member maps (`Access::Mapped`): put and get are a memcpy into or out of the
//!   target's part, packed or unpacked through the origin datatype.
//! - User memory (`MPI_Win_create`) is reached with CMA (`Access::Cma`: process_vm_readv/writev),
//!   when every member could read every other's window at creation; else the window keeps the
//!   message path.
//!
//! The decision is the window's, taken at creation by all members alike: every operation of a
//! direct window takes this path, so direct and message-based accumulates never meet.
//!
//! Atomicity: each target has an accumulate lock (a reader-writer word in the control region).
//! On mapped memory an accumulate of at most 64 elements of 1, 2, 4 or 8 bytes, aligned, holds
//! it shared and updates each element with a compare-and-swap loop (any predefined op, applied
//! to a copy of the element); compare-and-swap is the processor's, also held shared. Everything
//! else (larger accumulates, other sizes, the MINLOC/MAXLOC pairs, misaligned elements, every
//! CMA window) holds it exclusively and applies the op in bulk (in place where it can). So
//! element-atomic updates run concurrently with each other and never with a bulk one: every
//! accumulate is atomic per element, as MPI requires.
//!
//! Synchronisation: every operation is complete when its call returns, so flush is a memory
//! barrier, fence is a barrier plus memory barriers, and passive-target locks are a
//! reader-writer word per rank in the control region (a target computing outside MPI delays
//! nobody). PSCW keeps its POST/COMPLETE markers (sync.rs).

use std::sync::atomic::{fence, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

use super::shm::Segment;
use super::{allgather, Window};
use crate::datatype::{Datatype, Msg};
use crate::error::{ErrorClass, Result};
use crate::op::Op;
use crate::runtime::Runtime;

/// Bytes of the control region per member: the lock word (u64) then the accumulate lock (u32),
/// on a line pair of their own (adjacent-line prefetch never pairs two ranks' words).
pub const CTL_LINE: usize = 128;
const EXCL: u64 = 1 << 63;

/// How this process reaches the members' window memory.
pub enum Access {
    /// Each member's part at this address in this process.
    Mapped(Vec<usize>),
    /// Each member's (pid, window base) for CMA; this process's own part by memcpy.
    Cma {
        pids: Vec<i32>,
        bases: Vec<usize>,
        me: usize,
    },
}

pub struct Direct {
    pub access: Access,
    /// The control region: `CTL_LINE` bytes per member, in a mapping the window keeps.
    ctl: usize,
    /// The control region's own segment (Win_create); with allocated memory it follows the
    /// data in the window's segment.
    _ctl_seg: Option<Segment>,
}

/// Whether `osc_direct` allows the direct path (`auto`, the default) or not (`off`).
pub fn wanted() -> bool {
    !matches!(
        std::env::var("RMPI_MCA_osc_direct")
            .ok()
            .as_deref()
            .map(str::trim),
        Some("off" | "0" | "false")
    )
}

/// Whether every member of `comm` is on this node and reached through sm (or is this rank).
/// The same answer at every member: btl selection is job-wide uniform.
pub fn eligible(rt: &Runtime, comm: usize) -> bool {
    let Ok(c) = rt.comm(comm) else {
        return false;
    };
    wanted()
        && c.group.iter().all(|&w| {
            rt.objs.local_ranks.contains(&w)
                && matches!(rt.pml.btl_name_of(w as usize), Some("sm" | "self"))
        })
}

/// A zeroed memfd segment of `len` bytes that every member of `comm` maps (created by rank 0,
/// opened by the others through /proc or pidfd_getfd), or None at every member if any member
/// says `!ok` or cannot map it.
/// Called outside the runtime (its exchanges wait as `allgather` does).
pub fn segment(comm: usize, len: usize, ok: bool) -> Result<Option<Segment>> {
    let first = crate::runtime::with(|rt| Ok(rt.comm(comm)?.rank == 0))?;
    let created = if first && ok {
        Segment::create(len).ok()
    } else {
        None
    };
    let fd = created
        .as_ref()
        .map_or(u64::MAX, |s| std::os::fd::AsRawFd::as_raw_fd(&s.fd) as u64);
    let words = allgather(comm, &[std::process::id() as u64, fd, ok as u64])?;
    if words[0][1] == u64::MAX || words.iter().any(|w| w[2] == 0) {
        return Ok(None);
    }
    let seg = match created {
        Some(s) => Some(s),
        None => Segment::attach(words[0][0] as i32, words[0][1] as i32, len).ok(),
    };
    // Everyone mapped it before rank 0 may drop its descriptor (or anyone gives up).
    let oks = allgather(comm, &[seg.is_some() as u64])?;
    if oks.iter().any(|w| w[0] == 0) {
        return Ok(None);
    }
    Ok(seg)
}

impl Direct {
    /// Direct access to mapped parts, the control region at `ctl` (in a mapping the window
    /// keeps alive).
    pub fn mapped(bases: Vec<usize>, ctl: usize) -> Direct {
        Direct {
            access: Access::Mapped(bases),
            ctl,
            _ctl_seg: None,
        }
    }

    fn acc_word(&self, rank: i32) -> &AtomicU32 {
        // SAFETY: the control region has CTL_LINE bytes per member, 128-aligned (page-aligned
        // segment, line-multiple offset), mapped while the window (and so `self`) lives.
        unsafe { &*((self.ctl + rank as usize * CTL_LINE + 8) as *const AtomicU32) }
    }
}

/// Direct access to user memory by CMA, if every member can read every other's window here
/// (tried now) and CMA is not turned off; None at every member otherwise.
pub fn cma(
    comm: usize,
    me: usize,
    pids: Vec<i32>,
    bases: Vec<usize>,
    sizes: &[usize],
) -> Result<Option<Direct>> {
    let single_copy_off = std::env::var("RMPI_MCA_btl_sm_single_copy")
        .is_ok_and(|v| v.trim() == "none" || v.trim() == "0");
    let mut ok = !single_copy_off;
    for r in 0..pids.len() {
        if !ok || r == me || sizes[r] == 0 {
            continue;
        }
        let mut b = [0u8; 1];
        ok = btl_sm::cma::read(pids[r], bases[r], &mut b).is_ok();
    }
    let n = pids.len();
    let Some(seg) = segment(comm, n * CTL_LINE, ok)? else {
        return Ok(None);
    };
    Ok(Some(Direct {
        access: Access::Cma { pids, bases, me },
        ctl: seg.base as usize,
        _ctl_seg: Some(seg),
    }))
}

fn cma_err(e: std::io::Error, what: &str, rank: i32) -> crate::error::Error {
    crate::error::Error::new(
        ErrorClass::Other,
        format!("one-sided {what} of rank {rank}'s window by CMA failed: {e}"),
    )
}

/// Where target offset `off` of `rank` is: an address in this process, or in the target's
/// (reached by CMA: `cma_blocks`).
enum At {
    Here(usize),
    There,
}

fn at(d: &Direct, rank: i32, off: i64) -> At {
    let r = rank as usize;
    match &d.access {
        Access::Mapped(b) => At::Here((b[r] as i64).wrapping_add(off) as usize),
        Access::Cma { bases, me, .. } if r == *me => {
            At::Here((bases[r] as i64).wrapping_add(off) as usize)
        }
        Access::Cma { .. } => At::There,
    }
}

/// Remote iovecs per process_vm_readv/writev call (the kernel's UIO_MAXIOV).
const IOV_MAX: usize = 1024;

/// Move the packed bytes `local` to or from the blocks at `base + off` in process `pid`
/// (`write`: process_vm_writev), up to IOV_MAX blocks per system call; a partial transfer
/// (a fault) goes on from where it stopped, and none at all is an error.
fn cma_blocks(
    pid: i32,
    base: usize,
    blocks: &[(i64, u64)],
    local: *mut u8,
    write: bool,
) -> std::io::Result<()> {
    let (mut bi, mut boff, mut pos) = (0usize, 0usize, 0usize);
    let mut remote: Vec<libc::iovec> = Vec::with_capacity(IOV_MAX.min(blocks.len()));
    while bi < blocks.len() {
        remote.clear();
        let mut want = 0usize;
        let (mut i, mut o) = (bi, boff);
        while i < blocks.len() && remote.len() < IOV_MAX {
            let (off, len) = blocks[i];
            let a = (base as i64).wrapping_add(off) as usize + o;
            let n = len as usize - o;
            if n > 0 {
                remote.push(libc::iovec {
                    iov_base: a as *mut libc::c_void,
                    iov_len: n,
                });
                want += n;
            }
            i += 1;
            o = 0;
        }
        if want == 0 {
            return Ok(());
        }
        let l = libc::iovec {
            iov_base: local.wrapping_add(pos).cast(),
            iov_len: want,
        };
        // SAFETY: `local` has room for (or holds) every packed byte of the blocks, of which
        // this call moves `want` from `pos`; the remote addresses are only touched by the
        // kernel, which checks them against the target's mappings.
        let r = unsafe {
            if write {
                libc::process_vm_writev(pid, &l, 1, remote.as_ptr(), remote.len() as _, 0)
            } else {
                libc::process_vm_readv(pid, &l, 1, remote.as_ptr(), remote.len() as _, 0)
            }
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EFAULT));
        }
        // Advance over the `r` bytes moved.
        let mut left = r as usize;
        pos += left;
        while left > 0 {
            let rest = blocks[bi].1 as usize - boff;
            if left >= rest {
                left -= rest;
                bi += 1;
                boff = 0;
            } else {
                boff += left;
                left = 0;
            }
        }
        while bi < blocks.len() && blocks[bi].1 as usize == boff {
            bi += 1;
            boff = 0;
        }
    }
    Ok(())
}

/// The target blocks' bytes, packed.
fn gather(d: &Direct, rank: i32, blocks: &[(i64, u64)], total: usize) -> Result<Vec<u8>> {
    let mut v = vec![0u8; total];
    if let Access::Cma { pids, bases, me } = &d.access {
        if rank as usize != *me {
            let r = rank as usize;
            cma_blocks(pids[r], bases[r], blocks, v.as_mut_ptr(), false)
                .map_err(|e| cma_err(e, "read", rank))?;
            return Ok(v);
        }
    }
    let mut pos = 0;
    for &(off, len) in blocks {
        let len = len as usize;
        let At::Here(a) = at(d, rank, off) else {
            unreachable!("this process's memory")
        };
        // SAFETY: the origin checked the block inside the target's window, which its owner
        // keeps mapped (and valid) while the window lives.
        unsafe { std::ptr::copy_nonoverlapping(a as *const u8, v[pos..].as_mut_ptr(), len) };
        pos += len;
    }
    Ok(v)
}

/// Packed bytes over the target blocks.
fn scatter(d: &Direct, rank: i32, blocks: &[(i64, u64)], data: &[u8]) -> Result<()> {
    if let Access::Cma { pids, bases, me } = &d.access {
        if rank as usize != *me {
            let r = rank as usize;
            // The kernel only reads `data` for a write.
            return cma_blocks(pids[r], bases[r], blocks, data.as_ptr().cast_mut(), true)
                .map_err(|e| cma_err(e, "write", rank));
        }
    }
    let mut pos = 0;
    for &(off, len) in blocks {
        let len = len as usize;
        let At::Here(a) = at(d, rank, off) else {
            unreachable!("this process's memory")
        };
        // SAFETY: as in `gather`; MPI makes conflicting accesses in one epoch erroneous.
        unsafe { std::ptr::copy_nonoverlapping(data[pos..].as_ptr(), a as *mut u8, len) };
        pos += len;
    }
    Ok(())
}

/// The message's bytes: in place when contiguous, else packed into `scratch` (allocated
/// zeroed at once: `Msg::slice`'s resize fills byte by byte, which costs in a debug build).
///
/// # Safety
/// As `Msg::read`: the message's buffer is readable.
pub(super) unsafe fn packed<'a>(m: &'a Msg, scratch: &'a mut Vec<u8>) -> &'a [u8] {
    if m.is_contiguous() {
        // SAFETY: forwarded contract.
        return unsafe { m.slice(0, m.len, scratch) };
    }
    *scratch = vec![0u8; m.len];
    // SAFETY: forwarded contract.
    unsafe { m.read(0, scratch) };
    scratch
}

/// MPI_Put: the origin's packed bytes into the target blocks.
pub fn put(d: &Direct, origin: &Msg, rank: i32, blocks: &[(i64, u64)]) -> Result<()> {
    if let Access::Mapped(_) = d.access {
        // Straight from the origin's layout into the target's: no packing buffer.
        let mut pos = 0;
        for &(off, len) in blocks {
            let At::Here(a) = at(d, rank, off) else {
                unreachable!("mapped")
            };
            // SAFETY: the block lies in the target's mapped part (checked by the origin);
            // the origin buffer holds `origin.len` bytes (the MPI call's contract).
            unsafe {
                origin.read(
                    pos,
                    std::slice::from_raw_parts_mut(a as *mut u8, len as usize),
                )
            };
            pos += len as usize;
        }
        return Ok(());
    }
    let mut scratch = Vec::new();
    // SAFETY: the origin buffer holds the message (the MPI call's contract).
    let data = unsafe { packed(origin, &mut scratch) };
    scatter(d, rank, blocks, data)
}

/// MPI_Get: the target blocks into the origin buffer.
pub fn get(d: &Direct, origin: &Msg, rank: i32, blocks: &[(i64, u64)]) -> Result<()> {
    if let Access::Mapped(_) = d.access {
        let mut pos = 0;
        for &(off, len) in blocks {
            let At::Here(a) = at(d, rank, off) else {
                unreachable!("mapped")
            };
            // SAFETY: as in `put`, the other direction.
            unsafe {
                origin.write(
                    pos,
                    std::slice::from_raw_parts(a as *const u8, len as usize),
                )
            };
            pos += len as usize;
        }
        return Ok(());
    }
    let v = gather(d, rank, blocks, origin.len)?;
    // SAFETY: the origin buffer has room for the message (the MPI call's contract).
    unsafe { origin.write(0, &v) };
    Ok(())
}

/// Atomic read-modify-write of the `size`-byte element at `addr`: `f` turns a copy of the old
/// bytes into the new ones; returns the old bytes.
///
/// # Safety
/// `addr` is aligned to `size` (1, 2, 4 or 8) and lies in memory mapped while the call runs.
unsafe fn rmw(addr: usize, size: usize, f: &mut dyn FnMut(&mut [u8])) -> [u8; 8] {
    macro_rules! cas_loop {
        ($at:ty, $t:ty, $n:expr) => {{
            // SAFETY: the caller's contract: aligned, mapped.
            let a = unsafe { &*(addr as *const $at) };
            let mut cur = a.load(Ordering::Acquire);
            loop {
                let mut b = cur.to_ne_bytes();
                f(&mut b);
                let new = <$t>::from_ne_bytes(b);
                if new == cur {
                    break;
                }
                match a.compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => break,
                    Err(x) => cur = x,
                }
            }
            let mut out = [0u8; 8];
            out[..$n].copy_from_slice(&cur.to_ne_bytes());
            out
        }};
    }
    match size {
        1 => cas_loop!(AtomicU8, u8, 1),
        2 => cas_loop!(AtomicU16, u16, 2),
        4 => cas_loop!(AtomicU32, u32, 4),
        _ => cas_loop!(AtomicU64, u64, 8),
    }
}

/// Whether the blocks are whole, aligned elements of `size` bytes in mapped memory: the
/// element-wise atomic route.
fn atomic_route(d: &Direct, rank: i32, blocks: &[(i64, u64)], size: usize) -> bool {
    matches!(d.access, Access::Mapped(_))
        && matches!(size, 1 | 2 | 4 | 8)
        && blocks.iter().all(|&(off, len)| {
            matches!(at(d, rank, off), At::Here(a) if a % size == 0) && len % size as u64 == 0
        })
}

/// Accumulate lock word: exclusive holder, a writer waiting (new shared holders back off so a
/// stream of them cannot starve it), and the count of shared holders below.
const ACC_EXCL: u32 = 1 << 31;
const ACC_WAIT: u32 = 1 << 30;

/// Accumulates of at most this many elements on the atomic route update element by element
/// (holding the lock shared); larger ones apply the op in bulk holding it exclusively.
const ATOMIC_MAX_ELEMS: usize = 64;

fn spin(spins: &mut u32) {
    // The holder runs a short copy; yield if it was descheduled.
    *spins += 1;
    if spins.is_multiple_of(256) {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// Hold `rank`'s accumulate lock while `f` runs: exclusively for a bulk update, or shared by
/// updates that are atomic per element anyway (they exclude only the bulk ones).
fn with_acc_lock<R>(d: &Direct, rank: i32, exclusive: bool, f: impl FnOnce() -> R) -> R {
    let w = d.acc_word(rank);
    let mut spins = 0u32;
    loop {
        let v = w.load(Ordering::Relaxed);
        if exclusive {
            if v & !ACC_WAIT == 0 {
                if w.compare_exchange_weak(v, ACC_EXCL, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    break;
                }
                continue;
            }
            if v & ACC_WAIT == 0 {
                w.fetch_or(ACC_WAIT, Ordering::Relaxed);
            }
        } else if v & (ACC_EXCL | ACC_WAIT) == 0 {
            if w.compare_exchange_weak(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                break;
            }
            continue;
        }
        spin(&mut spins);
    }
    let r = f();
    if exclusive {
        // Clears a waiting writer's bit too: it sets it again if it still has to wait.
        w.store(0, Ordering::Release);
    } else {
        w.fetch_sub(1, Ordering::Release);
    }
    r
}

/// Whether the blocks are whole elements of `dt` in mapped memory: the op can be applied in
/// place, without a gather and scatter.
fn in_place(d: &Direct, blocks: &[(i64, u64)], dt: Datatype) -> bool {
    matches!(d.access, Access::Mapped(_))
        && super::target::pair_shape(dt.handle).is_none()
        && blocks.iter().all(|b| b.1 % dt.size as u64 == 0)
}

/// MPI_Accumulate / MPI_Get_accumulate (`result`: the old bytes, packed) with predefined
/// `op` over basic type `dt`; `origin` is None for MPI_NO_OP.
#[allow(clippy::too_many_arguments)]
pub fn accumulate(
    d: &Direct,
    origin: Option<&Msg>,
    result: Option<&Msg>,
    rank: i32,
    blocks: &[(i64, u64)],
    total: usize,
    op: usize,
    dt: Datatype,
) -> Result<()> {
    let op: Op = crate::op::lookup(op)?;
    let mut scratch = Vec::new();
    let data: &[u8] = match origin {
        // SAFETY: the origin buffer holds the message (the MPI call's contract).
        Some(m) => unsafe { packed(m, &mut scratch) },
        None => &[],
    };
    let size = dt.size;
    if size == 0 {
        return Ok(());
    }
    let atomic = super::target::pair_shape(dt.handle).is_none()
        && total / size <= ATOMIC_MAX_ELEMS
        && atomic_route(d, rank, blocks, size);
    if atomic {
        let mut old = Vec::with_capacity(if result.is_some() { total } else { 0 });
        with_acc_lock(d, rank, false, || {
            let mut pos = 0;
            for &(off, len) in blocks {
                let At::Here(base) = at(d, rank, off) else {
                    unreachable!("mapped")
                };
                for i in 0..len as usize / size {
                    let elem = data.get(pos..pos + size);
                    let mut f = |b: &mut [u8]| {
                        if let Some(e) = elem {
                            crate::op::apply(&op, dt, 1, e, &mut b[..size]);
                        }
                    };
                    // SAFETY: `atomic_route` checked alignment; the element lies in the
                    // target's mapped part (checked by the origin).
                    let o = unsafe { rmw(base + i * size, size, &mut f) };
                    if result.is_some() {
                        old.extend_from_slice(&o[..size]);
                    }
                    pos += size;
                }
            }
        });
        if let Some(r) = result {
            // SAFETY: the result buffer has room for the message (the MPI call's contract).
            unsafe { r.write(0, &old) };
        }
        return Ok(());
    }
    let old = with_acc_lock(d, rank, true, || -> Result<Vec<u8>> {
        if result.is_none() && origin.is_some() && in_place(d, blocks, dt) {
            // Straight on the target's memory: no copy.
            let mut pos = 0;
            for &(off, len) in blocks {
                let At::Here(a) = at(d, rank, off) else {
                    unreachable!("mapped")
                };
                let len = len as usize;
                // SAFETY: the block lies in the target's mapped part (checked by the origin);
                // the exclusive accumulate lock keeps other accumulates off it.
                let t = unsafe { std::slice::from_raw_parts_mut(a as *mut u8, len) };
                crate::op::apply(&op, dt, len / size, &data[pos..pos + len], t);
                pos += len;
            }
            return Ok(Vec::new());
        }
        let mut cur = gather(d, rank, blocks, total)?;
        let old = if result.is_some() {
            cur.clone()
        } else {
            Vec::new()
        };
        if origin.is_some() {
            super::target::combine(&op, dt, data, &mut cur);
            scatter(d, rank, blocks, &cur)?;
        }
        Ok(old)
    })?;
    if let Some(r) = result {
        // SAFETY: as above.
        unsafe { r.write(0, &old) };
    }
    Ok(())
}

/// MPI_Compare_and_swap of one element (`total` bytes): the old value into `result`.
pub fn compare_and_swap(
    d: &Direct,
    origin: &Msg,
    compare: &Msg,
    result: &Msg,
    rank: i32,
    blocks: &[(i64, u64)],
    total: usize,
) -> Result<()> {
    let mut new = vec![0u8; total];
    let mut cmp = vec![0u8; total];
    // SAFETY: both buffers hold one element (the MPI call's contract).
    unsafe {
        origin.read(0, &mut new);
        compare.read(0, &mut cmp);
    }
    let old = if blocks.len() == 1 && atomic_route(d, rank, blocks, total) {
        let At::Here(a) = at(d, rank, blocks[0].0) else {
            unreachable!("mapped")
        };
        let mut f = |b: &mut [u8]| {
            if b[..total] == cmp[..] {
                b[..total].copy_from_slice(&new);
            }
        };
        // SAFETY: aligned and mapped (`atomic_route`).
        let o = with_acc_lock(d, rank, false, || unsafe { rmw(a, total, &mut f) });
        o[..total].to_vec()
    } else {
        with_acc_lock(d, rank, true, || -> Result<Vec<u8>> {
            let cur = gather(d, rank, blocks, total)?;
            if cur == cmp {
                scatter(d, rank, blocks, &new)?;
            }
            Ok(cur)
        })?
    };
    // SAFETY: the result buffer holds one element.
    unsafe { result.write(0, &old) };
    Ok(())
}

/// The control words of window `id`'s direct access (None: the message path).
fn ctl_of(id: usize) -> Result<Option<(usize, usize)>> {
    super::with_win(id, |w: &mut Window| {
        Ok(w.direct.as_ref().map(|d| (d.ctl, w.world.len())))
    })
}

fn lock_at(ctl: usize, rank: i32) -> &'static AtomicU64 {
    // SAFETY: the control region's line of `rank` (see `Direct::acc_word`); the caller holds no reference past the window's life
    // (used only inside one synchronisation call on a live window).
    unsafe { &*((ctl + rank as usize * CTL_LINE) as *const AtomicU64) }
}

fn try_lock(word: &AtomicU64, exclusive: bool) -> bool {
    if exclusive {
        return word
            .compare_exchange(0, EXCL, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
    }
    let v = word.load(Ordering::Relaxed);
    v & EXCL == 0
        && word
            .compare_exchange(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
}

/// Passive-target lock of `ranks` in the control region (progressing while it waits, so
/// this rank's own PSCW and message traffic go on; the holder releases it in its own unlock
/// call, so the C ABI waits outside the runtime). Ok(false): not a direct window.
pub fn lock(
    w: &mut impl crate::comm_agree::Waiter,
    id: usize,
    exclusive: bool,
    ranks: &[i32],
) -> Result<bool> {
    let Some((ctl, _)) = ctl_of(id)? else {
        return Ok(false);
    };
    for &r in ranks {
        let word = lock_at(ctl, r);
        w.wait_until(|_| Ok(try_lock(word, exclusive)))?;
    }
    fence(Ordering::SeqCst);
    Ok(true)
}

/// Release locks taken by `lock`; `held` says how each was taken. Ok(false): not direct.
pub fn unlock(id: usize, ranks: &[(i32, bool)]) -> Result<bool> {
    let Some((ctl, _)) = ctl_of(id)? else {
        return Ok(false);
    };
    // Our stores and copies reach the target before anyone else can take the lock.
    fence(Ordering::SeqCst);
    for &(r, exclusive) in ranks {
        let word = lock_at(ctl, r);
        if exclusive {
            word.fetch_and(!EXCL, Ordering::Release);
        } else {
            word.fetch_sub(1, Ordering::Release);
        }
    }
    Ok(true)
}

/// Whether window `id` uses direct access.
pub fn is_direct(id: usize) -> Result<bool> {
    Ok(ctl_of(id)?.is_some())
}
