//! Collectives and reductions under the real mpirun: C programs (MPICH-style, printing
//! " No Errors") and the Rust API program, at 1, 2, 3, 4, 5, 8 and 13 ranks (oversubscribed on
//! small machines; 13 = 8 + 5 exercises the non-power-of-two paths with more ranks).

use rmpi_tests::*;

const NPS: [usize; 7] = [1, 2, 3, 4, 5, 8, 13];

fn c_test(name: &str) {
    let prog = c_program(&format!("tests/c/{name}.c"));
    for np in NPS {
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
fn c_bcast() {
    c_test("coll_bcast");
}

#[test]
fn c_reduce() {
    c_test("coll_reduce");
}

#[test]
fn c_allreduce() {
    c_test("coll_allreduce");
}

#[test]
fn c_gather_scatter_allgather() {
    c_test("coll_gather");
}

#[test]
fn c_alltoall() {
    c_test("coll_alltoall");
}

#[test]
fn c_scan_reduce_scatter() {
    c_test("coll_scan");
}

#[test]
fn c_nonblocking_and_p2p_mix() {
    c_test("coll_nonblocking");
}

#[test]
fn c_user_ops() {
    c_test("coll_userop");
}

#[test]
fn rust_collectives_api() {
    for np in NPS {
        let r = mpirun_np(np, &bin("collectives"), &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains("collectives: OK"),
            "np {np}: {}",
            r.stdout
        );
    }
}
