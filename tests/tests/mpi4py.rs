//! mpi4py on rmpi (issue 13): `scripts/mpi4py.sh --quick` builds mpi4py from PyPI's sdist with our
//! mpicc in a virtualenv under target/mpi4py (once; reused while mpi.h and mpicc are unchanged,
//! the library itself being loaded at run time) and runs a fixed subset of mpi4py's own test
//! modules (the sdist's test/main.py) under our mpirun at np 1 and 2: none of their tests may
//! fail, error, crash or hang. Without PyPI (no network) the script says why and the test passes.
//! The full suite, and Open MPI as the baseline: `scripts/mpi4py.sh --baseline`.

use std::time::Duration;

use rmpi_tests::*;

#[test]
fn mpi4py_quick_subset() {
    // Once per suite: not again in scripts/test.sh's variants (other memhook providers, btl ib),
    // whose library mpi4py would load just the same.
    for var in ["RMPI_TEST_FEATURES", "RMPI_TEST_BTL"] {
        if std::env::var(var).is_ok_and(|v| !v.is_empty()) {
            println!("mpi4py: skipped under {var} (run once, in the default configuration)");
            return;
        }
    }
    // A first build takes minutes; each job is bounded by the script.
    let Some(text) = client_script_quick("mpi4py", Duration::from_secs(2400)) else {
        return;
    };
    for np in [1, 2] {
        let row = text
            .lines()
            .find(|l| l.split_whitespace().take(2).eq(["rmpi", &np.to_string()]))
            .unwrap_or_else(|| panic!("no summary for rmpi np {np}:\n{text}"));
        let n: Vec<u64> = row
            .split_whitespace()
            .skip(2)
            .map(|c| c.parse().expect("count"))
            .collect();
        // tests passed failed errors skipped crashed timeout
        assert!(
            n[0] > 100 && n[1] > 100,
            "too few tests ran at np {np}: {row}"
        );
        assert_eq!(
            (n[2], n[3], n[5], n[6]),
            (0, 0, 0, 0),
            "np {np}: {row}\n{text}"
        );
    }
}
