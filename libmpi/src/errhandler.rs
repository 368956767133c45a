//! The table of user error handler functions (MPI_*_create_errhandler).
//!
//! Process-wide rather than part of the runtime: MPI_Session_create_errhandler comes before
//! any MPI_Session_init (its handler is passed to it), and a handler outlives the sessions
//! that used it.

use std::sync::{Mutex, MutexGuard};

use crate::error::{Error, ErrorClass, Result};

/// A C communicator error handler: MPI_Comm_errhandler_function (variadic in C; called with two).
pub type ErrFn = unsafe extern "C" fn(comm: *mut *mut std::ffi::c_void, code: *mut i32);

struct Entry {
    f: ErrFn,
    /// Live C handles (create and each get_errhandler add one, free takes one); a handle
    /// used at zero was freed. The entry itself stays for the objects still using it.
    refs: u32,
}

static TABLE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

fn table() -> MutexGuard<'static, Vec<Entry>> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A new handler with one handle; its index.
pub fn add(f: ErrFn) -> usize {
    let mut t = table();
    t.push(Entry { f, refs: 1 });
    t.len() - 1
}

/// Handler `id`, whether or not a handle to it is left (the objects using it keep it).
pub fn get(id: usize) -> Result<ErrFn> {
    table()
        .get(id)
        .map(|e| e.f)
        .ok_or_else(|| Error::new(ErrorClass::Errhandler, "invalid error handler"))
}

/// The handler behind a C handle the user passes: refused once every handle was freed.
pub fn by_handle(id: usize) -> Result<ErrFn> {
    match table().get(id) {
        Some(e) if e.refs == 0 => Err(Error::new(
            ErrorClass::Errhandler,
            "the error handler was freed",
        )),
        Some(e) => Ok(e.f),
        None => Err(Error::new(ErrorClass::Errhandler, "invalid error handler")),
    }
}

/// A new C handle to handler `id` (MPI_Comm_get_errhandler and the like).
pub fn retain(id: usize) {
    if let Some(e) = table().get_mut(id) {
        e.refs += 1;
    }
}

/// MPI_Errhandler_free of a handle to `id`.
pub fn release(id: usize) -> Result<()> {
    let mut t = table();
    match t.get_mut(id) {
        Some(e) if e.refs > 0 => {
            e.refs -= 1;
            Ok(())
        }
        Some(_) => Err(Error::new(
            ErrorClass::Errhandler,
            "the error handler was freed",
        )),
        None => Err(Error::new(ErrorClass::Errhandler, "invalid error handler")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn h(_: *mut *mut std::ffi::c_void, _: *mut i32) {}

    #[test]
    fn handles_count_and_entries_stay() {
        let id = add(h);
        retain(id);
        release(id).unwrap();
        release(id).unwrap();
        assert!(by_handle(id).is_err());
        assert!(release(id).is_err());
        assert!(get(id).is_ok());
        assert!(get(usize::MAX).is_err());
    }
}
