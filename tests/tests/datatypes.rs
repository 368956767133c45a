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

/// Non-contiguous messages at 1, 2, 4 ranks, then over every path: rendezvous streamed and by
/// single copy (CMA, which a non-contiguous buffer turns into streaming), and eager messages cut
/// into many small fragments by a small payload ring. One test: tests run in parallel and each
/// compiles its C program to the same path.
#[test]
fn c_sendrecv() {
    run_c("tests/c/dtype_sendrecv.c");
    let p = c_program("tests/c/dtype_sendrecv.c");
    let prog = p.to_str().expect("utf-8 path");
    let modes: [&[&str]; 3] = [
        &["--mca", "btl_sm_single_copy", "cma"],
        &["--mca", "btl_sm_single_copy", "none"],
        &[
            "--mca",
            "btl_sm_payload_bytes",
            "2k",
            "--mca",
            "btl_sm_fifo_cells",
            "4",
        ],
    ];
    for mode in modes {
        let mut args = vec!["-np", "2", "--oversubscribe"];
        args.extend_from_slice(mode);
        args.push(prog);
        let r = mpirun(&args);
        r.assert_ok();
        assert!(r.stdout.contains(" No Errors"), "{mode:?}: {}", r.stdout);
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
