//! One SPSC channel (sender s → receiver r): the sender's end `Tx` and the receiver's end `Rx`.
//!
//! Header cell (32 B, half a cache line):
//! ```text
//! +0 stamp: u32   absolute cell index + 1 (wrapping); stored last, Release — the publication point
//! +4 len: u16     fragment bytes (hdr + data) of an inline fragment (at most 66 cells' worth)
//! +6 tag: u8
//! +7 kind: u8     KIND_CELLS: the bytes follow at +8 (len <= 24: this cell only; longer: on
//!                 into the next cells, contiguous); KIND_PAYLOAD: in the payload ring
//! +8 24 bytes of inline payload (KIND_CELLS), or
//! +8 pay_pos: u32 monotonic payload-ring position of the bytes and
//! +12 pay_len: u32 their length (KIND_PAYLOAD)
//! ```
//! Two cells share a line, so a stream of tiny fragments (the pml's 8-byte short match header
//! and up to 16 bytes of data) moves two per line transfer, as Open MPI's 32-byte-aligned fast
//! box entries do: where a line costs 200+ ns between the two cores, that halves what a message
//! costs in a window of sends. A fragment of more than one cell spans whole lines: its span is
//! rounded up to end on a line boundary (the extra cell is skipped), so after it the next
//! fragment starts a line again and a run of longer fragments lies exactly as with 64-B cells.
//! A fragment of up to `INLINE_CELLS_MAX` lines travels inline in consecutive cells when they do
//! not wrap around the ring's end, so the receiver reads one contiguous run of lines that the
//! hardware prefetches as a stream; longer fragments, or ones that would wrap, use the payload
//! ring (a span that would wrap is moved to cell 0 behind a PAD cell that skips the ring's end,
//! when there is room). The cells a fragment spans after its first are "interior": their first word is user data.
//! Since the receiver polls the stamp word of whatever cell follows the last fragment, the sender
//! never publishes a fragment while the cell after it still holds interior data from an earlier
//! lap: it first overwrites that stamp word with a value no stamp of that cell can take.
//! Positions (cell index, payload position) are wrapping u32 counters; ring sizes are powers of
//! two far below 2^31, so `head - tail` is always the true occupancy.
//!
//! A zero-filled ring is a valid empty ring: cell 0 expects stamp 1, and a stale stamp from an
//! earlier lap differs from the expected one by a multiple of the ring size.
//!
//! Ownership of bytes (the SPSC protocol): cells in `[tail, head)` and payload bytes in
//! `[pay_tail, pay_head)` belong to the receiver until it publishes a tail past them; everything
//! else belongs to the sender. Each side writes only what it owns.

use std::ptr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The ring's lines (the layout's unit, `fifo_cells` of them) hold two cells each.
use crate::layout::CELL as LINE;

/// Bytes of one header cell.
pub const CELL: usize = 32;
pub const INLINE_MAX: usize = CELL - OFF_INLINE;
const OFF_STAMP: usize = 0;
/// A u16: inline fragments only (`INLINE_CELLS_MAX` cells hold under 64 KiB).
const OFF_LEN: usize = 4;
const OFF_TAG: usize = 6;
const OFF_KIND: usize = 7;
const OFF_INLINE: usize = 8;
/// Only in KIND_PAYLOAD cells, which carry no inline bytes.
const OFF_PAY_POS: usize = 8;
const OFF_PAY_LEN: usize = 12;
const KIND_CELLS: u8 = 0;
const KIND_PAYLOAD: u8 = 1;
/// No fragment: the cells from here to the ring's end are skipped (an inline span that would
/// wrap starts again at cell 0).
const KIND_PAD: u8 = 2;
/// Most cells one inline fragment spans: 33 lines carry a 2104-byte fragment (a 2 KiB message
/// with its match header; a 4 KiB reply goes as two such halves, `split_range`). Inline beats
/// the payload ring by about 0.1 µs of one-way latency from 0.5 to 4 KiB (the receiver fetches
/// one contiguous run of lines it starts prefetching as soon as it sees the stamp). A window of
/// whole 4 KiB messages moves faster through the payload ring, leaving the cells to the
/// messages around it (unmodified OSU 5.3, 2 ranks, probe 55-60 ns, 3 interleaved rounds:
/// osu_bw 4 KiB 36.2 against 31.8 GB/s with 132-cell spans, osu_bibw 35.9 against 32.2). A span also
/// takes at most half the ring give or take two cells (`inline_ok`), so that a ring of a few
/// spans never stalls on the padding at its end.
pub const INLINE_CELLS_MAX: u32 = 66;

/// One atomic no-op per page of a header ring (`cell_mask + 1` cells at `cells`), on the stamp
/// words every process accesses only atomically: maps those pages here (`Tx::prefault`,
/// `Rx::first_touch`).
fn touch_stamps(cells: *const u8, cell_mask: u32, page: usize) {
    let mut last = usize::MAX;
    for i in 0..=cell_mask as usize {
        let stamp = cells.wrapping_add(i * CELL + OFF_STAMP);
        if stamp as usize / page != last {
            last = stamp as usize / page;
            // SAFETY: i <= cell_mask: cell i's stamp lies in the ring (caller's mapping), a
            // 4-aligned u32 only ever accessed atomically.
            crate::layout::touch_u32(unsafe {
                AtomicU32::from_ptr(stamp.cast_mut().cast::<u32>())
            });
        }
    }
}

/// How far ahead of the cell being written the sender asks for lines (see `Tx::prefetch_ahead`):
/// 8 lines.
const PREFETCH_AHEAD: u32 = 16;

/// The receiver frees inline cells at the end of each poll batch, and within a batch each time
/// it has consumed this fraction (1/8) of the ring: one store to the line the sender reads per
/// 16 lines of the default ring rather than one per message, while the sender refills a ring
/// that a window of sends keeps full as we drain it. Measured on 2 ranks, fast state, window of
/// 64 (8-10 interleaved runs): freeing within the batch rather than only at its end, 1 KiB
/// 5.3 against 4.4 GB/s (256-line ring); every eighth rather than after every multi-line
/// fragment, 64-256 B +10-20 %.
const FREE_EVERY: u32 = 8;

/// Fragment sizes (bytes, exclusive lower and inclusive upper bound) that move faster as two
/// fragments of half the size in a ring of `cells` cells: those over a quarter of the ring (and
/// two cells), or over 66 cells, whose halves could still travel inline in it. The pml splits
/// only a message that answers its peer (a ping-pong: the receiver copies out the first half
/// while the second is written); a window goes whole, through the payload ring beyond
/// `INLINE_CELLS_MAX`. Splitting pays from here in any ring (a ping-pong's 2.1 KiB).
const SPLIT_FROM_CELLS: u32 = 66;
pub fn split_range(cells: u32) -> Option<(usize, usize)> {
    let lo = (cells / 4 + 2).min(SPLIT_FROM_CELLS);
    let hi = (cells / 2 + 2).min(2 * INLINE_CELLS_MAX);
    (lo < hi).then(|| {
        let bytes = |k: u32| k as usize * CELL - OFF_INLINE;
        (bytes(lo), bytes(hi))
    })
}

/// Whether a fragment of `k` cells may travel inline in a ring of `cells` cells: at most
/// `INLINE_CELLS_MAX`, and half of the ring and two cells more (in a small ring a span as large
/// as that is still faster than the payload ring for a ping-pong: 0.61 us one way at 4 KiB in
/// the fast state against 0.66).
#[inline(always)]
fn inline_ok(k: u32, cells: u32) -> bool {
    k <= INLINE_CELLS_MAX && 2 * k <= cells + 4
}

/// Cells an inline fragment of `len` bytes fills.
#[inline(always)]
fn cells_for(len: u32) -> u32 {
    (OFF_INLINE as u32 + len).div_ceil(CELL as u32)
}

/// Cells a multi-cell fragment filling `k` cells from cell `idx` takes: one more when it would
/// end in the middle of a line, so that the next fragment starts a line (see the module docs).
#[inline(always)]
fn span_at(idx: u32, k: u32) -> u32 {
    k + ((idx + k) & 1)
}

/// Call `f` with the first address of every line the `span` cells from `cell` touch.
#[inline(always)]
fn for_lines(cell: *const u8, span: u32, mut f: impl FnMut(*const u8)) {
    let lead = cell as usize & (LINE - 1);
    let line = cell.wrapping_sub(lead);
    for off in (0..lead + span as usize * CELL).step_by(LINE) {
        f(line.wrapping_add(off));
    }
}

/// A stamp word no fragment in cell `idx` can carry: stamps are `pos + 1` with
/// `pos ≡ idx (mod cells)`, and `idx ≢ idx + 1` for rings of at least two cells.
#[inline(always)]
fn never_a_stamp(idx: u32) -> u32 {
    idx
}

#[inline(always)]
fn round_line(len: u32) -> u32 {
    (len + 63) & !63
}

/// Sender end. All fields are private to the sending process; only `tail` points at
/// receiver-written memory.
/// Copy `n <= 64` bytes with a few possibly overlapping fixed-size moves: on the inline path
/// the libc memcpy call costs more than the copy itself.
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes, not overlapping; `n <= 64`.
#[inline(always)]
unsafe fn copy_small(src: *const u8, dst: *mut u8, n: usize) {
    debug_assert!(n <= 64);
    // SAFETY: every access below is within [0, n) of both ranges (the caller's contract);
    // unaligned reads and writes.
    unsafe {
        let mv16 = |at: usize| {
            dst.add(at)
                .cast::<u128>()
                .write_unaligned(src.add(at).cast::<u128>().read_unaligned())
        };
        if n >= 16 {
            mv16(0);
            if n > 32 {
                mv16(16);
            }
            if n > 48 {
                mv16(32);
            }
            mv16(n - 16);
        } else if n >= 8 {
            let (a, b) = (
                src.cast::<u64>().read_unaligned(),
                src.add(n - 8).cast::<u64>().read_unaligned(),
            );
            dst.cast::<u64>().write_unaligned(a);
            dst.add(n - 8).cast::<u64>().write_unaligned(b);
        } else if n >= 4 {
            let (a, b) = (
                src.cast::<u32>().read_unaligned(),
                src.add(n - 4).cast::<u32>().read_unaligned(),
            );
            dst.cast::<u32>().write_unaligned(a);
            dst.add(n - 4).cast::<u32>().write_unaligned(b);
        } else if n > 0 {
            *dst = *src;
            *dst.add(n / 2) = *src.add(n / 2);
            *dst.add(n - 1) = *src.add(n - 1);
        }
    }
}

/// Hint the CPU to start loading the cache line at `p` (no effect elsewhere than x86-64).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults and has no visible effect, whatever
    // the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Hint the CPU to fetch the cache line at `p` for writing (PREFETCHW on x86-64).
#[inline(always)]
fn prefetch_write(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHW is only a hint: it never faults, writes nothing, and leaves registers
    // and flags alone whatever the address (CPUs without it execute the encoding as a NOP).
    unsafe {
        std::arch::asm!("prefetchw [{}]", in(reg) p, options(nostack, preserves_flags, readonly))
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Copy `hdr ++ data` to `dst`, the inline bytes of a multi-cell fragment's first cell: the
/// bytes past the end of that cell's line first, the ones in it last. The line the receiver
/// polls is then written in one burst just before the stamp, rather than partly first and
/// taken back by the polling receiver while the later lines are filled (one more transfer).
///
/// # Safety
/// `dst` writable for `hdr.len() + data.len()` bytes, not overlapping the sources, at
/// `OFF_INLINE` in a cell.
#[inline(always)]
unsafe fn copy_tail_first(hdr: &[u8], data: &[u8], dst: *mut u8) {
    // 56 from a line's first cell, 24 from its second; all of a fragment that ends in it.
    let h = hdr.len();
    let split = (LINE - (dst as usize - OFF_INLINE) % LINE - OFF_INLINE).min(h + data.len());
    // SAFETY: every range below lies inside hdr, data and [dst, dst + h + data.len()), which
    // the caller guarantees writable and disjoint from the sources.
    unsafe {
        if split < h {
            ptr::copy_nonoverlapping(hdr.as_ptr().add(split), dst.add(split), h - split);
            ptr::copy_nonoverlapping(data.as_ptr(), dst.add(h), data.len());
            ptr::copy_nonoverlapping(hdr.as_ptr(), dst, split);
        } else {
            // The usual case (a short header): a few fixed-size moves, no libc calls.
            let d = split - h;
            copy_medium(data.as_ptr().add(d), dst.add(split), data.len() - d);
            // h <= split and d <= split <= 56: within copy_small's limit.
            copy_small(hdr.as_ptr(), dst, h);
            copy_small(data.as_ptr(), dst.add(h), d);
        }
    }
}

/// Copy `n` bytes in 32-byte moves (the last one overlapping), or as `copy_small` below 32.
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes, not overlapping.
#[inline(always)]
unsafe fn copy_medium(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: every move below stays within [0, n) of both ranges (the caller's contract);
    // unaligned reads and writes.
    unsafe {
        if n < 32 {
            return copy_small(src, dst, n);
        }
        let mv32 = |at: usize| {
            let a = src.add(at).cast::<u128>().read_unaligned();
            let b = src.add(at + 16).cast::<u128>().read_unaligned();
            dst.add(at).cast::<u128>().write_unaligned(a);
            dst.add(at + 16).cast::<u128>().write_unaligned(b);
        };
        let mut at = 0;
        while at + 32 < n {
            mv32(at);
            at += 32;
        }
        mv32(n - 32);
    }
}

pub struct Tx {
    cells: *mut u8,
    pay: *mut u8,
    /// The receiver's published tail record for this channel (hdr_tail | pay_tail << 32).
    tail: *const AtomicU64,
    cell_mask: u32,
    pay_size: u32,
    head: u32,
    pay_head: u32,
    /// Last values read from `tail`; only refreshed when they say "full".
    hdr_tail: u32,
    pay_tail: u32,
    /// One bit per cell: its stamp word last received interior data (see the module docs).
    interior: Box<[u64]>,
    /// Fragments written but not yet published (`try_send_held`): (cell index, stamp), in
    /// order; at most `HOLD_MAX`.
    held: Vec<(u32, u32)>,
}

/// Most fragments a window of sends writes before publishing them together (`try_send_held`).
const HOLD_MAX: usize = 16;

/// Receiver end.
pub struct Rx {
    cells: *const u8,
    pay: *const u8,
    /// Our tail record for this channel; only this process writes it.
    tail: *const AtomicU64,
    cell_mask: u32,
    pay_size: u32,
    next: u32,
    pay_tail: u32,
    /// The cell position we last published (`publish`).
    freed: u32,
}

impl Tx {
    /// A placeholder for the `me` slot of per-peer arrays; never used for sending.
    pub fn unused() -> Tx {
        Tx {
            cells: ptr::null_mut(),
            pay: ptr::null_mut(),
            tail: ptr::null(),
            cell_mask: 0,
            pay_size: 0,
            head: 0,
            pay_head: 0,
            hdr_tail: 0,
            pay_tail: 0,
            interior: Box::new([]),
            held: Vec::new(),
        }
    }

    /// # Safety
    /// `cells` (fifo_cells lines of 64 B, 64-aligned: twice as many cells), `pay` (pay_size bytes, 64-aligned) and `tail`
    /// (8-aligned) must point into a live shared mapping laid out by `Layout` for this channel,
    /// outliving the `Tx`, with this process the only sender on it and the rings fresh (zeroed).
    pub unsafe fn new(
        cells: *mut u8,
        pay: *mut u8,
        tail: *const AtomicU64,
        fifo_cells: usize,
        pay_size: usize,
    ) -> Tx {
        Tx {
            cells,
            pay,
            tail,
            cell_mask: (fifo_cells * LINE / CELL - 1) as u32,
            pay_size: pay_size as u32,
            head: 0,
            pay_head: 0,
            hdr_tail: 0,
            pay_tail: 0,
            interior: vec![0; (fifo_cells * LINE / CELL).div_ceil(64)].into_boxed_slice(),
            held: Vec::with_capacity(HOLD_MAX),
        }
    }

    /// Map the header ring's pages and the receiver's tail record in this process now: one
    /// atomic no-op per page on words only ever accessed atomically. Otherwise the first lap
    /// takes a page fault every 4 KiB of cells, 4-30 us each on a VM, inside the first ~130
    /// iterations of a benchmark (OSU's first size in every collective test). After the
    /// receiver's `first_touch`, so its pages stay on its NUMA node.
    /// With `payload`, the payload ring's pages are mapped too (`layout::populate`).
    pub fn prefault(&self, page: usize, payload: bool) {
        // SAFETY: the receiver's 8-aligned tail record, only accessed atomically; a no-op
        // read-modify-write cannot lose its stores.
        crate::layout::touch_u64(unsafe { &*self.tail });
        touch_stamps(self.cells, self.cell_mask, page);
        if payload {
            crate::layout::populate(self.pay, self.pay_size as usize);
        }
    }

    #[inline(always)]
    fn is_interior(&self, idx: u32) -> bool {
        self.interior[(idx / 64) as usize] & (1 << (idx % 64)) != 0
    }

    #[inline(always)]
    fn set_interior(&mut self, idx: u32, on: bool) {
        let w = &mut self.interior[(idx / 64) as usize];
        if on {
            *w |= 1 << (idx % 64);
        } else {
            *w &= !(1 << (idx % 64));
        }
    }

    /// Set the interior bits of cells `from..to` (within one lap: spans never wrap), a word at
    /// a time: a 4 KiB fragment fills 129 cells.
    #[inline(always)]
    fn mark_interior(&mut self, from: u32, to: u32) {
        let mut i = from;
        while i < to {
            let bit = i % 64;
            let n = (to - i).min(64 - bit);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << bit
            };
            self.interior[(i / 64) as usize] |= mask;
            i += n;
        }
    }

    /// Free cells as last seen; refreshed from the receiver's tail when fewer than `need`.
    #[inline(always)]
    fn room(&mut self, need: u32) -> bool {
        let cells = self.cell_mask + 1;
        if cells - self.head.wrapping_sub(self.hdr_tail) >= need {
            return true;
        }
        self.refresh();
        cells - self.head.wrapping_sub(self.hdr_tail) >= need
    }

    #[cold]
    #[inline(never)]
    fn refresh(&mut self) {
        // SAFETY: `tail` is an 8-aligned u64 inside the mapping (constructor contract), only
        // ever accessed atomically. Acquire pairs with the receiver's Release store: its reads
        // of the slots it gives back happen before we overwrite them.
        let t = unsafe { (*self.tail).load(Ordering::Acquire) };
        self.hdr_tail = t as u32;
        self.pay_tail = (t >> 32) as u32;
    }

    /// Enqueue `hdr ++ data` (at most the transport's max_frag bytes); false when full.
    #[inline]
    pub fn try_send(&mut self, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        self.send(tag, hdr, data, false)
    }

    /// `try_send` of a fragment that more will follow soon (a window of MPI_Isend): one of one
    /// or two cells is written but not published until `HOLD_MAX` of them are, a fragment that
    /// is not held goes, or `flush`; then all at once, the last first. The receiver then finds
    /// a run of whole lines the sender is done with, instead of polling each line while the
    /// sender fills it (which takes the line from the sender once per message where a line
    /// costs 250 ns between the cores).
    #[inline]
    pub fn try_send_held(&mut self, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        self.send(tag, hdr, data, true)
    }

    /// Publish the fragments `try_send_held` holds, the last first: the receiver, which reads
    /// cells in order, then finds the rest already there when it sees the first.
    #[inline]
    pub fn flush(&mut self) {
        while let Some((idx, stamp)) = self.held.pop() {
            self.store_stamp(idx, stamp);
        }
    }

    /// Whether fragments wait for `flush`.
    #[inline]
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    #[inline(always)]
    fn send(&mut self, tag: u8, hdr: &[u8], data: &[u8], hold: bool) -> bool {
        let len = hdr.len() + data.len();
        let idx = self.head & self.cell_mask;
        // The latency path: one cell, or the two cells of one line.
        let k = if len <= INLINE_MAX {
            1
        } else if len <= LINE - OFF_INLINE && idx & 1 == 0 {
            2
        } else {
            return self.send_long(tag, hdr, data);
        };
        // The ring has an even number of cells, so a line's two cells never wrap.
        let after = (idx + k) & self.cell_mask;
        let scrub = self.is_interior(after);
        if !self.room(k + scrub as u32) {
            return false;
        }
        if scrub {
            self.scrub(after);
        }
        self.prefetch_ahead(idx + k - 1);
        // SAFETY: idx + k - 1 <= cell_mask, so the cells lie inside this channel's header
        // ring; they are ours: head + k - hdr_tail <= cell_mask + 1 means the receiver has
        // released them (Acquire in refresh), and they are unpublished. hdr and data fit the
        // k cells' inline bytes (<= 56; copy_small takes up to 64 each); sources are process-private,
        // so no overlap; fields are aligned in the 32-byte cell.
        unsafe {
            let cell = self.cells.add(idx as usize * CELL);
            let dst = cell.add(OFF_INLINE);
            copy_small(hdr.as_ptr(), dst, hdr.len());
            copy_small(data.as_ptr(), dst.add(hdr.len()), data.len());
            ptr::write(cell.add(OFF_LEN).cast::<u16>(), len as u16);
            ptr::write(cell.add(OFF_TAG), tag);
            ptr::write(cell.add(OFF_KIND), KIND_CELLS);
        }
        if k == 2 {
            self.set_interior(idx + 1, true);
        }
        if hold {
            // Written, and ours until published: the receiver stops at this cell's stamp,
            // which still reads as an earlier lap's (data never touches the stamp word).
            self.set_interior(idx, false);
            self.held.push((idx, self.head.wrapping_add(1)));
            self.head = self.head.wrapping_add(k);
            if self.held.len() == HOLD_MAX {
                self.flush();
            }
            return true;
        }
        self.publish(idx, k);
        true
    }

    /// `try_send` for fragments over one cell: inline across cells when they fit before the
    /// ring's end and there is room, else one cell and the payload ring.
    #[inline(never)]
    fn send_long(&mut self, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        let len = (hdr.len() + data.len()) as u32;
        let cells = self.cell_mask + 1;
        let mut idx = self.head & self.cell_mask;
        let k = cells_for(len);
        // A span that would wrap: pad to the ring's end and start again at cell 0, if the
        // padding and the span fit now (else the payload ring below takes it).
        let pad = cells - idx;
        if inline_ok(span_at(0, k), cells) && idx + k > cells && self.room(pad + span_at(0, k) + 1)
        {
            // SAFETY: idx <= cell_mask: the cell is inside the ring and ours (room counted it);
            // the kind byte is written before the Release in `publish`.
            unsafe { ptr::write(self.cells.add(idx as usize * CELL + OFF_KIND), KIND_PAD) };
            // The next cell is cell 0, which is never interior (spans never wrap).
            self.publish(idx, pad);
            idx = 0;
        }
        // idx + k <= cells (even) implies idx + span_at(idx, k) <= cells.
        let mut span = span_at(idx, k);
        if !(inline_ok(span, cells) && idx + k <= cells && self.room(span + 1)) {
            span = 1;
        }
        let mut after = (idx + span) & self.cell_mask;
        let mut scrub = self.is_interior(after);
        if !self.room(span + scrub as u32) {
            // Short of cells for the inline span: one cell and the payload ring.
            span = 1;
            after = (idx + 1) & self.cell_mask;
            scrub = self.is_interior(after);
            if !self.room(1 + scrub as u32) {
                return false;
            }
        }
        self.prefetch_ahead(idx + span - 1);
        // SAFETY: idx <= cell_mask, so the cell lies inside this channel's header ring.
        let cell = unsafe { self.cells.add(idx as usize * CELL) };
        if span == 1 {
            if !self.fill_payload(cell, tag, hdr, data) {
                return false;
            }
            if scrub {
                self.scrub(after);
            }
        } else {
            // Ask for all the span's lines at once rather than one store miss after another.
            for_lines(cell, span, prefetch_write);
            if scrub {
                self.scrub(after);
            }
            // SAFETY: the span's cells are ours: head + span - hdr_tail <= cell_mask + 1 means the
            // receiver has released them (Acquire in refresh), and they are unpublished; the
            // span does not wrap (idx + span <= cells), so the bytes stay inside the ring.
            // Sources are process-private, so no overlap; fields are aligned in the 32-B cell.
            unsafe {
                copy_tail_first(hdr, data, cell.add(OFF_INLINE));
                ptr::write(cell.add(OFF_LEN).cast::<u16>(), len as u16);
                ptr::write(cell.add(OFF_TAG), tag);
                ptr::write(cell.add(OFF_KIND), KIND_CELLS);
            }
            // Only the cells the bytes fill: a rounding cell keeps what it held, and its bit.
            self.mark_interior(idx + 1, idx + k);
        }
        self.publish(idx, span);
        true
    }

    /// Ask for the line of the cell `PREFETCH_AHEAD` cells on, for writing. A burst of sends (a
    /// window of MPI_Isend) otherwise takes one store miss per cell in turn: the store buffer
    /// fills behind the first, and each cell costs a whole line transfer from the receiver's
    /// cache. So far ahead, the receiver is not polling it (it polls the cell after the last
    /// published one); only when the ring is nearly full does it take a line the receiver is
    /// about to read, which costs it one miss.
    #[inline(always)]
    fn prefetch_ahead(&self, idx: u32) {
        prefetch_write(
            self.cells
                .wrapping_add(((idx + PREFETCH_AHEAD) & self.cell_mask) as usize * CELL),
        );
    }

    /// Make the stamp word of cell `after`, which holds interior data from an earlier lap, a
    /// value no stamp of that cell takes (see the module docs). Done before the fragment's
    /// own stores, so that its first cell, which the receiver polls, is written in one burst.
    #[inline(always)]
    fn scrub(&mut self, after: u32) {
        // SAFETY: `after` is inside the ring and ours (the caller's room check counted it);
        // its stamp word is a 4-aligned u32 the receiver only loads atomically, and it polls
        // this cell only after the fragment's Release store, which orders this store before it.
        unsafe {
            AtomicU32::from_ptr(self.cells.add(after as usize * CELL + OFF_STAMP).cast())
                .store(never_a_stamp(after), Ordering::Relaxed)
        };
        self.set_interior(after, false);
    }

    /// Publish the fragment just written at cell `idx` spanning `span` cells.
    #[inline(always)]
    fn publish(&mut self, idx: u32, span: u32) {
        self.set_interior(idx, false);
        let stamp = self.head.wrapping_add(1);
        self.head = self.head.wrapping_add(span);
        self.store_stamp(idx, stamp);
        // Held fragments go with this one, after it (see `flush`).
        self.flush();
    }

    #[inline(always)]
    fn store_stamp(&self, idx: u32, stamp: u32) {
        // SAFETY: the stamp is a 4-aligned u32 at the start of cell idx (inside the ring),
        // accessed atomically by both sides. Release orders every write to the fragment before
        // it; the receiver reads them only after an Acquire load sees this value.
        unsafe {
            AtomicU32::from_ptr(self.cells.add(idx as usize * CELL + OFF_STAMP).cast())
                .store(stamp, Ordering::Release)
        };
    }

    /// The payload-ring half of `send_long`; false if the ring has no room.
    #[inline]
    fn fill_payload(&mut self, cell: *mut u8, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        let len = hdr.len() + data.len();
        let need = round_line(len as u32);
        let off = self.pay_head & (self.pay_size - 1);
        // Never wrap a fragment: skip the too-short end; the skipped bytes are consumed
        // together with this fragment when the receiver advances its tail past it.
        let skip = if off + need > self.pay_size {
            self.pay_size - off
        } else {
            0
        };
        if self.pay_size - self.pay_head.wrapping_sub(self.pay_tail) < skip + need {
            self.refresh();
            if self.pay_size - self.pay_head.wrapping_sub(self.pay_tail) < skip + need {
                return false;
            }
        }
        let start = self.pay_head.wrapping_add(skip);
        let at = (start & (self.pay_size - 1)) as usize;
        // SAFETY: at + need <= pay_size (skip guarantees no wrap), so the copy stays in this
        // channel's payload ring; [pay_head, start + need) is free per the (Acquire-read)
        // receiver tail, so we are its only accessor until try_send's stamp publishes it.
        // `cell` is the unpublished cell try_send owns; all offsets are 4-aligned in a
        // 32-aligned cell.
        unsafe {
            let dst = self.pay.add(at);
            ptr::copy_nonoverlapping(hdr.as_ptr(), dst, hdr.len());
            ptr::copy_nonoverlapping(data.as_ptr(), dst.add(hdr.len()), data.len());
            ptr::write(cell.add(OFF_PAY_LEN).cast::<u32>(), len as u32);
            ptr::write(cell.add(OFF_PAY_POS).cast::<u32>(), start);
            ptr::write(cell.add(OFF_TAG), tag);
            ptr::write(cell.add(OFF_KIND), KIND_PAYLOAD);
        }
        self.pay_head = start.wrapping_add(need);
        true
    }

    /// Test hook: the next cell position.
    #[cfg(test)]
    pub fn head(&self) -> u32 {
        self.head
    }

    /// Test hook: pretend `cell` cells and `pay` payload bytes have already gone through.
    #[cfg(test)]
    pub fn set_positions(&mut self, cell: u32, pay: u32) {
        self.head = cell;
        self.hdr_tail = cell;
        self.pay_head = pay;
        self.pay_tail = pay;
    }
}

impl Rx {
    pub fn unused() -> Rx {
        Rx {
            cells: ptr::null(),
            pay: ptr::null(),
            tail: ptr::null(),
            cell_mask: 0,
            pay_size: 0,
            next: 0,
            pay_tail: 0,
            freed: 0,
        }
    }

    /// # Safety
    /// As for `Tx::new`, with this process the only receiver on the channel.
    pub unsafe fn new(
        cells: *const u8,
        pay: *const u8,
        tail: *const AtomicU64,
        fifo_cells: usize,
        pay_size: usize,
    ) -> Rx {
        Rx {
            cells,
            pay,
            tail,
            cell_mask: (fifo_cells * LINE / CELL - 1) as u32,
            pay_size: pay_size as u32,
            next: 0,
            pay_tail: 0,
            freed: 0,
        }
    }

    /// NUMA first touch of our tail record and header ring: one atomic no-op per page on words
    /// every process accesses only atomically. With `payload`, the payload ring's pages too, by
    /// `layout::populate`, which allocates them without writing a byte; without it they are
    /// left to whoever touches them first.
    pub fn first_touch(&self, page: usize, payload: bool) {
        // SAFETY: our 8-aligned tail record, only accessed atomically.
        crate::layout::touch_u64(unsafe { &*self.tail });
        touch_stamps(self.cells, self.cell_mask, page);
        if payload {
            crate::layout::populate(self.pay, self.pay_size as usize);
        }
    }

    /// Deliver up to `budget` fragments in order as `f(peer, tag, bytes)`.
    #[inline]
    pub fn poll(
        &mut self,
        peer: usize,
        budget: usize,
        f: &mut dyn FnMut(usize, u8, &[u8]),
    ) -> usize {
        let mut done = 0;
        let mut pending = false;
        while done < budget {
            let idx = (self.next & self.cell_mask) as usize;
            // SAFETY: idx <= cell_mask: the cell is inside this channel's header ring.
            let cell = unsafe { self.cells.add(idx * CELL) };
            // SAFETY: 4-aligned u32 at the cell start, only accessed atomically. Acquire pairs
            // with the sender's Release store of the stamp.
            let stamp = unsafe {
                AtomicU32::from_ptr(cell.add(OFF_STAMP) as *mut u32).load(Ordering::Acquire)
            };
            if stamp != self.next.wrapping_add(1) {
                break;
            }
            // SAFETY: the stamp matched, so the sender wrote these fields before its Release and
            // will not touch the cell (or the payload bytes it names) until we publish a tail
            // past it; the fields are 4-aligned inside the 32-aligned cell.
            let (len, tag, kind) = unsafe {
                (
                    ptr::read(cell.add(OFF_LEN).cast::<u16>()) as u32,
                    ptr::read(cell.add(OFF_TAG)),
                    ptr::read(cell.add(OFF_KIND)),
                )
            };
            if kind == KIND_PAD {
                // Nothing to deliver: skip to the ring start.
                self.next = self.next.wrapping_add(self.cell_mask + 1 - idx as u32);
                pending = true;
                continue;
            }
            let mut span = 1;
            let bytes: &[u8] = if kind == KIND_CELLS {
                if len as usize > INLINE_MAX {
                    span = span_at(idx as u32, cells_for(len));
                    // A corrupt cell must not make us read outside the ring.
                    assert!(
                        inline_ok(span, self.cell_mask + 1) && idx as u32 + span <= self.cell_mask + 1,
                        "btl-sm: corrupt fragment from local rank {peer} ({len} inline bytes at cell {idx})"
                    );
                    // Start fetching the later cells now, so that they travel while the
                    // caller matches the header instead of after it.
                    for_lines(cell.wrapping_add(CELL), span - 1, prefetch);
                }
                // SAFETY: len bytes from OFF_INLINE lie inside the `span` cells, which are inside the
                // ring (checked above, or len <= INLINE_MAX); owned by us until the tail store below
                // (SPSC protocol), written before the stamp's Release.
                unsafe { std::slice::from_raw_parts(cell.add(OFF_INLINE), len as usize) }
            } else {
                // SAFETY: as for the fields above (KIND_PAYLOAD cells carry these two words).
                let (len, pay_pos) = unsafe {
                    (
                        ptr::read(cell.add(OFF_PAY_LEN).cast::<u32>()),
                        ptr::read(cell.add(OFF_PAY_POS).cast::<u32>()),
                    )
                };
                let at = pay_pos & (self.pay_size - 1);
                // A corrupt cell must not make us read outside the ring.
                assert!(
                    len <= self.pay_size - at,
                    "btl-sm: corrupt fragment from local rank {peer} (len {len} at {at})"
                );
                self.pay_tail = pay_pos.wrapping_add(round_line(len));
                // SAFETY: at + len <= pay_size (checked), so the slice is inside this channel's
                // payload ring; the sender wrote it before the stamp's Release and leaves it
                // alone until our tail passes it.
                unsafe { std::slice::from_raw_parts(self.pay.add(at as usize), len as usize) }
            };
            f(peer, tag, bytes);
            self.next = self.next.wrapping_add(span);
            done += 1;
            // Inline fragments are freed at the batch's end or once an eighth of the ring is
            // consumed (see `FREE_EVERY`), payload fragments at once, so that the sender
            // refills the payload ring while we copy out the next ones.
            if kind == KIND_CELLS
                && self.next.wrapping_sub(self.freed) < (self.cell_mask + 1) / FREE_EVERY
            {
                pending = true;
            } else {
                self.publish();
                pending = false;
            }
        }
        if pending {
            self.publish();
        }
        done
    }

    /// Give the consumed cells and payload back to the sender.
    #[inline(always)]
    fn publish(&mut self) {
        self.freed = self.next;
        // SAFETY: 8-aligned u64 in our own tail block, only accessed atomically; only this
        // process writes it. Release: our reads of the consumed bytes happen before the sender
        // (Acquire in Tx::refresh) reuses them.
        unsafe {
            (*self.tail).store(
                self.next as u64 | (self.pay_tail as u64) << 32,
                Ordering::Release,
            )
        };
    }

    /// Test hook: the receiver half of `Tx::set_positions`.
    #[cfg(test)]
    pub fn set_positions(&mut self, cell: u32, pay: u32) {
        self.next = cell;
        self.pay_tail = pay;
        self.freed = cell;
        // SAFETY: as in poll.
        unsafe { (*self.tail).store(cell as u64 | (pay as u64) << 32, Ordering::Release) };
    }
}
