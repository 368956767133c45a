//! The issue-3 audit's test scenarios (docs/issue3-audit.md) under the real mpirun at np 1 to
//! 8: collectives on a split communicator beside point-to-point traffic on the parent,
//! overlapping communicators in flight, derived datatypes in collectives, collective error
//! classes and user handlers, MPI_Irsend; in C and, for the first, second and fourth, in Rust.

use rmpi_tests::*;

fn all_nps(prog: &std::path::Path, args: &[&str], what: &str) {
    for np in 1..=8 {
        let r = mpirun_np(np, prog, args);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "{what} at np {np}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

fn c_test(name: &str) {
    all_nps(&c_program(&format!("tests/c/{name}.c")), &[], name);
}

#[test]
fn c_collectives_on_split_beside_parent_p2p() {
    c_test("coll_split_p2p");
}

#[test]
fn c_overlapping_communicators_in_flight() {
    c_test("coll_overlap");
}

#[test]
fn c_derived_datatypes_in_collectives() {
    c_test("coll_dtype");
}

#[test]
fn c_collective_errors_and_user_handler() {
    c_test("coll_errors");
}

#[test]
fn c_irsend() {
    c_test("p2p_irsend");
}

#[test]
fn rust_split_overlap_errors() {
    all_nps(&bin("issue3_audit"), &[], "issue3_audit");
}

/// A bad root under MPI_ERRORS_ARE_FATAL aborts the job with a message naming the call and
/// the argument, and a non-zero exit.
#[test]
fn c_collective_fatal_message() {
    let prog = c_program("tests/c/coll_errors.c");
    for np in [1, 3] {
        let r = mpirun_np(np, &prog, &["fatal"]);
        assert!(
            !r.ok(),
            "bad root under the fatal handler exited 0:\n{}",
            r.stdout
        );
        assert!(
            r.stderr.contains("MPI_Bcast") && r.stderr.contains("root"),
            "np {np}: no clear message:\n{}",
            r.stderr
        );
        assert!(
            !r.stdout.contains("returned"),
            "the call returned:\n{}",
            r.stdout
        );
    }
}

#[test]
fn rust_alltoallw_indexed_block_threading() {
    for np in [1, 2, 3, 4] {
        let r = mpirun_np(np, &bin("rust_gaps"), &[]);
        r.assert_ok();
        assert!(r.stdout.contains("rust_gaps: OK"), "np {np}: {}", r.stdout);
    }
}
