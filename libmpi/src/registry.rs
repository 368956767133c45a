//! Per-process tables behind communicator creation, groups, attribute keys and user error
//! handlers. Held by the `Runtime`; the C handles index into them.

use crate::error::{err, ErrorClass, Result};
use crate::group::Group;

/// First context id handed to a new communicator (WORLD uses 0,1 and SELF 2,3).
const FIRST_FREE_CTX: u32 = 4;
/// User keyvals start here, clear of MPI_KEYVAL_INVALID (0) and the predefined ones (501..).
pub const FIRST_KEYVAL: i32 = 1000;

/// A C attribute copy callback: MPI_Comm_copy_attr_function.
pub type CopyFn = unsafe extern "C" fn(
    comm: *mut std::ffi::c_void,
    keyval: i32,
    extra: *mut std::ffi::c_void,
    val_in: *mut std::ffi::c_void,
    val_out: *mut std::ffi::c_void,
    flag: *mut i32,
) -> i32;
/// A C attribute delete callback: MPI_Comm_delete_attr_function.
pub type DeleteFn = unsafe extern "C" fn(
    comm: *mut std::ffi::c_void,
    keyval: i32,
    val: *mut std::ffi::c_void,
    extra: *mut std::ffi::c_void,
) -> i32;

/// What MPI_Comm_dup does with an attribute.
#[derive(Clone, Copy, Debug)]
pub enum Copy {
    /// MPI_COMM_NULL_COPY_FN: not copied.
    None,
    /// MPI_COMM_DUP_FN: the value is copied as is.
    Dup,
    User(CopyFn),
}

#[derive(Clone, Copy, Debug)]
pub struct Keyval {
    pub copy: Copy,
    pub delete: Option<DeleteFn>,
    pub extra: usize,
    /// Freed by the user: no new uses, but attributes already set keep their callbacks.
    pub freed: bool,
    /// A window keyval (MPI_Win_create_keyval): refused on communicators, and the reverse.
    pub win: bool,
}

pub struct Objects {
    next_ctx: u32,
    /// World ranks on this node (MPI_COMM_TYPE_SHARED).
    pub local_ranks: Vec<i32>,
    groups: Vec<Option<Group>>,
    keyvals: Vec<Keyval>,
}

impl Objects {
    pub fn new(local_ranks: Vec<i32>) -> Objects {
        Objects {
            next_ctx: FIRST_FREE_CTX,
            local_ranks,
            groups: Vec::new(),
            keyvals: Vec::new(),
        }
    }

    /// The lowest context id this process could give a new communicator.
    pub fn next_ctx(&self) -> u32 {
        self.next_ctx
    }

    /// A new communicator took contexts `ctx` and `ctx + 1` (agreed by its members).
    pub fn used_ctx(&mut self, ctx: u32) {
        self.next_ctx = self.next_ctx.max(ctx + 2);
    }

    pub fn add_group(&mut self, g: Group) -> usize {
        match self.groups.iter().position(Option::is_none) {
            Some(i) => {
                self.groups[i] = Some(g);
                i
            }
            None => {
                self.groups.push(Some(g));
                self.groups.len() - 1
            }
        }
    }

    pub fn group(&self, id: usize) -> Result<&Group> {
        match self.groups.get(id) {
            Some(Some(g)) => Ok(g),
            _ => err(ErrorClass::Group, "invalid group (freed or never created)"),
        }
    }

    pub fn free_group(&mut self, id: usize) -> Result<()> {
        self.group(id)?;
        self.groups[id] = None;
        Ok(())
    }

    pub fn add_keyval(&mut self, copy: Copy, delete: Option<DeleteFn>, extra: usize) -> i32 {
        self.keyvals.push(Keyval {
            copy,
            delete,
            extra,
            freed: false,
            win: false,
        });
        FIRST_KEYVAL + self.keyvals.len() as i32 - 1
    }

    /// A window keyval (same table, its own kind).
    pub fn add_win_keyval(&mut self, delete: Option<DeleteFn>, extra: usize) -> i32 {
        let k = self.add_keyval(Copy::None, delete, extra);
        self.keyvals[(k - FIRST_KEYVAL) as usize].win = true;
        k
    }

    /// A window keyval the user may still use.
    pub fn win_keyval(&self, k: i32) -> Result<Keyval> {
        match self.keyval_any(k) {
            Some(kv) if !kv.freed && kv.win => Ok(kv),
            _ => err(
                ErrorClass::Keyval,
                format!("{k} is not a valid window keyval"),
            ),
        }
    }

    /// Free a window keyval; freeing it again does nothing, as `free_keyval`.
    pub fn free_win_keyval(&mut self, k: i32) -> Result<()> {
        self.win_keyval_known(k)?;
        self.keyvals[(k - FIRST_KEYVAL) as usize].freed = true;
        Ok(())
    }

    /// A keyval's callbacks, freed or not (attributes outlive the user's free).
    pub fn keyval_any(&self, k: i32) -> Option<Keyval> {
        let i = usize::try_from(k.checked_sub(FIRST_KEYVAL)?).ok()?;
        self.keyvals.get(i).copied()
    }

    /// A keyval the user may still use.
    pub fn keyval(&self, k: i32) -> Result<Keyval> {
        match self.keyval_any(k) {
            Some(kv) if !kv.freed && !kv.win => Ok(kv),
            _ => err(ErrorClass::Keyval, format!("{k} is not a valid keyval")),
        }
    }

    /// A keyval that exists, freed or not: attributes set before the free can still be read
    /// and deleted through it (MPI-1 5.7.1: freeing does not remove a keyval in use).
    pub fn keyval_known(&self, k: i32) -> Result<Keyval> {
        match self.keyval_any(k) {
            Some(kv) if !kv.win => Ok(kv),
            _ => err(ErrorClass::Keyval, format!("{k} is not a valid keyval")),
        }
    }

    /// A window keyval that exists, freed or not (as `keyval_known`).
    pub fn win_keyval_known(&self, k: i32) -> Result<Keyval> {
        match self.keyval_any(k) {
            Some(kv) if kv.win => Ok(kv),
            _ => err(
                ErrorClass::Keyval,
                format!("{k} is not a valid window keyval"),
            ),
        }
    }

    /// Free a keyval; freeing it again (e.g. a copy of the handle, or from a delete callback
    /// while its attribute is still set) does nothing, as in MPICH.
    pub fn free_keyval(&mut self, k: i32) -> Result<()> {
        self.keyval_known(k)?;
        self.keyvals[(k - FIRST_KEYVAL) as usize].freed = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_ids_only_grow() {
        let mut o = Objects::new(vec![0]);
        assert_eq!(o.next_ctx(), FIRST_FREE_CTX);
        o.used_ctx(10);
        assert_eq!(o.next_ctx(), 12);
        o.used_ctx(4);
        assert_eq!(o.next_ctx(), 12);
    }

    #[test]
    fn keyvals_and_groups() {
        let mut o = Objects::new(vec![0]);
        let k = o.add_keyval(Copy::Dup, None, 7);
        assert!(k >= FIRST_KEYVAL);
        assert_eq!(o.keyval(k).unwrap().extra, 7);
        o.free_keyval(k).unwrap();
        assert_eq!(o.keyval(k).unwrap_err().class, ErrorClass::Keyval);
        // Still known (attributes set before the free), and a second free does nothing.
        assert_eq!(o.keyval_known(k).unwrap().extra, 7);
        o.free_keyval(k).unwrap();
        assert_eq!(o.keyval_known(k + 1).unwrap_err().class, ErrorClass::Keyval);
        assert!(
            o.keyval_any(k).is_some(),
            "a freed keyval keeps its callbacks"
        );
        assert!(o.keyval_any(0).is_none() && o.keyval_any(501).is_none());

        let a = o.add_group(Group::new(vec![1, 2]));
        let b = o.add_group(Group::new(vec![3]));
        o.free_group(a).unwrap();
        assert_eq!(o.group(a).unwrap_err().class, ErrorClass::Group);
        assert_eq!(o.add_group(Group::empty()), a, "freed slots are reused");
        assert_eq!(o.group(b).unwrap().members(), &[3]);
    }
}
