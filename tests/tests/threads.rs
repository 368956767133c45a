//! Thread levels (issues 13, 16): MPI_Init_thread(SERIALIZED) provides MPI_THREAD_SERIALIZED and
//! threads taking turns (behind the program's own mutex) all call MPI; FUNNELED still refuses a
//! second thread, and under SERIALIZED a call overlapping another is an error, not a data race;
//! MPI_THREAD_MULTIPLE runs calls from several threads at once.

use rmpi_tests::*;

#[test]
fn c_threads_take_turns_under_serialized() {
    let p = c_program("tests/c/thread_serialized.c");
    for np in [2, 3] {
        let r = mpirun_np(np, &p, &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "np {np}:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn c_funneled_refuses_a_second_thread() {
    let p = c_program("tests/c/thread_serialized.c");
    let r = mpirun_np(2, &p, &["funneled"]);
    assert!(!r.ok(), "the job should fail:\n{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("MPI_Send") && r.stderr.contains("MPI_THREAD_FUNNELED"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stdout.contains("returned under FUNNELED"),
        "{}",
        r.stdout
    );
}

#[test]
fn c_overlapping_calls_under_serialized_are_an_error() {
    let p = c_program("tests/c/thread_serialized.c");
    let r = mpirun_np(2, &p, &["overlap"]);
    assert!(!r.ok(), "the job should fail:\n{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("MPI_Barrier") && r.stderr.contains("two threads at once"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stdout.contains("returned under SERIALIZED"),
        "{}",
        r.stdout
    );
}

/// MPI_THREAD_MULTIPLE (issue 16): threads call MPI at once (tests/c/thread_multiple.c:
/// tagged point-to-point with every byte checked, ANY_SOURCE/ANY_TAG and Mprobe/Mrecv races,
/// concurrent dup/split on different communicators in opposite orders at odd and even ranks,
/// collectives beside point-to-point, MPI_Comm_create_group and MPI_Comm_create_from_group
/// among a group's members from several threads, a buffered send's flush while another thread
/// still has to send what the receiver waits for), oversubscribed on this 2-core machine, repeated.
#[test]
fn c_threads_call_at_once_under_multiple() {
    let p = c_program("tests/c/thread_multiple.c");
    for (np, reps) in [(2, 3), (3, 2), (4, 2)] {
        for rep in 0..reps {
            no_errors(np, "240", &p, &[], &format!("np {np} rep {rep}"));
        }
    }
}

/// Biased MULTIPLE (runtime.rs `BIAS`): the initialising thread calls alone without a lock
/// (windows of Isend/Irecv, Sendrecv, a window's fence and put), then a second thread's first
/// call, after a random delay, takes the runtime away while the first loops on calls and then
/// waits for a reply that needs the second's messages; both then exchange at once
/// (tests/c/thread_bias.c, every byte checked). Seeds vary where the revocation lands.
#[test]
fn c_second_thread_revokes_the_bias() {
    let p = c_program("tests/c/thread_bias.c");
    for (np, seeds) in [(2, 1..7), (3, 7..11)] {
        for seed in seeds {
            let seed = seed.to_string();
            no_errors(np, "60", &p, &[&seed], &format!("np {np} seed {seed}"));
        }
    }
    // Each rank says it started biased and that a second thread revoked it.
    let r = mpirun(&[
        "--timeout",
        "60",
        "-np",
        "2",
        "--oversubscribe",
        "--mca",
        "btl_base_verbose",
        "1",
        p.to_str().expect("utf-8 path"),
        "3",
    ]);
    r.assert_no_errors("np 2 seed 3, btl_base_verbose 1");
    for what in ["is biased to the initialising thread", "no longer biased"] {
        assert_eq!(r.stderr.matches(what).count(), 2, "{what}:\n{}", r.stderr);
    }
}

/// `--mca mpi_thread_level` makes MPI_Init ask for that level (tests/c/thread_level.c); a
/// value that names no level stops MPI_Init with a message naming the parameter.
#[test]
fn c_mpi_thread_level_sets_what_mpi_init_asks_for() {
    let p = c_program("tests/c/thread_level.c");
    let prog = p.to_str().expect("utf-8 path");
    for (v, want) in [
        (None, "funneled"),
        (Some("multiple"), "multiple"),
        (Some("MPI_THREAD_SERIALIZED"), "serialized"),
        (Some("0"), "single"),
    ] {
        let mut args = vec!["--timeout", "30", "-np", "2"];
        if let Some(v) = v {
            args.extend(["--mca", "mpi_thread_level", v]);
        }
        args.push(prog);
        let r = mpirun(&args);
        r.assert_ok();
        assert!(
            r.stdout.contains(&format!("provided {want}")),
            "{v:?}:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    let r = mpirun(&[
        "--timeout",
        "30",
        "-np",
        "2",
        "--mca",
        "mpi_thread_level",
        "many",
        prog,
    ]);
    assert!(!r.ok(), "the job should fail:\n{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("mpi_thread_level") && r.stderr.contains("\"many\""),
        "{}",
        r.stderr
    );
}

/// `prog args` at `np` ranks, oversubscribed, bounded by `timeout` seconds: it must end well and
/// print " No Errors".
fn no_errors(np: usize, timeout: &str, prog: &std::path::Path, args: &[&str], what: &str) {
    let np = np.to_string();
    let mut v = vec!["--timeout", timeout, "-np", &np, "--oversubscribe"];
    v.push(prog.to_str().expect("utf-8 path"));
    v.extend_from_slice(args);
    let r = mpirun(&v);
    assert!(
        r.ok() && r.stdout.contains(" No Errors"),
        "{what}:\n{}{}",
        r.stdout,
        r.stderr
    );
}

/// MPI_Comm_spawn from three threads at once under MULTIPLE, their roots at different ranks,
/// beside allreduces on a fourth communicator (tests/c/spawn_threads.c; MPICH's
/// threads/spawn/th_taskmanager): every child checks what each parent sent and answers it, and
/// both sides disconnect. Spawns waited for their children and members inside the runtime, so
/// ranks entering them in different orders deadlocked; their context ids, chosen concurrently,
/// also clash there and must be chosen again (`inter_agree.rs`).
#[test]
fn c_spawn_from_several_threads_at_once() {
    let p = c_program("tests/c/spawn_threads.c");
    for (np, rounds) in [(1, "3"), (2, "4"), (3, "3")] {
        no_errors(np, "180", &p, &[rounds], &format!("np {np}"));
    }
}

/// Collective creation and synchronisation calls from two threads on two communicators,
/// entered in opposite orders at even and odd ranks (tests/c/thread_coll_orders.c, every op):
/// each thread's partner is still asleep when the rank's other thread arrives, so a call that
/// waits for its members while holding the runtime deadlocks the job. Intercommunicators
/// (create, dup, split, merge), topologies, windows (create, allocate, fence,
/// post/start/complete/wait, lock/unlock, lock_all/flush_all/unlock_all, free) and files
/// (open, collective write, close) waited inside the runtime.
#[test]
fn c_collective_calls_from_two_threads_in_opposite_orders() {
    let p = c_program("tests/c/thread_coll_orders.c");
    for np in [2, 3, 4] {
        no_errors(np, "120", &p, &[], &format!("np {np}"));
    }
}

/// Under MULTIPLE, MPI_Recv's direct receive waits inside the runtime only while no other
/// thread wants it (tests/c/thread_recv_handoff.c: the message a thread waits for comes only
/// after another thread of its process sent; then every byte of 0 B - 256 KiB one thread
/// alone, through the same path).
#[test]
fn c_a_waiting_receive_gives_the_runtime_to_another_thread() {
    let p = c_program("tests/c/thread_recv_handoff.c");
    for np in [2, 3] {
        no_errors(np, "60", &p, &[], &format!("np {np}"));
    }
}

/// Ranks at different levels in one job (tests/c/thread_mixed.c: even ranks MULTIPLE, odd
/// ranks FUNNELED): communicator creation and barriers match across the levels, and the
/// MULTIPLE ranks' own communicator takes the MULTIPLE forms from two threads at once.
#[test]
fn c_mixed_thread_levels_in_one_job() {
    let p = c_program("tests/c/thread_mixed.c");
    for np in [2, 3, 4] {
        let r = mpirun_np(np, &p, &[]);
        assert!(
            r.ok() && r.stdout.contains(" No Errors"),
            "np {np}:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
}

/// Each phase of thread_multiple.c alone at np 2 (a failure names its phase).
#[test]
fn c_multiple_phases_alone() {
    let p = c_program("tests/c/thread_multiple.c");
    for phase in [
        "p2p", "any", "mprobe", "comm", "collp2p", "dupfree", "group", "bsend",
    ] {
        let r = mpirun_np(2, &p, &[phase]);
        assert!(
            r.ok() && r.stdout.contains(" No Errors"),
            "{phase}:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
}

/// The Rust API under MULTIPLE (tests/src/bin/threads_multiple.rs): scoped threads share
/// `SharedCommunicator`s for point-to-point, collectives and communicator creation at once.
#[test]
fn rust_scoped_threads_under_multiple() {
    let p = bin("threads_multiple");
    for np in [2, 3, 4] {
        let r = mpirun_np(np, &p, &[]);
        assert!(
            r.ok() && r.stdout.contains("threads_multiple: OK"),
            "np {np}:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
}

/// The threaded message-rate benchmark (benchmarks/c/mt_rate.c) as a correctness run: pairs of
/// threads, each pair on its own communicator or with its own tag on COMM_WORLD, windows of
/// non-blocking sends, every byte of the first window checked.
#[test]
fn c_mt_rate_benchmark_under_multiple() {
    let p = c_program("benchmarks/c/mt_rate.c");
    let runs: [(usize, &[&str]); 3] = [
        (2, &["-t", "2", "-n", "20", "1", "4096"]),
        (
            2,
            &["-t", "4", "-n", "10", "-w", "16", "--tag", "8", "3000"],
        ),
        (4, &["-t", "3", "-n", "10", "64"]),
    ];
    for (np, args) in runs {
        let r = mpirun_np(np, &p, args);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "np {np} {args:?}:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
}

/// The async progress thread (`--mca mpi_async_progress 1`, issue 16): operations complete
/// while the rank they need waits outside MPI (tests/c/async_progress.c: a rendezvous receive,
/// an eager flood larger than the rings, passive-target RMA, a non-blocking broadcast through
/// that rank), every byte checked; over sm's doorbells and without them (tcp, or ib under
/// `RMPI_TEST_BTL`, where the thread polls), spinning, with RMA as messages, and with the
/// rendezvous streamed. Without the thread the same job hangs (shown once, cut short).
#[test]
fn c_async_progress_thread_completes_what_a_computing_rank_needs() {
    let p = c_program("tests/c/async_progress.c");
    let variants: [&[&str]; 5] = [
        &[],
        &["--mca", "btl", "tcp,self"],
        &["--mca", "mpi_async_progress_interval", "0"],
        &["--mca", "osc_direct", "off"],
        &["--mca", "btl_sm_single_copy", "none"],
    ];
    for (i, extra) in variants.iter().enumerate() {
        for np in [2, 3, 4] {
            if i > 0 && np == 3 {
                continue;
            }
            let dir = std::env::temp_dir().join(marker(&format!("async{i}-{np}")));
            std::fs::create_dir_all(&dir).unwrap();
            let np_s = np.to_string();
            let mut args = vec![
                "--timeout",
                "120",
                "-np",
                &np_s,
                "--oversubscribe",
                "--mca",
                "mpi_async_progress",
                "1",
            ];
            args.extend_from_slice(extra);
            args.push(p.to_str().unwrap());
            args.push(dir.to_str().unwrap());
            let r = mpirun(&args);
            let _ = std::fs::remove_dir_all(&dir);
            assert!(
                r.ok() && r.stdout.contains(" No Errors"),
                "{extra:?} np {np}:\n{}{}",
                r.stdout,
                r.stderr
            );
        }
    }
    // The control: no progress thread, no progress while rank 1 is away.
    let dir = std::env::temp_dir().join(marker("async-off"));
    std::fs::create_dir_all(&dir).unwrap();
    let r = mpirun(&[
        "--timeout",
        "5",
        "-np",
        "2",
        p.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !r.ok() && r.stderr.contains("timed out"),
        "the job should hang without the thread:\n{}{}",
        r.stdout,
        r.stderr
    );
}

/// The whole MULTIPLE test and the overlap benchmark (benchmarks/c/overlap.c, every byte
/// checked) with the progress thread beside the application's threads.
#[test]
fn c_async_progress_thread_beside_application_threads() {
    let p = c_program("tests/c/thread_multiple.c");
    for np in [2, 3] {
        let r = mpirun(&[
            "--timeout",
            "240",
            "-np",
            &np.to_string(),
            "--oversubscribe",
            "--mca",
            "mpi_async_progress",
            "1",
            p.to_str().unwrap(),
        ]);
        assert!(
            r.ok() && r.stdout.contains(" No Errors"),
            "np {np}:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    let o = c_program("benchmarks/c/overlap.c");
    for mode in ["both", "recv", "send"] {
        let r = mpirun(&[
            "--timeout",
            "120",
            "-np",
            "2",
            "--mca",
            "mpi_async_progress",
            "1",
            o.to_str().unwrap(),
            "-n",
            "4",
            mode,
            "1000",
            "20000",
            "300000",
            "2100000",
        ]);
        r.assert_no_errors(mode);
    }
}
