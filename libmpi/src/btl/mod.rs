//! Byte transfer layers: what the pml sends fragments through. One trait, one implementation per
//! transport (`self` for messages to oneself, `sm` for peers on the node, `ib` for RDMA, `tcp`
//! for sockets).

pub mod ib;
pub mod select;
pub mod self_btl;
pub mod sm;
pub mod tcp;

/// Which transport reaches a world rank, and the rank's index in that transport.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint {
    pub btl: usize,
    pub peer: usize,
}

/// What a transport calls on an error the job cannot survive in its progress (a lost peer, a
/// broken device): the runtime's, set at MPI_Init (it tells the launcher and exits), so that the
/// transports import nothing above them.
pub type FatalFn = fn(i32, &str) -> !;

static FATAL: std::sync::OnceLock<FatalFn> = std::sync::OnceLock::new();

/// Set what [`fatal`] calls (once per process; later calls change nothing).
pub fn set_fatal(f: FatalFn) {
    let _ = FATAL.set(f);
}

/// End the job from a transport's progress with error class `code` and `message`.
#[cold]
pub fn fatal(code: i32, message: &str) -> ! {
    match FATAL.get() {
        Some(f) => f(code, message),
        // No runtime (a transport used on its own): say it and exit.
        None => {
            eprintln!("rmpi: {message}");
            std::process::exit(if code == 0 { 1 } else { code })
        }
    }
}

/// Why a single-copy `get` could not be done; the pml then falls back to streaming.
#[derive(Debug)]
pub enum GetError {
    /// This transport has no single copy, or the OS refused it (e.g. ptrace restrictions).
    Unsupported(String),
    /// The transfer failed on the wire (bad key, peer lost; the transport has said why): the
    /// receive completes with this error class.
    Failed { class: crate::error::ErrorClass },
}

/// What [`Btl::coop_open`] gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoopOpen {
    Ticket(u64),
    Busy,
    No,
}

/// Where [`Btl::progress_into`] delivers: whole fragments, or (a transport that reads from a
/// stream, tcp) a large fragment's data read straight into memory the layer above names,
/// saving the copy through the transport's own buffer.
pub trait Sink {
    /// A complete fragment, as [`Btl::progress`]'s `f`.
    fn frag(&mut self, peer: usize, tag: u8, frag: &[u8]);
    /// A fragment whose first bytes are `head` arrives: where its other `rest` bytes go, or None
    /// to have it delivered whole by [`Sink::frag`]. The memory stays writable, and untouched
    /// by anyone else, until [`Sink::placed`].
    fn place(&mut self, peer: usize, tag: u8, head: &[u8], rest: usize) -> Option<*mut u8>;
    /// The `rest` bytes of a placed fragment have all arrived.
    fn placed(&mut self, peer: usize, tag: u8, head: &[u8], rest: usize);
}

/// A transport. Peers are named by the transport's own index (`Endpoint::peer`).
/// One read of [`Btl::get_many`]: `len` bytes at `remote` in the peer (exposed under `key`)
/// into `local`.
#[derive(Clone, Copy, Debug)]
pub struct GetPart {
    pub remote: usize,
    pub key: u64,
    pub local: *mut u8,
    pub len: usize,
}

/// [`Btl::get_many`] as one [`Btl::get`] per part (the default, and a transport's fallback).
///
/// # Safety
/// As [`Btl::get_many`].
pub unsafe fn get_each<B: Btl + ?Sized>(
    btl: &mut B,
    peer: usize,
    parts: &[GetPart],
) -> Result<(), GetError> {
    for p in parts {
        // SAFETY: the caller's contract on this part; one slice lives at a time, so parts
        // that overlap never alias.
        let local = unsafe { std::slice::from_raw_parts_mut(p.local, p.len) };
        btl.get(peer, p.remote, p.key, local)?;
    }
    Ok(())
}

pub trait Btl {
    fn name(&self) -> &'static str;
    /// Largest `hdr.len() + data.len()` one fragment may carry.
    fn max_frag(&self) -> usize;
    /// Largest fragment of an eager message, header included (`max_frag` bounds the others).
    fn max_eager_frag(&self) -> usize {
        self.max_frag()
    }
    /// The eager limit toward `peer` when this transport chooses one per peer (None: the
    /// job's eager limit).
    fn eager_limit(&self, _peer: usize) -> Option<usize> {
        None
    }
    /// The eager limit toward `peer` for a send that follows other sends to it rather than
    /// answering it (a window of sends: bandwidth rather than latency); at least
    /// `eager_limit`'s.
    fn eager_limit_stream(&self, peer: usize) -> Option<usize> {
        self.eager_limit(peer)
    }
    /// Fragment sizes `(lo, hi]` (header and data) that this transport moves faster as two
    /// fragments of half the size: the pml then sends such an eager message as its first half
    /// and a CONT. None: one fragment whenever it fits.
    fn eager_split(&self) -> Option<(usize, usize)> {
        None
    }
    /// Enqueue a fragment; false when there is no room now (retry after progress).
    fn try_send(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool;
    /// Deliver arrived fragments, in order per peer, as `f(peer, tag, bytes)`; returns how many.
    fn progress(&mut self, f: &mut dyn FnMut(usize, u8, &[u8])) -> usize;
    /// Offer fragments of at least `min` bytes to [`Sink::place`] with their first `head` bytes
    /// from now on; false when this transport cannot place (then `progress_into` is `progress`).
    fn enable_placement(&mut self, _head: usize, _min: usize) -> bool {
        false
    }
    /// [`Btl::progress`] into `to`, placing where [`Btl::enable_placement`] said.
    fn progress_into(&mut self, to: &mut dyn Sink) -> usize {
        self.progress(&mut |peer, tag, frag| to.frag(peer, tag, frag))
    }
    /// Single copy: read `local.len()` bytes at `remote` in the peer's address space, which
    /// the peer exposed under `key` (see [`Btl::expose`]).
    fn get(
        &mut self,
        peer: usize,
        remote: usize,
        key: u64,
        local: &mut [u8],
    ) -> Result<(), GetError>;
    /// [`Btl::get`] of several parts from one peer (a window of rendezvous reads), in order;
    /// stops at the first failure, the parts before it read.
    ///
    /// # Safety
    /// Each part's `local` is valid for writes of `len` bytes and not otherwise accessed during
    /// the call (parts may overlap one another).
    unsafe fn get_many(&mut self, peer: usize, parts: &[GetPart]) -> Result<(), GetError> {
        // SAFETY: forwarded contract.
        unsafe { get_each(self, peer, parts) }
    }
    /// Makes `[addr, addr + len)` readable by `peer`'s `get` until [`Btl::unexpose`]; the key
    /// the rendezvous header carries, or None when it cannot (the receiver then gets it streamed).
    fn expose(&mut self, _peer: usize, _addr: usize, _len: usize) -> Option<u64> {
        Some(0)
    }
    /// The rendezvous that exposed `[addr, addr + len)` to `peer` is over (no-op if none was).
    fn unexpose(&mut self, _peer: usize, _addr: usize, _len: usize) {}
    /// Cooperative rendezvous, receiver side: a ticket for splitting a receive with `peer`
    /// (its sender); `Busy` while every claim word is in use (the receive can wait for one to
    /// be closed); `No` when splitting cannot help now: no single-copy write, or the peer is not
    /// waiting in MPI (it would serve the request late).
    fn coop_open(&mut self, _peer: usize) -> CoopOpen {
        CoopOpen::No
    }
    /// Take the second half of the split receive `ticket`: the sender (`by_sender`, `peer` =
    /// the receiver) before writing it, the receiver (`peer` = the sender) before reading it
    /// itself. Exactly one of the two succeeds.
    fn coop_claim(&mut self, _peer: usize, _ticket: u64, _by_sender: bool) -> bool {
        false
    }
    /// The receive `ticket` is over: its claim word may be reused.
    fn coop_close(&mut self, _ticket: u64) {}
    /// Single copy the other way: write `local` at `remote` in the peer's address space (a
    /// receive buffer the peer named in a PUT request).
    fn put(&mut self, _peer: usize, _remote: usize, _local: &[u8]) -> Result<(), GetError> {
        Err(GetError::Unsupported(format!(
            "{} has no single-copy write",
            self.name()
        )))
    }
    /// One-sided write: `local` to `remote` in the peer's memory, which the peer exposed under
    /// `key` (ib: RDMA WRITE into a registered window); complete when it returns.
    fn write(
        &mut self,
        _peer: usize,
        _remote: usize,
        _key: u64,
        _local: &[u8],
    ) -> Result<(), GetError> {
        Err(GetError::Unsupported("no keyed single-copy write".into()))
    }
    /// Whether `atomic` works, for this process's own memory too (ib with a device whose
    /// local atomics are coherent with its remote ones).
    fn atomics(&self) -> bool {
        false
    }
    /// One-sided 8-byte atomic: `op` on the aligned word at `remote` in the peer's memory,
    /// exposed under `key` (ib: a verbs FETCH_AND_ADD / CMP_AND_SWP), or with `peer` None on
    /// this process's own word at `remote`, atomic with respect to the peers'; the old value,
    /// complete when it returns.
    fn atomic(
        &mut self,
        _peer: Option<usize>,
        _remote: usize,
        _key: u64,
        _op: btl_ib::verbs::AtomicOp,
    ) -> Result<u64, GetError> {
        Err(GetError::Unsupported("no one-sided atomics".into()))
    }
    /// This process's "waiting in MPI" word that peers read (see `can_put_to_waiting`), if the
    /// transport has one; valid as long as the transport lives.
    fn waiting_word(&self) -> Option<*const std::sync::atomic::AtomicU32> {
        None
    }
    /// The word this process's async progress thread sleeps on, which peers ring after sending
    /// to it (`btl_sm::doorbell`), if the transport rings one; valid as long as it lives.
    fn doorbell_word(&self) -> Option<*const std::sync::atomic::AtomicU32> {
        None
    }
    /// How many `get`s were served by memcpy from a peer's shared memory source (sm's xmem).
    fn shared_reads(&self) -> u64 {
        0
    }
    /// Whether everything this transport accepted has left this process (at finalize).
    fn flushed(&self) -> bool {
        true
    }
    /// Whether `try_send_batched` may hold frames back (tcp's burst coalescing).
    fn coalesces(&self) -> bool {
        false
    }
    /// `try_send` from a call that starts a non-blocking send (MPI_Isend's fast path): the
    /// transport may hold a small frame back to write it with the ones that follow, at the next
    /// `progress` at the latest (a window of them costs one syscall, not one each).
    fn try_send_batched(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        self.try_send(peer, tag, hdr, data)
    }
    /// Write every frame `try_send_batched` holds, now.
    fn end_bursts(&mut self) {}
}
