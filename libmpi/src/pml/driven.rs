//! Operations of a layer above built on point-to-point (collective schedules), advanced at
//! every progress turn, and the sequence numbers that layer numbers them with. The pml knows
//! them only through [`Driven`], so it imports nothing of that layer, as Open MPI's libnbc
//! registers its progress function with opal_progress.

use std::collections::HashMap;

use super::{KeyHasher, Pml, ReqId, Status};

/// An operation the pml advances until it is over; its request then completes.
pub trait Driven: std::any::Any {
    /// Advance as far as possible without blocking; true once the operation is over.
    fn advance(&mut self, pml: &mut Pml) -> bool;
    /// The error class it ended with (0: success).
    fn error(&self) -> i32;
    /// Over and reported: give back what it holds (its box may wait for reuse).
    fn release(&mut self);
}

/// The operations in flight, each with the request that completes with it.
#[derive(Default)]
pub struct DrivenOps {
    active: Vec<(ReqId, Box<dyn Driven>)>,
    /// Boxes of finished operations (released), reused by the next of the same type: a new box
    /// per started operation cost MPI_Iallreduce + MPI_Wait 3.5 % on 2 ranks (15 of 420 ns).
    spare: Vec<Box<dyn Driven>>,
}

/// Spare boxes kept at most.
const SPARE_MAX: usize = 4;

impl DrivenOps {
    pub fn is_idle(&self) -> bool {
        self.active.is_empty()
    }
}

/// Per key (a context and a group hash), numbered sequences of operations, each key in
/// `SPACES` independent sequences. The keys are hashes already: the multiply hasher mixes them.
#[derive(Default)]
pub struct Sequences {
    seq: HashMap<(u32, u64), [u32; SPACES], std::hash::BuildHasherDefault<KeyHasher>>,
}

/// Sequences per key.
pub const SPACES: usize = 2;

impl Sequences {
    /// The next number of sequence `space` of `key` (from 0, wrapping).
    pub fn next(&mut self, key: (u32, u64), space: usize) -> u32 {
        let s = &mut self.seq.entry(key).or_insert([0; SPACES])[space];
        let n = *s;
        *s = s.wrapping_add(1);
        n
    }
}

/// An operation's request status: the empty status with its error class.
fn status(error: i32) -> Status {
    Status {
        error,
        ..super::probe::empty_status()
    }
}

impl Pml {
    /// Start `op`: run what it can now; the returned request completes when it is over.
    pub fn start_driven<D: Driven + 'static>(&mut self, mut op: D) -> ReqId {
        let id = self.pending_request();
        if op.advance(self) {
            self.complete_request(id, status(op.error()));
            return id;
        }
        let spare = &mut self.driven.spare;
        let boxed = match spare
            .iter()
            .position(|b| (b.as_ref() as &dyn std::any::Any).is::<D>())
        {
            Some(k) => {
                let mut b = spare.swap_remove(k);
                let slot = (b.as_mut() as &mut dyn std::any::Any)
                    .downcast_mut::<D>()
                    .expect("checked");
                *slot = op;
                b
            }
            None => Box::new(op),
        };
        self.driven.active.push((id, boxed));
        id
    }

    /// Advance every operation in flight; how many finished.
    #[inline]
    pub(super) fn progress_driven(&mut self) -> usize {
        let mut active = std::mem::take(&mut self.driven.active);
        let mut done = 0;
        let mut k = 0;
        while k < active.len() {
            if active[k].1.advance(self) {
                let (id, mut op) = active.remove(k);
                self.complete_request(id, status(op.error()));
                op.release();
                if self.driven.spare.len() < SPARE_MAX {
                    self.driven.spare.push(op);
                }
                done += 1;
            } else {
                k += 1;
            }
        }
        // Nothing starts an operation from inside progress, so the slot is still empty.
        debug_assert!(self.driven.active.is_empty());
        self.driven.active = active;
        done
    }
}
