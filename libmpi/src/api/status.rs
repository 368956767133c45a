//! What a completed receive reports.

use super::datatype::Equivalence;
use crate::pml;

/// Source, tag and size of a received message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub(crate) pml::Status);

impl Status {
    /// Rank of the sender in the communicator (MPI_PROC_NULL for a receive from it).
    pub fn source(&self) -> i32 {
        self.0.source
    }
    pub fn tag(&self) -> i32 {
        self.0.tag
    }
    /// Whether the operation was cancelled (`Request::cancel` of an unmatched receive).
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled
    }
    /// Bytes received.
    pub fn count_bytes(&self) -> usize {
        self.0.count
    }
    /// Elements of `T` received; None when the byte count is not a whole number of them.
    pub fn count<T: Equivalence>(&self) -> Option<usize> {
        let size = std::mem::size_of::<T>();
        self.0
            .count
            .is_multiple_of(size)
            .then_some(self.0.count / size)
    }
}
