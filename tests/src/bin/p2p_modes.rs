//! The Rust point-to-point API beyond send/recv, around a ring: issend (ordering: not complete
//! before the receive is posted), ssend, bsend with an attached buffer, persistent requests,
//! wait_any / wait_some / test_all, probe / iprobe, mprobe + Message::recv, cancel, PROC_NULL.
//! Prints "p2p_modes: OK" from rank 0.

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let to = (rank + 1) % size;
    let from = (rank + size - 1) % size;

    // Issend to self: not complete before the receive is posted.
    let out = [rank as u32; 100];
    let mut got = [0u32; 100];
    rmpi::scope(|s| {
        let mut r = world.issend(s, &out, rank, 1).expect("issend");
        for _ in 0..50 {
            assert!(
                r.test().expect("test").is_none(),
                "issend completed before its receive"
            );
        }
        world.recv(&mut got, rank, 1).expect("recv");
        r.wait().expect("wait");
    });
    assert_eq!(got, out);

    // Blocking ssend around the ring (even ranks first, so it cannot deadlock).
    let big: Vec<u64> = (0..50_000).map(|i| i + rank as u64).collect();
    let mut big_in = vec![0u64; 50_000];
    if size > 1 {
        if rank % 2 == 0 {
            world.ssend(&big, to, 2).expect("ssend");
            world.recv(&mut big_in, from, 2).expect("recv");
        } else {
            world.recv(&mut big_in, from, 2).expect("recv");
            world.ssend(&big, to, 2).expect("ssend");
        }
        assert!(big_in
            .iter()
            .enumerate()
            .all(|(i, &v)| v == i as u64 + from as u64));
    }

    // Buffered sends: no buffer is an error; with one, the data is copied at once.
    let e = world
        .bsend(&[1u8], to, 3)
        .expect_err("bsend without a buffer");
    assert_eq!(e.class, rmpi::ErrorClass::Buffer);
    let att = rmpi::attach_buffer(vec![0; 10 * (400 + rmpi::BSEND_OVERHEAD)]).expect("attach");
    for i in 0..10u32 {
        let mut msg = [i + rank as u32; 100];
        world.bsend(&msg, to, 3).expect("bsend");
        msg.fill(0);
    }
    let too_big = vec![0u8; 100_000];
    assert_eq!(
        world
            .bsend(&too_big, to, 4)
            .expect_err("does not fit")
            .class,
        rmpi::ErrorClass::Buffer
    );
    for i in 0..10u32 {
        let mut m = [0u32; 100];
        world.recv(&mut m, from, 3).expect("recv bsend");
        assert_eq!(m, [i + from as u32; 100]);
    }
    let back = att.detach().expect("detach");
    assert_eq!(back.len(), 10 * (400 + rmpi::BSEND_OVERHEAD));

    // Persistent requests reused, with data changed between runs through buffer().
    let mut sbuf = vec![0i32; 20_000];
    let mut rbuf = vec![0i32; 20_000];
    rmpi::scope(|s| {
        let mut send = world.send_init(s, &mut sbuf, to, 5).expect("send_init");
        let mut recv = world.recv_init(s, &mut rbuf, from, 5).expect("recv_init");
        for k in 0..5 {
            send.buffer()
                .expect("inactive")
                .iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v = i as i32 * k + rank);
            recv.start().expect("start");
            send.start().expect("start");
            assert!(send.buffer().is_err(), "buffer lent while a run is active");
            let st = recv.wait().expect("wait");
            send.wait().expect("wait");
            assert_eq!(
                (st.source(), st.tag(), st.count::<i32>()),
                (from, 5, Some(20_000))
            );
            let b = recv.buffer().expect("inactive");
            assert!(
                b.iter().enumerate().all(|(i, &v)| v == i as i32 * k + from),
                "run {k}"
            );
        }
        // Inactive: wait returns an empty status at once.
        let st = recv.wait().expect("wait inactive");
        assert_eq!((st.source(), st.count_bytes()), (-1, 0));
    });

    // wait_any / wait_some / test_all.
    let vals: Vec<u32> = (0..8).map(|i| rank as u32 * 10 + i).collect();
    let mut ins = [[0u32; 1]; 8];
    rmpi::scope(|s| {
        let mut reqs = Vec::new();
        for (i, b) in ins.iter_mut().enumerate() {
            reqs.push(world.irecv(s, b, from, 10 + i as i32).expect("irecv"));
        }
        let mut sends = Vec::new();
        for (i, v) in vals.iter().enumerate() {
            sends.push(
                world
                    .isend(s, std::slice::from_ref(v), to, 10 + i as i32)
                    .expect("isend"),
            );
        }
        let mut seen = 0;
        while seen < 4 {
            let (_, st) = rmpi::wait_any(&mut reqs).expect("one left");
            let st = st.expect("status");
            assert_eq!(st.source(), from);
            seen += 1;
        }
        while !reqs.is_empty() {
            for (_, st) in rmpi::wait_some(&mut reqs) {
                st.expect("status");
            }
        }
        assert!(rmpi::wait_any(&mut reqs).is_none());
        loop {
            if let Some(sts) = rmpi::test_all(&mut sends).expect("test_all") {
                assert_eq!(sts.len(), 8);
                break;
            }
        }
    });
    assert!(ins
        .iter()
        .enumerate()
        .all(|(i, b)| b[0] == from as u32 * 10 + i as u32));

    // probe / iprobe / mprobe.
    world.send(&[7u16, 8, 9], to, 20).expect("send");
    let st = world.probe(rmpi::Source::Any, 20).expect("probe");
    assert_eq!((st.source(), st.count::<u16>()), (from, Some(3)));
    assert!(world.iprobe(from, 20).expect("iprobe").is_some());
    assert!(world.iprobe(from, 21).expect("iprobe").is_none());
    let (msg, st) = world.mprobe(from, rmpi::Tag::Any).expect("mprobe");
    assert_eq!(st.tag(), 20);
    assert!(
        world.iprobe(from, 20).expect("iprobe").is_none(),
        "matched message still visible"
    );
    let mut m = [0u16; 3];
    msg.recv(&mut m).expect("mrecv");
    assert_eq!(m, [7, 8, 9]);
    let (msg, st) = world.mprobe(rmpi::PROC_NULL, 0).expect("mprobe PROC_NULL");
    assert!(msg.is_no_proc() && st.source() == rmpi::PROC_NULL);
    msg.recv(&mut m).expect("mrecv no proc");

    // A matched message dropped unreceived is discarded: its (rendezvous) sender completes.
    let payload = vec![1u8; 100_000];
    rmpi::scope(|s| {
        let r = world.isend(s, &payload, to, 30).expect("isend");
        let (msg, st) = world.mprobe(from, 30).expect("mprobe");
        assert_eq!(st.count_bytes(), 100_000);
        drop(msg);
        r.wait().expect("the sender of a dropped message completes");
    });

    // cancel an unmatched receive.
    let mut never = [0u8; 4];
    rmpi::scope(|s| {
        let r = world
            .irecv(s, &mut never, rmpi::Source::Any, 99)
            .expect("irecv");
        r.cancel().expect("cancel");
        assert!(r.wait().expect("wait").is_cancelled());
    });

    world.barrier().expect("barrier");
    if rank == 0 {
        println!("p2p_modes: OK");
    }
}
