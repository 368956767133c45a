//! Typed attributes on communicators (MPI attribute caching, Rust side).
//!
//! A `Keyval<T>` is an attribute key whose values are `T`. A value is kept as a boxed `Rc<T>`
//! and the box's address is what MPI stores (the `Rc` keeps a value alive while `T::clone`,
//! user code, runs even if that code deletes the attribute); the keyval's copy callback clones the value into a new box when
//! a communicator is duplicated, and its delete callback drops the box when the attribute is
//! replaced, deleted, or its communicator freed. Values on WORLD and SELF live until the
//! process ends unless deleted.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::rc::Rc;

use super::comm::Communicator;
use crate::error::Result;
use crate::registry::Copy;
use crate::runtime;

/// Copy callback for values of type `T`: a clone in a new box.
unsafe extern "C" fn copy_value<T: Clone + 'static>(
    _comm: *mut c_void,
    _keyval: i32,
    _extra: *mut c_void,
    val_in: *mut c_void,
    val_out: *mut c_void,
    flag: *mut i32,
) -> i32 {
    // SAFETY: values under a Keyval<T> are only ever set by `set_attr::<T>` (or this
    // function) as a Box<Rc<T>>'s address, valid until the delete callback; the Rc is cloned
    // before any user code runs. MPI passes valid out-pointers.
    unsafe {
        let rc = Rc::clone(&*(val_in as *const Rc<T>));
        let b = Box::into_raw(Box::new(Rc::new((*rc).clone())));
        *(val_out as *mut *mut Rc<T>) = b;
        *flag = 1;
    }
    0
}

/// Delete callback for values of type `T`: drop the box.
unsafe extern "C" fn delete_value<T: 'static>(
    _comm: *mut c_void,
    _keyval: i32,
    val: *mut c_void,
    _extra: *mut c_void,
) -> i32 {
    // SAFETY: as in `copy_value`: `val` is a Box<Rc<T>> made by us, deleted exactly once (the
    // attribute is removed as this is called).
    drop(unsafe { Box::from_raw(val as *mut Rc<T>) });
    0
}

/// An attribute key for values of type `T`; freed (MPI_Comm_free_keyval) on drop.
pub struct Keyval<T: Clone + 'static> {
    key: i32,
    _t: PhantomData<fn() -> T>,
    _not_send: PhantomData<*const ()>,
}

impl<T: Clone + 'static> Keyval<T> {
    /// MPI_Comm_create_keyval with callbacks that clone and drop `T` values.
    pub fn new() -> Result<Keyval<T>> {
        let key = runtime::with(|rt| {
            Ok(rt
                .objs
                .add_keyval(Copy::User(copy_value::<T>), Some(delete_value::<T>), 0))
        })?;
        Ok(Keyval {
            key,
            _t: PhantomData,
            _not_send: PhantomData,
        })
    }
}

impl<T: Clone + 'static> Drop for Keyval<T> {
    fn drop(&mut self) {
        let _ = runtime::with(|rt| rt.objs.free_keyval(self.key));
    }
}

impl Communicator {
    /// MPI_Comm_set_attr: attach `value` under `key`, dropping any value it replaces.
    pub fn set_attr<T: Clone + 'static>(&self, key: &Keyval<T>, value: T) -> Result<()> {
        let b = Box::into_raw(Box::new(Rc::new(value)));
        let r = crate::comm_ops::set_attr(self.id, key.key, b as usize);
        if r.is_err() {
            // SAFETY: `b` was not stored; we still own it.
            drop(unsafe { Box::from_raw(b) });
        }
        r
    }

    /// MPI_Comm_get_attr: a clone of the value under `key`, if set.
    pub fn attr<T: Clone + 'static>(&self, key: &Keyval<T>) -> Option<T> {
        let v = crate::comm_ops::get_attr(self.id, key.key).ok()??;
        // SAFETY: set by `set_attr::<T>` (or `copy_value::<T>`) as a live Box<Rc<T>>; nothing
        // runs between the lookup and this Rc clone, which then keeps the value alive.
        let rc = Rc::clone(unsafe { &*(v as *const Rc<T>) });
        Some((*rc).clone())
    }

    /// MPI_Comm_delete_attr: drop the value under `key` (an error if none is set).
    pub fn delete_attr<T: Clone + 'static>(&self, key: &Keyval<T>) -> Result<()> {
        crate::comm_ops::delete_attr(self.id, key.key)
    }
}
