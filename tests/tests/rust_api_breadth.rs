//! The Rust API's breadth (issue 14): collectives on intercommunicators
//! (tests/src/bin/inter_coll.rs), persistent collectives (persistent_coll.rs) and partitioned
//! communication (partitioned.rs), each at np 3 and 5 (groups of unequal sizes, not powers of
//! two), over the suite's transport (`RMPI_TEST_BTL=ib`: verbs).

use rmpi_tests::*;

fn run(name: &str) {
    let p = bin(name);
    for np in [3, 5] {
        let r = mpirun_np(np, &p, &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains(&format!("{name}: OK")),
            "{name} at np {np}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn rust_intercomm_collectives() {
    run("inter_coll");
}

#[test]
fn rust_persistent_collectives() {
    run("persistent_coll");
}

#[test]
fn rust_partitioned() {
    run("partitioned");
}
