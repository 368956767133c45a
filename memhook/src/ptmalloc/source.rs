//! The memory source (seed 002): where macro-blocks and huge allocations come from, and the one
//! place that decides whether freed memory goes back to the OS. Events fire only here, when it
//! does. The policy knob covers seed 001's "never give memory back": no events at all, at the
//! cost of keeping the process's peak footprint (reported by [`stats`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::block::{Block, BLOCK, HUGE_HEADER, HUGE_OWNER, MAGIC_HUGE};
use super::numa::{self, MAX_NODES};
use super::pressure;
use super::shared;
use super::spin::Spin;
use super::trace::{self, kind, HUGE};
use crate::events::{notify, Source};
use crate::sys;

/// When freed memory is returned to the OS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Keep up to `keep_blocks` free macro-blocks, and as many bytes of freed huge mappings,
    /// for reuse; unmap the rest. Each unmap is an event. `keep_blocks: 0` returns everything.
    Release { keep_blocks: usize },
    /// Never return memory (seed 001): no events, footprint stays at its peak.
    Retain,
}

pub const DEFAULT_KEEP_BLOCKS: usize = 16;

// 0: not read yet; 1: release; 2: retain.
static POLICY: AtomicUsize = AtomicUsize::new(0);
static KEEP: AtomicUsize = AtomicUsize::new(DEFAULT_KEEP_BLOCKS);

/// Sets the policy; applies to memory freed from now on.
pub fn set_policy(p: Policy) {
    match p {
        Policy::Release { keep_blocks } => {
            KEEP.store(keep_blocks, Ordering::Relaxed);
            POLICY.store(1, Ordering::Relaxed);
        }
        Policy::Retain => POLICY.store(2, Ordering::Relaxed),
    }
}

/// The policy: set_policy's, else `MEMHOOK_PTMALLOC_POLICY` / `RMPI_MCA_memhook_ptmalloc_policy`
/// (`release` or `retain`), else release.
pub fn policy() -> Policy {
    let mut v = POLICY.load(Ordering::Relaxed);
    if v == 0 {
        v = if env_is(c"MEMHOOK_PTMALLOC_POLICY", b"retain")
            || env_is(c"RMPI_MCA_memhook_ptmalloc_policy", b"retain")
        {
            2
        } else {
            1
        };
        POLICY.store(v, Ordering::Relaxed);
    }
    if v == 2 {
        Policy::Retain
    } else {
        Policy::Release {
            keep_blocks: KEEP.load(Ordering::Relaxed),
        }
    }
}

fn env_is(name: &std::ffi::CStr, want: &[u8]) -> bool {
    // SAFETY: getenv reads the environment without allocating; the name is NUL-terminated.
    let p = unsafe { libc::getenv(name.as_ptr()) };
    // SAFETY: a non-null getenv result is a NUL-terminated string.
    !p.is_null() && unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes() == want
}

/// What the source holds, for the policy's cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes mapped from the OS now.
    pub mapped: usize,
    /// The most ever mapped at once.
    pub peak_mapped: usize,
    /// Of `mapped`, bytes free and kept by the source (not in any allocation or heap).
    pub held_free: usize,
    /// Bytes given back to the OS so far (each time an event).
    pub released: u64,
}

static MAPPED: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static HELD: AtomicUsize = AtomicUsize::new(0);
static RELEASED: AtomicU64 = AtomicU64::new(0);
/// Bytes of huge allocations' mappings now live (for the keep budget).
static HUGE_LIVE: AtomicUsize = AtomicUsize::new(0);

/// Bytes of freed huge mappings the source may keep for reuse: under `Release`, `keep_blocks`
/// blocks' worth or half of what huge allocations hold now, whichever is more (a program
/// cycling large buffers keeps a few of them, so the next one costs no mmap, munmap or page
/// faults; one that stops using them gives most back); nothing with `keep_blocks: 0`.
fn huge_budget() -> usize {
    match policy() {
        Policy::Retain => usize::MAX,
        Policy::Release { keep_blocks: 0 } => 0,
        Policy::Release { .. } if pressed() => 0,
        Policy::Release { keep_blocks } => keep_blocks
            .saturating_mul(BLOCK)
            .max(HUGE_LIVE.load(Ordering::Relaxed) / 2),
    }
}

pub fn stats() -> Stats {
    Stats {
        mapped: MAPPED.load(Ordering::Relaxed),
        peak_mapped: PEAK.load(Ordering::Relaxed),
        held_free: HELD.load(Ordering::Relaxed),
        released: RELEASED.load(Ordering::Relaxed),
    }
}

/// Freed large mappings the source keeps.
struct Cache {
    huge: *mut Block,
    huge_bytes: usize,
}

// SAFETY: the raw pointers are only followed under the spinlock.
unsafe impl Send for Cache {}

static CACHE: Spin<Cache> = Spin::new(Cache {
    huge: std::ptr::null_mut(),
    huge_bytes: 0,
});

/// Free macro-blocks a node's source keeps (numa.rs; one machine node: only `KEPT[0]`).
struct Kept {
    blocks: *mut Block,
    nblocks: usize,
}

// SAFETY: the raw pointers are only followed under the spinlock.
unsafe impl Send for Kept {}

static KEPT: [Spin<Kept>; MAX_NODES] = [const {
    Spin::new(Kept {
        blocks: std::ptr::null_mut(),
        nblocks: 0,
    })
}; MAX_NODES];

/// What one node's source did with macro-blocks (counts of blocks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Mapped fresh from the OS for a heap on this node.
    pub fresh: u64,
    /// Handed to a heap from the blocks the node keeps.
    pub reused: u64,
    /// Given back to this node (their home) by whichever thread emptied them: kept or unmapped.
    pub returned: u64,
    /// Kept by the node now.
    pub kept: usize,
}

struct NodeCounters {
    fresh: AtomicU64,
    reused: AtomicU64,
    returned: AtomicU64,
}

static NODE_COUNTERS: [NodeCounters; MAX_NODES] = [const {
    NodeCounters {
        fresh: AtomicU64::new(0),
        reused: AtomicU64::new(0),
        returned: AtomicU64::new(0),
    }
}; MAX_NODES];

/// Node `node`'s macro-block counters (all zero past [`numa_nodes`]).
pub fn node_stats(node: usize) -> NodeStats {
    let Some(c) = NODE_COUNTERS.get(node) else {
        return NodeStats::default();
    };
    NodeStats {
        fresh: c.fresh.load(Ordering::Relaxed),
        reused: c.reused.load(Ordering::Relaxed),
        returned: c.returned.load(Ordering::Relaxed),
        kept: KEPT[node].lock(|k| k.nblocks),
    }
}

/// How many NUMA nodes the source keeps macro-blocks for: the machine's (from sysfs, up to
/// 16), or `MEMHOOK_PTMALLOC_NUMA_FAKE`'s; 1 when placement is off.
pub fn numa_nodes() -> usize {
    numa::nodes()
}

/// Maps `len` bytes (a multiple of the page size) at a BLOCK-aligned address.
fn map_aligned(len: usize) -> Option<usize> {
    // SAFETY: a fresh anonymous mapping.
    let p = unsafe { sys::mmap_anon(len + BLOCK) };
    if p == libc::MAP_FAILED {
        return None;
    }
    let p = p as usize;
    let start = p.next_multiple_of(BLOCK);
    // Trim the slack on both sides: never handed out, so no event.
    // SAFETY: both pieces are parts of the mapping just made, outside [start, start+len).
    unsafe {
        if start > p {
            sys::munmap(p as *mut libc::c_void, start - p);
        }
        let end = start + len;
        let map_end = p + len + BLOCK;
        if map_end > end {
            sys::munmap(end as *mut libc::c_void, map_end - end);
        }
    }
    let now = MAPPED.fetch_add(len, Ordering::Relaxed) + len;
    PEAK.fetch_max(now, Ordering::Relaxed);
    Some(start)
}

/// Gives a range back to the OS, telling subscribers first.
fn unmap(addr: usize, len: usize) {
    notify(Source::Allocator, addr, len);
    // SAFETY: the range is a whole mapping (or block) of ours that nothing uses any more.
    unsafe { sys::munmap(addr as *mut libc::c_void, len) };
    MAPPED.fetch_sub(len, Ordering::Relaxed);
    RELEASED.fetch_add(len as u64, Ordering::Relaxed);
}

/// Under pressure (pressure.rs): true, and whatever the source keeps goes back to the OS now.
fn pressed() -> bool {
    if !pressure::under_pressure(MAPPED.load(Ordering::Relaxed)) {
        return false;
    }
    if HELD.load(Ordering::Relaxed) > 0 {
        trim();
    }
    true
}

/// Gives back every kept macro-block (of every node) and private large mapping.
fn trim() {
    let mut huge = CACHE.lock(|c| {
        let taken = c.huge;
        c.huge = std::ptr::null_mut();
        c.huge_bytes = 0;
        taken
    });
    pressure::TRIMS.fetch_add(1, Ordering::Relaxed);
    for kept in &KEPT {
        let mut blocks = kept.lock(|k| {
            k.nblocks = 0;
            std::mem::replace(&mut k.blocks, std::ptr::null_mut())
        });
        while !blocks.is_null() {
            // SAFETY: kept blocks are ours, linked through their headers; nobody else sees
            // them now.
            let next = unsafe { (*blocks).next };
            HELD.fetch_sub(BLOCK, Ordering::Relaxed);
            unmap(Block::base(blocks), BLOCK);
            blocks = next;
        }
    }
    while !huge.is_null() {
        // SAFETY: as above, for kept large mappings (their list entry at their base).
        let (next, base, len) = unsafe { ((*huge).next, (*huge).map_base, (*huge).map_len) };
        HELD.fetch_sub(len, Ordering::Relaxed);
        trace::rec(kind::HUGE_PUT, HUGE, 0, base, 0, 1);
        unmap(base, len);
        huge = next;
    }
}

/// A macro-block for a heap on NUMA node `node` (numa::current), and whether it is fresh from
/// the OS. Only that node's kept blocks are taken: a block kept by another node has its pages
/// there.
pub fn get_block(node: usize) -> Option<(*mut Block, bool)> {
    if let Some(b) = take_kept(node) {
        return Some((b, false));
    }
    let node = node.min(MAX_NODES - 1);
    let a = map_aligned(BLOCK)?;
    numa::bind(a, BLOCK, node);
    NODE_COUNTERS[node].fresh.fetch_add(1, Ordering::Relaxed);
    Some((Block::at(a), true))
}

/// A block node `node`'s source keeps, if it keeps one (no fresh mapping).
pub fn take_kept(node: usize) -> Option<*mut Block> {
    let node = node.min(MAX_NODES - 1);
    let cached = KEPT[node].lock(|k| {
        let b = k.blocks;
        if !b.is_null() {
            // SAFETY: kept blocks are ours, linked through their headers.
            k.blocks = unsafe { (*b).next };
            k.nblocks -= 1;
        }
        b
    });
    if cached.is_null() {
        return None;
    }
    HELD.fetch_sub(BLOCK, Ordering::Relaxed);
    NODE_COUNTERS[node].reused.fetch_add(1, Ordering::Relaxed);
    Some(cached)
}

/// A heap's empty block comes back to its home node's source (from its header, whoever frees
/// it): kept or unmapped, as the policy says (`keep_blocks` per node).
pub fn put_block(b: *mut Block) {
    put_block_warm(b, KEEP_WARM);
}

/// `put_block` for a block whose pages beyond its first `warm` bytes are not worth keeping
/// resident if it is kept ([`KEEP_WARM`] for an ordinary return).
pub fn put_block_warm(b: *mut Block, warm: usize) {
    let keep = match policy() {
        Policy::Retain => usize::MAX,
        Policy::Release { .. } if pressed() => 0,
        Policy::Release { keep_blocks } => keep_blocks,
    };
    // SAFETY: the block is ours and empty; its header is intact.
    let node = (unsafe { (*b).node } as usize).min(MAX_NODES - 1);
    NODE_COUNTERS[node].returned.fetch_add(1, Ordering::Relaxed);
    if keep > 0 && keep != usize::MAX && KEPT[node].lock(|k| k.nblocks < keep) {
        // Likely kept: first give its cold pages back (the block is still ours alone).
        cool(b, warm);
    }
    let kept = KEPT[node].lock(|k| {
        if k.nblocks < keep {
            // SAFETY: the block is ours and empty; its header links it.
            unsafe { (*b).next = k.blocks };
            k.blocks = b;
            k.nblocks += 1;
            true
        } else {
            false
        }
    });
    if trace::on() {
        // SAFETY: the block's header is intact until it is reused or unmapped.
        let (class, owner) = unsafe { ((*b).class, (*b).owner()) };
        trace::rec(
            kind::BLOCK_PUT,
            class as u16,
            owner as usize,
            b as usize,
            !kept as usize,
            0,
        );
    }
    if kept {
        HELD.fetch_add(BLOCK, Ordering::Relaxed);
    } else {
        unmap(Block::base(b), BLOCK);
    }
}

/// How much of a kept macro-block stays resident: its header and first objects.
pub const KEEP_WARM: usize = 64 << 10;

/// A block about to be kept (under `Release`): the pages its last use touched beyond
/// [`KEEP_WARM`] go back to the OS (`MADV_DONTNEED`; the mapping stays, so reusing the block
/// costs no mmap, only the faults of the pages its next class touches). Without this a kept
/// block holds on to whatever its last class touched, up to 2 MiB for one object of a large
/// class, in the process's footprint (mimalloc-bench's mstressN: 16.9 MiB against glibc's 11).
fn cool(b: *mut Block, warm: usize) {
    debug_assert!(warm.is_multiple_of(4096) && warm > 0);
    let base = Block::base(b);
    // SAFETY: the block is ours and empty; its header is intact.
    let touched = unsafe { (*b).touched() };
    if touched <= warm {
        return;
    }
    // Page-aligned: blocks are, and so is `warm`; the rounding stays inside the block.
    let (from, len) = (
        base + warm,
        (touched.min(BLOCK) - warm).next_multiple_of(4096),
    );
    notify(Source::Allocator, from, len);
    // SAFETY: pages of our own block that nothing uses; the mapping stays.
    let r = unsafe { sys::madvise(from as *mut libc::c_void, len, libc::MADV_DONTNEED) };
    // A refusal (none is expected for our own private pages) only leaves them resident: the
    // block is still fine to reuse, and the event above costs a subscriber a spurious
    // invalidation at most. Count only what went back.
    if r == 0 {
        RELEASED.fetch_add(len as u64, Ordering::Relaxed);
    }
}

/// A huge allocation of `size` bytes aligned to `align` (a power of two). Returns the pointer
/// and whether its memory is fresh from the OS (already zero).
pub fn huge_alloc(size: usize, align: usize) -> Option<(*mut u8, bool)> {
    trace::init();
    let r = huge_alloc_inner(size, align);
    if let Some((p, fresh)) = r {
        if trace::on() {
            // SAFETY: the header of the allocation just made.
            let (base, len) = unsafe {
                (
                    (*Block::of(p as usize)).map_base,
                    (*Block::of(p as usize)).map_len,
                )
            };
            trace::rec(kind::HUGE_GET, HUGE, 0, base, len, fresh as usize);
        }
    }
    r
}

fn huge_alloc_inner(size: usize, align: usize) -> Option<(*mut u8, bool)> {
    let align = align.max(16);
    // The user pointer sits `off` bytes after the header's block boundary (0 < off <= BLOCK).
    let (off, lead) = if align >= BLOCK {
        (BLOCK, align - BLOCK) // header one block below an align-aligned pointer
    } else {
        (HUGE_HEADER.next_multiple_of(align), 0)
    };
    let len = (lead + off).checked_add(size)?.checked_add(4095)? & !4095;
    if len > isize::MAX as usize {
        return None;
    }
    if align <= BLOCK {
        // The node-shared range first: peers read it by memcpy, and a freed block stays there,
        // pages and all, for the next one.
        if let Some((base, ml, dirty)) = shared::take(len) {
            let now = MAPPED.fetch_add(ml - dirty, Ordering::Relaxed) + ml - dirty;
            PEAK.fetch_max(now, Ordering::Relaxed);
            HELD.fetch_sub(dirty, Ordering::Relaxed);
            HUGE_LIVE.fetch_add(ml, Ordering::Relaxed);
            return Some((
                huge_init(base + lead, base, ml, base + lead + off),
                dirty == 0,
            ));
        }
        if let Some((base, ml)) = huge_from_cache(len) {
            HUGE_LIVE.fetch_add(ml, Ordering::Relaxed);
            return Some((huge_init(base + lead, base, ml, base + lead + off), false));
        }
    }
    let base = if align > BLOCK {
        // Over-map so that an align-aligned address follows a block for the header.
        let a = map_aligned(len + align)?;
        let user = (a + BLOCK).next_multiple_of(align);
        // The mapping is [a, a+len+align); keep it whole, bookkeeping covers it all.
        HUGE_LIVE.fetch_add(len + align, Ordering::Relaxed);
        return Some((huge_init(user - BLOCK, a, len + align, user), true));
    } else {
        map_aligned(len)?
    };
    HUGE_LIVE.fetch_add(len, Ordering::Relaxed);
    Some((huge_init(base + lead, base, len, base + lead + off), true))
}

fn huge_init(hdr: usize, map_base: usize, map_len: usize, user: usize) -> *mut u8 {
    let b = Block::at(hdr);
    // SAFETY: `hdr` is a block boundary inside a mapping just made (or reused) for this
    // allocation; the header is ours.
    unsafe {
        (*b).magic = MAGIC_HUGE;
        (*b).owner = std::sync::atomic::AtomicPtr::new(HUGE_OWNER);
        (*b).map_base = map_base;
        (*b).map_len = map_len;
        (*b).next = std::ptr::null_mut();
    }
    user as *mut u8
}

/// A kept huge mapping of at least `len` bytes, as (base, length): the smallest kept one that is
/// big enough (its tail beyond `2 * len` given back), else the biggest, grown (in place, or moved by mremap
/// into a fresh aligned range: its pages move, nothing is copied). Returns its base.
fn huge_from_cache(len: usize) -> Option<(usize, usize)> {
    let found = CACHE.lock(|c| {
        let mut best: *mut *mut Block = std::ptr::null_mut();
        let mut link: *mut *mut Block = &mut c.huge;
        // SAFETY: the list holds headers of kept huge mappings, linked through `next`.
        unsafe {
            while !(*link).is_null() {
                let ml = (**link).map_len;
                let better = best.is_null() || {
                    let bl = (**best).map_len;
                    if bl >= len {
                        ml >= len && ml < bl
                    } else {
                        ml > bl
                    }
                };
                if better {
                    best = link;
                }
                link = &mut (**link).next;
            }
            if best.is_null() {
                return (std::ptr::null_mut(), 0);
            }
            let b = *best;
            *best = (*b).next;
            c.huge_bytes -= (*b).map_len;
            (b, c.huge_bytes)
        }
    });
    let (found, still_kept) = found;
    if found.is_null() {
        return None;
    }
    // SAFETY: a kept mapping's header.
    let (base, ml) = unsafe { ((*found).map_base, (*found).map_len) };
    HELD.fetch_sub(ml, Ordering::Relaxed);
    if ml >= len {
        // Slack stays with the allocation (its pages are likely to be wanted again by the
        // next, bigger one) up to the size itself, or more while it fits in what the keep
        // budget leaves: trimming a 25 MiB block to a 6 MiB request's 12 made malloc-large's
        // next big buffers fault their pages in again (719 k faults against glibc's 510 k).
        if ml > 2 * len && ml - len > huge_budget().saturating_sub(still_kept) {
            unmap(base + 2 * len, ml - 2 * len);
            return Some((base, 2 * len));
        }
        return Some((base, ml));
    }
    let grown = resize(base, ml, len);
    if grown.is_none() {
        unmap(base, ml);
    }
    grown.map(|b| (b, len))
}

/// Grows the private mapping `[base, base + ml)` to `len` bytes, keeping its contents and a
/// BLOCK-aligned base: in place when the address space after it is free, else moved (pages and
/// all) into a fresh aligned range; the old range is then gone (an event). None: unchanged.
fn resize(base: usize, ml: usize, len: usize) -> Option<usize> {
    // SAFETY: growing our own whole mapping without moving it; nothing else maps there.
    let r = unsafe { sys::mremap(base as *mut libc::c_void, ml, len, 0, std::ptr::null_mut()) };
    if r as usize == base {
        let now = MAPPED.fetch_add(len - ml, Ordering::Relaxed) + len - ml;
        PEAK.fetch_max(now, Ordering::Relaxed);
        return Some(base);
    }
    let to = map_aligned(len)?;
    notify(Source::Allocator, base, ml);
    // SAFETY: moves our whole mapping over the first `ml` bytes of the fresh range `to` (ours,
    // unused); MREMAP_FIXED replaces what was there.
    let r = unsafe {
        sys::mremap(
            base as *mut libc::c_void,
            ml,
            ml,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            to as *mut libc::c_void,
        )
    };
    if r as usize != to {
        // Not moved: the fresh range stays ours, the old one is still there.
        unmap(to, len);
        return None;
    }
    MAPPED.fetch_sub(ml, Ordering::Relaxed);
    Some(to)
}

/// realloc of a huge allocation to `size` bytes without copying: its private mapping grown in
/// place or moved. Returns the new user pointer, or None (the caller copies).
pub fn huge_grow(b: *mut Block, p: *mut u8, size: usize) -> Option<*mut u8> {
    // SAFETY: `b` is the header of the live huge allocation holding `p`.
    let (base, ml) = unsafe { ((*b).map_base, (*b).map_len) };
    if Block::base(b) != base || shared::contains(base) {
        return None; // over-aligned, or in the shared range: copied
    }
    let off = p as usize - base;
    let len = off.checked_add(size)?.checked_add(4095)? & !4095;
    let nb = resize(base, ml, len)?;
    HUGE_LIVE.fetch_add(len - ml, Ordering::Relaxed);
    trace::rec(kind::HUGE_PUT, HUGE, 0, base, ml, 2);
    trace::rec(kind::HUGE_GET, HUGE, 0, nb, len, 2);
    // The header moved with the pages; rewritten at its colour for the new address (the user
    // data starts past every colour's header).
    Some(huge_init(nb, nb, len, nb + off))
}

/// Frees a huge allocation whose header is `b`: kept for reuse while the policy allows,
/// else unmapped.
pub fn huge_free(b: *mut Block) {
    // SAFETY: `b` is the header of a live huge allocation being freed.
    let (base, len) = unsafe { ((*b).map_base, (*b).map_len) };
    HUGE_LIVE.fetch_sub(len, Ordering::Relaxed);
    let budget = huge_budget();
    if shared::contains(base) {
        if shared::detached() {
            // A forked child's private copy: an ordinary mapping now.
            trace::rec(kind::HUGE_PUT, HUGE, 0, base, len, 1);
            unmap(base, len);
        } else if shared::held().saturating_add(len) <= budget {
            trace::rec(kind::HUGE_PUT, HUGE, 0, base, len, 0);
            shared::give(base, len, true);
            HELD.fetch_add(len, Ordering::Relaxed);
        } else {
            trace::rec(kind::HUGE_PUT, HUGE, 0, base, len, 1);
            notify(Source::Allocator, base, len);
            shared::give(base, len, false);
            MAPPED.fetch_sub(len, Ordering::Relaxed);
            RELEASED.fetch_add(len as u64, Ordering::Relaxed);
        }
        return;
    }
    let h = base as *mut Block;
    let kept = CACHE.lock(|c| {
        if c.huge_bytes.saturating_add(len) > budget {
            return false;
        }
        // SAFETY: the mapping's first bytes become the cache entry's header (its user data is
        // dead); `base` is block-aligned for every mapping made by map_aligned.
        unsafe {
            h.write(std::mem::zeroed());
            (*h).magic = MAGIC_HUGE;
            (*h).map_base = base;
            (*h).map_len = len;
            (*h).next = c.huge;
        }
        c.huge = h;
        c.huge_bytes += len;
        true
    });
    trace::rec(kind::HUGE_PUT, HUGE, 0, base, len, !kept as usize);
    if kept {
        HELD.fetch_add(len, Ordering::Relaxed);
    } else {
        unmap(base, len);
    }
}

/// fork's prepare handler (fork.rs): the caches are consistent in the child.
pub(super) fn fork_lock() {
    CACHE.acquire();
    KEPT.iter().for_each(Spin::acquire);
}

/// fork's parent and child handlers.
pub(super) fn fork_unlock() {
    KEPT.iter().for_each(Spin::release);
    CACHE.release();
}
