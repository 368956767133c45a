//! A message as the pml moves it: a stream of `len` packed bytes, contiguous in memory (the
//! zero-overhead case) or scattered over `count` elements of a derived layout. Any byte range of
//! the stream can be packed or unpacked on its own, so a transport streams a non-contiguous
//! message fragment by fragment without packing it whole first.

use std::sync::Arc;

use super::layout::Layout;

/// `len` bytes at `ptr`, or, with a layout, the elements of that layout starting at `ptr`
/// (the user's buffer) whose packed bytes number `len`.
#[derive(Clone, Debug)]
pub struct Msg {
    pub ptr: *mut u8,
    pub len: usize,
    pub layout: Option<Arc<Layout>>,
}

impl Msg {
    /// Contiguous bytes.
    #[inline]
    pub fn bytes(ptr: *const u8, len: usize) -> Msg {
        Msg {
            ptr: ptr.cast_mut(),
            len,
            layout: None,
        }
    }

    /// `count` elements of `layout` at `buf`; contiguous (no layout kept) when they form one run.
    pub fn typed(buf: *const u8, count: usize, layout: &Arc<Layout>) -> Msg {
        if count == 0 || layout.size() == 0 {
            return Msg::bytes(buf, 0);
        }
        match layout.contiguous_run(count) {
            Some((off, len)) => Msg::bytes(buf.wrapping_offset(off), len),
            None => Msg {
                ptr: buf.cast_mut(),
                len: layout.size() * count,
                layout: Some(layout.clone()),
            },
        }
    }

    #[inline]
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_none()
    }

    /// Copy stream bytes [off, off + out.len()) into `out`.
    ///
    /// # Safety
    /// Every byte the range maps to must be readable (the caller's send buffer, alive and
    /// unmodified), and off + out.len() <= len.
    pub unsafe fn read(&self, off: usize, out: &mut [u8]) {
        debug_assert!(off + out.len() <= self.len);
        pieces(self.layout.as_deref(), off, out.len(), |mem, at, n| {
            // SAFETY: the caller's contract: the mapped bytes are readable; `out` is ours.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.ptr.wrapping_offset(mem),
                    out.as_mut_ptr().add(at),
                    n,
                )
            };
        });
    }

    /// Copy `data` into stream bytes [off, off + data.len()).
    ///
    /// # Safety
    /// Every byte the range maps to must be writable and not otherwise in use (the caller's
    /// receive buffer), and off + data.len() <= len.
    pub unsafe fn write(&self, off: usize, data: &[u8]) {
        debug_assert!(off + data.len() <= self.len);
        // SAFETY: forwarded contract.
        unsafe { write_at(self.ptr, self.layout.as_deref(), off, data) };
    }

    /// Stream bytes [off, off + n) as a slice: in place when contiguous, else packed into
    /// `scratch`.
    ///
    /// # Safety
    /// As `read`; the returned slice must not outlive the send buffer's validity.
    #[inline]
    pub unsafe fn slice<'a>(&'a self, off: usize, n: usize, scratch: &'a mut Vec<u8>) -> &'a [u8] {
        if n == 0 {
            return &[];
        }
        if self.layout.is_none() {
            // SAFETY: the caller's contract: `len` readable bytes at `ptr`, off + n <= len.
            return unsafe { std::slice::from_raw_parts(self.ptr.add(off), n) };
        }
        scratch.resize(n, 0);
        // SAFETY: forwarded contract.
        unsafe { self.read(off, &mut scratch[..n]) };
        &scratch[..n]
    }
}

/// Copy `data` into stream bytes [off, off + data.len()) of the message at `ptr` laid out by
/// `layout` (contiguous when None).
///
/// # Safety
/// Every byte the range maps to must be writable and not otherwise in use.
pub unsafe fn write_at(ptr: *mut u8, layout: Option<&Layout>, off: usize, data: &[u8]) {
    pieces(layout, off, data.len(), |mem, at, n| {
        // SAFETY: the caller's contract: the mapped bytes are writable; `data` is ours.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr().add(at), ptr.wrapping_offset(mem), n)
        };
    });
}

/// Walk stream bytes [off, off + n): `f(memory offset from ptr, offset into the range, length)`
/// for each contiguous piece, in stream order.
fn pieces(layout: Option<&Layout>, off: usize, n: usize, mut f: impl FnMut(isize, usize, usize)) {
    if n == 0 {
        return;
    }
    let Some(l) = layout else {
        f(off as isize, 0, n);
        return;
    };
    let (size, ext, blocks) = (l.size(), l.extent(), l.rep_blocks());
    let (reps, stride) = (l.reps(), l.rep_stride());
    let mut elem = off / size;
    let (mut rep, mut bi, mut within) = l.seek(off % size);
    let mut done = 0;
    while done < n {
        let b = blocks[bi];
        let k = (b.len - within).min(n - done);
        let mem = (elem as isize)
            .wrapping_mul(ext)
            .wrapping_add((rep as isize).wrapping_mul(stride))
            .wrapping_add(b.off)
            .wrapping_add(within as isize);
        f(mem, done, k);
        done += k;
        within = 0;
        bi += 1;
        if bi == blocks.len() {
            bi = 0;
            rep += 1;
            if rep == reps {
                rep = 0;
                elem += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory offset of every packed byte of `count` elements, by brute-force expansion.
    fn reference(l: &Layout, count: usize) -> Vec<isize> {
        let mut v = Vec::new();
        for e in 0..count as isize {
            l.for_each_block(|off, len| {
                for k in 0..len as isize {
                    v.push(e * l.extent() + off + k);
                }
            });
        }
        v
    }

    /// Pack and unpack every (offset, length) range and compare with the reference.
    fn check(l: Layout, count: usize) {
        let l = Arc::new(l);
        let (lo, hi) = l.span(count).unwrap();
        let pad = 8isize;
        let mem_len = (hi - lo + 2 * pad) as usize;
        let mut mem: Vec<u8> = (0..mem_len).map(|i| (i * 7 + 3) as u8).collect();
        // The buffer pointer sits so that [lo, hi) falls inside `mem`.
        let base_off = pad - lo;
        let base = mem.as_mut_ptr().wrapping_offset(base_off);
        let m = Msg::typed(base, count, &l);
        let refs = reference(&l, count);
        assert_eq!(m.len, refs.len());
        let expect: Vec<u8> = refs.iter().map(|&o| mem[(base_off + o) as usize]).collect();
        let lens = [1usize, 2, 3, 5, 7, 13, usize::MAX];
        for off in 0..=m.len {
            for &n in &lens {
                let n = n.min(m.len - off);
                let mut out = vec![0u8; n];
                // SAFETY: the mapped bytes lie in `mem`, alive for the test.
                unsafe { m.read(off, &mut out) };
                assert_eq!(out, expect[off..off + n], "read off {off} n {n}");
            }
        }
        // Unpack in uneven pieces into a cleared buffer: same bytes land, holes stay zero.
        let mut dst = vec![0u8; mem_len];
        let dbase = dst.as_mut_ptr().wrapping_offset(base_off);
        let dm = Msg::typed(dbase, count, &l);
        let mut off = 0;
        let mut step = 1;
        while off < dm.len {
            let n = step.min(dm.len - off);
            // SAFETY: as above, into `dst`.
            unsafe { dm.write(off, &expect[off..off + n]) };
            off += n;
            step = step % 11 + 2;
        }
        let mut want = vec![0u8; mem_len];
        for &o in &refs {
            want[(base_off + o) as usize] = mem[(base_off + o) as usize];
        }
        assert_eq!(dst, want);
    }

    fn int() -> Layout {
        Layout::basic(4, 4)
    }

    #[test]
    fn contiguous_is_in_place() {
        let l = Arc::new(Layout::contiguous(3, &int()).unwrap());
        let buf = [0u8; 24];
        let m = Msg::typed(buf.as_ptr(), 2, &l);
        assert!(m.is_contiguous());
        assert_eq!((m.ptr.cast_const(), m.len), (buf.as_ptr(), 24));
        check(Layout::contiguous(3, &int()).unwrap(), 2);
    }

    #[test]
    fn vector_every_offset() {
        check(Layout::hvector(3, 2, 12, &int()).unwrap(), 1);
        check(Layout::hvector(3, 2, 12, &int()).unwrap(), 3);
        check(Layout::hvector(4, 1, -8, &int()).unwrap(), 2);
    }

    #[test]
    fn indexed_struct_resized_subarray() {
        check(
            Layout::hindexed(&[(2, 20), (1, -8), (3, 40)], &int()).unwrap(),
            2,
        );
        let c = Layout::basic(1, 1);
        let d = Layout::basic(8, 8);
        check(
            Layout::structure(&[(1, 0, &d), (3, 8, &c), (1, 16, &int())]).unwrap(),
            3,
        );
        check(Layout::resized(&int(), -6, 10).unwrap(), 4);
        check(Layout::resized(&int(), 0, -8).unwrap(), 3);
        let s = Layout::subarray(&[4, 5, 3], &[2, 3, 2], &[1, 2, 0], true, &int()).unwrap();
        check(s.clone(), 1);
        check(s, 2);
        let f = Layout::subarray(&[4, 5], &[2, 3], &[2, 1], false, &d).unwrap();
        check(f, 2);
    }

    #[test]
    fn nested_and_pairs() {
        let inner = Layout::hvector(2, 3, 20, &int()).unwrap();
        check(Layout::hvector(3, 2, 90, &inner).unwrap(), 2);
        check(Layout::predefined(0x22c, 8), 3);
    }

    #[test]
    fn zero_count_and_empty() {
        check(Layout::hvector(3, 2, 12, &int()).unwrap(), 0);
        check(Layout::contiguous(0, &int()).unwrap(), 5);
    }
}
