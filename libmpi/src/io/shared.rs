//! The shared file pointer: 8 bytes in a side file every process of the file has open, read
//! and updated under flock(2). The side file is unlinked as soon as every process has opened
//! it, so nothing is left behind, whatever happens to the job.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorClass, Result};

#[derive(Debug)]
pub struct SharedPtr {
    file: File,
}

/// Holds the side file's lock; released on drop.
struct Locked<'a>(&'a File);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // SAFETY: flock on a descriptor we own; no memory is involved.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

fn io_err(what: &str, e: std::io::Error) -> Error {
    Error::new(ErrorClass::Io, format!("shared file pointer: {what}: {e}"))
}

/// Where the side file of a file at `path` goes: beside it (visible to every node that sees
/// the file), or in the temporary directory when that directory is not writable.
pub fn side_path(path: &Path, pid: u64, serial: u64, in_tmp: bool) -> PathBuf {
    let name = format!(".rmpi-shfp-{pid}-{serial}");
    let dir = match path.parent() {
        Some(d) if !in_tmp && !d.as_os_str().is_empty() => d.to_path_buf(),
        _ if !in_tmp => PathBuf::from("."),
        _ => std::env::temp_dir(),
    };
    dir.join(name)
}

impl SharedPtr {
    /// Create the side file (one process); false in `in_tmp` says it is beside the file.
    pub fn create(path: &Path, pid: u64, serial: u64) -> Result<(SharedPtr, bool)> {
        let mut last = None;
        for in_tmp in [false, true] {
            let p = side_path(path, pid, serial, in_tmp);
            match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&p)
            {
                Ok(file) => return Ok((SharedPtr { file }, in_tmp)),
                Err(e) => last = Some(e),
            }
        }
        Err(io_err("cannot create the side file", last.expect("tried")))
    }

    /// Open the side file another process created.
    pub fn open(p: &Path) -> Result<SharedPtr> {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(p)
            .map(|file| SharedPtr { file })
            .map_err(|e| io_err(&format!("cannot open {}", p.display()), e))
    }

    fn lock(&self) -> Result<Locked<'_>> {
        // SAFETY: flock on a descriptor we own; no memory is involved.
        if unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io_err("lock", std::io::Error::last_os_error()));
        }
        Ok(Locked(&self.file))
    }

    fn load(&self) -> Result<u64> {
        let mut b = [0u8; 8];
        match self.file.read_at(&mut b, 0) {
            Ok(8) => Ok(u64::from_le_bytes(b)),
            Ok(_) => Ok(0), // not written yet: a new file's pointer is 0
            Err(e) => Err(io_err("read", e)),
        }
    }

    fn store(&self, v: u64) -> Result<()> {
        self.file
            .write_all_at(&v.to_le_bytes(), 0)
            .map_err(|e| io_err("write", e))
    }

    /// The pointer (in etypes of the current view).
    pub fn get(&self) -> Result<u64> {
        let _l = self.lock()?;
        self.load()
    }

    pub fn set(&self, v: u64) -> Result<()> {
        let _l = self.lock()?;
        self.store(v)
    }

    /// Advance the pointer by `n`; returns where it was.
    pub fn fetch_add(&self, n: u64) -> Result<u64> {
        let _l = self.lock()?;
        let v = self.load()?;
        self.store(v + n)?;
        Ok(v)
    }
}
