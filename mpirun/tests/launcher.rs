//! The mpirun binary end to end, with shell programs as ranks. Every run has a --timeout so a
//! regression cannot hang the suite.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

const MPIRUN: &str = env!("CARGO_BIN_EXE_mpirun");

/// mpirun with a safety timeout (unless the test sets one) and `--oversubscribe`, so that
/// `-np 2` also works on a 1-core machine.
fn mpirun(args: &[&str]) -> Command {
    let mut c = Command::new(MPIRUN);
    if !args.contains(&"--timeout") {
        c.args(["--timeout", "30"]);
    }
    c.arg("--oversubscribe").args(args);
    c.stdin(Stdio::null());
    c
}

fn run(mut c: Command) -> Output {
    c.output().expect("run mpirun")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_string).collect();
    v.sort();
    v
}

fn ncores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn pmi_rank() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pmi_rank.sh")
}

fn gone(pid: i32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

fn pids(out: &str) -> Vec<i32> {
    out.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

#[test]
fn true_succeeds() {
    let o = run(mpirun(&["-np", "2", "/bin/true"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

#[test]
fn non_mpi_program_output_is_forwarded() {
    let o = run(mpirun(&["-np", "2", "echo", "hi"]));
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "hi\nhi\n");
}

#[test]
fn nonzero_exit_is_reported() {
    let o = run(mpirun(&["-np", "2", "sh", "-c", "exit 3"]));
    assert_eq!(o.status.code(), Some(3));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("mpirun: rank "), "{err}");
    assert!(
        err.contains(" exited with code 3; killing the job"),
        "{err}"
    );
}

#[test]
fn one_failing_rank_kills_the_others() {
    let start = Instant::now();
    let o = run(mpirun(&[
        "-np",
        "2",
        "sh",
        "-c",
        r#"[ "$PMI_RANK" = 1 ] && exit 4; exec sleep 30"#,
    ]));
    assert_eq!(o.status.code(), Some(4));
    assert!(
        stderr(&o).starts_with("mpirun: rank 1 (pid "),
        "{}",
        stderr(&o)
    );
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn segfault_is_reported_with_signal_name() {
    let o = run(mpirun(&["-np", "2", "sh", "-c", "kill -SEGV $$"]));
    assert_eq!(o.status.code(), Some(139));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("was killed by signal 11 (SIGSEGV); killing the job"),
        "{err}"
    );
}

#[test]
fn timeout_kills_everything() {
    let start = Instant::now();
    let o = run(mpirun(&[
        "-np",
        "2",
        "--timeout",
        "1",
        "sh",
        "-c",
        "echo $$; exec sleep 30",
    ]));
    assert_eq!(o.status.code(), Some(124));
    assert_eq!(
        stderr(&o),
        "mpirun: job timed out after 1 s; killing 2 remaining rank(s)\n"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    let p = pids(&stdout(&o));
    assert_eq!(p.len(), 2);
    assert!(p.iter().all(|&p| gone(p)), "a rank survived: {p:?}");
}

#[test]
fn plain_sleep_times_out() {
    let o = run(mpirun(&["--timeout", "0.5", "sleep", "30"]));
    assert_eq!(o.status.code(), Some(124));
    assert!(stderr(&o).starts_with("mpirun: job timed out after 0.5 s; killing "));
}

#[test]
fn rank_ignoring_sigterm_gets_sigkill() {
    let start = Instant::now();
    let o = run(mpirun(&[
        "-np",
        "1",
        "--timeout",
        "0.5",
        "sh",
        "-c",
        "trap '' TERM; echo $$; exec sleep 30",
    ]));
    assert_eq!(o.status.code(), Some(124));
    let p = pids(&stdout(&o));
    assert_eq!(p.len(), 1);
    assert!(gone(p[0]));
    let t = start.elapsed();
    assert!(
        t >= Duration::from_millis(1400) && t < Duration::from_secs(10),
        "{t:?}"
    );
}

#[test]
fn tag_output_prefixes_lines() {
    let o = run(mpirun(&[
        "-np",
        "2",
        "--tag-output",
        "sh",
        "-c",
        "echo hello; echo oops >&2; printf 'no newline'",
    ]));
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        sorted_lines(&stdout(&o)),
        ["[0] hello", "[0] no newline", "[1] hello", "[1] no newline"]
    );
    assert_eq!(sorted_lines(&stderr(&o)), ["[0] oops", "[1] oops"]);
}

#[test]
fn untagged_output_is_verbatim() {
    let o = run(mpirun(&["-np", "1", "printf", "a\\nb"]));
    assert_eq!(stdout(&o), "a\nb");
}

#[test]
fn stdout_and_stderr_are_kept_apart() {
    let o = run(mpirun(&[
        "-np",
        "2",
        "sh",
        "-c",
        "echo to-out; echo to-err >&2",
    ]));
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "to-out\nto-out\n");
    assert_eq!(stderr(&o), "to-err\nto-err\n");
}

#[test]
fn partial_lines_of_two_ranks_never_mix() {
    let script = "for i in 1 2 3 4 5; do printf 'rank%s-' $PMI_RANK; sleep 0.02; printf 'line%s\\n' $i; done";
    let o = run(mpirun(&["-np", "2", "--tag-output", "sh", "-c", script]));
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 10, "{out}");
    for line in out.lines() {
        let (tag, rest) = line.split_once(' ').unwrap();
        let rank = &tag[1..2];
        assert!(rest.starts_with(&format!("rank{rank}-line")), "{line}");
    }
}

#[test]
fn lots_of_output_arrives_intact() {
    let o = run(mpirun(&["-np", "2", "sh", "-c", "seq 1 20000"]));
    assert_eq!(o.status.code(), Some(0));
    let mut expected: Vec<String> = (1..=20000)
        .flat_map(|i| [i.to_string(), i.to_string()])
        .collect();
    expected.sort();
    assert_eq!(sorted_lines(&stdout(&o)), expected);
}

#[test]
fn stdin_goes_to_rank_zero_only() {
    let mut c = mpirun(&["-np", "2", "--tag-output", "cat"]);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from stdin\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "[0] from stdin\n");
}

#[test]
fn exported_variables_reach_ranks() {
    let mut c = mpirun(&[
        "-np",
        "2",
        "-x",
        "FOO=bar",
        "-x",
        "FROM_ENV",
        "sh",
        "-c",
        "echo $FOO $FROM_ENV",
    ]);
    c.env("FROM_ENV", "env-value");
    let o = run(c);
    assert_eq!(stdout(&o), "bar env-value\nbar env-value\n");
}

#[test]
fn launcher_environment_is_set() {
    let o = run(mpirun(&[
        "-np",
        "2",
        "--tag-output",
        "sh",
        "-c",
        r#"echo "$PMI_RANK/$PMI_SIZE fd=${PMI_FD:-none} sm=${RMPI_SM_FD:-none} size=${RMPI_SM_SIZE:-none}""#,
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for r in 0..2 {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("[{r}] {r}/2 ")))
            .expect(&out);
        assert!(!line.contains("none"), "{line}");
    }
}

#[test]
fn inherited_fds_are_the_pmi_socket_and_segment() {
    let o = run(mpirun(&[
        "-np",
        "2",
        "sh",
        "-c",
        r#"echo $(readlink /proc/$$/fd/$PMI_FD) $(readlink /proc/$$/fd/$RMPI_SM_FD) $(stat -L -c %s /proc/$$/fd/$RMPI_SM_FD) $RMPI_SM_SIZE"#,
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 2, "{out}");
    for line in out.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        assert!(f[0].starts_with("socket:"), "{out}");
        assert!(f[1].contains("memfd:"), "{out}");
        // The memfd's link reads "/memfd:rmpi-sm (deleted)"; size and RMPI_SM_SIZE come last.
        assert_eq!(f[f.len() - 2], f[f.len() - 1], "segment size: {out}");
    }
}

#[test]
fn ranks_start_with_clean_signal_state() {
    let o = run(mpirun(&[
        "-np",
        "1",
        "sh",
        "-c",
        "grep -E '^Sig(Blk|Ign)' /proc/self/status",
    ]));
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    let mask = |name: &str| {
        let line = out.lines().find(|l| l.starts_with(name)).expect(&out);
        u64::from_str_radix(line.split('\t').nth(1).unwrap(), 16).unwrap()
    };
    assert_eq!(mask("SigBlk:"), 0, "{out}");
    // Signals 32 and 33 belong to the C library, which may leave them ignored across exec.
    let libc_internal = (1u64 << 31) | (1u64 << 32);
    assert_eq!(mask("SigIgn:") & !libc_internal, 0, "{out}");
}

#[test]
fn ignored_signals_are_not_inherited() {
    // SIGINT and SIGTERM ignored in mpirun's parent (as `nohup` or a non-interactive `&` does).
    let o = run(mpirun(&[
        "-np",
        "1",
        "sh",
        "-c",
        "trap '' INT TERM HUP USR1; exec \"$0\" -np 1 sh -c 'grep SigIgn /proc/self/status'",
        MPIRUN,
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let line = stdout(&o);
    let ign = u64::from_str_radix(line.trim().split('\t').nth(1).unwrap(), 16).unwrap();
    assert_eq!(ign & 0x7fff_ffff, 0, "{line}");
}

#[test]
fn mca_values_reach_ranks_and_override_environment() {
    let mut c = mpirun(&[
        "-np",
        "1",
        "--mca",
        "pml_debug",
        "1",
        "-mca",
        "btl_sm_eager_limit",
        "8192",
        "sh",
        "-c",
        "echo $RMPI_MCA_pml_debug $RMPI_MCA_btl_sm_eager_limit $RMPI_MCA_other",
    ]);
    c.env("RMPI_MCA_pml_debug", "0")
        .env("RMPI_MCA_other", "passed");
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "1 8192 passed\n");
}

#[test]
fn bad_mca_value_is_refused() {
    let o = run(mpirun(&["--mca", "btl_sm_fifo_cells", "3", "/bin/true"]));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("mpirun: ") && err.contains("btl_sm_fifo_cells"),
        "{err}"
    );
}

#[test]
fn yield_is_set_only_when_oversubscribed() {
    let n = (ncores() + 1).to_string();
    let mut c = mpirun(&["-np", &n, "sh", "-c", "echo ${RMPI_YIELD:-unset}"]);
    c.env_remove("RMPI_YIELD");
    let o = run(c);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).lines().all(|l| l == "1"));
    let mut c = mpirun(&["-np", "1", "sh", "-c", "echo ${RMPI_YIELD:-unset}"]);
    c.env_remove("RMPI_YIELD");
    assert_eq!(stdout(&run(c)), "unset\n");
}

#[test]
fn ranks_are_bound_to_distinct_cores() {
    let n = ncores().min(2).to_string();
    let o = run(mpirun(&[
        "-np",
        &n,
        "sh",
        "-c",
        "grep Cpus_allowed_list /proc/self/status",
    ]));
    let out = stdout(&o);
    let cpus: Vec<&str> = out
        .lines()
        .map(|l| l.split('\t').next_back().unwrap())
        .collect();
    assert_eq!(cpus.len(), n.parse::<usize>().unwrap());
    assert!(cpus.iter().all(|c| c.parse::<usize>().is_ok()), "{out}");
    if cpus.len() == 2 {
        assert_ne!(cpus[0], cpus[1]);
    }
    let o = run(mpirun(&[
        "-np",
        "1",
        "--bind-to",
        "none",
        "sh",
        "-c",
        "grep Cpus_allowed_list /proc/self/status",
    ]));
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    let own = own
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list"))
        .unwrap();
    assert_eq!(stdout(&o).trim_end(), own);
}

#[test]
fn program_arguments_are_untouched() {
    let o = run(mpirun(&[
        "-np",
        "1",
        "sh",
        "-c",
        r#"echo "$0 $@""#,
        "prog",
        "-np",
        "3",
        "--tag-output",
        "-x",
    ]));
    assert_eq!(stdout(&o), "prog -np 3 --tag-output -x\n");
}

#[test]
fn version() {
    let o = run(mpirun(&["--version"]));
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some(format!("mpirun (rmpi) {}", env!("CARGO_PKG_VERSION")).as_str())
    );
    // The memory-release provider compiled in, and whether it is active.
    let mh = lines.next().unwrap_or_default();
    assert!(mh.starts_with("memhook provider: "), "{out}");
}

/// Processes whose command line is exactly `argv` (NUL-separated in /proc).
fn processes_running(argv: &[&str]) -> usize {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| *c == want)
        .count()
}

#[test]
fn failing_to_start_a_rank_kills_the_started_ones() {
    // Too few descriptors for 30 ranks: spawning fails part way.
    let nap = format!("30.{}", std::process::id());
    let script = format!("ulimit -n 40 && exec {MPIRUN} --oversubscribe -np 30 sleep {nap}");
    let start = Instant::now();
    let o = run_sh(&script);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("mpirun: cannot start rank "), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(processes_running(&["sleep", &nap]), 0);
}

fn run_sh(script: &str) -> Output {
    Command::new("sh").args(["-c", script]).output().unwrap()
}

/// Bad input: one `mpirun: ` line, exit 2.
fn refused(args: &[&str], expected: &str) {
    let o = Command::new(MPIRUN).args(args).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{args:?}");
    assert_eq!(stderr(&o), format!("mpirun: {expected}\n"), "{args:?}");
    assert_eq!(stdout(&o), "");
}

#[test]
fn bad_arguments() {
    refused(
        &["-np", "2"],
        "no program given (usage: mpirun [options] <program> [args...])",
    );
    refused(
        &["-np", "0", "true"],
        "invalid number of ranks '0': must be at least 1",
    );
    refused(
        &["-np", "lots", "true"],
        "invalid number of ranks 'lots': expected a positive integer",
    );
    refused(
        &["no-such-program-xyz"],
        "program 'no-such-program-xyz' not found in PATH",
    );
    refused(&["./no/such/file"], "program './no/such/file' not found");
    let plain = std::env::temp_dir().join(format!("mpirun-test-plain-{}", std::process::id()));
    std::fs::write(&plain, "not a program").unwrap();
    let shown = plain.to_str().unwrap();
    refused(&[shown], &format!("program '{shown}' is not executable"));
    std::fs::remove_file(&plain).unwrap();
    let n = (ncores() + 1).to_string();
    let cores = match ncores() {
        1 => "1 core is".to_string(),
        c => format!("{c} cores are"),
    };
    refused(
        &["-np", &n, "true"],
        &format!("{n} ranks requested but only {cores} available; use --oversubscribe to run more ranks than cores"),
    );
    refused(
        &["--timeout", "soon", "true"],
        "invalid --timeout 'soon': expected a positive number of seconds",
    );
}

#[test]
fn unknown_option_fails() {
    refused(
        &["--frobnicate", "true"],
        "unknown option '--frobnicate' (mpirun --help lists the options)",
    );
}

#[test]
fn extreme_and_negative_values_get_one_line() {
    refused(
        &["-np", "-1", "true"],
        "invalid number of ranks '-1': expected a positive integer",
    );
    refused(
        &["-np", "1e99", "true"],
        "invalid number of ranks '1e99': expected a positive integer",
    );
    refused(
        &["--timeout", "-5", "true"],
        "invalid --timeout '-5': expected a positive number of seconds",
    );
    refused(
        &["--timeout", "1e99", "true"],
        "invalid --timeout '1e99': expected a positive number of seconds",
    );
    refused(
        &["--mca", "btl_sm_eager_limit", "-1", "true"],
        "invalid value \"-1\" for MCA parameter btl_sm_eager_limit: expected a non-negative \
         byte count (optional k/m/g suffix)",
    );
    refused(
        &["--mca", "btl", "udp", "true"],
        "btl=udp: unknown transport `udp` (known: self, sm, ib, tcp)",
    );
    refused(
        &["--mca", "mpi_yield_when_idle", "7", "true"],
        "invalid value \"7\" for MCA parameter mpi_yield_when_idle: expected one of 0, 1, \
         true, false, auto",
    );
    refused(
        &["--mca", "k"],
        "--mca takes two values, a name and a value (--mca KEY VALUE)",
    );
    for args in [
        &["--mca", "btl_sm_fifo_cells", "0", "true"][..],
        &["--mca", "btl_sm_payload_bytes", "1e99", "true"],
        &["--mca", "btl_sm_near_ns", "-3", "true"],
        &["--mca", "btl_ib_buf_size", "abc", "true"],
        &["--mca", "memhook_ptmalloc_policy", "keep", "true"],
        &["--mca", "btl_base_verbose", "loud", "true"],
    ] {
        let o = Command::new(MPIRUN).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("mpirun: ") && err.contains(args[1]),
            "{args:?}: {err}"
        );
    }
}

/// `coll_tuned_*_algorithm` takes an algorithm's number or name, checked before launch; the
/// list of algorithms is in the one line, and `--mca-list` shows the knobs with their numbers.
#[test]
fn forced_collective_algorithms_are_checked_before_launch() {
    refused(
        &["--mca", "coll_tuned_allreduce_algorithm", "9", "true"],
        "invalid value \"9\" for MCA parameter coll_tuned_allreduce_algorithm: expected an \
         algorithm's number or name: 0 auto, 1 recursive_doubling, 2 ring, 3 rabenseifner, \
         4 hierarchical",
    );
    refused(
        &["--mca", "coll_tuned_barrier_algorithm", "ring", "true"],
        "invalid value \"ring\" for MCA parameter coll_tuned_barrier_algorithm: expected an \
         algorithm's number or name: 0 auto, 1 dissemination, 2 hierarchical",
    );
    for (name, value) in [
        ("coll_tuned_bcast_algorithm", "-1"),
        ("coll_tuned_reduce_algorithm", "4"),
        ("coll_tuned_allgather_algorithm", "fast"),
    ] {
        let o = Command::new(MPIRUN)
            .args(["--mca", name, value, "true"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}={value}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{name}={value}: {err}");
        assert!(err.starts_with("mpirun: ") && err.contains(name), "{err}");
    }
    for (name, value) in [
        ("coll_tuned_allreduce_algorithm", "3"),
        ("coll_tuned_allgather_algorithm", "hierarchical"),
        ("coll_tuned_bcast_algorithm", "0"),
    ] {
        let o = Command::new(MPIRUN)
            .args(["-np", "1", "--mca", name, value, "true"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}={value}: {}", stderr(&o));
    }
    let o = Command::new(MPIRUN).arg("--mca-list").output().unwrap();
    let list = stdout(&o);
    for name in ["allreduce", "bcast", "reduce", "barrier", "allgather"] {
        assert!(
            list.contains(&format!("coll_tuned_{name}_algorithm")),
            "{name}: {list}"
        );
    }
    assert!(list.contains("3 rabenseifner"), "{list}");
}

#[test]
fn binary_garbage_on_stdin_reaches_rank_zero_intact() {
    // Every byte value, NULs and unterminated last line included.
    let data: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let mut c = mpirun(&["-np", "2", "sh", "-c", "[ \"$PMI_RANK\" != 0 ] || cksum"]);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feed = data.clone();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&feed);
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let want = Command::new("cksum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut k| {
            k.stdin.take().unwrap().write_all(&data)?;
            k.wait_with_output()
        })
        .unwrap();
    assert_eq!(stdout(&o), String::from_utf8_lossy(&want.stdout));
}

/// Starts mpirun with ranks that print their pid first, and waits until all have.
fn start_job(n: usize, script: &str) -> (Child, Vec<i32>, BufReader<std::process::ChildStdout>) {
    let mut c = mpirun(&["-np", &n.to_string(), "sh", "-c", script]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut pids = Vec::new();
    while pids.len() < n {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "mpirun ended early");
        pids.push(line.trim().parse().unwrap());
    }
    (child, pids, out)
}

fn finish(
    mut child: Child,
    mut out: BufReader<std::process::ChildStdout>,
) -> (Option<i32>, String, String) {
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap().code(), rest, err)
}

#[test]
fn sigterm_to_mpirun_reaches_ranks() {
    let (child, pids, out) = start_job(2, "echo $$; exec sleep 30");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let (code, _, err) = finish(child, out);
    assert_eq!(code, Some(143));
    assert_eq!(err, "mpirun: received SIGTERM; forwarding to 2 rank(s)\n");
    assert!(pids.iter().all(|&p| gone(p)), "a rank survived: {pids:?}");
}

#[test]
fn sigint_is_forwarded_as_sigint() {
    let script = "trap 'echo got INT; exit 0' INT; echo $$; while :; do sleep 0.05; done";
    let (child, pids, out) = start_job(2, script);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let (code, rest, err) = finish(child, out);
    assert_eq!(code, Some(130));
    assert_eq!(err, "mpirun: received SIGINT; forwarding to 2 rank(s)\n");
    assert_eq!(rest, "got INT\ngot INT\n");
    assert!(pids.iter().all(|&p| gone(p)));
}

#[test]
fn ctrl_c_to_the_whole_process_group_is_one_sigint() {
    // As a terminal does: mpirun and the ranks (same process group) all get SIGINT at once.
    // The cause is mpirun's SIGINT, not the ranks dying of it.
    let mut c = mpirun(&["-np", "2", "sh", "-c", "echo $$; exec sleep 30"]);
    c.process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut pids = Vec::new();
    while pids.len() < 2 {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "mpirun ended early");
        pids.push(line.trim().parse::<i32>().unwrap());
    }
    killpg(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let (code, _, err) = finish(child, out);
    assert_eq!(code, Some(130));
    assert_eq!(err, "mpirun: received SIGINT; forwarding to 2 rank(s)\n");
    assert!(pids.iter().all(|&p| gone(p)));
}

fn pmi_job(n: &str, mode: &[&str]) -> Output {
    let script = pmi_rank();
    let mut args = vec!["-np", n, "bash", script.to_str().unwrap()];
    args.extend_from_slice(mode);
    run(mpirun(&args))
}

#[test]
fn pmi_conversation() {
    let o = pmi_job("3", &["hello"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = sorted_lines(&stdout(&o));
    assert_eq!(out.len(), 3);
    for (r, line) in out.iter().enumerate() {
        assert!(
            line.starts_with(&format!("rank {r} of 3 in rmpi_")),
            "{line}"
        );
        assert!(line.ends_with(&format!(" got v{}", (r + 1) % 3)), "{line}");
    }
}

#[test]
fn pmi_odd_requests() {
    let o = pmi_job("2", &["odd"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        sorted_lines(&stdout(&o)),
        ["rank 0 odd ok", "rank 1 odd ok"]
    );
}

/// Lines of mpirun's own (not the ranks') on stderr.
fn mpirun_lines(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.starts_with("mpirun: ")).collect()
}

#[test]
fn pmi_garbage_is_answered_and_reported_once_per_kind() {
    let o = pmi_job("2", &["garbage"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        sorted_lines(&stdout(&o)),
        ["rank 0 garbage ok", "rank 1 garbage ok"]
    );
    let err = stderr(&o);
    let lines = mpirun_lines(&err);
    // Per rank: missing cmd (twice, reported once), over-long line, unknown command.
    assert_eq!(lines.len(), 6, "{err}");
    for what in ["without cmd=", "longer than 64 KiB", "unknown PMI command"] {
        assert_eq!(
            lines.iter().filter(|l| l.contains(what)).count(),
            2,
            "{err}"
        );
    }
}

#[test]
fn pmi_flood_is_refused_and_the_job_goes_on() {
    let o = pmi_job("2", &["flood"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        out.lines().all(|l| l.contains(" flood refused after ")),
        "{out}"
    );
    let err = stderr(&o);
    assert_eq!(mpirun_lines(&err).len(), 2, "{err}");
    assert!(
        err.contains("more into the PMI key-value space than a rank may"),
        "{err}"
    );
}

#[test]
fn a_rank_closing_its_pmi_connection_early_ends_the_job() {
    let start = Instant::now();
    let o = pmi_job("2", &["close-early"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(mpirun_lines(&err).len(), 1, "{err}");
    assert!(
        err.contains(
            ") closed its PMI connection before MPI_Finalize and is still running; killing the job"
        ),
        "{err}"
    );
    // Not the rank's `sleep 30`: the teardown.
    assert!(start.elapsed() < Duration::from_secs(20));
}

#[test]
fn pmi_abort() {
    let start = Instant::now();
    let o = pmi_job("3", &["abort", "1", "7"]);
    assert_eq!(o.status.code(), Some(7));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("mpirun: rank 1 (pid "), "{err}");
    assert!(
        err.ends_with(") called MPI_Abort with error code 7; killing the job\n"),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn pmi_abort_with_code_zero_exits_one() {
    let o = pmi_job("2", &["abort", "0", "0"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("called MPI_Abort with error code 0"));
}

#[test]
fn exit_without_finalize() {
    let o = pmi_job("2", &["no-finalize"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(") exited without calling MPI_Finalize; killing the job"),
        "{err}"
    );
}

#[test]
fn nonzero_exit_before_finalize() {
    let o = pmi_job("2", &["exit-after-init", "5"]);
    assert_eq!(o.status.code(), Some(5));
    assert!(stderr(&o).contains(") exited with code 5 before MPI_Finalize; killing the job"));
}

#[test]
fn unknown_mca_name_is_warned_with_a_suggestion() {
    let o = run(mpirun(&[
        "-np",
        "1",
        "--mca",
        "btl_sm_eager_limt",
        "100",
        "/bin/true",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("btl_sm_eager_limt") && err.contains("did you mean btl_sm_eager_limit?"),
        "{err}"
    );
    // A name rmpi reads gets no warning.
    let o = run(mpirun(&[
        "-np",
        "1",
        "--mca",
        "btl_base_verbose",
        "0",
        "/bin/true",
    ]));
    assert_eq!(stderr(&o), "", "known name warned");
}
