//! A rank that aborts, exits early or crashes: mpirun names it, exits non-zero, and nothing
//! is left running or lying in /dev/shm.

use rmpi_tests::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn run_failing(mode: &str, np: usize) -> (Run, String) {
    let m = marker(mode);
    let fail = bin("fail");
    // The marker rides along as an extra argument so the ranks can be found afterwards.
    let r = mpirun_np(np, &fail, &[mode, &m]);
    (r, m)
}

fn assert_clean(m: &str) {
    // Teardown has finished by the time mpirun exits; allow the kernel a moment to reap.
    for _ in 0..50 {
        if processes_with(m).is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(processes_with(m), Vec::<u32>::new(), "ranks left running");
    assert_eq!(
        shm_leftovers(),
        Vec::<String>::new(),
        "files left in /dev/shm"
    );
}

#[test]
fn abort_names_the_rank_and_code() {
    let (r, m) = run_failing("abort", 3);
    assert_eq!(r.code, Some(7), "{}", r.stderr);
    assert!(
        r.stderr.contains("rank 1") && r.stderr.contains("MPI_Abort"),
        "{}",
        r.stderr
    );
    assert_clean(&m);
}

#[test]
fn exit_without_finalize_names_the_rank() {
    let (r, m) = run_failing("exit3", 4);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert!(
        r.stderr.contains("rank 1") && r.stderr.contains("code 3"),
        "{}",
        r.stderr
    );
    assert_clean(&m);
}

#[test]
fn exit_zero_without_finalize_is_an_error() {
    let (r, m) = run_failing("nofinalize", 2);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("rank 1") && r.stderr.contains("MPI_Finalize"),
        "{}",
        r.stderr
    );
    assert_clean(&m);
}

#[test]
fn segfault_names_the_rank_and_signal() {
    let (r, m) = run_failing("segv", 2);
    assert_eq!(r.code, Some(128 + 11), "{}", r.stderr);
    assert!(
        r.stderr.contains("rank 1") && r.stderr.contains("SIGSEGV"),
        "{}",
        r.stderr
    );
    assert_clean(&m);
}

#[test]
fn timeout_kills_the_job() {
    let m = marker("timeout");
    let fail = bin("fail");
    // Rank 1 "fails" by exiting 0 after finalize never happens... use a job that hangs instead:
    // every rank waits for a message nobody sends.
    let r = mpirun(&[
        "-np",
        "2",
        "--timeout",
        "2",
        fail.to_str().unwrap(),
        "hang",
        &m,
    ]);
    assert_eq!(r.code, Some(124), "{}", r.stderr);
    assert!(r.stderr.contains("timed out"), "{}", r.stderr);
    assert_clean(&m);
}

#[test]
fn bad_arguments_have_clear_messages() {
    let hello = example("hello");
    let h = hello.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["-np", "2"], "program"),
        (&["-np", "0", h], "ranks"),
        (&["-np", "2", "/nonexistent/program"], "not found"),
        (&["-np", "64", h], "oversubscribe"),
    ];
    for (args, needle) in cases {
        let r = mpirun(args);
        assert_ne!(r.code, Some(0), "{args:?} should fail");
        assert!(
            r.stderr.contains(needle),
            "{args:?}: stderr lacks '{needle}': {}",
            r.stderr
        );
        assert!(
            r.stderr.lines().count() <= 3,
            "{args:?}: message should be short: {}",
            r.stderr
        );
    }
    let not_exec = repo_root().join("Cargo.toml");
    let r = mpirun(&["-np", "1", not_exec.to_str().unwrap()]);
    assert_ne!(r.code, Some(0));
    assert!(r.stderr.contains("not executable"), "{}", r.stderr);
}

/// Start `orphan MODE` under mpirun (directly, or under a shell that stays its parent), wait
/// until every rank has said it is about to block, SIGKILL mpirun, and return how long the
/// ranks took to end by themselves (None: still there after 20 s).
fn orphans_after_launcher_kill(mode: &str, via_shell: bool) -> Option<Duration> {
    let mut cmd = Command::new(bin("mpirun"));
    cmd.args(["--timeout", "120", "-np", "2"]);
    cmd.args(suite_btl_args());
    orphans_after_killing(cmd, mode, via_shell)
}

/// `orphans_after_launcher_kill` with the launcher command given (mpirun or Hydra's mpiexec).
fn orphans_after_killing(mut cmd: Command, mode: &str, via_shell: bool) -> Option<Duration> {
    let m = marker(&format!("orphan-{mode}"));
    let prog = c_program("tests/c/orphan.c");
    let prog = prog.to_str().expect("utf-8 path");
    if via_shell {
        // `; true` keeps bash as the rank's parent (no exec of the last command).
        cmd.args(["bash", "-c", &format!("{prog} {mode} {m}; true")]);
    } else {
        cmd.args([prog, mode, &m]);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn mpirun");
    let out = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
            let _ = tx.send(line);
        }
    });
    let mut ready = 0;
    while ready < 2 {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(l) if l.starts_with("ready") => ready += 1,
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                panic!("{mode}: the ranks did not get ready ({e})");
            }
        }
    }
    // Let them reach the blocking call they announced.
    std::thread::sleep(Duration::from_millis(300));
    let ranks: Vec<u32> = processes_with(&m)
        .into_iter()
        .filter(|&p| p != child.id())
        .collect();
    assert!(ranks.len() >= 2, "{mode}: {ranks:?}");
    child.kill().expect("SIGKILL mpirun");
    child.wait().expect("reap mpirun");
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        if processes_with(&m).is_empty() {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in processes_with(&m) {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    None
}

/// No orphans: SIGKILL mpirun while its ranks block before MPI_Init, in MPI_Recv, in a
/// collective, in a rendezvous send, and in MPI_Finalize (the other rank outside MPI): the ranks
/// end by themselves, whether mpirun started them (PR_SET_PDEATHSIG) or a shell did (libmpi's
/// launcher watch: EOF on the PMI socket). Nothing is left in /dev/shm.
#[test]
fn ranks_end_when_mpirun_is_killed() {
    for (mode, via_shell) in [
        ("preinit", false),
        ("recv", false),
        ("recv", true),
        ("barrier", true),
        ("rndv", true),
        ("finalize", true),
    ] {
        let t = orphans_after_launcher_kill(mode, via_shell);
        eprintln!("{mode} (via shell: {via_shell}): ranks ended after {t:?}");
        assert!(
            t.is_some(),
            "{mode} (via shell {via_shell}): ranks left running"
        );
    }
    assert_eq!(
        shm_leftovers(),
        Vec::<String>::new(),
        "files left in /dev/shm"
    );
}

/// The same under MPICH's Hydra (`mpiexec.mpich`), a foreign PMI-1 launcher: its proxy goes with
/// it, and our ranks see their PMI socket close.
#[test]
fn ranks_end_when_hydra_is_killed() {
    let Some(hydra) = ["mpiexec.mpich", "mpiexec.hydra"].into_iter().find(|p| {
        Command::new(p)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    }) else {
        println!("SKIPPED: mpiexec.mpich is not installed (Debian package mpich)");
        return;
    };
    for mode in ["recv", "rndv"] {
        let mut cmd = Command::new(hydra);
        cmd.args(["-np", "2"]);
        let t = orphans_after_killing(cmd, mode, false);
        eprintln!("{mode} under {hydra}: ranks ended after {t:?}");
        assert!(t.is_some(), "{mode} under {hydra}: ranks left running");
    }
}
