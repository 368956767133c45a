//! Test harness: find (and build once) the workspace's binaries, run them under the real
//! mpirun with a timeout, compile C programs with our mpicc, and look for leftovers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Every job is bounded by this many seconds of `mpirun --timeout`.
pub const JOB_TIMEOUT_S: u64 = 120;

/// target/<profile>: the directory holding this test binary's `deps/`.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// Build mpirun, libmpi_abi.so, mpicc, the examples and the test programs once per test process.
pub fn ensure_built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args([
            "build",
            "--workspace",
            "--lib",
            "--bins",
            "--examples",
            "--quiet",
        ]);
        if target_dir().file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        // The features the suite runs under (e.g. a memhook provider), so that this build does
        // not replace the binaries under test with default-feature ones.
        if let Ok(f) = std::env::var("RMPI_TEST_FEATURES") {
            if !f.is_empty() {
                cmd.args(["--features", &f]);
            }
        }
        let st = cmd.status().expect("run cargo build");
        assert!(st.success(), "cargo build of the workspace failed");
    });
}

pub fn bin(name: &str) -> PathBuf {
    ensure_built();
    target_dir().join(name)
}

pub fn example(name: &str) -> PathBuf {
    ensure_built();
    target_dir().join("examples").join(name)
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// Panic with the job's output when it did not exit 0.
    pub fn assert_ok(&self) -> &Run {
        assert!(
            self.ok(),
            "job failed with {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code,
            self.stdout,
            self.stderr
        );
        self
    }

    /// Panic with the job's output unless it exited 0 and printed MPICH-style " No Errors";
    /// `what` names the run in the message.
    pub fn assert_no_errors(&self, what: &str) -> &Run {
        assert!(
            self.ok() && self.stdout.contains(" No Errors"),
            "{what}: exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code,
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Run a command to completion, killing it if it outlives `limit` (a second line of defence
/// behind mpirun's own --timeout).
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Run {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("collect output");
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into(),
        stderr: String::from_utf8_lossy(&stderr).into(),
    }
}

/// `mpirun --timeout JOB_TIMEOUT_S <args>`.
pub fn mpirun(args: &[&str]) -> Run {
    let mut cmd = Command::new(bin("mpirun"));
    if !args.contains(&"--timeout") {
        cmd.arg("--timeout").arg(JOB_TIMEOUT_S.to_string());
    }
    cmd.args(suite_mca(args));
    cmd.args(args);
    // A test's own --timeout sets the backstop too.
    let limit = args
        .iter()
        .position(|a| *a == "--timeout")
        .and_then(|i| args.get(i + 1)?.parse::<f64>().ok())
        .map_or(JOB_TIMEOUT_S, |s| s.ceil() as u64);
    run_bounded(cmd, Duration::from_secs(limit + 30))
}

/// The transport the whole suite runs over: `RMPI_TEST_BTL=ib` runs every job with
/// `--mca btl ib,self` on the software verbs provider, `RMPI_TEST_BTL=tcp` with
/// `--mca btl tcp,self` (a test's own `--mca btl` comes later on the command line and wins).
pub fn suite_btl() -> Option<String> {
    std::env::var("RMPI_TEST_BTL")
        .ok()
        .filter(|v| !v.is_empty())
}

fn suite_mca(args: &[&str]) -> Vec<&'static str> {
    let launches = !args
        .iter()
        .any(|a| matches!(*a, "--shm-report" | "--mca-list" | "--version" | "--help"));
    if launches {
        suite_btl_args()
    } else {
        vec![]
    }
}

/// The `--mca` arguments that put a job on the suite's transport (none for the default).
pub fn suite_btl_args() -> Vec<&'static str> {
    match suite_btl().as_deref() {
        Some("ib") => vec!["--mca", "btl", "ib,self", "--mca", "btl_ib_device", "soft"],
        Some("tcp") => vec!["--mca", "btl", "tcp,self"],
        None => vec![],
        Some(other) => panic!("RMPI_TEST_BTL={other}: only `ib` and `tcp` are known"),
    }
}

/// `mpirun` with `-np N`, oversubscribed when needed, running `prog args`.
pub fn mpirun_np(np: usize, prog: &Path, args: &[&str]) -> Run {
    let np_s = np.to_string();
    let mut v = vec!["-np", &np_s, "--oversubscribe"];
    let p = prog.to_str().expect("utf-8 path");
    v.push(p);
    v.extend_from_slice(args);
    mpirun(&v)
}

/// Compile a C program (a path relative to the repository root) with our mpicc, once.
pub fn c_program(src: &str) -> PathBuf {
    let src_path = repo_root().join(src);
    let out_dir = target_dir().join("c-programs");
    std::fs::create_dir_all(&out_dir).expect("create c-programs dir");
    let name = Path::new(src)
        .file_stem()
        .expect("file name")
        .to_string_lossy()
        .to_string();
    let out = out_dir.join(&name);
    // Tests compile the same source concurrently (threads and test binaries): build under a
    // unique name and rename it into place, so no one executes a half-written file.
    let tmp = out_dir.join(format!(".{name}.{}", marker("cc")));
    let mut cmd = Command::new(bin("mpicc"));
    cmd.args(["-O2", "-Wall", "-o"]).arg(&tmp).arg(&src_path);
    let r = run_bounded(cmd, Duration::from_secs(120));
    assert!(r.ok(), "mpicc {src} failed:\n{}{}", r.stdout, r.stderr);
    std::fs::rename(&tmp, &out).expect("move the compiled program into place");
    out
}

/// The C library C programs link (the MPI standard ABI's `libmpi_abi.so`, under its SONAME).
pub fn c_library() -> PathBuf {
    // mpicc keeps the SONAME link beside cargo's libmpi_abi.so; any call of it makes sure.
    let r = run_bounded(
        {
            let mut c = Command::new(bin("mpicc"));
            c.arg("--showme:libdirs");
            c
        },
        Duration::from_secs(60),
    );
    assert!(r.ok(), "mpicc --showme:libdirs: {}", r.stderr);
    target_dir().join("libmpi_abi.so.1")
}

/// A string unique to this test run, to find its processes afterwards.
pub fn marker(tag: &str) -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("rmpi-test-{tag}-{}-{n}", std::process::id())
}

/// Pids of live (not zombie) processes whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut v = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return v;
    };
    for e in dir.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            v.push(pid);
        }
    }
    v
}

/// Files in /dev/shm whose names start with `rmpi`, except those of a job still running: a
/// segment named under a foreign launcher is `rmpi-KVSNAME-PID-LOCAL0` (btl-sm), and while its
/// creator PID lives it belongs to a test running beside this one (the tests of one binary run
/// in parallel), not a leak. A leak is a file whose creator is gone.
pub fn shm_leftovers() -> Vec<String> {
    let creator_alive = |n: &str| {
        n.rsplit('-')
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok())
            .is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
    };
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with("rmpi") && !creator_alive(n))
                .collect()
        })
        .unwrap_or_default()
}

/// Run a third-party client's project script (`scripts/NAME.sh --quick`) for this build: the
/// profile in `RMPI_<NAME>_PROFILE`, cargo's target directory beside ours, its report in
/// `target/NAME/quick.out` (run_bounded reads pipes only at the end), printed. None when the
/// script said it skipped (no registry); otherwise the report, after asserting exit 0.
pub fn client_script_quick(name: &str, limit: Duration) -> Option<String> {
    ensure_built();
    let target = target_dir();
    let profile = target
        .file_name()
        .and_then(|n| n.to_str())
        .expect("profile");
    let dir = target.parent().expect("target dir").join(name);
    std::fs::create_dir_all(&dir).expect("create the client's target dir");
    let out_path = dir.join("quick.out");
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(r#""$0" --quick > "$1" 2>&1"#)
        .arg(repo_root().join(format!("scripts/{name}.sh")))
        .arg(&out_path)
        .env(format!("RMPI_{}_PROFILE", name.to_uppercase()), profile)
        .env("CARGO_TARGET_DIR", target.parent().expect("target dir"));
    let r = run_bounded(cmd, limit);
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    println!("{text}");
    if text.contains(&format!("{name}.sh: skipped:")) {
        assert_eq!(r.code, Some(0), "skipped, yet exit {:?}", r.code);
        return None;
    }
    assert_eq!(r.code, Some(0), "scripts/{name}.sh --quick failed:\n{text}");
    Some(text)
}

/// Test hosts (`scripts/netns.sh`, `scripts/slurm.sh`) left by a test process that died before
/// removing them: their prefix is `t` or `s` and the process id in hex. Removed here, by the
/// next test that makes hosts.
pub fn remove_stale_test_hosts() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    let mut prefixes: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .next()?
                .split_once("-node")
                .map(|(p, _)| p.to_string())
        })
        .collect();
    prefixes.dedup();
    for p in prefixes {
        let mut chars = p.chars();
        let kind = chars.next();
        let Ok(pid) = u32::from_str_radix(chars.as_str(), 16) else {
            continue;
        };
        if !matches!(kind, Some('t' | 's')) || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let script = if kind == Some('s') {
            "scripts/slurm.sh"
        } else {
            "scripts/netns.sh"
        };
        let _ = Command::new(repo_root().join(script))
            .args(["down", &p])
            .status();
    }
}
