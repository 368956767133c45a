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

/// `prog` at np 3 and 4 with the direct path (`osc_direct=auto`: load/store and CMA over sm)
/// and without it (every operation a message); over ib the direct path is not taken.
fn run_both_paths(src: &str) {
    let p = c_program(src);
    let prog = p.to_str().expect("utf-8 path");
    for direct in ["auto", "off"] {
        for np in [3, 4] {
            let np_s = np.to_string();
            let r = mpirun(&[
                "-np",
                &np_s,
                "--oversubscribe",
                "--mca",
                "osc_direct",
                direct,
                prog,
            ]);
            r.assert_ok();
            assert!(
                r.stdout.contains(" No Errors"),
                "{src} at np {np}, osc_direct={direct}:\n{}\n{}",
                r.stdout,
                r.stderr
            );
        }
    }
}

/// The basic test with the message path forced (the default run above takes the direct one).
#[test]
fn c_rma_basic_messages() {
    let p = c_program("tests/c/rma_basic.c");
    let r = mpirun(&[
        "-np",
        "3",
        "--oversubscribe",
        "--mca",
        "osc_direct",
        "off",
        p.to_str().expect("utf-8 path"),
    ]);
    r.assert_ok();
    assert!(
        r.stdout.contains(" No Errors"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
}

/// Derived types, 8 B to 1 MiB, concurrent accumulates from every rank on one element (the
/// atomic and the locked route, mixed calls), exclusive locks as a mutex, PSCW, and gets from
/// a target computing outside MPI, for Win_create, Win_allocate and Win_allocate_shared.
#[test]
fn c_rma_direct() {
    run_both_paths("tests/c/rma_direct.c");
}

/// Fetch_and_op, Compare_and_swap (increments and a spinlock) and accumulates on 8-byte
/// elements from every rank at once; over ib with `osc_direct=auto` they are verbs atomics.
#[test]
fn c_rma_atomic() {
    run_both_paths("tests/c/rma_atomic.c");
}

/// MPI_ERR_RMA_SYNC: operations and synchronisation calls outside the epoch they need (no
/// epoch, a used fence epoch, another target's lock, lock_all, PSCW), on both paths; the
/// window stays usable after each.
#[test]
fn c_rma_sync_errors() {
    run_c("tests/c/rma_sync_errors.c");
    run_both_paths("tests/c/rma_sync_errors.c");
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
