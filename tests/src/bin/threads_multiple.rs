//! The Rust API under MPI_THREAD_MULTIPLE: `initialize_with_threading(Multiple)` provides it,
//! `Communicator::shared` gives a `Send + Sync` handle, and scoped threads use it at once:
//! each thread exchanges tagged messages (its own tag) with every rank, every byte checked,
//! beside a thread running collectives on a communicator of its own and threads splitting and
//! duplicating communicators of their own. Prints "threads_multiple: OK" at rank 0.

use rmpi::{Op, Threading};

const NT: i32 = 3;
const ROUNDS: usize = 20;

fn pattern(src: i32, tag: i32, round: usize, i: usize) -> u8 {
    (src as usize * 131 + tag as usize * 31 + round * 7 + i * 13) as u8
}

fn len(src: i32, tag: i32, round: usize) -> usize {
    [0, 3, 100, 5000, 20000, 70000][(src as usize + tag as usize + round) % 6]
}

fn main() {
    let (universe, level) = rmpi::initialize_with_threading(Threading::Multiple).expect("init");
    assert_eq!(level, Threading::Multiple);
    assert_eq!(universe.threading(), Threading::Multiple);
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let p2p = world.duplicate().expect("dup");
    let coll = world.duplicate().expect("dup");
    let own: Vec<_> = (0..NT).map(|_| world.duplicate().expect("dup")).collect();
    let (p2p_s, coll_s) = (
        p2p.shared().expect("shared"),
        coll.shared().expect("shared"),
    );
    let own_s: Vec<_> = own.iter().map(|c| c.shared().expect("shared")).collect();
    std::thread::scope(|s| {
        for t in 0..NT {
            s.spawn(move || {
                for round in 0..ROUNDS {
                    for d in 0..size {
                        let (to, from) = ((rank + d) % size, (rank - d + size) % size);
                        let out: Vec<u8> = (0..len(rank, t, round))
                            .map(|i| pattern(rank, t, round, i))
                            .collect();
                        let mut inb = vec![0u8; 70000];
                        let st = p2p_s
                            .sendrecv(&out, to, t, &mut inb, from, t)
                            .expect("sendrecv");
                        let n = len(from, t, round);
                        assert_eq!(
                            (st.source(), st.tag(), st.count::<u8>()),
                            (from, t, Some(n))
                        );
                        assert!(
                            (0..n).all(|i| inb[i] == pattern(from, t, round, i)),
                            "thread {t} round {round}: bad bytes from {from}"
                        );
                    }
                    // Threads of this process wait on each other: thread t receives from
                    // thread t - 1 of its own rank (a rendezvous size), sends to thread t + 1,
                    // and the scope's end waits for its receive.
                    let big: Vec<u8> = (0..70000).map(|i| pattern(rank, t, round, i)).collect();
                    let mut got = vec![0u8; 70000];
                    rmpi::scope(|sc| {
                        let _r = p2p_s.irecv(sc, &mut got, rank, 300 + t).expect("irecv");
                        p2p_s
                            .send(&big, rank, 300 + (t + 1) % NT)
                            .expect("send to a thread");
                    });
                    let prev = (t + NT - 1) % NT;
                    assert!(
                        (0..70000).all(|i| got[i] == pattern(rank, prev, round, i)),
                        "thread {t} round {round}: bad bytes from thread {prev}"
                    );
                    // Matched probes racing: every thread sends one message to its own rank
                    // under one tag, then takes one with mprobe + Message::recv, sized by the
                    // probe; a message matched twice would leave a thread waiting forever.
                    let mine = vec![t as u8; 1000 + t as usize];
                    p2p_s.send(&mine, rank, 400 + round as i32).expect("send");
                    let (m, st) = p2p_s.mprobe(rank, 400 + round as i32).expect("mprobe");
                    let n = st.count::<u8>().expect("a byte count");
                    let mut got = vec![0u8; n];
                    m.recv(&mut got).expect("mrecv");
                    assert!(
                        n >= 1000 && got.iter().all(|&x| x as usize == n - 1000),
                        "thread {t}: matched message of {n} bytes holds the wrong bytes"
                    );
                    // Blocking send and receive with the partner rank ^ 1 (rendezvous sizes
                    // too): the even rank sends first.
                    let partner = rank ^ 1;
                    if partner < size {
                        let out: Vec<u8> = (0..len(rank, t, round))
                            .map(|i| pattern(rank, t, round, i))
                            .collect();
                        let mut inb = vec![0u8; 70000];
                        if rank % 2 == 0 {
                            p2p_s.send(&out, partner, 100 + t).expect("send");
                            p2p_s.recv(&mut inb, partner, 100 + t).expect("recv");
                        } else {
                            p2p_s.recv(&mut inb, partner, 100 + t).expect("recv");
                            p2p_s.send(&out, partner, 100 + t).expect("send");
                        }
                        let n = len(partner, t, round);
                        assert!((0..n).all(|i| inb[i] == pattern(partner, t, round, i)));
                    }
                }
            });
        }
        s.spawn(move || {
            for round in 0..100 {
                let mut sum = [0i64];
                coll_s
                    .all_reduce(&[rank as i64 * round], &mut sum, Op::Sum)
                    .expect("allreduce");
                assert_eq!(sum[0], round * (size as i64 * (size as i64 - 1) / 2));
                coll_s.barrier().expect("barrier");
            }
        });
        for (t, c) in own_s.iter().copied().enumerate() {
            s.spawn(move || {
                // Odd ranks go the other way round, so creations interleave differently.
                if rank % 2 == 1 {
                    std::thread::sleep(std::time::Duration::from_millis(
                        2 * (NT as u64 - t as u64),
                    ));
                }
                for _ in 0..4 {
                    let d = c.duplicate().expect("dup");
                    assert_eq!((d.rank(), d.size()), (rank, size));
                    let sp = c
                        .split(Some(rank % 2), -rank)
                        .expect("split")
                        .expect("a color");
                    let want = (size + 1 - rank % 2) / 2;
                    assert_eq!(sp.size(), want);
                    let mut n = [0i32];
                    sp.all_reduce(&[1], &mut n, Op::Sum).expect("allreduce");
                    assert_eq!(n[0], want);
                    d.barrier().expect("barrier");
                }
            });
        }
    });
    drop(own);
    world.barrier().expect("barrier");
    if rank == 0 {
        println!("threads_multiple: OK");
    }
}
