//! bench-compare's machinery: find every MPI on the machine (rmpi next to the running binary,
//! Debian's Open MPI and MPICH, a plain mpicc/mpirun that is neither), build one C source with
//! each, and run it under each launcher with a time limit.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One MPI: its compiler wrapper and how to launch N ranks.
#[derive(Clone, Debug)]
pub struct Mpi {
    pub name: String,
    pub mpicc: PathBuf,
    /// The launcher and its arguments up to the program.
    pub launch: Vec<String>,
    /// The built benchmark program.
    pub exe: PathBuf,
}

/// `name` on PATH, resolved.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to this process's effective user.
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// rmpi (next to this binary) and every other MPI found, without duplicates.
pub fn find_mpis(np: usize) -> Result<Vec<Mpi>, String> {
    let here = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .ok_or("cannot find where bench-compare lives")?;
    let (mpicc, mpirun) = (here.join("mpicc"), here.join("mpirun"));
    if !mpicc.is_file() || !mpirun.is_file() {
        return Err(format!(
            "rmpi's mpicc and mpirun are not in {} (cargo build --release --workspace first)",
            here.display()
        ));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let over = np > cores;
    let np_s = np.to_string();
    let mut launch = vec![mpirun.display().to_string(), "-np".into(), np_s.clone()];
    if over {
        launch.push("--oversubscribe".into());
    }
    let mut mpis = vec![Mpi {
        name: "rmpi".into(),
        mpicc,
        launch,
        exe: PathBuf::new(),
    }];
    let root = is_root();
    let candidates: [(&str, &str, &str); 3] = [
        ("openmpi", "mpicc.openmpi", "mpirun.openmpi"),
        ("mpich", "mpicc.mpich", "mpiexec.mpich"),
        ("system", "mpicc", "mpirun"),
    ];
    for (name, cc, run) in candidates {
        let (Some(cc), Some(run)) = (which(cc), which(run)) else {
            continue;
        };
        // Debian's plain mpicc is an alternative pointing at one of the above.
        let real = std::fs::canonicalize(&cc).unwrap_or(cc.clone());
        if mpis
            .iter()
            .any(|m| std::fs::canonicalize(&m.mpicc).unwrap_or(m.mpicc.clone()) == real)
        {
            continue;
        }
        let runner = run.display().to_string();
        let is_ompi = name == "openmpi"
            || std::fs::canonicalize(&run).is_ok_and(|p| p.to_string_lossy().contains("orterun"));
        let mut launch = vec![runner];
        if is_ompi && root {
            launch.push("--allow-run-as-root".into());
        }
        launch.extend(["-np".into(), np_s.clone()]);
        if is_ompi && over {
            launch.push("--oversubscribe".into());
        }
        mpis.push(Mpi {
            name: name.into(),
            mpicc: cc,
            launch,
            exe: PathBuf::new(),
        });
    }
    Ok(mpis)
}

/// Build the C source with each MPI's mpicc; an MPI whose build fails is left out (not rmpi).
pub fn build(source: &str, mpis: Vec<Mpi>, dir: &Path) -> Result<Vec<Mpi>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let src = dir.join("side_by_side.c");
    std::fs::write(&src, source).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let mut ok = Vec::new();
    for mut m in mpis {
        m.exe = dir.join(format!("side_by_side.{}", m.name));
        let mut cmd = Command::new(&m.mpicc);
        cmd.arg("-O2").arg("-o").arg(&m.exe).arg(&src);
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run {}: {e}", m.mpicc.display()))?;
        if out.status.success() {
            ok.push(m);
        } else if m.name == "rmpi" {
            return Err(format!(
                "{} failed:\n{}",
                m.mpicc.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        } else {
            eprintln!(
                "bench-compare: leaving out {}: its mpicc failed:\n{}",
                m.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    Ok(ok)
}

/// One run of the program with `args`: the (size, value) lines rank 0 printed.
pub fn run_once(m: &Mpi, args: &[String], timeout: Duration) -> Result<Vec<(usize, f64)>, String> {
    let mut cmd = Command::new(&m.launch[0]);
    cmd.args(&m.launch[1..])
        .arg(&m.exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", m.launch[0]))?;
    let deadline = Instant::now() + timeout;
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if Instant::now() > deadline {
            stop(&mut child);
            return Err(format!(
                "{} {} ran past {} s",
                m.name,
                args.join(" "),
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "{} {} failed ({}):\n{}",
            m.name,
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let rows = parse_rows(&text);
    if rows.is_empty() {
        return Err(format!(
            "{} {} printed no results:\n{text}",
            m.name,
            args.join(" ")
        ));
    }
    Ok(rows)
}

/// The "size value ..." lines of a benchmark's output: a whole number, then a number (further
/// columns ignored); headings (`# ...`), blank lines and anything else a launcher printed are
/// skipped. Both side_by_side.c and OSU's programs print this way.
pub fn parse_rows(text: &str) -> Vec<(usize, f64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
        })
        .collect()
}

/// Add `args` to the launcher line of the MPI called `name` (after its own arguments, before the
/// program), for experiments such as `--mca btl_sm_single_copy cma` on rmpi.
pub fn add_launch_args(mpis: &mut [Mpi], name: &str, args: &[String]) {
    for m in mpis.iter_mut().filter(|m| m.name == name) {
        m.launch.extend(args.iter().cloned());
    }
}

/// End a launcher that ran too long: SIGTERM first, so it can take its ranks down (a SIGKILLed
/// launcher leaves them running), SIGKILL if it is still there 5 s later.
fn stop(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}
