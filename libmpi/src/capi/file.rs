//! MPI-IO in the C ABI: file handles, open/close/delete, sizes, views, pointers, hints,
//! atomicity, sync and the file error handlers; the shared code of the data access calls
//! (`file_data.rs`). The work is in `crate::io`. Errors go through the file's error handler
//! (MPI_FILE_NULL's for open and delete), MPI_ERRORS_RETURN unless changed.

use std::ffi::{c_char, c_int, c_void, CStr};

use super::*;
use crate::errhandler::ErrFn;
use crate::io::{self, File};

const FILE_NULL: usize = 0x118;
/// File handles: `FILE_BASE + slot`.
const FILE_BASE: usize = 0x6000_0000;
const KIND_SPAN: usize = 0x0800_0000;
const SEEK_CUR: c_int = 401;
const SEEK_END: c_int = 402;
const SEEK_SET: c_int = 403;
const MAX_DATAREP_STRING: usize = 128;

fn file_index(h: Handle) -> Result<usize> {
    match h as usize {
        FILE_NULL => Err(Error::new(
            ErrorClass::File,
            "MPI_FILE_NULL is not a valid file here",
        )),
        v if (FILE_BASE..FILE_BASE + KIND_SPAN).contains(&v) && io::exists(v - FILE_BASE) => {
            Ok(v - FILE_BASE)
        }
        v => Err(Error::new(
            ErrorClass::File,
            format!("{v:#x} is not a file handle (or the file was closed)"),
        )),
    }
}

fn file_handle(id: usize) -> Handle {
    (FILE_BASE + id) as Handle
}

/// Apply the error handler of file `id` (MPI_FILE_NULL's when None) to a failed call.
#[cold]
fn file_fail(name: &str, id: Option<usize>, code: c_int, e: &dyn std::fmt::Display) -> c_int {
    let handler = match id {
        Some(id) => {
            io::with_file(id, |f| Ok(f.errhandler)).unwrap_or_else(|_| io::default_errhandler())
        }
        None => io::default_errhandler(),
    };
    match handler {
        ErrHandler::Return => code,
        ErrHandler::User(h) => {
            let Ok(f) = crate::errhandler::get(h) else {
                return code;
            };
            let mut handle = id.map_or(FILE_NULL as Handle, file_handle);
            let mut c = code;
            // SAFETY: a function registered with MPI_File_create_errhandler, called with a
            // pointer to the file handle and to the code, as MPI_File_errhandler_function
            // prescribes; the runtime is not borrowed (it may call MPI).
            unsafe { f(&mut handle, &mut c) };
            code
        }
        ErrHandler::Fatal | ErrHandler::Abort => {
            let msg = format!("{name}: {e}");
            eprintln!("rmpi: {msg} (file error handler: aborting the job)");
            let _ = runtime::with(|rt| -> Result<()> { rt.abort(code, &msg) });
            runtime::abort_without_runtime(code, &msg)
        }
    }
}

/// Run `f` with the runtime and the file; errors through the file's handler.
fn fcall(name: &str, fh: Handle, f: impl FnOnce(&mut Runtime, &mut File) -> Result<()>) -> c_int {
    let id = match file_index(fh) {
        Ok(id) => id,
        Err(e) => return file_fail(name, None, e.code(), &e),
    };
    match runtime::with(|rt| io::with_file(id, |file| f(rt, file))) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => file_fail(name, Some(id), e.code(), &e),
    }
}

/// A collective file call: `f` gets the file's id and communicator and runs outside the
/// runtime, reaching the file through `io::with_file` between its agreement steps (which wait
/// for the other processes outside the runtime under MPI_THREAD_MULTIPLE). Errors through
/// the file's handler.
fn fcoll(name: &str, fh: Handle, f: impl FnOnce(usize, usize) -> Result<()>) -> c_int {
    let id = match file_index(fh) {
        Ok(id) => id,
        Err(e) => return file_fail(name, None, e.code(), &e),
    };
    match io::with_file(id, |file| Ok(file.comm)).and_then(|comm| f(id, comm)) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => file_fail(name, Some(id), e.code(), &e),
    }
}

/// This process's rank among the processes of the file on `comm`.
fn rank_in(comm: usize) -> Result<i32> {
    runtime::with(|rt| Ok(rt.comm(comm)?.rank))
}

fn out<T>(p: *mut T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{what} pointer is NULL"),
        ));
    }
    Ok(())
}

/// # Safety
/// `p` is NULL (an error) or a NUL-terminated string.
unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Error::new(ErrorClass::BadFile, format!("{what} is not UTF-8")))
}

mpi_fn! {
    fn MPI_File_open / PMPI_File_open(comm: Handle, filename: *const c_char, amode: c_int, info: Handle, fh: *mut Handle) -> c_int {
        let r = (|| {
            let c = comm_index(comm)?;
            // Checked inside the collective open: a bad argument at one process fails all.
            let args = (|| {
                out(fh, "fh")?;
                let hints = super::info::hints(info)?;
                // SAFETY: the standard passes a NUL-terminated file name.
                let name = unsafe { c_str(filename, "filename")? };
                Ok((name, hints))
            })();
            io::open(c, args, amode).and_then(io::insert)
        })();
        if r.is_err() && !fh.is_null() {
            // SAFETY: checked non-NULL: the caller's MPI_File.
            unsafe { *fh = FILE_NULL as Handle };
        }
        match r {
            Ok(id) => {
                // SAFETY: checked non-NULL.
                unsafe { *fh = file_handle(id) };
                MPI_SUCCESS
            }
            Err(e) if e.class == ErrorClass::Comm => fail("MPI_File_open", comm_index(comm).unwrap_or(crate::comm::WORLD), e),
            Err(e) => file_fail("MPI_File_open", None, e.code(), &e),
        }
    }
}

mpi_fn! {
    fn MPI_File_close / PMPI_File_close(fh: *mut Handle) -> c_int {
        if fh.is_null() {
            let e = Error::new(ErrorClass::Arg, "fh pointer is NULL");
            return file_fail("MPI_File_close", None, e.code(), &e);
        }
        // SAFETY: checked non-NULL.
        let h = unsafe { *fh };
        let id = match file_index(h) {
            Ok(id) => id,
            Err(e) => return file_fail("MPI_File_close", None, e.code(), &e),
        };
        let eh = io::with_file(id, |f| Ok(f.errhandler)).unwrap_or(ErrHandler::Return);
        match io::close(id) {
            Ok(()) => {
                // SAFETY: checked non-NULL.
                unsafe { *fh = FILE_NULL as Handle };
                MPI_SUCCESS
            }
            Err(e) => {
                // The file is gone; its handler still applies to the error.
                if eh == ErrHandler::Return {
                    e.code()
                } else {
                    file_fail("MPI_File_close", None, e.code(), &e)
                }
            }
        }
    }
}

mpi_fn! {
    fn MPI_File_delete / PMPI_File_delete(filename: *const c_char, info: Handle) -> c_int {
        // It needs no runtime, but MPI allows it only between MPI_Init and MPI_Finalize.
        if let Err(e) = running() {
            return e.code();
        }
        let r = (|| {
            super::info::hints(info)?;
            // SAFETY: the standard passes a NUL-terminated file name.
            let name = unsafe { c_str(filename, "filename")? };
            io::delete(name)
        })();
        match r {
            Ok(()) => MPI_SUCCESS,
            Err(e) => file_fail("MPI_File_delete", None, e.code(), &e),
        }
    }
}

fn grow_or_set(name: &str, fh: Handle, size: i64, grow_only: bool) -> c_int {
    fcoll(name, fh, |id, comm| {
        let amode = io::with_file(id, |f| Ok(f.amode))?;
        let local = if size < 0 {
            Err(Error::new(
                ErrorClass::Arg,
                format!("size {size} is negative"),
            ))
        } else if amode & io::MODE_RDONLY != 0 {
            Err(Error::new(
                ErrorClass::ReadOnly,
                "the file was opened read-only",
            ))
        } else {
            Ok(())
        };
        io::agree(comm, local, &[size as u64], "the size")?;
        // Rank 0 resizes; everyone learns how it went.
        let res = if rank_in(comm)? == 0 {
            io::with_file(id, |f| {
                Ok(f.size().and_then(|cur| {
                    let want = size as u64;
                    if grow_only && cur >= want {
                        return Ok(());
                    }
                    f.file
                        .set_len(want)
                        .map_err(|e| Error::new(ErrorClass::Io, format!("ftruncate: {e}")))
                }))
            })?
        } else {
            Ok(())
        };
        io::agree(comm, res, &[], "")
    })
}

mpi_fn! {
    fn MPI_File_set_size / PMPI_File_set_size(fh: Handle, size: i64) -> c_int {
        grow_or_set("MPI_File_set_size", fh, size, false)
    }
}

mpi_fn! {
    fn MPI_File_preallocate / PMPI_File_preallocate(fh: Handle, size: i64) -> c_int {
        grow_or_set("MPI_File_preallocate", fh, size, true)
    }
}

mpi_fn! {
    fn MPI_File_get_size / PMPI_File_get_size(fh: Handle, size: *mut i64) -> c_int {
        fcall("MPI_File_get_size", fh, |_, f| {
            out(size, "size")?;
            let s = f.size()?;
            // SAFETY: checked non-NULL.
            unsafe { *size = s as i64 };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_File_get_amode / PMPI_File_get_amode(fh: Handle, amode: *mut c_int) -> c_int {
        fcall("MPI_File_get_amode", fh, |_, f| {
            out(amode, "amode")?;
            // SAFETY: checked non-NULL.
            unsafe { *amode = f.amode };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_File_get_group / PMPI_File_get_group(fh: Handle, group: *mut Handle) -> c_int {
        fcall("MPI_File_get_group", fh, |rt, f| {
            out(group, "group")?;
            let g = crate::group::Group::new(rt.comm(f.comm)?.group.clone());
            let h = super::group::new_group(rt, g);
            // SAFETY: checked non-NULL.
            unsafe { *group = h };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_File_set_info / PMPI_File_set_info(fh: Handle, info: Handle) -> c_int {
        fcall("MPI_File_set_info", fh, |_, f| {
            let hints = super::info::hints(info)?;
            f.info.merge(&hints);
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_File_get_info / PMPI_File_get_info(fh: Handle, info_used: *mut Handle) -> c_int {
        fcall("MPI_File_get_info", fh, |_, f| {
            out(info_used, "info_used")?;
            let h = super::info::new_handle(f.info.clone());
            // SAFETY: checked non-NULL.
            unsafe { *info_used = h };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_File_set_view / PMPI_File_set_view(fh: Handle, disp: i64, etype: Handle, filetype: Handle, datarep: *const c_char, info: Handle) -> c_int {
        fcoll("MPI_File_set_view", fh, |id, comm| {
            // Every check this process can make alone, then the agreement (so a bad argument
            // at one process fails the call everywhere instead of leaving the others waiting).
            let local = io::with_file(id, |f| Ok((|| {
                let hints = super::info::hints(info)?;
                // SAFETY: the standard passes a NUL-terminated string.
                let rep = unsafe { c_str(datarep, "datarep")? };
                let disp = if disp == -1 {
                    // MPI_DISPLACEMENT_CURRENT: only for sequential files, at the shared pointer.
                    if f.amode & io::MODE_SEQUENTIAL == 0 {
                        return Err(Error::new(ErrorClass::Arg, "MPI_DISPLACEMENT_CURRENT needs MPI_MODE_SEQUENTIAL"));
                    }
                    f.view.byte_offset(f.shared.get()?)?
                } else if disp < 0 {
                    return Err(Error::new(ErrorClass::Arg, format!("displacement {disp} is negative")));
                } else {
                    disp as u64
                };
                let v = io::view::View::new(disp, etype as usize, filetype as usize, rep, f.amode & io::MODE_RDONLY == 0)?;
                if rep == "external32" {
                    external32_sized(etype, "the etype")?;
                    external32_sized(filetype, "the filetype")?;
                }
                Ok((v, hints))
            })()))?;
            let esize = local.as_ref().map_or(0, |(v, _)| v.etype_size);
            let mut keep = None;
            let local = local.map(|(v, h)| {
                keep = Some(h);
                v
            });
            let v = io::agree(comm, local, &[esize], "the etype's size")?;
            // Every process resets its pointers (the old view's types are freed as it drops);
            // the shared one is reset once, after everyone is past any use of the old one.
            let first = rank_in(comm)? == 0;
            let res = io::with_file(id, |f| {
                f.view = v;
                f.pos = 0;
                Ok(if first { f.shared.set(0) } else { Ok(()) })
            })?;
            io::agree(comm, res, &[], "")?;
            if let Some(h) = keep {
                io::with_file(id, |f| {
                    f.info.merge(&h);
                    Ok(())
                })?;
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_File_get_view / PMPI_File_get_view(fh: Handle, disp: *mut i64, etype: *mut Handle, filetype: *mut Handle, datarep: *mut c_char) -> c_int {
        fcall("MPI_File_get_view", fh, |_, f| {
            out(disp, "disp")?;
            out(etype, "etype")?;
            out(filetype, "filetype")?;
            out(datarep, "datarep")?;
            // Derived types come back as new handles the caller frees.
            let give = |h: usize| -> Result<usize> {
                if crate::datatype::lookup(h).is_some() {
                    Ok(h)
                } else {
                    crate::datatype::table::dup(h)
                }
            };
            let (e, t) = (give(f.view.etype)?, give(f.view.filetype)?);
            let rep = f.view.datarep.as_bytes();
            let n = rep.len().min(MAX_DATAREP_STRING - 1);
            // SAFETY: all checked non-NULL; datarep has MPI_MAX_DATAREP_STRING bytes.
            unsafe {
                *disp = f.view.disp as i64;
                *etype = e as Handle;
                *filetype = t as Handle;
                std::ptr::copy_nonoverlapping(rep.as_ptr(), datarep.cast::<u8>(), n);
                *datarep.add(n) = 0;
            }
            Ok(())
        })
    }
}

/// The new position of a seek from `cur` (etypes) in a file whose end is at view offset `end`.
fn seek_to(cur: u64, end: u64, offset: i64, whence: c_int) -> Result<u64> {
    let base = match whence {
        SEEK_SET => 0,
        SEEK_CUR => cur as i64,
        SEEK_END => end as i64,
        w => {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("whence {w} is not MPI_SEEK_SET, _CUR or _END"),
            ))
        }
    };
    match base.checked_add(offset) {
        Some(p) if p >= 0 => Ok(p as u64),
        _ => Err(Error::new(
            ErrorClass::Arg,
            format!("seeking to a negative offset ({base} + {offset})"),
        )),
    }
}

mpi_fn! {
    fn MPI_File_seek / PMPI_File_seek(fh: Handle, offset: i64, whence: c_int) -> c_int {
        fcall("MPI_File_seek", fh, |_, f| {
            f.check_not_sequential()?;
            let end = f.view.offset_of_end(f.size()?);
            f.pos = seek_to(f.pos, end, offset, whence)?;
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_File_get_position / PMPI_File_get_position(fh: Handle, offset: *mut i64) -> c_int {
        fcall("MPI_File_get_position", fh, |_, f| {
            out(offset, "offset")?;
            f.check_not_sequential()?;
            // SAFETY: checked non-NULL.
            unsafe { *offset = f.pos as i64 };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_File_seek_shared / PMPI_File_seek_shared(fh: Handle, offset: i64, whence: c_int) -> c_int {
        fcoll("MPI_File_seek_shared", fh, |id, comm| {
            io::check_same(comm, &[offset as u64, whence as u64], "offset or whence")?;
            let mut res = Ok(());
            if rank_in(comm)? == 0 {
                res = io::with_file(id, |f| {
                    let end = f.view.offset_of_end(f.size()?);
                    Ok(f.shared.get().and_then(|cur| seek_to(cur, end, offset, whence)).and_then(|p| f.shared.set(p)))
                })?;
            }
            // Nobody uses the shared pointer before it is set.
            let agreed = io::agree_error(comm, res.as_ref().err().map_or(0, |e| e.code()))?;
            res?;
            if agreed != 0 {
                return Err(Error::new(ErrorClass::from_code(agreed).unwrap_or(ErrorClass::Arg), "seek failed at rank 0"));
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_File_get_position_shared / PMPI_File_get_position_shared(fh: Handle, offset: *mut i64) -> c_int {
        fcall("MPI_File_get_position_shared", fh, |_, f| {
            out(offset, "offset")?;
            let p = f.shared.get()?;
            // SAFETY: checked non-NULL.
            unsafe { *offset = p as i64 };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_File_get_byte_offset / PMPI_File_get_byte_offset(fh: Handle, offset: i64, disp: *mut i64) -> c_int {
        fcall("MPI_File_get_byte_offset", fh, |_, f| {
            out(disp, "disp")?;
            if offset < 0 {
                return Err(Error::new(ErrorClass::Arg, format!("offset {offset} is negative")));
            }
            let b = f.view.byte_offset(offset as u64)?;
            // SAFETY: checked non-NULL.
            unsafe { *disp = b as i64 };
            Ok(())
        })
    }
}

fn type_extent(name: &str, fh: Handle, datatype: Handle, extent: *mut Aint) -> c_int {
    fcall(name, fh, |_, _| {
        out(extent, "extent")?;
        let l = crate::datatype::table::layout(datatype as usize)?;
        // SAFETY: checked non-NULL.
        unsafe { *extent = l.extent() };
        Ok(())
    })
}

mpi_fn! {
    fn MPI_File_get_type_extent / PMPI_File_get_type_extent(fh: Handle, datatype: Handle, extent: *mut Aint) -> c_int {
        type_extent("MPI_File_get_type_extent", fh, datatype, extent)
    }
}

mpi_fn! {
    fn MPI_File_get_type_extent_c / PMPI_File_get_type_extent_c(fh: Handle, datatype: Handle, extent: *mut Aint) -> c_int {
        type_extent("MPI_File_get_type_extent_c", fh, datatype, extent)
    }
}

mpi_fn! {
    fn MPI_File_set_atomicity / PMPI_File_set_atomicity(fh: Handle, flag: c_int) -> c_int {
        fcoll("MPI_File_set_atomicity", fh, |id, comm| {
            io::check_same(comm, &[(flag != 0) as u64], "the atomicity flag")?;
            // Every access is one pwrite/pread per contiguous range: nothing changes.
            io::with_file(id, |f| {
                f.atomic = flag != 0;
                Ok(())
            })
        })
    }
}

mpi_fn! {
    fn MPI_File_get_atomicity / PMPI_File_get_atomicity(fh: Handle, flag: *mut c_int) -> c_int {
        fcall("MPI_File_get_atomicity", fh, |_, f| {
            out(flag, "flag")?;
            // SAFETY: checked non-NULL.
            unsafe { *flag = f.atomic as c_int };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_File_sync / PMPI_File_sync(fh: Handle) -> c_int {
        fcoll("MPI_File_sync", fh, |id, comm| {
            let res = io::with_file(id, |f| {
                Ok(if f.amode & io::MODE_RDONLY != 0 {
                    Ok(())
                } else {
                    f.file.sync_all().map_err(|e| Error::new(ErrorClass::Io, format!("fsync: {e}")))
                })
            })?;
            io::agree_error(comm, 0)?;
            res
        })
    }
}

/// MPI_Register_datarep(_c): the name is kept; see `io::datarep` for what a view does with it.
///
/// # Safety
/// `datarep` is NULL (an error) or a NUL-terminated string.
unsafe fn register(
    name: &str,
    datarep: *const c_char,
    read_fn: *mut c_void,
    write_fn: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract.
    let r = unsafe { c_str(datarep, "datarep") }
        .and_then(|d| io::datarep::register(d, !read_fn.is_null() || !write_fn.is_null()));
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => file_fail(name, None, e.code(), &e),
    }
}

mpi_fn! {
    fn MPI_Register_datarep / PMPI_Register_datarep(datarep: *const c_char, read_conversion_fn: *mut c_void, write_conversion_fn: *mut c_void, _dtype_file_extent_fn: *mut c_void, _extra_state: *mut c_void) -> c_int {
        // SAFETY: forwarded contract.
        unsafe { register("MPI_Register_datarep", datarep, read_conversion_fn, write_conversion_fn) }
    }
}

mpi_fn! {
    fn MPI_Register_datarep_c / PMPI_Register_datarep_c(datarep: *const c_char, read_conversion_fn: *mut c_void, write_conversion_fn: *mut c_void, _dtype_file_extent_fn: *mut c_void, _extra_state: *mut c_void) -> c_int {
        // SAFETY: forwarded contract.
        unsafe { register("MPI_Register_datarep_c", datarep, read_conversion_fn, write_conversion_fn) }
    }
}

// --- error handlers ---

mpi_fn! {
    fn MPI_File_create_errhandler / PMPI_File_create_errhandler(function: Option<ErrFn>, errhandler: *mut Handle) -> c_int {
        // SAFETY: forwarded contract (the same registry of handler functions).
        unsafe { super::errh::PMPI_Comm_create_errhandler(function, errhandler) }
    }
}

mpi_fn! {
    fn MPI_File_set_errhandler / PMPI_File_set_errhandler(file: Handle, errhandler: Handle) -> c_int {
        let h = match super::env::errhandler_of(errhandler) {
            Ok(h) => h,
            Err(e) => return file_fail("MPI_File_set_errhandler", file_index(file).ok(), e.code(), &e),
        };
        if file as usize == FILE_NULL {
            return match io::set_default_errhandler(h) {
                Ok(()) => MPI_SUCCESS,
                Err(e) => file_fail("MPI_File_set_errhandler", None, e.code(), &e),
            };
        }
        fcall("MPI_File_set_errhandler", file, |_, f| {
            f.errhandler = h;
            Ok(())
        })
    }
}

fn errhandler_handle(h: ErrHandler) -> Handle {
    (match h {
        ErrHandler::Fatal => ERRORS_ARE_FATAL,
        ErrHandler::Return => ERRORS_RETURN,
        ErrHandler::Abort => ERRORS_ABORT,
        ErrHandler::User(i) => super::errh::ERRH_BASE + i,
    }) as Handle
}

mpi_fn! {
    fn MPI_File_get_errhandler / PMPI_File_get_errhandler(file: Handle, errhandler: *mut Handle) -> c_int {
        // MPI_FILE_NULL's error handler needs no runtime, but MPI allows this call only
        // between MPI_Init and MPI_Finalize.
        if let Err(e) = running() {
            return e.code();
        }
        if errhandler.is_null() {
            let e = Error::new(ErrorClass::Arg, "errhandler pointer is NULL");
            return file_fail("MPI_File_get_errhandler", file_index(file).ok(), e.code(), &e);
        }
        let h = if file as usize == FILE_NULL {
            io::default_errhandler()
        } else {
            match file_index(file).and_then(|id| io::with_file(id, |f| Ok(f.errhandler))) {
                Ok(h) => h,
                Err(e) => return file_fail("MPI_File_get_errhandler", None, e.code(), &e),
            }
        };
        // The caller gets a handle of its own, which it frees (as MPI_Comm_get_errhandler).
        if let ErrHandler::User(i) = h {
            crate::errhandler::retain(i);
        }
        // SAFETY: checked non-NULL.
        unsafe { *errhandler = errhandler_handle(h) };
        MPI_SUCCESS
    }
}

mpi_fn! {
    fn MPI_File_call_errhandler / PMPI_File_call_errhandler(fh: Handle, errorcode: c_int) -> c_int {
        // MPI_FILE_NULL's error handler needs no runtime, but MPI allows this call only
        // between MPI_Init and MPI_Finalize.
        if let Err(e) = running() {
            return e.code();
        }
        let id = if fh as usize == FILE_NULL {
            None
        } else {
            match file_index(fh) {
                Ok(id) => Some(id),
                Err(e) => return file_fail("MPI_File_call_errhandler", None, e.code(), &e),
            }
        };
        let msg = format!("error code {errorcode} raised by the program");
        file_fail("MPI_File_call_errhandler", id, errorcode, &msg);
        MPI_SUCCESS
    }
}

// --- the shared code of the data access calls (file_data.rs) ---

/// Where a data access starts.
#[derive(Clone, Copy)]
pub(super) enum Pos {
    /// An explicit offset (etypes of the view).
    At(i64),
    /// The individual file pointer, advanced by what was moved.
    Individual,
    /// The shared file pointer, advanced atomically.
    Shared,
    /// The shared file pointer, collectively in rank order.
    Ordered,
}

fn file_status(bytes: u64) -> pml::Status {
    pml::Status {
        count: bytes as usize,
        ..empty_status()
    }
}

/// The user's side of a data access.
#[derive(Clone, Copy)]
pub(super) struct Data {
    pub buf: *mut c_void,
    pub count: Count,
    pub datatype: Handle,
    pub write: bool,
}

/// An access's message, its datatype's size and the view's conversion.
type Prepared = (crate::datatype::Msg, usize, Option<io::access::Conv>);

/// The message and the checks that need no other process.
fn prepare(f: &File, d: Data) -> Result<Prepared> {
    let msg = message_c(d.buf, d.count, d.datatype)?;
    let tsize = type_size(d.datatype)?;
    if d.write {
        f.check_write()?;
    } else {
        f.check_read()?;
    }
    let conv = if f.view.datarep == "external32" {
        let seq = external32_sized(d.datatype, "the buffer's datatype")?;
        let count = usize::try_from(d.count).unwrap_or(0);
        Some(io::access::Conv { seq, count })
    } else {
        None
    };
    Ok((msg, tsize, conv))
}

/// `dt`'s element sequence for an external32 view, which rmpi supports for types whose
/// external32 size is their native size (every fixed-size C type on this ABI): the view's
/// layout is then the native one and only the byte order changes.
fn external32_sized(dt: Handle, what: &str) -> Result<crate::datatype::external32::Seq> {
    let (seq, nat, ext) = super::external32::shape(dt)?;
    if nat != ext {
        return Err(Error::new(
            ErrorClass::UnsupportedDatarep,
            format!("{what} is {nat} bytes natively but {ext} in external32; an external32 view supports types of the same size in both"),
        ));
    }
    Ok(seq)
}

/// The start (etypes) of an ordered access of `n_et` etypes: every process's count, rank 0
/// advances the shared pointer by the total, each starts after the lower ranks. A process
/// whose own arguments failed (`local`) still takes part, so no one waits for it.
fn ordered_start(id: usize, comm: usize, n_et: u64, local: i32) -> Result<u64> {
    let all = io::allgather(comm, &[n_et, local as u64])?;
    if let Some(w) = all.iter().find(|w| w[1] != 0) {
        return Err(Error::new(
            ErrorClass::from_code(w[1] as i32).unwrap_or(ErrorClass::Other),
            "an ordered access failed at another process",
        ));
    }
    let me = rank_in(comm)? as usize;
    let before: u64 = all[..me].iter().map(|w| w[0]).sum();
    let total: u64 = all.iter().map(|w| w[0]).sum();
    let mut base = [0u64; 2];
    if me == 0 {
        match io::with_file(id, |f| Ok(f.shared.fetch_add(total)))? {
            Ok(b) => base[0] = b,
            Err(e) => base[1] = e.code() as u64,
        }
    }
    let b = io::allgather(comm, &base)?;
    if b[0][1] != 0 {
        return Err(Error::new(
            ErrorClass::Io,
            "the shared file pointer failed at rank 0",
        ));
    }
    Ok(b[0][0] + before)
}

/// An ordered access (MPI_File_read/write_ordered and their split forms), outside the runtime:
/// the shared pointer's advance is agreed by every process of the file (`ordered_start`).
fn ordered(id: usize, comm: usize, d: Data) -> Result<pml::Status> {
    let write = d.write;
    let (prepared, n_et, local) = io::with_file(id, |f| {
        let prepared = prepare(f, d);
        let (n_et, local) = match &prepared {
            Ok((m, _, _)) => (m.len as u64 / f.view.etype_size, 0),
            Err(e) => (0, e.code()),
        };
        Ok((prepared, n_et, local))
    })?;
    let start = ordered_start(id, comm, n_et, local);
    let (msg, tsize, conv) = prepared?;
    let start = start?;
    io::with_file(id, |f| {
        transfer(f, start, &msg, tsize, conv.as_ref(), write)
    })
}

/// Do one data access. The collective forms need no step beyond the independent ones (each
/// process moves its own data; POSIX keeps the file consistent); the ordered ones go by
/// `ordered`.
fn access(f: &mut File, pos: Pos, d: Data) -> Result<pml::Status> {
    let (msg, tsize, conv) = prepare(f, d)?;
    let offset = match pos {
        Pos::At(o) => {
            f.check_not_sequential()?;
            if o < 0 {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("offset {o} is negative"),
                ));
            }
            o as u64
        }
        Pos::Individual => {
            f.check_not_sequential()?;
            f.pos
        }
        Pos::Shared => f.shared.fetch_add(msg.len as u64 / f.view.etype_size)?,
        Pos::Ordered => unreachable!("ordered accesses go by `ordered`"),
    };
    let st = transfer(f, offset, &msg, tsize, conv.as_ref(), d.write)?;
    if let Pos::Individual = pos {
        f.pos += io::access::etypes(f, st.count as u64);
    }
    Ok(st)
}

fn transfer(
    f: &File,
    offset: u64,
    msg: &crate::datatype::Msg,
    tsize: usize,
    conv: Option<&io::access::Conv>,
    write: bool,
) -> Result<pml::Status> {
    let bytes = if write {
        io::access::write(f, offset, msg, tsize, conv)?
    } else {
        io::access::read(f, offset, msg, tsize, conv)?
    };
    Ok(file_status(bytes))
}

pub(super) fn blocking(name: &str, fh: Handle, pos: Pos, d: Data, status: *mut MpiStatus) -> c_int {
    if let Pos::Ordered = pos {
        return fcoll(name, fh, |id, comm| {
            let st = ordered(id, comm, d)?;
            // SAFETY: NULL (MPI_STATUS_IGNORE) or the caller's writable status.
            unsafe { store_status(status, &st) };
            Ok(())
        });
    }
    fcall(name, fh, |_, f| {
        let st = access(f, pos, d)?;
        // SAFETY: NULL (MPI_STATUS_IGNORE) or the caller's writable status.
        unsafe { store_status(status, &st) };
        Ok(())
    })
}

/// Non-blocking forms complete at once: the request returned is already complete.
pub(super) fn nonblocking(
    name: &str,
    fh: Handle,
    pos: Pos,
    d: Data,
    request: *mut Handle,
) -> c_int {
    fcall(name, fh, |rt, f| {
        out(request, "request")?;
        let st = access(f, pos, d)?;
        let id = rt.pml.pending_request();
        rt.pml.complete_request(id, st);
        // SAFETY: checked non-NULL.
        unsafe { *request = request_handle(id) };
        Ok(())
    })
}

/// A split collective's first half does the access; `end` hands back its status.
pub(super) fn begin(name: &str, fh: Handle, pos: Pos, d: Data) -> c_int {
    let split_free = |f: &mut File| {
        if f.split.is_some() {
            return Err(Error::new(
                ErrorClass::Other,
                "a split collective is already active on this file",
            ));
        }
        Ok(())
    };
    if let Pos::Ordered = pos {
        return fcoll(name, fh, |id, comm| {
            io::with_file(id, split_free)?;
            let st = ordered(id, comm, d)?;
            io::with_file(id, |f| {
                f.split = Some(st);
                Ok(())
            })
        });
    }
    fcall(name, fh, |_, f| {
        split_free(f)?;
        let st = access(f, pos, d)?;
        f.split = Some(st);
        Ok(())
    })
}

pub(super) fn end(name: &str, fh: Handle, status: *mut MpiStatus) -> c_int {
    fcall(name, fh, |_, f| {
        let st = f.split.take().ok_or_else(|| {
            Error::new(
                ErrorClass::Other,
                "no split collective is active on this file",
            )
        })?;
        // SAFETY: NULL (MPI_STATUS_IGNORE) or the caller's writable status.
        unsafe { store_status(status, &st) };
        Ok(())
    })
}
