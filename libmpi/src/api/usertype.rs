//! Derived datatypes in the Rust API. A `UserDatatype` is committed on creation and freed when
//! the last handle (and the last operation using it) is gone. Data moves through a `View`
//! (`ViewMut` to receive): a buffer, a count and a type, checked on creation to lie inside the
//! buffer, so no stride or displacement can reach memory the slice does not own.
//!
//! ```no_run
//! use rmpi::{UserDatatype, View};
//! let universe = rmpi::initialize().unwrap();
//! let world = universe.world();
//! let matrix = vec![0.0f64; 16];
//! // Column 1 of a 4x4 row-major matrix.
//! let column = UserDatatype::vector(4, 1, 4, &UserDatatype::of::<f64>()).unwrap();
//! let view = View::with_origin(&matrix, 8, 1, &column).unwrap();
//! world.send_view(&view, 0, 0).unwrap();
//! ```

use std::marker::PhantomData;
use std::sync::Arc;

use super::comm::{check, pair_finish, pair_ready, started_ready, Communicator, Source, Tag};
use super::datatype::{as_bytes, as_bytes_mut, Equivalence};
use super::request::{Request, Scope};
use super::status::Status;
use crate::datatype::{Layout, Msg};
use crate::error::{err, ErrorClass, Result};
use crate::runtime;

/// A committed datatype: predefined (`of`) or built with one of the constructors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserDatatype {
    layout: Arc<Layout>,
}

/// Array order for `subarray`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Row-major: the last index varies fastest.
    C,
    /// Column-major: the first index varies fastest.
    Fortran,
}

impl UserDatatype {
    fn new(layout: Result<Layout>) -> Result<UserDatatype> {
        Ok(UserDatatype {
            layout: Arc::new(layout?),
        })
    }

    /// The predefined datatype of `T`.
    pub fn of<T: Equivalence>() -> UserDatatype {
        let d = T::DATATYPE;
        UserDatatype {
            layout: Arc::new(Layout::predefined(d.handle, d.size)),
        }
    }

    /// `count` copies of `old`, one extent apart (MPI_Type_contiguous).
    pub fn contiguous(count: usize, old: &UserDatatype) -> Result<UserDatatype> {
        Self::new(Layout::contiguous(count, &old.layout))
    }

    /// `count` blocks of `blocklength` elements, starts `stride` elements apart (MPI_Type_vector).
    pub fn vector(
        count: usize,
        blocklength: usize,
        stride: isize,
        old: &UserDatatype,
    ) -> Result<UserDatatype> {
        let s = stride.checked_mul(old.extent());
        let Some(s) = s else {
            return err(ErrorClass::Arg, "vector stride overflows");
        };
        Self::hvector(count, blocklength, s, old)
    }

    /// As `vector`, with the stride in bytes (MPI_Type_create_hvector).
    pub fn hvector(
        count: usize,
        blocklength: usize,
        stride_bytes: isize,
        old: &UserDatatype,
    ) -> Result<UserDatatype> {
        Self::new(Layout::hvector(
            count,
            blocklength,
            stride_bytes,
            &old.layout,
        ))
    }

    /// Blocks of (blocklength, displacement in elements of `old`) (MPI_Type_indexed).
    pub fn indexed(blocks: &[(usize, isize)], old: &UserDatatype) -> Result<UserDatatype> {
        let ext = old.extent();
        let mut v = Vec::with_capacity(blocks.len());
        for &(n, d) in blocks {
            match d.checked_mul(ext) {
                Some(b) => v.push((n, b)),
                None => return err(ErrorClass::Arg, "indexed displacement overflows"),
            }
        }
        Self::hindexed(&v, old)
    }

    /// Blocks of `blocklen` elements at the given displacements in elements of `old`
    /// (MPI_Type_create_indexed_block).
    pub fn indexed_block(
        blocklen: usize,
        displs: &[isize],
        old: &UserDatatype,
    ) -> Result<UserDatatype> {
        let blocks: Vec<(usize, isize)> = displs.iter().map(|&d| (blocklen, d)).collect();
        Self::indexed(&blocks, old)
    }

    /// The committed layout (collectives stage non-dense blocks through it).
    pub(crate) fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// Blocks of (blocklength, displacement in bytes) (MPI_Type_create_hindexed).
    pub fn hindexed(blocks: &[(usize, isize)], old: &UserDatatype) -> Result<UserDatatype> {
        Self::new(Layout::hindexed(blocks, &old.layout))
    }

    /// Blocks of (blocklength, displacement in bytes, type) (MPI_Type_create_struct).
    pub fn structure(blocks: &[(usize, isize, &UserDatatype)]) -> Result<UserDatatype> {
        let v: Vec<_> = blocks.iter().map(|&(n, d, t)| (n, d, &*t.layout)).collect();
        Self::new(Layout::structure(&v))
    }

    /// The same data with bounds [lb, lb + extent) (MPI_Type_create_resized).
    pub fn resized(&self, lb: isize, extent: isize) -> Result<UserDatatype> {
        Self::new(Layout::resized(&self.layout, lb, extent))
    }

    /// A `subsizes` block at `starts` of a `sizes` array of `old` (MPI_Type_create_subarray).
    pub fn subarray(
        sizes: &[usize],
        subsizes: &[usize],
        starts: &[usize],
        order: Order,
        old: &UserDatatype,
    ) -> Result<UserDatatype> {
        Self::new(Layout::subarray(
            sizes,
            subsizes,
            starts,
            order == Order::C,
            &old.layout,
        ))
    }

    /// Bytes of data in one element.
    pub fn size(&self) -> usize {
        self.layout.size()
    }
    pub fn lb(&self) -> isize {
        self.layout.lb()
    }
    pub fn extent(&self) -> isize {
        self.layout.extent()
    }
    pub fn true_lb(&self) -> isize {
        self.layout.true_lb()
    }
    pub fn true_extent(&self) -> isize {
        self.layout.true_extent()
    }
}

/// Check that `count` elements of `ty` with their origin at byte `origin` fit in `len` bytes,
/// and describe them as a message.
fn describe(
    ptr: *const u8,
    len: usize,
    origin: usize,
    count: usize,
    ty: &UserDatatype,
) -> Result<Msg> {
    if count.checked_mul(ty.size()).is_none() {
        return err(ErrorClass::Count, "message size overflows");
    }
    let fits = ty.layout.span(count).and_then(|(lo, hi)| {
        let o = isize::try_from(origin).ok()?;
        let (lo, hi) = (o.checked_add(lo)?, o.checked_add(hi)?);
        (origin <= len && lo >= 0 && hi as usize <= len).then_some(())
    });
    if fits.is_none() {
        return err(
            ErrorClass::Buffer,
            format!(
                "{count} element(s) of a datatype with true lb {} and extent {} from byte {origin} \
                 do not fit in a {len}-byte buffer",
                ty.true_lb(),
                ty.extent()
            ),
        );
    }
    Ok(Msg::typed(ptr.wrapping_add(origin), count, &ty.layout))
}

/// `count` elements of a datatype in a borrowed buffer, to send.
pub struct View<'a> {
    msg: Msg,
    _buf: PhantomData<&'a [u8]>,
}

impl<'a> View<'a> {
    /// `count` elements of `ty` starting at the beginning of `buf`.
    pub fn new<T: Equivalence>(buf: &'a [T], count: usize, ty: &UserDatatype) -> Result<View<'a>> {
        Self::with_origin(buf, 0, count, ty)
    }

    /// `count` elements of `ty` whose origin (displacement 0) is byte `origin` of `buf`, for
    /// types with negative displacements or a start inside the buffer.
    pub fn with_origin<T: Equivalence>(
        buf: &'a [T],
        origin: usize,
        count: usize,
        ty: &UserDatatype,
    ) -> Result<View<'a>> {
        let b = as_bytes(buf);
        Ok(View {
            msg: describe(b.as_ptr(), b.len(), origin, count, ty)?,
            _buf: PhantomData,
        })
    }

    /// Bytes of data the view holds.
    pub fn len(&self) -> usize {
        self.msg.len
    }

    pub fn is_empty(&self) -> bool {
        self.msg.len == 0
    }

    /// The data, packed (MPI_Pack).
    pub fn pack(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.msg.len];
        // SAFETY: `describe` checked every mapped byte lies in the borrowed buffer.
        unsafe { self.msg.read(0, &mut out) };
        out
    }
}

/// `count` elements of a datatype in an exclusively borrowed buffer, to receive into.
pub struct ViewMut<'a> {
    msg: Msg,
    _buf: PhantomData<&'a mut [u8]>,
}

impl<'a> ViewMut<'a> {
    pub fn new<T: Equivalence>(
        buf: &'a mut [T],
        count: usize,
        ty: &UserDatatype,
    ) -> Result<ViewMut<'a>> {
        Self::with_origin(buf, 0, count, ty)
    }

    /// As `View::with_origin`.
    pub fn with_origin<T: Equivalence>(
        buf: &'a mut [T],
        origin: usize,
        count: usize,
        ty: &UserDatatype,
    ) -> Result<ViewMut<'a>> {
        let b = as_bytes_mut(buf);
        Ok(ViewMut {
            msg: describe(b.as_mut_ptr(), b.len(), origin, count, ty)?,
            _buf: PhantomData,
        })
    }

    pub fn len(&self) -> usize {
        self.msg.len
    }

    pub fn is_empty(&self) -> bool {
        self.msg.len == 0
    }

    /// Scatter packed bytes into the view (MPI_Unpack); `packed` must hold exactly `len()` bytes.
    pub fn unpack(&mut self, packed: &[u8]) -> Result<()> {
        if packed.len() != self.msg.len {
            return err(
                ErrorClass::Truncate,
                format!(
                    "{} packed bytes for a {}-byte view",
                    packed.len(),
                    self.msg.len
                ),
            );
        }
        // SAFETY: `describe` checked every mapped byte lies in the exclusively borrowed buffer.
        unsafe { self.msg.write(0, packed) };
        Ok(())
    }
}

impl Communicator {
    /// Blocking send of a view.
    pub fn send_view(&self, view: &View<'_>, dest: i32, tag: i32) -> Result<()> {
        // Under MULTIPLE the wait is outside the runtime (`runtime::blocking`).
        runtime::blocking(
            // SAFETY: the view borrows its buffer for this whole call, which returns once sent.
            |rt| unsafe { rt.start_send_msg(self.id, view.msg.clone(), dest, tag) },
            started_ready,
            |rt, s| rt.finish(s).map(|_| ()),
        )
    }

    /// Blocking receive into a view; a larger message is an MPI_ERR_TRUNCATE error.
    pub fn recv_view(
        &self,
        view: &mut ViewMut<'_>,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Status> {
        let (src, tag) = (source.into(), tag.into());
        let st = runtime::blocking(
            // SAFETY: the view borrows its buffer exclusively for this whole call, which
            // returns once the receive has completed.
            |rt| unsafe {
                rt.start_recv_msg(self.id, view.msg.clone(), raw_src(src), raw_tag(tag))
            },
            started_ready,
            |rt, s| rt.finish(s),
        )?;
        check(st)
    }

    /// Send one view to `dest` and receive into another from `source` at the same time.
    pub fn sendrecv_view(
        &self,
        send: &View<'_>,
        dest: i32,
        sendtag: i32,
        recv: &mut ViewMut<'_>,
        source: impl Into<Source>,
        recvtag: impl Into<Tag>,
    ) -> Result<Status> {
        let (src, rtag) = (raw_src(source.into()), raw_tag(recvtag.into()));
        let st = runtime::blocking(
            |rt| {
                // SAFETY: both views borrow their buffers for this whole call, which completes
                // both.
                let r = unsafe { rt.start_recv_msg(self.id, recv.msg.clone(), src, rtag)? };
                // SAFETY: as above.
                let s = unsafe { rt.start_send_msg(self.id, send.msg.clone(), dest, sendtag) };
                Ok((r, s))
            },
            pair_ready,
            pair_finish,
        )?;
        check(st)
    }

    /// Start a send of a view; its buffer stays borrowed until the request completes.
    pub fn isend_view<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        view: View<'scope>,
        dest: i32,
        tag: i32,
    ) -> Result<Request<'scope>> {
        let req = runtime::with(|rt| {
            // SAFETY: the buffer is borrowed for 'scope, and the scope completes the request
            // before 'scope ends.
            let s = unsafe { rt.start_send_msg(self.id, view.msg, dest, tag)? };
            Ok(rt.pml.request_for(s))
        })?;
        Ok(scope.register(req))
    }

    /// Start a receive into a view; its buffer stays exclusively borrowed until it completes.
    pub fn irecv_view<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        view: ViewMut<'scope>,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Request<'scope>> {
        let (src, tag) = (source.into(), tag.into());
        let req = runtime::with(|rt| {
            // SAFETY: as in `isend_view`, with the buffer borrowed mutably for 'scope.
            let s = unsafe { rt.start_recv_msg(self.id, view.msg, raw_src(src), raw_tag(tag))? };
            Ok(rt.pml.request_for(s))
        })?;
        Ok(scope.register(req))
    }
}

fn raw_src(s: Source) -> i32 {
    match s {
        Source::Rank(r) => r,
        Source::Any => crate::pml::ANY_SOURCE,
    }
}

fn raw_tag(t: Tag) -> i32 {
    match t {
        Tag::Is(t) => t,
        Tag::Any => crate::pml::ANY_TAG,
    }
}

impl Status {
    /// Basic elements received as `ty` describes them (MPI_Get_elements): also counts those of
    /// a partly received element; None when the bytes end inside a basic element.
    pub fn elements_of(&self, ty: &UserDatatype) -> Option<usize> {
        ty.layout.elements_in(self.0.count)
    }

    /// Whole elements of `ty` received; None when the bytes are not a whole number of them.
    pub fn count_of(&self, ty: &UserDatatype) -> Option<usize> {
        match ty.size() {
            0 => Some(0),
            s => self.0.count.is_multiple_of(s).then_some(self.0.count / s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_must_fit() {
        let buf = [0u32; 16];
        let col = UserDatatype::vector(4, 1, 4, &UserDatatype::of::<u32>()).unwrap();
        assert!(View::new(&buf, 1, &col).is_ok());
        assert!(View::with_origin(&buf, 12, 1, &col).is_ok());
        let e = View::with_origin(&buf, 16, 1, &col).err().unwrap();
        assert_eq!(e.class, ErrorClass::Buffer);
        // Count 2 steps one extent (13 u32) further: too far.
        assert!(View::new(&buf, 2, &col).is_err());
        // Negative stride needs an origin far enough in.
        let rev = UserDatatype::vector(4, 1, -4, &UserDatatype::of::<u32>()).unwrap();
        assert!(View::new(&buf, 1, &rev).is_err());
        assert!(View::with_origin(&buf, 48, 1, &rev).is_ok());
        assert!(View::with_origin(&buf, usize::MAX, 0, &rev).is_err());
    }

    #[test]
    fn pack_unpack_roundtrip() {
        let m: Vec<u32> = (0..16).collect();
        let col = UserDatatype::vector(4, 1, 4, &UserDatatype::of::<u32>()).unwrap();
        let packed = View::with_origin(&m, 8, 1, &col).unwrap().pack();
        let vals: Vec<u32> = packed
            .chunks(4)
            .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(vals, vec![2, 6, 10, 14]);
        let mut out = vec![0u32; 16];
        ViewMut::new(&mut out, 1, &col)
            .unwrap()
            .unpack(&packed)
            .unwrap();
        assert_eq!(&out[..5], &[2, 0, 0, 0, 6]);
    }
}
