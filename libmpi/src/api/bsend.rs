//! The buffer of buffered sends in the Rust API. `attach_buffer` takes ownership of the
//! bytes, so the library's pointer into them stays valid even if the attachment is leaked;
//! detaching (or dropping) waits until every buffered message has left them.

use crate::error::Result;
use crate::runtime;

/// MPI_BSEND_OVERHEAD: bytes each buffered message needs beyond its data.
pub const BSEND_OVERHEAD: usize = crate::p2p::BSEND_OVERHEAD;

/// The attached buffer (MPI_Buffer_attach); `Communicator::bsend` copies messages into it.
pub struct AttachedBuffer {
    buf: Option<Vec<u8>>,
}

/// Attach `buf` for buffered sends. Size it as the sum over messages in flight at once of
/// their bytes plus `BSEND_OVERHEAD`. Fails if a buffer is already attached.
pub fn attach_buffer(mut buf: Vec<u8>) -> Result<AttachedBuffer> {
    let (ptr, len) = (buf.as_mut_ptr(), buf.len());
    runtime::with(|rt| rt.bsend.attach(ptr, len, false))?;
    Ok(AttachedBuffer { buf: Some(buf) })
}

impl AttachedBuffer {
    /// Wait until every buffered message has left the buffer, detach it and return it.
    pub fn detach(mut self) -> Result<Vec<u8>> {
        // Under MULTIPLE the wait is outside the runtime: the receive it needs may be another
        // thread's.
        runtime::with_ready(|rt| rt.bsend_flushed(), |rt| rt.buffer_detach())?;
        Ok(self.buf.take().expect("attached until detached"))
    }
}

impl Drop for AttachedBuffer {
    fn drop(&mut self) {
        if self.buf.is_some() {
            // Without a runtime (finalized) nothing uses the buffer any more.
            let _ = runtime::with_ready(|rt| rt.bsend_flushed(), |rt| rt.buffer_detach());
        }
    }
}
