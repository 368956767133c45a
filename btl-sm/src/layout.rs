//! The one place that decides where everything lives in the node segment. Every component is
//! aligned to the cache line (`Params::line`, read from the machine), never to the page, and all
//! of them are laid out at once (aggregated): O(n) blocks, each padded to a "grain" of two lines
//! so that adjacent-line prefetching never pairs lines written by different processes.
//!
//! ```text
//! [header: info line | slot 0 | slot 1 | ...]             one line each
//! Pairs mode (n_local <= btl_sm_fastbox_max_procs), per receiver r:
//!   [tails: hdr_tail|pay_tail per sender]   8 B each (thread_layout=multi: one line each),
//!                                            grain-padded, written by r only
//!   [header ring s→r for every sender s]     fifo_cells x 64 B, written by s
//!   [payload ring s→r for every sender s]    payload_bytes, written by s
//! Fifo mode, per rank r (queues local to the receiver, fragments local to the sender):
//!   [FIFO head: u64]                         grain; CAS by every sender to r
//!   [FIFO cells]                             fifo_size x line; handed sender → r → sender
//!   [fast box j, for j < fastboxes]          owner word (grain; CAS by senders to claim it),
//!                                            head (grain; its owner only), cells (as the FIFO's)
//!   [fragment pool of sender r]              fragments x (flag line + fragment_size)
//! ```

use crate::params::{Mode, Params};

/// Granularity of a header cell and of payload placement inside a per-pair channel.
pub const CELL: usize = 64;

/// Byte offsets into the segment for one set of parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub n: usize,
    pub mode: Mode,
    pub line: usize,
    /// Two lines: blocks written by different processes start and end on this boundary.
    pub grain: usize,
    pub header_bytes: usize,
    // Pairs mode.
    pub fifo_cells: usize,
    pub payload_bytes: usize,
    /// Distance between two tail records of one receiver (8, or a line when thread_multiple).
    pub tail_stride: usize,
    /// Bytes of one receiver's tail block (0 when n == 1 or in Fifo mode).
    pub tails_bytes: usize,
    pub hdr_ring_bytes: usize,
    pub pay_ring_bytes: usize,
    // Fifo mode.
    pub fifo_size: usize,
    /// Bytes of one FIFO cell (a line, at least 64).
    pub cell_bytes: usize,
    pub fifo_head_bytes: usize,
    pub fifo_cells_bytes: usize,
    pub fastboxes: usize,
    pub fastbox_size: usize,
    /// Bytes of one fast box: owner grain, head grain, cells.
    pub fbox_stride: usize,
    /// Bytes of one fragment slot: a flag line, then the fragment.
    pub frag_stride: usize,
    pub fragments: usize,
    pub pool_bytes: usize,
    /// Bytes of one rank's block (Pairs: tails + incoming rings; Fifo: FIFO + pool).
    pub rx_stride: usize,
    /// Segment size: the header plus n blocks, nothing else.
    pub total: usize,
}

/// Map (and, if nobody has yet, allocate on this CPU's NUMA node) the page holding `w`, an
/// atomically accessed word, without changing it. `black_box` keeps the access: LLVM turns an
/// unused `fetch_add(0)` into a load and then drops it, so such touches did nothing at all (the
/// pages were then faulted in during the first lap of every ring, 4-30 us each on a VM).
pub fn touch_u32(w: &std::sync::atomic::AtomicU32) {
    std::hint::black_box(w.fetch_add(0, std::sync::atomic::Ordering::Relaxed));
}

/// `touch_u32` for a 64-bit word.
pub fn touch_u64(w: &std::sync::atomic::AtomicU64) {
    std::hint::black_box(w.fetch_add(0, std::sync::atomic::Ordering::Relaxed));
}

/// Map the pages of `[start, start + len)` writable in this process now, allocating those nobody
/// has touched yet (on this CPU's NUMA node), without changing a byte: one madvise instead of one
/// fault per page at first use, 4-30 us each on a VM. The range is widened to whole pages; the
/// neighbours' bytes are left as they are too. Best effort: before Linux 5.14 (no
/// MADV_POPULATE_WRITE) the pages are faulted in at first use as before.
pub fn populate(start: *const u8, len: usize) {
    let page = page_size();
    let from = start as usize & !(page - 1);
    let to = (start as usize + len).next_multiple_of(page);
    if let Some(p) = std::ptr::NonNull::new(from as *mut std::ffi::c_void) {
        // SAFETY: the range lies in the caller's shared mapping; MADV_POPULATE_WRITE only
        // faults its pages in (it never changes their contents, unlike MADV_DONTNEED).
        let _ = unsafe {
            nix::sys::mman::madvise(
                p,
                to - from,
                nix::sys::mman::MmapAdvise::MADV_POPULATE_WRITE,
            )
        };
    }
}

pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

pub(crate) fn round_up(x: usize, a: usize) -> Option<usize> {
    Some(x.checked_add(a - 1)? / a * a)
}

/// The model's split of the segment, in bytes; the three parts add up to the total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// Queues and their positions: tails + header rings, or FIFO heads + cells.
    pub queues: u128,
    /// Eager data: per-pair payload rings, or per-sender fragment pools.
    pub eager: u128,
    /// Everything else: the header (info and pid slots).
    pub other: u128,
}

impl Breakdown {
    pub fn total(&self) -> u128 {
        self.queues + self.eager + self.other
    }
}

impl Layout {
    /// None when the sizes overflow `usize`.
    pub fn try_new(p: &Params) -> Option<Layout> {
        let n = p.n_local;
        let line = p.line;
        let grain = line.checked_mul(2)?;
        let channels_in = n.checked_sub(1)?;
        let header_bytes = round_up(line.checked_mul(n.checked_add(1)?)?, grain)?;
        let mode = p.mode();
        let tail_stride = if p.thread_multiple { line } else { 8 };
        let mut l = Layout {
            n,
            mode,
            line,
            grain,
            header_bytes,
            fifo_cells: p.fifo_cells,
            payload_bytes: p.payload_bytes,
            tail_stride,
            tails_bytes: 0,
            hdr_ring_bytes: 0,
            pay_ring_bytes: 0,
            fifo_size: p.fifo_size,
            cell_bytes: line.max(CELL),
            fifo_head_bytes: 0,
            fifo_cells_bytes: 0,
            fastboxes: p.fastboxes,
            fastbox_size: p.fastbox_size,
            fbox_stride: 0,
            frag_stride: 0,
            fragments: p.fragments,
            pool_bytes: 0,
            rx_stride: 0,
            total: 0,
        };
        match mode {
            Mode::Pairs => {
                if n > 1 {
                    l.tails_bytes = round_up(tail_stride.checked_mul(n)?, grain)?;
                }
                // Rings of different senders lie side by side: a grain each at least.
                l.hdr_ring_bytes = round_up(p.fifo_cells.checked_mul(CELL)?, grain)?;
                l.pay_ring_bytes = round_up(p.payload_bytes, grain)?;
                let per_channel = l.hdr_ring_bytes.checked_add(l.pay_ring_bytes)?;
                l.rx_stride = round_up(
                    l.tails_bytes
                        .checked_add(channels_in.checked_mul(per_channel)?)?,
                    grain,
                )?;
            }
            Mode::Fifo => {
                l.fifo_head_bytes = grain;
                l.fifo_cells_bytes = round_up(p.fifo_size.checked_mul(l.cell_bytes)?, grain)?;
                l.fbox_stride = round_up(p.fastbox_size.checked_mul(l.cell_bytes)?, grain)?
                    .checked_add(2 * grain)?;
                l.frag_stride = line.checked_add(round_up(p.fragment_size, line)?)?;
                l.pool_bytes = round_up(p.fragments.checked_mul(l.frag_stride)?, grain)?;
                l.rx_stride = l
                    .fifo_head_bytes
                    .checked_add(l.fifo_cells_bytes)?
                    .checked_add(p.fastboxes.checked_mul(l.fbox_stride)?)?
                    .checked_add(l.pool_bytes)?;
            }
        }
        l.total = header_bytes.checked_add(n.checked_mul(l.rx_stride)?)?;
        Some(l)
    }

    /// Where the segment's bytes go (sums to `total`).
    pub fn breakdown(&self) -> Breakdown {
        let n = self.n as u128;
        let (queues, eager) = match self.mode {
            Mode::Pairs => {
                let eager = n * (n - 1) * self.pay_ring_bytes as u128;
                (n * self.rx_stride as u128 - eager, eager)
            }
            Mode::Fifo => {
                let eager = n * self.pool_bytes as u128;
                (n * self.rx_stride as u128 - eager, eager)
            }
        };
        Breakdown {
            queues,
            eager,
            other: self.header_bytes as u128,
        }
    }

    /// The header's first line: magic, version, fingerprint, params.
    #[inline]
    pub fn info(&self) -> usize {
        0
    }

    /// Rank `i`'s slot line (pid: i32 at +0, attached: u32 at +4).
    #[inline]
    pub fn slot(&self, i: usize) -> usize {
        debug_assert!(i < self.n);
        self.line * (1 + i)
    }

    /// Rank `r`'s block: its incoming rings (Pairs) or its FIFO and fragment pool (Fifo).
    #[inline]
    pub fn rx_block(&self, r: usize) -> usize {
        self.header_bytes + r * self.rx_stride
    }

    /// Index of sender `s` among receiver `r`'s n-1 incoming channels.
    #[inline]
    fn chan(&self, r: usize, s: usize) -> usize {
        debug_assert!(r < self.n && s < self.n && r != s);
        if s < r {
            s
        } else {
            s - 1
        }
    }

    /// Receiver `r`'s tail record for sender `s`: one u64 (hdr_tail low 32 bits, pay_tail high).
    #[inline]
    pub fn tail(&self, r: usize, s: usize) -> usize {
        debug_assert!(self.mode == Mode::Pairs && r < self.n && s < self.n && r != s);
        self.rx_block(r) + self.tail_stride * s
    }

    /// Header ring of channel s→r.
    #[inline]
    pub fn hdr_ring(&self, r: usize, s: usize) -> usize {
        self.rx_block(r) + self.tails_bytes + self.chan(r, s) * self.hdr_ring_bytes
    }

    /// Payload ring of channel s→r.
    #[inline]
    pub fn pay_ring(&self, r: usize, s: usize) -> usize {
        self.rx_block(r)
            + self.tails_bytes
            + (self.n - 1) * self.hdr_ring_bytes
            + self.chan(r, s) * self.pay_ring_bytes
    }

    /// Receiver `r`'s FIFO head (the next enqueue position, a u64 every sender CASes).
    #[inline]
    pub fn fifo_head(&self, r: usize) -> usize {
        debug_assert!(self.mode == Mode::Fifo);
        self.rx_block(r)
    }

    /// Receiver `r`'s first FIFO cell.
    #[inline]
    pub fn fifo_cells(&self, r: usize) -> usize {
        self.rx_block(r) + self.fifo_head_bytes
    }

    /// Receiver `r`'s fast box `j`: its owner word (0 free, else owner + 1); the head word is
    /// one grain further, the cells two.
    #[inline]
    pub fn fbox(&self, r: usize, j: usize) -> usize {
        debug_assert!(j < self.fastboxes);
        self.rx_block(r) + self.fifo_head_bytes + self.fifo_cells_bytes + j * self.fbox_stride
    }

    /// Sender `s`'s fragment pool (fragment i's flag line at `+ i * frag_stride`).
    #[inline]
    pub fn pool(&self, s: usize) -> usize {
        self.rx_block(s)
            + self.fifo_head_bytes
            + self.fifo_cells_bytes
            + self.fastboxes * self.fbox_stride
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::auto_size;

    fn params(n: usize, kv: &[(&str, String)]) -> Params {
        Params::resolve(n, &|k| {
            kv.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.clone())
        })
        .unwrap()
    }

    /// Who may write a region. Regions of different writers must never share a grain.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Writer {
        /// The info line (first attacher) and the pid slots: written once at attach.
        Header,
        Rank(usize),
        /// Receiver r's FIFO head: every sender to r (CAS).
        FifoHead(usize),
        /// Receiver r's FIFO cells: a sender, then r, in turn per cell.
        FifoCells(usize),
        /// Sender s's pool: s, and the receiver that clears a fragment's flag.
        Pool(usize),
        /// Receiver r's fast box j: owner word (CAS by claimants), head (its owner), cells.
        FboxOwner(usize, usize),
        FboxHead(usize, usize),
        FboxCells(usize, usize),
    }

    #[derive(Debug)]
    struct Region {
        start: usize,
        len: usize,
        what: String,
        writer: Writer,
    }

    fn regions(l: &Layout) -> Vec<Region> {
        let mut v = vec![Region {
            start: l.info(),
            len: l.line,
            what: "info".into(),
            writer: Writer::Header,
        }];
        for i in 0..l.n {
            v.push(Region {
                start: l.slot(i),
                len: l.line,
                what: format!("slot {i}"),
                writer: Writer::Header,
            });
        }
        for r in 0..l.n {
            match l.mode {
                Mode::Pairs => {
                    for s in (0..l.n).filter(|&s| s != r) {
                        v.push(Region {
                            start: l.tail(r, s),
                            len: 8,
                            what: format!("tail {s}->{r}"),
                            writer: Writer::Rank(r),
                        });
                        v.push(Region {
                            start: l.hdr_ring(r, s),
                            len: l.fifo_cells * CELL,
                            what: format!("hdr ring {s}->{r}"),
                            writer: Writer::Rank(s),
                        });
                        v.push(Region {
                            start: l.pay_ring(r, s),
                            len: l.payload_bytes,
                            what: format!("pay ring {s}->{r}"),
                            writer: Writer::Rank(s),
                        });
                    }
                }
                Mode::Fifo => {
                    v.push(Region {
                        start: l.fifo_head(r),
                        len: 8,
                        what: format!("fifo head {r}"),
                        writer: Writer::FifoHead(r),
                    });
                    v.push(Region {
                        start: l.fifo_cells(r),
                        len: l.fifo_size * l.cell_bytes,
                        what: format!("fifo cells {r}"),
                        writer: Writer::FifoCells(r),
                    });
                    for j in 0..l.fastboxes {
                        let at = l.fbox(r, j);
                        for (k, w) in [
                            Writer::FboxOwner(r, j),
                            Writer::FboxHead(r, j),
                            Writer::FboxCells(r, j),
                        ]
                        .into_iter()
                        .enumerate()
                        {
                            v.push(Region {
                                start: at + k * l.grain,
                                len: if k < 2 {
                                    8
                                } else {
                                    l.fastbox_size * l.cell_bytes
                                },
                                what: format!("fast box {j} of {r} part {k}"),
                                writer: w,
                            });
                        }
                    }
                    for i in 0..l.fragments {
                        v.push(Region {
                            start: l.pool(r) + i * l.frag_stride,
                            len: l.frag_stride,
                            what: format!("fragment {i} of {r}"),
                            writer: Writer::Pool(r),
                        });
                    }
                }
            }
        }
        v
    }

    fn check(p: &Params) -> Layout {
        let l = Layout::try_new(p).unwrap();
        assert_eq!(l.total % l.line, 0);
        let b = l.breakdown();
        assert_eq!(b.total(), l.total as u128, "breakdown adds up");
        let mut v = regions(&l);
        for r in &v {
            assert!(r.start + r.len <= l.total, "{} outside segment", r.what);
            let align = if r.len == 8 && r.what.starts_with("tail") {
                l.tail_stride
            } else {
                l.line
            };
            assert_eq!(r.start % align, 0, "{} not {align}-aligned", r.what);
        }
        assert!(l.header_bytes >= l.line * (l.n + 1));
        v.sort_by_key(|r| r.start);
        for w in v.windows(2) {
            assert!(
                w[0].start + w[0].len <= w[1].start,
                "{} overlaps {}",
                w[0].what,
                w[1].what
            );
        }
        // No grain (two lines) holds regions of two writers. Regions are sorted and disjoint,
        // so the regions touching one grain are consecutive: comparing neighbours covers it.
        for w in v.windows(2) {
            if (w[0].start + w[0].len - 1) / l.grain == w[1].start / l.grain {
                assert_eq!(
                    w[0].writer, w[1].writer,
                    "{} and {} share a grain",
                    w[0].what, w[1].what
                );
            }
        }
        // In the multi-threaded layout, every tail has a line of its own.
        if p.thread_multiple && l.mode == Mode::Pairs {
            let tails: Vec<&Region> = v.iter().filter(|r| r.what.starts_with("tail")).collect();
            for w in tails.windows(2) {
                assert_ne!(w[0].start / l.line, w[1].start / l.line);
            }
        }
        l
    }

    #[test]
    fn invariants_many_n_and_tunables() {
        for &n in &[1usize, 2, 3, 5, 8, 33, 64, 200] {
            let (c, b) = auto_size(n);
            let sets: Vec<Vec<(&str, String)>> = vec![
                vec![],
                vec![("btl_sm_fastbox_max_procs", "0".into())],
                vec![("btl_sm_fastbox_max_procs", "1000".into())],
                vec![
                    ("btl_sm_fastbox_max_procs", "1000".into()),
                    ("btl_sm_fifo_cells", "4".into()),
                    ("btl_sm_payload_bytes", "1024".into()),
                ],
                vec![
                    ("btl_sm_fastbox_max_procs", "1000".into()),
                    ("btl_sm_fifo_cells", c.to_string()),
                    ("btl_sm_payload_bytes", b.to_string()),
                ],
                vec![
                    ("btl_sm_fastbox_max_procs", "0".into()),
                    ("btl_sm_fastboxes", "0".into()),
                ],
                vec![
                    ("btl_sm_fastbox_max_procs", "0".into()),
                    ("btl_sm_fastboxes", "3".into()),
                    ("btl_sm_fastbox_size", "2".into()),
                    ("btl_sm_fifo_size", "2".into()),
                    ("btl_sm_fragments", "3".into()),
                    ("btl_sm_fragment_size", "192".into()),
                ],
            ];
            for set in sets {
                for line in ["64", "128", "256"] {
                    for tl in ["single", "multi"] {
                        let mut kv = set.clone();
                        kv.push(("btl_sm_cacheline_size", line.into()));
                        kv.push(("btl_sm_thread_layout", tl.into()));
                        let p = params(n, &kv);
                        if n * n * (p.fifo_cells + p.payload_bytes / 64) > 20_000_000 {
                            continue;
                        }
                        check(&p);
                    }
                }
            }
        }
    }

    #[test]
    fn n_one_has_no_channels() {
        let l = check(&params(1, &[]));
        assert_eq!(l.rx_stride, 0);
        assert_eq!(l.total, l.header_bytes);
    }

    #[test]
    fn default_at_1024_is_small_and_o_n() {
        let p = params(1024, &[("btl_sm_cacheline_size", "64".into())]);
        let l = check(&p);
        assert_eq!(l.mode, Mode::Fifo);
        assert!(l.total <= 300_000_000, "{}", l.total);
        // Linear in n: doubling n at most doubles the segment (plus the header's lines).
        let l2 = Layout::try_new(&params(2048, &[("btl_sm_cacheline_size", "64".into())])).unwrap();
        assert!(l2.total <= 2 * l.total + 1024 * 64);
    }

    #[test]
    fn multi_thread_layout_costs_lines() {
        let a = Layout::try_new(&params(8, &[])).unwrap();
        let b = Layout::try_new(&params(8, &[("btl_sm_thread_layout", "multi".into())])).unwrap();
        assert!(b.total > a.total);
        assert_eq!(b.breakdown().eager, a.breakdown().eager);
    }
}
