//! Span blocks: the size classes of [`SPAN_MIN_SIZE`] bytes and more share a heap's span
//! blocks, carved first-fit in [`GRANULE`]s, instead of each holding a block of its own.
//!
//! A class block keeps whatever its bump pointer reached: a program whose large objects come in
//! one size, then another (espresso: 14 classes of 4-56 KiB, each with a handful of live
//! objects at its peak) holds the sum of its classes' peaks, where glibc's coalescing heap holds
//! the peak of their sum (738 against 350 KiB in espresso). In a span block a freed object's
//! granules serve any class at once, and first fit keeps the reach low.
//!
//! Layout: the block's first page holds its header ([`Block`], coloured as every block's),
//! then [`Meta`]: a bitmap of granules in use and, for each granule where an object starts,
//! its class (0, the 8-byte class, is never a span class: no object starts there). Objects
//! start at the second page. The block's `bump` is its reach in granules, so that
//! [`Block::touched`] (what the source cools when the block goes back) covers it, `capacity`
//! counts its free granules (a quick filter before a search), and `used` its live objects, as
//! in a class block.
//!
//! Only the owner heap's thread (or the tender of a dead heap) touches a span block's state;
//! other threads' frees reach it through the heap's remote queue, as for class blocks.

use super::block::{Block, BLOCK, CLASS_SIZE};
use super::heap::Heap;

/// Allocation unit of a span block. Every class from 4 KiB up is a multiple of it.
pub const GRANULE: usize = 1024;
const GRANULES: usize = BLOCK / GRANULE;
const WORDS: usize = GRANULES / 64;
/// Granules of the first page (header and [`Meta`]), never handed out.
const RESERVED: usize = 4096 / GRANULE;

/// The smallest size spans serve: below it objects are smaller than a page and share pages
/// within their class block anyway.
pub const SPAN_MIN_SIZE: usize = 4096;
/// The first class spans serve.
pub const SPAN_MIN_CLASS: usize = class_of_const(SPAN_MIN_SIZE);
/// How many classes spans serve.
pub const NSPAN: usize = CLASS_SIZE.len() - SPAN_MIN_CLASS;

/// `Block::class` of a span block (no size class has this index; the spy's records use it).
pub const SPAN: usize = super::trace::SPAN as usize;

const fn class_of_const(size: usize) -> usize {
    let mut c = 0;
    while CLASS_SIZE[c] < size {
        c += 1;
    }
    c
}

const _: () = {
    let mut c = SPAN_MIN_CLASS;
    while c < CLASS_SIZE.len() {
        assert!(CLASS_SIZE[c].is_multiple_of(GRANULE));
        assert!(CLASS_SIZE[c] / GRANULE <= GRANULES - RESERVED);
        c += 1;
    }
    assert!(CLASS_SIZE[SPAN_MIN_CLASS] == SPAN_MIN_SIZE);
    assert!(CLASS_SIZE.len() <= u8::MAX as usize);
};

/// A span block's bookkeeping, in its first page after the header.
#[repr(C)]
struct Meta {
    /// Bit g set: granule g is in use (the reserved first page counts as in use).
    used: [u64; WORDS],
    /// The class of the object starting at granule g; 0 where none starts.
    class_at: [u8; GRANULES],
}

/// Where `Meta` sits: past the last coloured header (16 colours of 64 bytes, then the 128-byte
/// header), still in the first page.
const META_OFFSET: usize = 16 * 64 + 128;
const _: () = assert!(META_OFFSET + std::mem::size_of::<Meta>() <= RESERVED * GRANULE);
const _: () = assert!(super::block::COLOURS * 64 + super::block::HEADER <= META_OFFSET);

#[inline]
fn meta(b: *const Block) -> *mut Meta {
    (Block::base(b) + META_OFFSET) as *mut Meta
}

/// Whether `b` is a span block.
#[inline(always)]
pub fn is_span(b: &Block) -> bool {
    b.class == SPAN
}

/// Whether class `c` is served by spans.
#[inline(always)]
pub fn serves(c: usize) -> bool {
    c >= SPAN_MIN_CLASS
}

/// Sets up `b`, a fresh or returned 2 MiB block nobody else uses, as an empty span block of
/// `owner` on NUMA node `node`.
///
/// # Safety
/// As [`Block::init_small`].
pub unsafe fn init(b: *mut Block, owner: *mut Heap, node: usize) {
    // SAFETY: the caller gives us the block; a class block's setup, then span fields over it.
    unsafe {
        Block::init_small(b, SPAN_MIN_CLASS, owner, node);
        (*b).class = SPAN;
        (*b).obj_size = GRANULE;
        (*b).capacity = (GRANULES - RESERVED) as u32;
        (*b).bump = RESERVED as u32;
        let m = meta(b);
        // A returned block's first page may hold an earlier span block's state.
        std::ptr::write_bytes(m, 0, 1);
        (*m).used[0] = (1u64 << RESERVED) - 1;
    }
}

/// An object of class `c` from span block `b`, if it has a run of free granules long enough.
///
/// # Safety
/// The owner heap's thread; `b` is its span block; `serves(c)`.
pub unsafe fn take(b: *mut Block, c: usize) -> Option<*mut u8> {
    let n = CLASS_SIZE[c] / GRANULE;
    // SAFETY: the caller's contract: the block and its metadata are this thread's.
    unsafe {
        if ((*b).capacity as usize) < n {
            return None;
        }
        let m = meta(b);
        let g = find_run(&(*m).used, n)?;
        set_bits(&mut (*m).used, g, n, true);
        (*m).class_at[g] = c as u8;
        (*b).capacity -= n as u32;
        (*b).used += 1;
        (*b).bump = (*b).bump.max((g + n) as u32);
        Some((Block::base(b) + g * GRANULE) as *mut u8)
    }
}

/// Frees the object of span block `b` that `p` points into (its start unless memalign pointed
/// inside). Returns the object's class and whether the block holds nothing live now.
///
/// # Safety
/// The owner heap's thread (or the tender); `p` a live object of `b`.
pub unsafe fn give(b: *mut Block, p: usize) -> (usize, bool) {
    // SAFETY: the caller's contract.
    unsafe {
        let m = meta(b);
        let g = start_granule(b, m, p);
        let c = (*m).class_at[g] as usize;
        debug_assert!(serves(c), "free of a span object whose start is unknown");
        let n = CLASS_SIZE[c] / GRANULE;
        set_bits(&mut (*m).used, g, n, false);
        (*m).class_at[g] = 0;
        (*b).capacity += n as u32;
        (*b).used -= 1;
        (c, (*b).used == 0)
    }
}

/// The start and class of the live object of span block `b` that `p` points into.
///
/// # Safety
/// `p` points into a live object of `b`. Any thread may ask: only the class bytes of that
/// object's granules are read, which do not change while it lives (the owner writes other
/// objects' bytes meanwhile, and no reference to the whole [`Meta`] is made).
pub unsafe fn object(b: *const Block, p: usize) -> (usize, usize) {
    // SAFETY: the caller's contract.
    unsafe {
        let m = meta(b);
        let g = start_granule(b, m, p);
        (Block::base(b) + g * GRANULE, (*m).class_at[g] as usize)
    }
}

/// The granule where the object holding `p` starts: `p`'s own, unless memalign handed out
/// pointers inside objects (`interior`), then the nearest start at or before it.
///
/// # Safety
/// As [`object`].
unsafe fn start_granule(b: *const Block, m: *const Meta, p: usize) -> usize {
    let mut g = (p - Block::base(b)) / GRANULE;
    // SAFETY: the caller's contract: `b`'s header and the object's class bytes are stable.
    unsafe {
        if (*b).interior {
            while (*m).class_at[g] == 0 {
                g -= 1;
            }
        }
    }
    g
}

/// The first run of `n` clear bits (first fit: the lowest, so a block's reach stays low).
fn find_run(bits: &[u64; WORDS], n: usize) -> Option<usize> {
    let (mut start, mut run) = (0, 0);
    for (w, &x) in bits.iter().enumerate() {
        if x == u64::MAX {
            run = 0;
            continue;
        }
        let mut i = 0;
        while i < 64 {
            let y = x >> i;
            // Clear bits from i on (up to the word's end).
            let free = if y == 0 {
                64 - i
            } else {
                y.trailing_zeros() as usize
            };
            if free > 0 {
                if run == 0 {
                    start = w * 64 + i;
                }
                run += free;
                if run >= n {
                    return Some(start);
                }
                i += free;
                if i >= 64 {
                    break;
                }
            }
            // Set bits from i on: the run breaks.
            run = 0;
            i += (!y).trailing_zeros() as usize;
        }
    }
    None
}

/// Sets (or clears) bits `g .. g + n`.
fn set_bits(bits: &mut [u64; WORDS], g: usize, n: usize, on: bool) {
    let (mut i, end) = (g, g + n);
    while i < end {
        let (w, b) = (i / 64, i % 64);
        let k = (64 - b).min(end - i);
        let mask = if k == 64 {
            u64::MAX
        } else {
            ((1u64 << k) - 1) << b
        };
        if on {
            debug_assert_eq!(bits[w] & mask, 0, "granules already in use");
            bits[w] |= mask;
        } else {
            debug_assert_eq!(bits[w] & mask, mask, "granules not in use");
            bits[w] &= !mask;
        }
        i += k;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits_from(used: &[(usize, usize)]) -> [u64; WORDS] {
        let mut b = [0u64; WORDS];
        for &(g, n) in used {
            set_bits(&mut b, g, n, true);
        }
        b
    }

    #[test]
    fn first_fit_finds_the_lowest_run() {
        let b = bits_from(&[(0, 4), (10, 3), (70, 60)]);
        assert_eq!(find_run(&b, 1), Some(4));
        assert_eq!(find_run(&b, 6), Some(4));
        assert_eq!(find_run(&b, 7), Some(13));
        assert_eq!(find_run(&b, 57), Some(13));
        assert_eq!(find_run(&b, 58), Some(130));
        let full = bits_from(&[(0, GRANULES)]);
        assert_eq!(find_run(&full, 1), None);
        let tail = bits_from(&[(0, GRANULES - 5)]);
        assert_eq!(find_run(&tail, 5), Some(GRANULES - 5));
        assert_eq!(find_run(&tail, 6), None);
    }

    #[test]
    fn runs_cross_words_and_bits_set_and_clear_exactly() {
        let mut b = bits_from(&[(0, 4)]);
        set_bits(&mut b, 60, 200, true);
        assert_eq!(b[0], 0xf | (0xf << 60));
        assert_eq!(b[1], u64::MAX);
        assert_eq!(b[2], u64::MAX);
        assert_eq!(b[3], u64::MAX);
        assert_eq!(b[4], 0xf);
        assert_eq!(find_run(&b, 56), Some(4));
        assert_eq!(find_run(&b, 57), Some(260));
        set_bits(&mut b, 60, 200, false);
        assert_eq!(b, bits_from(&[(0, 4)]));
    }

    /// Against a byte-per-granule model: random takes and frees of every span class.
    #[test]
    fn agrees_with_a_simple_model() {
        let mut b = bits_from(&[(0, RESERVED)]);
        let mut model = vec![false; GRANULES];
        model[..RESERVED].fill(true);
        let mut live: Vec<(usize, usize)> = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(3) && !live.is_empty() {
                let (g, n) = live.swap_remove((x >> 8) as usize % live.len());
                set_bits(&mut b, g, n, false);
                model[g..g + n].fill(false);
                continue;
            }
            let c = SPAN_MIN_CLASS + (x >> 20) as usize % (CLASS_SIZE.len() - SPAN_MIN_CLASS);
            let n = CLASS_SIZE[c] / GRANULE;
            let want = (0..=GRANULES - n).find(|&g| model[g..g + n].iter().all(|u| !u));
            assert_eq!(find_run(&b, n), want, "run of {n}");
            if let Some(g) = want {
                set_bits(&mut b, g, n, true);
                model[g..g + n].fill(true);
                live.push((g, n));
            }
        }
    }
}
