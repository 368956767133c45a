//! Tunables: MCA parsing, validation and automatic sizing.

use crate::layout::Layout;

/// How large messages are moved between ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SingleCopy {
    /// `process_vm_readv` from the sender's buffer.
    Cma,
    /// No single copy: data is streamed through the channel (two copies, pipelined).
    None,
    /// CMA where the kernel allows it, else streaming. Streaming wins only while the two ranks
    /// share a cache and loses 1.7-7x when they do not (measured with OSU 5.3); a rank cannot
    /// tell which placement it has, and CMA is as fast as the peers' in every one.
    Auto,
}

/// How the node's queues are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A per-pair SPSC channel (header ring + payload ring, the "fast box") for every ordered
    /// pair: fastest, O(n²) memory; used while `n_local <= btl_sm_fastbox_max_procs`.
    Pairs,
    /// One lock-free MPSC FIFO per receiver plus one eager-fragment pool per sender: O(n).
    Fifo,
}

/// Resolved tunables for a node with `n_local` ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub n_local: usize,
    /// Header-ring cells (64 B each) per ordered pair; a power of two (Pairs mode).
    pub fifo_cells: usize,
    /// Payload-ring bytes per ordered pair; a power of two, multiple of 64 (Pairs mode).
    pub payload_bytes: usize,
    /// Largest message sent eagerly; larger ones use rendezvous.
    pub eager_limit: usize,
    /// The eager limit toward a peer the line probe at MPI_Init finds far (one-way line
    /// transfer above `near_ns`); no probe unless it is below `eager_limit`.
    pub eager_limit_far: usize,
    /// Largest one-way line transfer (ns) of a peer that still counts as near.
    pub near_ns: u32,
    /// The eager limit of a stream of sends (`EagerLimits::stream`) toward a peer that is not
    /// near but within `far_ns`.
    pub eager_limit_stream: usize,
    /// Largest one-way line transfer (ns) of a peer that still gets `eager_limit_stream`.
    pub far_ns: u32,
    pub single_copy: SingleCopy,
    /// Smallest rendezvous message whose single copy the receiver shares with a waiting sender
    /// (it reads the first half, the sender writes the second); 0 = never.
    pub coop_copy_min: usize,
    /// Smallest message still split while more rendezvous reads wait behind it (a window of
    /// receives) into the buffer the last read went to: below it, the receiver reads whole.
    pub coop_window_min: usize,
    /// Largest n_local that still gets per-pair channels (Pairs mode).
    pub fastbox_max_procs: usize,
    /// Cells (64 B each) of each receiver's MPSC FIFO; a power of two (Fifo mode).
    pub fifo_size: usize,
    /// Fast boxes per receiver (Fifo mode): SPSC queues claimed by the first senders to contact it.
    pub fastboxes: usize,
    /// Cells (one line each) per fast box; a power of two.
    pub fastbox_size: usize,
    /// Bytes of one eager fragment (Fifo mode); a multiple of 64.
    pub fragment_size: usize,
    /// Eager fragments per sender (Fifo mode).
    pub fragments: usize,
    /// MPI_THREAD_MULTIPLE layout: every receiver-written tail on its own cache line.
    pub thread_multiple: bool,
    /// Cache-line size used for alignment (from the machine unless overridden).
    pub line: usize,
    /// MPI_Alloc_mem from a memfd-backed source peers map, read by memcpy (see `xmem`).
    pub xmem: bool,
    /// Address space reserved for that source (sparse: only touched pages cost memory).
    pub xmem_size: usize,
    /// A window of MPI_Isend publishes its short fragments together (`channel::Tx::try_send_held`).
    pub coalesce: bool,
}

/// Eager limits toward one peer: for a send that answers it (a message from it arrived after our
/// last send to it: a ping-pong's latency) and for one that follows our own sends (a stream's
/// bandwidth).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EagerLimits {
    pub reply: usize,
    pub stream: usize,
}

impl EagerLimits {
    pub fn both(limit: usize) -> Self {
        EagerLimits {
            reply: limit,
            stream: limit,
        }
    }
}

#[derive(Debug)]
pub struct ParamError(pub String);

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ParamError {}

pub const FIFO_CELLS_MIN: usize = 4;
/// Positions are wrapping u32 counters; keeping rings far below 2^31 keeps differences unambiguous.
pub const FIFO_CELLS_MAX: usize = 1 << 24;
pub const PAYLOAD_BYTES_MIN: usize = 1024;
pub const PAYLOAD_BYTES_MAX: usize = 1 << 30;
/// 128 lines (8 KiB, 256 cells): room for seven 1 KiB messages inline, or one 4 KiB message.
/// Measured against 256 lines on 2 ranks (interleaved, 7-12 runs per state, OSU's window of 64
/// non-blocking sends, 100 iterations): window bandwidth +10-40 % at 512 B-2 KiB in both VM
/// states (1 KiB: 2.6-2.9 against 2.0-2.2 GB/s slow, 8.0-8.6 against 6.7-7.5 fast), ping-pong
/// latency -10-20 % at 512 B-2 KiB (1 KiB 0.65 against 0.84 us slow). It costs 64 B windows
/// 10 % and 0-64 B ping-pong 2-4 % (fast state). 4 KiB windows lost too (2.1-2.3 against
/// 2.8-2.95 GB/s slow: only one fits inline at a time) until such messages went as two halves
/// (`channel::split_range`).
pub const DEFAULT_FIFO_CELLS: usize = 128;
pub const DEFAULT_PAYLOAD_BYTES: usize = 64 << 10;
/// Largest eager message of a stream of sends (a window of MPI_Isend), and of every send where
/// the payload rings are small. Beyond it a window's messages go by rendezvous: two rings of 1
/// MiB filled both ways by 32 KiB messages left osu_bibw 32 KiB at 11-23 GB/s eager against
/// 25-29 by CMA in both VM states (unmodified OSU 5.3, 2 ranks, probe 54-60 and 250-270 ns).
pub const DEFAULT_EAGER_LIMIT_STREAM: usize = 16384;
/// Largest eager message that answers its peer (a ping-pong) where the payload rings are
/// large (`EAGER_REPLY_MIN_PAYLOAD`). Unmodified OSU 5.3, 2 ranks, 3 interleaved rounds:
/// osu_latency 32 KiB 0.84 us eager against 2.92 by CMA (probe 54-60 ns), 2.48-2.51 against
/// 4.13-4.16 (probe 250-270 ns).
pub const DEFAULT_EAGER_LIMIT: usize = 32768;
/// Payload rings (bytes per ordered pair) from which replies are eager up to
/// `DEFAULT_EAGER_LIMIT` by default: a 32 KiB message then takes at most a quarter of one.
pub const EAGER_REPLY_MIN_PAYLOAD: usize = 128 << 10;
// Far peers (`btl_sm_eager_limit_far`): by default the eager limit itself, so MPI_Init runs no
// line probe. The far limit of 4 KiB was measured when an eager message's copies cost more;
// with today's rings eager wins in the fast and the slow VM state (unmodified OSU 5.3, probe
// 250-270 ns: osu_latency 8/16 KiB 1.12/1.58 us eager against 2.66/3.32 by CMA, osu_bw 8/16
// KiB 17.8/24.6 GB/s against 9.1/12.1); the middle state (120-200 ns) was not measured again.

/// Between the ~40 ns of ranks that share a cache and the 150-300 ns of other chiplets/sockets.
pub const DEFAULT_NEAR_NS: u32 = 80;
/// Beyond this a peer gets the far limit for every send; between `near_ns` and this, replies
/// get it and streams `eager_limit_stream` (no effect unless `btl_sm_eager_limit_far` is set).
pub const DEFAULT_FAR_NS: u32 = 200;
/// Sharing the copy pays from here: measured 1.6x at 64 KiB, 2x from 256 KiB (two cores copy).
pub const DEFAULT_COOP_COPY_MIN: usize = 32768;

/// `btl_sm_coop_window_min`'s default: half the core's L2 cache. In a window of receives into
/// one buffer (unmodified OSU 5.3 osu_bw, 2 MiB L2), a message and its receive buffer that fit
/// the L2 together copy at 17-30 GB/s alone at 32-512 KiB and at 12-25 GB/s split, where every
/// split adds a PUT, a claim and a PUT_FIN; from 1 MiB the lone copy leaves the cache (19-11
/// GB/s) and two cores win (28-47 GB/s).
pub fn default_coop_window_min() -> usize {
    // SAFETY: sysconf reads a system value and touches no memory of ours.
    let l2 = unsafe { libc::sysconf(libc::_SC_LEVEL2_CACHE_SIZE) };
    if l2 > 0 {
        (l2 as usize / 2).max(64 << 10)
    } else {
        1 << 20
    }
}
pub const DEFAULT_FASTBOX_MAX_PROCS: usize = 32;
pub const DEFAULT_FIFO_SIZE: usize = 256;
pub const DEFAULT_FASTBOXES: usize = 4;
pub const DEFAULT_FASTBOX_SIZE: usize = 16;
pub const DEFAULT_FRAGMENT_SIZE: usize = 4096;
pub const DEFAULT_FRAGMENTS: usize = 32;
/// Auto sizing keeps the per-pair rings of all ordered pairs within this many bytes.
pub const AUTO_BUDGET: usize = 256 << 20;
/// With few ranks, payload rings grow up to BOOST_PAYLOAD_MAX while all of them stay within
/// BOOST_BUDGET (1 MiB per pair up to 6 ranks, 512 KiB at 7-8, 256 KiB at 9-11, 128 KiB at
/// 12-16, the 64 KiB default from 17).
/// A window of 64 eager messages then fits (OSU 5.3 osu_bibw 4-16 KiB: 1.3-3.5x the 64 KiB
/// ring's bandwidth, unmodified OSU, in both VM states); pages nobody writes cost nothing.
pub const BOOST_BUDGET: usize = 32 << 20;
pub const BOOST_PAYLOAD_MAX: usize = 1 << 20;
/// With few ranks, header rings grow up to BOOST_CELLS_MAX lines (16 KiB) while all of them stay
/// within BOOST_CELLS_BUDGET (up to 16 ranks): a window of 128-byte messages then fits inline,
/// and more of 256 B-2 KiB. Unmodified OSU 5.3, 2 ranks, 6 interleaved rounds, against 128 lines
/// (and 132-cell spans) at probe 250-280 ns: osu_bibw 128 B-4 KiB +8-26 %, osu_bw 512 B-2 KiB
/// +3-8 %, osu_latency 2/4 KiB 0.62/1.02 against 0.65/1.10 us, but 1 KiB 0.54 against 0.49 and
/// osu_bw 1-16 B -3-6 %; at probe 55-60 ns osu_bibw 128 B-1 KiB +11-25 %, osu_bw 512 B-1 KiB
/// +15-20 %. 512 lines won more in windows (osu_bibw 512 B +41 % slow, +35 % fast) but lost
/// osu_latency 1/2 KiB (0.62/0.72 us slow) and osu_bw 1-16 B (-5-11 % slow): a ring that large
/// leaves the L1 of two ranks sharing a core, and costs the slow state more per line.
pub const BOOST_CELLS_BUDGET: usize = 4 << 20;
pub const BOOST_CELLS_MAX: usize = 256;
/// Hard ceiling on a segment, to turn absurd explicit settings into an error instead of ENOMEM later.
pub const SEGMENT_MAX: usize = 1 << 40;

/// One tunable: MCA name (also the environment variable, bare or as `RMPI_MCA_<name>`), its
/// default in words, and its meaning. Listed by `mpirun --mca-list`.
pub struct ParamInfo {
    pub name: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "btl_sm_eager_limit",
        default: "32768",
        meaning: "largest message sent eagerly (bytes); larger ones use rendezvous. By \
                  default 32768 for a send that answers its peer (a ping-pong) when the \
                  payload rings are 128 KiB or more (up to 16 local ranks), else 16384; see \
                  btl_sm_eager_limit_stream",
    },
    ParamInfo {
        name: "btl_sm_eager_limit_far",
        default: "32768",
        meaning: "eager limit toward a local peer that the line probe at MPI_Init finds \
                  far (one-way cache-line transfer above btl_sm_near_ns: another chiplet or \
                  socket); the probe runs only when this is below btl_sm_eager_limit, with \
                  per-pair channels, and when no rank is oversubscribed. Default: \
                  btl_sm_eager_limit, so no probe runs",
    },
    ParamInfo {
        name: "btl_sm_near_ns",
        default: "80",
        meaning: "largest one-way cache-line transfer (ns) of a local peer that still counts \
                  as near (gets btl_sm_eager_limit)",
    },
    ParamInfo {
        name: "btl_sm_eager_limit_stream",
        default: "16384",
        meaning: "eager limit of a send that follows other sends to the same peer (a window \
                  of sends), at most btl_sm_eager_limit; btl_sm_eager_limit when that is \
                  given alone. Toward a peer the line probe finds between btl_sm_near_ns and \
                  btl_sm_far_ns it applies while replies keep btl_sm_eager_limit_far",
    },
    ParamInfo {
        name: "btl_sm_far_ns",
        default: "200",
        meaning: "largest one-way cache-line transfer (ns) of a local peer that still gets \
                  btl_sm_eager_limit_stream; beyond it every send takes btl_sm_eager_limit_far",
    },
    ParamInfo {
        name: "btl_sm_single_copy",
        default: "auto",
        meaning: "rendezvous data: cma (process_vm_readv), none (streamed through the queues), \
                  auto (cma where the kernel allows it, else streamed)",
    },
    ParamInfo {
        name: "btl_sm_coop_copy_min",
        default: "32768",
        meaning: "rendezvous messages of at least this many bytes are copied by both ranks when \
                  the sender waits in MPI (receiver reads one half, sender writes the other, \
                  both with CMA); 0 = off",
    },
    ParamInfo {
        name: "btl_sm_coop_window_min",
        default: "auto: half the L2 cache (1 MiB when unknown)",
        meaning: "while more rendezvous receives wait behind one (a window, as in osu_bw), \
                  messages below this into the same buffer as the last one are read whole by \
                  the receiver: a copy into a buffer in cache costs less than the split's \
                  handshake",
    },
    ParamInfo {
        name: "btl_sm_fastbox_max_procs",
        default: "32",
        meaning: "largest number of local ranks given a per-pair channel (fast box) for every \
                  ordered pair; above it, per-receiver FIFOs + per-sender fragment pools (O(n))",
    },
    ParamInfo {
        name: "btl_sm_fifo_cells",
        default: "auto: 128, halved with payload_bytes while all pairs exceed 256 MiB",
        meaning: "64-byte lines of header cells (two 32-byte cells each) per per-pair channel \
                  (power of two, >= 4)",
    },
    ParamInfo {
        name: "btl_sm_payload_bytes",
        default: "auto: 1 MiB down to 65536 by rank count, halved as above",
        meaning: "payload-ring bytes per per-pair channel (power of two, >= 1024)",
    },
    ParamInfo {
        name: "btl_sm_fifo_size",
        default: "256",
        meaning: "64-byte cells in each receiver's FIFO (power of two, >= 2); FIFO mode",
    },
    ParamInfo {
        name: "btl_sm_fastboxes",
        default: "4",
        meaning:
            "fast boxes per receiver (FIFO mode): single-sender queues, each claimed for good \
                  by one of the first senders to contact that receiver (0 disables)",
    },
    ParamInfo {
        name: "btl_sm_fastbox_size",
        default: "16",
        meaning: "cells (one line each) per fast box (power of two, >= 2); FIFO mode",
    },
    ParamInfo {
        name: "btl_sm_fragment_size",
        default: "4096",
        meaning: "bytes of one eager fragment (multiple of 64, >= 128); the FIFO mode's \
                  largest fragment; FIFO mode",
    },
    ParamInfo {
        name: "btl_sm_fragments",
        default: "32",
        meaning: "eager fragments per sender (>= 1); FIFO mode",
    },
    ParamInfo {
        name: "btl_sm_thread_layout",
        default: "single",
        meaning: "single, or multi (MPI_THREAD_MULTIPLE: every receiver-written tail on its own \
                  cache line)",
    },
    ParamInfo {
        name: "btl_sm_cacheline_size",
        default: "the machine's L1 data line (sysconf), 64 if unknown",
        meaning: "alignment of every shared component (power of two, 64..=4096: the header lines hold 64 bytes)",
    },
    ParamInfo {
        name: "btl_sm_xmem",
        default: "1",
        meaning: "MPI_Alloc_mem blocks come from a memfd the node's ranks map, so a rendezvous \
                  from one is read by the receiver with memcpy (no syscall, no pinning); other \
                  buffers use CMA; 0 = off (needs single copy: not with btl_sm_single_copy=none)",
    },
    ParamInfo {
        name: "btl_sm_coalesce",
        default: "1",
        meaning: "in a window of MPI_Isend, messages of up to one header line are published \
                  together, up to 16 at a time or at the next MPI call that waits or polls, so \
                  the receiver reads lines the sender is done with; 0 = each at once",
    },
    ParamInfo {
        name: "btl_sm_xmem_size",
        default: "16g",
        meaning: "address space of that memfd (sparse: only touched pages are memory); \
                  MPI_Alloc_mem falls back to malloc once it is full",
    },
];

/// The machine's cache-line size: sysconf(_SC_LEVEL1_DCACHE_LINESIZE), 64 when unknown.
pub fn machine_line() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let l = unsafe { libc::sysconf(libc::_SC_LEVEL1_DCACHE_LINESIZE) };
    // The header's info line and every rank's slot line need 64 bytes (their fields), so a
    // smaller line is rounded up: alignment to a multiple of the real line loses nothing.
    if l > 0 && (l as usize).is_power_of_two() && (64..=4096).contains(&(l as usize)) {
        l as usize
    } else {
        64
    }
}

impl Params {
    /// The layout the tunables select.
    pub fn mode(&self) -> Mode {
        if self.n_local <= self.fastbox_max_procs {
            Mode::Pairs
        } else {
            Mode::Fifo
        }
    }

    /// Resolve tunables; `lookup(name)` returns an MCA value when one was given (names in
    /// `PARAMS`).
    pub fn resolve(
        n_local: usize,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Params, ParamError> {
        if n_local == 0 || n_local > u32::MAX as usize {
            return Err(ParamError(format!(
                "btl-sm: invalid number of local ranks {n_local}; expected 1..={}",
                u32::MAX
            )));
        }
        let (auto_cells, auto_payload) = auto_size(n_local);
        let fifo_cells = match lookup("btl_sm_fifo_cells") {
            None => auto_cells,
            Some(v) => parse_pow2("btl_sm_fifo_cells", &v, FIFO_CELLS_MIN, FIFO_CELLS_MAX)?,
        };
        let payload_bytes = match lookup("btl_sm_payload_bytes") {
            None => auto_payload,
            Some(v) => parse_pow2(
                "btl_sm_payload_bytes",
                &v,
                PAYLOAD_BYTES_MIN,
                PAYLOAD_BYTES_MAX,
            )?,
        };
        // A byte count (k/m/g suffixes) or a whole number of nanoseconds, else its default.
        let bytes = |name: &str, default: usize| match lookup(name) {
            None => Ok(default),
            Some(v) => parse_size(&v).ok_or_else(|| {
                ParamError(format!(
                    "invalid value {v:?} for MCA parameter {name}: \
                     expected a non-negative byte count (optional k/m/g suffix)"
                ))
            }),
        };
        let nanos = |name: &str, default: u32| match lookup(name) {
            None => Ok(default),
            Some(v) => v.trim().parse::<u32>().map_err(|_| {
                ParamError(format!(
                    "invalid value {v:?} for MCA parameter {name}: expected a whole \
                     number of nanoseconds"
                ))
            }),
        };
        let single_copy = match lookup("btl_sm_single_copy") {
            None => SingleCopy::Auto,
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "cma" => SingleCopy::Cma,
                "none" => SingleCopy::None,
                "auto" => SingleCopy::Auto,
                _ => {
                    return Err(ParamError(format!(
                        "invalid value {v:?} for MCA parameter btl_sm_single_copy: \
                         expected \"auto\", \"cma\" or \"none\""
                    )))
                }
            },
        };
        let coop_copy_min = match lookup("btl_sm_coop_copy_min") {
            None => DEFAULT_COOP_COPY_MIN,
            Some(v) => parse_size(&v).ok_or_else(|| {
                ParamError(format!(
                    "invalid value {v:?} for MCA parameter btl_sm_coop_copy_min: \
                     expected a non-negative byte count (optional k/m/g suffix; 0 = off)"
                ))
            })?,
        };
        let coop_window_min = match lookup("btl_sm_coop_window_min") {
            None => default_coop_window_min(),
            Some(v) if v.trim() == "auto" => default_coop_window_min(),
            Some(v) => parse_size(&v).ok_or_else(|| {
                ParamError(format!(
                    "invalid value {v:?} for MCA parameter btl_sm_coop_window_min: \
                     expected \"auto\" or a non-negative byte count (optional k/m/g suffix)"
                ))
            })?,
        };
        let count = |name: &str, default: usize, min: usize, max: usize| match lookup(name) {
            None => Ok(default),
            Some(v) => match parse_size(&v) {
                Some(x) if (min..=max).contains(&x) => Ok(x),
                _ => Err(ParamError(format!(
                    "invalid value {v:?} for MCA parameter {name}: expected a number \
                     between {min} and {max} (optional k/m/g suffix)"
                ))),
            },
        };
        let fastbox_max_procs = count(
            "btl_sm_fastbox_max_procs",
            DEFAULT_FASTBOX_MAX_PROCS,
            0,
            u32::MAX as usize,
        )?;
        let fifo_size = match lookup("btl_sm_fifo_size") {
            None => DEFAULT_FIFO_SIZE,
            Some(v) => parse_pow2("btl_sm_fifo_size", &v, 2, 1 << 24)?,
        };
        let fastboxes = count("btl_sm_fastboxes", DEFAULT_FASTBOXES, 0, 1 << 16)?;
        let fastbox_size = match lookup("btl_sm_fastbox_size") {
            None => DEFAULT_FASTBOX_SIZE,
            Some(v) => parse_pow2("btl_sm_fastbox_size", &v, 2, 1 << 24)?,
        };
        let fragment_size = count("btl_sm_fragment_size", DEFAULT_FRAGMENT_SIZE, 128, 1 << 30)?;
        if fragment_size & 63 != 0 {
            return Err(ParamError(format!(
                "invalid value \"{fragment_size}\" for MCA parameter btl_sm_fragment_size: \
                 expected a multiple of 64"
            )));
        }
        let fragments = count("btl_sm_fragments", DEFAULT_FRAGMENTS, 1, 1 << 24)?;
        let thread_multiple = match lookup("btl_sm_thread_layout") {
            None => false,
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "single" => false,
                "multi" => true,
                _ => {
                    return Err(ParamError(format!(
                        "invalid value {v:?} for MCA parameter btl_sm_thread_layout: \
                         expected \"single\" or \"multi\""
                    )))
                }
            },
        };
        let line = match lookup("btl_sm_cacheline_size") {
            None => machine_line(),
            // 64 at least: the info line and the slot lines hold 64 bytes of fields.
            Some(v) => parse_pow2("btl_sm_cacheline_size", &v, 64, 4096)?,
        };
        let flag = |name: &str, default: bool| match lookup(name) {
            None => Ok(default),
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "on" | "yes" => Ok(true),
                "0" | "false" | "off" | "no" => Ok(false),
                _ => Err(ParamError(format!(
                    "invalid value {v:?} for MCA parameter {name}: expected 0 or 1"
                ))),
            },
        };
        let xmem = flag("btl_sm_xmem", true)?;
        let coalesce = flag("btl_sm_coalesce", true)?;
        let xmem_size = count(
            "btl_sm_xmem_size",
            crate::xmem::DEFAULT_SIZE,
            1 << 20,
            1 << 46,
        )?;
        // Replies eager up to 32 KiB only where a payload ring holds four such messages (few
        // ranks; the FIFO layout's fragments are smaller). A limit the user gives is every
        // send's limit unless btl_sm_eager_limit_stream is given too.
        let pairs = n_local <= fastbox_max_procs;
        let auto_eager = if pairs && payload_bytes >= EAGER_REPLY_MIN_PAYLOAD {
            DEFAULT_EAGER_LIMIT
        } else {
            DEFAULT_EAGER_LIMIT_STREAM
        };
        let eager_given = lookup("btl_sm_eager_limit").is_some();
        let eager_limit = bytes("btl_sm_eager_limit", auto_eager)?;
        let stream_default = if eager_given {
            eager_limit
        } else {
            DEFAULT_EAGER_LIMIT_STREAM.min(eager_limit)
        };
        let eager_limit_stream = bytes("btl_sm_eager_limit_stream", stream_default)?;
        let eager_limit_far = bytes("btl_sm_eager_limit_far", eager_limit)?;
        let near_ns = nanos("btl_sm_near_ns", DEFAULT_NEAR_NS)?;
        let far_ns = nanos("btl_sm_far_ns", DEFAULT_FAR_NS)?;
        let p = Params {
            n_local,
            fifo_cells,
            payload_bytes,
            eager_limit,
            eager_limit_far,
            near_ns,
            eager_limit_stream,
            far_ns,
            single_copy,
            coop_copy_min,
            coop_window_min,
            fastbox_max_procs,
            fifo_size,
            fastboxes,
            fastbox_size,
            fragment_size,
            fragments,
            thread_multiple,
            line,
            xmem,
            xmem_size,
            coalesce,
        };
        match Layout::try_new(&p) {
            Some(l) if l.total <= SEGMENT_MAX => Ok(p),
            _ => Err(ParamError(format!(
                "btl-sm: segment for {n_local} local ranks would exceed {SEGMENT_MAX} bytes; \
                 lower {}",
                p.size_tunables()
            ))),
        }
    }

    /// Whether MPI_Init measures how far each local peer is (see `probe`): the far eager
    /// limit differs, and there are per-pair channels to probe over.
    pub fn probes_peers(&self) -> bool {
        self.eager_limit_far < self.eager_limit && self.mode() == Mode::Pairs && self.n_local > 1
    }

    /// The eager limits toward a peer the probe measured at `one_way_ns` (None: unmeasured,
    /// or near): replies up to `eager_limit`, streams up to `eager_limit_stream`; a far peer
    /// gets `eager_limit_far` for both, a mid-distance one (between `near_ns` and `far_ns`)
    /// for replies.
    pub fn eager_limits_for(&self, one_way_ns: Option<u32>) -> EagerLimits {
        let far = self.eager_limit_far.min(self.eager_limit);
        let stream = self.eager_limit_stream.min(self.eager_limit);
        match one_way_ns {
            Some(ns) if ns > self.far_ns => self.eager_limits_far(),
            Some(ns) if ns > self.near_ns => EagerLimits {
                reply: far,
                stream: stream.max(far),
            },
            _ => EagerLimits {
                reply: self.eager_limit,
                stream,
            },
        }
    }

    /// The eager limits toward a peer known to be far without a probe (another L3).
    pub fn eager_limits_far(&self) -> EagerLimits {
        let far = self.eager_limit_far.min(self.eager_limit);
        EagerLimits {
            reply: far,
            stream: far.min(self.eager_limit_stream),
        }
    }

    /// The tunables that size the segment in this mode, with their values (for messages).
    pub fn size_tunables(&self) -> String {
        match self.mode() {
            Mode::Pairs => format!(
                "btl_sm_fifo_cells={} or btl_sm_payload_bytes={} (or btl_sm_fastbox_max_procs={} \
                 to use the O(n) FIFO layout)",
                self.fifo_cells, self.payload_bytes, self.fastbox_max_procs
            ),
            Mode::Fifo => format!(
                "btl_sm_fragments={}, btl_sm_fragment_size={} or btl_sm_fifo_size={}",
                self.fragments, self.fragment_size, self.fifo_size
            ),
        }
    }

    /// `resolve` with values from `RMPI_MCA_<name>` environment variables, or from variables
    /// named like the parameter itself (`btl_sm_eager_limit=4096`).
    pub fn from_env(n_local: usize) -> Result<Params, ParamError> {
        Self::resolve(n_local, &|name| {
            std::env::var(format!("RMPI_MCA_{name}"))
                .ok()
                .or_else(|| std::env::var(name).ok())
        })
    }

    /// Whether these values satisfy what `resolve` guarantees (hand-built Params may not).
    pub(crate) fn check(&self) -> Result<(), String> {
        let ok = self.n_local >= 1
            && self.n_local <= u32::MAX as usize
            && self.fifo_cells.is_power_of_two()
            && (FIFO_CELLS_MIN..=FIFO_CELLS_MAX).contains(&self.fifo_cells)
            && self.payload_bytes.is_power_of_two()
            && (PAYLOAD_BYTES_MIN..=PAYLOAD_BYTES_MAX).contains(&self.payload_bytes)
            && self.fifo_size.is_power_of_two()
            && (2..=1 << 24).contains(&self.fifo_size)
            && self.fastboxes <= 1 << 16
            && self.fastbox_size.is_power_of_two()
            && (2..=1 << 24).contains(&self.fastbox_size)
            && self.fragment_size & 63 == 0
            && (128..=1 << 30).contains(&self.fragment_size)
            && (1..=1 << 24).contains(&self.fragments)
            && self.line.is_power_of_two()
            && (64..=4096).contains(&self.line)
            && Layout::try_new(self).is_some();
        if ok {
            Ok(())
        } else {
            Err(format!("btl-sm: invalid parameters {self:?}"))
        }
    }
}

/// Default ring sizes for `n` ranks: 128 lines / 64 KiB per pair, halved together until all
/// `n*(n-1)` pairs fit in `AUTO_BUDGET` or both reach their floors.
pub(crate) fn auto_size(n: usize) -> (usize, usize) {
    let pairs = n.saturating_mul(n.saturating_sub(1));
    let (mut cells, mut payload) = (DEFAULT_FIFO_CELLS, DEFAULT_PAYLOAD_BYTES);
    while pairs.saturating_mul(cells * 64 + payload) > AUTO_BUDGET
        && (cells > FIFO_CELLS_MIN || payload > PAYLOAD_BYTES_MIN)
    {
        cells = (cells / 2).max(FIFO_CELLS_MIN);
        payload = (payload / 2).max(PAYLOAD_BYTES_MIN);
    }
    // Few ranks: larger rings, within the boost budgets for all pairs together.
    while payload < BOOST_PAYLOAD_MAX && pairs.saturating_mul(payload * 2) <= BOOST_BUDGET {
        payload *= 2;
    }
    while cells < BOOST_CELLS_MAX && pairs.saturating_mul(cells * 2 * 64) <= BOOST_CELLS_BUDGET {
        cells *= 2;
    }
    (cells, payload)
}

/// Decimal byte count with an optional binary k/m/g suffix ("64k" = 65536).
fn parse_size(v: &str) -> Option<usize> {
    let v = v.trim();
    let (digits, shift) = match v.as_bytes().last()? {
        b'k' | b'K' => (&v[..v.len() - 1], 10),
        b'm' | b'M' => (&v[..v.len() - 1], 20),
        b'g' | b'G' => (&v[..v.len() - 1], 30),
        _ => (v, 0),
    };
    let n: usize = digits.parse().ok()?;
    n.checked_mul(1usize << shift)
}

fn parse_pow2(name: &str, v: &str, min: usize, max: usize) -> Result<usize, ParamError> {
    match parse_size(v) {
        Some(n) if n.is_power_of_two() && (min..=max).contains(&n) => Ok(n),
        _ => Err(ParamError(format!(
            "invalid value {v:?} for MCA parameter {name}: expected a power of two \
             between {min} and {max} (optional k/m/g suffix)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(kv: &[(&str, &str)], n: usize) -> Result<Params, ParamError> {
        let m: HashMap<String, String> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Params::resolve(n, &|k| m.get(k).cloned())
    }

    #[test]
    fn eager_limits_by_distance() {
        // By default every peer gets the same limits and no probe runs.
        let p = with(&[], 2).unwrap();
        let near = EagerLimits {
            reply: DEFAULT_EAGER_LIMIT,
            stream: DEFAULT_EAGER_LIMIT_STREAM,
        };
        assert!(!p.probes_peers());
        assert_eq!(p.eager_limits_for(None), near);
        assert_eq!(p.eager_limits_for(Some(DEFAULT_FAR_NS + 1)), near);
        // With a far limit: mid-distance replies and every far send take it.
        let p = with(&[("btl_sm_eager_limit_far", "4k")], 2).unwrap();
        assert!(p.probes_peers());
        assert_eq!(p.eager_limits_for(Some(DEFAULT_NEAR_NS)), near);
        let mid = EagerLimits {
            reply: 4096,
            stream: DEFAULT_EAGER_LIMIT_STREAM,
        };
        assert_eq!(p.eager_limits_for(Some(DEFAULT_NEAR_NS + 1)), mid);
        assert_eq!(p.eager_limits_for(Some(DEFAULT_FAR_NS)), mid);
        let far = EagerLimits::both(4096);
        assert_eq!(p.eager_limits_for(Some(DEFAULT_FAR_NS + 1)), far);
        assert_eq!(p.eager_limits_far(), far);
        // The stream limit stays between the far limit and the eager limit.
        let p = with(
            &[
                ("btl_sm_eager_limit_far", "4k"),
                ("btl_sm_eager_limit_stream", "64k"),
            ],
            2,
        )
        .unwrap();
        assert_eq!(p.eager_limits_for(Some(150)).stream, DEFAULT_EAGER_LIMIT);
        let p = with(
            &[
                ("btl_sm_eager_limit_far", "4k"),
                ("btl_sm_eager_limit_stream", "0"),
            ],
            2,
        )
        .unwrap();
        assert_eq!(p.eager_limits_for(Some(150)), far);
        assert!(with(&[("btl_sm_far_ns", "x")], 2).is_err());
        assert!(with(&[("btl_sm_eager_limit_stream", "-1")], 2).is_err());
    }

    /// Replies go eager up to 32 KiB only with large payload rings; a given eager limit is
    /// every send's.
    #[test]
    fn eager_limit_auto_and_given() {
        let p = with(&[], 64).unwrap();
        assert!(p.payload_bytes < EAGER_REPLY_MIN_PAYLOAD);
        assert_eq!(p.eager_limit, DEFAULT_EAGER_LIMIT_STREAM);
        assert_eq!(p.eager_limit_stream, DEFAULT_EAGER_LIMIT_STREAM);
        let p = with(&[("btl_sm_fastbox_max_procs", "1")], 2).unwrap();
        assert_eq!(p.eager_limit, DEFAULT_EAGER_LIMIT_STREAM);
        let p = with(&[("btl_sm_eager_limit", "64k")], 2).unwrap();
        assert_eq!(p.eager_limits_for(None), EagerLimits::both(65536));
        let p = with(&[("btl_sm_eager_limit", "4k")], 2).unwrap();
        assert_eq!(p.eager_limits_for(None), EagerLimits::both(4096));
        let p = with(
            &[
                ("btl_sm_eager_limit", "4k"),
                ("btl_sm_eager_limit_stream", "8k"),
            ],
            2,
        )
        .unwrap();
        assert_eq!(p.eager_limits_for(None), EagerLimits::both(4096));
    }

    #[test]
    fn defaults() {
        let p = with(&[], 4).unwrap();
        assert_eq!(
            p,
            Params {
                n_local: 4,
                fifo_cells: BOOST_CELLS_MAX,
                payload_bytes: BOOST_PAYLOAD_MAX,
                eager_limit: DEFAULT_EAGER_LIMIT,
                eager_limit_far: DEFAULT_EAGER_LIMIT,
                near_ns: DEFAULT_NEAR_NS,
                eager_limit_stream: DEFAULT_EAGER_LIMIT_STREAM,
                far_ns: DEFAULT_FAR_NS,
                single_copy: SingleCopy::Auto,
                coop_copy_min: DEFAULT_COOP_COPY_MIN,
                coop_window_min: default_coop_window_min(),
                fastbox_max_procs: DEFAULT_FASTBOX_MAX_PROCS,
                fifo_size: DEFAULT_FIFO_SIZE,
                fastboxes: DEFAULT_FASTBOXES,
                fastbox_size: DEFAULT_FASTBOX_SIZE,
                fragment_size: DEFAULT_FRAGMENT_SIZE,
                fragments: DEFAULT_FRAGMENTS,
                thread_multiple: false,
                line: machine_line(),
                xmem: true,
                xmem_size: crate::xmem::DEFAULT_SIZE,
                coalesce: true,
            }
        );
        assert_eq!(with(&[], 1).unwrap().fifo_cells, BOOST_CELLS_MAX);
    }

    #[test]
    fn auto_size_shrinks_and_stays_bounded() {
        let mut last = (usize::MAX, usize::MAX);
        for n in 1..=1024 {
            let (c, b) = auto_size(n);
            assert!(c.is_power_of_two() && (FIFO_CELLS_MIN..=BOOST_CELLS_MAX).contains(&c));
            assert!(c <= DEFAULT_FIFO_CELLS || n * (n - 1) * c * 64 <= BOOST_CELLS_BUDGET);
            assert!(b.is_power_of_two() && (PAYLOAD_BYTES_MIN..=BOOST_PAYLOAD_MAX).contains(&b));
            assert!(b <= DEFAULT_PAYLOAD_BYTES || n * (n - 1) * b <= BOOST_BUDGET);
            assert!(c <= last.0 && b <= last.1, "monotone in n");
            let at_floor = c == FIFO_CELLS_MIN && b == PAYLOAD_BYTES_MIN;
            assert!(
                at_floor || n * (n - 1) * (c * 64 + b) <= AUTO_BUDGET,
                "n={n}"
            );
            last = (c, b);
        }
        assert_eq!(auto_size(2), (256, 1 << 20));
        assert_eq!(auto_size(6), (256, 1 << 20));
        assert_eq!(auto_size(8), (256, 512 << 10));
        assert_eq!(auto_size(16), (256, 128 << 10));
        assert_eq!(auto_size(17), (128, 65536));
        assert_eq!(auto_size(32), (128, 65536));
        assert_eq!(auto_size(64), (64, 32768));
        assert_eq!(auto_size(1024), (4, 1024));
    }

    #[test]
    fn parsing() {
        let p = with(
            &[
                ("btl_sm_fifo_cells", "16"),
                ("btl_sm_payload_bytes", "8k"),
                ("btl_sm_eager_limit", " 12345 "),
                ("btl_sm_single_copy", "NONE"),
            ],
            3,
        )
        .unwrap();
        assert_eq!(p.fifo_cells, 16);
        assert_eq!(p.payload_bytes, 8192);
        assert_eq!(p.eager_limit, 12345);
        assert_eq!(p.single_copy, SingleCopy::None);
        assert_eq!(
            with(&[("btl_sm_single_copy", "cma")], 2)
                .unwrap()
                .single_copy,
            SingleCopy::Cma
        );
        assert_eq!(
            with(&[("btl_sm_eager_limit", "0")], 2).unwrap().eager_limit,
            0
        );
    }

    #[test]
    fn xmem_switch_and_size() {
        let p = with(&[("btl_sm_xmem", "0"), ("btl_sm_xmem_size", "1g")], 2).unwrap();
        assert!(!p.xmem);
        assert_eq!(p.xmem_size, 1 << 30);
        assert!(with(&[("btl_sm_xmem", "1")], 2).unwrap().xmem);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        let cases: &[(&str, &str)] = &[
            ("btl_sm_fifo_cells", "2"),
            ("btl_sm_fifo_cells", "48"),
            ("btl_sm_fifo_cells", "abc"),
            ("btl_sm_fifo_cells", "-4"),
            ("btl_sm_payload_bytes", "512"),
            ("btl_sm_payload_bytes", "3000"),
            ("btl_sm_payload_bytes", "4g"),
            ("btl_sm_eager_limit", "lots"),
            ("btl_sm_eager_limit", "-1"),
            ("btl_sm_single_copy", "xpmem"),
            ("btl_sm_fifo_size", "100"),
            ("btl_sm_fastbox_size", "3"),
            ("btl_sm_fastboxes", "many"),
            ("btl_sm_fragment_size", "100"),
            ("btl_sm_fragments", "0"),
            ("btl_sm_thread_layout", "many"),
            ("btl_sm_cacheline_size", "100"),
            ("btl_sm_fastbox_max_procs", "x"),
            ("btl_sm_xmem", "maybe"),
            ("btl_sm_xmem_size", "1k"),
        ];
        for (k, v) in cases {
            let e = with(&[(k, v)], 2).unwrap_err().to_string();
            assert!(e.contains(k) && e.contains(v), "{k}={v}: {e}");
            assert!(e.contains("expected"), "{e}");
        }
        assert!(Params::resolve(0, &|_| None)
            .unwrap_err()
            .to_string()
            .contains("local ranks"));
        let e = with(
            &[
                ("btl_sm_fifo_cells", "16m"),
                ("btl_sm_payload_bytes", "1g"),
                ("btl_sm_fastbox_max_procs", "5000"),
            ],
            4096,
        )
        .unwrap_err();
        assert!(e.to_string().contains("exceed"), "{e}");
    }
}
