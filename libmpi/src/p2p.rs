//! Point-to-point above the pml: send modes (synchronous, buffered, ready), the attached
//! buffer of buffered sends, persistent requests and probes, for both the C and Rust APIs.

mod bsend;

pub use bsend::{Bsend, BSEND_OVERHEAD};

use crate::datatype::Msg;
use crate::error::{err, ErrorClass, Result};
use crate::pml::request::{PersistentOp, SendMode};
use crate::pml::{ReqId, Started, Status};
use crate::runtime::{Runtime, PROC_NULL, TAG_UB};

fn check_tag(tag: i32, recv: bool) -> Result<()> {
    if (0..=TAG_UB).contains(&tag) || (recv && tag == crate::pml::ANY_TAG) {
        Ok(())
    } else {
        err(ErrorClass::Tag, format!("tag {tag} is invalid"))
    }
}

/// The status of an operation with MPI_PROC_NULL: source PROC_NULL, tag ANY_TAG, no data.
pub fn proc_null_status() -> Status {
    Status {
        source: PROC_NULL,
        tag: crate::pml::ANY_TAG,
        ..Status::default()
    }
}

impl Runtime {
    /// Start a send of `len` bytes at `buf` in `mode`.
    ///
    /// # Safety
    /// As `start_send`: `buf` holds `len` bytes left unmodified until the send completes
    /// (a buffered send copies them before returning).
    pub unsafe fn start_send_mode(
        &mut self,
        comm: usize,
        buf: *const u8,
        len: usize,
        dest: i32,
        tag: i32,
        mode: SendMode,
    ) -> Result<Started> {
        // SAFETY: forwarded contract.
        unsafe { self.start_send_mode_msg(comm, Msg::bytes(buf, len), dest, tag, mode) }
    }

    /// Start a send of message `m` (contiguous or through a datatype layout) in `mode`.
    ///
    /// # Safety
    /// As `start_send_msg`.
    pub unsafe fn start_send_mode_msg(
        &mut self,
        comm: usize,
        m: Msg,
        dest: i32,
        tag: i32,
        mode: SendMode,
    ) -> Result<Started> {
        // The communicator is checked even for MPI_PROC_NULL: a bad handle is an error.
        self.comm(comm)?;
        match mode {
            // SAFETY: forwarded contract.
            SendMode::Standard | SendMode::Ready => unsafe {
                self.start_send_msg(comm, m, dest, tag)
            },
            SendMode::Sync => {
                check_tag(tag, false)?;
                if dest == PROC_NULL {
                    return Ok(Started::Done(Status::default()));
                }
                let c = self.comm(comm)?;
                let (world, ctx, me) = (c.world_of(dest)?, c.ctx, c.rank);
                // SAFETY: forwarded contract.
                Ok(unsafe { self.pml.isend_msg_sync(m, world, ctx, me, tag, true) })
            }
            SendMode::Buffered if m.is_contiguous() => {
                // SAFETY: forwarded contract.
                unsafe { self.start_bsend(comm, m.ptr, m.len, dest, tag) }
            }
            SendMode::Buffered => {
                // Pack first: the attached buffer holds the packed bytes.
                let mut packed = vec![0u8; m.len];
                // SAFETY: forwarded contract (the message's bytes are readable).
                unsafe { m.read(0, &mut packed) };
                // SAFETY: `packed` holds m.len bytes, only read during this call.
                unsafe { self.start_bsend(comm, packed.as_ptr(), m.len, dest, tag) }
            }
        }
    }

    /// Buffered send: copy into the attached buffer and send from there; done at once.
    ///
    /// # Safety
    /// `buf` holds `len` readable bytes (only read during this call).
    unsafe fn start_bsend(
        &mut self,
        comm: usize,
        buf: *const u8,
        len: usize,
        dest: i32,
        tag: i32,
    ) -> Result<Started> {
        check_tag(tag, false)?;
        if dest == PROC_NULL {
            return Ok(Started::Done(Status::default()));
        }
        self.comm(comm)?.world_of(dest)?;
        self.bsend.of(comm).reap(&mut self.pml);
        // SAFETY: forwarded contract.
        let (slot, copy) = unsafe { self.bsend.of(comm).reserve(buf, len)? };
        // SAFETY: `copy` is the reserved region, untouched by anyone else until its send
        // completes and `reap` releases it.
        match unsafe { self.start_send(comm, copy, len, dest, tag) } {
            Ok(Started::Done(_)) => self.bsend.of(comm).release(slot),
            Ok(Started::Pending(req)) => self.bsend.of(comm).track(slot, req),
            Err(e) => {
                self.bsend.of(comm).release(slot);
                return Err(e);
            }
        }
        Ok(Started::Done(Status::default()))
    }

    /// Wait for every buffered send to leave the attached buffers (the process's and the
    /// communicators' own).
    pub fn bsend_flush(&mut self) {
        self.bsend_flush_one(None);
        for c in self.bsend.comm_indices() {
            self.bsend_flush_one(Some(c));
        }
    }

    /// Whether every buffered send has left the process's buffer (None) or communicator
    /// `comm`'s own (true when it has none): what a flush waits for, which under MULTIPLE it
    /// waits for outside the runtime (`runtime::with_ready`), since the receive it needs may be
    /// another thread's call.
    pub fn bsend_flushed_one(&self, comm: Option<usize>) -> bool {
        match comm {
            None => self.bsend.flushed(&self.pml),
            Some(c) => self.bsend.comm_flushed(c, &self.pml),
        }
    }

    /// `bsend_flushed_one` of the process's buffer and every communicator's own.
    pub fn bsend_flushed(&self) -> bool {
        self.bsend.all_flushed(&self.pml)
    }

    /// Wait for every buffered send to leave the process's buffer (None) or communicator
    /// `comm`'s own.
    pub fn bsend_flush_one(&mut self, comm: Option<usize>) {
        loop {
            let b = match comm {
                None => &mut self.bsend,
                Some(c) => match self.bsend.comm(c) {
                    Some(b) => b,
                    None => return,
                },
            };
            if b.pending() == 0 {
                return;
            }
            // The list itself, not its request ids: an iflush watcher may reap entries
            // (and free their ids) while we wait.
            let busy = b.busy();
            self.progress_until(|p| crate::p2p::Bsend::all_complete(&busy, p));
            let b = match comm {
                None => &mut self.bsend,
                Some(c) => self.bsend.comm(c).expect("still attached"),
            };
            b.reap(&mut self.pml);
        }
    }

    /// MPI_Buffer_detach: flush, then hand the buffer back (base, size).
    pub fn buffer_detach(&mut self) -> Result<(*mut u8, usize)> {
        self.bsend_flush();
        self.bsend.detach()
    }

    /// A new inactive persistent request; arguments are checked now, not at each start.
    pub fn persistent(&mut self, op: PersistentOp) -> Result<ReqId> {
        check_tag(op.tag, op.send.is_none())?;
        let c = self.comm(op.comm)?;
        if op.peer != PROC_NULL && !(op.send.is_none() && op.peer == crate::pml::ANY_SOURCE) {
            c.world_of(op.peer)?;
        }
        Ok(self.pml.persistent(op))
    }

    /// MPI_Start.
    pub fn start_persistent(&mut self, req: ReqId) -> Result<()> {
        let Some((op, running)) = self.pml.persistent_op(req) else {
            if let Some((ext, running)) = crate::persist::lookup(self, req) {
                return crate::persist::start(self, req, ext, running);
            }
            return err(ErrorClass::Request, "MPI_Start needs a persistent request");
        };
        if running {
            return err(
                ErrorClass::Request,
                "the persistent request is already active",
            );
        }
        // SAFETY: the persistent request's creator promised (MPI_*_init's contract, or a
        // borrow held by the Rust API's persistent request) that the buffer stays valid
        // while a run is active.
        let m = Msg {
            ptr: op.buf,
            len: op.len,
            layout: op.layout,
        };
        let s = unsafe {
            match op.send {
                Some(mode) => self.start_send_mode_msg(op.comm, m, op.peer, op.tag, mode)?,
                None => self.start_recv_msg(op.comm, m, op.peer, op.tag)?,
            }
        };
        let run = self.pml.request_for(s);
        self.pml.set_active(req, run);
        Ok(())
    }

    /// MPI_Iprobe after one progress pass: (ctx, src, tag) of a receive on `comm`.
    pub fn iprobe(&mut self, comm: usize, src: i32, tag: i32) -> Result<Option<Status>> {
        let ctx = self.probe_ctx(comm, src, tag)?;
        if src == PROC_NULL {
            return Ok(Some(proc_null_status()));
        }
        self.pml.progress();
        Ok(self.pml.iprobe(ctx, src, tag))
    }

    /// MPI_Probe: wait until a matching message has arrived.
    pub fn probe(&mut self, comm: usize, src: i32, tag: i32) -> Result<Status> {
        let ctx = self.probe_ctx(comm, src, tag)?;
        if src == PROC_NULL {
            return Ok(proc_null_status());
        }
        self.progress_until(|p| p.iprobe(ctx, src, tag).is_some());
        Ok(self.pml.iprobe(ctx, src, tag).expect("just seen"))
    }

    /// MPI_Improbe: Some((message, status)); message None for MPI_MESSAGE_NO_PROC.
    #[allow(clippy::type_complexity)]
    pub fn improbe(
        &mut self,
        comm: usize,
        src: i32,
        tag: i32,
    ) -> Result<Option<(Option<usize>, Status)>> {
        let ctx = self.probe_ctx(comm, src, tag)?;
        if src == PROC_NULL {
            return Ok(Some((None, proc_null_status())));
        }
        self.pml.progress();
        Ok(self.pml.improbe(ctx, src, tag).map(|(m, s)| (Some(m), s)))
    }

    /// MPI_Mprobe.
    pub fn mprobe(&mut self, comm: usize, src: i32, tag: i32) -> Result<(Option<usize>, Status)> {
        let ctx = self.probe_ctx(comm, src, tag)?;
        if src == PROC_NULL {
            return Ok((None, proc_null_status()));
        }
        self.progress_until(|p| p.iprobe(ctx, src, tag).is_some());
        let (m, s) = self.pml.improbe(ctx, src, tag).expect("just seen");
        Ok((Some(m), s))
    }

    /// Receive a matched message (None: MPI_MESSAGE_NO_PROC).
    ///
    /// # Safety
    /// As `start_recv`.
    pub unsafe fn start_mrecv(
        &mut self,
        msg: Option<usize>,
        buf: *mut u8,
        cap: usize,
    ) -> Result<Started> {
        // SAFETY: forwarded contract.
        unsafe { self.start_mrecv_msg(msg, Msg::bytes(buf, cap)) }
    }

    /// Receive a matched message into `m` (any layout).
    ///
    /// # Safety
    /// As `start_recv_msg`.
    pub unsafe fn start_mrecv_msg(&mut self, msg: Option<usize>, m: Msg) -> Result<Started> {
        let Some(slot) = msg else {
            return Ok(Started::Done(proc_null_status()));
        };
        // SAFETY: forwarded contract.
        unsafe { self.pml.mrecv_msg(slot, m) }.ok_or_else(|| {
            crate::error::Error::new(
                ErrorClass::Request,
                "not a matched message (already received, or never matched)",
            )
        })
    }

    fn probe_ctx(&self, comm: usize, src: i32, tag: i32) -> Result<u32> {
        check_tag(tag, true)?;
        let c = self.comm(comm)?;
        if src != PROC_NULL && src != crate::pml::ANY_SOURCE {
            c.world_of(src)?;
        }
        Ok(c.ctx)
    }
}
