//! Every collective of the Rust API on an intercommunicator (world split into the first half,
//! group A, and the rest, group B: unequal sizes at odd np), blocking and non-blocking, each
//! rooted one with a root in either group, every value checked: broadcast, reduce (and a
//! non-commutative user op), all_reduce, reduce_scatter(_block), gather(_varcount),
//! scatter(_varcount), all_gather(_varcount), all_to_all(_varcount), all_to_all_w, barrier;
//! then the calls MPI does not define there (MPI_ERR_COMM) and bad roots (MPI_ERR_ROOT).
//! Needs np >= 2.

use rmpi::{Communicator, ErrorClass, Op, UserOp, PROC_NULL, ROOT};

/// What process (group g, local rank l) contributes at element j.
fn val(g: i64, l: i64, j: i64) -> i64 {
    1000 * g + 100 * l + j + 1
}

const SENTINEL: i64 = -7;

struct Ctx<'a> {
    ic: &'a Communicator,
    /// My group (0: A, 1: B), the other's, local rank, the two sizes.
    g: i64,
    other: i64,
    l: i64,
    lsize: i64,
    rsize: i64,
}

impl Ctx<'_> {
    /// The `root` argument of a rooted collective whose root is rank `r` of group `rg`.
    fn root(&self, rg: i64, r: i64) -> i32 {
        if rg != self.g {
            r as i32
        } else if r == self.l {
            ROOT
        } else {
            PROC_NULL
        }
    }

    /// Group `g`'s size.
    fn size_of(&self, g: i64) -> i64 {
        if g == self.g {
            self.lsize
        } else {
            self.rsize
        }
    }

    /// The roots to try: the last rank of each group.
    fn roots(&self) -> [(i64, i64); 2] {
        [(0, self.size_of(0) - 1), (1, self.size_of(1) - 1)]
    }
}

/// Run a collective in its blocking (`false`) or non-blocking (`true`) form.
macro_rules! both {
    ($nb:expr, $s:ident, $blocking:expr, $start:expr) => {
        if $nb {
            rmpi::scope(|$s| {
                let r = $start.expect("start");
                r.wait().expect("wait");
            });
        } else {
            $blocking.expect("blocking collective");
        }
    };
}

fn broadcast(c: &Ctx, nb: bool) {
    for (rg, r) in c.roots() {
        let root = c.root(rg, r);
        let mut buf: Vec<i64> = if root == ROOT {
            (0..5).map(|j| val(rg, r, j)).collect()
        } else {
            vec![SENTINEL; 5]
        };
        both!(
            nb,
            s,
            c.ic.broadcast(&mut buf, root),
            c.ic.ibroadcast(s, &mut buf, root)
        );
        for (j, &v) in buf.iter().enumerate() {
            let want = if root == PROC_NULL {
                SENTINEL
            } else {
                val(rg, r, j as i64)
            };
            assert_eq!(v, want, "broadcast (nb {nb}) from {rg}/{r}: element {j}");
        }
    }
}

fn reduce(c: &Ctx, nb: bool) {
    for (rg, r) in c.roots() {
        let root = c.root(rg, r);
        let send: Vec<i64> = (0..4).map(|j| val(c.g, c.l, j)).collect();
        let mut recv = vec![SENTINEL; 4];
        both!(
            nb,
            s,
            c.ic.reduce(&send, &mut recv, Op::Sum, root),
            c.ic.ireduce(s, &send, &mut recv, Op::Sum, root)
        );
        for (j, &v) in recv.iter().enumerate() {
            let want = if root == ROOT {
                (0..c.rsize).map(|i| val(c.other, i, j as i64)).sum()
            } else {
                SENTINEL
            };
            assert_eq!(v, want, "reduce (nb {nb}) to {rg}/{r}: element {j}");
        }
    }
}

fn all_reduce(c: &Ctx, nb: bool) {
    let send: Vec<i64> = (0..6).map(|j| val(c.g, c.l, j)).collect();
    let mut recv = vec![SENTINEL; 6];
    both!(
        nb,
        s,
        c.ic.all_reduce(&send, &mut recv, Op::Sum),
        c.ic.iall_reduce(s, &send, &mut recv, Op::Sum)
    );
    for (j, &v) in recv.iter().enumerate() {
        let want: i64 = (0..c.rsize).map(|i| val(c.other, i, j as i64)).sum();
        assert_eq!(v, want, "all_reduce (nb {nb}): element {j}");
    }
    // Non-commutative, applied in rank order: "keep the lower rank's" gives the other group's
    // rank 0's contribution.
    let first = |a: &[i64], b: &mut [i64]| b.copy_from_slice(a);
    let mut recv = vec![SENTINEL; 6];
    c.ic.all_reduce(&send, &mut recv, UserOp::non_commutative(&first))
        .expect("all_reduce, user op");
    for (j, &v) in recv.iter().enumerate() {
        assert_eq!(
            v,
            val(c.other, 0, j as i64),
            "all_reduce, user op: element {j}"
        );
    }
}

/// Reduce-scatter: both groups reduce T = |A| × |B| elements; group A's ranks get |B| each
/// (block form) or the varcount split (1 each, the rest to the last rank).
fn reduce_scatter(c: &Ctx, nb: bool) {
    let t = c.lsize * c.rsize;
    let send: Vec<i64> = (0..t).map(|j| val(c.g, c.l, j)).collect();
    let reduced = |j: i64| -> i64 { (0..c.rsize).map(|i| val(c.other, i, j)).sum() };
    // Block form: rcount = the remote size.
    let mut recv = vec![SENTINEL; c.rsize as usize];
    both!(
        nb,
        s,
        c.ic.reduce_scatter_block(&send, &mut recv, Op::Sum),
        c.ic.ireduce_scatter_block(s, &send, &mut recv, Op::Sum)
    );
    for (k, &v) in recv.iter().enumerate() {
        let j = c.l * c.rsize + k as i64;
        assert_eq!(v, reduced(j), "reduce_scatter_block (nb {nb}): element {k}");
    }
    // Varcount form.
    let counts: Vec<usize> = (0..c.lsize)
        .map(|i| {
            if i == c.lsize - 1 {
                (t - (c.lsize - 1)) as usize
            } else {
                1
            }
        })
        .collect();
    let mut recv = vec![SENTINEL; counts[c.l as usize]];
    both!(
        nb,
        s,
        c.ic.reduce_scatter(&send, &mut recv, &counts, Op::Sum),
        c.ic.ireduce_scatter(s, &send, &mut recv, &counts, Op::Sum)
    );
    for (k, &v) in recv.iter().enumerate() {
        let j = c.l + k as i64; // every rank before mine got 1
        assert_eq!(v, reduced(j), "reduce_scatter (nb {nb}): element {k}");
    }
}

fn gather(c: &Ctx, nb: bool) {
    for (rg, r) in c.roots() {
        let root = c.root(rg, r);
        let send: Vec<i64> = (0..3).map(|j| val(c.g, c.l, j)).collect();
        let n = if root == ROOT {
            c.rsize as usize * 3
        } else {
            0
        };
        let mut recv = vec![SENTINEL; n];
        both!(
            nb,
            s,
            c.ic.gather(&send, &mut recv, root),
            c.ic.igather(s, &send, &mut recv, root)
        );
        for (k, &v) in recv.iter().enumerate() {
            let (i, j) = (k as i64 / 3, k as i64 % 3);
            assert_eq!(
                v,
                val(c.other, i, j),
                "gather (nb {nb}) at {rg}/{r}: element {k}"
            );
        }
        // Varcount: remote rank i sends i + 1 elements, placed in reverse order with a gap of
        // one element after each block.
        let send: Vec<i64> = (0..=c.l).map(|j| val(c.g, c.l, j)).collect();
        let (counts, displs, len) = reverse_gapped(c.rsize);
        let n = if root == ROOT { len } else { 0 };
        let mut recv = vec![SENTINEL; n];
        both!(
            nb,
            s,
            c.ic.gather_varcount(&send, &mut recv, &counts, &displs, root),
            c.ic.igather_varcount(s, &send, &mut recv, &counts, &displs, root)
        );
        if root == ROOT {
            let mut want = vec![SENTINEL; len];
            for i in 0..c.rsize as usize {
                for j in 0..counts[i] {
                    want[displs[i] + j] = val(c.other, i as i64, j as i64);
                }
            }
            assert_eq!(recv, want, "gather_varcount (nb {nb}) at {rg}/{r}");
        }
    }
}

/// Counts i + 1 for n ranks, block n-1 first, each followed by a one-element gap.
fn reverse_gapped(n: i64) -> (Vec<usize>, Vec<usize>, usize) {
    let counts: Vec<usize> = (0..n as usize).map(|i| i + 1).collect();
    let mut displs = vec![0; n as usize];
    let mut at = 0;
    for i in (0..n as usize).rev() {
        displs[i] = at;
        at += counts[i] + 1;
    }
    (counts, displs, at)
}

fn scatter(c: &Ctx, nb: bool) {
    for (rg, r) in c.roots() {
        let root = c.root(rg, r);
        // Block i of the root's buffer (3 elements) goes to remote rank i.
        let send: Vec<i64> = if root == ROOT {
            (0..c.rsize * 3)
                .map(|k| val(rg, r, 10 * (k / 3) + k % 3))
                .collect()
        } else {
            Vec::new()
        };
        let n = if root == ROOT || root == PROC_NULL {
            0
        } else {
            3
        };
        let mut recv = vec![SENTINEL; n];
        both!(
            nb,
            s,
            c.ic.scatter(&send, &mut recv, root),
            c.ic.iscatter(s, &send, &mut recv, root)
        );
        for (j, &v) in recv.iter().enumerate() {
            let want = val(rg, r, 10 * c.l + j as i64);
            assert_eq!(v, want, "scatter (nb {nb}) from {rg}/{r}: element {j}");
        }
        // Varcount: remote rank i gets i + 1 elements.
        let (counts, displs, len) = reverse_gapped(c.rsize);
        let mut send = vec![SENTINEL; if root == ROOT { len } else { 0 }];
        if root == ROOT {
            for i in 0..c.rsize as usize {
                for j in 0..counts[i] {
                    send[displs[i] + j] = val(rg, r, 10 * i as i64 + j as i64);
                }
            }
        }
        let n = if root == ROOT || root == PROC_NULL {
            0
        } else {
            c.l as usize + 1
        };
        let mut recv = vec![SENTINEL; n];
        both!(
            nb,
            s,
            c.ic.scatter_varcount(&send, &counts, &displs, &mut recv, root),
            c.ic.iscatter_varcount(s, &send, &counts, &displs, &mut recv, root)
        );
        for (j, &v) in recv.iter().enumerate() {
            let want = val(rg, r, 10 * c.l + j as i64);
            assert_eq!(
                v, want,
                "scatter_varcount (nb {nb}) from {rg}/{r}: element {j}"
            );
        }
    }
}

fn all_gather(c: &Ctx, nb: bool) {
    // Group A's members send 2 elements, group B's 3: each receives the other's size.
    let mine = 2 + c.g;
    let theirs = 2 + c.other;
    let send: Vec<i64> = (0..mine).map(|j| val(c.g, c.l, j)).collect();
    let mut recv = vec![SENTINEL; (c.rsize * theirs) as usize];
    both!(
        nb,
        s,
        c.ic.all_gather(&send, &mut recv),
        c.ic.iall_gather(s, &send, &mut recv)
    );
    for (k, &v) in recv.iter().enumerate() {
        let (i, j) = (k as i64 / theirs, k as i64 % theirs);
        assert_eq!(v, val(c.other, i, j), "all_gather (nb {nb}): element {k}");
    }
    // Varcount: local rank l sends l + 1 elements.
    let send: Vec<i64> = (0..=c.l).map(|j| val(c.g, c.l, j)).collect();
    let (counts, displs, len) = reverse_gapped(c.rsize);
    let mut recv = vec![SENTINEL; len];
    both!(
        nb,
        s,
        c.ic.all_gather_varcount(&send, &mut recv, &counts, &displs),
        c.ic.iall_gather_varcount(s, &send, &mut recv, &counts, &displs)
    );
    let mut want = vec![SENTINEL; len];
    for i in 0..c.rsize as usize {
        for j in 0..counts[i] {
            want[displs[i] + j] = val(c.other, i as i64, j as i64);
        }
    }
    assert_eq!(recv, want, "all_gather_varcount (nb {nb})");
}

fn all_to_all(c: &Ctx, nb: bool) {
    // Group A sends blocks of 2 to each member of B, B blocks of 3 to each member of A.
    let (sb, rb) = (2 + c.g, 2 + c.other);
    let send: Vec<i64> = (0..c.rsize * sb)
        .map(|k| val(c.g, c.l, 10 * (k / sb) + k % sb))
        .collect();
    let mut recv = vec![SENTINEL; (c.rsize * rb) as usize];
    both!(
        nb,
        s,
        c.ic.all_to_all(&send, &mut recv),
        c.ic.iall_to_all(s, &send, &mut recv)
    );
    for (k, &v) in recv.iter().enumerate() {
        let (i, j) = (k as i64 / rb, k as i64 % rb);
        assert_eq!(
            v,
            val(c.other, i, 10 * c.l + j),
            "all_to_all (nb {nb}): element {k}"
        );
    }
    // Varcount: l + i + 1 elements between local rank l and remote rank i, either way.
    let scounts: Vec<usize> = (0..c.rsize).map(|i| (c.l + i + 1) as usize).collect();
    let sdispls: Vec<usize> = scounts
        .iter()
        .scan(0, |at, &n| {
            let d = *at;
            *at += n;
            Some(d)
        })
        .collect();
    let send: Vec<i64> = (0..c.rsize)
        .flat_map(|i| (0..c.l + i + 1).map(move |j| (i, j)))
        .map(|(i, j)| val(c.g, c.l, 10 * i + j))
        .collect();
    let (rcounts, rdispls, len) = {
        let counts: Vec<usize> = (0..c.rsize).map(|i| (c.l + i + 1) as usize).collect();
        let mut displs = vec![0; counts.len()];
        let mut at = 0;
        for i in (0..counts.len()).rev() {
            displs[i] = at;
            at += counts[i] + 1;
        }
        (counts, displs, at)
    };
    let mut recv = vec![SENTINEL; len];
    both!(
        nb,
        s,
        c.ic.all_to_all_varcount(&send, &scounts, &sdispls, &mut recv, &rcounts, &rdispls),
        c.ic.iall_to_all_varcount(s, &send, &scounts, &sdispls, &mut recv, &rcounts, &rdispls)
    );
    let mut want = vec![SENTINEL; len];
    for i in 0..c.rsize as usize {
        for j in 0..rcounts[i] {
            want[rdispls[i] + j] = val(c.other, i as i64, 10 * c.l + j as i64);
        }
    }
    assert_eq!(recv, want, "all_to_all_varcount (nb {nb})");
}

/// all_to_all_w with one u32 per block, byte displacements reversed.
fn all_to_all_w(c: &Ctx, nb: bool) {
    let t = rmpi::UserDatatype::of::<u32>();
    let n = c.rsize as usize;
    let send: Vec<u8> = (0..n)
        .flat_map(|i| (val(c.g, c.l, i as i64) as u32).to_le_bytes())
        .collect();
    let sends: Vec<rmpi::WBlock> = (0..n)
        .map(|i| rmpi::WBlock {
            count: 1,
            displ: i * 4,
            datatype: &t,
        })
        .collect();
    let recvs: Vec<rmpi::WBlock> = (0..n)
        .map(|i| rmpi::WBlock {
            count: 1,
            displ: (n - 1 - i) * 4,
            datatype: &t,
        })
        .collect();
    let mut recv = vec![0u8; n * 4];
    both!(
        nb,
        s,
        c.ic.all_to_all_w(&send, &sends, &mut recv, &recvs),
        c.ic.iall_to_all_w(s, &send, &sends, &mut recv, &recvs)
    );
    for i in 0..n {
        let at = (n - 1 - i) * 4;
        let got = u32::from_le_bytes(recv[at..at + 4].try_into().unwrap());
        assert_eq!(
            got as i64,
            val(c.other, i as i64, c.l),
            "all_to_all_w (nb {nb}) from {i}"
        );
    }
}

fn errors(c: &Ctx) {
    let (send, mut recv) = ([1i64; 2], [0i64; 2]);
    let comm_err = |r: rmpi::Result<()>, what: &str| {
        let e = r.expect_err(what);
        assert_eq!(e.class, ErrorClass::Comm, "{what}: {e}");
    };
    comm_err(c.ic.scan(&send, &mut recv, Op::Sum), "scan");
    comm_err(c.ic.exscan(&send, &mut recv, Op::Sum), "exscan");
    comm_err(
        c.ic.reduce_in_place(&mut recv, Op::Sum, ROOT),
        "reduce_in_place",
    );
    comm_err(
        c.ic.all_reduce_in_place(&mut recv, Op::Sum),
        "all_reduce_in_place",
    );
    rmpi::scope(|s| {
        let e =
            c.ic.iscan(s, &send, &mut recv, Op::Sum)
                .err()
                .expect("iscan");
        assert_eq!(e.class, ErrorClass::Comm);
    });
    rmpi::scope(|s| {
        let e =
            c.ic.iexscan(s, &send, &mut recv, Op::Sum)
                .err()
                .expect("iexscan");
        assert_eq!(e.class, ErrorClass::Comm);
    });
    // Roots: a rank past the remote group, or another negative value.
    for bad in [c.rsize as i32, -7] {
        let mut b = [0i64];
        let e = c.ic.broadcast(&mut b, bad).expect_err("bad root");
        assert_eq!(e.class, ErrorClass::Root, "root {bad}: {e}");
    }
}

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    assert!(size >= 2, "needs np >= 2");
    let na = (size + 1) / 2;
    let in_a = rank < na;
    let local = world
        .split(Some(in_a as i32), rank)
        .expect("split")
        .expect("a color");
    let ic = local
        .intercomm_create(0, &world, if in_a { na } else { 0 }, 23)
        .expect("intercomm_create");
    let g = if in_a { 0 } else { 1 };
    let c = Ctx {
        ic: &ic,
        g,
        other: 1 - g,
        l: ic.rank() as i64,
        lsize: ic.size() as i64,
        rsize: ic.remote_size().expect("remote size") as i64,
    };
    // The world's own collectives are unchanged (intracommunicator).
    let mut b = [rank];
    world.broadcast(&mut b, 0).expect("world broadcast");
    assert_eq!(b[0], 0);
    for nb in [false, true] {
        broadcast(&c, nb);
        reduce(&c, nb);
        all_reduce(&c, nb);
        reduce_scatter(&c, nb);
        gather(&c, nb);
        scatter(&c, nb);
        all_gather(&c, nb);
        all_to_all(&c, nb);
        all_to_all_w(&c, nb);
        if nb {
            rmpi::scope(|s| ic.ibarrier(s).expect("ibarrier").wait().expect("wait"));
        } else {
            ic.barrier().expect("barrier");
        }
    }
    errors(&c);
    ic.barrier().expect("barrier");
    println!("inter_coll: OK");
}
