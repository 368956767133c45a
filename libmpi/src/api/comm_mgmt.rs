//! Making communicators in the Rust API: duplicate, split, create from a group; groups,
//! comparison, names and error handlers.
//!
//! Ownership: `Communicator` is a `Copy` handle for communicators MPI owns (WORLD, SELF);
//! communicators you create come as a `UserCommunicator`, which owns its table slot and frees it
//! on drop (MPI_Comm_free) or explicitly with `free` to see errors. It derefs to `Communicator`
//! for messaging. A `Communicator` copied out of one must not be used after the owner is dropped:
//! that is memory-safe, but calls fail with MPI_ERR_COMM (`rank`/`size` panic) or, once the slot
//! is reused, reach another communicator; so keep the owner alive instead.

use std::ops::Deref;

use super::comm::Communicator;
use crate::comm::ErrHandler;
use crate::error::{err, ErrorClass, Result};
pub use crate::group::{Comparison, Group};
use crate::runtime;

/// A communicator created by this program, freed when dropped.
#[derive(Debug)]
pub struct UserCommunicator {
    comm: Communicator,
}

impl UserCommunicator {
    pub(super) fn new(id: usize) -> UserCommunicator {
        UserCommunicator {
            comm: Communicator::new(id),
        }
    }

    /// Free it now (MPI_Comm_free), seeing any error from attribute delete callbacks.
    pub fn free(self) -> Result<()> {
        let id = self.comm.id;
        std::mem::forget(self);
        crate::comm_ops::free(id)
    }
}

impl Deref for UserCommunicator {
    type Target = Communicator;
    fn deref(&self) -> &Communicator {
        &self.comm
    }
}

impl Drop for UserCommunicator {
    fn drop(&mut self) {
        // After MPI_Finalize the table is gone with the runtime: nothing left to free.
        if runtime::is_initialized() && !runtime::is_finalized() {
            let _ = crate::comm_ops::free(self.comm.id);
        }
    }
}

/// What a failed call on a communicator does in the C interface (MPI_Comm_set_errhandler).
/// Rust methods always return the error as `Err`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorHandler {
    /// MPI_ERRORS_ARE_FATAL: print the error and abort the job (the default).
    Fatal,
    /// MPI_ERRORS_RETURN: return the error code.
    Return,
    /// MPI_ERRORS_ABORT: abort the job.
    Abort,
    /// A handler the C program created with MPI_Comm_create_errhandler.
    User,
}

impl Communicator {
    /// MPI_Comm_dup: same group, new context, attributes copied by their copy callbacks.
    /// Collective over this communicator.
    pub fn duplicate(&self) -> Result<UserCommunicator> {
        crate::comm_ops::dup(self.id).map(UserCommunicator::new)
    }

    /// MPI_Comm_split: one communicator per `color` (>= 0), ranked by `key` then rank here;
    /// `None` as color (MPI_UNDEFINED) takes no part and gets `None`. Collective.
    pub fn split(&self, color: Option<i32>, key: i32) -> Result<Option<UserCommunicator>> {
        let color = match color {
            Some(c) if c < 0 => {
                return err(
                    ErrorClass::Arg,
                    format!("color {c} is negative (use None for MPI_UNDEFINED)"),
                )
            }
            Some(c) => c,
            None => crate::group::UNDEFINED,
        };
        // Under MULTIPLE an intracommunicator splits outside the runtime (comm_ops).
        let id = if crate::comm_ops::multiple_forms(self.id)? {
            crate::comm_ops::split_outside(self.id, color, key)?
        } else {
            runtime::with(|rt| rt.comm_split(self.id, color, key))?
        };
        Ok(id.map(UserCommunicator::new))
    }

    /// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): the ranks on this node. Collective.
    pub fn split_shared(&self, key: i32) -> Result<UserCommunicator> {
        runtime::with(|rt| rt.comm_split_shared(self.id, key)).map(UserCommunicator::new)
    }

    /// MPI_Comm_create: a communicator of `group` (a subset of this one's group, the same at
    /// every rank); `None` at ranks outside it. Collective over this communicator.
    pub fn create(&self, group: &Group) -> Result<Option<UserCommunicator>> {
        let id = runtime::with(|rt| rt.comm_create(self.id, group))?;
        Ok(id.map(UserCommunicator::new))
    }

    /// MPI_Comm_create_group: like `create`, but only the members of `group` call it (the
    /// others go on with other work); `tag` tells concurrent calls on overlapping groups apart.
    /// Fails with MPI_ERR_GROUP when this process is not in `group`.
    pub fn create_group(&self, group: &Group, tag: i32) -> Result<UserCommunicator> {
        let id =
            crate::comm_ops::create_group(&mut crate::comm_agree::Outside, self.id, group, tag)?;
        Ok(UserCommunicator::new(id))
    }

    /// MPI_Comm_group: this communicator's members.
    pub fn group(&self) -> Group {
        runtime::with(|rt| Ok(Group::new(rt.comm(self.id)?.group.clone())))
            .expect("a live communicator has a group")
    }

    /// MPI_Comm_compare: Identical (the same communicator), Congruent (same members and
    /// order), Similar (same members) or Unequal.
    pub fn compare(&self, other: &Communicator) -> Comparison {
        if self.id == other.id {
            return Comparison::Identical;
        }
        match self.group().compare(&other.group()) {
            Comparison::Identical => Comparison::Congruent,
            c => c,
        }
    }

    /// MPI_Comm_set_name (cut to MPI_MAX_OBJECT_NAME - 1 bytes).
    pub fn set_name(&self, name: &str) -> Result<()> {
        let mut name = name.to_string();
        while name.len() > 127 {
            name.pop();
        }
        runtime::with(|rt| {
            rt.comm_mut(self.id)?.name = name;
            Ok(())
        })
    }

    /// MPI_Comm_get_name: empty for a communicator never named.
    pub fn name(&self) -> String {
        runtime::with(|rt| Ok(rt.comm(self.id)?.name.clone())).unwrap_or_default()
    }

    /// MPI_Comm_set_errhandler with a predefined handler.
    pub fn set_error_handler(&self, h: ErrorHandler) -> Result<()> {
        let h = match h {
            ErrorHandler::Fatal => ErrHandler::Fatal,
            ErrorHandler::Return => ErrHandler::Return,
            ErrorHandler::Abort => ErrHandler::Abort,
            ErrorHandler::User => {
                return err(
                    ErrorClass::Errhandler,
                    "user error handlers are created in C (MPI_Comm_create_errhandler)",
                )
            }
        };
        runtime::with(|rt| {
            rt.comm_mut(self.id)?.errhandler = h;
            Ok(())
        })
    }

    /// MPI_Comm_get_errhandler.
    pub fn error_handler(&self) -> ErrorHandler {
        match runtime::with(|rt| Ok(rt.comm(self.id)?.errhandler)) {
            Ok(ErrHandler::Return) => ErrorHandler::Return,
            Ok(ErrHandler::Abort) => ErrorHandler::Abort,
            Ok(ErrHandler::User(_)) => ErrorHandler::User,
            _ => ErrorHandler::Fatal,
        }
    }
}

impl Group {
    /// This process's rank in the group, or None if it is not a member (MPI_Group_rank).
    pub fn rank(&self) -> Option<i32> {
        let me = runtime::with(|rt| Ok(rt.comm(crate::comm::WORLD)?.rank)).ok()?;
        self.rank_of(me)
    }
}
