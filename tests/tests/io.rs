//! MPI-IO and MPI Sessions (the clients issue, mpi4py's test_io/test_file/test_session): C
//! programs printing " No Errors", at np 1 and 3, over the suite's transport.

use rmpi_tests::*;

fn c_test(name: &str, nps: &[usize], args: &[&str]) {
    let prog = c_program(&format!("tests/c/{name}.c"));
    for &np in nps {
        let r = mpirun_np(np, &prog, args);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "{name} {args:?} at np {np}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

/// Offsets, a strided view, shared and ordered pointers, collective, non-blocking and split
/// accesses, sizes, amode and access errors, delete; nothing left in the temporary directory.
#[test]
fn c_file_io() {
    c_test("file_io", &[1, 3], &[]);
}

/// Sessions alone, and beside the world model (a session outliving MPI_Finalize).
#[test]
fn c_sessions() {
    c_test("session", &[1, 3], &[]);
    c_test("session", &[1, 3], &["world"]);
}
