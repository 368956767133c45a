//! rsmpi on rmpi (issue 13): `scripts/rsmpi.sh --quick` builds tests/rsmpi, a program on rsmpi
//! (crates.io crate `mpi`, bindings generated from our mpi.h through `mpicc -show`), against our
//! mpicc under target/rsmpi (once; cargo rebuilds only what changed), and runs it under our mpirun
//! at np 2 and 3: a ring, immediate sends in `mpi::request::scope`, all_reduce, broadcast, split
//! and a `#[derive(Equivalence)]` struct, every result checked. Without crates.io (no network) the
//! script says why and the test passes. rsmpi's own examples, and Open MPI as the baseline:
//! `scripts/rsmpi.sh --baseline`.

use std::time::Duration;

use rmpi_tests::*;

#[test]
fn rsmpi_client() {
    // Not again under the other memhook providers: the client links the C library built with
    // the default features. (Under RMPI_TEST_BTL=ib the script runs its jobs over btl ib.)
    if std::env::var("RMPI_TEST_FEATURES").is_ok_and(|v| !v.is_empty()) {
        println!("rsmpi: skipped under RMPI_TEST_FEATURES (run in the default configuration)");
        return;
    }
    // A first build takes minutes; each job is bounded by the script.
    let Some(text) = client_script_quick("rsmpi", Duration::from_secs(1800)) else {
        return;
    };
    for np in [2, 3] {
        assert!(
            text.contains(&format!(
                "rsmpi client rmpi np {np}: ok: rsmpi client: {np} ranks ok"
            )),
            "no success at np {np}:\n{text}"
        );
    }
}
