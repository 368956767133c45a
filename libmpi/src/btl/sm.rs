//! The `sm` transport: btl-sm's channels to the other ranks of the node, and CMA single copy.

use super::{Btl, CoopOpen, GetError, GetPart};

pub struct SmBtl {
    transport: btl_sm::SmTransport,
    cma: bool,
    /// Peers may be asked to write half of a rendezvous (btl_sm_coop_copy_min > 0, CMA on,
    /// every rank with a core of its own: a descheduled sender only wastes a PUT).
    coop: bool,
    /// Free claim words of this rank (bit i: word i), for receives split with a sender.
    coop_free: u32,
    /// Ticket sequence (30 bits): a stale PUT never matches a reused claim word.
    coop_seq: u32,
    /// Peers' shared sources mapped here (btl_sm_xmem); None once off or failed for good.
    xmem: Option<btl_sm::xmem::PeerMaps>,
    /// A shared-source read failed: CMA for everything from now on.
    xmem_failed: bool,
    /// Say why xmem stopped (btl_base_verbose).
    verbose: bool,
    /// Rendezvous reads done by memcpy from a peer's shared source.
    xmem_reads: u64,
    /// By local peer: the eager limits chosen from the line probe (empty: the job's).
    eager: Vec<btl_sm::EagerLimits>,
    /// Ring the receiver's doorbell after each fragment (the job runs async progress threads).
    doorbells: bool,
    /// `btl_sm_coalesce`: MPI_Isend's short fragments may wait to be published together.
    coalesce: bool,
    /// By local peer: its pid once read (0: not yet). The pid shares the peer's slot line with
    /// its "waiting in MPI" word, which the peer writes at every blocking wait: reading it per
    /// rendezvous read cost a line transfer on the latency path.
    pids: Vec<i32>,
}

impl SmBtl {
    pub fn new(transport: btl_sm::SmTransport, cma: bool, coop: bool) -> SmBtl {
        if cma {
            btl_sm::cma::allow_ptrace_from_any();
        }
        let slots = transport.coop_slots();
        SmBtl {
            cma,
            coop: coop && cma && slots > 0,
            coop_free: ((1u64 << slots) - 1) as u32,
            coop_seq: 0,
            xmem: None,
            xmem_failed: false,
            verbose: false,
            xmem_reads: 0,
            eager: Vec::new(),
            doorbells: false,
            coalesce: false,
            pids: vec![0; transport.n()],
            transport,
        }
    }

    /// Ring each receiver's doorbell after sending to it, for the async progress threads that
    /// sleep on them (`mpi_async_progress`, set for the whole job).
    pub fn enable_doorbells(&mut self) {
        self.doorbells = true;
    }

    /// Let MPI_Isend's short fragments wait to be published together (`btl_sm_coalesce`; not
    /// with doorbells, whose ring follows each fragment).
    pub fn set_coalesce(&mut self, on: bool) {
        self.coalesce = on;
    }

    /// Per-peer eager limits (by local index), e.g. from `btl_sm::SmTransport::probe_peers`.
    pub fn set_eager_limits(&mut self, eager: Vec<btl_sm::EagerLimits>) {
        self.eager = eager;
    }

    /// Expose buffers of this rank's registered shared ranges by key, and read peers' ones
    /// by memcpy.
    pub fn enable_xmem(&mut self, verbose: bool) {
        self.xmem = Some(Default::default());
        self.verbose = verbose;
    }

    /// memcpy from the peer's shared range the key names; false (and xmem off for good, the
    /// mappings made so far kept until finalize) when that cannot be done.
    fn xmem_read(&mut self, peer: usize, remote: usize, key: u64, local: &mut [u8]) -> bool {
        let (Some(maps), Some((fd, base))) = (self.xmem.as_mut(), btl_sm::xmem::decode(key)) else {
            return false;
        };
        let Some(pid) = self.transport.peer_pid(peer) else {
            return false;
        };
        match maps.read(pid, fd, base, remote, local) {
            Ok(()) => {
                self.xmem_reads += 1;
                true
            }
            Err(e) => {
                if self.verbose {
                    eprintln!(
                        "rmpi: reading local peer {peer}'s shared memory source (pid {pid}, fd \
                         {fd}) failed ({e}); single copy uses CMA from now on"
                    );
                }
                // Drop it only at finalize: a later mapping attempt would fail the same way,
                // and the mappings already made cost nothing.
                self.xmem_failed = true;
                false
            }
        }
    }

    /// A CMA read from `pid` failed: refused once means refused for good (ptrace policy), so
    /// stop trying; the pml streams instead.
    fn cma_refused(&mut self, pid: i32, e: std::io::Error) -> GetError {
        self.cma = false;
        self.coop = false;
        GetError::Unsupported(format!("process_vm_readv from pid {pid}: {e}"))
    }

    fn pid(&mut self, peer: usize) -> Result<i32, GetError> {
        if self.pids[peer] != 0 {
            return Ok(self.pids[peer]);
        }
        let pid = self
            .transport
            .peer_pid(peer)
            .ok_or_else(|| GetError::Unsupported(format!("local peer {peer} has not attached")))?;
        self.pids[peer] = pid;
        Ok(pid)
    }
}

/// Per-peer eager limits from the line probe (btl_sm_eager_limit_far, btl_sm_near_ns,
/// btl_sm_eager_limit_stream, btl_sm_far_ns): every
/// local rank calls this at the same point of MPI_Init. None when there is nothing to choose,
/// or when the ranks outnumber the cores (a preempted partner would make the figure a
/// scheduling delay, not a distance).
///
/// Where the probe does not run (the FIFO layout past `btl_sm_fastbox_max_procs` ranks: n-1
/// rounds would cost too much) the placement says it instead, when mpirun bound every rank
/// within an L3 (`local_world`: each local rank's world rank): another L3 is far.
pub fn probe_eager_limits(
    transport: &btl_sm::SmTransport,
    params: &btl_sm::Params,
    oversubscribed: bool,
    rank: i32,
    local_world: &[i32],
    verbose: bool,
) -> Option<Vec<btl_sm::EagerLimits>> {
    if oversubscribed || params.eager_limit_far >= params.eager_limit || local_world.len() < 2 {
        return None;
    }
    if !params.probes_peers() {
        let table = crate::locality::l3_domains()?;
        let l3 = |w: i32| table.get(usize::try_from(w).ok()?).copied();
        let mine = l3(local_world[transport.me()])?;
        let eager: Vec<btl_sm::EagerLimits> = local_world
            .iter()
            .map(|&w| match l3(w) {
                Some(d) if d != mine => params.eager_limits_far(),
                _ => params.eager_limits_for(None),
            })
            .collect();
        if verbose {
            let far = eager
                .iter()
                .filter(|&&e| e == params.eager_limits_far())
                .count();
            eprintln!(
                "rmpi: rank {rank}: btl sm: eager limits by L3 domain (no line probe in this layout): \
                 {far} of {} local peers in another L3, eager {} to them",
                local_world.len() - 1,
                params.eager_limit_far
            );
        }
        return Some(eager);
    }
    let ns = transport.probe_peers(std::time::Duration::from_secs(2));
    let eager: Vec<btl_sm::EagerLimits> = ns.iter().map(|&t| params.eager_limits_for(t)).collect();
    if verbose {
        let each: Vec<String> = (0..ns.len())
            .filter(|&p| p != transport.me())
            .map(|p| match ns[p] {
                Some(t) => format!(
                    "{p}: {t} ns, eager {} (streams {})",
                    eager[p].reply, eager[p].stream
                ),
                None => format!("{p}: not measured, eager {}", eager[p].reply),
            })
            .collect();
        eprintln!(
            "rmpi: rank {rank}: btl sm: line probe (one way; near <= {} ns, far > {} ns), local peer {}",
            params.near_ns,
            params.far_ns,
            each.join("; ")
        );
    }
    Some(eager)
}

impl Btl for SmBtl {
    fn name(&self) -> &'static str {
        "sm"
    }

    #[inline]
    fn max_frag(&self) -> usize {
        self.transport.max_frag()
    }

    fn eager_limit(&self, peer: usize) -> Option<usize> {
        self.eager.get(peer).map(|e| e.reply)
    }

    fn eager_limit_stream(&self, peer: usize) -> Option<usize> {
        self.eager.get(peer).map(|e| e.stream)
    }

    fn eager_split(&self) -> Option<(usize, usize)> {
        self.transport.eager_split()
    }

    #[inline]
    fn try_send(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        let sent = self.transport.try_send(peer, tag, hdr, data);
        if self.doorbells {
            if sent {
                self.transport.ring(peer);
            } else {
                self.transport.ring_full(peer);
            }
        }
        sent
    }

    #[inline]
    fn progress(&mut self, f: &mut dyn FnMut(usize, u8, &[u8])) -> usize {
        if self.transport.holds() {
            self.transport.flush_held();
        }
        self.transport.poll(f)
    }

    fn coalesces(&self) -> bool {
        self.coalesce
    }

    #[inline]
    fn try_send_batched(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        self.transport.try_send_held(peer, tag, hdr, data)
    }

    fn end_bursts(&mut self) {
        self.transport.flush_held();
    }

    /// Held fragments are still ours: MPI_Finalize's wait makes a progress turn for them.
    fn flushed(&self) -> bool {
        !self.transport.holds()
    }

    fn get(
        &mut self,
        peer: usize,
        remote: usize,
        key: u64,
        local: &mut [u8],
    ) -> Result<(), GetError> {
        if !self.xmem_failed && self.xmem_read(peer, remote, key, local) {
            return Ok(());
        }
        if !self.cma {
            return Err(GetError::Unsupported(
                "single copy disabled (btl_sm_single_copy=none)".into(),
            ));
        }
        let pid = self.pid(peer)?;
        btl_sm::cma::read(pid, remote, local).map_err(|e| self.cma_refused(pid, e))
    }

    unsafe fn get_many(&mut self, peer: usize, parts: &[GetPart]) -> Result<(), GetError> {
        // Shared-source reads are a memcpy each; only CMA reads gain from one call.
        if !self.cma || parts.iter().any(|p| p.key != 0) {
            // SAFETY: forwarded contract.
            return unsafe { super::get_each(self, peer, parts) };
        }
        let pid = self.pid(peer)?;
        for chunk in parts.chunks(btl_sm::cma::READ_MANY_MAX) {
            let cma: Vec<btl_sm::cma::Part> = chunk
                .iter()
                .map(|p| btl_sm::cma::Part {
                    remote: p.remote,
                    local: p.local,
                    len: p.len,
                })
                .collect();
            // SAFETY: the caller's contract on every part.
            unsafe { btl_sm::cma::read_many(pid, &cma) }.map_err(|e| self.cma_refused(pid, e))?;
        }
        Ok(())
    }

    fn expose(&mut self, _peer: usize, addr: usize, len: usize) -> Option<u64> {
        // Key 0: CMA. A buffer in one of our shared ranges says which, so the peer can memcpy.
        let shared = self.xmem.is_some() && !self.xmem_failed;
        Some(
            shared
                .then(|| btl_sm::xmem::find_local(addr, len).and_then(|r| r.key()))
                .flatten()
                .unwrap_or(0),
        )
    }

    fn shared_reads(&self) -> u64 {
        self.xmem_reads
    }

    fn coop_open(&mut self, peer: usize) -> CoopOpen {
        if !self.coop || !self.transport.peer_waiting(peer) {
            return CoopOpen::No;
        }
        if self.coop_free == 0 {
            return CoopOpen::Busy;
        }
        let slot = self.coop_free.trailing_zeros();
        self.coop_free &= !(1 << slot);
        self.coop_seq = (self.coop_seq + 1) & (u32::MAX >> 2);
        self.transport.coop_open(slot as usize, self.coop_seq);
        CoopOpen::Ticket((slot as u64) << 32 | self.coop_seq as u64)
    }

    fn coop_claim(&mut self, peer: usize, ticket: u64, by_sender: bool) -> bool {
        let (slot, seq) = ((ticket >> 32) as usize, ticket as u32);
        let owner = if by_sender { peer } else { self.transport.me() };
        self.transport.coop_claim(owner, slot, seq, by_sender)
    }

    fn coop_close(&mut self, ticket: u64) {
        let slot = (ticket >> 32) as u32;
        if slot < 32 {
            self.coop_free |= 1 << slot;
        }
    }

    fn put(&mut self, peer: usize, remote: usize, local: &[u8]) -> Result<(), GetError> {
        let pid = self.pid(peer)?;
        btl_sm::cma::write(pid, remote, local).map_err(|e| {
            // The receiver reads that part itself; do not ask again.
            self.coop = false;
            GetError::Unsupported(format!("process_vm_writev to pid {pid}: {e}"))
        })
    }

    fn waiting_word(&self) -> Option<*const std::sync::atomic::AtomicU32> {
        Some(self.transport.waiting_word())
    }

    fn doorbell_word(&self) -> Option<*const std::sync::atomic::AtomicU32> {
        self.doorbells.then(|| self.transport.doorbell_word())
    }
}
