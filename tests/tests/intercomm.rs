//! Intercommunicators (tests/c/intercomm.c): creation, queries, point-to-point, every
//! collective, dup/split/create, merge and the MPI-4 creation from groups, at np 2 to 5 (odd np
//! gives groups of unequal sizes), and the non-blocking MPI_Comm_idup. Over the suite's transport
//! (`RMPI_TEST_BTL=ib`: verbs).

use rmpi_tests::*;

#[test]
fn c_intercomm() {
    let p = c_program("tests/c/intercomm.c");
    for np in [2, 3, 4, 5] {
        let r = mpirun_np(np, &p, &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "intercomm.c at np {np}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

/// MPI_Comm_idup does not block (tests/c/comm_idup_nb.c): a late rank, overlapping idups in
/// opposite orders, an idup of an intercommunicator.
#[test]
fn c_comm_idup_nonblocking() {
    let p = c_program("tests/c/comm_idup_nb.c");
    for np in [1, 2, 3, 5] {
        let r = mpirun_np(np, &p, &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "comm_idup_nb.c at np {np}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

/// The Rust API (tests/src/bin/intercomm.rs) at np 2 to 5.
#[test]
fn rust_intercomm() {
    let p = bin("intercomm");
    for np in [2, 3, 4, 5] {
        let r = mpirun_np(np, &p, &[]);
        r.assert_ok();
        assert!(r.stdout.contains("intercomm: OK"), "np {np}: {}", r.stdout);
    }
}
