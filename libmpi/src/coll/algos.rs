//! The collective algorithms, each adding rounds to a schedule `Builder`. Lengths and
//! displacements are in bytes (the caller turned `(count, datatype)` into bytes); reductions
//! count elements of the schedule's datatype. `None` as a send buffer means MPI_IN_PLACE.
//!
//! Choices, by message size and rank count: binomial trees for small bcast/reduce, scatter +
//! ring allgather for large bcast, recursive doubling for small allreduce (with the
//! non-power-of-two fix-up), Rabenseifner or ring reduce-scatter + allgather for large
//! commutative reductions, Bruck or ring allgather, pairwise alltoall. Every reduction order is fixed by the
//! algorithm and rank count, never by timing, so results are reproducible and identical on all
//! ranks; non-commutative ops are always applied in rank order.
//!
//! `coll_tuned_<collective>_algorithm` (`tune`) can force one of them for bcast, reduce,
//! allreduce, barrier and allgather(v); a forced one that cannot apply to the call (its op, its
//! counts, one L3 domain) leaves the automatic choice, silently: every rank decides alike.

use std::ptr::null_mut;

use super::hier;
use super::schedule::{At, Buf, Builder};
use super::tune::{self, Tuned};

/// At or above these many bytes the large-message algorithms are used.
pub const BCAST_LARGE: usize = 256 * 1024;
pub const REDUCE_LARGE: usize = 64 * 1024;
/// From here MPI_Reduce uses ring reduce-scatter + gather instead of the binomial tree. The
/// tree wins at every size OSU 5.3 measures (16-core machine, probe 218-264 ns, 2 rounds,
/// forced algorithms: 64 KiB-1 MiB in 0.35-0.5x the ring's time at 8 and 16 ranks, e.g. 1 MiB
/// 220 vs 437 us at 8 ranks; Open MPI 961): each hop is one single-copy rendezvous and the
/// tree's log2(n) hops beat the ring's 2(n-1) steps of small blocks.
pub const REDUCE_RING_MIN: usize = 8 << 20;
/// Below this many bytes per rank, alltoall posts every transfer in one round.
pub const ALLTOALL_ONE_ROUND: usize = 256 * 1024;
/// Below this total, allgather exchanges with everyone in one round instead of a ring.
pub const ALLGATHER_ONE_ROUND: usize = 32 * 1024;
/// Below this total, allgather goes through the L3 domains when there are several: its last
/// step broadcasts the whole total with a binomial tree inside each domain, which loses to the
/// ring where bcast switches to scatter + allgather.
pub const ALLGATHER_HIER: usize = BCAST_LARGE;

fn md(a: i32, n: i32) -> i32 {
    a.rem_euclid(n)
}

/// `count` elements split into `n` blocks: (element offset, element count) of block `i`.
fn block(count: usize, n: usize, i: usize) -> (usize, usize) {
    let (q, r) = (count / n, count % n);
    (i * q + i.min(r), q + usize::from(i < r))
}

/// Barrier: through the L3 domains where there are several, else dissemination.
pub fn barrier(b: &mut Builder) {
    let g = match tune::forced(Tuned::Barrier) {
        tune::BARRIER_DISSEMINATION => None,
        tune::BARRIER_HIER => hier::domains(b),
        _ => hier::groups(b),
    };
    if let Some(g) = g {
        return hier::barrier(b, &g);
    }
    dissemination(b);
}

/// Whether the blocking barrier on `comm` must run `barrier`'s schedule: a forced algorithm,
/// or domains to go through. Otherwise it keeps its own lighter dissemination (runtime.rs).
pub fn barrier_needs_schedule(comm: &crate::comm::Comm) -> bool {
    tune::forced(Tuned::Barrier) != 0 || hier::groups_of(comm).is_some()
}

/// Dissemination: ceil(log2 n) rounds of empty messages.
fn dissemination(b: &mut Builder) {
    let (n, me) = (b.size(), b.rank());
    let z = At(Buf::User(null_mut()), 0);
    let mut d = 1;
    while d < n {
        b.send0(z, 0, (me + d) % n);
        b.recv0(z, 0, md(me - d, n));
        b.round();
        d *= 2;
    }
}

pub fn bcast(b: &mut Builder, buf: At, len: usize, root: i32) {
    let n = b.size();
    if len == 0 || n == 1 {
        return;
    }
    match tune::forced(Tuned::Bcast) {
        tune::BCAST_BINOMIAL => return binomial_bcast(b, buf, len, root),
        tune::BCAST_SCATTER_ALLGATHER => return scatter_allgather_bcast(b, buf, len, root),
        tune::BCAST_HIER => {
            if let Some(g) = hier::domains(b) {
                return hier::bcast(b, &g, buf, len, root);
            }
        }
        _ => {}
    }
    if len < BCAST_LARGE {
        if let Some(g) = hier::groups(b) {
            return hier::bcast(b, &g, buf, len, root);
        }
    }
    // Below 8 ranks the tree's log2(n) rounds beat the 1 + (n-1) of scatter + allgather
    // (MPICH's rule too; measured here at 4 ranks).
    if len >= BCAST_LARGE && n >= 8 {
        scatter_allgather_bcast(b, buf, len, root);
    } else {
        binomial_bcast(b, buf, len, root);
    }
}

/// Scatter the blocks from the root, then a ring allgather (van de Geijn).
fn scatter_allgather_bcast(b: &mut Builder, buf: At, len: usize, root: i32) {
    let (n, me) = (b.size(), b.rank());
    let vr = md(me - root, n);
    let nn = n as usize;
    let off = |v: i32| (v as usize) * len / nn;
    let size = |v: i32| off(v + 1) - off(v);
    if vr == 0 {
        for v in 1..n {
            b.send(buf.add(off(v)), size(v), md(v + root, n));
        }
    } else {
        b.recv(buf.add(off(vr)), size(vr), root);
    }
    b.round();
    let (next, prev) = (md(vr + 1, n), md(vr - 1, n));
    for s in 0..n - 1 {
        // The root has every block: nobody sends to it.
        if next != 0 {
            let k = md(vr - s, n);
            b.send(buf.add(off(k)), size(k), md(next + root, n));
        }
        if vr != 0 {
            let k = md(vr - s - 1, n);
            b.recv(buf.add(off(k)), size(k), md(prev + root, n));
        }
        b.round();
    }
}

/// Binomial tree over ranks relative to the root.
fn binomial_bcast(b: &mut Builder, buf: At, len: usize, root: i32) {
    let (n, me) = (b.size(), b.rank());
    let vr = md(me - root, n);
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            b.recv(buf, len, md(vr - mask + root, n));
            b.round();
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            b.send(buf, len, md(vr + mask + root, n));
        }
        mask >>= 1;
    }
    b.round();
}

/// Ring reduce-scatter over blocks (element offsets `off`, counts `cnt`) of `acc`: afterwards
/// this rank's block `rank` of `acc` holds the reduction of everyone's. Commutative ops only.
fn ring_reduce_scatter(b: &mut Builder, acc: At, off: &[usize], cnt: &[usize]) {
    let (n, me, e) = (b.size(), b.rank(), b.elem());
    let (next, prev) = (md(me + 1, n), md(me - 1, n));
    let t = b.tmp(cnt.iter().max().copied().unwrap_or(0) * e);
    let at = |k: i32| acc.add(off[k as usize] * e);
    for s in 0..n - 1 {
        if s > 0 {
            let k = md(me - s - 1, n);
            b.reduce(t, at(k), cnt[k as usize]);
        }
        let k = md(me - s - 1, n);
        b.send(at(k), cnt[k as usize] * e, next);
        let k = md(me - s - 2, n);
        b.recv(t, cnt[k as usize] * e, prev);
        b.round();
    }
    b.reduce(t, at(me), cnt[me as usize]);
    b.round();
}

/// Ring allgather: block `i` (at byte offset `off[i]`, `len[i]` bytes) of `buf` starts on rank i.
fn ring_allgather(b: &mut Builder, buf: At, off: &[usize], len: &[usize]) {
    let (n, me) = (b.size(), b.rank());
    let (next, prev) = (md(me + 1, n), md(me - 1, n));
    for s in 0..n - 1 {
        let k = md(me - s, n) as usize;
        b.send(buf.add(off[k]), len[k], next);
        let k = md(me - s - 1, n) as usize;
        b.recv(buf.add(off[k]), len[k], prev);
        b.round();
    }
}

/// Element blocks of a `count`-element vector, one per rank.
fn blocks(count: usize, n: usize) -> (Vec<usize>, Vec<usize>) {
    (0..n).map(|i| block(count, n, i)).unzip()
}

pub fn reduce(b: &mut Builder, send: Option<At>, recv: At, count: usize, root: i32) {
    let (n, e) = (b.size(), b.elem());
    let len = count * e;
    let input = send.unwrap_or(recv);
    if n == 1 {
        if send.is_some() {
            b.copy(input, recv, len);
        }
        return;
    }
    if count == 0 {
        return;
    }
    let comm = b.commutative();
    // The ring splits the vector into one block per rank.
    let ring_ok = comm && count >= n as usize;
    match tune::forced(Tuned::Reduce) {
        tune::REDUCE_BINOMIAL => return binomial_reduce(b, input, recv, count, root),
        tune::REDUCE_SCATTER_GATHER if ring_ok => return ring_reduce(b, input, recv, count, root),
        tune::REDUCE_HIER if comm => {
            if let Some(g) = hier::domains(b) {
                return hier::reduce(b, &g, send, recv, count, root);
            }
        }
        _ => {}
    }
    if comm && len < REDUCE_LARGE {
        if let Some(g) = hier::groups(b) {
            return hier::reduce(b, &g, send, recv, count, root);
        }
    }
    if ring_ok && len >= REDUCE_RING_MIN {
        ring_reduce(b, input, recv, count, root);
    } else {
        binomial_reduce(b, input, recv, count, root);
    }
}

/// Ring reduce-scatter, then every block to the root (commutative ops, count >= n).
fn ring_reduce(b: &mut Builder, input: At, recv: At, count: usize, root: i32) {
    let (n, me, e) = (b.size(), b.rank(), b.elem());
    let len = count * e;
    let acc = b.tmp(len);
    b.copy(input, acc, len);
    let (off, cnt) = blocks(count, n as usize);
    ring_reduce_scatter(b, acc, &off, &cnt);
    for i in 0..n {
        let (o, c) = (off[i as usize] * e, cnt[i as usize] * e);
        if me == root && i == me {
            b.copy(acc.add(o), recv.add(o), c);
        } else if me == root {
            b.recv(recv.add(o), c, i);
        } else if i == me {
            b.send(acc.add(o), c, root);
        }
    }
    b.round();
}

/// Binomial tree. Non-commutative ops reduce towards rank 0, where relative rank order is rank
/// order, then hand the result to the root.
fn binomial_reduce(b: &mut Builder, input: At, recv: At, count: usize, root: i32) {
    let (n, me, e) = (b.size(), b.rank(), b.elem());
    let len = count * e;
    let troot = if b.commutative() { root } else { 0 };
    let vr = md(me - troot, n);
    let mut acc = input;
    let mut spare: [Option<At>; 2] = [None, None];
    let mut which = 0;
    let mut mask = 1;
    while mask < n && vr & mask == 0 {
        if vr + mask < n {
            // The child's subtree holds higher relative ranks: into = acc op into.
            let into = *spare[which].get_or_insert_with(|| b.tmp(len));
            which ^= 1;
            b.recv(into, len, md(vr + mask + troot, n));
            b.round();
            b.reduce(acc, into, count);
            acc = into;
        }
        mask <<= 1;
    }
    if vr != 0 {
        b.send(acc, len, md(vr - mask + troot, n));
    } else if troot == root {
        b.copy(acc, recv, len);
    } else {
        b.send(acc, len, root);
    }
    if me == root && troot != root {
        b.recv(recv, len, troot);
    }
    b.round();
}

pub fn allreduce(b: &mut Builder, send: Option<At>, recv: At, count: usize) {
    let (n, e) = (b.size(), b.elem());
    let len = count * e;
    if let Some(s) = send {
        b.copy(s, recv, len);
    }
    if n == 1 || count == 0 {
        return;
    }
    // recv holds this rank's input from here on.
    let comm = b.commutative();
    // Ring and Rabenseifner split the vector into one block per rank.
    let split_ok = comm && count >= n as usize;
    match tune::forced(Tuned::Allreduce) {
        tune::ALLREDUCE_RECURSIVE_DOUBLING => return recursive_doubling(b, recv, count),
        tune::ALLREDUCE_RING if split_ok => return ring_allreduce(b, recv, count),
        tune::ALLREDUCE_RABENSEIFNER if split_ok => return rabenseifner(b, recv, count),
        tune::ALLREDUCE_HIER if comm => {
            if let Some(g) = hier::domains(b) {
                return hier::allreduce(b, &g, None, recv, count);
            }
        }
        _ => {}
    }
    if comm && len < REDUCE_LARGE {
        if let Some(g) = hier::groups(b) {
            return hier::allreduce(b, &g, None, recv, count);
        }
    }
    // Both move the same data; Rabenseifner takes 2 log2(n) rounds to the ring's 2(n-1), but
    // costs a whole-vector exchange on 2*rem ranks when n is not a power of two.
    let pow2 = n & (n - 1) == 0;
    let rabenseifner_ok = split_ok && ((pow2 && n >= 4) || n > 8);
    // From 8 ranks it wins already where the whole job's data (len x n) reaches
    // REDUCE_LARGE: OSU 5.3 on 16 cores, 8 and 16 ranks, 8-32 KiB in 0.53-0.62x the time of
    // recursive doubling, which moves the whole vector log2(n) times (docs/bench/).
    if rabenseifner_ok && n >= 8 && len.saturating_mul(n as usize) >= REDUCE_LARGE {
        return rabenseifner(b, recv, count);
    }
    if !(split_ok && len >= REDUCE_LARGE) {
        return recursive_doubling(b, recv, count);
    }
    if rabenseifner_ok {
        rabenseifner(b, recv, count);
    } else {
        ring_allreduce(b, recv, count);
    }
}

/// Ring reduce-scatter + ring allgather (commutative ops, count >= n).
fn ring_allreduce(b: &mut Builder, recv: At, count: usize) {
    let (n, e) = (b.size(), b.elem());
    let (off, cnt) = blocks(count, n as usize);
    ring_reduce_scatter(b, recv, &off, &cnt);
    let boff: Vec<usize> = off.iter().map(|o| o * e).collect();
    let blen: Vec<usize> = cnt.iter().map(|c| c * e).collect();
    ring_allgather(b, recv, &boff, &blen);
}

/// The largest power of two not above n, and how many ranks are past it.
fn pof2_rem(n: i32) -> (i32, i32) {
    let pof2 = 1 << (31 - n.leading_zeros());
    (pof2, n - pof2)
}

/// Recursive doubling (any op); the first 2*rem ranks pair up first so a power of two remains.
fn recursive_doubling(b: &mut Builder, recv: At, count: usize) {
    let (n, me, e) = (b.size(), b.rank(), b.elem());
    let len = count * e;
    let (pof2, rem) = pof2_rem(n);
    let t = b.tmp(len);
    let newrank = if me < 2 * rem {
        if me % 2 == 0 {
            b.send(recv, len, me + 1);
            b.round();
            -1
        } else {
            b.recv(t, len, me - 1);
            b.round();
            b.reduce(t, recv, count);
            me / 2
        }
    } else {
        me - rem
    };
    if newrank >= 0 {
        let mut mask = 1;
        while mask < pof2 {
            let nd = newrank ^ mask;
            let dst = if nd < rem { nd * 2 + 1 } else { nd + rem };
            b.send(recv, len, dst);
            b.recv(t, len, dst);
            b.round();
            if dst < me {
                b.reduce(t, recv, count);
            } else {
                b.reduce_rev(t, recv, count);
            }
            mask <<= 1;
        }
    }
    if me < 2 * rem {
        if me % 2 == 1 {
            b.send(recv, len, me - 1);
        } else {
            b.recv(recv, len, me + 1);
        }
    }
    b.round();
}

/// Rabenseifner's allreduce (commutative ops): recursive-halving reduce-scatter, then
/// recursive-doubling allgather, among a power of two of ranks after the usual fix-up.
fn rabenseifner(b: &mut Builder, recv: At, count: usize) {
    let (n, me, e) = (b.size(), b.rank(), b.elem());
    let len = count * e;
    let (pof2, rem) = pof2_rem(n);
    let t = b.tmp(len);
    let newrank = if me < 2 * rem {
        if me % 2 == 0 {
            b.send(recv, len, me + 1);
            b.round();
            -1
        } else {
            b.recv(t, len, me - 1);
            b.round();
            b.reduce(t, recv, count);
            me / 2
        }
    } else {
        me - rem
    };
    let real = |nr: i32| if nr < rem { nr * 2 + 1 } else { nr + rem };
    if newrank >= 0 {
        let p = pof2 as usize;
        let (off, cnt) = blocks(count, p);
        let span = |from: usize, to: usize| cnt[from..to].iter().sum::<usize>();
        let (mut send_idx, mut recv_idx, mut last_idx) = (0usize, 0usize, p);
        let mut mask = 1usize;
        while mask < p {
            let nd = newrank as usize ^ mask;
            let (sc, rc);
            if (newrank as usize) < nd {
                send_idx = recv_idx + p / (mask * 2);
                sc = span(send_idx, last_idx);
                rc = span(recv_idx, send_idx);
            } else {
                recv_idx = send_idx + p / (mask * 2);
                sc = span(send_idx, recv_idx);
                rc = span(recv_idx, last_idx);
            }
            let dst = real(nd as i32);
            b.send(recv.add(off[send_idx] * e), sc * e, dst);
            b.recv(t.add(off[recv_idx] * e), rc * e, dst);
            b.round();
            b.reduce(t.add(off[recv_idx] * e), recv.add(off[recv_idx] * e), rc);
            send_idx = recv_idx;
            mask <<= 1;
            if mask < p {
                last_idx = recv_idx + p / mask;
            }
        }
        mask >>= 1;
        while mask > 0 {
            let nd = newrank as usize ^ mask;
            let (sc, rc);
            if (newrank as usize) < nd {
                if mask != p / 2 {
                    last_idx += p / (mask * 2);
                }
                recv_idx = send_idx + p / (mask * 2);
                sc = span(send_idx, recv_idx);
                rc = span(recv_idx, last_idx);
            } else {
                recv_idx = send_idx - p / (mask * 2);
                sc = span(send_idx, last_idx);
                rc = span(recv_idx, send_idx);
            }
            let dst = real(nd as i32);
            b.round();
            b.send(recv.add(off[send_idx] * e), sc * e, dst);
            b.recv(recv.add(off[recv_idx] * e), rc * e, dst);
            b.round();
            if (newrank as usize) > nd {
                send_idx = recv_idx;
            }
            mask >>= 1;
        }
    }
    if me < 2 * rem {
        if me % 2 == 1 {
            b.send(recv, len, me - 1);
        } else {
            b.recv(recv, len, me + 1);
        }
    }
    b.round();
}

/// Gather(v): block i (`lens[i]` bytes at byte displacement `displs[i]`) of the root's `recv`
/// comes from rank i. `send` is None for MPI_IN_PLACE at the root.
pub fn gatherv(
    b: &mut Builder,
    send: Option<(At, usize)>,
    recv: At,
    lens: &[usize],
    displs: &[usize],
    root: i32,
) {
    let (n, me) = (b.size(), b.rank());
    if me == root {
        for i in 0..n {
            let to = recv.add(displs[i as usize]);
            if i == me {
                if let Some((s, l)) = send {
                    b.copy(s, to, l.min(lens[i as usize]));
                }
            } else {
                b.recv(to, lens[i as usize], i);
            }
        }
    } else if let Some((s, l)) = send {
        b.send(s, l, root);
    }
    b.round();
}

/// Scatter(v): the mirror of `gatherv`; `recv` is None for MPI_IN_PLACE at the root.
pub fn scatterv(
    b: &mut Builder,
    send: At,
    lens: &[usize],
    displs: &[usize],
    recv: Option<(At, usize)>,
    root: i32,
) {
    let (n, me) = (b.size(), b.rank());
    if me == root {
        for i in 0..n {
            let from = send.add(displs[i as usize]);
            if i == me {
                if let Some((r, l)) = recv {
                    b.copy(from, r, l.min(lens[i as usize]));
                }
            } else {
                b.send(from, lens[i as usize], i);
            }
        }
    } else if let Some((r, l)) = recv {
        b.recv(r, l, root);
    }
    b.round();
}

/// Allgather(v) into `recv`; `send` None for MPI_IN_PLACE (own block already in place).
pub fn allgatherv(
    b: &mut Builder,
    send: Option<(At, usize)>,
    recv: At,
    lens: &[usize],
    displs: &[usize],
) {
    let (n, me) = (b.size(), b.rank());
    let mine = me as usize;
    if let Some((s, l)) = send {
        b.copy(s, recv.add(displs[mine]), l.min(lens[mine]));
    }
    if n == 1 {
        return;
    }
    let total: usize = lens.iter().sum();
    let uniform = (0..n as usize).all(|i| lens[i] == lens[0] && displs[i] == i * lens[0]);
    b.round();
    match tune::forced(Tuned::Allgather) {
        tune::ALLGATHER_ALL_AT_ONCE => return all_at_once_allgather(b, recv, lens, displs),
        tune::ALLGATHER_BRUCK if uniform => return bruck_allgather(b, recv, lens[0]),
        tune::ALLGATHER_RING => return ring_allgather(b, recv, displs, lens),
        tune::ALLGATHER_HIER => {
            if let Some(g) = hier::domains(b) {
                return hier::allgatherv(b, &g, recv, lens, displs);
            }
        }
        _ => {}
    }
    if total < ALLGATHER_HIER {
        if let Some(g) = hier::groups(b) {
            return hier::allgatherv(b, &g, recv, lens, displs);
        }
    }
    if total < ALLGATHER_ONE_ROUND && n > 4 && uniform {
        bruck_allgather(b, recv, lens[0]);
    } else if total < ALLGATHER_ONE_ROUND && n <= 16 {
        all_at_once_allgather(b, recv, lens, displs);
    } else {
        ring_allgather(b, recv, displs, lens);
    }
}

/// Every rank's block to everyone in one round.
fn all_at_once_allgather(b: &mut Builder, recv: At, lens: &[usize], displs: &[usize]) {
    let (n, me) = (b.size(), b.rank());
    let mine = me as usize;
    for i in (0..n).filter(|&i| i != me) {
        b.recv(recv.add(displs[i as usize]), lens[i as usize], i);
        b.send(recv.add(displs[mine]), lens[mine], i);
    }
    b.round();
}

/// Bruck's allgather of equal `len`-byte blocks: ceil(log2 n) rounds for any n. Rank r's
/// temporary holds the blocks of ranks r, r+1, ... in order; rotated into place at the end.
fn bruck_allgather(b: &mut Builder, recv: At, len: usize) {
    let (n, me) = (b.size(), b.rank());
    let t = b.tmp(n as usize * len);
    b.copy(recv.add(me as usize * len), t, len);
    let mut d = 1;
    while d < n {
        let k = d.min(n - d) as usize;
        b.send(t, k * len, md(me - d, n));
        b.recv(t.add(d as usize * len), k * len, md(me + d, n));
        b.round();
        d *= 2;
    }
    for i in 1..n {
        let from = md(me + i, n) as usize;
        b.copy(t.add(i as usize * len), recv.add(from * len), len);
    }
    b.round();
}

/// Alltoallw in bytes: block i of `send` goes to rank i, block i of `recv` comes from rank i.
/// `send` None for MPI_IN_PLACE: the data to send is `recv` itself, laid out as received.
#[allow(clippy::too_many_arguments)]
pub fn alltoallw(
    b: &mut Builder,
    send: Option<At>,
    slens: &[usize],
    sdispls: &[usize],
    recv: At,
    rlens: &[usize],
    rdispls: &[usize],
) {
    let (n, me) = (b.size(), b.rank());
    let mine = me as usize;
    let send = match send {
        Some(s) => s,
        None => {
            let extent = (0..n as usize)
                .map(|i| rdispls[i] + rlens[i])
                .max()
                .unwrap_or(0);
            let t = b.tmp(extent);
            b.copy(recv, t, extent);
            t
        }
    };
    b.copy(
        send.add(sdispls[mine]),
        recv.add(rdispls[mine]),
        slens[mine].min(rlens[mine]),
    );
    b.round();
    let per_rank: usize = slens.iter().sum::<usize>() + rlens.iter().sum::<usize>();
    let one_round = per_rank < ALLTOALL_ONE_ROUND;
    for k in 1..n {
        let (to, from) = (((me + k) % n) as usize, md(me - k, n) as usize);
        b.recv(recv.add(rdispls[from]), rlens[from], from as i32);
        b.send(send.add(sdispls[to]), slens[to], to as i32);
        if !one_round {
            b.round();
        }
    }
    b.round();
}

/// Reduce-scatter: block i (`counts[i]` elements, packed in rank order) of the reduction goes
/// to rank i's `recv`. `send` None for MPI_IN_PLACE (the input is in `recv`).
pub fn reduce_scatter(b: &mut Builder, send: Option<At>, recv: At, counts: &[usize]) {
    let (n, me, e) = (b.size(), b.rank(), b.elem());
    let total: usize = counts.iter().sum();
    let input = send.unwrap_or(recv);
    let mut off = Vec::with_capacity(counts.len());
    let mut o = 0;
    for c in counts {
        off.push(o);
        o += c;
    }
    if n == 1 {
        if send.is_some() {
            b.copy(input, recv, total * e);
        }
        return;
    }
    if total == 0 {
        return;
    }
    let acc = b.tmp(total * e);
    if b.commutative() {
        b.copy(input, acc, total * e);
        ring_reduce_scatter(b, acc, &off, counts);
        b.copy(acc.add(off[me as usize] * e), recv, counts[me as usize] * e);
        b.round();
    } else {
        // Rank order matters: reduce to rank 0, then scatter the blocks.
        reduce(b, Some(input), acc, total, 0);
        b.round();
        let lens: Vec<usize> = counts.iter().map(|c| c * e).collect();
        let displs: Vec<usize> = off.iter().map(|o| o * e).collect();
        let mine = lens[me as usize];
        scatterv(b, acc, &lens, &displs, Some((recv, mine)), 0);
    }
}

/// Inclusive prefix reduction by recursive doubling (rank order kept for any op).
pub fn scan(b: &mut Builder, send: Option<At>, recv: At, count: usize) {
    let (n, me, e) = (b.size(), b.rank(), b.elem());
    let len = count * e;
    if let Some(s) = send {
        b.copy(s, recv, len);
    }
    if n == 1 || count == 0 {
        return;
    }
    let partial = b.tmp(len);
    let t = b.tmp(len);
    b.copy(recv, partial, len);
    let mut mask = 1;
    while mask < n {
        let dst = me ^ mask;
        if dst < n {
            b.send(partial, len, dst);
            b.recv(t, len, dst);
            b.round();
            if me > dst {
                b.reduce(t, partial, count);
                b.reduce(t, recv, count);
            } else {
                b.reduce_rev(t, partial, count);
            }
        }
        mask <<= 1;
    }
    b.round();
}

/// Exclusive prefix reduction; rank 0's `recv` is left untouched.
pub fn exscan(b: &mut Builder, send: Option<At>, recv: At, count: usize) {
    let (n, me, e) = (b.size(), b.rank(), b.elem());
    let len = count * e;
    if n == 1 || count == 0 {
        return;
    }
    let partial = b.tmp(len);
    let t = b.tmp(len);
    b.copy(send.unwrap_or(recv), partial, len);
    let mut have = false;
    let mut mask = 1;
    while mask < n {
        let dst = me ^ mask;
        if dst < n {
            b.send(partial, len, dst);
            b.recv(t, len, dst);
            b.round();
            if me > dst {
                b.reduce(t, partial, count);
                if have {
                    b.reduce(t, recv, count);
                } else {
                    b.copy(t, recv, len);
                    have = true;
                }
            } else {
                b.reduce_rev(t, partial, count);
            }
        }
        mask <<= 1;
    }
    b.round();
}
