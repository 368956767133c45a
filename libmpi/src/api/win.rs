//! One-sided communication in the Rust API: a window over memory the library allocates,
//! holding `len` elements of `T` at every rank. Operations copy their origin data at once and
//! gets complete before they return, so no borrow outlives a call; the local part is read and
//! written by copy (`local`, `set_local`), never by reference, since other ranks may change
//! it at any time the standard allows.
//!
//! ```no_run
//! # use rmpi::{initialize, Op};
//! let u = initialize().unwrap();
//! let world = u.world();
//! let w = world.allocate_window::<u64>(1).unwrap();
//! w.fence().unwrap();
//! w.accumulate(&[1], 0, 0, Op::Sum).unwrap();
//! w.fence().unwrap();
//! ```

use std::marker::PhantomData;

use super::coll::Op;
use super::comm::Communicator;
use super::datatype::{as_bytes, as_bytes_mut, Equivalence};
use crate::comm_agree::Outside;
use crate::datatype::{table, Msg};
use crate::error::{err, ErrorClass, Result};
use crate::osc::{self, ops::Target};
use crate::runtime;

/// A window of `len` elements of `T` at each rank (MPI_Win_allocate); freed (collectively)
/// on drop.
pub struct Window<T: Equivalence> {
    id: usize,
    base: *mut T,
    len: usize,
    _not_send: PhantomData<*const ()>,
}

/// Whether a passive-target lock excludes others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockType {
    Exclusive,
    Shared,
}

fn op_handle(op: Op) -> usize {
    match op {
        Op::Sum => 0x21,
        Op::Min => 0x22,
        Op::Max => 0x23,
        Op::Prod => 0x24,
        Op::Band => 0x28,
        Op::Bor => 0x29,
        Op::Bxor => 0x2a,
        Op::Land => 0x30,
        Op::Lor => 0x31,
        Op::Lxor => 0x32,
    }
}

impl Communicator {
    /// MPI_Win_allocate: `len` zeroed elements of `T` at this rank (collective).
    pub fn allocate_window<T: Equivalence>(&self, len: usize) -> Result<Window<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| crate::error::Error::new(ErrorClass::Size, "window too large"))?;
        let (id, base) = osc::allocate(
            self.id,
            bytes as isize,
            std::mem::size_of::<T>() as isize,
            crate::info::Info::new(),
        )?;
        Ok(Window {
            id,
            base: base as *mut T,
            len,
            _not_send: PhantomData,
        })
    }
}

impl<T: Equivalence> Window<T> {
    fn target(&self, rank: i32, disp: usize, count: usize) -> Result<Target> {
        Ok(Target {
            rank,
            disp: disp as isize,
            count,
            layout: table::layout(T::DATATYPE.handle)?,
        })
    }

    /// Elements of the local part.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A copy of the local part.
    pub fn local(&self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        // SAFETY: the window's memory holds `len` initialised elements (zeroed, and `T` is a
        // primitive for which zero is valid) for the window's life; `v` has the capacity.
        unsafe {
            std::ptr::copy_nonoverlapping(self.base, v.as_mut_ptr(), self.len);
            v.set_len(self.len);
        }
        v
    }

    /// Overwrite the local part from `offset` with `vals`.
    pub fn set_local(&self, offset: usize, vals: &[T]) -> Result<()> {
        if offset.checked_add(vals.len()).is_none_or(|e| e > self.len) {
            return err(ErrorClass::RmaRange, "set_local past the end of the window");
        }
        // SAFETY: checked in bounds of the window's memory, which lives as long as `self`.
        unsafe { std::ptr::copy_nonoverlapping(vals.as_ptr(), self.base.add(offset), vals.len()) };
        Ok(())
    }

    pub fn fence(&self) -> Result<()> {
        osc::sync::fence(self.id, false)
    }

    /// MPI_Put of `vals` to `rank`'s part at element `disp`.
    pub fn put(&self, vals: &[T], rank: i32, disp: usize) -> Result<()> {
        let t = self.target(rank, disp, vals.len())?;
        let b = as_bytes(vals);
        runtime::with(|rt| {
            // Completed before returning: `vals` is borrowed for this call only.
            if let Some(r) = osc::ops::put(rt, self.id, Msg::bytes(b.as_ptr(), b.len()), t, true)? {
                rt.wait(r)?;
            }
            Ok(())
        })
    }

    /// MPI_Get of `out.len()` elements from `rank`'s part at `disp`; complete on return.
    pub fn get(&self, out: &mut [T], rank: i32, disp: usize) -> Result<()> {
        let t = self.target(rank, disp, out.len())?;
        let b = as_bytes_mut(out);
        let m = Msg::bytes(b.as_mut_ptr(), b.len());
        // `out` stays borrowed until the reply is in; under MULTIPLE the wait is outside the
        // runtime.
        match runtime::with(|rt| osc::ops::get(rt, self.id, m, t, true))? {
            Some(r) => runtime::wait_request(r).map(drop),
            None => Ok(()),
        }
    }

    /// MPI_Accumulate: `rank`'s elements from `disp` become `vals op` themselves, atomically
    /// per element.
    pub fn accumulate(&self, vals: &[T], rank: i32, disp: usize, op: Op) -> Result<()> {
        let t = self.target(rank, disp, vals.len())?;
        let b = as_bytes(vals);
        let h = op_handle(op);
        runtime::with(|rt| {
            crate::op::check(&crate::op::lookup(h)?, T::DATATYPE)?;
            osc::ops::accumulate(
                rt,
                self.id,
                Msg::bytes(b.as_ptr(), b.len()),
                t,
                h,
                T::DATATYPE,
            )
        })
    }

    /// MPI_Fetch_and_op: the old value at (`rank`, `disp`); it becomes `val op` old.
    pub fn fetch_and_op(&self, val: T, rank: i32, disp: usize, op: Op) -> Result<T> {
        let mut old = [val];
        let t = self.target(rank, disp, 1)?;
        let h = op_handle(op);
        let src = [val];
        let sb = as_bytes(&src);
        let rb = as_bytes_mut(&mut old);
        let q = runtime::with(|rt| {
            crate::op::check(&crate::op::lookup(h)?, T::DATATYPE)?;
            let o = Msg::bytes(sb.as_ptr(), sb.len());
            let r = Msg::bytes(rb.as_mut_ptr(), rb.len());
            osc::ops::get_accumulate(rt, self.id, o, r, t, h, T::DATATYPE, true)
        })?;
        // `src` and `old` live until the reply is in; under MULTIPLE the wait is outside.
        if let Some(q) = q {
            runtime::wait_request(q)?;
        }
        Ok(old[0])
    }

    /// MPI_Compare_and_swap: the old value at (`rank`, `disp`); replaced by `new` if it equals
    /// `compare`.
    pub fn compare_and_swap(&self, new: T, compare: T, rank: i32, disp: usize) -> Result<T> {
        let (n, c, mut old) = ([new], [compare], [compare]);
        let t = self.target(rank, disp, 1)?;
        let (nb, cb, ob) = (as_bytes(&n), as_bytes(&c), as_bytes_mut(&mut old));
        runtime::with(|rt| {
            let (nm, cm) = (
                Msg::bytes(nb.as_ptr(), nb.len()),
                Msg::bytes(cb.as_ptr(), cb.len()),
            );
            osc::ops::compare_and_swap(
                rt,
                self.id,
                nm,
                cm,
                Msg::bytes(ob.as_mut_ptr(), ob.len()),
                t,
            )
        })?;
        // `old` is borrowed until the reply is in; under MULTIPLE the wait is outside the
        // runtime.
        osc::sync::flush_local(&mut Outside, self.id)?;
        Ok(old[0])
    }

    pub fn lock(&self, kind: LockType, rank: i32) -> Result<()> {
        osc::sync::lock(&mut Outside, self.id, kind == LockType::Exclusive, rank)
    }

    pub fn unlock(&self, rank: i32) -> Result<()> {
        osc::sync::unlock(&mut Outside, self.id, rank)
    }

    pub fn lock_all(&self) -> Result<()> {
        osc::sync::lock_all(&mut Outside, self.id)
    }

    pub fn unlock_all(&self) -> Result<()> {
        osc::sync::unlock_all(&mut Outside, self.id)
    }

    /// MPI_Win_flush: this rank's operations on `rank` are applied there.
    pub fn flush(&self, rank: i32) -> Result<()> {
        osc::sync::flush(&mut Outside, self.id, Some(rank))
    }
}

impl<T: Equivalence> Drop for Window<T> {
    fn drop(&mut self) {
        let _ = osc::free(self.id);
    }
}
