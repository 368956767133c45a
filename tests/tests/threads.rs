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
/// among a group's members from several threads), oversubscribed on this 2-core machine, repeated.
#[test]
fn c_threads_call_at_once_under_multiple() {
    let p = c_program("tests/c/thread_multiple.c");
    for (np, reps) in [(2, 3), (3, 2), (4, 2)] {
        for rep in 0..reps {
            let r = mpirun(&[
                "--timeout",
                "240",
                "-np",
                &np.to_string(),
                "--oversubscribe",
                p.to_str().unwrap(),
            ]);
            assert!(
                r.ok() && r.stdout.contains(" No Errors"),
                "np {np} rep {rep}:\n{}{}",
                r.stdout,
                r.stderr
            );
        }
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
        "p2p", "any", "mprobe", "comm", "collp2p", "dupfree", "group",
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
