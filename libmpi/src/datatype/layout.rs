//! The layout of one element of a datatype: its contiguous blocks in type-map order (adjacent
//! ones merged), its size, bounds (lb/ub, which set the extent) and true bounds. Every MPI type
//! constructor is expressed with one operation, `Builder::append`: "`count` copies of `child`,
//! one extent apart, starting at byte displacement `disp`". A vector of contiguous blocks stays
//! compact — one block repeated `reps` times `rep_stride` apart — until it is nested inside
//! another constructor, so a strided type over a huge array costs a few words, not a list.

use crate::error::{err, ErrorClass, Result};

/// A contiguous run of bytes at `off` from the element's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub off: isize,
    pub len: usize,
}

/// Bound on the blocks of one element: a type more fragmented than this is refused with
/// MPI_ERR_NO_MEM rather than exhausting memory.
pub const MAX_BLOCKS: usize = 1 << 22;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// One repetition's blocks.
    blocks: Vec<Block>,
    /// `starts[i]`: bytes of a packed repetition before block i (to seek into an element).
    starts: Vec<usize>,
    /// The element is `reps` copies of `blocks`, `rep_stride` bytes apart (1 and 0 but for
    /// compact vectors).
    reps: usize,
    rep_stride: isize,
    /// Bytes of one repetition.
    rep_size: usize,
    size: usize,
    lb: isize,
    ub: isize,
    true_lb: isize,
    true_ub: isize,
    /// Largest alignment of a basic type inside (struct extents are padded to it).
    align: usize,
    /// Bounds were set by MPI_Type_create_resized (here or in a component): no struct padding.
    explicit: bool,
    /// Basic elements in one element, and their common size if they all have one
    /// (for MPI_Get_elements).
    elements: usize,
    basic_size: Option<usize>,
    /// The predefined type (ABI handle) every basic element of the type map has, if they all
    /// have the same one: what a reduction over this type applies its op to.
    basic_type: Option<usize>,
}

/// Alignment of a basic type of `size` bytes on x86-64/aarch64 LP64.
fn basic_align(size: usize) -> usize {
    match size {
        0 => 1,
        s if s.is_power_of_two() && s <= 16 => s,
        _ => 8,
    }
}

impl Layout {
    /// A basic type: `size` contiguous bytes, extent `size`, aligned to `align`.
    pub fn basic(size: usize, align: usize) -> Layout {
        let blocks = if size == 0 {
            vec![]
        } else {
            vec![Block { off: 0, len: size }]
        };
        Layout {
            starts: vec![0; blocks.len()],
            blocks,
            reps: 1,
            rep_stride: 0,
            rep_size: size,
            size,
            lb: 0,
            ub: size as isize,
            true_lb: 0,
            true_ub: size as isize,
            align: align.max(1),
            explicit: false,
            elements: (size > 0) as usize,
            basic_size: (size > 0).then_some(size),
            basic_type: None,
        }
    }

    /// The layout of a predefined type of `size` bytes with ABI handle `handle`. The pair
    /// types for MINLOC/MAXLOC are laid out as their C structs, padding excluded.
    pub fn predefined(handle: usize, size: usize) -> Layout {
        let pair = |a: usize, b_off: isize, extent: usize, align: usize| {
            let mut b = Builder::default();
            b.push(0, a);
            b.push(b_off, 4);
            let mut l = b.finish(false).expect("two small blocks");
            l.ub = extent as isize;
            l.align = align;
            l.elements = 2;
            l.basic_size = None;
            l
        };
        let mut l = match handle {
            0x229 | 0x22a => pair(8, 8, 16, 8), // MPI_DOUBLE_INT, MPI_LONG_INT
            0x22c => pair(2, 4, 8, 4),          // MPI_SHORT_INT
            0x22d => pair(16, 16, 32, 16),      // MPI_LONG_DOUBLE_INT
            // Pairs without padding: MPI_FLOAT_INT, MPI_2INT, MPI_2REAL, MPI_2INTEGER;
            // MPI_2DOUBLE_PRECISION.
            0x228 | 0x22b | 0x230 | 0x232 => Layout::basic(size, 4).of_two(),
            0x231 => Layout::basic(size, 8).of_two(),
            0x212 | 0x213 | 0x21b => Layout::basic(size, 4),
            0x216 | 0x217 | 0x21d => Layout::basic(size, 8),
            _ => Layout::basic(size, basic_align(size)),
        };
        l.basic_type = Some(handle);
        l
    }

    /// The predefined type all basic elements share (None when they differ or for a type
    /// built from `Layout::basic`).
    pub fn basic_type(&self) -> Option<usize> {
        self.basic_type
    }

    /// One element is `size` bytes at offset 0, one extent long: `count` elements are one run
    /// from the buffer start, so the type moves as plain bytes.
    pub fn is_dense(&self) -> bool {
        self.size == 0
            || (self.lb == 0
                && self.extent() == self.size as isize
                && self.contiguous_run(2) == Some((0, 2 * self.size)))
    }

    /// A basic type that counts as two basic elements of half its size.
    fn of_two(mut self) -> Layout {
        self.elements = 2;
        self.basic_size = Some(self.size / 2);
        self
    }

    /// The blocks of one repetition (`reps` of them make an element).
    pub fn rep_blocks(&self) -> &[Block] {
        &self.blocks
    }
    pub fn reps(&self) -> usize {
        self.reps
    }
    pub fn rep_stride(&self) -> isize {
        self.rep_stride
    }

    /// Every block of one element, repetitions expanded: `f(offset, length)` in type-map order.
    pub fn for_each_block(&self, mut f: impl FnMut(isize, usize)) {
        for r in 0..self.reps as isize {
            let base = r.wrapping_mul(self.rep_stride);
            for b in &self.blocks {
                f(base + b.off, b.len);
            }
        }
    }
    /// Bytes of data in one element (MPI_Type_size).
    pub fn size(&self) -> usize {
        self.size
    }
    pub fn lb(&self) -> isize {
        self.lb
    }
    pub fn ub(&self) -> isize {
        self.ub
    }
    pub fn extent(&self) -> isize {
        self.ub - self.lb
    }
    pub fn true_lb(&self) -> isize {
        self.true_lb
    }
    pub fn true_extent(&self) -> isize {
        self.true_ub - self.true_lb
    }

    /// Where packed byte `r` of an element lies (r < size): (repetition, block, offset in it).
    pub(crate) fn seek(&self, r: usize) -> (usize, usize, usize) {
        let (rep, r) = (r / self.rep_size, r % self.rep_size);
        let i = self.starts.partition_point(|&s| s <= r) - 1;
        (rep, i, r - self.starts[i])
    }

    /// Basic elements in the first `bytes` packed bytes of a message of this type; None when
    /// `bytes` ends inside a basic element or the element sizes differ (MPI_Get_elements).
    pub fn elements_in(&self, bytes: usize) -> Option<usize> {
        if self.size == 0 {
            return Some(0);
        }
        let (full, rem) = (bytes / self.size, bytes % self.size);
        let part = match (rem, self.basic_size) {
            (0, _) => 0,
            (r, Some(b)) if r % b == 0 => r / b,
            _ => return None,
        };
        full.checked_mul(self.elements)?.checked_add(part)
    }

    /// Whether `bytes` packed bytes end inside a basic element: a message of another type
    /// signature (told only when every basic element has one size).
    pub fn splits_element(&self, bytes: usize) -> bool {
        self.size > 0
            && self
                .basic_size
                .is_some_and(|b| !(bytes % self.size).is_multiple_of(b))
    }

    /// Packed bytes of the first `n` basic elements of a message of this type (the inverse of
    /// `elements_in`); None when the basic sizes differ inside an element and `n` ends within
    /// one, or on overflow.
    pub fn bytes_of_elements(&self, n: usize) -> Option<usize> {
        if self.elements == 0 {
            return (n == 0).then_some(0);
        }
        let (full, rem) = (n / self.elements, n % self.elements);
        let part = match (rem, self.basic_size) {
            (0, _) => 0,
            (r, Some(b)) => r.checked_mul(b)?,
            _ => return None,
        };
        full.checked_mul(self.size)?.checked_add(part)
    }

    /// Where `count` elements lie as one contiguous run: (byte offset from the buffer, length).
    /// None when there are gaps or reordering, so the bytes must be packed.
    pub fn contiguous_run(&self, count: usize) -> Option<(isize, usize)> {
        match self.blocks.as_slice() {
            [] => Some((0, 0)),
            _ if self.reps > 1 => None,
            [b] if count <= 1 || b.len as isize == self.extent() => {
                Some((b.off, b.len.checked_mul(count)?))
            }
            _ => None,
        }
    }

    /// The byte range [lo, hi) that `count` elements touch, relative to the buffer; (0, 0) when
    /// they touch nothing.
    pub fn span(&self, count: usize) -> Option<(isize, isize)> {
        if count == 0 || self.size == 0 {
            return Some((0, 0));
        }
        let last = (count as isize - 1).checked_mul(self.extent())?;
        Some((
            self.true_lb.checked_add(last.min(0))?,
            self.true_ub.checked_add(last.max(0))?,
        ))
    }

    // ---- constructors (MPI_Type_*): `count`s and lengths are already checked non-negative.

    pub fn contiguous(count: usize, old: &Layout) -> Result<Layout> {
        let mut b = Builder::default();
        b.append(old, 0, count)?;
        b.finish(old.explicit)
    }

    /// `count` blocks of `blocklen` elements, `stride` bytes apart (MPI_Type_create_hvector;
    /// MPI_Type_vector passes stride × extent).
    pub fn hvector(count: usize, blocklen: usize, stride: isize, old: &Layout) -> Result<Layout> {
        if let (true, Some((off, len))) = (count > 1, old.contiguous_run(blocklen)) {
            if len > 0 && stride != len as isize {
                // Compact: bounds from the first and last block (they are linear in i).
                let mut b = Builder::default();
                b.append(old, 0, blocklen)?;
                b.append(old, mul(count as isize - 1, stride)?, blocklen)?;
                let mut l = b.finish(old.explicit)?;
                l.blocks = vec![Block { off, len }];
                l.starts = vec![0];
                l.reps = count;
                l.rep_stride = stride;
                l.rep_size = len;
                l.size = len.checked_mul(count).ok_or_else(overflow)?;
                l.elements = old.elements.saturating_mul(blocklen).saturating_mul(count);
                return Ok(l);
            }
        }
        let mut b = Builder::default();
        for i in 0..count {
            b.append(old, mul(i as isize, stride)?, blocklen)?;
        }
        b.finish(old.explicit)
    }

    /// Blocks of `blocklen[i]` elements at byte displacements `disp[i]` (MPI_Type_create_hindexed;
    /// the element-displacement forms multiply by the extent first).
    pub fn hindexed(blocks: &[(usize, isize)], old: &Layout) -> Result<Layout> {
        let mut b = Builder::default();
        for &(len, disp) in blocks {
            b.append(old, disp, len)?;
        }
        b.finish(old.explicit)
    }

    /// MPI_Type_create_struct: (blocklength, byte displacement, type) per block. The extent is
    /// padded to the largest alignment inside unless bounds were set explicitly (as MPICH does),
    /// so an array of a C struct described member by member has the struct's size as extent.
    pub fn structure(blocks: &[(usize, isize, &Layout)]) -> Result<Layout> {
        let mut b = Builder::default();
        let mut explicit = false;
        for &(len, disp, t) in blocks {
            b.append(t, disp, len)?;
            explicit |= t.explicit;
        }
        let mut l = b.finish(explicit)?;
        if !explicit && l.extent() > 0 {
            let a = l.align as isize;
            l.ub = l.lb + (l.extent() + a - 1) / a * a;
        }
        Ok(l)
    }

    /// MPI_Type_create_resized: same data, bounds set to [lb, lb + extent).
    pub fn resized(old: &Layout, lb: isize, extent: isize) -> Result<Layout> {
        let mut l = old.clone();
        l.lb = lb;
        l.ub = lb
            .checked_add(extent)
            .ok_or_else(|| crate::error::Error::new(ErrorClass::Arg, "lb + extent overflows"))?;
        l.explicit = true;
        Ok(l)
    }

    /// MPI_Type_create_subarray: a `subsizes` block at `starts` of a `sizes` array of `old`,
    /// row-major (`c_order`) or column-major; extent is the whole array's.
    pub fn subarray(
        sizes: &[usize],
        subsizes: &[usize],
        starts: &[usize],
        c_order: bool,
        old: &Layout,
    ) -> Result<Layout> {
        let n = sizes.len();
        if n == 0 || subsizes.len() != n || starts.len() != n {
            return err(
                ErrorClass::Arg,
                "subarray needs ndims >= 1 sizes, subsizes and starts",
            );
        }
        for d in 0..n {
            if sizes[d] == 0
                || starts[d]
                    .checked_add(subsizes[d])
                    .is_none_or(|e| e > sizes[d])
            {
                return err(
                    ErrorClass::Arg,
                    format!(
                        "subarray dimension {d}: size {}, subsize {}, start {} do not fit",
                        sizes[d], subsizes[d], starts[d]
                    ),
                );
            }
        }
        // Dimensions from fastest-varying to slowest.
        let order: Vec<usize> = if c_order {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        };
        let mut t = old.clone();
        let mut stride = old.extent();
        let mut disp = 0isize;
        for &d in &order {
            t = Layout::hvector(subsizes[d], 1, stride, &t)?;
            disp = disp
                .checked_add(mul(starts[d] as isize, stride)?)
                .ok_or_else(overflow)?;
            stride = mul(stride, sizes[d] as isize)?;
        }
        Layout::resized(&t.shifted(disp)?, 0, stride)
    }

    /// The same type with every displacement moved by `disp` bytes (keeps compact vectors
    /// compact, unlike an hindexed of one block).
    fn shifted(&self, disp: isize) -> Result<Layout> {
        let mut l = self.clone();
        for b in &mut l.blocks {
            b.off = b.off.checked_add(disp).ok_or_else(overflow)?;
        }
        for v in [&mut l.lb, &mut l.ub, &mut l.true_lb, &mut l.true_ub] {
            *v = v.checked_add(disp).ok_or_else(overflow)?;
        }
        Ok(l)
    }
}

fn overflow() -> crate::error::Error {
    crate::error::Error::new(ErrorClass::Arg, "datatype displacement overflows")
}

fn mul(a: isize, b: isize) -> Result<isize> {
    a.checked_mul(b).ok_or_else(overflow)
}

/// Accumulates blocks (merging adjacent ones) and bounds.
#[derive(Default)]
struct Builder {
    blocks: Vec<Block>,
    size: usize,
    bounds: Option<(isize, isize)>,
    true_bounds: Option<(isize, isize)>,
    align: usize,
    elements: usize,
    /// Common basic size so far: None before any data, Some(None) once sizes differ.
    basic_size: Option<Option<usize>>,
    /// Common basic type so far, in the same way.
    basic_type: Option<Option<usize>>,
}

fn widen(b: &mut Option<(isize, isize)>, lo: isize, hi: isize) {
    *b = Some(match *b {
        None => (lo, hi),
        Some((l, h)) => (l.min(lo), h.max(hi)),
    });
}

impl Builder {
    fn push(&mut self, off: isize, len: usize) {
        if len == 0 {
            return;
        }
        self.size += len;
        if let Some(last) = self.blocks.last_mut() {
            if last.off + last.len as isize == off {
                last.len += len;
                return;
            }
        }
        self.blocks.push(Block { off, len });
    }

    /// `count` copies of `child`, one extent apart, from byte displacement `disp`.
    fn append(&mut self, child: &Layout, disp: isize, count: usize) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let ext = child.extent();
        let last = mul(count as isize - 1, ext)?;
        let lo = |b: isize| disp.checked_add(b)?.checked_add(last.min(0));
        let hi = |b: isize| disp.checked_add(b)?.checked_add(last.max(0));
        let (l, h) = (lo(child.lb), hi(child.ub));
        widen(
            &mut self.bounds,
            l.ok_or_else(overflow)?,
            h.ok_or_else(overflow)?,
        );
        self.align = self.align.max(child.align);
        if child.size == 0 {
            return Ok(());
        }
        let total = child
            .size
            .checked_mul(count)
            .and_then(|n| n.checked_add(self.size));
        if !matches!(total, Some(t) if t <= isize::MAX as usize) {
            return err(ErrorClass::Arg, "datatype size overflows");
        }
        self.elements = self
            .elements
            .saturating_add(child.elements.saturating_mul(count));
        self.basic_size = match self.basic_size {
            None => Some(child.basic_size),
            Some(b) if b == child.basic_size => Some(b),
            Some(_) => Some(None),
        };
        self.basic_type = match self.basic_type {
            None => Some(child.basic_type),
            Some(b) if b == child.basic_type => Some(b),
            Some(_) => Some(None),
        };
        let (l, h) = (lo(child.true_lb), hi(child.true_ub));
        widen(
            &mut self.true_bounds,
            l.ok_or_else(overflow)?,
            h.ok_or_else(overflow)?,
        );
        if let Some((off, len)) = child.contiguous_run(count) {
            self.push(disp + off, len);
            return self.check();
        }
        let per = child.blocks.len().saturating_mul(child.reps);
        if self.blocks.len().saturating_add(per.saturating_mul(count)) > MAX_BLOCKS {
            return err(
                ErrorClass::NoMem,
                format!("datatype has more than {MAX_BLOCKS} separate blocks"),
            );
        }
        for i in 0..count as isize {
            let base = disp + i * ext;
            child.for_each_block(|off, len| self.push(base + off, len));
        }
        Ok(())
    }

    fn check(&self) -> Result<()> {
        if self.blocks.len() > MAX_BLOCKS {
            return err(
                ErrorClass::NoMem,
                format!("datatype has more than {MAX_BLOCKS} separate blocks"),
            );
        }
        Ok(())
    }

    fn finish(self, explicit: bool) -> Result<Layout> {
        let (lb, ub) = self.bounds.unwrap_or((0, 0));
        let (true_lb, true_ub) = self.true_bounds.unwrap_or((0, 0));
        let mut starts = Vec::with_capacity(self.blocks.len());
        let mut at = 0usize;
        for b in &self.blocks {
            starts.push(at);
            at += b.len;
        }
        Ok(Layout {
            blocks: self.blocks,
            starts,
            reps: 1,
            rep_stride: 0,
            rep_size: self.size,
            size: self.size,
            lb,
            ub,
            true_lb,
            true_ub,
            align: self.align.max(1),
            explicit,
            elements: self.elements,
            basic_size: self.basic_size.flatten(),
            basic_type: self.basic_type.flatten(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> Layout {
        Layout::basic(4, 4)
    }
    fn dbl() -> Layout {
        Layout::basic(8, 8)
    }
    fn blocks(l: &Layout) -> Vec<(isize, usize)> {
        let mut v = Vec::new();
        l.for_each_block(|off, len| v.push((off, len)));
        v
    }

    #[test]
    fn contiguous_merges() {
        let l = Layout::contiguous(5, &int()).unwrap();
        assert_eq!(blocks(&l), vec![(0, 20)]);
        assert_eq!((l.size(), l.lb(), l.extent()), (20, 0, 20));
        assert_eq!(l.contiguous_run(3), Some((0, 60)));
        let z = Layout::contiguous(0, &int()).unwrap();
        assert_eq!((z.size(), z.extent(), blocks(&z).len()), (0, 0, 0));
        assert_eq!(z.contiguous_run(7), Some((0, 0)));
    }

    #[test]
    fn vector_has_holes() {
        // 3 blocks of 2 ints, stride 4 ints.
        let l = Layout::hvector(3, 2, 16, &int()).unwrap();
        assert_eq!(blocks(&l), vec![(0, 8), (16, 8), (32, 8)]);
        assert_eq!(
            (l.size(), l.lb(), l.extent(), l.true_extent()),
            (24, 0, 40, 40)
        );
        assert_eq!(l.contiguous_run(1), None);
        // stride == blocklength: contiguous.
        let c = Layout::hvector(3, 2, 8, &int()).unwrap();
        assert_eq!(blocks(&c), vec![(0, 24)]);
    }

    #[test]
    fn negative_stride_and_displacements() {
        let l = Layout::hvector(3, 1, -8, &dbl()).unwrap();
        assert_eq!(blocks(&l), vec![(0, 8), (-8, 8), (-16, 8)]);
        assert_eq!(
            (l.lb(), l.ub(), l.true_lb(), l.true_extent()),
            (-16, 8, -16, 24)
        );
        let h = Layout::hindexed(&[(1, -4), (2, 12)], &int()).unwrap();
        assert_eq!(blocks(&h), vec![(-4, 4), (12, 8)]);
        assert_eq!((h.lb(), h.ub(), h.size()), (-4, 20, 12));
    }

    #[test]
    fn indexed_zero_blocklength_is_skipped() {
        let l = Layout::hindexed(&[(2, 0), (0, 100), (1, 8)], &int()).unwrap();
        assert_eq!(blocks(&l), vec![(0, 12)]);
        assert_eq!((l.size(), l.extent()), (12, 12));
    }

    #[test]
    fn struct_is_padded_to_alignment() {
        // struct { double d; char c; } : extent 16.
        let c = Layout::basic(1, 1);
        let d = dbl();
        let s = Layout::structure(&[(1, 0, &d), (1, 8, &c)]).unwrap();
        assert_eq!((s.size(), s.extent(), s.true_extent()), (9, 16, 9));
        assert_eq!(blocks(&s), vec![(0, 9)]);
        assert_eq!(s.contiguous_run(2), None);
        assert_eq!(s.contiguous_run(1), Some((0, 9)));
        // Resized components: no padding.
        let r = Layout::resized(&c, 0, 1).unwrap();
        let s2 = Layout::structure(&[(1, 0, &d), (1, 8, &r)]).unwrap();
        assert_eq!(s2.extent(), 9);
    }

    #[test]
    fn resized_sets_bounds_keeps_data() {
        let r = Layout::resized(&int(), -4, 12).unwrap();
        assert_eq!((r.lb(), r.ub(), r.extent(), r.size()), (-4, 8, 12, 4));
        assert_eq!((r.true_lb(), r.true_extent()), (0, 4));
        let v = Layout::contiguous(2, &r).unwrap();
        assert_eq!(blocks(&v), vec![(0, 4), (12, 4)]);
        assert_eq!((v.lb(), v.ub()), (-4, 20));
    }

    #[test]
    fn nested_vector_of_vector() {
        let inner = Layout::hvector(2, 1, 8, &int()).unwrap(); // ints at 0, 8; extent 12
        let outer = Layout::hvector(2, 1, 100, &inner).unwrap();
        assert_eq!(blocks(&outer), vec![(0, 4), (8, 4), (100, 4), (108, 4)]);
        assert_eq!(outer.extent(), 112);
    }

    #[test]
    fn subarray_c_and_fortran() {
        // 4x5 ints, 2x3 block at (1, 2).
        let c = Layout::subarray(&[4, 5], &[2, 3], &[1, 2], true, &int()).unwrap();
        assert_eq!(blocks(&c), vec![(28, 12), (48, 12)]);
        assert_eq!((c.lb(), c.extent(), c.size()), (0, 80, 24));
        let f = Layout::subarray(&[4, 5], &[2, 3], &[1, 2], false, &int()).unwrap();
        // Column-major: element (i, j) at (i + 4 j) * 4.
        assert_eq!(blocks(&f), vec![(36, 8), (52, 8), (68, 8)]);
        assert_eq!(f.extent(), 80);
        assert!(Layout::subarray(&[4], &[3], &[2], true, &int()).is_err());
    }

    #[test]
    fn pair_types_exclude_padding() {
        let di = Layout::predefined(0x229, 16);
        assert_eq!((di.size(), di.extent()), (12, 16));
        assert_eq!(blocks(&di), vec![(0, 12)]);
        let si = Layout::predefined(0x22c, 8);
        assert_eq!(blocks(&si), vec![(0, 2), (4, 4)]);
    }

    #[test]
    fn span_covers_negative_extent() {
        let l = Layout::resized(&int(), 0, -8).unwrap();
        assert_eq!(l.span(3), Some((-16, 4)));
        assert_eq!(l.span(0), Some((0, 0)));
    }

    #[test]
    fn vectors_stay_compact() {
        let v = Layout::hvector(1 << 30, 1, 16, &dbl()).unwrap();
        assert_eq!((v.rep_blocks().len(), v.reps()), (1, 1 << 30));
        assert_eq!((v.size(), v.extent()), (8 << 30, (16 << 30) - 8));
        // Subarrays of 2-D arrays too (rows contiguous, repeated per row).
        let s =
            Layout::subarray(&[1 << 16, 1 << 16], &[1 << 15, 8], &[3, 4], true, &dbl()).unwrap();
        assert_eq!((s.rep_blocks().len(), s.reps()), (1, 1 << 15));
        assert_eq!(
            s.rep_blocks()[0],
            Block {
                off: (3 * (1 << 16) + 4) * 8,
                len: 64
            }
        );
        // Nesting expands: a contiguous of 2 vectors of 3 blocks.
        let small = Layout::hvector(3, 1, 16, &dbl()).unwrap();
        let c = Layout::contiguous(2, &small).unwrap();
        assert_eq!(c.reps(), 1);
        assert_eq!(
            blocks(&c),
            vec![(0, 8), (16, 8), (32, 16), (56, 8), (72, 8)]
        );
    }

    #[test]
    fn elements_for_get_elements() {
        let v = Layout::hvector(3, 2, 16, &int()).unwrap();
        assert_eq!(v.elements_in(24), Some(6));
        assert_eq!(v.elements_in(24 + 8), Some(8));
        assert_eq!(v.elements_in(6), None);
        let s = Layout::structure(&[(1, 0, &dbl()), (2, 8, &int())]).unwrap();
        assert_eq!(s.elements_in(32), Some(6));
        assert_eq!(
            s.elements_in(8),
            None,
            "mixed sizes: partial element unknown"
        );
        assert_eq!(Layout::predefined(0x22b, 8).elements_in(16), Some(4));
        assert_eq!(Layout::predefined(0x22b, 8).elements_in(12), Some(3));
        assert_eq!(Layout::predefined(0x229, 16).elements_in(24), Some(4));
    }

    #[test]
    fn huge_sizes_are_errors() {
        let big = Layout::contiguous(1 << 40, &dbl()).unwrap();
        let e = Layout::contiguous(1 << 30, &big).unwrap_err();
        assert_eq!(e.class, ErrorClass::Arg);
        let v = Layout::hvector(2, 1, isize::MAX - 10, &big).unwrap_err();
        assert_eq!(v.class, ErrorClass::Arg);
    }

    #[test]
    fn too_fragmented_is_refused() {
        let v = Layout::hvector(1 << 11, 1, 8, &int()).unwrap();
        let e = Layout::hvector(1 << 12, 1, 1 << 16, &v).unwrap_err();
        assert_eq!(e.class, ErrorClass::NoMem);
    }
}
