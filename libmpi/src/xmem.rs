//! MPI_Alloc_mem's node-shared memory source (btl_sm_xmem): blocks of at least a page come
//! from this rank's memfd, which peers on the node map, so a rendezvous from such a buffer is
//! read with one memcpy (see btl_sm::xmem and docs/DESIGN.md "User-space single copy").

use std::sync::OnceLock;

use btl_sm::xmem::{FreeError, Source, MIN_BLOCK};

use crate::error::{Error, ErrorClass, Result};

static SOURCE: OnceLock<Source> = OnceLock::new();

/// Create the source (once per process) and register it for `expose`; Err says why not.
pub fn start(size: usize) -> std::io::Result<()> {
    if SOURCE.get().is_some() {
        return Ok(());
    }
    let s = Source::new(size)?;
    btl_sm::xmem::register_local(s.range());
    if SOURCE.set(s).is_ok() {
        // SAFETY: registers a plain function; pthread_atfork touches nothing else of ours.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    }
    Ok(())
}

/// A forked child must not share its parent's MPI_Alloc_mem blocks: make them private.
extern "C" fn after_fork_in_child() {
    if let Some(s) = SOURCE.get() {
        s.make_private();
    }
}

/// MPI_Alloc_mem: from the shared source when there is one and it has room, else malloc.
pub fn alloc(size: usize) -> Result<*mut u8> {
    if size >= MIN_BLOCK {
        if let Some(p) = SOURCE.get().and_then(|s| s.alloc(size)) {
            return Ok(p);
        }
    }
    // SAFETY: malloc has no preconditions; 0 bytes still gives a freeable pointer.
    let p = unsafe { libc::malloc(size.max(1)) };
    if p.is_null() {
        return Err(Error::new(
            ErrorClass::NoMem,
            format!("cannot allocate {size} bytes"),
        ));
    }
    Ok(p.cast())
}

/// MPI_Free_mem: a block of the shared source goes back to it, anything else to free.
///
/// # Safety
/// `p` is NULL or a pointer MPI_Alloc_mem returned and not yet freed.
pub unsafe fn free(p: *mut u8) -> Result<()> {
    match SOURCE.get().map(|s| s.free(p)) {
        Some(Ok(())) => Ok(()),
        Some(Err(FreeError::NotABlock)) => Err(Error::new(
            ErrorClass::Arg,
            format!("{p:?} is not a block MPI_Alloc_mem returned (freed twice, or not its start)"),
        )),
        Some(Err(FreeError::Outside)) | None => {
            // SAFETY: the caller's contract: a malloc'd pointer from MPI_Alloc_mem, or NULL.
            unsafe { libc::free(p.cast()) };
            Ok(())
        }
    }
}
