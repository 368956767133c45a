//! Partitioned communication in the Rust API (MPI_Psend_init, MPI_Precv_init, MPI_Pready,
//! MPI_Pready_range, MPI_Pready_list, MPI_Parrived, MPI_Start, MPI_Wait/MPI_Test): a ring,
//! each rank sending to the next and receiving from the previous, the sender in 6 partitions of
//! 4 elements and the receiver in 4 of 6 (the two sides cut the message differently), three
//! runs with new data; partitions are filled and marked ready out of order, by each of the
//! three calls, and every receive partition is read as soon as it has arrived. Then a
//! run whose send is dropped with one partition ready (the drop readies the rest), a run of
//! large partitions (past the eager limit), a
//! PROC_NULL pair and the refusals: a ready partition while the run is active, a partition out
//! of range, a buffer that does not split into equal partitions. Needs np >= 2.

use rmpi::{ErrorClass, PROC_NULL};

const SEND_PARTS: usize = 6;
const RECV_PARTS: usize = 4;
const LEN: usize = 24;

fn val(rank: i32, round: u32, j: usize) -> u32 {
    10_000 * round + 100 * rank as u32 + j as u32
}

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    assert!(size >= 2, "needs np >= 2");
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let mut sbuf = vec![0u32; LEN];
    let mut rbuf = vec![0u32; LEN];
    rmpi::scope(|s| {
        let mut rq = world
            .precv_init(s, &mut rbuf, RECV_PARTS, prev, 5)
            .expect("precv_init");
        let mut sq = world
            .psend_init(s, &mut sbuf, SEND_PARTS, next, 5)
            .expect("psend_init");
        assert_eq!((sq.partitions(), rq.partitions()), (SEND_PARTS, RECV_PARTS));
        for round in 0..3u32 {
            rq.buffer().expect("recv buffer between runs").fill(0);
            rq.start().expect("start recv");
            sq.start().expect("start send");
            let per = LEN / SEND_PARTS;
            let fill = |sq: &mut rmpi::PartitionedSend<'_, u32>, k: usize| {
                for (i, x) in sq
                    .partition_mut(k)
                    .expect("partition_mut")
                    .iter_mut()
                    .enumerate()
                {
                    *x = val(rank, round, k * per + i);
                }
            };
            // 5 and 4 singly (out of order), then 0..=1 as a range, then [3, 2] as a list.
            for k in [5, 4] {
                fill(&mut sq, k);
                sq.pready(k).expect("pready");
            }
            let e = sq.partition_mut(5).expect_err("a ready partition");
            assert_eq!(e.class, ErrorClass::Request);
            for k in 0..=1 {
                fill(&mut sq, k);
            }
            sq.pready_range(0, 1).expect("pready_range");
            for k in [3, 2] {
                fill(&mut sq, k);
            }
            sq.pready_list(&[3, 2]).expect("pready_list");
            // Read each receive partition as soon as it has arrived.
            let rper = LEN / RECV_PARTS;
            let mut seen = [false; RECV_PARTS];
            while seen.iter().any(|s| !s) {
                for (k, seen) in seen.iter_mut().enumerate() {
                    if !*seen && rq.parrived(k).expect("parrived") {
                        let part = rq.partition(k).expect("an arrived partition");
                        for (i, &v) in part.iter().enumerate() {
                            assert_eq!(
                                v,
                                val(prev, round, k * rper + i),
                                "round {round}: receive partition {k}, element {i}"
                            );
                        }
                        *seen = true;
                    }
                }
            }
            while !sq.test().expect("test send") {}
            rq.wait().expect("wait recv");
            assert!(rq.parrived(0).expect("parrived between runs"));
            let all = rq.buffer().expect("recv buffer");
            for (j, &v) in all.iter().enumerate() {
                assert_eq!(v, val(prev, round, j), "round {round}: element {j}");
            }
        }
        let e = rq.parrived(RECV_PARTS).expect_err("out of range");
        assert_eq!(e.class, ErrorClass::Arg);
        let e = sq.pready(SEND_PARTS).expect_err("out of range");
        assert_eq!(e.class, ErrorClass::Arg);
        // Dropping an active send marks its partitions not yet ready and completes the run.
        rq.start().expect("start recv");
        sq.start().expect("start send");
        sq.partition_mut(0).expect("partition 0").fill(77);
        sq.pready(0).expect("pready");
        drop(sq);
        rq.wait().expect("wait recv");
        assert_eq!(
            &rq.buffer().expect("buffer")[..LEN / SEND_PARTS],
            &[77; LEN / SEND_PARTS]
        );
    });

    // Large partitions (128 KiB each, past the eager limit), the receiver in 2 of 4.
    let big = 4 * 32768;
    let mut sbig = vec![0u32; big];
    let mut rbig = vec![0u32; big];
    rmpi::scope(|s| {
        let mut rq = world
            .precv_init(s, &mut rbig, 2, prev, 6)
            .expect("precv_init");
        let mut sq = world
            .psend_init(s, &mut sbig, 4, next, 6)
            .expect("psend_init");
        rq.start().expect("start recv");
        sq.start().expect("start send");
        for k in (0..4).rev() {
            for (i, x) in sq
                .partition_mut(k)
                .expect("partition_mut")
                .iter_mut()
                .enumerate()
            {
                *x = val(rank, 9, k * 32768 + i);
            }
            sq.pready(k).expect("pready");
        }
        sq.wait().expect("wait send");
        rq.wait().expect("wait recv");
        for (j, &v) in rq.buffer().expect("buffer").iter().enumerate() {
            assert_eq!(v, val(prev, 9, j), "large: element {j}");
        }
    });

    // PROC_NULL: nothing is sent or received; the runs complete at once.
    let (mut a, mut b) = ([1u8; 4], [2u8; 4]);
    rmpi::scope(|s| {
        let mut sq = world
            .psend_init(s, &mut a, 2, PROC_NULL, 1)
            .expect("psend_init");
        let mut rq = world
            .precv_init(s, &mut b, 4, PROC_NULL, 1)
            .expect("precv_init");
        sq.start().expect("start");
        rq.start().expect("start");
        sq.pready_range(0, 1).expect("pready_range");
        sq.wait().expect("wait");
        rq.wait().expect("wait");
        assert_eq!(rq.buffer().unwrap(), &[2u8; 4]);
    });

    // A buffer that does not split into equal partitions.
    let mut c = [0u16; 5];
    rmpi::scope(|s| {
        let e = world
            .psend_init(s, &mut c, 2, next, 9)
            .err()
            .expect("5 into 2");
        assert_eq!(e.class, ErrorClass::Count);
    });
    world.barrier().expect("barrier");
    println!("partitioned: OK");
}
