//! Communicators, groups, attributes, error handlers and environment calls: C programs (each
//! printing ` No Errors`) and a Rust program, at 1, 2, 3, 4 and 8 ranks.

use rmpi_tests::*;

const NPS: [usize; 5] = [1, 2, 3, 4, 8];

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

#[test]
fn c_comm_dup() {
    run_c("tests/c/comm_dup.c");
}

#[test]
fn c_comm_split() {
    run_c("tests/c/comm_split.c");
}

#[test]
fn c_comm_create_many() {
    run_c("tests/c/comm_create.c");
    // Under MULTIPLE creation is a split outside the runtime: disjoint groups too.
    let p = c_program("tests/c/comm_create.c");
    for np in NPS {
        let r = mpirun_np(np, &p, &["multiple"]);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "multiple, np {np}:\n{}",
            r.stdout
        );
    }
}

#[test]
fn c_comm_group() {
    run_c("tests/c/comm_group.c");
}

#[test]
fn c_comm_attr() {
    run_c("tests/c/comm_attr.c");
}

#[test]
fn c_comm_errhandler() {
    run_c("tests/c/comm_errhandler.c");
}

/// Info objects (tests/c/info.c at np 1 and 3; its MPI_INFO_ENV checks want these arguments).
#[test]
fn c_info() {
    let p = c_program("tests/c/info.c");
    for np in [1, 3] {
        let r = mpirun_np(np, &p, &["first", "second"]);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "np {np}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn c_env() {
    run_c("tests/c/env.c");
}

#[test]
fn c_fatal_messages_name_the_call_and_the_problem() {
    let p = c_program("tests/c/comm_fatal.c");
    let cases = [
        (
            "free_world",
            "MPI_Comm_free",
            "MPI_ERR_COMM",
            "cannot be freed",
        ),
        ("split_color", "MPI_Comm_split", "MPI_ERR_ARG", "color -7"),
        ("group_incl", "MPI_Group_incl", "MPI_ERR_RANK", "rank 99"),
        ("keyval", "MPI_Comm_set_attr", "MPI_ERR_KEYVAL", "4242"),
        (
            "dup_comm_null",
            "MPI_Comm_dup",
            "MPI_ERR_COMM",
            "MPI_COMM_NULL",
        ),
        (
            "errors_abort",
            "MPI_Send",
            "MPI_ERR_TAG",
            "MPI_ERRORS_ABORT",
        ),
    ];
    for (arg, call, class, detail) in cases {
        let r = mpirun_np(2, &p, &[arg]);
        assert_ne!(r.code, Some(0), "{arg}: {}", r.stderr);
        assert!(!r.stdout.contains("not reached"), "{arg}: {}", r.stdout);
        for s in [call, class, detail] {
            assert!(r.stderr.contains(s), "{arg}: no '{s}' in:\n{}", r.stderr);
        }
    }
}

#[test]
fn rust_communicators() {
    let p = bin("comms");
    for np in NPS {
        let r = mpirun_np(np, &p, &[]);
        r.assert_ok();
        assert!(r.stdout.contains("comms: OK"), "np {np}: {}", r.stdout);
    }
}

/// MPI_COMM_TYPE_HW_GUIDED by hardware level (Package, NUMANode, L3Cache, L2Cache, Core, PU), the
/// expected groups worked out from where mpirun held each rank: bound to cores (np 2 where the
/// machine has 2 cores), unbound, and oversubscribed.
#[test]
fn c_hw_guided_split_follows_the_binding() {
    let p = c_program("tests/c/hw_guided.c");
    let p = p.to_str().unwrap();
    for args in [
        vec!["-np", "2", "--oversubscribe", p],
        vec!["-np", "2", "--oversubscribe", "--bind-to", "none", p],
        vec!["-np", "1", "--bind-to", "hwthread", p],
        vec!["-np", "3", "--oversubscribe", p],
    ] {
        let r = mpirun(&args);
        r.assert_ok();
        assert!(
            r.stdout.contains("hw_guided ok"),
            "{args:?}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
    // Bound to a core, a rank is held within one object of every level (PU too, unless the
    // core has several hardware threads).
    let r = mpirun(&["-np", "1", "--bind-to", "core", p]);
    r.assert_ok();
    assert!(
        r.stdout.contains("hw_guided ok 6") || r.stdout.contains("hw_guided ok 5"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
}
