//! Thread levels (issue 13): MPI_Init_thread(SERIALIZED) provides MPI_THREAD_SERIALIZED and
//! threads taking turns (behind the program's own mutex) all call MPI; FUNNELED still refuses a
//! second thread, and under SERIALIZED a call overlapping another is an error, not a data race.

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
