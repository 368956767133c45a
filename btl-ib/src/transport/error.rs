//! Transport failures, with the MPI error class they map to.

use crate::verbs::{Wc, WcStatus};

/// Which MPI error class a failure maps to (libmpi turns it into the class code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailClass {
    /// The peer died or its QP went away: MPI_ERR_PROC_ABORTED.
    PeerLost,
    /// A protection/key check failed (bad rkey, remapped pages): MPI_ERR_OTHER.
    Access,
    /// Pinned memory exhausted (RLIMIT_MEMLOCK): MPI_ERR_NO_MEM.
    NoMem,
    /// Anything else (a protocol or provider fault): MPI_ERR_INTERN.
    Internal,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IbError {
    pub class: FailClass,
    pub message: String,
}

impl std::fmt::Display for IbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl IbError {
    pub fn new(class: FailClass, message: impl Into<String>) -> IbError {
        IbError {
            class,
            message: message.into(),
        }
    }

    /// An error completion of `what` ("send to rank 3", ...).
    pub fn from_wc(wc: &Wc, what: &str) -> IbError {
        let class = match wc.status {
            WcStatus::RetryExcErr | WcStatus::WrFlushErr => FailClass::PeerLost,
            WcStatus::RemAccessErr | WcStatus::LocProtErr => FailClass::Access,
            _ => FailClass::Internal,
        };
        let mut message = format!("btl ib: {what} failed: {}", wc.status.name());
        if let Some(d) = &wc.detail {
            message += ": ";
            message += d;
        }
        IbError { class, message }
    }
}
