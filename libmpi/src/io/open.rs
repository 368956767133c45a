//! MPI_File_open and MPI_File_delete: amode checks, the collective open (rank 0 creates, then
//! the others open), the shared file pointer's side file, and errno → MPI error classes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::*;
use crate::error::Error;

/// The MPI error class of an OS error on a file.
pub fn class_of_io(e: &std::io::Error) -> ErrorClass {
    match e.raw_os_error() {
        Some(libc::ENOENT) => ErrorClass::NoSuchFile,
        Some(libc::EEXIST) => ErrorClass::FileExists,
        Some(libc::EACCES) | Some(libc::EPERM) => ErrorClass::Access,
        Some(libc::EROFS) => ErrorClass::ReadOnly,
        Some(libc::ENOSPC) => ErrorClass::NoSpace,
        Some(libc::EDQUOT) => ErrorClass::Quota,
        Some(libc::ENAMETOOLONG) | Some(libc::ENOTDIR) | Some(libc::EISDIR) | Some(libc::ELOOP) => {
            ErrorClass::BadFile
        }
        Some(libc::ETXTBSY) | Some(libc::EBUSY) => ErrorClass::FileInUse,
        _ => ErrorClass::Io,
    }
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::new(class_of_io(e), format!("{what} {}: {e}", path.display()))
}

/// ROMIO's file system prefixes ("ufs:name") name the same POSIX file.
pub fn strip_prefix(name: &str) -> &str {
    for p in ["ufs:", "nfs:", "lustre:", "gpfs:", "pvfs2:", "testfs:"] {
        if let Some(rest) = name.strip_prefix(p) {
            return rest;
        }
    }
    name
}

/// The amode rules of MPI 4.1 §14.2.1.
pub fn check_amode(amode: i32) -> Result<()> {
    let rw = [MODE_RDONLY, MODE_WRONLY, MODE_RDWR]
        .iter()
        .filter(|&&m| amode & m != 0)
        .count();
    let known = MODE_APPEND
        | MODE_CREATE
        | MODE_DELETE_ON_CLOSE
        | MODE_EXCL
        | MODE_RDONLY
        | MODE_RDWR
        | MODE_SEQUENTIAL
        | MODE_UNIQUE_OPEN
        | MODE_WRONLY;
    let why = if rw != 1 {
        "exactly one of MPI_MODE_RDONLY, MPI_MODE_WRONLY and MPI_MODE_RDWR is required"
    } else if amode & !known != 0 {
        "unknown mode bits"
    } else if amode & MODE_RDONLY != 0 && amode & (MODE_CREATE | MODE_EXCL) != 0 {
        "MPI_MODE_RDONLY cannot be combined with MPI_MODE_CREATE or MPI_MODE_EXCL"
    } else if amode & MODE_RDWR != 0 && amode & MODE_SEQUENTIAL != 0 {
        "MPI_MODE_RDWR cannot be combined with MPI_MODE_SEQUENTIAL"
    } else {
        return Ok(());
    };
    err(ErrorClass::Amode, format!("amode {amode:#x}: {why}"))
}

fn os_open(path: &Path, amode: i32, create: bool) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(amode & MODE_WRONLY == 0)
        .write(amode & MODE_RDONLY == 0);
    if create && amode & MODE_CREATE != 0 {
        if amode & MODE_EXCL != 0 {
            o.create_new(true);
        } else {
            o.create(true);
        }
    }
    o.open(path)
}

/// Side files of this process are numbered, so two opens never pick the same name.
static SERIAL: AtomicU64 = AtomicU64::new(0);

/// MPI_File_open on communicator `comm` (collective). Errors reach every process.
/// `args` are the file name and hints, or what was wrong with them: a process whose own
/// arguments are bad still takes part, so the others fail too instead of waiting. Called
/// outside the runtime, as every collective step of a file (`exchange`).
pub fn open(comm: usize, args: Result<(&str, crate::info::Info)>, amode: i32) -> Result<File> {
    if runtime::with(|rt| Ok(rt.comm(comm)?.is_inter()))? {
        return err(ErrorClass::Comm, "MPI_File_open needs an intracommunicator");
    }
    let fcomm = crate::comm_ops::bare_dup(comm)?;
    match open_on(fcomm, args, amode) {
        Ok(f) => Ok(f),
        Err(e) => {
            let _ = runtime::with(|rt| {
                rt.comms[fcomm] = None;
                Ok(())
            });
            Err(e)
        }
    }
}

fn open_on(comm: usize, args: Result<(&str, crate::info::Info)>, amode: i32) -> Result<File> {
    let rank = runtime::with(|rt| Ok(rt.comm(comm)?.rank))?;
    // Round 1: the same amode everywhere, a valid one, and good arguments.
    let (args, local) = match args.and_then(|a| check_amode(amode).map(|()| a)) {
        Ok(a) => (Some(a), None),
        Err(e) => (None, Some(e)),
    };
    let all = allgather(
        comm,
        &[
            amode as u32 as u64,
            local.as_ref().map_or(0, |e| e.code()) as u64,
        ],
    )?;
    let Some((name, info)) = args else {
        return Err(local.expect("an error when there are no arguments"));
    };
    let path = PathBuf::from(strip_prefix(name));
    if let Some(w) = all.iter().find(|w| w[1] != 0) {
        return err(
            ErrorClass::from_code(w[1] as i32).unwrap_or(ErrorClass::Amode),
            "another process passed an invalid amode",
        );
    }
    if all.iter().any(|w| w[0] != all[0][0]) {
        return err(
            ErrorClass::NotSame,
            "amode differs between the processes opening the file",
        );
    }
    if path.as_os_str().is_empty() {
        return err(ErrorClass::BadFile, "the file name is empty");
    }
    // Round 2: rank 0 creates the file if asked, and the shared pointer's side file.
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id() as u64;
    let mut mine: Option<(std::fs::File, shared::SharedPtr)> = None;
    let mut words = [0u64; 4];
    let mut local_err = None;
    if rank == 0 {
        match os_open(&path, amode, true) {
            Ok(f) => match shared::SharedPtr::create(&path, pid, serial) {
                Ok((sp, in_tmp)) => {
                    let start = if amode & MODE_APPEND != 0 {
                        f.metadata().map(|m| m.len()).unwrap_or(0)
                    } else {
                        0
                    };
                    sp.set(start)?;
                    words = [0, pid, serial, in_tmp as u64];
                    mine = Some((f, sp));
                }
                Err(e) => {
                    words[0] = e.code() as u64;
                    local_err = Some(e);
                }
            },
            Err(e) => {
                let e = io_error("cannot open", &path, &e);
                words[0] = e.code() as u64;
                local_err = Some(e);
            }
        }
    }
    let all = allgather(comm, &words)?;
    if let Some(e) = local_err {
        return Err(e);
    }
    let [c0, pid0, serial0, tmp0] = all[0][..] else {
        return err(ErrorClass::Intern, "bad exchange");
    };
    if c0 != 0 {
        return err(
            ErrorClass::from_code(c0 as i32).unwrap_or(ErrorClass::Io),
            format!("cannot open {} (failed at rank 0)", path.display()),
        );
    }
    let side = shared::side_path(&path, pid0, serial0, tmp0 != 0);
    // Round 3: the others open what rank 0 made; then the side file can go.
    let mut class = 0;
    if rank != 0 {
        match os_open(&path, amode, false) {
            Ok(f) => match shared::SharedPtr::open(&side) {
                Ok(sp) => mine = Some((f, sp)),
                Err(e) => {
                    class = e.code();
                    local_err = Some(e);
                }
            },
            Err(e) => {
                let e = io_error("cannot open", &path, &e);
                class = e.code();
                local_err = Some(e);
            }
        }
    }
    let agreed = agree_error(comm, class)?;
    if rank == 0 {
        let _ = std::fs::remove_file(&side);
    }
    if let Some(e) = local_err {
        return Err(e);
    }
    if agreed != 0 {
        return err(
            ErrorClass::from_code(agreed).unwrap_or(ErrorClass::Io),
            format!("another process cannot open {}", path.display()),
        );
    }
    let (file, shared) = mine.expect("opened");
    let pos = if amode & MODE_APPEND != 0 {
        file.metadata().map(|m| m.len()).unwrap_or(0)
    } else {
        0
    };
    Ok(File {
        comm,
        file,
        path,
        amode,
        view: view::View::bytes(),
        pos,
        shared,
        atomic: false,
        info,
        errhandler: default_errhandler(),
        split: None,
    })
}

/// MPI_File_delete.
pub fn delete(name: &str) -> Result<()> {
    let path = Path::new(strip_prefix(name));
    std::fs::remove_file(path).map_err(|e| io_error("cannot delete", path, &e))
}
