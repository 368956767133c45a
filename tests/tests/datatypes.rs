//! Derived datatypes from C (constructors, queries, pack/unpack, on the wire) and from Rust,
//! at 1, 2 and 4 ranks.

use rmpi_tests::*;

fn run_c(src: &str) {
    let p = c_program(src);
    for np in [1, 2, 4] {
        let r = mpirun_np(np, &p, &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "{src} at np {np}:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn c_vector() {
    run_c("tests/c/dtype_vector.c");
}

#[test]
fn c_indexed() {
    run_c("tests/c/dtype_indexed.c");
}

#[test]
fn c_struct() {
    run_c("tests/c/dtype_struct.c");
}

#[test]
fn c_subarray() {
    run_c("tests/c/dtype_subarray.c");
}

#[test]
fn c_resized() {
    run_c("tests/c/dtype_resized.c");
}

#[test]
fn c_pack() {
    run_c("tests/c/dtype_pack.c");
}

#[test]
fn c_sendrecv() {
    run_c("tests/c/dtype_sendrecv.c");
}

/// Large non-contiguous messages over both rendezvous paths: streamed and single copy (CMA,
/// which non-contiguous buffers turn into streaming).
#[test]
fn c_sendrecv_single_copy_modes() {
    let p = c_program("tests/c/dtype_sendrecv.c");
    for mode in ["cma", "none"] {
        let r = mpirun(&[
            "-np",
            "2",
            "--oversubscribe",
            "--mca",
            "btl_sm_single_copy",
            mode,
            p.to_str().expect("utf-8 path"),
        ]);
        r.assert_ok();
        assert!(r.stdout.contains(" No Errors"), "{mode}: {}", r.stdout);
    }
}

#[test]
fn rust_user_datatypes() {
    for np in [1, 2, 4] {
        let r = mpirun_np(np, &bin("datatypes"), &[]);
        r.assert_ok();
        assert!(r.stdout.contains("datatypes: OK"), "np {np}: {}", r.stdout);
    }
}
