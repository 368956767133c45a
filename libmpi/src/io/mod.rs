//! MPI-IO over POSIX files (Open MPI's framework name). A `File` is a descriptor, a private
//! duplicate of the opening communicator (for the agreement steps of collective calls), a
//! view, the individual file pointer and the shared one (`shared.rs`). Data moves with
//! pread/pwrite at the offsets the view gives (`access.rs`); collective calls are the
//! independent ones plus the agreement they need. Files live in a table of their own, like
//! windows; MPI state is used by one thread at a time (runtime.rs: FUNNELED or SERIALIZED).

pub mod access;
pub mod datarep;
mod exchange;
mod open;
pub mod shared;
pub mod view;

use std::cell::RefCell;
use std::path::PathBuf;

use crate::comm::ErrHandler;
use crate::error::{err, ErrorClass, Result};
use crate::runtime::{self, Local};

pub use exchange::{agree, agree_error, allgather};
pub use open::{delete, open};

pub const MODE_APPEND: i32 = 1;
pub const MODE_CREATE: i32 = 2;
pub const MODE_DELETE_ON_CLOSE: i32 = 4;
pub const MODE_EXCL: i32 = 8;
pub const MODE_RDONLY: i32 = 16;
pub const MODE_RDWR: i32 = 32;
pub const MODE_SEQUENTIAL: i32 = 64;
pub const MODE_UNIQUE_OPEN: i32 = 128;
pub const MODE_WRONLY: i32 = 256;

#[derive(Debug)]
pub struct File {
    /// The file's private communicator (a duplicate of the one it was opened on).
    pub comm: usize,
    pub file: std::fs::File,
    pub path: PathBuf,
    pub amode: i32,
    pub view: view::View,
    /// The individual file pointer, in etypes of the view.
    pub pos: u64,
    pub shared: shared::SharedPtr,
    pub atomic: bool,
    pub info: crate::info::Info,
    pub errhandler: ErrHandler,
    /// The status of a split collective begun and not yet ended.
    pub split: Option<crate::pml::Status>,
}

impl File {
    pub fn check_read(&self) -> Result<()> {
        if self.amode & MODE_WRONLY != 0 {
            return err(
                ErrorClass::Access,
                "the file was opened write-only (MPI_MODE_WRONLY)",
            );
        }
        Ok(())
    }

    pub fn check_write(&self) -> Result<()> {
        if self.amode & MODE_RDONLY != 0 {
            return err(
                ErrorClass::ReadOnly,
                "the file was opened read-only (MPI_MODE_RDONLY)",
            );
        }
        Ok(())
    }

    /// Explicit offsets and individual pointers are not allowed on a sequential file.
    pub fn check_not_sequential(&self) -> Result<()> {
        if self.amode & MODE_SEQUENTIAL != 0 {
            return err(
                ErrorClass::UnsupportedOperation,
                "the file was opened with MPI_MODE_SEQUENTIAL: only shared file pointer calls are allowed",
            );
        }
        Ok(())
    }

    pub fn size(&self) -> Result<u64> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| crate::error::Error::new(ErrorClass::Io, format!("fstat: {e}")))
    }
}

// Used by whichever thread may call MPI now (runtime.rs).
static FILES: Local<RefCell<Vec<Option<File>>>> = Local::new(RefCell::new(Vec::new()));
/// MPI_FILE_NULL's error handler: what open (and delete) errors go through, and what a new
/// file starts with. Files default to MPI_ERRORS_RETURN.
static DEFAULT_EH: Local<std::cell::Cell<ErrHandler>> =
    Local::new(std::cell::Cell::new(ErrHandler::Return));

/// MPI_FILE_NULL's error handler (MPI_ERRORS_RETURN on a thread that may not call MPI now).
pub fn default_errhandler() -> ErrHandler {
    DEFAULT_EH.with(|c| c.get()).unwrap_or(ErrHandler::Return)
}

pub fn set_default_errhandler(h: ErrHandler) -> Result<()> {
    DEFAULT_EH.with(|c| c.set(h))
}

/// Run `f` on file `id`; MPI_ERR_FILE if there is none.
pub fn with_file<R>(id: usize, f: impl FnOnce(&mut File) -> Result<R>) -> Result<R> {
    FILES.with(|t| match t.borrow_mut().get_mut(id) {
        Some(Some(file)) => f(file),
        _ => err(
            ErrorClass::File,
            "invalid file handle (closed, or not a file)",
        ),
    })?
}

/// Whether `id` names an open file (false on a thread that may not call MPI now).
pub fn exists(id: usize) -> bool {
    FILES
        .with(|t| matches!(t.borrow().get(id), Some(Some(_))))
        .unwrap_or(false)
}

pub fn insert(file: File) -> Result<usize> {
    FILES.with(|t| {
        let mut t = t.borrow_mut();
        match t.iter().position(Option::is_none) {
            Some(i) => {
                t[i] = Some(file);
                i
            }
            None => {
                t.push(Some(file));
                t.len() - 1
            }
        }
    })
}

/// MPI_File_close: agree (a barrier), remove the file if asked, free what the file holds.
/// Called outside the runtime.
pub fn close(id: usize) -> Result<()> {
    let (comm, delete, path) = with_file(id, |f| {
        Ok((f.comm, f.amode & MODE_DELETE_ON_CLOSE != 0, f.path.clone()))
    })?;
    exchange::agree_error(comm, 0)?;
    let f = FILES.with(|t| t.borrow_mut().get_mut(id).and_then(Option::take))?;
    drop(f);
    let rank = runtime::with(|rt| Ok(rt.comm(comm)?.rank))?;
    let mut class = 0;
    if delete && rank == 0 {
        if let Err(e) = std::fs::remove_file(&path) {
            class = open::class_of_io(&e) as i32;
        }
    }
    // Everyone learns whether the delete failed, and nobody frees the communicator early.
    let class = exchange::agree_error(comm, class)?;
    runtime::with(|rt| {
        rt.comms[comm] = None;
        Ok(())
    })?;
    if class != 0 {
        let c = ErrorClass::from_code(class).unwrap_or(ErrorClass::Io);
        return err(c, format!("cannot delete {} at close", path.display()));
    }
    Ok(())
}

/// Every process of the file passes the same `words`, or all get MPI_ERR_NOT_SAME. Called
/// outside the runtime.
pub fn check_same(comm: usize, words: &[u64], what: &str) -> Result<()> {
    let all = exchange::allgather(comm, words)?;
    if all.iter().any(|w| w != &all[0]) {
        return err(
            ErrorClass::NotSame,
            format!("{what} differs between the processes of the file"),
        );
    }
    Ok(())
}
