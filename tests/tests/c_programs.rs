//! Unmodified C MPI programs built with our mpicc, under our mpirun.

use rmpi_tests::*;

#[test]
fn c_hello_ring_pingpong() {
    let hello = c_program("examples/c/hello.c");
    let ring = c_program("examples/c/ring.c");
    let pingpong = c_program("examples/c/pingpong.c");
    for np in [1, 2, 4, 8] {
        let r = mpirun_np(np, &hello, &[]);
        r.assert_ok();
        assert_eq!(
            r.stdout
                .lines()
                .filter(|l| l.contains("Hello from rank"))
                .count(),
            np,
            "{}",
            r.stdout
        );
        let r = mpirun_np(np, &ring, &[]);
        r.assert_ok();
        assert!(r.stdout.contains("ring: OK"), "np {np}: {}", r.stdout);
    }
    for np in [2, 4, 8] {
        let r = mpirun_np(
            np,
            &pingpong,
            &[
                "0", "1", "4095", "4096", "4097", "16383", "16384", "16385", "1048576", "16777216",
            ],
        );
        r.assert_ok();
        assert!(r.stdout.contains("pingpong: OK"), "np {np}: {}", r.stdout);
    }
}

#[test]
fn c_truncation_and_errors_return() {
    let p = c_program("tests/c/errors.c");
    let r = mpirun_np(2, &p, &[]);
    r.assert_ok();
    assert!(r.stdout.contains("errors: OK"), "{}", r.stdout);
}

#[test]
fn c_abort_reaches_mpirun() {
    let p = c_program("tests/c/abort.c");
    let r = mpirun_np(2, &p, &[]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr.contains("rank 1") && r.stderr.contains("MPI_Abort"),
        "{}",
        r.stderr
    );
}

#[test]
fn c_fatal_error_handler_aborts_with_a_message() {
    let p = c_program("tests/c/fatal.c");
    let r = mpirun_np(2, &p, &[]);
    assert_ne!(r.code, Some(0));
    assert!(
        r.stderr.contains("MPI_Send") && r.stderr.contains("MPI_ERR_RANK"),
        "{}",
        r.stderr
    );
}

#[test]
fn c_large_count_forms() {
    // Every implemented `_c` call once (p2p, collectives, user ops, datatypes), then
    // negative and oversized counts under MPI_ERRORS_RETURN.
    let p = c_program("tests/c/large_count.c");
    for np in [2, 3] {
        mpirun_np(np, &p, &[]).assert_no_errors(&format!("large_count at np {np}"));
    }
}

#[test]
fn c_status_getters() {
    // MPI_Status_get_source/_tag/_error read what setters and receives wrote; NULL is
    // MPI_ERR_ARG.
    let p = c_program("tests/c/status_get.c");
    for np in [1, 2] {
        mpirun_np(np, &p, &[]).assert_no_errors(&format!("status_get at np {np}"));
    }
}

#[test]
fn c_abi_introspection() {
    // MPI_Abi_get_info's type sizes; the Fortran information a Fortran layer sets (none until
    // then), before and after MPI_Init; bad arguments are MPI_ERR_ARG.
    let p = c_program("tests/c/abi_info.c");
    for np in [1, 3] {
        mpirun_np(np, &p, &[]).assert_no_errors(&format!("abi_info at np {np}"));
    }
}
