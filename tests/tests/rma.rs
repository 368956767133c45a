//! One-sided communication (MPI RMA): C programs checking every value, at np 1, 3 and 4
//! (oversubscribed), over the suite's transport (`RMPI_TEST_BTL=ib`: `--mca btl ib,self`).

use rmpi_tests::*;

const NPS: [usize; 3] = [1, 3, 4];

fn run_c(src: &str) {
    let p = c_program(src);
    for np in NPS {
        let r = mpirun_np(np, &p, &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "{src} at np {np}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

/// Fence, PSCW, lock/unlock, lock_all + flush, all four window flavors, every operation.
#[test]
fn c_rma_basic() {
    run_c("tests/c/rma_basic.c");
}

/// The Rust API (`rmpi::Window`).
#[test]
fn rust_rma() {
    let p = bin("rma");
    for np in NPS {
        let r = mpirun_np(np, &p, &[]);
        r.assert_ok();
        assert!(r.stdout.contains("rma: OK"), "np {np}: {}", r.stdout);
    }
}
