//! Dynamic processes (tests/c/spawn.c): MPI_Comm_spawn of 2 and 3 children from np 1 and 3
//! parents (argv, the children's world, p2p both ways, a streamed large message, bcast and
//! allreduce across, Intercomm_merge), MPI_Comm_spawn_multiple of two commands whose groups meet
//! by publish/lookup and accept/connect, disconnect; a missing program gives MPI_ERR_SPAWN, and a
//! killed child ends the whole job. Over the suite's transport (`RMPI_TEST_BTL=ib`: verbs).

use rmpi_tests::*;

/// Spawned children are found as `./spawn` in the working directory too: run from there.
fn run_in(dir: &std::path::Path, np: usize, args: &[&str]) -> Run {
    let p = dir.join("spawn");
    let np_s = np.to_string();
    let mut v = vec!["-np", &np_s, "--oversubscribe", "--timeout", "60"];
    v.push(p.to_str().expect("utf-8"));
    v.extend_from_slice(args);
    mpirun(&v)
}

#[test]
fn c_spawn() {
    let p = c_program("tests/c/spawn.c");
    let dir = p.parent().expect("dir").to_path_buf();
    for (np, children) in [(1, "2"), (3, "3"), (3, "2")] {
        let r = run_in(&dir, np, &[children]);
        r.assert_no_errors(&format!("spawn.c np {np}, {children} children"));
    }
}

#[test]
fn c_spawn_missing_program_fails_cleanly() {
    let p = c_program("tests/c/spawn.c");
    let r = run_in(p.parent().expect("dir"), 3, &["bad"]);
    r.assert_no_errors("spawn of a missing program");
    assert!(r.stdout.contains("MPI_ERR_SPAWN"), "{}", r.stdout);
    // Under MPI_ERRORS_ARE_FATAL: the job ends with the class and the reason.
    let r = run_in(p.parent().expect("dir"), 3, &["badfatal"]);
    assert!(!r.ok());
    assert!(
        r.stderr.contains("MPI_ERR_SPAWN")
            && r.stderr
                .contains("program './no-such-program-rmpi' not found"),
        "{}",
        r.stderr
    );
}

#[test]
fn c_spawn_killed_child_ends_the_job() {
    let p = c_program("tests/c/spawn.c");
    let m = marker("spawn-die");
    let r = run_in(p.parent().expect("dir"), 3, &["die", &m]);
    assert!(!r.ok(), "the job must fail: {}", r.stdout);
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("mpirun:"))
        .collect();
    assert_eq!(lines.len(), 1, "one line from mpirun: {}", r.stderr);
    assert!(lines[0].contains("SIGKILL"), "{}", r.stderr);
    assert!(processes_with(&m).is_empty(), "no orphans");
    assert!(shm_leftovers().is_empty(), "nothing in /dev/shm");
}

/// The Rust API (tests/src/bin/spawn.rs): spawn, parent, p2p, merge, disconnect.
#[test]
fn rust_spawn() {
    let p = bin("spawn");
    for np in [1, 3] {
        let r = mpirun_np(np, &p, &[]);
        r.assert_ok();
        assert!(r.stdout.contains("spawn: OK"), "np {np}: {}", r.stdout);
        assert_eq!(r.stdout.matches("spawn child").count(), 2, "{}", r.stdout);
    }
}
