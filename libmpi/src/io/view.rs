//! A file view (MPI_File_set_view): displacement, etype and filetype. The data a process sees
//! is a stream of bytes (the filetype's data, tiled from the displacement); `segments` maps a
//! range of that stream to file byte ranges, skipping the filetype's holes.

use std::sync::Arc;

use crate::datatype::{table, Layout};
use crate::error::{err, ErrorClass, Result};

/// MPI_BYTE, the etype and filetype of a file opened without a view.
pub const BYTE: usize = 0x201;

#[derive(Debug)]
pub struct View {
    pub disp: u64,
    /// Handles as the user gave them; derived ones are our own duplicates (freed with the view).
    pub etype: usize,
    pub filetype: usize,
    pub etype_size: u64,
    pub datarep: String,
    ft_size: u64,
    ft_extent: i64,
    /// One filetype element's data blocks in type-map order: (offset, length, packed start).
    blocks: Vec<(i64, u64, u64)>,
    /// The filetype tiles the file from the displacement: stream byte s is file byte disp + s.
    dense: bool,
}

fn is_derived(h: usize) -> bool {
    crate::datatype::lookup(h).is_none()
}

impl View {
    /// The view of a newly opened file: bytes, from byte 0.
    pub fn bytes() -> View {
        View::build(
            0,
            BYTE,
            BYTE,
            "native".into(),
            &Layout::predefined(BYTE, 1),
            1,
        )
        .expect("MPI_BYTE view")
    }

    /// Check and build the view; derived types must be committed and are duplicated.
    /// `writable`: the file was not opened read-only (overlapping blocks are refused).
    pub fn new(
        disp: u64,
        etype: usize,
        filetype: usize,
        datarep: &str,
        writable: bool,
    ) -> Result<View> {
        super::datarep::check(datarep)?;
        let e = usable(etype, "etype")?;
        let f = usable(filetype, "filetype")?;
        if e.size() == 0 || f.size() == 0 || f.size() % e.size() != 0 {
            return err(
                ErrorClass::Type,
                format!(
                    "the filetype's size ({}) is not a multiple of the etype's ({})",
                    f.size(),
                    e.size()
                ),
            );
        }
        monotonic(&e, "etype", writable)?;
        monotonic(&f, "filetype", writable)?;
        let et = if is_derived(etype) {
            table::dup(etype)?
        } else {
            etype
        };
        let ft = if is_derived(filetype) {
            table::dup(filetype)?
        } else {
            filetype
        };
        View::build(disp, et, ft, datarep.into(), &f, e.size() as u64)
    }

    fn build(
        disp: u64,
        etype: usize,
        filetype: usize,
        datarep: String,
        f: &Layout,
        etype_size: u64,
    ) -> Result<View> {
        let mut blocks: Vec<(i64, u64, u64)> = Vec::new();
        let mut start = 0u64;
        f.for_each_block(|off, len| {
            match blocks.last_mut() {
                Some(b) if b.0 + b.1 as i64 == off as i64 => b.1 += len as u64,
                _ => blocks.push((off as i64, len as u64, start)),
            }
            start += len as u64;
        });
        let dense = matches!(blocks[..], [(0, len, 0)] if len as i64 == f.extent() as i64);
        Ok(View {
            dense,
            disp,
            etype,
            filetype,
            etype_size,
            datarep,
            ft_size: f.size() as u64,
            ft_extent: f.extent() as i64,
            blocks,
        })
    }

    /// The file byte ranges of stream bytes [s, s + n), in stream order; ranges that touch
    /// are merged, so a dense filetype (bytes, a contiguous type) gives one range.
    pub fn segments(
        &self,
        s: u64,
        n: u64,
        mut f: impl FnMut(u64, u64) -> Result<()>,
    ) -> Result<()> {
        if self.dense {
            return match self.disp.checked_add(s) {
                Some(at) if at.checked_add(n).is_some_and(|e| e <= i64::MAX as u64) => f(at, n),
                _ => err(
                    ErrorClass::Io,
                    "the access lies beyond the largest file offset",
                ),
            };
        }
        let mut run: Option<(u64, u64)> = None;
        self.pieces(s, n, |at, len| {
            match &mut run {
                Some((a, l)) if *a + *l == at => *l += len,
                _ => {
                    if let Some((a, l)) = run.take() {
                        f(a, l)?;
                    }
                    run = Some((at, len));
                }
            }
            Ok(())
        })?;
        match run {
            Some((a, l)) => f(a, l),
            None => Ok(()),
        }
    }

    /// The file range of each filetype block that stream bytes [s, s + n) touch.
    fn pieces(
        &self,
        mut s: u64,
        mut n: u64,
        mut f: impl FnMut(u64, u64) -> Result<()>,
    ) -> Result<()> {
        while n > 0 {
            let (k, r) = (s / self.ft_size, s % self.ft_size);
            let i = self.blocks.partition_point(|b| b.2 <= r) - 1;
            let (off, len, start) = self.blocks[i];
            let within = r - start;
            let take = (len - within).min(n);
            let at = self.disp as i128
                + k as i128 * self.ft_extent as i128
                + off as i128
                + within as i128;
            if at < 0 || at + take as i128 > i64::MAX as i128 {
                return err(
                    ErrorClass::Io,
                    format!("the view maps data to file offset {at}"),
                );
            }
            f(at as u64, take)?;
            s += take;
            n -= take;
        }
        Ok(())
    }

    /// The absolute byte position of view offset `offset` (in etypes).
    pub fn byte_offset(&self, offset: u64) -> Result<u64> {
        let mut at = None;
        self.segments(offset * self.etype_size, 1, |o, _| {
            at = Some(o);
            Ok(())
        })?;
        Ok(at.unwrap_or(self.disp))
    }

    /// The view offset (in etypes) of the end of a file of `size` bytes: the first etype whose
    /// data lies at or past it.
    pub fn offset_of_end(&self, size: u64) -> u64 {
        if size <= self.disp || self.ft_extent <= 0 {
            return 0;
        }
        let rel = (size - self.disp) as i128;
        let k = (rel / self.ft_extent as i128) as u64;
        let base = k as i128 * self.ft_extent as i128;
        let mut data = k * self.ft_size;
        for &(off, len, _) in &self.blocks {
            let before = rel - (base + off as i128);
            data += before.clamp(0, len as i128) as u64;
        }
        data.div_ceil(self.etype_size)
    }
}

impl Drop for View {
    /// Free the duplicated derived types.
    fn drop(&mut self) {
        for h in [self.etype, self.filetype] {
            if is_derived(h) {
                let _ = table::free(h);
            }
        }
    }
}

/// MPI 4.1 §14.3: displacements in a view's types are non-negative and monotonically
/// nondecreasing; overlapping blocks are refused too when the file can be written (all
/// MPI_ERR_IO, as ROMIO does).
fn monotonic(l: &Layout, what: &str, writable: bool) -> Result<()> {
    let (mut prev, mut end) = (0isize, 0isize);
    let mut bad = None;
    l.for_each_block(|off, len| {
        if bad.is_none() && (off < prev || (writable && off < end)) {
            bad = Some(off);
        }
        prev = off;
        end = end.max(off + len as isize);
    });
    match bad {
        None => Ok(()),
        Some(off) => err(
            ErrorClass::Io,
            format!(
                "the {what}'s displacements must be non-negative and increasing{} (a block at {off})",
                if writable { " without overlaps in a writable file" } else { "" }
            ),
        ),
    }
}

/// A type usable in a view: predefined, or derived and committed.
fn usable(h: usize, what: &str) -> Result<Arc<Layout>> {
    if crate::datatype::lookup(h).is_some() {
        return table::layout(h);
    }
    table::committed(h)
        .map_err(|e| crate::error::Error::new(e.class, format!("{what}: {}", e.message)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(disp: u64, f: &Layout, etype_size: u64) -> View {
        View::build(disp, BYTE, BYTE, "native".into(), f, etype_size).unwrap()
    }

    fn ranges(v: &View, s: u64, n: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        v.segments(s, n, |a, l| {
            out.push((a, l));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn bytes_are_one_range() {
        let v = View::bytes();
        assert_eq!(ranges(&v, 5, 1 << 20), vec![(5, 1 << 20)]);
    }

    #[test]
    fn strided_view_skips_the_holes() {
        // Two 4-byte ints, then a hole of 16 bytes: each element is 8 data bytes in 24.
        let int = Layout::basic(4, 4);
        let pair = Layout::contiguous(2, &int).unwrap();
        let ft = Layout::resized(&pair, 0, 24).unwrap();
        let v = view(100, &ft, 4);
        assert_eq!(ranges(&v, 0, 20), vec![(100, 8), (124, 8), (148, 4)]);
        assert_eq!(ranges(&v, 6, 4), vec![(106, 2), (124, 2)]);
        assert_eq!(v.byte_offset(3).unwrap(), 128);
        // The end of a 130-byte file: 8 bytes of element 0 and 6 of element 1 lie before it.
        assert_eq!(v.offset_of_end(130), 4);
        assert_eq!(v.offset_of_end(50), 0);
    }

    #[test]
    fn view_types_must_increase() {
        let int = Layout::basic(4, 4);
        let down = Layout::hindexed(&[(1, 8), (1, 0)], &int).unwrap();
        assert!(monotonic(&down, "filetype", false).is_err());
        let overlap = Layout::hindexed(&[(3, 0), (1, 4)], &int).unwrap();
        assert!(monotonic(&overlap, "filetype", true).is_err());
        assert!(monotonic(&overlap, "filetype", false).is_ok());
    }
}
