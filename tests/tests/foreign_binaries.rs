//! Programs of another MPI under our mpirun, and ours under Open MPI's: a clear message and a
//! non-zero exit instead of N singletons, and nothing left running.
//!
//! Needs Open MPI's and MPICH's compiler wrappers (`scripts/deps.sh openmpi-bin libopenmpi-dev
//! mpich libmpich-dev`; scripts/test.sh installs them).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use rmpi_tests::*;

const SOURCE: &str = "tests/c/hello_plain.c";
/// How long a foreign program stays after MPI_Init when it must be caught running; the run-time
/// check ends it long before (it is only the bound if the check failed).
const STAY_S: &str = "60";

/// `tests/c/hello_plain.c` built with another MPI's compiler wrapper (`mpicc.openmpi`,
/// `mpicc.mpich`), into target/<profile>/c-programs/hello_plain-<tag>.
fn foreign_hello(cc: &str, tag: &str) -> PathBuf {
    let found = Command::new(cc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{cc} not found: install Open MPI and MPICH with \
         `scripts/deps.sh openmpi-bin libopenmpi-dev mpich libmpich-dev` (scripts/test.sh does)"
    );
    let dir = target_dir().join("c-programs");
    std::fs::create_dir_all(&dir).expect("create c-programs dir");
    let out = dir.join(format!("hello_plain-{tag}"));
    // Built under a unique name and renamed into place, so no one runs a half-written file.
    let tmp = dir.join(format!(".hello_plain-{tag}.{}", marker("cc")));
    let mut cmd = Command::new(cc);
    cmd.args(["-O2", "-o"])
        .arg(&tmp)
        .arg(repo_root().join(SOURCE));
    let r = run_bounded(cmd, Duration::from_secs(120));
    assert!(r.ok(), "{cc} {SOURCE} failed:\n{}{}", r.stdout, r.stderr);
    std::fs::rename(&tmp, &out).expect("move the compiled program into place");
    out
}

fn ompi_hello() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| foreign_hello("mpicc.openmpi", "ompi"))
}

fn mpich_hello() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| foreign_hello("mpicc.mpich", "mpich"))
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A TMPDIR of the test's own for jobs that start Open MPI code: its session directories
/// (`ompi.<host>.<uid>/`, left behind by a singleton that is killed) go there and are removed
/// with it, not into the machine's /tmp.
struct OwnTmp(PathBuf);

impl OwnTmp {
    fn new(m: &str) -> OwnTmp {
        let d = target_dir().join(format!("tmp-{m}"));
        std::fs::create_dir_all(&d).expect("create the test's TMPDIR");
        OwnTmp(d)
    }
}

impl Drop for OwnTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Our mpirun (bounded as `rmpi_tests::mpirun` bounds it) with TMPDIR set to `tmp`.
fn mpirun_in(tmp: &OwnTmp, args: &[&str]) -> Run {
    let mut cmd = Command::new(bin("mpirun"));
    cmd.arg("--timeout")
        .arg(JOB_TIMEOUT_S.to_string())
        .args(args)
        .env("TMPDIR", &tmp.0);
    run_bounded(cmd, Duration::from_secs(JOB_TIMEOUT_S + 30))
}

/// No live process has `m` in its command line (a moment allowed for the kernel to reap).
fn assert_nothing_left(m: &str) {
    for _ in 0..50 {
        if processes_with(m).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        processes_with(m),
        Vec::<u32>::new(),
        "processes left running"
    );
}

/// Exit status 2 and the message, naming the MPI, the launcher and `library`.
fn assert_refused(r: &Run, mpi: &str, library: &str) {
    let why = format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        r.code, r.stdout, r.stderr
    );
    assert_eq!(r.code, Some(2), "{why}");
    let launcher = match mpi {
        "Open MPI" => "run it with Open MPI's mpirun",
        _ => "run it with MPICH's mpiexec",
    };
    assert!(r.stderr.contains(mpi), "{why}");
    assert!(r.stderr.contains(library), "{why}");
    assert!(r.stderr.contains(launcher), "{why}");
    assert!(r.stderr.contains("rebuild it with rmpi's mpicc"), "{why}");
}

#[test]
fn open_mpi_binary_is_refused_before_starting() {
    let m = marker("ompi-direct");
    let prog = path_str(ompi_hello());
    let r = mpirun(&["-np", "2", prog, "0", &m]);
    assert_refused(&r, "Open MPI", "libmpi.so.40");
    assert!(
        r.stderr
            .contains(&format!("{prog} was built with Open MPI")),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("rank 0"), "a rank ran:\n{}", r.stdout);
    assert_nothing_left(&m);
}

#[test]
fn mpich_binary_is_refused_before_starting() {
    let m = marker("mpich-direct");
    let prog = path_str(mpich_hello());
    let r = mpirun(&["-np", "2", prog, "0", &m]);
    // Debian's mpicc.mpich links libmpich.so.12; others link its alias libmpi.so.12.
    let library = if r.stderr.contains("libmpi.so.12") {
        "libmpi.so.12"
    } else {
        "libmpich.so.12"
    };
    assert_refused(&r, "MPICH", library);
    assert!(
        r.stderr.contains(&format!("{prog} was built with MPICH")),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("rank 0"), "a rank ran:\n{}", r.stdout);
    assert_nothing_left(&m);
}

#[test]
fn open_mpi_binary_under_a_shell_is_caught_running() {
    // Open MPI's program never speaks our PMI: the periodic look at the ranks finds it (it stays
    // STAY_S seconds, so it is there to be found).
    let m = marker("ompi-sh");
    let tmp = OwnTmp::new(&m);
    let inner = format!("{} {STAY_S} {m}", path_str(ompi_hello()));
    let r = mpirun_in(&tmp, &["-np", "2", "sh", "-c", &inner]);
    assert_refused(&r, "Open MPI", "libmpi.so.40");
    assert!(r.stderr.contains("which uses Open MPI"), "{}", r.stderr);
    assert_nothing_left(&m);
}

#[test]
fn mpich_binary_under_a_shell_is_caught_at_pmi_init() {
    // MPICH's program speaks PMI-1 to us: caught when it sends its first init (at the latest),
    // even though it would end at once.
    let m = marker("mpich-sh");
    let inner = format!("{} 0 {m}", path_str(mpich_hello()));
    let r = mpirun(&["-np", "2", "sh", "-c", &inner]);
    assert_refused(&r, "MPICH", "libmpich.so.12");
    assert!(r.stderr.contains("which uses MPICH"), "{}", r.stderr);
    assert!(
        !r.stdout.contains("rank 1 of 2"),
        "the job ran:\n{}",
        r.stdout
    );
    assert_nothing_left(&m);
}

#[test]
fn programs_without_another_mpi_still_run() {
    mpirun(&["-np", "2", "true"]).assert_ok();
    let dir = target_dir().join("c-programs");
    std::fs::create_dir_all(&dir).expect("create c-programs dir");
    let script = dir.join(format!("plain-script-{}.sh", marker("sh")));
    std::fs::write(&script, "#!/bin/sh\necho \"script ran: $1\"\n").unwrap();
    let mut perm = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&script, perm).unwrap();
    let r = mpirun(&["-np", "2", path_str(&script), "ok"]);
    let _ = std::fs::remove_file(&script);
    r.assert_ok();
    assert_eq!(
        r.stdout.matches("script ran: ok").count(),
        2,
        "{}",
        r.stdout
    );
    // Ours, direct and under a shell.
    let ours = c_program(SOURCE);
    let r = mpirun(&["-np", "2", path_str(&ours)]);
    r.assert_ok();
    assert!(r.stdout.contains("rank 1 of 2"), "{}", r.stdout);
    let r = mpirun(&["-np", "2", "sh", "-c", path_str(&ours)]);
    r.assert_ok();
    assert!(r.stdout.contains("rank 1 of 2"), "{}", r.stdout);
}

#[test]
fn our_binary_under_open_mpi_says_so() {
    let m = marker("under-ompi");
    let tmp = OwnTmp::new(&m);
    let ours = c_program(SOURCE);
    // Open MPI's own time limit, and timeout(1) behind it; its ranks end at our MPI_Init anyway.
    let mut cmd = Command::new("timeout");
    cmd.args([
        "-k",
        "5",
        &(JOB_TIMEOUT_S + 10).to_string(),
        "mpirun.openmpi",
    ])
    .args(["--timeout", &JOB_TIMEOUT_S.to_string()])
    .args(["-np", "2", "--oversubscribe"])
    .arg(&ours)
    .args([STAY_S, &m])
    .env("TMPDIR", &tmp.0)
    // Open MPI refuses root without these; harmless otherwise.
    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let r = run_bounded(cmd, Duration::from_secs(JOB_TIMEOUT_S + 30));
    let why = format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        r.code, r.stdout, r.stderr
    );
    assert!(
        r.code.is_some_and(|c| c != 0 && c != 124),
        "expected a failure of our MPI_Init, not success or a timeout: {why}"
    );
    assert!(
        r.stderr
            .contains("this program uses rmpi but was started by Open MPI's mpirun (PMIx)"),
        "{why}"
    );
    assert!(r.stderr.contains("run it with rmpi's mpirun"), "{why}");
    for crash in ["SIGSEGV", "Segmentation fault", "core dumped", "signal 11"] {
        assert!(!r.stderr.contains(crash), "{why}");
    }
    assert!(
        !r.stdout.contains("rank 0 of"),
        "a rank ran as a singleton: {why}"
    );
    assert_nothing_left(&m);
}
