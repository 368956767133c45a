//! Many operations behind one request (a partitioned send's or receive's run): the request
//! completes once `expected` parts have been added and all of them have completed. Parts are
//! added as they start (a partitioned send's partitions as MPI_Pready marks them), each under
//! an index, and whether index `i` is done is kept after its part request is gone (MPI_Parrived).

use super::{Pml, ReqId, Started, Status};

pub(super) struct Group {
    req: ReqId,
    expected: usize,
    /// Parts in flight: (index, request).
    parts: Vec<(usize, ReqId)>,
    done: Vec<bool>,
    ndone: usize,
    /// The status the request completes with (its error: the first part's error).
    status: Status,
}

impl Pml {
    /// A request that completes with `status` once `expected` parts, indexed `0..expected`,
    /// have been added (`group_add`) and completed; at once when `expected` is 0.
    pub fn group(&mut self, expected: usize, status: Status) -> ReqId {
        let req = self.pending_request();
        if expected == 0 {
            self.complete_request(req, status);
            return req;
        }
        self.groups.push(Group {
            req,
            expected,
            parts: Vec::new(),
            done: vec![false; expected],
            ndone: 0,
            status,
        });
        req
    }

    /// Add part `index` (its operation just started) to `group`.
    pub fn group_add(&mut self, group: ReqId, index: usize, s: Started) {
        let part = self.request_for(s);
        if let Some(g) = self.groups.iter_mut().find(|g| g.req == group) {
            g.parts.push((index, part));
        }
        self.progress_groups();
    }

    /// Whether part `index` of `group` has completed (a group no longer in flight: yes).
    pub fn group_part_done(&self, group: ReqId, index: usize) -> bool {
        match self.groups.iter().find(|g| g.req == group) {
            Some(g) => g.done.get(index).copied().unwrap_or(false),
            None => true,
        }
    }

    /// Retire the completed parts; complete the groups that are whole. Returns how many did.
    pub(super) fn progress_groups(&mut self) -> usize {
        let mut groups = std::mem::take(&mut self.groups);
        let before = groups.len();
        groups.retain_mut(|g| {
            let mut i = 0;
            while i < g.parts.len() {
                let (index, part) = g.parts[i];
                if self.is_complete(part) {
                    let st = self.take(part).unwrap_or_default();
                    if st.error != 0 && g.status.error == 0 {
                        g.status.error = st.error;
                    }
                    if !g.done[index] {
                        g.done[index] = true;
                        g.ndone += 1;
                    }
                    g.parts.swap_remove(i);
                } else {
                    i += 1;
                }
            }
            if g.ndone < g.expected {
                return true;
            }
            self.complete_request(g.req, g.status);
            false
        });
        let done = before - groups.len();
        // Nothing here starts a group, so the list is still empty.
        debug_assert!(self.groups.is_empty());
        self.groups = groups;
        done
    }
}
