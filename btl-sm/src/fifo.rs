//! The O(n) path: one lock-free MPSC FIFO per receiver (a bounded Vyukov queue in shared memory)
//! and one pool of eager fragments per sender.
//!
//! FIFO cell (one line, at least 64 B):
//! ```text
//! +0  seq: u64    lap stamp (below); the publication point, Release/Acquire
//! +8  len: u32    fragment bytes
//! +12 src: u32    sending local rank
//! +16 frag: u32   index in the sender's pool, or NO_FRAG when the bytes are inline
//! +20 tag: u8
//! +24 40 bytes of inline payload
//! ```
//! Cell `i` of a queue of `size` cells stores `seq - i` for Vyukov's per-cell sequence `seq`, so a
//! zeroed queue is a valid empty one: position `p` (in lap `L = p / size`) is free for a sender
//! when the cell holds `L * size`, full for the receiver when it holds `L * size + 1`, and the
//! receiver frees it by storing `(L + 1) * size`. Positions are u64 and never wrap in practice.
//!
//! Senders claim a position by CAS on the receiver's head word, fill the cell, then publish the
//! stamp; the receiver alone advances through the cells in order, so each sender's fragments
//! arrive in the order it sent them.
//!
//! Fast boxes: each receiver also has a few queues of the same format with a single producer each.
//! A sender decides once, at its first fragment to a receiver, how it reaches that receiver: it
//! tries to claim a free fast box there (CAS of the box's owner word from 0 to `sender + 1`, for
//! good) and otherwise uses the shared FIFO, for good. One route per ordered pair keeps each
//! sender's fragments in order; a fast box spares the CAS contention of the shared head.
//!
//! Fragment slot: a flag line (u32 at +0: 1 while a receiver owns the fragment, 0 when free) and
//! then the data. The sender sets the flag before publishing the cell; the receiver clears it
//! (Release) when it has consumed the bytes, and the sender reuses a slot only after reading 0
//! (Acquire).

use std::ptr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Bytes that travel inside a FIFO cell.
pub const FIFO_INLINE: usize = 40;
const NO_FRAG: u32 = u32::MAX;
const OFF_LEN: usize = 8;
const OFF_SRC: usize = 12;
const OFF_FRAG: usize = 16;
const OFF_TAG: usize = 20;
const OFF_INLINE: usize = 24;

/// One receiver's queue as seen by a process: where the head and the cells are.
#[derive(Clone, Copy)]
pub struct Queue {
    head: *const AtomicU64,
    cells: *mut u8,
    cell_bytes: usize,
    mask: u64,
}

/// A sender's fragment pool (base of slot 0, slot stride, where data starts in a slot).
#[derive(Clone, Copy)]
pub struct Pool {
    base: *mut u8,
    stride: usize,
    data_off: usize,
    count: usize,
    size: usize,
}

impl Queue {
    /// # Safety
    /// `head` (8-aligned) and `size` cells of `cell_bytes` (line-aligned, >= 64) from `cells` must
    /// lie in a live shared mapping laid out by `Layout` that outlives every use of the Queue.
    pub unsafe fn new(head: *mut u8, cells: *mut u8, cell_bytes: usize, size: usize) -> Queue {
        Queue {
            head: head.cast(),
            cells,
            cell_bytes,
            mask: size as u64 - 1,
        }
    }

    #[inline(always)]
    fn cell(&self, pos: u64) -> *mut u8 {
        // SAFETY: (pos & mask) < size, so the cell lies inside the queue (constructor contract).
        unsafe { self.cells.add((pos & self.mask) as usize * self.cell_bytes) }
    }

    #[inline(always)]
    fn seq(&self, cell: *mut u8) -> &AtomicU64 {
        // SAFETY: the cell is line-aligned inside the mapping; its first word is only ever
        // accessed atomically, by every process.
        unsafe { AtomicU64::from_ptr(cell.cast()) }
    }

    /// Touch one atomically-accessed word per page so the receiver's pages are allocated on its
    /// NUMA node (first touch); an atomic no-op, so it cannot disturb a sender already here.
    pub fn first_touch(&self, page: usize) {
        let mut last = usize::MAX;
        // SAFETY: head is an 8-aligned word of the mapping, only accessed atomically.
        crate::layout::touch_u64(unsafe { &*self.head });
        for i in 0..=self.mask {
            let c = self.cell(i);
            if c as usize / page != last {
                last = c as usize / page;
                crate::layout::touch_u64(self.seq(c));
            }
        }
    }
}

impl Pool {
    /// # Safety
    /// `count` slots of `stride` bytes from `base` (line-aligned), each a flag line followed by
    /// `size` data bytes at `data_off`, must lie in a live shared mapping laid out by `Layout`.
    pub unsafe fn new(
        base: *mut u8,
        stride: usize,
        data_off: usize,
        count: usize,
        size: usize,
    ) -> Pool {
        Pool {
            base,
            stride,
            data_off,
            count,
            size,
        }
    }

    #[inline(always)]
    fn flag(&self, i: usize) -> &AtomicU32 {
        debug_assert!(i < self.count);
        // SAFETY: slot i's flag word is line-aligned inside the mapping and only ever accessed
        // atomically.
        unsafe { AtomicU32::from_ptr(self.base.add(i * self.stride).cast()) }
    }

    #[inline(always)]
    fn data(&self, i: usize) -> *mut u8 {
        // SAFETY: i < count, so the slot's data lies inside the pool.
        unsafe { self.base.add(i * self.stride + self.data_off) }
    }
}

/// The sending side: our pool, and where the next free-slot search starts.
pub struct FifoTx {
    me: u32,
    pool: Pool,
    next_frag: usize,
}

impl FifoTx {
    pub fn new(me: usize, pool: Pool) -> FifoTx {
        FifoTx {
            me: me as u32,
            pool,
            next_frag: 0,
        }
    }

    /// First-touch our own pool (nobody else writes it before we send anything).
    pub fn first_touch(&self, page: usize) {
        let len = self.pool.count * self.pool.stride;
        let mut off = 0;
        while off < len {
            // SAFETY: off < len: inside our pool. We have sent nothing yet, so no receiver owns
            // any slot: every byte of the pool is ours; the flag words get an atomic no-op.
            unsafe {
                let p = self.pool.base.add(off);
                if off % self.pool.stride == 0 && off + 1 != len {
                    crate::layout::touch_u32(AtomicU32::from_ptr(p.cast()));
                } else {
                    ptr::write_volatile(p, ptr::read_volatile(p));
                }
            }
            // The last step may stop short of the pool's final page: end on its last byte.
            off = if off + page >= len && off + 1 < len {
                len - 1
            } else {
                off + page
            };
        }
    }

    /// A free fragment slot, starting after the last one taken (slots mostly come back in order).
    #[inline]
    fn free_slot(&self) -> Option<usize> {
        let c = self.pool.count;
        let mut i = self.next_frag;
        for _ in 0..c {
            if self.pool.flag(i).load(Ordering::Acquire) == 0 {
                return Some(i);
            }
            i = if i + 1 == c { 0 } else { i + 1 };
        }
        None
    }

    /// Enqueue `hdr ++ data` (at most the pool's fragment size) on `q`; false when the queue is
    /// full or every fragment is in flight.
    #[inline]
    pub fn try_send(&mut self, q: &Queue, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        let len = hdr.len() + data.len();
        debug_assert!(len <= self.pool.size);
        let frag = if len <= FIFO_INLINE {
            None
        } else {
            match self.free_slot() {
                Some(i) => Some(i),
                None => return false,
            }
        };
        // Claim a position (Vyukov): the cell must hold this lap's "free" stamp.
        // SAFETY: head is an 8-aligned word of the mapping, only accessed atomically.
        let head = unsafe { &*q.head };
        let mut pos = head.load(Ordering::Relaxed);
        let cell = loop {
            let cell = q.cell(pos);
            let lap = pos & !q.mask;
            let diff = q.seq(cell).load(Ordering::Acquire).wrapping_sub(lap) as i64;
            if diff == 0 {
                match head.compare_exchange_weak(pos, pos + 1, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => break cell,
                    Err(now) => pos = now,
                }
            } else if diff < 0 {
                return false; // the receiver has not freed this cell's previous lap: full
            } else {
                pos = head.load(Ordering::Relaxed); // another sender took it
            }
        };
        // SAFETY: we won the CAS for `pos` with the cell free (Acquire on its stamp pairs with
        // the receiver's Release when it freed it): the cell is ours until we publish. The
        // fragment slot read 0 (Acquire, pairing with the receiver's Release clear), so its data
        // is ours too; len <= its size; all field offsets are aligned inside the >= 64 B cell.
        unsafe {
            let src_bytes = match frag {
                None => cell.add(OFF_INLINE),
                Some(i) => {
                    self.pool.flag(i).store(1, Ordering::Relaxed);
                    self.next_frag = if i + 1 == self.pool.count { 0 } else { i + 1 };
                    self.pool.data(i)
                }
            };
            ptr::copy_nonoverlapping(hdr.as_ptr(), src_bytes, hdr.len());
            ptr::copy_nonoverlapping(data.as_ptr(), src_bytes.add(hdr.len()), data.len());
            ptr::write(cell.add(OFF_LEN).cast::<u32>(), len as u32);
            ptr::write(cell.add(OFF_SRC).cast::<u32>(), self.me);
            ptr::write(
                cell.add(OFF_FRAG).cast::<u32>(),
                frag.map_or(NO_FRAG, |i| i as u32),
            );
            ptr::write(cell.add(OFF_TAG), tag);
        }
        // Publish: Release orders everything above (flag included) before the stamp.
        q.seq(cell)
            .store((pos & !q.mask).wrapping_add(1), Ordering::Release);
        true
    }
}

/// A receiver's fast box as the receiver sees it: the owner once claimed, its queue, our position.
pub struct FboxRx {
    owner: *const AtomicU64,
    /// Some(sender) once the box is claimed (it stays claimed).
    known: Option<usize>,
    q: Queue,
    next: u64,
}

impl FboxRx {
    /// # Safety
    /// `owner` must be an 8-aligned word of a live mapping laid out by `Layout`, as for `Queue`.
    pub unsafe fn new(owner: *mut u8, q: Queue) -> FboxRx {
        FboxRx {
            owner: owner.cast(),
            known: None,
            q,
            next: 0,
        }
    }

    fn first_touch(&self, page: usize) {
        // SAFETY: the owner word is only accessed atomically.
        crate::layout::touch_u64(unsafe { &*self.owner });
        self.q.first_touch(page);
    }
}

/// Try to claim fast box `owner` of some receiver for sender `me`; true when it is ours now.
///
/// # Safety
/// `owner` must be an 8-aligned word of a live mapping laid out by `Layout`.
pub unsafe fn claim(owner: *mut u8, me: usize) -> bool {
    // SAFETY: caller's contract; only accessed atomically.
    let w = unsafe { AtomicU64::from_ptr(owner.cast()) };
    w.load(Ordering::Relaxed) == 0
        && w.compare_exchange(0, me as u64 + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
}

/// The receiving side: our FIFO, our fast boxes, where we read next, and every sender's pool.
pub struct FifoRx {
    q: Queue,
    next: u64,
    boxes: Box<[FboxRx]>,
    pools: Box<[Pool]>,
}

impl FifoRx {
    pub fn new(q: Queue, boxes: Box<[FboxRx]>, pools: Box<[Pool]>) -> FifoRx {
        FifoRx {
            q,
            next: 0,
            boxes,
            pools,
        }
    }

    /// NUMA first touch of our FIFO and fast boxes.
    pub fn first_touch(&self, page: usize) {
        self.q.first_touch(page);
        for b in self.boxes.iter() {
            b.first_touch(page);
        }
    }

    /// Deliver up to `budget` fragments as `f(sender, tag, bytes)`: fast boxes first, then the
    /// FIFO, each in queue order.
    #[inline]
    pub fn poll(&mut self, budget: usize, f: &mut dyn FnMut(usize, u8, &[u8])) -> usize {
        let mut done = 0;
        for b in self.boxes.iter_mut() {
            let sender = match b.known {
                Some(s) => s,
                None => {
                    // SAFETY: the owner word is only accessed atomically.
                    let o = unsafe { (*b.owner).load(Ordering::Acquire) };
                    if o == 0 {
                        continue;
                    }
                    b.known = Some(o as usize - 1);
                    o as usize - 1
                }
            };
            done += drain(
                &b.q,
                &mut b.next,
                &self.pools,
                Some(sender),
                budget - done,
                f,
            );
            if done == budget {
                return done;
            }
        }
        done + drain(&self.q, &mut self.next, &self.pools, None, budget - done, f)
    }
}

/// Deliver up to `budget` published cells of `q` from position `*next` on.
/// `only`: the one sender allowed to write this queue (a fast box), checked per cell.
#[inline]
fn drain(
    q: &Queue,
    next: &mut u64,
    pools: &[Pool],
    only: Option<usize>,
    budget: usize,
    f: &mut dyn FnMut(usize, u8, &[u8]),
) -> usize {
    let mut done = 0;
    while done < budget {
        let cell = q.cell(*next);
        let lap = *next & !q.mask;
        if q.seq(cell).load(Ordering::Acquire) != lap.wrapping_add(1) {
            break;
        }
        // SAFETY: the stamp says a sender published this cell (Acquire pairs with its
        // Release); it leaves the cell alone until we free it below. Fields are aligned.
        let (len, src, frag, tag) = unsafe {
            (
                ptr::read(cell.add(OFF_LEN).cast::<u32>()) as usize,
                ptr::read(cell.add(OFF_SRC).cast::<u32>()) as usize,
                ptr::read(cell.add(OFF_FRAG).cast::<u32>()),
                ptr::read(cell.add(OFF_TAG)),
            )
        };
        assert!(
            src < pools.len() && only.is_none_or(|o| o == src),
            "btl-sm: corrupt FIFO cell (sender {src})"
        );
        if frag == NO_FRAG {
            assert!(len <= FIFO_INLINE, "btl-sm: corrupt FIFO cell (len {len})");
            // SAFETY: len <= 40 inline bytes inside the cell, written before the stamp.
            f(src, tag, unsafe {
                std::slice::from_raw_parts(cell.add(OFF_INLINE), len)
            });
        } else {
            let pool = &pools[src];
            let i = frag as usize;
            assert!(
                i < pool.count && len <= pool.size,
                "btl-sm: corrupt FIFO cell from local rank {src} (fragment {i}, len {len})"
            );
            // SAFETY: fragment i of the sender's pool (in bounds, checked), written before
            // the cell's stamp and owned by us until we clear its flag.
            f(src, tag, unsafe {
                std::slice::from_raw_parts(pool.data(i), len)
            });
            // Release: our reads of the bytes happen before the sender reuses the slot.
            pool.flag(i).store(0, Ordering::Release);
        }
        // Free the cell for the next lap; Release orders our reads before a sender's reuse.
        q.seq(cell)
            .store(lap.wrapping_add(q.mask + 1), Ordering::Release);
        *next += 1;
        done += 1;
    }
    done
}
