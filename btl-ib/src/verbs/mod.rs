//! The verbs interface the transport is written against: the subset of libibverbs it needs
//! (one device context with one PD and one CQ, RC QPs, MRs, send/recv, RDMA READ/WRITE and
//! the two 8-byte atomics), as
//! a trait with two providers:
//! - [`soft`]: processes on one machine, with the semantics of RC kept (in order, exactly once,
//!   keys/bounds/access checked on every access, error completions), so the protocol and the
//!   registration cache run where there is no RDMA hardware;
//! - `real` (Cargo feature `verbs`): libibverbs through `rdma-sys`.
//!
//! Every work request is signaled: each post produces exactly one [`Wc`].

use std::fmt;

pub mod soft;

#[cfg(feature = "verbs")]
pub mod real;

/// Memory-region access rights, with the values of `IBV_ACCESS_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Access(pub u32);

impl Access {
    pub const LOCAL_WRITE: Access = Access(1);
    pub const REMOTE_WRITE: Access = Access(2);
    pub const REMOTE_READ: Access = Access(4);
    pub const REMOTE_ATOMIC: Access = Access(8);
    /// Everything the transport ever asks for: one registration serves sends, gets, puts and
    /// atomics.
    pub const ALL: Access = Access(1 | 2 | 4 | 8);

    pub fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, o: Access) -> Access {
        Access(self.0 | o.0)
    }
}

/// A registered memory region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mr {
    pub addr: usize,
    pub len: usize,
    pub lkey: u32,
    pub rkey: u32,
    pub access: Access,
}

/// Why a registration failed, as `ibv_reg_mr` reports it: an errno (ENOMEM when the pinned
/// bytes would exceed RLIMIT_MEMLOCK, EFAULT for a range that is not mapped, EINVAL...) and a
/// sentence for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegError {
    pub errno: i32,
    pub message: String,
}

impl fmt::Display for RegError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Any other failed verb (a post to a QP in the error state, a bad address...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerbsError(pub String);

impl fmt::Display for VerbsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One scatter/gather element: `len` bytes at `addr`, inside the region whose lkey is `lkey`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge {
    pub addr: usize,
    pub len: usize,
    pub lkey: u32,
}

/// A send-queue work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendWr {
    /// Consumes one receive posted at the peer, in order.
    Send {
        wr_id: u64,
        sge: Sge,
        imm: Option<u32>,
    },
    /// Reads `local.len` bytes at `remote_addr` in the peer (region `rkey`, REMOTE_READ).
    RdmaRead {
        wr_id: u64,
        local: Sge,
        remote_addr: u64,
        rkey: u32,
    },
    /// Writes `local.len` bytes to `remote_addr` in the peer (region `rkey`, REMOTE_WRITE).
    RdmaWrite {
        wr_id: u64,
        local: Sge,
        remote_addr: u64,
        rkey: u32,
    },
    /// `IBV_WR_ATOMIC_FETCH_AND_ADD`: adds `add` to the 8-byte aligned word at `remote_addr`
    /// (region `rkey`, REMOTE_ATOMIC); the old value lands in `local` (8 bytes).
    AtomicFetchAdd {
        wr_id: u64,
        local: Sge,
        remote_addr: u64,
        rkey: u32,
        add: u64,
    },
    /// `IBV_WR_ATOMIC_CMP_AND_SWP`: stores `swap` at the word if it equals `compare`; the old
    /// value lands in `local` (8 bytes).
    AtomicCmpSwap {
        wr_id: u64,
        local: Sge,
        remote_addr: u64,
        rkey: u32,
        compare: u64,
        swap: u64,
    },
}

impl SendWr {
    pub fn wr_id(&self) -> u64 {
        match *self {
            SendWr::Send { wr_id, .. }
            | SendWr::RdmaRead { wr_id, .. }
            | SendWr::RdmaWrite { wr_id, .. }
            | SendWr::AtomicFetchAdd { wr_id, .. }
            | SendWr::AtomicCmpSwap { wr_id, .. } => wr_id,
        }
    }
}

/// An 8-byte atomic, as the two verbs define them (values in host byte order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    FetchAdd(u64),
    CmpSwap { compare: u64, swap: u64 },
}

impl AtomicOp {
    /// The new value of a word that held `old`.
    pub fn apply(self, old: u64) -> u64 {
        match self {
            AtomicOp::FetchAdd(a) => old.wrapping_add(a),
            AtomicOp::CmpSwap { compare, swap } if old == compare => swap,
            AtomicOp::CmpSwap { .. } => old,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcOpcode {
    Send,
    RdmaRead,
    RdmaWrite,
    FetchAdd,
    CompSwap,
    Recv,
}

/// Completion status, named after `enum ibv_wc_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcStatus {
    Success,
    /// The message was longer than the receive buffer.
    LocLenErr,
    /// A local sge is outside its region, names no region, or lacks the access right; or (soft
    /// provider) the region's pages are no longer those pinned at registration.
    LocProtErr,
    /// The peer refused the access: unknown rkey, out of bounds, missing access right, or
    /// (soft provider) the remote region's pages changed since registration.
    RemAccessErr,
    RemInvReqErr,
    RemOpErr,
    /// The peer stopped answering (it died or its QP went away without a disconnect).
    RetryExcErr,
    /// The QP was in the error state: the request was flushed without being executed.
    WrFlushErr,
    GeneralErr,
}

impl WcStatus {
    /// The libibverbs name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            WcStatus::Success => "IBV_WC_SUCCESS",
            WcStatus::LocLenErr => "IBV_WC_LOC_LEN_ERR",
            WcStatus::LocProtErr => "IBV_WC_LOC_PROT_ERR",
            WcStatus::RemAccessErr => "IBV_WC_REM_ACCESS_ERR",
            WcStatus::RemInvReqErr => "IBV_WC_REM_INV_REQ_ERR",
            WcStatus::RemOpErr => "IBV_WC_REM_OP_ERR",
            WcStatus::RetryExcErr => "IBV_WC_RETRY_EXC_ERR",
            WcStatus::WrFlushErr => "IBV_WC_WR_FLUSH_ERR",
            WcStatus::GeneralErr => "IBV_WC_GENERAL_ERR",
        }
    }
}

/// A work completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wc {
    pub wr_id: u64,
    /// The local QP the request was posted to.
    pub qpn: Qpn,
    pub opcode: WcOpcode,
    pub status: WcStatus,
    /// Bytes received (Recv) or moved (RDMA).
    pub byte_len: usize,
    pub imm: Option<u32>,
    /// What exactly went wrong, when the provider knows more than the status says.
    pub detail: Option<String>,
}

pub type Qpn = u32;

/// One opened device: context, protection domain and a single completion queue shared by all
/// its QPs. Used from one thread.
pub trait Device {
    /// For messages: "soft" or e.g. "mlx5_0:1".
    fn name(&self) -> String;
    /// Largest message one Send may carry.
    fn max_msg(&self) -> usize;
    /// Registers (and pins) `[addr, addr + len)`.
    fn reg_mr(&mut self, addr: usize, len: usize, access: Access) -> Result<Mr, RegError>;
    fn dereg_mr(&mut self, mr: Mr) -> Result<(), VerbsError>;
    /// Bytes pinned by this device's registrations now, and the limit they count against
    /// (RLIMIT_MEMLOCK's soft limit; None when unlimited).
    fn pinned(&self) -> (usize, Option<usize>);
    /// What peers need to reach this device (port, GID, process...), exchanged through PMI.
    fn address(&self) -> Vec<u8>;
    /// A reliable-connected QP with room for this many outstanding sends and receives.
    fn create_qp(&mut self, max_send_wr: u32, max_recv_wr: u32) -> Result<Qpn, VerbsError>;
    /// Connects `qpn` to QP `remote_qpn` of the device at `remote_address` (INIT, RTR, RTS).
    /// Sends may be posted at once; they flow when the peer has connected its side.
    fn connect(
        &mut self,
        qpn: Qpn,
        remote_address: &[u8],
        remote_qpn: Qpn,
    ) -> Result<(), VerbsError>;
    fn post_recv(&mut self, qpn: Qpn, wr_id: u64, sge: Sge) -> Result<(), VerbsError>;
    fn post_send(&mut self, qpn: Qpn, wr: SendWr) -> Result<(), VerbsError>;
    /// Moves up to `max` completions to `out`; returns how many.
    fn poll_cq(&mut self, out: &mut Vec<Wc>, max: usize) -> usize;
    /// Orderly close: the peer sees a disconnect, not a failure.
    fn destroy_qp(&mut self, qpn: Qpn) -> Result<(), VerbsError>;
    /// Whether the atomics work and `atomic_local` is atomic with respect to them: then an
    /// 8-byte word of this process's own registered memory can be shared by atomics from
    /// peers and from this process alike.
    fn atomics(&self) -> bool {
        false
    }
    /// `op` on the 8-byte aligned word at `addr` of this process, atomic with respect to the
    /// atomics peers post at it; the old value.
    fn atomic_local(&mut self, _addr: usize, _op: AtomicOp) -> Result<u64, VerbsError> {
        Err(VerbsError(format!(
            "{}: no local atomics coherent with the device's",
            self.name()
        )))
    }
}

/// Which provider `open` uses (`--mca btl_ib_device auto|soft|verbs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The first real device, if any; never the software one.
    Auto,
    Soft,
    Verbs,
}

impl DeviceChoice {
    pub fn parse(s: &str) -> Result<DeviceChoice, String> {
        match s {
            "auto" | "" => Ok(DeviceChoice::Auto),
            "soft" => Ok(DeviceChoice::Soft),
            "verbs" => Ok(DeviceChoice::Verbs),
            other => Err(format!(
                "btl_ib_device={other}: expected auto, soft or verbs"
            )),
        }
    }
}

/// Opens a device, or says why there is none.
pub fn open(choice: DeviceChoice) -> Result<Box<dyn Device>, String> {
    match choice {
        DeviceChoice::Soft => soft::SoftDevice::open().map(|d| Box::new(d) as Box<dyn Device>),
        DeviceChoice::Auto | DeviceChoice::Verbs => open_real(),
    }
}

#[cfg(feature = "verbs")]
fn open_real() -> Result<Box<dyn Device>, String> {
    real::VerbsDevice::open_first().map(|d| Box::new(d) as Box<dyn Device>)
}

#[cfg(not(feature = "verbs"))]
fn open_real() -> Result<Box<dyn Device>, String> {
    Err("built without libibverbs (Cargo feature `verbs` of libmpi and btl-ib off)".into())
}
