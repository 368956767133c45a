//! The buffer of buffered sends (MPI_Buffer_attach): each message takes its size plus
//! `BSEND_OVERHEAD` bytes of it, first fit, until its send completes. MPI_BUFFER_AUTOMATIC
//! allocates a copy per message instead. A communicator may have its own (MPI 4.1
//! MPI_Comm_attach_buffer), used by buffered sends on it instead of the process's.
//! MPI_Buffer_iflush / MPI_Comm_iflush_buffer: a pml watcher (shared list of messages in
//! flight, each with a sequence number) completes the request once every message buffered
//! before the call has left.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::error::{err, ErrorClass, Result};
use crate::pml::{Pml, ReqId, Status};

/// Messages in flight, sorted by offset (owned copies at the end): slot, request once
/// tracked, sequence number.
type Busy = Vec<(Slot, Option<ReqId>, u64)>;

/// Release the space of every completed send.
fn reap_busy(busy: &mut Busy, pml: &mut Pml) {
    busy.retain(|(_, r, _)| match r {
        Some(r) if pml.is_complete(*r) => {
            pml.take(*r);
            false
        }
        _ => true,
    });
}

/// MPI_BSEND_OVERHEAD of the ABI: what each buffered message costs beyond its data.
pub const BSEND_OVERHEAD: usize = 512;

enum Attached {
    None,
    /// The user's buffer: base and size.
    User(*mut u8, usize),
    /// MPI_BUFFER_AUTOMATIC: the library allocates.
    Automatic,
}

/// Where a message's copy lives: an offset range of the user's buffer, or its own allocation.
pub struct Slot {
    off: usize,
    size: usize,
    owned: Option<Vec<u8>>,
}

pub struct Bsend {
    attached: Attached,
    /// Messages in flight from the buffer (shared with iflush watchers).
    busy: Rc<RefCell<Busy>>,
    /// The next message's sequence number.
    seq: u64,
    /// Communicators' own buffers (MPI_Comm_attach_buffer), by communicator index; a
    /// session's (MPI_Session_attach_buffer) under a key no communicator index reaches.
    comms: HashMap<usize, Bsend>,
    /// Communicators made from a session's group: the key of that session's buffer.
    sessions: HashMap<usize, usize>,
}

impl Default for Bsend {
    fn default() -> Bsend {
        Bsend {
            attached: Attached::None,
            busy: Rc::new(RefCell::new(Vec::new())),
            seq: 0,
            comms: HashMap::new(),
            sessions: HashMap::new(),
        }
    }
}

impl Bsend {
    /// MPI_Buffer_attach; `automatic` for MPI_BUFFER_AUTOMATIC.
    pub fn attach(&mut self, base: *mut u8, size: usize, automatic: bool) -> Result<()> {
        if !matches!(self.attached, Attached::None) {
            return err(
                ErrorClass::Buffer,
                "a buffer is already attached (detach it first)",
            );
        }
        self.attached = if automatic {
            Attached::Automatic
        } else {
            if base.is_null() && size > 0 {
                return err(ErrorClass::Buffer, "the buffer to attach is NULL");
            }
            Attached::User(base, size)
        };
        Ok(())
    }

    /// Forget the buffer (every message must have left it): (base, size), or
    /// (null, 0) for MPI_BUFFER_AUTOMATIC.
    pub fn detach(&mut self) -> Result<(*mut u8, usize)> {
        debug_assert_eq!(self.pending(), 0);
        match std::mem::replace(&mut self.attached, Attached::None) {
            Attached::None => err(ErrorClass::Buffer, "no buffer is attached"),
            Attached::User(b, n) => Ok((b, n)),
            Attached::Automatic => Ok((std::ptr::null_mut(), 0)),
        }
    }

    /// Bytes of the attached user buffer (0 for none or MPI_BUFFER_AUTOMATIC).
    pub fn size(&self) -> usize {
        match self.attached {
            Attached::User(_, n) => n,
            _ => 0,
        }
    }

    pub fn is_automatic(&self) -> bool {
        matches!(self.attached, Attached::Automatic)
    }

    /// Messages whose sends have not completed.
    pub fn pending(&self) -> usize {
        self.busy.borrow().len()
    }

    /// Whether every message in flight has completed (its space can be reaped).
    pub fn all_complete(busy: &RefCell<Busy>, pml: &Pml) -> bool {
        busy.borrow()
            .iter()
            .all(|(_, r, _)| r.is_some_and(|r| pml.is_complete(r)))
    }

    /// Whether a flush of this buffer has nothing left to wait for.
    pub fn flushed(&self, pml: &Pml) -> bool {
        self.pending() == 0 || Bsend::all_complete(&self.busy, pml)
    }

    /// `flushed` of communicator `comm`'s own buffer (true when it has none).
    pub fn comm_flushed(&self, comm: usize, pml: &Pml) -> bool {
        self.comms.get(&comm).is_none_or(|b| b.flushed(pml))
    }

    /// `flushed` of this buffer and of every communicator's own.
    pub fn all_flushed(&self, pml: &Pml) -> bool {
        self.flushed(pml) && self.comms.values().all(|b| b.flushed(pml))
    }

    /// The list of messages in flight, for `all_complete` inside a progress loop.
    pub fn busy(&self) -> Rc<RefCell<Busy>> {
        self.busy.clone()
    }

    /// Release the space of every completed send.
    pub fn reap(&mut self, pml: &mut Pml) {
        reap_busy(&mut self.busy.borrow_mut(), pml);
    }

    /// The buffer buffered sends on communicator `comm` use: its own, else its session's,
    /// else this one.
    pub fn of(&mut self, comm: usize) -> &mut Bsend {
        let key = if self.comms.contains_key(&comm) {
            Some(comm)
        } else {
            self.sessions
                .get(&comm)
                .copied()
                .filter(|k| self.comms.contains_key(k))
        };
        match key {
            Some(k) => self.comms.get_mut(&k).expect("checked"),
            None => self,
        }
    }

    /// Communicator `comm` was made from the group of the session whose buffer key is `key`.
    pub fn set_session(&mut self, comm: usize, key: usize) {
        self.sessions.insert(comm, key);
    }

    /// Communicator `comm` was freed.
    pub fn forget_comm(&mut self, comm: usize) {
        self.sessions.remove(&comm);
    }

    /// The buffer communicator `comm` attached, if any.
    pub fn comm(&mut self, comm: usize) -> Option<&mut Bsend> {
        self.comms.get_mut(&comm)
    }

    /// MPI_Comm_attach_buffer.
    pub fn comm_attach(
        &mut self,
        comm: usize,
        base: *mut u8,
        size: usize,
        automatic: bool,
    ) -> Result<()> {
        if self.comms.contains_key(&comm) {
            return err(
                ErrorClass::Buffer,
                "the communicator already has a buffer attached (detach it first)",
            );
        }
        let mut b = Bsend::default();
        b.attach(base, size, automatic)?;
        self.comms.insert(comm, b);
        Ok(())
    }

    /// Remove communicator `comm`'s buffer (flushed by the caller): (base, size) as `detach`.
    pub fn comm_detach(&mut self, comm: usize) -> Result<(*mut u8, usize)> {
        match self.comms.remove(&comm) {
            Some(mut b) => b.detach(),
            None => err(
                ErrorClass::Buffer,
                "the communicator has no buffer attached",
            ),
        }
    }

    /// The indices of the communicators with a buffer of their own.
    pub fn comm_indices(&self) -> Vec<usize> {
        self.comms.keys().copied().collect()
    }

    /// MPI_Buffer_iflush / MPI_Comm_iflush_buffer: a request that completes once every
    /// message buffered so far has left this buffer.
    pub fn iflush(&mut self, pml: &mut Pml) -> ReqId {
        let req = pml.pending_request();
        let (busy, upto) = (self.busy.clone(), self.seq);
        let watch = move |pml: &mut Pml| {
            let Ok(mut b) = busy.try_borrow_mut() else {
                return false;
            };
            reap_busy(&mut b, pml);
            if b.iter().any(|e| e.2 < upto) {
                return false;
            }
            let st = Status {
                source: crate::pml::ANY_SOURCE,
                tag: crate::pml::ANY_TAG,
                ..Status::default()
            };
            pml.complete_request(req, st);
            true
        };
        if !watch(pml) {
            pml.watch(Box::new(watch));
        }
        req
    }

    /// Reserve room for `len` bytes and copy them there; returns the slot index and the copy.
    ///
    /// # Safety
    /// `buf` holds `len` readable bytes.
    pub unsafe fn reserve(&mut self, buf: *const u8, len: usize) -> Result<(usize, *const u8)> {
        let need = len + BSEND_OVERHEAD;
        let (i, slot) = match self.attached {
            Attached::None => {
                return err(
                    ErrorClass::Buffer,
                    "buffered send without an attached buffer (MPI_Buffer_attach)",
                )
            }
            Attached::Automatic => {
                let data = if len == 0 {
                    Vec::new()
                } else {
                    // SAFETY: the caller's contract: `buf` holds `len` readable bytes.
                    unsafe { std::slice::from_raw_parts(buf, len) }.to_vec()
                };
                let slot = Slot {
                    off: 0,
                    size: 0,
                    owned: Some(data),
                };
                (self.busy.borrow().len(), slot)
            }
            Attached::User(base, size) => {
                let mut end = 0;
                let mut at = None;
                for (i, (s, _, _)) in self.busy.borrow().iter().enumerate() {
                    if s.off - end >= need {
                        at = Some(i);
                        break;
                    }
                    end = s.off + s.size;
                }
                let i = match at {
                    Some(i) => i,
                    None if size - end >= need => self.busy.borrow().len(),
                    None => {
                        return err(
                            ErrorClass::Buffer,
                            format!(
                                "a buffered message of {len} bytes needs {need} bytes (with MPI_BSEND_OVERHEAD) but the attached buffer of {size} bytes has no such room left ({} messages in flight)",
                                self.busy.borrow().len()
                            ),
                        )
                    }
                };
                if len > 0 {
                    // SAFETY: [end, end + need) lies inside the attached buffer (checked above)
                    // and no other message uses it; `buf` holds `len` bytes (caller).
                    unsafe { std::ptr::copy_nonoverlapping(buf, base.add(end), len) };
                }
                let slot = Slot {
                    off: end,
                    size: need,
                    owned: None,
                };
                (i, slot)
            }
        };
        let ptr = match (&slot.owned, &self.attached) {
            (Some(v), _) => v.as_ptr(),
            // SAFETY: inside the attached buffer, as above.
            (None, Attached::User(base, _)) => unsafe { base.add(slot.off) }.cast_const(),
            (None, _) => unreachable!("a user slot exists only with a user buffer"),
        };
        self.busy.borrow_mut().insert(i, (slot, None, self.seq));
        self.seq += 1;
        Ok((i, ptr))
    }

    /// The send from slot `i` is pending as `req`.
    pub fn track(&mut self, i: usize, req: ReqId) {
        self.busy.borrow_mut()[i].1 = Some(req);
    }

    /// The send from slot `i` finished at once.
    pub fn release(&mut self, i: usize) {
        self.busy.borrow_mut().remove(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_reuses_released_space() {
        let mut mem = vec![0u8; 2 * (100 + BSEND_OVERHEAD) + 10];
        let mut b = Bsend::default();
        b.attach(mem.as_mut_ptr(), mem.len(), false).unwrap();
        let data = [7u8; 100];
        // SAFETY: `data` holds 100 readable bytes.
        let (i0, p0) = unsafe { b.reserve(data.as_ptr(), 100) }.unwrap();
        // SAFETY: as above.
        let (_, p1) = unsafe { b.reserve(data.as_ptr(), 100) }.unwrap();
        assert_eq!(p1 as usize - p0 as usize, 100 + BSEND_OVERHEAD);
        // SAFETY: as above.
        let full = unsafe { b.reserve(data.as_ptr(), 1) }.unwrap_err();
        assert_eq!(full.class, ErrorClass::Buffer);
        b.release(i0);
        // SAFETY: as above.
        let (_, p2) = unsafe { b.reserve(data.as_ptr(), 50) }.unwrap();
        assert_eq!(p2, p0, "the released slot is reused first");
        assert_eq!(mem[..100], data);
        b.release(0);
        b.release(0);
        assert_eq!(b.pending(), 0);
        assert_eq!(b.detach().unwrap().1, mem.len());
    }
}
