//! Process topologies and neighbour collectives under the real mpirun: the C programs
//! (MPICH-style, printing " No Errors") and the Rust API program, at 1, 3, 4 and 6 ranks
//! (3 and 6 are not powers of two; 1 and 2-extent periodic dimensions make a rank its own or a
//! repeated neighbour). `RMPI_TEST_BTL=ib` runs them over `--mca btl ib,self`.

use rmpi_tests::*;

const NPS: [usize; 4] = [1, 3, 4, 6];

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
fn c_topology_creation_queries_and_errors() {
    c_test("topo_create");
}

#[test]
fn c_neighbor_collectives() {
    c_test("topo_neighbor");
}

#[test]
fn rust_topology_api() {
    for np in NPS.into_iter().chain([2]) {
        let r = mpirun_np(np, &bin("topology"), &[]);
        r.assert_ok();
        assert!(r.stdout.contains("topology: OK"), "np {np}: {}", r.stdout);
    }
}
