//! Point-to-point beyond send and receive in the Rust API: synchronous, buffered and ready
//! sends, probes, matched probes and persistent requests.

use super::comm::{Communicator, Source, Tag};
use super::datatype::{as_bytes, Equivalence};
use super::message::Message;
use super::persistent::Persistent;
use super::request::{Request, Scope};
use super::status::Status;
use crate::error::Result;
use crate::pml::request::{PersistentOp, SendMode};
use crate::runtime;

impl Communicator {
    fn send_mode<T: Equivalence>(
        &self,
        buf: &[T],
        dest: i32,
        tag: i32,
        mode: SendMode,
    ) -> Result<()> {
        let b = as_bytes(buf);
        runtime::with(|rt| {
            // SAFETY: `b` is borrowed for this whole call, which returns once the send completed.
            let s = unsafe { rt.start_send_mode(self.id, b.as_ptr(), b.len(), dest, tag, mode)? };
            rt.finish(s).map(|_| ())
        })
    }

    /// Synchronous send: returns only once the receiver has matched the message.
    pub fn ssend<T: Equivalence>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.send_mode(buf, dest, tag, SendMode::Sync)
    }

    /// Buffered send: copies into the attached buffer (`attach_buffer`) and returns;
    /// `MPI_ERR_BUFFER` when none is attached or the message does not fit.
    pub fn bsend<T: Equivalence>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.send_mode(buf, dest, tag, SendMode::Buffered)
    }

    /// Ready send: the caller knows the receive is posted (sent as a standard send here).
    pub fn rsend<T: Equivalence>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.send_mode(buf, dest, tag, SendMode::Ready)
    }

    /// Start a synchronous send; the request completes once the receiver has matched it.
    pub fn issend<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'scope>> {
        let b = as_bytes(buf);
        let req = runtime::with(|rt| {
            // SAFETY: `buf` is borrowed for 'scope, and the scope completes the request first.
            let s = unsafe {
                rt.start_send_mode(self.id, b.as_ptr(), b.len(), dest, tag, SendMode::Sync)?
            };
            Ok(rt.pml.request_for(s))
        })?;
        Ok(scope.register(req))
    }

    /// Send `buf` to `dest` and replace its content with the message from `source`.
    pub fn sendrecv_replace<T: Equivalence>(
        &self,
        buf: &mut [T],
        dest: i32,
        sendtag: i32,
        source: impl Into<Source>,
        recvtag: impl Into<Tag>,
    ) -> Result<Status> {
        let mut tmp = buf.to_vec();
        let st = self.sendrecv(buf, dest, sendtag, &mut tmp, source, recvtag)?;
        let n = st.count_bytes() / std::mem::size_of::<T>().max(1);
        buf[..n].copy_from_slice(&tmp[..n]);
        Ok(st)
    }

    /// Wait until a matching message has arrived; its source, tag and size, not received.
    pub fn probe(&self, source: impl Into<Source>, tag: impl Into<Tag>) -> Result<Status> {
        let (src, tag) = (source.into().raw(), tag.into().raw());
        // Under MULTIPLE: MPI_Iprobe turns outside the runtime (`with_poll`).
        runtime::with_poll(
            |rt| rt.iprobe(self.id, src, tag),
            |rt| rt.probe(self.id, src, tag),
        )
        .map(Status)
    }

    /// Whether a matching message has arrived (its status), without receiving it.
    pub fn iprobe(&self, source: impl Into<Source>, tag: impl Into<Tag>) -> Result<Option<Status>> {
        let (src, tag) = (source.into().raw(), tag.into().raw());
        Ok(runtime::with(|rt| rt.iprobe(self.id, src, tag))?.map(Status))
    }

    /// Wait for a matching message and take it out of matching: only the returned `Message`
    /// can receive it.
    pub fn mprobe(
        &self,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<(Message, Status)> {
        let (src, tag) = (source.into().raw(), tag.into().raw());
        // Under MULTIPLE: MPI_Improbe turns outside the runtime, so the turn that finds the
        // message takes it (no other thread can).
        let (slot, st) = runtime::with_poll(
            |rt| rt.improbe(self.id, src, tag),
            |rt| rt.mprobe(self.id, src, tag),
        )?;
        Ok((Message { slot }, Status(st)))
    }

    /// `mprobe` without waiting: None when no matching message has arrived.
    pub fn improbe(
        &self,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Option<(Message, Status)>> {
        let (src, tag) = (source.into().raw(), tag.into().raw());
        let got = runtime::with(|rt| rt.improbe(self.id, src, tag))?;
        Ok(got.map(|(slot, st)| (Message { slot }, Status(st))))
    }

    fn init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        peer: i32,
        tag: i32,
        send: Option<SendMode>,
    ) -> Result<Persistent<'scope, T>> {
        // One raw pointer for both the library and the request's `buffer()`.
        let (ptr, len) = (buf.as_mut_ptr(), std::mem::size_of_val(buf));
        let op = PersistentOp {
            send,
            buf: ptr.cast(),
            len,
            layout: None,
            comm: self.id,
            peer,
            tag,
        };
        let id = runtime::with(|rt| rt.persistent(op))?;
        Ok(Persistent::new(id, ptr, buf.len(), scope.track(id)))
    }

    /// A persistent standard send of `buf` (MPI_Send_init): fill it through `buffer()`
    /// between runs, `start()` and `wait()` each run.
    pub fn send_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        dest: i32,
        tag: i32,
    ) -> Result<Persistent<'scope, T>> {
        self.init(scope, buf, dest, tag, Some(SendMode::Standard))
    }

    /// A persistent synchronous send (MPI_Ssend_init).
    pub fn ssend_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        dest: i32,
        tag: i32,
    ) -> Result<Persistent<'scope, T>> {
        self.init(scope, buf, dest, tag, Some(SendMode::Sync))
    }

    /// A persistent buffered send (MPI_Bsend_init): each run copies into the attached buffer.
    pub fn bsend_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        dest: i32,
        tag: i32,
    ) -> Result<Persistent<'scope, T>> {
        self.init(scope, buf, dest, tag, Some(SendMode::Buffered))
    }

    /// A persistent ready send (MPI_Rsend_init): each run needs the receive already posted.
    pub fn rsend_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        dest: i32,
        tag: i32,
    ) -> Result<Persistent<'scope, T>> {
        self.init(scope, buf, dest, tag, Some(SendMode::Ready))
    }

    /// A persistent receive into `buf` (MPI_Recv_init).
    pub fn recv_init<'scope, T: Equivalence>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Persistent<'scope, T>> {
        self.init(scope, buf, source.into().raw(), tag.into().raw(), None)
    }
}
