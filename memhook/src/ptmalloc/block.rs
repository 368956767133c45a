//! Macro-blocks: 2 MiB, 2 MiB-aligned, a header in the first 4 KiB (coloured, see
//! [`Block::at`]). A small block holds objects of one size class for one thread's heap; a huge
//! block holds one large allocation. The header of any pointer p we handed out is at
//! `Block::at((p - 1) & !(BLOCK - 1))`: objects never start at a block's first byte (they follow
//! the header), and huge allocations put their header at most 2 MiB below p.

use std::sync::atomic::{AtomicPtr, Ordering};

use super::heap::Heap;

pub const BLOCK: usize = 2 << 20;
pub const HEADER: usize = 128;
/// How many cache-line offsets headers take (in the first KiB). 16 sets hold the headers of
/// every class a thread uses hot; 64 (the first 4 KiB) pushed a block's first objects past its
/// first page more often: a class with a few live objects then held two pages, not one
/// (glibc-thread's anonymous memory 884 -> 784 KiB, espresso's 1312 -> 1244, no test slower).
pub const COLOURS: usize = 16;

/// Room before a huge allocation's user data for its coloured header (room for 64 colours).
pub const HUGE_HEADER: usize = 64 * 64 + HEADER;
const _: () = assert!(COLOURS <= 64 && COLOURS.is_power_of_two());
pub const MAGIC_SMALL: usize = 0x6d68_736d_616c_6c31; // "mhsmall1"
pub const MAGIC_HUGE: usize = 0x6d68_6875_6765_3131; // "mhhuge11"
/// A huge block's `owner`: no heap's address and not null, so free's fast-path test
/// (owner == this thread's heap) sends huge blocks to the slow path without reading `magic`.
pub const HUGE_OWNER: *mut Heap = std::ptr::dangling_mut::<Heap>();

/// Size classes: 8 bytes (what malloc(1..=8) needs, 8-aligned: no object that small needs
/// more, as jemalloc's and tcmalloc's smallest class), then 16-byte steps to 128, then four per
/// doubling up to MAX_SMALL. Every class from 16 up is a multiple of 16, so its objects are
/// 16-aligned (blocks' first objects are 64-aligned).
pub const MAX_SMALL: usize = 256 << 10;
pub const NCLASSES: usize = 1 + 8 + 4 * 11;
pub const CLASS_SIZE: [usize; NCLASSES] = class_sizes();

const fn class_sizes() -> [usize; NCLASSES] {
    let mut t = [0usize; NCLASSES];
    t[0] = 8;
    let mut i = 1;
    while i < 9 {
        t[i] = 16 * i;
        i += 1;
    }
    let mut base = 128;
    while i < NCLASSES {
        let step = base / 4;
        let mut k = 1;
        while k <= 4 {
            t[i] = base + k * step;
            i += 1;
            k += 1;
        }
        base *= 2;
    }
    t
}

/// Sizes up to this are classed by one table lookup (malloc's common case: no bit scan).
const TABLE_MAX: usize = 1024;
static CLASS_TABLE: [u8; TABLE_MAX / 8 + 1] = class_table();

const fn class_table() -> [u8; TABLE_MAX / 8 + 1] {
    let mut t = [0u8; TABLE_MAX / 8 + 1];
    let mut i = 0;
    while i < t.len() {
        t[i] = class_by_log(i * 8) as u8;
        i += 1;
    }
    t
}

/// The smallest class holding `size` bytes (size <= MAX_SMALL).
#[inline(always)]
pub fn class_of(size: usize) -> usize {
    if size <= TABLE_MAX {
        // Every size in ((i-1)*8, i*8] has i*8's class: classes up to 1 KiB are 8-multiples.
        return CLASS_TABLE[size.div_ceil(8)] as usize;
    }
    class_by_log(size)
}

/// `class_of` by arithmetic, for sizes above the table (and to build it).
const fn class_by_log(size: usize) -> usize {
    if size <= 8 {
        return 0;
    }
    if size <= 128 {
        return 1 + (size - 1) / 16;
    }
    // Four classes per doubling above 128: the power of two below size-1, then its quarter.
    let s = size - 1;
    let e = usize::BITS as usize - 1 - s.leading_zeros() as usize; // >= 7
    9 + (e - 7) * 4 + ((s - (1 << e)) >> (e - 2))
}

/// Offsets in a block are below 2^21 and classes at most 2^18 bytes: with m = ceil(2^39 / d),
/// floor(x * m / 2^39) = floor(x / d) exactly (the error x * (m - 2^39/d) / 2^39 < 2^-18 <= 1/d),
/// and x * m < 2^21 * 2^35 fits in 64 bits.
const RECIP_SHIFT: u32 = 39;

#[inline(always)]
fn div_by_recip(x: usize, recip: usize) -> usize {
    (x * recip) >> RECIP_SHIFT
}

pub struct FreeObj {
    pub next: *mut FreeObj,
}

/// Two cache lines (headers are 64-byte aligned): the first is written once, when the block is
/// set up, and read by every free, remote ones included; the second is the owner thread's.
/// Remote freers reading a line the owner keeps writing would bounce it between cores on every
/// free (xmalloc-testN).
#[repr(C)]
pub struct Block {
    // Read-mostly.
    pub magic: usize,
    pub class: usize,
    pub obj_size: usize,
    /// The heap whose thread allocates from this block; read by freeing threads.
    pub owner: AtomicPtr<Heap>,
    /// ceil(2^RECIP_SHIFT / obj_size): offset / obj_size as a multiply and shift (obj_start).
    pub recip: usize,
    pub capacity: u32,
    /// The NUMA node whose source the block came from and goes back to (numa.rs).
    pub node: u32,
    /// memalign handed out a pointer inside an object of this block: free must find the
    /// object's start. Without it (the common case) a freed pointer is its object's start.
    /// Set by the owner thread only, before that object can be freed.
    pub interior: bool,
    // Huge blocks: the whole mapping.
    pub map_base: usize,
    // Owner-thread state.
    pub free: *mut FreeObj,
    pub used: usize,
    pub bump: u32,
    pub listed: bool,
    pub next: *mut Block,
    pub prev: *mut Block,
    pub map_len: usize,
}

const _: () = assert!(std::mem::size_of::<Block>() <= HEADER);
const _: () = assert!(std::mem::offset_of!(Block, map_base) + 8 <= 64);
const _: () = assert!(std::mem::offset_of!(Block, free) == 64);

impl Block {
    /// The header of the block holding `p`, a pointer this allocator handed out.
    #[inline]
    pub fn of(p: usize) -> *mut Block {
        Block::at((p - 1) & !(BLOCK - 1))
    }

    /// The header of the block starting at `base`. Headers are coloured: at one of [`COLOURS`]
    /// cache-line offsets chosen by the block's address, so that the headers of a thread's
    /// blocks (read on every malloc and free) do not all fall in the same cache set, as 2
    /// MiB-aligned addresses would.
    #[inline]
    pub fn at(base: usize) -> *mut Block {
        (base + ((base / BLOCK) & (COLOURS - 1)) * 64) as *mut Block
    }

    /// The block (its first byte) whose header is `b`.
    #[inline]
    pub fn base(b: *const Block) -> usize {
        b as usize & !(BLOCK - 1)
    }

    /// # Safety
    /// `b` is a fresh or returned 2 MiB block nobody else uses.
    pub unsafe fn init_small(b: *mut Block, class: usize, owner: *mut Heap, node: usize) {
        let obj_size = CLASS_SIZE[class];
        // SAFETY: the caller gives us the block's header.
        unsafe {
            b.write(Block {
                magic: MAGIC_SMALL,
                class,
                obj_size,
                capacity: ((Block::base(b) + BLOCK - (b as usize + HEADER)) / obj_size) as u32,
                recip: (1usize << RECIP_SHIFT).div_ceil(obj_size),
                owner: AtomicPtr::new(owner),
                free: std::ptr::null_mut(),
                bump: 0,
                used: 0,
                next: std::ptr::null_mut(),
                prev: std::ptr::null_mut(),
                listed: false,
                interior: false,
                node: node as u32,
                map_base: 0,
                map_len: 0,
            })
        };
    }

    /// Bytes from the block's start its objects may have touched: its bump pointer's reach.
    pub fn touched(&self) -> usize {
        self.first() + self.bump as usize * self.obj_size - Block::base(self)
    }

    #[inline]
    pub fn first(&self) -> usize {
        self as *const Block as usize + HEADER
    }

    /// The start of the object holding `p` (an aligned allocation may point inside it).
    /// A multiply, not a division (a `div` costs free 20-40 cycles).
    #[inline]
    pub fn obj_start(&self, p: usize) -> usize {
        let first = self.first();
        first + div_by_recip(p - first, self.recip) * self.obj_size
    }

    /// The object a freed pointer `p` belongs to: `p` itself unless memalign pointed inside
    /// objects of this block.
    #[inline(always)]
    pub fn obj_of(&self, p: usize) -> usize {
        if self.interior {
            self.obj_start(p)
        } else {
            p
        }
    }

    /// An object from the free list, if it has one. Owner thread only.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<*mut u8> {
        let o = self.free;
        if o.is_null() {
            return None;
        }
        // SAFETY: free-list entries are objects of this block holding a FreeObj.
        self.free = unsafe { (*o).next };
        self.used += 1;
        Some(o.cast::<u8>())
    }

    /// An object never handed out yet, if the block has one. Owner thread only.
    #[inline(always)]
    pub fn bump_take(&mut self) -> Option<*mut u8> {
        if self.bump >= self.capacity {
            return None;
        }
        let o = self.first() + self.bump as usize * self.obj_size;
        self.bump += 1;
        self.used += 1;
        Some(o as *mut u8)
    }

    /// An object, if the block has one free. Owner thread only.
    #[inline]
    pub fn take(&mut self) -> Option<*mut u8> {
        self.pop().or_else(|| self.bump_take())
    }

    /// Puts an object back. Owner thread only.
    #[inline]
    pub fn give(&mut self, obj: usize) {
        let o = obj as *mut FreeObj;
        // SAFETY: `obj` is a dead object of this block, at least 8 bytes (one word), ours to link.
        unsafe { (*o).next = self.free };
        self.free = o;
        self.used -= 1;
    }

    pub fn owner(&self) -> *mut Heap {
        self.owner.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_table_agrees_with_the_arithmetic() {
        for size in 0..=TABLE_MAX + 64 {
            assert_eq!(class_of(size), class_by_log(size), "{size}");
        }
    }

    #[test]
    fn reciprocal_division_is_exact_for_every_class_and_offset() {
        for &d in CLASS_SIZE.iter() {
            let m = (1usize << RECIP_SHIFT).div_ceil(d);
            // Every quotient's boundary (where an error would show) across a whole block.
            let mut x = 0;
            while x < BLOCK {
                for y in [x, x + d - 1] {
                    assert_eq!(div_by_recip(y, m), y / d, "{y} / {d}");
                }
                x += d;
            }
        }
    }

    #[test]
    fn classes_are_increasing_and_cover_every_size() {
        assert!(CLASS_SIZE.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(CLASS_SIZE[NCLASSES - 1], MAX_SMALL);
        for size in (0..=MAX_SMALL)
            .step_by(7)
            .chain([0, 1, 16, 17, 128, 129, MAX_SMALL])
        {
            let c = class_of(size);
            assert!(CLASS_SIZE[c] >= size, "{size} in class {c}");
            assert!(
                c == 0 || CLASS_SIZE[c - 1] < size,
                "{size} not in the smallest class"
            );
            assert!(CLASS_SIZE[c].is_multiple_of(16) || (c == 0 && size <= 8));
        }
    }
}
