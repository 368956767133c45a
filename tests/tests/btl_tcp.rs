//! btl-tcp through real jobs forced onto it (`--mca btl tcp,self`): every byte at every size
//! from 0 B to 16 MiB at np 2-4, a peer dying mid-stream, interface selection errors, and the
//! default's promise that a one-node job opens no socket.

use rmpi_tests::*;

const TCP: [&str; 3] = ["--mca", "btl", "tcp,self"];

fn tcp_job(np: usize, extra: &[&str], prog: &str, args: &[&str]) -> Run {
    let np = np.to_string();
    let mut v = vec!["-np", np.as_str(), "--oversubscribe"];
    v.extend_from_slice(&TCP);
    v.extend_from_slice(extra);
    v.push(prog);
    v.extend_from_slice(args);
    mpirun(&v)
}

fn no_leftovers(m: &str) {
    for _ in 0..50 {
        if processes_with(m).is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(processes_with(m), Vec::<u32>::new(), "ranks left running");
    assert_eq!(
        shm_leftovers(),
        Vec::<String>::new(),
        "files left in /dev/shm"
    );
}

#[test]
fn every_byte_at_every_size_np2_to_4() {
    let prog = c_program("tests/c/tcp_pingpong.c");
    for np in 2..=4 {
        let m = marker("tcp-pingpong");
        let r = tcp_job(
            np,
            &["--mca", "btl_base_verbose", "1"],
            prog.to_str().unwrap(),
            &[&m],
        );
        r.assert_ok();
        assert!(
            r.stdout.contains("tcp_pingpong: OK"),
            "np {np}: {}",
            r.stdout
        );
        assert!(
            r.stderr.contains("transports self,tcp"),
            "np {np}: {}",
            r.stderr
        );
        no_leftovers(&m);
    }
}

#[test]
fn small_fragments_and_loopback_by_name() {
    // A 1 KiB max_frag: rendezvous streamed in many small pieces (eager messages go whole).
    let prog = c_program("tests/c/tcp_pingpong.c");
    let extra = [
        "--mca",
        "btl_tcp_max_frag",
        "1024",
        "--mca",
        "btl_tcp_if_include",
        "lo",
        "--mca",
        "btl_tcp_send_queue",
        "65536",
        "--mca",
        "btl_tcp_verbose",
        "1",
    ];
    let r = tcp_job(3, &extra, prog.to_str().unwrap(), &[]);
    r.assert_ok();
    assert!(r.stdout.contains("tcp_pingpong: OK"), "{}", r.stdout);
    assert!(
        r.stderr.contains("listening on lo 127.0.0.1/8"),
        "{}",
        r.stderr
    );
}

/// Eager messages of 16 KiB and up read from the socket straight into the receive matched at
/// their header (`pml/place.rs`): blocking and posted contiguous receives, a strided one and
/// truncating ones (through a scratch buffer), unexpected and wildcard ones; every byte
/// checked. 8 KiB socket buffers make every such message arrive in pieces, so placement
/// really happens (counted by `btl_tcp_verbose`).
/// Windows of MPI_Isend, whose small messages tcp batches (`btl_tcp_coalesce`), arrive whole
/// and in order, also with a blocking send in the middle of a window and a blocking receive
/// after one; with batching off, and on sm, the same.
#[test]
fn isend_windows_batched_arrive_whole_and_in_order() {
    let prog = c_program("tests/c/p2p_isend_windows.c");
    let prog = prog.to_str().unwrap();
    for (np, extra) in [
        (2, &[][..]),
        (3, &[][..]),
        (2, &["--mca", "btl_tcp_coalesce", "0"][..]),
        (4, &["--mca", "btl_tcp_coalesce", "100000"][..]),
    ] {
        tcp_job(np, extra, prog, &[]).assert_no_errors(&format!("tcp np {np} {extra:?}"));
    }
    // The windows were batched: some rank held sends back.
    let r = tcp_job(2, &["--mca", "btl_tcp_verbose", "1"], prog, &[]);
    r.assert_no_errors("tcp np 2 verbose");
    let batched: u64 = r
        .stderr
        .lines()
        .filter_map(|l| l.split(" fragments sent (").nth(1))
        .filter_map(|t| t.split(' ').next()?.parse::<u64>().ok())
        .sum();
    assert!(batched > 0, "no send was batched: {}", r.stderr);
    mpirun(&["-np", "2", prog]).assert_no_errors("sm np 2");
}

#[test]
fn eager_messages_are_read_into_their_receive() {
    let prog = c_program("tests/c/p2p_placed_eager.c");
    let extra = [
        "--mca",
        "btl_tcp_rcvbuf",
        "8192",
        "--mca",
        "btl_tcp_sndbuf",
        "8192",
        "--mca",
        "btl_tcp_verbose",
        "1",
    ];
    for np in [2, 3] {
        let r = tcp_job(np, &extra, prog.to_str().unwrap(), &[]);
        r.assert_no_errors(&format!("np {np}"));
        let placed: u64 = r
            .stderr
            .lines()
            .filter(|l| l.contains("rank 1: btl tcp:"))
            .filter_map(|l| {
                l.split("received (")
                    .nth(1)?
                    .split(' ')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        assert!(
            placed > 0,
            "np {np}: nothing read into place:\n{}",
            r.stderr
        );
    }
}

#[test]
fn peer_dying_mid_transfer_ends_the_job() {
    let prog = c_program("tests/c/ib_peer_dies.c");
    let m = marker("tcp-dies");
    let r = tcp_job(2, &[], prog.to_str().unwrap(), &[&m]);
    assert!(!r.ok(), "{}{}", r.stdout, r.stderr);
    assert_ne!(r.code, Some(124), "the job hung:\n{}", r.stderr);
    assert!(!r.stdout.contains("unnoticed"), "{}", r.stdout);
    assert!(r.stderr.contains("rank 1"), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    no_leftovers(&m);
}

#[test]
fn an_interface_that_is_not_there_fails_init_clearly() {
    let prog = example("hello");
    let r = tcp_job(
        2,
        &["--mca", "btl_tcp_if_include", "nosuch0"],
        prog.to_str().unwrap(),
        &[],
    );
    assert!(!r.ok(), "{}", r.stderr);
    assert_ne!(r.code, Some(124), "the job hung:\n{}", r.stderr);
    assert!(
        r.stderr.contains("btl_tcp_if_include=nosuch0"),
        "{}",
        r.stderr
    );
    let r = mpirun(&[
        "-np",
        "2",
        "--mca",
        "btl_tcp_if_include",
        "lo",
        "--mca",
        "btl_tcp_if_exclude",
        "eth0",
        prog.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("mutually exclusive"), "{}", r.stderr);
}

#[test]
fn one_node_default_opens_no_socket_and_lists_the_parameters() {
    let prog = example("pingpong");
    // The suite's own transport would come first on the command line: name the default here.
    let r = mpirun(&[
        "-np",
        "2",
        "--mca",
        "btl",
        "self,sm,ib,tcp",
        "--mca",
        "btl_base_verbose",
        "1",
        prog.to_str().unwrap(),
    ]);
    r.assert_ok();
    assert!(r.stderr.contains("transports self,sm"), "{}", r.stderr);
    assert!(!r.stderr.contains("btl tcp"), "{}", r.stderr);
    let r = mpirun(&["--mca-list"]);
    r.assert_ok();
    for p in [
        "btl_tcp_if_include",
        "btl_tcp_if_exclude",
        "btl_tcp_sndbuf",
        "self,sm,ib,tcp",
    ] {
        assert!(r.stdout.contains(p), "{p}: {}", r.stdout);
    }
}

#[test]
fn ib_and_tcp_allowed_take_ib_only_where_it_opens_on_every_rank() {
    let prog = example("ring");
    let job = |device: &str| {
        mpirun(&[
            "-np",
            "3",
            "--oversubscribe",
            "--mca",
            "btl",
            "ib,tcp,self",
            "--mca",
            "btl_ib_device",
            device,
            "--mca",
            "btl_base_verbose",
            "1",
            prog.to_str().unwrap(),
        ])
    };
    // No RDMA device here: every rank sees ib unavailable and all fall back to tcp.
    let r = job("verbs");
    r.assert_ok();
    assert!(r.stderr.contains("using tcp"), "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("transports self,tcp").count(),
        3,
        "{}",
        r.stderr
    );
    // The software provider opens everywhere: ib.
    let r = job("soft");
    r.assert_ok();
    assert_eq!(
        r.stderr.matches("transports self,ib").count(),
        3,
        "{}",
        r.stderr
    );
}
