//! Two operations behind one request: MPI_Isendrecv and MPI_Isendrecv_replace. The request
//! completes, with the receive's status, once both the send and the receive have; every
//! `progress` call checks the pairs in flight.

use super::{Pml, ReqId, Started, Status};

pub(super) struct Pair {
    req: ReqId,
    send: ReqId,
    recv: ReqId,
    /// Memory the send reads from (MPI_Isendrecv_replace's copy of the outgoing data), dropped
    /// when the pair completes.
    _keep: Option<Vec<u8>>,
}

impl Pml {
    /// A request completing when `send` and `recv` both have: the receive's status, or the
    /// send's error when the receive has none. `keep` lives until then.
    pub fn pair(&mut self, send: Started, recv: Started, keep: Option<Vec<u8>>) -> ReqId {
        let send = self.request_for(send);
        let recv = self.request_for(recv);
        let req = self.pending_request();
        self.pairs.push(Pair {
            req,
            send,
            recv,
            _keep: keep,
        });
        self.progress_pairs();
        req
    }

    /// Complete the pairs whose two operations are done; returns how many.
    pub(super) fn progress_pairs(&mut self) -> usize {
        let mut pairs = std::mem::take(&mut self.pairs);
        let before = pairs.len();
        pairs.retain(|p| {
            if !(self.is_complete(p.send) && self.is_complete(p.recv)) {
                return true;
            }
            let sent = self.take(p.send).unwrap_or_default();
            let mut st: Status = self.take(p.recv).unwrap_or_default();
            if st.error == 0 {
                st.error = sent.error;
            }
            self.complete_request(p.req, st);
            false
        });
        let done = before - pairs.len();
        // Nothing here starts a pair, so the list is still empty.
        debug_assert!(self.pairs.is_empty());
        self.pairs = pairs;
        done
    }
}
