//! Derived datatypes in collectives. The algorithms move plain byte ranges; a buffer whose type
//! is not one dense run (holes, a non-zero lb, a resized extent, negative displacements) is
//! staged: its blocks are packed into one temporary before the first round (send data) and/or
//! unpacked from it after the last one (received data). The packed form is the type signature's
//! byte stream, so a send of one vector of 4 ints matches a receive of 4 MPI_INT for free.

use std::sync::Arc;

use super::{At, Buf, Builder};
use crate::datatype::{Layout, Msg};
use crate::error::{Error, ErrorClass, Result};

/// Which way a staged buffer's data flows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Dir {
    /// Read by the collective (send data): packed before the first round.
    In,
    /// Written by the collective: unpacked after the last round.
    Out,
    /// Both (MPI_IN_PLACE buffers, a broadcast's buffer).
    InOut,
}

/// One element's shape: `size` data bytes, `extent` apart; `layout` None when elements tile
/// memory from offset 0 (predefined and dense derived types), which then move in place.
#[derive(Clone, Debug)]
pub struct Shape {
    pub size: usize,
    pub extent: isize,
    pub layout: Option<Arc<Layout>>,
}

impl Shape {
    pub fn dense(size: usize) -> Shape {
        Shape {
            size,
            extent: size as isize,
            layout: None,
        }
    }

    /// The shape of a committed layout: dense ones move in place.
    pub fn of(l: &Arc<Layout>) -> Shape {
        Shape {
            size: l.size(),
            extent: l.extent(),
            layout: (!l.is_dense()).then(|| l.clone()),
        }
    }

    /// Bytes of `count` elements' data (MPI_ERR_COUNT past isize::MAX).
    pub fn bytes(&self, count: usize) -> Result<usize> {
        // count x extent too: the elements must lie within the address space.
        let span = count.checked_mul(self.extent.unsigned_abs());
        count
            .checked_mul(self.size)
            .filter(|&n| n <= isize::MAX as usize && span.is_some_and(|s| s <= isize::MAX as usize))
            .ok_or_else(|| Error::new(ErrorClass::Count, format!("count {count} overflows")))
    }

    /// Byte displacement of element `i`.
    pub fn offset(&self, i: isize) -> Result<isize> {
        i.checked_mul(self.extent)
            // Element i's offset is a count times an extent: too many elements.
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Count,
                    "count x extent overflows the displacement",
                )
            })
    }
}

/// A side of a collective as the algorithms see it: blocks of `lens[i]` bytes at byte
/// offsets `displs[i]` from `at`.
pub struct Blocks {
    pub at: At,
    pub lens: Vec<usize>,
    pub displs: Vec<usize>,
}

impl Blocks {
    /// The first block (single-buffer collectives).
    pub fn first(&self) -> (At, usize) {
        (self.at.add(self.displs[0]), self.lens[0])
    }
}

/// `counts[i]` elements of `shape` at byte displacement `displs[i]` from `buf`, staged for
/// `dir` when they are not plain non-negative byte ranges of `buf`. Staged blocks lie one after
/// another in the temporary, in index order.
pub fn stage(
    b: &mut Builder,
    buf: *mut u8,
    shape: &Shape,
    counts: &[usize],
    displs: &[isize],
    dir: Dir,
) -> Result<Blocks> {
    let blocks: Vec<(Shape, usize, isize)> = counts
        .iter()
        .zip(displs)
        .map(|(&c, &d)| (shape.clone(), c, d))
        .collect();
    stage_mixed(b, buf, &blocks, dir)
}

/// One block of `count` elements at `buf`.
pub fn stage_one(
    b: &mut Builder,
    buf: *mut u8,
    shape: &Shape,
    count: usize,
    dir: Dir,
) -> Result<(At, usize)> {
    // Predefined and dense types (nearly every call) move in place: no block lists to build.
    if shape.layout.is_none() {
        return Ok((At(Buf::User(buf), 0), shape.bytes(count)?));
    }
    Ok(stage(b, buf, shape, &[count], &[0], dir)?.first())
}

/// Blocks with a shape each (MPI_Alltoallw): `(shape, count, byte displacement)` per rank.
/// All dense at non-negative displacements: in place. Otherwise every block is packed into
/// one temporary through its own type.
pub fn stage_mixed(
    b: &mut Builder,
    buf: *mut u8,
    blocks: &[(Shape, usize, isize)],
    dir: Dir,
) -> Result<Blocks> {
    let lens = blocks
        .iter()
        .map(|(s, c, _)| s.bytes(*c))
        .collect::<Result<Vec<_>>>()?;
    if blocks.iter().all(|(s, _, d)| s.layout.is_none() && *d >= 0) {
        return Ok(Blocks {
            at: At(Buf::User(buf), 0),
            lens,
            displs: blocks.iter().map(|&(_, _, d)| d as usize).collect(),
        });
    }
    let total = lens
        .iter()
        .try_fold(0usize, |t, &l| t.checked_add(l))
        .filter(|&t| t <= isize::MAX as usize)
        .ok_or_else(|| Error::new(ErrorClass::Count, "collective buffer size overflows"))?;
    let tmp = b.tmp(total);
    let mut packed = Vec::with_capacity(blocks.len());
    let mut off = 0;
    for (i, (s, c, d)) in blocks.iter().enumerate() {
        let p = buf.wrapping_offset(*d);
        let m = match &s.layout {
            Some(l) => Msg::typed(p, *c, l),
            None => Msg::bytes(p, lens[i]),
        };
        if dir != Dir::Out {
            b.pack(m.clone(), tmp.add(off));
        }
        if dir != Dir::In {
            b.unpack_at_end(tmp.add(off), m);
        }
        packed.push(off);
        off += lens[i];
    }
    Ok(Blocks {
        at: tmp,
        lens,
        displs: packed,
    })
}
