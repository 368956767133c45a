//! Moving data: a message (the user's buffer, any datatype) to and from the file through the
//! view, with pread/pwrite per contiguous file range. Offsets are in etypes of the view; the
//! result is the number of bytes moved (a read stops short at the end of the file).

use std::os::unix::fs::FileExt;

use super::File;
use crate::datatype::external32::{self, Seq};
use crate::datatype::Msg;
use crate::error::{Error, ErrorClass, Result};

/// The conversion a view's data representation asks for: `count` elements of this sequence
/// (the memory datatype's) between the native packed message and external32 in the file.
pub struct Conv {
    pub seq: Seq,
    pub count: usize,
}

fn io_err(what: &str, e: std::io::Error) -> Error {
    Error::new(super::open::class_of_io(&e), format!("{what}: {e}"))
}

/// Whether the message is whole etypes (MPI: the datatype's type map is etypes).
fn check_etypes(f: &File, type_size: usize) -> Result<()> {
    if !(type_size as u64).is_multiple_of(f.view.etype_size) {
        return Err(Error::new(
            ErrorClass::Type,
            format!(
                "the datatype's size ({type_size}) is not a multiple of the view's etype size ({})",
                f.view.etype_size
            ),
        ));
    }
    Ok(())
}

/// Write `msg` at view offset `offset` (etypes), converted by `conv`; returns the bytes written.
pub fn write(
    f: &File,
    offset: u64,
    msg: &Msg,
    type_size: usize,
    conv: Option<&Conv>,
) -> Result<u64> {
    f.check_write()?;
    check_etypes(f, type_size)?;
    if msg.len == 0 {
        return Ok(0);
    }
    let mut scratch = Vec::new();
    // SAFETY: the caller's buffer holds `msg` (the C call's contract), alive for this call.
    let mut data = unsafe { msg.slice(0, msg.len, &mut scratch) };
    let converted;
    if let Some(c) = conv {
        let mut out = vec![0u8; msg.len];
        external32::convert(&c.seq, c.count, data, &mut out, true);
        converted = out;
        data = &converted;
    }
    let mut at = 0usize;
    f.view
        .segments(offset * f.view.etype_size, msg.len as u64, |pos, n| {
            let n = n as usize;
            f.file
                .write_all_at(&data[at..at + n], pos)
                .map_err(|e| io_err("write", e))?;
            at += n;
            Ok(())
        })?;
    Ok(msg.len as u64)
}

/// Read into `msg` from view offset `offset` (etypes), converted by `conv`; returns the bytes
/// read (fewer at the end of the file).
pub fn read(
    f: &File,
    offset: u64,
    msg: &Msg,
    type_size: usize,
    conv: Option<&Conv>,
) -> Result<u64> {
    f.check_read()?;
    check_etypes(f, type_size)?;
    if msg.len == 0 {
        return Ok(0);
    }
    let mut buf = vec![0u8; msg.len];
    let mut got = 0usize;
    let mut eof = false;
    f.view
        .segments(offset * f.view.etype_size, msg.len as u64, |pos, n| {
            if eof {
                return Ok(());
            }
            let want = &mut buf[got..got + n as usize];
            let mut done = 0;
            while done < want.len() {
                match f.file.read_at(&mut want[done..], pos + done as u64) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(k) => done += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io_err("read", e)),
                }
            }
            got += done;
            Ok(())
        })?;
    if let Some(c) = conv {
        // Whole elements convert; bytes past `got` (a short read) are not delivered.
        let mut native = vec![0u8; msg.len];
        external32::convert(&c.seq, c.count, &buf, &mut native, false);
        buf = native;
    }
    // SAFETY: the caller's receive buffer holds `msg` (the C call's contract); got <= len.
    unsafe { msg.write(0, &buf[..got]) };
    Ok(got as u64)
}

/// Etypes in `bytes` (rounded down; a short read ends within one at most).
pub fn etypes(f: &File, bytes: u64) -> u64 {
    bytes / f.view.etype_size
}
