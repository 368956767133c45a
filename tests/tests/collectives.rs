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

/// The hierarchical bcast, reduce, allreduce and barrier (coll/hier.rs): the collective programs
/// and the Rust API program again, with the ranks told they sit in several L3 domains
/// (`RMPI_LOCALITY_ALL`, as mpirun sets it from its placement on a machine that has them):
/// round-robin domains (no domain contiguous in rank order), blocks, and one rank alone.
#[test]
fn hierarchical_collectives_by_l3_domain() {
    let layouts: &[(usize, &[u32])] = &[
        (5, &[0, 1, 0, 1, 0]),
        (6, &[0, 0, 0, 1, 1, 1]),
        (7, &[2, 0, 1, 2, 0, 1, 2]),
        (8, &[0, 0, 0, 0, 0, 0, 0, 1]),
        (13, &[0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0]),
    ];
    let progs: Vec<_> = [
        "coll_bcast",
        "coll_reduce",
        "coll_allreduce",
        "coll_userop",
        "coll_nonblocking",
    ]
    .iter()
    .map(|n| (n.to_string(), c_program(&format!("tests/c/{n}.c"))))
    .collect();
    for (np, domains) in layouts {
        let all: Vec<String> = domains.iter().map(|d| format!("0.0.{d}")).collect();
        let env = format!("RMPI_LOCALITY_ALL={}", all.join(","));
        let np_s = np.to_string();
        for (name, p) in progs
            .iter()
            .map(|(n, p)| (n.as_str(), p.to_str().unwrap()))
            .chain([(
                "collectives",
                bin("collectives").to_str().unwrap().to_string().leak() as &str,
            )])
        {
            let r = mpirun(&["-np", &np_s, "--oversubscribe", "-x", &env, p]);
            r.assert_ok();
            assert!(
                r.stdout.contains(" No Errors") || r.stdout.contains("collectives: OK"),
                "{name} at np {np} with {env}:\n{}\n{}",
                r.stdout,
                r.stderr
            );
        }
    }
}
