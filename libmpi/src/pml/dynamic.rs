//! Peers that join after MPI_Init (dynamic processes, `crate::dpm`): a transport and endpoints
//! appended to the pml's tables. Their "world ranks" are indices past this job's world, local to
//! this process (another process may number the same peer differently).

use super::{Endpoint, Pml};
use crate::btl::Btl;

impl Pml {
    /// Adds a transport; returns its index.
    pub fn add_btl(&mut self, mut btl: Box<dyn Btl>) -> usize {
        self.placing.push(super::place::enable_placement(&mut *btl));
        self.btls.push(btl);
        self.st.peer_world.push(Vec::new());
        self.btls.len() - 1
    }

    /// Adds an endpoint reached as `peer` of transport `btl`; returns its (extended) world rank.
    pub fn add_endpoint(&mut self, btl: usize, peer: usize, eager_limit: usize) -> usize {
        let st = &mut self.st;
        let world = st.endpoints.len();
        st.endpoints.push(Endpoint { btl, peer });
        let v = &mut st.peer_world[btl];
        if v.len() <= peer {
            v.resize(peer + 1, usize::MAX);
        }
        v[peer] = world;
        let b = &self.btls[btl];
        st.flow.push(super::Flow::new(&**b, peer, eager_limit));
        st.streams.push(None);
        st.match_placing.push(None);
        st.place_scratch.push(Vec::new());
        st.sendq.push(Default::default());
        st.rndv_out.push(0);
        world
    }
}
