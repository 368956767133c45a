//! Hierarchical collectives: when a communicator's ranks sit in several L3 domains (mpirun's
//! placement, `RMPI_LOCALITY_ALL`), small bcast, reduce, allreduce and barrier run a tree inside
//! each domain and another between the domains' leaders, so a message crosses between domains
//! (sockets, chiplets: 3-7x the cost of a transfer inside one) once per domain instead of once per
//! rank on the flat tree's edges; allgather gathers each domain's blocks to its leader, exchanges
//! them between leaders and broadcasts them inside the domain, so each block crosses to each
//! other domain once. Reductions go this way only for commutative ops (a domain's ranks need not
//! be contiguous). `coll_hier=0` turns the automatic choice off; a forced
//! `coll_tuned_*_algorithm` still gets it (`domains`).
//!
//! A leader is the domain's lowest rank, or the root in the root's domain.

use std::sync::OnceLock;

use super::schedule::{At, Buf, Builder};
use crate::comm::Comm;

/// The communicator's ranks by domain, each list ascending, the lists ordered by their first
/// rank, and the calling rank's list.
pub struct Groups {
    lists: Vec<Vec<i32>>,
    mine: usize,
}

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("RMPI_MCA_coll_hier").map_or(true, |v| v.trim() != "0"))
}

/// The domains for the automatic choice: `domains`, unless `coll_hier=0`.
pub fn groups(b: &Builder) -> Option<Groups> {
    groups_of(b.comm())
}

/// `groups` of a communicator.
pub fn groups_of(comm: &Comm) -> Option<Groups> {
    if !enabled() {
        return None;
    }
    domains_of(comm)
}

/// The domains of the builder's communicator, when a hierarchy differs from the flat
/// algorithms: two domains or more, and one of them with two ranks or more.
pub fn domains(b: &Builder) -> Option<Groups> {
    domains_of(b.comm())
}

fn domains_of(comm: &Comm) -> Option<Groups> {
    if comm.is_inter() || comm.size() < 3 {
        return None;
    }
    let table = crate::locality::l3_domains()?;
    let mut keys: Vec<u32> = Vec::new();
    let mut lists: Vec<Vec<i32>> = Vec::new();
    for (rank, &world) in comm.group.iter().enumerate() {
        let key = *table.get(usize::try_from(world).ok()?)?;
        match keys.iter().position(|&k| k == key) {
            Some(i) => lists[i].push(rank as i32),
            None => {
                keys.push(key);
                lists.push(vec![rank as i32]);
            }
        }
    }
    if lists.len() < 2 || lists.len() == comm.size() as usize {
        return None;
    }
    let me = comm.rank;
    let mine = lists.iter().position(|l| l.contains(&me))?;
    Some(Groups { lists, mine })
}

impl Groups {
    /// Each domain's leader: the root in its own domain, else the lowest rank.
    fn leaders(&self, root: i32) -> Vec<i32> {
        self.lists
            .iter()
            .map(|l| if l.contains(&root) { root } else { l[0] })
            .collect()
    }
}

fn pos(list: &[i32], r: i32) -> usize {
    list.iter()
        .position(|&x| x == r)
        .expect("a member of the list")
}

/// Binomial broadcast of `len` bytes over `list` from `list[root]`; `sync` sends even when empty.
fn tree_bcast(b: &mut Builder, at: At, len: usize, list: &[i32], root: usize, sync: bool) {
    let m = list.len();
    let Some(me) = list.iter().position(|&x| x == b.rank()) else {
        return;
    };
    let v = (me + m - root) % m;
    let peer = |w: usize| list[(w + root) % m];
    let mut mask = m.next_power_of_two();
    if v != 0 {
        let low = v & v.wrapping_neg();
        if sync {
            b.recv0(at, len, peer(v - low));
        } else {
            b.recv(at, len, peer(v - low));
        }
        b.round();
        mask = low;
    }
    mask >>= 1;
    while mask > 0 {
        if v + mask < m {
            if sync {
                b.send0(at, len, peer(v + mask));
            } else {
                b.send(at, len, peer(v + mask));
            }
        }
        mask >>= 1;
    }
    b.round();
}

/// Binomial reduction (commutative op) of `count` elements over `list` towards `list[root]`;
/// returns where this rank's partial result is (the whole result at the root).
fn tree_reduce(b: &mut Builder, input: At, count: usize, list: &[i32], root: usize) -> At {
    let m = list.len();
    let len = count * b.elem();
    let me = pos(list, b.rank());
    let v = (me + m - root) % m;
    let peer = |w: usize| list[(w + root) % m];
    let mut acc = input;
    let mut spare: [Option<At>; 2] = [None, None];
    let mut which = 0;
    let mut mask = 1;
    while mask < m && v & mask == 0 {
        if v + mask < m {
            let into = *spare[which].get_or_insert_with(|| b.tmp(len));
            which ^= 1;
            b.recv(into, len, peer(v + mask));
            b.round();
            b.reduce(acc, into, count);
            acc = into;
        }
        mask <<= 1;
    }
    if v != 0 {
        b.send(acc, len, peer(v - mask));
        b.round();
    }
    acc
}

pub fn bcast(b: &mut Builder, g: &Groups, buf: At, len: usize, root: i32) {
    let leaders = g.leaders(root);
    if leaders.contains(&b.rank()) {
        tree_bcast(b, buf, len, &leaders, pos(&leaders, root), false);
    }
    let list = &g.lists[g.mine];
    tree_bcast(b, buf, len, list, pos(list, leaders[g.mine]), false);
}

pub fn barrier(b: &mut Builder, g: &Groups) {
    let z = At(Buf::User(std::ptr::null_mut()), 0);
    let leaders = g.leaders(g.lists[0][0]);
    let list = &g.lists[g.mine];
    let lead = pos(list, leaders[g.mine]);
    // Everyone in the domain has arrived (a gather of empty messages up the tree) ...
    gather0(b, list, lead);
    if leaders.contains(&b.rank()) {
        // ... every domain has ...
        gather0(b, &leaders, 0);
        tree_bcast(b, z, 0, &leaders, 0, true);
    }
    // ... and the domain is released.
    tree_bcast(b, z, 0, list, lead, true);
}

/// Empty messages up a binomial tree over `list` towards `list[root]`.
fn gather0(b: &mut Builder, list: &[i32], root: usize) {
    let z = At(Buf::User(std::ptr::null_mut()), 0);
    let m = list.len();
    let v = (pos(list, b.rank()) + m - root) % m;
    let peer = |w: usize| list[(w + root) % m];
    let mut mask = 1;
    while mask < m && v & mask == 0 {
        if v + mask < m {
            b.recv0(z, 0, peer(v + mask));
        }
        mask <<= 1;
    }
    b.round();
    if v != 0 {
        b.send0(z, 0, peer(v - mask));
        b.round();
    }
}

/// Commutative reduction to `root`: inside each domain to its leader, then between leaders.
pub fn reduce(b: &mut Builder, g: &Groups, send: Option<At>, recv: At, count: usize, root: i32) {
    let input = send.unwrap_or(recv);
    let leaders = g.leaders(root);
    let list = &g.lists[g.mine];
    let acc = tree_reduce(b, input, count, list, pos(list, leaders[g.mine]));
    if leaders.contains(&b.rank()) {
        let res = tree_reduce(b, acc, count, &leaders, pos(&leaders, root));
        if b.rank() == root && res != recv {
            b.copy(res, recv, count * b.elem());
            b.round();
        }
    }
}

/// Commutative allreduce: reduce to the first domain's leader, then broadcast back down.
pub fn allreduce(b: &mut Builder, g: &Groups, send: Option<At>, recv: At, count: usize) {
    let len = count * b.elem();
    let root = g.lists[0][0];
    reduce(b, g, send, recv, count, root);
    bcast(b, g, recv, len, root);
}

/// Allgather(v), the caller's own block already in `recv`: each domain's blocks gathered to its
/// leader, exchanged between leaders, broadcast inside the domain. Blocks travel packed domain
/// by domain in a temporary (a domain's ranks need not be contiguous, nor blocks in rank order)
/// and land at their ranks' displacements at the end.
pub fn allgatherv(b: &mut Builder, g: &Groups, recv: At, lens: &[usize], displs: &[usize]) {
    let n = lens.len();
    let mut packed = vec![0; n];
    let mut starts = Vec::with_capacity(g.lists.len() + 1);
    let mut total = 0;
    for list in &g.lists {
        starts.push(total);
        for &r in list {
            packed[r as usize] = total;
            total += lens[r as usize];
        }
    }
    starts.push(total);
    if total == 0 {
        return;
    }
    let t = b.tmp(total);
    let me = b.rank();
    let mine = me as usize;
    let leaders = g.leaders(g.lists[0][0]);
    let list = &g.lists[g.mine];
    let lead = leaders[g.mine];
    b.copy(recv.add(displs[mine]), t.add(packed[mine]), lens[mine]);
    b.round();
    // Linear gather to the leader: a domain is a few ranks sharing one cache.
    if me == lead {
        for &r in list.iter().filter(|&&r| r != me) {
            b.recv(t.add(packed[r as usize]), lens[r as usize], r);
        }
    } else {
        b.send(t.add(packed[mine]), lens[mine], lead);
    }
    b.round();
    if me == lead {
        let span = |d: usize| (t.add(starts[d]), starts[d + 1] - starts[d]);
        for (d, &l) in leaders.iter().enumerate().filter(|&(_, &l)| l != me) {
            let (at, len) = span(d);
            b.recv(at, len, l);
            let (at, len) = span(g.mine);
            b.send(at, len, l);
        }
        b.round();
    }
    tree_bcast(b, t, total, list, pos(list, lead), false);
    for r in (0..n).filter(|&r| r != mine) {
        b.copy(t.add(packed[r]), recv.add(displs[r]), lens[r]);
    }
    b.round();
}
