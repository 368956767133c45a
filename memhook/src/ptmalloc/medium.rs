//! Medium objects (the classes from 4 KiB to `MAX_SMALL`): runs of 1 KiB units in a thread's
//! medium blocks, first fit over a bitmap, shared by every medium class.
//!
//! Why not a block per class, as small objects have: a block keeps the pages its class ever
//! touched, so a program whose medium objects change size as it runs holds the sum of every
//! class's peak, where a shared area holds the peak of their sum (mimalloc-bench's espresso:
//! 738 against 350 KiB of medium objects; glibc's best fit shares them too). An object of 4 KiB
//! or more is written by its user anyway, so a bitmap search costs little beside it.
//!
//! A medium block is a small block (`MAGIC_SMALL`, so remote frees take the small path and come
//! back through the owner's queue) with `medium` set; its [`Meta`] follows the header.

use super::block::{Block, BLOCK, CLASS_SIZE, HEADER};
use super::heap::Heap;

/// Every medium class is a multiple of this.
pub const UNIT: usize = 1024;
const UNITS: usize = BLOCK / UNIT;
const WORDS: usize = UNITS / 64;
/// The first medium class: 4 KiB, a page (smaller objects share pages anyway).
pub const FIRST_CLASS: usize = 28;
const _: () = assert!(CLASS_SIZE[FIRST_CLASS] == 4096);

/// Owner-thread state of a medium block.
#[repr(C)]
struct Meta {
    /// One bit per unit: in use, or reserved (the header and this).
    map: [u64; WORDS],
    /// At a run's first unit its length in units, 0 elsewhere: free walks an interior pointer
    /// (memalign's) back to its run.
    len: [u16; UNITS],
    free_units: u32,
    /// The end of the highest run ever given (units): how far the block's pages were touched.
    high: u32,
}

/// Units before the first run: the coloured header (at most 63 lines in) and [`Meta`].
const RESERVED: usize = (63 * 64 + HEADER + std::mem::size_of::<Meta>()).div_ceil(UNIT);

fn meta(b: *const Block) -> *mut Meta {
    (b as usize + HEADER) as *mut Meta
}

/// Sets up `b` (a fresh or returned block nobody else uses) as a medium block of `owner`'s.
///
/// # Safety
/// As `Block::init_small`.
pub unsafe fn init(b: *mut Block, owner: *mut Heap, node: usize) {
    // SAFETY: the caller's contract; Meta lies inside the block, after the header.
    unsafe {
        Block::init_small(b, FIRST_CLASS, owner, node);
        (*b).medium = true;
        let m = meta(b);
        std::ptr::write_bytes(m, 0, 1);
        set(&mut (*m).map, 0, RESERVED, true);
        (*m).free_units = (UNITS - RESERVED) as u32;
        (*m).high = RESERVED as u32;
    }
}

/// How many units an object of medium class `c` takes.
pub fn units_of(c: usize) -> usize {
    CLASS_SIZE[c] / UNIT
}

/// A run of `n` units of `b`, if it has one free (the lowest: first fit keeps the footprint
/// low). Owner thread only.
///
/// # Safety
/// `b` is a medium block of the calling thread's heap.
pub unsafe fn take(b: *mut Block, n: usize) -> Option<*mut u8> {
    // SAFETY: the caller's contract: the owner's state.
    let m = unsafe { &mut *meta(b) };
    if (m.free_units as usize) < n {
        return None;
    }
    let s = find(&m.map, n)?;
    set(&mut m.map, s, n, true);
    m.len[s] = n as u16;
    m.free_units -= n as u32;
    m.high = m.high.max((s + n) as u32);
    // SAFETY: as above.
    unsafe { (*b).used += 1 };
    Some((Block::base(b) + s * UNIT) as *mut u8)
}

/// Frees the run holding `p`; how many objects the block has left. Owner thread only.
///
/// # Safety
/// `b` is a medium block of the calling thread's heap (or of the dead heap it tends), `p`
/// points into a live run of it.
pub unsafe fn give(b: *mut Block, p: usize) -> usize {
    // SAFETY: the caller's contract.
    let m = unsafe { &mut *meta(b) };
    let s = start(m, Block::base(b), p);
    let n = m.len[s] as usize;
    m.len[s] = 0;
    set(&mut m.map, s, n, false);
    m.free_units += n as u32;
    // SAFETY: as above.
    unsafe {
        (*b).used -= 1;
        (*b).used
    }
}

/// Bytes of the run holding `p` from `p` on (malloc_usable_size).
///
/// # Safety
/// `p` points into a live run of the medium block `b`.
pub unsafe fn usable(b: *const Block, p: usize) -> usize {
    let base = Block::base(b);
    // SAFETY: the caller's contract; `len` of a live run is only written by its owner before
    // the run is handed out, and read here by the run's user.
    let m = unsafe { &*meta(b) };
    let s = start(m, base, p);
    base + (s + m.len[s] as usize) * UNIT - p
}

/// Grows the run holding `p` in place so that `size` bytes from `p` fit, if the units after it
/// are free. Owner thread only.
///
/// # Safety
/// `b` is a medium block of the calling thread's heap; `p` points into a live run of it.
pub unsafe fn grow(b: *mut Block, p: usize, size: usize) -> bool {
    // SAFETY: the caller's contract: the owner's state.
    let m = unsafe { &mut *meta(b) };
    let base = Block::base(b);
    let s = start(m, base, p);
    let have = m.len[s] as usize;
    let n = (p + size - (base + s * UNIT)).div_ceil(UNIT);
    if n <= have || s + n > UNITS || next(&m.map, s + have, true) < s + n {
        return false;
    }
    set(&mut m.map, s + have, n - have, true);
    m.len[s] = n as u16;
    m.free_units -= (n - have) as u32;
    m.high = m.high.max((s + n) as u32);
    true
}

/// Bytes of the run holding `p` (its object's class size).
///
/// # Safety
/// As [`usable`].
pub unsafe fn run_bytes(b: *const Block, p: usize) -> usize {
    // SAFETY: as in usable.
    let m = unsafe { &*meta(b) };
    m.len[start(m, Block::base(b), p)] as usize * UNIT
}

/// Bytes from the block's start its runs may have touched.
pub fn touched(b: &Block) -> usize {
    // SAFETY: a medium block's Meta follows its header.
    unsafe { (*meta(b)).high as usize * UNIT }
}

/// The first unit of the run holding `p`.
fn start(m: &Meta, base: usize, p: usize) -> usize {
    let mut u = (p - base) / UNIT;
    while m.len[u] == 0 {
        debug_assert!(u > RESERVED, "free() of a medium pointer in no live run");
        u -= 1;
    }
    u
}

/// The first unit at or after `from` whose bit is `one` (UNITS if none).
fn next(map: &[u64; WORDS], from: usize, one: bool) -> usize {
    if from >= UNITS {
        return UNITS;
    }
    let flip = if one { 0 } else { !0u64 };
    let mut w = from / 64;
    let mut x = (map[w] ^ flip) & (!0u64 << (from % 64));
    loop {
        if x != 0 {
            return w * 64 + x.trailing_zeros() as usize;
        }
        w += 1;
        if w == WORDS {
            return UNITS;
        }
        x = map[w] ^ flip;
    }
}

/// The lowest run of `n` free units.
fn find(map: &[u64; WORDS], n: usize) -> Option<usize> {
    let mut s = next(map, RESERVED, false);
    while s < UNITS {
        let e = next(map, s, true);
        if e - s >= n {
            return Some(s);
        }
        s = next(map, e, false);
    }
    None
}

/// Marks units `s .. s + n` used (`on`) or free.
fn set(map: &mut [u64; WORDS], s: usize, n: usize, on: bool) {
    let (mut u, end) = (s, s + n);
    while u < end {
        let (w, lo) = (u / 64, u % 64);
        let k = (end - u).min(64 - lo);
        let mask = if k == 64 { !0 } else { ((1u64 << k) - 1) << lo };
        if on {
            map[w] |= mask;
        } else {
            map[w] &= !mask;
        }
        u += k;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_medium_class_is_whole_units() {
        for &c in &CLASS_SIZE[FIRST_CLASS..] {
            assert!(c.is_multiple_of(UNIT), "{c}");
        }
        assert!(units_of(CLASS_SIZE.len() - 1) <= u16::MAX as usize);
    }

    #[test]
    fn runs_are_found_first_fit_and_freed_exactly() {
        let mut map = [0u64; WORDS];
        set(&mut map, 0, RESERVED, true);
        assert_eq!(find(&map, 4), Some(RESERVED));
        // Runs that straddle words, then holes of several sizes.
        set(&mut map, RESERVED, 70, true);
        assert_eq!(find(&map, 1), Some(RESERVED + 70));
        set(&mut map, RESERVED + 70, 200, true);
        set(&mut map, RESERVED + 10, 5, false); // a hole of 5
        set(&mut map, RESERVED + 100, 64, false); // a hole of 64 across a word boundary
        assert_eq!(find(&map, 5), Some(RESERVED + 10));
        assert_eq!(find(&map, 6), Some(RESERVED + 100));
        assert_eq!(find(&map, 64), Some(RESERVED + 100));
        assert_eq!(find(&map, 65), Some(RESERVED + 270));
        assert_eq!(find(&map, UNITS - RESERVED - 270 + 1), None);
        assert_eq!(find(&map, UNITS - RESERVED - 270), Some(RESERVED + 270));
        set(&mut map, RESERVED + 270, UNITS - RESERVED - 270, true);
        assert_eq!(next(&map, 0, false), RESERVED + 10);
        assert_eq!(find(&map, 65), None);
        assert_eq!(
            map.iter().map(|w| w.count_ones() as usize).sum::<usize>(),
            UNITS - 69
        );
    }
}
