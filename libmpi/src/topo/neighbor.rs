//! Neighbour collectives as schedules: one round of receives from the in-neighbours and sends
//! to the out-neighbours, on the communicator's collective context like every collective.
//!
//! Block i of the receive buffer comes from in-neighbour i, block j of the send buffer goes to
//! out-neighbour j, in the order the topology lists them (cartesian: per dimension, the -1 then
//! the +1 neighbour). A pair of ranks may be neighbours more than once (a periodic dimension of
//! extent 1 or 2, repeated graph edges); their messages share one tag, so they match in posting
//! order, and the order below makes each send meet the block meant for it.

use super::Topology;
use crate::coll::Builder;
use crate::datatype::Msg;
use crate::runtime::PROC_NULL;

/// Transfers in posting order: (block, peer).
pub type Transfers = Vec<(usize, i32)>;

/// The transfers of a neighbour collective at one rank.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub recvs: Transfers,
    pub sends: Transfers,
}

/// The plan of `rank`. PROC_NULL neighbours (off a non-periodic edge) move nothing: their
/// receive blocks are left untouched.
pub fn plan(t: &Topology, rank: i32) -> Plan {
    let (recvs, sends): (Transfers, Transfers) = match t {
        Topology::Cart(c) => {
            let nb = c.neighbors(rank);
            // What I send towards -1 in dimension d arrives at that rank from its +1 side, so
            // each dimension receives its +1 block first and sends its -1 block first: when both
            // neighbours are the same rank, the k-th send meets the k-th receive.
            let recvs = (0..c.ndims())
                .flat_map(|d| [(2 * d + 1, nb[2 * d + 1]), (2 * d, nb[2 * d])])
                .collect();
            (recvs, nb.iter().copied().enumerate().collect())
        }
        Topology::Graph(g) => {
            let nb: Transfers = g.neighbors(rank).iter().copied().enumerate().collect();
            (nb.clone(), nb)
        }
        Topology::DistGraph(d) => (
            d.sources.iter().copied().enumerate().collect(),
            d.destinations.iter().copied().enumerate().collect(),
        ),
    };
    let real = |v: Transfers| v.into_iter().filter(|p| p.1 != PROC_NULL).collect();
    Plan {
        recvs: real(recvs),
        sends: real(sends),
    }
}

/// Add the neighbour exchange to `b`: `recv(i)` is the message block i is received into,
/// `send(j)` the one block j is sent from.
pub fn build(
    b: &mut Builder,
    t: &Topology,
    mut recv: impl FnMut(usize) -> Msg,
    mut send: impl FnMut(usize) -> Msg,
) {
    let p = plan(t, b.rank());
    for (i, peer) in p.recvs {
        b.recv_msg(recv(i), peer);
    }
    for (j, peer) in p.sends {
        b.send_msg(send(j), peer);
    }
    b.round();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::Cart;

    #[test]
    fn cart_order() {
        // 1 x 2 periodic: both neighbours in dimension 1 are the other rank.
        let t = Topology::Cart(Cart::new(&[1, 2], &[false, true], 2).unwrap());
        let p = plan(&t, 0);
        assert_eq!(p.sends, vec![(2, 1), (3, 1)]);
        assert_eq!(p.recvs, vec![(3, 1), (2, 1)]);
    }
}
