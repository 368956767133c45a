//! One rank's view of the node: per-peer sender and receiver ends (Pairs mode) or its FIFO and
//! fragment pool (Fifo mode), and its pid slot.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use crate::channel::{Rx, Tx};
use crate::fifo::{claim, FboxRx, FifoRx, FifoTx, Pool, Queue};
use crate::layout::{page_size, Layout};
use crate::params::Mode;
use crate::segment::{Segment, SmError};

/// Upper bound on `max_frag`: beyond this, bigger fragments buy little and only delay the
/// receiver's first byte.
pub const MAX_FRAG_CAP: usize = 64 << 10;
/// Fragments delivered per `poll` call at most, so one busy peer cannot starve the caller.
pub const POLL_BUDGET: usize = 64;
/// Payload rings of all pairs together up to this size (every job the few-ranks boost sizes,
/// 1 MiB per pair at 2-6 ranks) are mapped at startup, each by its receiver (NUMA) and then
/// its sender, in one madvise each. Left to their first use, their pages were faulted in one by
/// one inside the first window of messages that took the payload ring (4-30 us a fault on a VM:
/// 256 of them in the 2 ms that OSU 5.3 osu_bw spends on 1 KiB). Larger jobs keep untouched
/// pages free.
pub const PAYLOAD_POPULATE_BUDGET: usize = crate::params::BOOST_BUDGET;

/// One rank's view of the node: its outgoing and incoming channels.
/// Claim words per rank (a 64-byte slot line after pid, attached and waiting; its last two
/// words are the doorbell and the line probe's).
pub const COOP_SLOTS_MAX: usize = 11;
/// The slot-line word a rank's async progress thread sleeps on (see `doorbell`).
const DOORBELL_WORD: usize = 14;
/// The slot-line word the line probe bounces (see `probe`).
const PROBE_WORD: usize = 15;
const COOP_OPEN: u32 = 1;
const COOP_SENDER: u32 = 2;
const COOP_RECEIVER: u32 = 3;

pub struct SmTransport {
    // Owns the mapping every pointer in tx/rx points into; dropped last.
    tx: Box<[Tx]>,
    rx: Box<[Rx]>,
    /// Fifo mode (tx/rx are then empty).
    fifo: Option<FifoPath>,
    me: usize,
    n: usize,
    max_frag: usize,
    /// Whether the payload rings are mapped at startup (see `PAYLOAD_POPULATE_BUDGET`).
    populate: bool,
    /// Fragment sizes better sent as two halves (`channel::split_range`); None in Fifo mode.
    split: Option<(usize, usize)>,
    /// Where the next poll starts (after the last peer that delivered).
    next_rx: usize,
    /// Peers whose channel held a fragment back (`try_send_held`) since the last `flush_held`.
    held: Vec<usize>,
    seg: Segment,
}

struct FifoPath {
    tx: FifoTx,
    /// How we reach each receiver, decided at our first fragment to it.
    routes: Box<[Route]>,
    rx: FifoRx,
    layout: Layout,
    base: *mut u8,
}

#[derive(Clone, Copy)]
enum Route {
    Undecided,
    /// The receiver's shared FIFO, or a fast box we own there.
    Queue(Queue),
}

impl FifoPath {
    /// Our route to `peer`: a fast box there if one is still free, else its FIFO; for good.
    #[cold]
    fn decide(&mut self, peer: usize, me: usize) -> Queue {
        let l = &self.layout;
        let q = (0..l.fastboxes)
            .find_map(|j| {
                let at = l.fbox(peer, j);
                // SAFETY: fast box j of `peer` as laid out for this mapping; owner word at +0,
                // head one grain further, cells two grains further (layout tests).
                unsafe {
                    claim(self.base.add(at), me).then(|| {
                        Queue::new(
                            self.base.add(at + l.grain),
                            self.base.add(at + 2 * l.grain),
                            l.cell_bytes,
                            l.fastbox_size,
                        )
                    })
                }
            })
            .unwrap_or_else(|| fifo_queue(l, self.base, peer));
        self.routes[peer] = Route::Queue(q);
        q
    }
}

// SAFETY: the raw pointers in tx/rx/fifo point into `seg`'s mapping, which moves with the
// transport; nothing in it is tied to the creating thread.
unsafe impl Send for SmTransport {}
// SAFETY: the `&self` methods only read plain fields and do atomic loads on the mapping;
// everything that mutates ring state takes `&mut self`.
unsafe impl Sync for SmTransport {}

impl std::fmt::Debug for SmTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmTransport")
            .field("me", &self.me)
            .field("n", &self.n)
            .field("max_frag", &self.max_frag)
            .field("segment", &self.seg)
            .finish()
    }
}

impl SmTransport {
    /// Take local index `me` in the segment; records this process's pid in its slot.
    ///
    /// A slot can be taken once per segment (channel positions start from the zeroed state),
    /// so a second `new` with the same `me` fails.
    pub fn new(seg: Segment, me: usize) -> Result<SmTransport, SmError> {
        let l = seg.layout().clone();
        let p = seg.params().clone();
        if me >= l.n {
            return Err(SmError(format!(
                "btl-sm: local rank {me} out of range (n_local = {})",
                l.n
            )));
        }
        let base = seg.base();
        let slot = l.slot(me);
        // SAFETY: the slot line is inside the header of our mapping, 64-aligned; its pid and
        // attached words are only accessed atomically.
        let (pid_cell, attached) = unsafe {
            (
                AtomicI32::from_ptr(base.add(slot).cast()),
                AtomicU32::from_ptr(base.add(slot + 4).cast()),
            )
        };
        if attached
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(SmError(format!(
                "btl-sm: local rank slot {me} is already taken (by pid {})",
                pid_cell.load(Ordering::Acquire)
            )));
        }
        pid_cell.store(std::process::id() as i32, Ordering::Release);
        if l.mode == Mode::Fifo {
            let fifo = fifo_path(&l, base, me);
            return Ok(SmTransport {
                tx: Box::new([]),
                rx: Box::new([]),
                fifo: Some(fifo),
                me,
                n: l.n,
                max_frag: p.fragment_size.min(MAX_FRAG_CAP),
                populate: false,
                split: None,
                next_rx: 0,
                held: Vec::new(),
                seg,
            });
        }

        let mut tx = Vec::with_capacity(l.n);
        let mut rx = Vec::with_capacity(l.n);
        for peer in 0..l.n {
            if peer == me {
                tx.push(Tx::unused());
                rx.push(Rx::unused());
                continue;
            }
            // SAFETY: offsets come from the layout of this exact mapping (in bounds, 64-aligned
            // rings, 8-aligned tails; checked by the layout tests); `seg` is kept in self and so
            // outlives tx/rx; the attached-flag CAS above makes us the only user of slot `me`,
            // hence the only sender on me→peer and the only receiver on peer→me.
            unsafe {
                tx.push(Tx::new(
                    base.add(l.hdr_ring(peer, me)),
                    base.add(l.pay_ring(peer, me)),
                    base.add(l.tail(peer, me)).cast::<AtomicU64>(),
                    p.fifo_cells,
                    p.payload_bytes,
                ));
                rx.push(Rx::new(
                    base.add(l.hdr_ring(me, peer)),
                    base.add(l.pay_ring(me, peer)),
                    base.add(l.tail(me, peer)).cast::<AtomicU64>(),
                    p.fifo_cells,
                    p.payload_bytes,
                ));
            }
        }
        let populate = l.n * (l.n - 1) * p.payload_bytes <= PAYLOAD_POPULATE_BUDGET;
        for peer in (0..l.n).filter(|&peer| peer != me) {
            rx[peer].first_touch(page_size(), populate);
        }
        Ok(SmTransport {
            tx: tx.into_boxed_slice(),
            rx: rx.into_boxed_slice(),
            fifo: None,
            me,
            n: l.n,
            max_frag: (p.payload_bytes / 2).min(MAX_FRAG_CAP),
            populate,
            split: crate::channel::split_range(
                (p.fifo_cells * crate::layout::CELL / crate::channel::CELL) as u32,
            ),
            next_rx: if me + 1 == l.n { 0 } else { me + 1 },
            held: Vec::new(),
            seg,
        })
    }

    /// Map the pages of our outgoing header rings now rather than at their first use (see
    /// `Tx::prefault`). Call once the peers have attached (after the line probe), so that their
    /// first touch placed those pages.
    pub fn prefault_senders(&self) {
        for (peer, tx) in self.tx.iter().enumerate() {
            if peer != self.me {
                tx.prefault(page_size(), self.populate);
            }
        }
    }

    #[inline]
    pub fn me(&self) -> usize {
        self.me
    }

    #[inline]
    pub fn n(&self) -> usize {
        self.n
    }

    /// The segment this transport runs over.
    pub fn segment(&self) -> &Segment {
        &self.seg
    }

    /// The pid a peer recorded in its slot; None until it has attached.
    pub fn peer_pid(&self, peer: usize) -> Option<i32> {
        assert!(peer < self.n, "btl-sm: peer {peer} out of range");
        let off = self.seg.layout().slot(peer);
        // SAFETY: in-bounds, 64-aligned slot line of our mapping; the pid word is only
        // accessed atomically. Acquire pairs with the peer's Release store in `new`.
        let pid =
            unsafe { AtomicI32::from_ptr(self.seg.base().add(off).cast()) }.load(Ordering::Acquire);
        (pid != 0).then_some(pid)
    }

    /// This rank's "waiting in MPI" word in its slot line (after pid and attached): set while
    /// it spins in a blocking wait, so peers know a request sent to it is served at once. A
    /// hint, read and written Relaxed; valid as long as this transport (its mapping) lives.
    pub fn waiting_word(&self) -> *const AtomicU32 {
        self.slot_word(self.me, 2)
    }

    /// Whether `peer` says it is waiting in MPI now (see [`SmTransport::waiting_word`]).
    pub fn peer_waiting(&self, peer: usize) -> bool {
        assert!(peer < self.n, "btl-sm: peer {peer} out of range");
        // SAFETY: a word of the peer's slot line in our mapping, only accessed atomically.
        unsafe { &*self.slot_word(peer, 2) }.load(Ordering::Relaxed) != 0
    }

    /// This rank's doorbell (see [`crate::doorbell`]): its async progress thread sleeps on it
    /// and peers ring it after sending (`ring`). Valid as long as this transport lives.
    pub fn doorbell_word(&self) -> *const AtomicU32 {
        self.slot_word(self.me, DOORBELL_WORD)
    }

    /// Ring `peer`'s doorbell if its progress thread sleeps until a fragment comes: call after
    /// a successful `try_send` to it. A fence and one load (of a line that changes only when
    /// the peer's thread falls asleep or wakes) when it does not.
    #[inline]
    pub fn ring(&self, peer: usize) {
        debug_assert!(peer < self.n);
        // SAFETY: a word of the peer's slot line in our mapping, only accessed atomically.
        crate::doorbell::ring(unsafe { &*self.slot_word(peer, DOORBELL_WORD) });
    }

    /// Wake `peer`'s progress thread if it sleeps `RING_ME` or `QUIET`: call after a `try_send`
    /// to it that found the ring full (see [`crate::doorbell::ring_full`]).
    pub fn ring_full(&self, peer: usize) {
        debug_assert!(peer < self.n);
        // SAFETY: a word of the peer's slot line in our mapping, only accessed atomically.
        crate::doorbell::ring_full(unsafe { &*self.slot_word(peer, DOORBELL_WORD) });
    }

    /// Claim words of cooperative rendezvous: the rest of each rank's slot line, one word per
    /// receive that rank has split with a sender (see [`SmTransport::coop_claim`]).
    pub fn coop_slots(&self) -> usize {
        (self.seg.layout().line / 4)
            .saturating_sub(3)
            .min(COOP_SLOTS_MAX)
    }

    /// Open claim word `slot` of this rank for ticket `seq` (a receive it splits with a sender).
    pub fn coop_open(&self, slot: usize, seq: u32) {
        // SAFETY: a word of our slot line (slot < coop_slots()), only accessed atomically.
        unsafe { &*self.slot_word(self.me, 3 + slot) }
            .store(seq << 2 | COOP_OPEN, Ordering::Release);
    }

    /// Take the second half of the split receive `seq` in `owner`'s (the receiver's) claim word
    /// `slot`: by the sender, which then writes it, or by the receiver, which then reads it
    /// itself. Exactly one of them succeeds, so the receiver never waits for a sender that is
    /// not in MPI, and no write lands in a receive buffer after the receive completed.
    pub fn coop_claim(&self, owner: usize, slot: usize, seq: u32, by_sender: bool) -> bool {
        if owner >= self.n || slot >= self.coop_slots() {
            return false;
        }
        let to = seq << 2
            | if by_sender {
                COOP_SENDER
            } else {
                COOP_RECEIVER
            };
        // SAFETY: a word of `owner`'s slot line in our mapping, only accessed atomically.
        unsafe { &*self.slot_word(owner, 3 + slot) }
            .compare_exchange(
                seq << 2 | COOP_OPEN,
                to,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// One-way line transfer time to each local peer in ns (None: itself, or not measured),
    /// by the pairwise probe of `crate::probe`. Every local rank must call it at the same point
    /// (MPI_Init); a peer that has not attached, or does not answer, within `patience` (for the
    /// whole probe, not per pair: a partner given up on in one round is late for the next, so
    /// per-pair patience could add up to one per round) is left unmeasured, not waited for.
    pub fn probe_peers(&self, patience: std::time::Duration) -> Vec<Option<u32>> {
        let mut out = vec![None; self.n];
        let deadline = std::time::Instant::now() + patience;
        let left = || deadline.saturating_duration_since(std::time::Instant::now());
        while (0..self.n).any(|p| self.peer_pid(p).is_none()) {
            if left().is_zero() {
                return out;
            }
            std::thread::yield_now();
        }
        // SAFETY: words of slot lines of our mapping, only accessed atomically.
        let mine = unsafe { &*self.slot_word(self.me, PROBE_WORD) };
        for round in 0..crate::probe::rounds(self.n) {
            if let Some(p) = crate::probe::partner(self.n, round, self.me) {
                // SAFETY: as above.
                let theirs = unsafe { &*self.slot_word(p, PROBE_WORD) };
                out[p] = crate::probe::exchange(self.me, p, mine, theirs, left());
            }
        }
        out
    }

    /// Word `i` of rank `r`'s slot line.
    fn slot_word(&self, r: usize, i: usize) -> *const AtomicU32 {
        debug_assert!(r < self.n && (i + 1) * 4 <= self.seg.layout().line);
        let off = self.seg.layout().slot(r) + 4 * i;
        // SAFETY: in-bounds, 4-aligned word of a slot line of our mapping (debug-checked above).
        unsafe { self.seg.base().add(off).cast::<AtomicU32>() }
    }

    /// Largest `hdr.len() + data.len()` one fragment may carry:
    /// `min(payload_bytes / 2, 64 KiB)`, a multiple of 64. Half the ring guarantees that a
    /// fragment always fits into an empty payload ring even when it has to skip the ring's
    /// short end, so a refused `try_send` always succeeds once the receiver has drained.
    #[inline]
    pub fn max_frag(&self) -> usize {
        self.max_frag
    }

    /// Fragment sizes in `(lo, hi]` (header included) move faster as two fragments of half the
    /// size: see `channel::split_range`. None when every size goes whole.
    pub fn eager_split(&self) -> Option<(usize, usize)> {
        self.split
    }

    /// Enqueue one fragment (hdr followed by data) to `peer`; false when the channel has no room.
    /// Fragments of at most `INLINE_MAX` (24) bytes travel inside one 32-byte header cell.
    ///
    /// Panics if `peer` is out of range or is `me`, or if the fragment exceeds `max_frag()`.
    #[inline]
    pub fn try_send(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        assert!(
            peer != self.me && hdr.len() + data.len() <= self.max_frag,
            "btl-sm: bad try_send (peer {peer}, me {}, {} bytes, max_frag {})",
            self.me,
            hdr.len() + data.len(),
            self.max_frag
        );
        match &mut self.fifo {
            None => self.tx[peer].try_send(tag, hdr, data),
            Some(f) => {
                let q = match f.routes[peer] {
                    Route::Queue(q) => q,
                    Route::Undecided => f.decide(peer, self.me),
                };
                f.tx.try_send(&q, tag, hdr, data)
            }
        }
    }

    /// `try_send` of a fragment that more will follow soon: the channel may hold it back
    /// (`channel::Tx::try_send_held`) until the next fragment to `peer` or `flush_held`. The
    /// Fifo layout sends it at once.
    #[inline]
    pub fn try_send_held(&mut self, peer: usize, tag: u8, hdr: &[u8], data: &[u8]) -> bool {
        if self.fifo.is_some() || hdr.len() + data.len() > self.max_frag || peer == self.me {
            return self.try_send(peer, tag, hdr, data);
        }
        let tx = &mut self.tx[peer];
        let was = tx.holds();
        let sent = tx.try_send_held(tag, hdr, data);
        if !was && tx.holds() {
            self.held.push(peer);
        }
        sent
    }

    /// Whether some channel may hold a fragment back (also true after a channel published its
    /// held ones with a later fragment, until `flush_held`).
    #[inline]
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// Publish every fragment `try_send_held` holds.
    pub fn flush_held(&mut self) {
        for peer in self.held.drain(..) {
            self.tx[peer].flush();
        }
    }

    /// Deliver arrived fragments in order per peer as `f(peer, tag, bytes)`; returns how many.
    /// `bytes` points straight into the ring and is valid only during the call. At most
    /// `POLL_BUDGET` fragments per call; peers are visited round robin.
    #[inline]
    pub fn poll(&mut self, f: &mut dyn FnMut(usize, u8, &[u8])) -> usize {
        if let Some(fifo) = &mut self.fifo {
            return fifo.rx.poll(POLL_BUDGET, f);
        }
        let n = self.n;
        let mut left = POLL_BUDGET;
        let mut peer = self.next_rx;
        for _ in 0..n {
            if peer != self.me {
                let got = self.rx[peer].poll(peer, left, f);
                left -= got;
                if got != 0 {
                    self.next_rx = if peer + 1 == n { 0 } else { peer + 1 };
                    if left == 0 {
                        break;
                    }
                }
            }
            peer = if peer + 1 == n { 0 } else { peer + 1 };
        }
        POLL_BUDGET - left
    }

    /// Which layout this node runs.
    pub fn mode(&self) -> Mode {
        if self.fifo.is_some() {
            Mode::Fifo
        } else {
            Mode::Pairs
        }
    }

    /// Test hook: start channel `self → peer` (send side here, receive side in `rx`) at the
    /// given positions, to exercise u32 wrap-around.
    #[cfg(test)]
    pub(crate) fn set_positions(&mut self, rx: &mut SmTransport, cell: u32, pay: u32) {
        self.tx[rx.me].set_positions(cell, pay);
        rx.rx[self.me].set_positions(cell, pay);
    }
}

/// Receiver r's shared FIFO.
fn fifo_queue(l: &Layout, base: *mut u8, r: usize) -> Queue {
    // SAFETY: head and cells of receiver r as laid out for this mapping (in bounds and aligned,
    // checked by the layout tests); the mapping outlives the transport.
    unsafe {
        Queue::new(
            base.add(l.fifo_head(r)),
            base.add(l.fifo_cells(r)),
            l.cell_bytes,
            l.fifo_size,
        )
    }
}

/// Our FIFO-mode ends: our FIFO and fast boxes, every sender's pool; first-touches what is ours.
fn fifo_path(l: &Layout, base: *mut u8, me: usize) -> FifoPath {
    let pool = |s: usize| {
        // SAFETY: sender s's pool as laid out for this mapping; fragment data follows the
        // flag line of each slot.
        unsafe {
            Pool::new(
                base.add(l.pool(s)),
                l.frag_stride,
                l.line,
                l.fragments,
                l.frag_stride - l.line,
            )
        }
    };
    let boxes: Box<[FboxRx]> = (0..l.fastboxes)
        .map(|j| {
            let at = l.fbox(me, j);
            // SAFETY: our fast box j as laid out for this mapping (owner, head a grain further,
            // cells two grains further); the mapping outlives the transport.
            unsafe {
                FboxRx::new(
                    base.add(at),
                    Queue::new(
                        base.add(at + l.grain),
                        base.add(at + 2 * l.grain),
                        l.cell_bytes,
                        l.fastbox_size,
                    ),
                )
            }
        })
        .collect();
    let pools: Box<[Pool]> = (0..l.n).map(pool).collect();
    let tx = FifoTx::new(me, pools[me]);
    let rx = FifoRx::new(fifo_queue(l, base, me), boxes, pools);
    // NUMA: the receiver's queues and the sender's pool on their owner's node.
    rx.first_touch(page_size());
    tx.first_touch(page_size());
    FifoPath {
        tx,
        routes: vec![Route::Undecided; l.n].into_boxed_slice(),
        rx,
        layout: l.clone(),
        base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Params;
    use std::os::fd::AsRawFd;

    fn pair(kv: &[(&str, &str)]) -> (SmTransport, SmTransport) {
        let kv: Vec<(String, String)> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let p = Params::resolve(2, &|k| {
            kv.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
        .unwrap();
        let fd = Segment::create_memfd(&p).unwrap();
        let a = SmTransport::new(Segment::attach_fd(fd.as_raw_fd(), &p).unwrap(), 0).unwrap();
        let b = SmTransport::new(Segment::attach_fd(fd.as_raw_fd(), &p).unwrap(), 1).unwrap();
        (a, b)
    }

    fn byte(seq: u64, i: usize) -> u8 {
        (seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8 ^ (i as u8).wrapping_mul(31)
    }

    fn minor_faults_of_this_thread() -> i64 {
        // SAFETY: getrusage writes only the struct we pass.
        unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_THREAD, &mut u);
            u.ru_minflt
        }
    }

    /// The header rings are mapped when the transports are made (the receiver's first touch)
    /// and `prefault_senders` (the sender's): a whole lap of one-cell fragments then takes no
    /// page fault. (The touches were once optimised away, and each 4 KiB of cells faulted in
    /// the first lap, 4-30 us each on a VM.)
    #[test]
    fn rings_are_mapped_before_the_first_lap() {
        let (mut a, mut b) = pair(&[("btl_sm_fifo_cells", "1024")]);
        a.prefault_senders();
        b.prefault_senders();
        let mut got = 0;
        let mut deliver = |_: usize, _: u8, _: &[u8]| got += 1;
        let before = minor_faults_of_this_thread();
        for i in 0..2048u32 {
            assert!(a.try_send(1, 1, &i.to_le_bytes(), &[]));
            assert!(b.try_send(0, 1, &i.to_le_bytes(), &[]));
            b.poll(&mut deliver);
            a.poll(&mut deliver);
        }
        let faults = minor_faults_of_this_thread() - before;
        assert_eq!(got, 4096);
        // Two laps of two 64 KiB rings in two mappings would take 64 faults untouched.
        assert!(
            faults < 8,
            "{faults} page faults while sending on touched rings"
        );
    }

    /// Crossing u32::MAX in both the cell index and the payload position.
    #[test]
    fn positions_wrap_u32() {
        let (mut a, mut b) = pair(&[("btl_sm_fifo_cells", "8"), ("btl_sm_payload_bytes", "1024")]);
        let cell0 = 0u32.wrapping_sub(64 * 8);
        let pay0 = 0u32.wrapping_sub(64 * 1024);
        a.set_positions(&mut b, cell0, pay0);
        let mut buf = [0u8; 512];
        let mut expect = 0u64;
        for seq in 0..20_000u64 {
            let len = [0usize, 1, 48, 49, 200, 511, 512][(seq % 7) as usize];
            for (i, x) in buf[..len].iter_mut().enumerate() {
                *x = byte(seq, i);
            }
            while !a.try_send(1, seq as u8, &buf[..len], &[]) {
                b.poll(&mut |peer, tag, bytes| {
                    assert_eq!(peer, 0);
                    assert_eq!(tag, expect as u8);
                    let want = [0usize, 1, 48, 49, 200, 511, 512][(expect % 7) as usize];
                    assert_eq!(bytes.len(), want);
                    assert!(bytes.iter().enumerate().all(|(i, &x)| x == byte(expect, i)));
                    expect += 1;
                });
            }
        }
        while b.poll(&mut |_, _, _| expect += 1) > 0 {}
        assert_eq!(expect, 20_000);
    }

    /// An inline span that would wrap moves to cell 0 behind a PAD cell instead of taking the
    /// payload ring.
    #[test]
    fn wrapping_span_pads_to_the_ring_start() {
        let (mut a, mut b) = pair(&[("btl_sm_fifo_cells", "16")]);
        // 16 lines of two cells; 150 bytes fill 5 cells, a span of 6 (ending on a line).
        const CELLS: u32 = 16 * 64 / crate::channel::CELL as u32;
        const SPAN: u32 = 6;
        let msg: Vec<u8> = (0..150u32).map(|i| (i * 7) as u8).collect();
        let mut head = 0u32;
        for round in 0..12u32 {
            assert!(a.try_send(1, round as u8, &msg[..20], &msg[20..]));
            let mut got = Vec::new();
            while b.poll(&mut |_, tag, bytes| got.push((tag, bytes.to_vec()))) > 0 {}
            assert_eq!(got, vec![(round as u8, msg.clone())]);
            // Cells 0, 6, ..., 24, then 30 would wrap: pad 30 and go on at 32 (cell 0).
            if head % CELLS + SPAN > CELLS {
                head += CELLS - head % CELLS;
            }
            head += SPAN;
            assert_eq!(a.tx[1].head(), head, "round {round}");
        }
    }

    #[test]
    fn slot_taken_once_and_pids() {
        let p = Params::resolve(3, &|_| None).unwrap();
        let fd = Segment::create_memfd(&p).unwrap();
        let a = SmTransport::new(Segment::attach_fd(fd.as_raw_fd(), &p).unwrap(), 0).unwrap();
        assert_eq!(a.peer_pid(0), Some(std::process::id() as i32));
        assert_eq!(a.peer_pid(1), None);
        let e = SmTransport::new(Segment::attach_fd(fd.as_raw_fd(), &p).unwrap(), 0).unwrap_err();
        assert!(e.to_string().contains("already taken"), "{e}");
        let e = SmTransport::new(Segment::attach_fd(fd.as_raw_fd(), &p).unwrap(), 3).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        let c = SmTransport::new(Segment::attach_fd(fd.as_raw_fd(), &p).unwrap(), 2).unwrap();
        assert_eq!(a.peer_pid(2), Some(std::process::id() as i32));
        assert_eq!((c.me(), c.n()), (2, 3));
    }

    #[test]
    fn single_rank_polls_nothing() {
        let p = Params::resolve(1, &|_| None).unwrap();
        let fd = Segment::create_memfd(&p).unwrap();
        let mut t = SmTransport::new(Segment::attach_fd(fd.as_raw_fd(), &p).unwrap(), 0).unwrap();
        assert_eq!(t.poll(&mut |_, _, _| unreachable!()), 0);
        assert_eq!(t.max_frag(), MAX_FRAG_CAP);
    }

    #[test]
    #[should_panic]
    fn send_to_self_panics() {
        let (mut a, _b) = pair(&[]);
        a.try_send(0, 0, b"x", b"");
    }

    fn _assert_send_sync() {
        fn ok<T: Send + Sync>() {}
        ok::<SmTransport>();
        ok::<Segment>();
    }
}
