//! rsmpi on rmpi (issue 13): `scripts/rsmpi.sh --quick` builds tests/rsmpi, a program on rsmpi
//! (crates.io crate `mpi`, bindings generated from our mpi.h through `mpicc -show`), against our
//! mpicc under target/rsmpi (once; cargo rebuilds only what changed), and runs it under our mpirun
//! at np 2 and 3: a ring, immediate sends in `mpi::request::scope`, all_reduce, broadcast, split
//! and a `#[derive(Equivalence)]` struct, every result checked. Without crates.io (no network) the
//! script says why and the test passes. rsmpi's own examples, and Open MPI as the baseline:
//! `scripts/rsmpi.sh --baseline`.

use std::process::Command;
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
    ensure_built();
    let target = target_dir();
    let profile = target
        .file_name()
        .and_then(|n| n.to_str())
        .expect("profile");
    let dir = target.parent().expect("target dir").join("rsmpi");
    std::fs::create_dir_all(&dir).expect("create target/rsmpi");
    // The report goes to a file (run_bounded reads its pipes only at the end).
    let out_path = dir.join("quick.out");
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(r#""$0" --quick > "$1" 2>&1"#)
        .arg(repo_root().join("scripts/rsmpi.sh"))
        .arg(&out_path)
        .env("RMPI_RSMPI_PROFILE", profile)
        .env("CARGO_TARGET_DIR", target.parent().expect("target dir"));
    // A first build of rsmpi (bindgen, syn) takes minutes; each job is bounded by the script.
    let r = run_bounded(cmd, Duration::from_secs(1800));
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    println!("{text}");
    if text.contains("rsmpi.sh: skipped:") {
        assert_eq!(r.code, Some(0), "skipped, yet exit {:?}", r.code);
        return;
    }
    assert_eq!(r.code, Some(0), "scripts/rsmpi.sh --quick failed:\n{text}");
    for np in [2, 3] {
        assert!(
            text.contains(&format!(
                "rsmpi client rmpi np {np}: ok: rsmpi client: {np} ranks ok"
            )),
            "no success at np {np}:\n{text}"
        );
    }
}
