//! The one place that decides where everything lives in the node segment.
//!
//! ```text
//! [header: info line | slot 0 | slot 1 | ...]            page-aligned, one 64 B line each
//! receiver 0: [tails: hdr_tail|pay_tail per sender]       128 B-aligned, written by receiver 0 only
//!             [header ring s→0 for every sender s != 0]   fifo_cells x 64 B each, written by s
//!             [payload ring s→0 for every sender s != 0]  payload_bytes each, written by s
//! receiver 1: ...
//! ```
//! A receiver's incoming rings are adjacent so its polling loop touches one region.
//! The tail block is padded to 128 B (not just 64) so adjacent-line prefetching never pairs a
//! receiver-written line with a sender-written one.

use crate::params::Params;

pub const LINE: usize = 64;
/// Granularity of blocks written by different processes (adjacent-line prefetch pairs).
pub const SHARE_GRAIN: usize = 128;
pub const CELL: usize = 64;

/// Byte offsets into the segment for one set of parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub n: usize,
    pub fifo_cells: usize,
    pub payload_bytes: usize,
    pub header_bytes: usize,
    /// Bytes of one receiver's tail block (0 when n == 1: there are no channels).
    pub tails_bytes: usize,
    pub hdr_ring_bytes: usize,
    /// Bytes of one receiver's block (tails + incoming rings).
    pub rx_stride: usize,
    /// Segment size: a multiple of the page size.
    pub total: usize,
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

fn round_up(x: usize, a: usize) -> Option<usize> {
    Some(x.checked_add(a - 1)? / a * a)
}

impl Layout {
    /// None when the sizes overflow `usize`.
    pub fn try_new(p: &Params) -> Option<Layout> {
        Self::with_page(p, page_size())
    }

    pub fn with_page(p: &Params, page: usize) -> Option<Layout> {
        let n = p.n_local;
        let channels_in = n.checked_sub(1)?;
        let header_bytes = round_up(LINE.checked_mul(n.checked_add(1)?)?, page)?;
        let tails_bytes = if n > 1 {
            round_up(8 * n, SHARE_GRAIN)?
        } else {
            0
        };
        let hdr_ring_bytes = p.fifo_cells.checked_mul(CELL)?;
        let per_channel = hdr_ring_bytes.checked_add(p.payload_bytes)?;
        let rx_stride = tails_bytes.checked_add(channels_in.checked_mul(per_channel)?)?;
        let total = round_up(header_bytes.checked_add(n.checked_mul(rx_stride)?)?, page)?;
        Some(Layout {
            n,
            fifo_cells: p.fifo_cells,
            payload_bytes: p.payload_bytes,
            header_bytes,
            tails_bytes,
            hdr_ring_bytes,
            rx_stride,
            total,
        })
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
        LINE * (1 + i)
    }

    #[inline]
    fn rx_block(&self, r: usize) -> usize {
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
        debug_assert!(r < self.n && s < self.n && r != s);
        self.rx_block(r) + 8 * s
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
            + self.chan(r, s) * self.payload_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{auto_size, SingleCopy};

    fn params(n: usize, fifo_cells: usize, payload_bytes: usize) -> Params {
        Params {
            n_local: n,
            fifo_cells,
            payload_bytes,
            eager_limit: 4096,
            single_copy: SingleCopy::Cma,
        }
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum What {
        Info,
        Slot(usize),
        /// (sender, receiver)
        Tail(usize, usize),
        HdrRing(usize, usize),
        PayRing(usize, usize),
    }

    struct Region {
        start: usize,
        len: usize,
        what: What,
    }

    impl Region {
        /// The one rank that writes it (None: the header info line, written by several).
        fn writer(&self) -> Option<usize> {
            match self.what {
                What::Info => None,
                What::Slot(i) => Some(i),
                What::Tail(_, r) => Some(r),
                What::HdrRing(s, _) | What::PayRing(s, _) => Some(s),
            }
        }
        fn in_rx_block(&self) -> bool {
            !matches!(self.what, What::Info | What::Slot(_))
        }
    }

    fn regions(l: &Layout) -> Vec<Region> {
        let mut v = vec![Region {
            start: l.info(),
            len: LINE,
            what: What::Info,
        }];
        for i in 0..l.n {
            v.push(Region {
                start: l.slot(i),
                len: LINE,
                what: What::Slot(i),
            });
        }
        for r in 0..l.n {
            for s in (0..l.n).filter(|&s| s != r) {
                v.push(Region {
                    start: l.tail(r, s),
                    len: 8,
                    what: What::Tail(s, r),
                });
                v.push(Region {
                    start: l.hdr_ring(r, s),
                    len: l.hdr_ring_bytes,
                    what: What::HdrRing(s, r),
                });
                v.push(Region {
                    start: l.pay_ring(r, s),
                    len: l.payload_bytes,
                    what: What::PayRing(s, r),
                });
            }
        }
        v
    }

    fn check(p: &Params, page: usize) -> Layout {
        let l = Layout::with_page(p, page).unwrap();
        assert_eq!(l.total % page, 0);
        assert_eq!(l.header_bytes % page, 0);
        let mut v = regions(&l);
        for r in &v {
            assert!(r.start + r.len <= l.total, "{:?} outside segment", r.what);
            if let What::Tail(..) = r.what {
                assert_eq!(r.start % 8, 0, "{:?} not 8-aligned", r.what);
            } else {
                assert_eq!(r.start % LINE, 0, "{:?} not 64-aligned", r.what);
            }
        }
        assert!(l.header_bytes >= LINE * (l.n + 1));
        v.sort_by_key(|r| r.start);
        for w in v.windows(2) {
            assert!(
                w[0].start + w[0].len <= w[1].start,
                "{:?} overlaps {:?}",
                w[0].what,
                w[1].what
            );
        }
        // Tail records (receiver-written) vs ring data (sender-written): no shared
        // SHARE_GRAIN-sized block, hence no shared 64-byte line either. Regions are sorted and
        // disjoint, so the regions touching one grain are consecutive: comparing neighbours
        // that meet in a grain covers every pair.
        let grains: Vec<&Region> = v.iter().filter(|r| r.in_rx_block()).collect();
        for w in grains.windows(2) {
            if (w[0].start + w[0].len - 1) / SHARE_GRAIN == w[1].start / SHARE_GRAIN {
                assert_eq!(
                    w[0].writer(),
                    w[1].writer(),
                    "{:?} and {:?} share a line",
                    w[0].what,
                    w[1].what
                );
            }
        }
        // Tails and rings stay out of the header.
        for r in v.iter().filter(|r| r.in_rx_block()) {
            assert!(r.start >= l.header_bytes, "{:?} inside the header", r.what);
        }
        l
    }

    #[test]
    fn invariants_many_n() {
        for &n in &[1usize, 2, 3, 5, 8, 64, 1024] {
            let (c, b) = auto_size(n);
            for &(c, b) in &[(c, b), (4, 1024), (8, 4096), (1024, 1 << 20)] {
                if n == 1024 && (c, b) != (4, 1024) {
                    continue; // millions of regions; one set of tunables is enough here
                }
                let pages: &[usize] = if n == 1024 {
                    &[4096]
                } else {
                    &[4096, 16384, 65536]
                };
                for &page in pages {
                    check(&params(n, c, b), page);
                }
            }
        }
    }

    #[test]
    fn n_one_has_no_channels() {
        let l = check(&params(1, 64, 65536), 4096);
        assert_eq!(l.total, 4096);
        assert_eq!(l.rx_stride, 0);
    }

    #[test]
    fn sizes_with_defaults() {
        for &n in &[1usize, 2, 8, 64, 1024] {
            let p = Params::resolve(n, &|_| None).unwrap();
            let l = Layout::try_new(&p).unwrap();
            assert_eq!(crate::segment_size(&p), l.total);
            println!(
                "n={n:5} fifo_cells={:3} payload_bytes={:6} segment_size={} ({:.1} MiB)",
                p.fifo_cells,
                p.payload_bytes,
                l.total,
                l.total as f64 / (1 << 20) as f64
            );
            // Rings within the auto budget (or at their floors), plus small per-rank overhead.
            let rings = (n * (n - 1) * (p.fifo_cells * 64 + p.payload_bytes))
                .max(crate::params::AUTO_BUDGET.min(n * (n - 1) * 1280));
            assert!(l.total <= rings + n * (8 * n + 256) + 2 * 65536);
        }
    }
}
