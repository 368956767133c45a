//! Collective operations as non-blocking schedules driven by the progress engine: the blocking
//! forms start a schedule and wait for its request, so both share one implementation.
//!
//! Every collective instance on a communicator gets its own tag on the communicator's
//! collective context (all ranks call collectives in the same order, so their sequence numbers
//! agree), so any number of them can be outstanding at once. Blocking and non-blocking
//! collectives count in separate tag spaces, as MPICH's fixed blocking tags and its schedule
//! tags do: a program that starts MPI_Iallreduce on one rank before a blocking barrier and after
//! it on another (mpi4py's ULFM Iagree test) still matches. Sequence numbers are kept per
//! (context, group): a context id reused later by a communicator of other ranks starts afresh
//! on every member, without any hook in communicator creation.

pub mod algos;
pub mod cache;
mod hier;
pub mod inter;
pub mod schedule;
pub mod stage;
pub mod tune;

use crate::pml::{Pml, ReqId};
pub use schedule::{At, Buf, Builder, Red, Schedule};

/// A communicator's identity for collective sequence numbers: its collective context and a
/// hash of its group.
pub type SeqKey = (u32, u64);

pub fn seq_key(comm: &crate::comm::Comm) -> SeqKey {
    // FNV-1a over the length and the world ranks: every collective computes it, and SipHash
    // cost ~180 instructions per small allreduce (callgrind).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ comm.group.len() as u64;
    for &w in &comm.group {
        h = (h ^ w as u32 as u64).wrapping_mul(0x100_0000_01b3);
    }
    (comm.coll_ctx(), h)
}

/// Collective tags live above the tags the plain blocking barrier uses (small round numbers);
/// blocking collectives' tags have `BLOCKING_BIT` set too.
const TAG_BASE: u32 = 1 << 30;
const BLOCKING_BIT: u32 = 1 << 29;
const TAG_MASK: u32 = BLOCKING_BIT - 1;

/// Which sequence a collective takes its tag from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Space {
    /// Blocking calls (and the collectives inside blocking calls such as MPI_Comm_split).
    Blocking,
    /// Non-blocking and persistent calls.
    Nonblocking,
}

/// The tag for the next collective of the communicator `key` names, in `space`, from the
/// pml's sequences.
pub fn next_tag(pml: &mut Pml, key: SeqKey, space: Space) -> i32 {
    let (k, bit) = match space {
        Space::Blocking => (0, BLOCKING_BIT),
        Space::Nonblocking => (1, 0),
    };
    (TAG_BASE | bit | (pml.seqs.next(key, k) & TAG_MASK)) as i32
}

/// Start a blocking call's schedule (its caller waits for it before returning): `start_in`.
pub fn start_blocking(pml: &mut Pml, s: Schedule) -> ReqId {
    start_in(pml, s, Space::Blocking)
}

/// Start a schedule under the next tag of `space`: run what it can now; its request completes
/// when the schedule does.
pub fn start_in(pml: &mut Pml, s: Schedule, space: Space) -> ReqId {
    let tag = next_tag(pml, s.seq_key(), space);
    start_tagged(pml, s, tag)
}

/// Take the next tag of the communicator `key` names for a persistent collective: every run
/// uses it, so runs match by the order of the init calls, not of the starts (MPI-4).
pub fn reserve_tag(pml: &mut Pml, key: SeqKey) -> i32 {
    next_tag(pml, key, Space::Nonblocking)
}

/// `start` with a tag from `reserve_tag`.
pub fn start_tagged(pml: &mut Pml, mut s: Schedule, tag: i32) -> ReqId {
    s.set_tag(tag);
    pml.start_driven(s)
}
