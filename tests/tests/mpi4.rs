//! MPI-4 calls (issue 14 item 6): persistent collectives, partitioned communication,
//! generalized requests, MPI_T control variables, large counts. C programs printing
//! " No Errors", each at an np that is not a power of two among others.

use rmpi_tests::*;

fn c_test(name: &str, nps: &[usize]) {
    let prog = c_program(&format!("tests/c/{name}.c"));
    for &np in nps {
        let r = mpirun_np(np, &prog, &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "{name} at np {np}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn c_persistent_collectives() {
    c_test("coll_persistent", &[1, 2, 3, 5]);
}

#[test]
fn c_partitioned() {
    c_test("part", &[1, 2, 3, 5]);
}
