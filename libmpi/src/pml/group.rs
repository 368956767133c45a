//! Many operations behind one request (a partitioned send's or receive's run): the request
//! completes once `expected` parts have been added and all of them have completed. Parts are
//! added as they start (a partitioned send's partitions as MPI_Pready marks them), each under
//! an index, and whether index `i` is done is kept after its part request is gone (MPI_Parrived).

use super::{Pml, ReqId, Started, Status};

/// Deferred work of an upper layer, run at every progress call until it returns true.
pub type Watcher = Box<dyn FnMut(&mut Pml) -> bool>;

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
    /// have been added (`group_add`) and completed; at once when `expected` is 0. With
    /// `expected` None the count comes later (`group_expect`).
    pub fn group(&mut self, expected: Option<usize>, status: Status) -> ReqId {
        let req = self.pending_request();
        if expected == Some(0) {
            self.complete_request(req, status);
            return req;
        }
        self.groups.push(Group {
            req,
            expected: usize::MAX,
            parts: Vec::new(),
            done: Vec::new(),
            ndone: 0,
            status,
        });
        if let Some(n) = expected {
            self.group_expect(req, n);
        }
        req
    }

    /// Set how many parts `group` (made with None) waits for.
    pub fn group_expect(&mut self, group: ReqId, expected: usize) {
        if let Some(g) = self.groups.iter_mut().find(|g| g.req == group) {
            g.expected = expected;
            g.done.resize(expected, false);
        }
        self.progress_groups();
    }

    /// Complete `group` at once with error class `error` (its parts go on unobserved).
    pub fn group_fail(&mut self, group: ReqId, error: i32) {
        if let Some(i) = self.groups.iter().position(|g| g.req == group) {
            let mut g = self.groups.swap_remove(i);
            g.status.error = error;
            for (_, part) in g.parts {
                self.free(part);
            }
            self.complete_request(g.req, g.status);
        }
    }

    /// Run `f` at every progress call until it returns true (an upper layer's deferred work
    /// that needs only the pml, e.g. a partitioned send waiting for its receiver's handshake).
    pub fn watch(&mut self, f: Watcher) {
        self.watchers.push(f);
    }

    /// Run the watchers; returns how many finished.
    pub(super) fn progress_watchers(&mut self) -> usize {
        let mut ws = std::mem::take(&mut self.watchers);
        let before = ws.len();
        ws.retain_mut(|f| !f(self));
        let done = before - ws.len();
        // Watchers may add watchers.
        ws.append(&mut self.watchers);
        self.watchers = ws;
        done
    }

    /// Add part `index` (its operation just started) to `group`.
    pub fn group_add(&mut self, group: ReqId, index: usize, s: Started) {
        let part = self.request_for(s);
        if let Some(g) = self.groups.iter_mut().find(|g| g.req == group) {
            g.parts.push((index, part));
        }
        // Retired at the next progress call (checking here would make a run of n parts
        // cost n^2).
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
                if index < g.done.len() && self.is_complete(part) {
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
