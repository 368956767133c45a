//! bench-compare --osu: an external, unmodified OSU micro-benchmarks tree (5.3) built with every
//! MPI found, its point-to-point programs run interleaved (rmpi, Open MPI, MPICH, rmpi, ...) with
//! the cache-line probe (crate::probe) before and after each run, and per probe state a table of
//! per-size medians with rmpi against the better peer. Every raw run can go to a JSON file.
//!
//! Builds: OSU's own `configure CC=<mpicc> [CXX=<mpicxx>]` in a directory per MPI outside the
//! source tree (a VPATH build, which leaves the tree untouched), then `make -C mpi/pt2pt` of the
//! five programs, with the compile flags configure chose (`-g -O2` and its -D list). A build is
//! kept and reused while its key holds: the OSU tree's path and the size and mtime of its
//! configure and pt2pt sources, and the path, size and mtime of the mpicc. The programs link the
//! MPI library dynamically, so a library rebuilt under the same wrapper is picked up at run time
//! without a rebuild; remove the build directory to force one.

use std::collections::BTreeMap;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};

use crate::compare::{run_once, Mpi};
use crate::probe::{self, Probe, State};
use crate::stats::median;

/// One OSU point-to-point program and how to read its numbers.
#[derive(Debug, PartialEq)]
pub struct Bench {
    pub name: &'static str,
    /// What the second column holds, with its unit.
    pub what: &'static str,
    pub unit: &'static str,
    /// Latency (lower is better) or bandwidth (higher is better).
    pub lower_is_better: bool,
    /// Exactly two ranks (the others take any even number).
    pub two_ranks: bool,
}

/// The programs built for each MPI: OSU's pt2pt targets but the threaded osu_latency_mt.
pub const BENCHES: [Bench; 5] = [
    Bench {
        name: "osu_latency",
        what: "one-way latency",
        unit: "us",
        lower_is_better: true,
        two_ranks: true,
    },
    Bench {
        name: "osu_bw",
        what: "bandwidth, windows of 64 sends",
        unit: "MB/s",
        lower_is_better: false,
        two_ranks: true,
    },
    Bench {
        name: "osu_bibw",
        what: "bidirectional bandwidth, windows of 64 both ways",
        unit: "MB/s",
        lower_is_better: false,
        two_ranks: true,
    },
    Bench {
        name: "osu_mbw_mr",
        what: "multiple-pair bandwidth (first column, MB/s)",
        unit: "MB/s",
        lower_is_better: false,
        two_ranks: false,
    },
    Bench {
        name: "osu_multi_lat",
        what: "multiple-pair latency",
        unit: "us",
        lower_is_better: true,
        two_ranks: false,
    },
];

/// The benchmark called `name`.
pub fn bench(name: &str) -> Result<&'static Bench, String> {
    BENCHES.iter().find(|b| b.name == name).ok_or_else(|| {
        let all: Vec<&str> = BENCHES.iter().map(|b| b.name).collect();
        format!("'{name}' is not one of {}", all.join(", "))
    })
}

/// OSU's text output: the "size value" rows. Every pt2pt program prints `# ...` headings and then
/// one row per size, the size first and the figure second (osu_mbw_mr: MB/s, then messages/s).
pub fn parse_output(text: &str) -> Vec<(usize, f64)> {
    crate::compare::parse_rows(text)
}

/// Whether the tree's pt2pt programs take `-m` (OSU 5.4 and later do; 5.3 always runs every size
/// to 4 MiB).
pub fn takes_max_size(tree: &Path) -> bool {
    ["util/osu_util.c", "mpi/pt2pt/osu_pt2pt.c"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(tree.join(f)).ok())
        .any(|s| s.contains("case 'm'"))
}

/// The OSU tree, checked: its configure script and point-to-point sources are there.
pub fn check_tree(dir: &Path) -> Result<PathBuf, String> {
    let tree =
        std::fs::canonicalize(dir).map_err(|e| format!("OSU tree {}: {e}", dir.display()))?;
    for f in [
        "configure",
        "mpi/pt2pt/osu_latency.c",
        "mpi/pt2pt/Makefile.in",
    ] {
        if !tree.join(f).is_file() {
            return Err(format!(
                "{} is not an OSU micro-benchmarks source tree: it has no {f}",
                tree.display()
            ));
        }
    }
    if tree.join("config.status").exists() {
        return Err(format!(
            "{} was configured in place; OSU's configure refuses an out-of-tree build then \
             (run `make distclean` there)",
            tree.display()
        ));
    }
    Ok(tree)
}

fn stamp(p: &Path) -> String {
    match std::fs::metadata(p) {
        Ok(m) => {
            let t = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{} {} {t}", p.display(), m.len())
        }
        Err(_) => format!("{} missing", p.display()),
    }
}

/// What a build depends on; a build whose recorded key differs is redone.
fn build_key(tree: &Path, mpicc: &Path) -> String {
    let mut lines = vec![stamp(mpicc), stamp(&tree.join("configure"))];
    let pt2pt = tree.join("mpi/pt2pt");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&pt2pt)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    sources.sort();
    lines.extend(sources.iter().map(|p| stamp(p)));
    lines.join("\n") + "\n"
}

/// The build directory for one MPI: its name and a hash of its mpicc's path, so that two rmpi
/// builds (debug, release) do not share one.
pub fn build_subdir(root: &Path, m: &Mpi) -> PathBuf {
    let real = std::fs::canonicalize(&m.mpicc).unwrap_or_else(|_| m.mpicc.clone());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    real.hash(&mut h);
    root.join(format!("{}-{:08x}", m.name, h.finish() as u32))
}

/// The C++ wrapper beside a C wrapper (mpicc -> mpicxx, mpicc.mpich -> mpicxx.mpich), if any.
fn cxx_beside(mpicc: &Path) -> Option<PathBuf> {
    let name = mpicc.file_name()?.to_str()?;
    let cxx = mpicc.with_file_name(name.replacen("mpicc", "mpicxx", 1));
    (cxx != mpicc && cxx.is_file()).then_some(cxx)
}

/// Run `cmd` in `dir` with its output in `dir/<log>`; on failure, the log's last lines.
fn logged(mut cmd: Command, dir: &Path, log: &str, what: &str) -> Result<(), String> {
    let path = dir.join(log);
    let f = File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let f2 = f.try_clone().map_err(|e| e.to_string())?;
    let st = cmd
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(f)
        .stderr(f2)
        .status()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if st.success() {
        return Ok(());
    }
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(15).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(format!(
        "{what} failed ({st}); the end of {}:\n{}",
        path.display(),
        tail.join("\n")
    ))
}

/// Build OSU's pt2pt programs with `m`'s mpicc under `root` (reusing a build whose key holds);
/// returns the directory of the programs and whether it was built now.
pub fn build(tree: &Path, m: &Mpi, root: &Path) -> Result<(PathBuf, bool), String> {
    let dir = build_subdir(root, m);
    let bin = dir.join("mpi/pt2pt");
    let key_file = dir.join("rmpi-build-key");
    let key = build_key(tree, &m.mpicc);
    let all_there = BENCHES.iter().all(|b| bin.join(b.name).is_file());
    if all_there && std::fs::read_to_string(&key_file).is_ok_and(|k| k == key) {
        return Ok((bin, false));
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut configure = Command::new(tree.join("configure"));
    configure.arg(format!("CC={}", m.mpicc.display()));
    if let Some(cxx) = cxx_beside(&m.mpicc) {
        configure.arg(format!("CXX={}", cxx.display()));
    }
    configure.arg("--disable-dependency-tracking");
    logged(
        configure,
        &dir,
        "configure.log",
        &format!("OSU's configure with {}", m.mpicc.display()),
    )?;
    let mut make = Command::new("make");
    make.args(["-C", "mpi/pt2pt"]);
    make.args(BENCHES.iter().map(|b| b.name));
    // Never regenerate the build system: that would write into the source tree.
    make.args([
        "ACLOCAL=true",
        "AUTOCONF=true",
        "AUTOMAKE=true",
        "AUTOHEADER=true",
    ]);
    logged(
        make,
        &dir,
        "make.log",
        &format!("make of OSU's pt2pt with {}", m.mpicc.display()),
    )?;
    if let Some(b) = BENCHES.iter().find(|b| !bin.join(b.name).is_file()) {
        return Err(format!("the build in {} made no {}", dir.display(), b.name));
    }
    std::fs::write(&key_file, key)
        .map_err(|e| format!("cannot write {}: {e}", key_file.display()))?;
    Ok((bin, true))
}

/// One run of one program under one MPI, with the probe readings around it.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// Index into the MPIs (0: rmpi).
    pub mpi: usize,
    pub bench: &'static Bench,
    /// From 1.
    pub round: usize,
    pub before: f64,
    pub after: f64,
    pub rows: Vec<(usize, f64)>,
}

impl Run {
    /// None: mixed.
    pub fn state(&self) -> Option<State> {
        State::of_run(self.before, self.after)
    }
}

/// A row of a state table: per-MPI medians at one size and rmpi against the better peer.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub size: usize,
    pub medians: Vec<Option<f64>>,
    /// rmpi's median over the better peer's, and which MPI that peer is.
    pub ratio: Option<(f64, usize)>,
}

/// Per-size medians over `runs` for `n` MPIs (index 0 is rmpi), sizes up to `max_size`, and
/// rmpi over the better peer: the lower median for latency, the higher for bandwidth.
pub fn table(runs: &[&Run], n: usize, lower_is_better: bool, max_size: usize) -> Vec<Row> {
    let mut by_size: BTreeMap<usize, Vec<Vec<f64>>> = BTreeMap::new();
    for r in runs {
        for &(size, v) in r.rows.iter().filter(|(s, _)| *s <= max_size) {
            by_size.entry(size).or_insert_with(|| vec![Vec::new(); n])[r.mpi].push(v);
        }
    }
    by_size
        .into_iter()
        .map(|(size, vals)| {
            let medians: Vec<Option<f64>> = vals.iter().map(|v| median(v)).collect();
            let better = medians
                .iter()
                .enumerate()
                .skip(1)
                .filter_map(|(i, m)| m.map(|m| (m, i)))
                .reduce(|a, b| {
                    let b_wins = if lower_is_better {
                        b.0 < a.0
                    } else {
                        b.0 > a.0
                    };
                    if b_wins {
                        b
                    } else {
                        a
                    }
                });
            let ratio = match (medians[0], better) {
                (Some(ours), Some((peer, i))) => {
                    let r = ours / peer;
                    r.is_finite().then_some((r, i))
                }
                _ => None,
            };
            Row {
                size,
                medians,
                ratio,
            }
        })
        .collect()
}

fn size_label(s: usize) -> String {
    if s == 0 {
        "0 B".into()
    } else {
        crate::plot::bytes_label(s as f64)
    }
}

fn value(v: Option<f64>) -> String {
    v.map_or(format!("{:>13}", "-"), |v| format!("{v:>13.2}"))
}

/// The printed tables of one benchmark: one per probe state in which every MPI ran, a line for a
/// state some MPI missed, and the mixed runs (one column each).
pub fn report(bench: &Bench, runs: &[Run], names: &[String], max_size: usize) -> String {
    let mut out = String::new();
    let mine: Vec<&Run> = runs.iter().filter(|r| r.bench == bench).collect();
    let n = names.len();
    let ours = &names[0];
    let count = |rs: &[&Run]| -> String {
        names
            .iter()
            .enumerate()
            .map(|(i, name)| format!("{name} {}", rs.iter().filter(|r| r.mpi == i).count()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for state in State::ALL {
        let rs: Vec<&Run> = mine
            .iter()
            .copied()
            .filter(|r| r.state() == Some(state))
            .collect();
        if rs.is_empty() {
            continue;
        }
        if (0..n).any(|i| !rs.iter().any(|r| r.mpi == i)) {
            out += &format!(
                "\n## {}, {}: runs {}: not every MPI ran in this state, no table\n",
                bench.name,
                state.describe(),
                count(&rs)
            );
            continue;
        }
        let probes = rs.iter().flat_map(|r| [r.before, r.after]);
        let lo = probes.clone().fold(f64::INFINITY, f64::min);
        let hi = probes.fold(0.0, f64::max);
        out += &format!(
            "\n## {}, {}: {} ({}), median of runs {}; probe {lo:.0}-{hi:.0} ns\n",
            bench.name,
            state.describe(),
            bench.what,
            bench.unit,
            count(&rs)
        );
        let mut head = format!("{:>9}", "size");
        for name in names {
            head += &format!("{name:>13}");
        }
        if n > 1 {
            out += &if bench.lower_is_better {
                format!(
                    "## vs peer = {ours} / the better (lower) peer median: < 1, {ours} faster\n"
                )
            } else {
                format!(
                    "## vs peer = {ours} / the better (higher) peer median: > 1, {ours} faster\n"
                )
            };
            head += &format!("{:>10}  {}", "vs peer", "better peer");
        }
        out += &head;
        out += "\n";
        for row in table(&rs, n, bench.lower_is_better, max_size) {
            let mut line = format!("{:>9}", size_label(row.size));
            for v in &row.medians {
                line += &value(*v);
            }
            if n > 1 {
                line += &row.ratio.map_or(format!("{:>10}", "-"), |(r, i)| {
                    format!("{r:>10.2}  {}", names[i])
                });
            }
            out += line.trim_end();
            out += "\n";
        }
    }
    let mixed: Vec<&Run> = mine
        .iter()
        .copied()
        .filter(|r| r.state().is_none())
        .collect();
    if !mixed.is_empty() {
        let which: Vec<String> = mixed
            .iter()
            .map(|r| {
                format!(
                    "{} round {} {:.0}->{:.0} ns",
                    names[r.mpi], r.round, r.before, r.after
                )
            })
            .collect();
        out += &format!(
            "\n## {}, mixed (the probe changed state during the run; in no table): {}\n",
            bench.name,
            which.join(", ")
        );
        let mut head = format!("{:>9}", "size");
        for r in &mixed {
            head += &format!("{:>13}", format!("{} r{}", names[r.mpi], r.round));
        }
        out += &head;
        out += "\n";
        let mut sizes: Vec<usize> = mixed
            .iter()
            .flat_map(|r| r.rows.iter().map(|x| x.0))
            .filter(|&s| s <= max_size)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        for size in sizes {
            let mut line = format!("{:>9}", size_label(size));
            for r in &mixed {
                line += &value(r.rows.iter().find(|x| x.0 == size).map(|x| x.1));
            }
            out += &line;
            out += "\n";
        }
    }
    if mine.is_empty() {
        out += &format!("\n## {}: no runs\n", bench.name);
    }
    out
}

/// What `bench-compare --osu` was asked.
pub struct Options {
    pub tree: PathBuf,
    pub tests: Vec<&'static Bench>,
    pub rounds: usize,
    pub max_size: usize,
    pub np: usize,
    /// Passed to every OSU program (e.g. "-i 1000 -x 100").
    pub osu_args: Vec<String>,
    pub build_dir: PathBuf,
    pub json: Option<PathBuf>,
    pub timeout: Duration,
}

/// The default build directory: $TMPDIR/rmpi-osu.
pub fn default_build_dir() -> PathBuf {
    std::env::temp_dir().join("rmpi-osu")
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

struct Record<'a> {
    opts: &'a Options,
    /// What every program was given: --osu-args, and -m where the tree takes it.
    args: &'a [String],
    mpis: &'a [(Mpi, PathBuf)],
    runs: Vec<Value>,
    failures: Vec<Value>,
    started: u64,
}

impl Record<'_> {
    fn write(&self) -> Result<(), String> {
        let Some(path) = &self.opts.json else {
            return Ok(());
        };
        let doc = json!({
            "tool": "bench-compare --osu",
            "osu_dir": self.opts.tree.display().to_string(),
            "osu_args": self.opts.osu_args,
            "program_args": self.args,
            "max_size": self.opts.max_size,
            "ranks": self.opts.np,
            "rounds": self.opts.rounds,
            "started_unix_s": self.started,
            "probe": {
                "program": "benchmarks/c/line_probe.c",
                "cpus": [0, 1],
                "what": "one-way cache-line transfer in ns: probe_*_ns the fastest of 31 trials \
                         of 2000 round trips (the state), probe_*_median_ns the median trial \
                         (grows with CPU contention)",
                "fast_below_ns": probe::FAST_BELOW_NS,
                "slow_above_ns": probe::SLOW_ABOVE_NS,
            },
            "mpis": self.mpis.iter().map(|(m, bin)| json!({
                "name": m.name,
                "mpicc": m.mpicc.display().to_string(),
                "launch": m.launch,
                "programs": bin.display().to_string(),
            })).collect::<Vec<_>>(),
            "runs": self.runs,
            "failures": self.failures,
        });
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

fn run_json(r: &Run, name: &str, started: u64) -> Value {
    json!({
        "mpi": name,
        "benchmark": r.bench.name,
        "unit": r.bench.unit,
        "round": r.round,
        "unix_s": started,
        "probe_before_ns": r.before,
        "probe_after_ns": r.after,
        "state": probe::run_state_name(r.before, r.after),
        "rows": r.rows.iter().map(|&(s, v)| json!({"size": s, "value": v})).collect::<Vec<_>>(),
    })
}

/// Build, run interleaved with the probe around each run, print the tables, write the JSON.
pub fn run(opts: &Options, mpis: Vec<Mpi>) -> Result<(), String> {
    if opts.np != 2 {
        if let Some(b) = opts.tests.iter().find(|b| b.two_ranks) {
            return Err(format!("{} needs --np 2", b.name));
        }
        if opts.np % 2 == 1 {
            return Err("osu_mbw_mr and osu_multi_lat need an even --np".into());
        }
    }
    let probe = Probe::build(&opts.build_dir.join("probe"))?;
    let first = probe.measure()?;
    eprintln!(
        "bench-compare: line probe (CPU 0 <-> CPU 1): {:.1} ns one way (median trial {:.1}), {}",
        first.ns,
        first.median_ns,
        State::of(first.ns).describe()
    );
    let mut built: Vec<(Mpi, PathBuf)> = Vec::new();
    for m in mpis {
        eprintln!(
            "bench-compare: OSU for {} with {} ...",
            m.name,
            m.mpicc.display()
        );
        match build(&opts.tree, &m, &opts.build_dir) {
            Ok((bin, fresh)) => {
                eprintln!(
                    "bench-compare: {} {}",
                    if fresh { "built" } else { "reusing" },
                    bin.display()
                );
                built.push((m, bin));
            }
            Err(e) if !built.is_empty() => {
                eprintln!("bench-compare: leaving out {}: {e}", m.name);
            }
            Err(e) => return Err(e),
        }
    }
    let mut args = opts.osu_args.clone();
    if takes_max_size(&opts.tree) {
        args.extend(["-m".into(), opts.max_size.to_string()]);
    } else if opts.max_size < 4 << 20 {
        eprintln!(
            "bench-compare: this OSU tree's programs take no -m (5.3 runs every size to 4 MiB); \
             sizes above {} are left out of the tables, not of the runs or the JSON",
            opts.max_size
        );
    }
    let names: Vec<String> = built.iter().map(|(m, _)| m.name.clone()).collect();
    let mut record = Record {
        opts,
        args: &args,
        mpis: &built,
        runs: Vec::new(),
        failures: Vec::new(),
        started: unix_now(),
    };
    record.write()?;
    let bar = ProgressBar::new((opts.rounds * opts.tests.len() * built.len()) as u64);
    if let Ok(style) =
        ProgressStyle::with_template("{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
    {
        bar.set_style(style);
    }
    bar.set_prefix("bench-compare --osu");
    let mut alive = vec![true; built.len()];
    let mut runs: Vec<Run> = Vec::new();
    for round in 1..=opts.rounds {
        for &b in &opts.tests {
            for (i, (m, bin)) in built.iter().enumerate() {
                bar.inc(1);
                if !alive[i] {
                    continue;
                }
                bar.set_message(format!("{} {} round {round}", b.name, m.name));
                let started = unix_now();
                let before = probe.measure()?;
                let prog = Mpi {
                    exe: bin.join(b.name),
                    ..m.clone()
                };
                let result = run_once(&prog, &args, opts.timeout);
                let after = probe.measure()?;
                match result {
                    Ok(rows) => {
                        let r = Run {
                            mpi: i,
                            bench: b,
                            round,
                            before: before.ns,
                            after: after.ns,
                            rows,
                        };
                        let mut j = run_json(&r, &m.name, started);
                        j["probe_before_median_ns"] = json!(before.median_ns);
                        j["probe_after_median_ns"] = json!(after.median_ns);
                        record.runs.push(j);
                        runs.push(r);
                    }
                    Err(e) => {
                        record.failures.push(json!({
                            "mpi": m.name, "benchmark": b.name, "round": round,
                            "unix_s": started, "error": e,
                            "probe_before_ns": before.ns, "probe_after_ns": after.ns,
                        }));
                        if i == 0 {
                            record.write()?;
                            return Err(e);
                        }
                        bar.suspend(|| eprintln!("bench-compare: leaving out {}: {e}", m.name));
                        alive[i] = false;
                    }
                }
                record.write()?;
            }
        }
    }
    bar.finish_and_clear();
    // An MPI left out after a failure is in no table: the others are compared among themselves.
    let index: Vec<Option<usize>> = alive
        .iter()
        .scan(0, |next, &a| {
            Some(a.then(|| {
                *next += 1;
                *next - 1
            }))
        })
        .collect();
    let kept: Vec<Run> = runs
        .into_iter()
        .filter_map(|r| index[r.mpi].map(|mpi| Run { mpi, ..r }))
        .collect();
    let shown: Vec<String> = names
        .iter()
        .zip(&alive)
        .filter(|(_, a)| **a)
        .map(|(n, _)| n.clone())
        .collect();
    println!(
        "# unmodified OSU ({}) built with each MPI, {} ranks, {} interleaved round(s); args: {}",
        opts.tree.display(),
        opts.np,
        opts.rounds,
        if args.is_empty() {
            "OSU's defaults".to_string()
        } else {
            args.join(" ")
        }
    );
    for (m, _) in &built {
        println!("# {}: {}", m.name, m.launch.join(" "));
    }
    println!(
        "# state = line probe (benchmarks/c/line_probe.c: CPU 0 <-> CPU 1, one way, fastest trial) \
         before and after each run: fast < {} ns, slow > {} ns, middle between",
        probe::FAST_BELOW_NS,
        probe::SLOW_ABOVE_NS
    );
    for (m, _) in built.iter().zip(&alive).filter(|(_, a)| !**a) {
        println!(
            "# {}: left out after a failed run (see above and the JSON)",
            m.0.name
        );
    }
    for b in &opts.tests {
        print!("{}", report(b, &kept, &shown, opts.max_size));
    }
    if let Some(p) = &opts.json {
        eprintln!("bench-compare: raw runs in {}", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OSU_LATENCY: &str = "# OSU MPI Latency Test v5.3\n\
        # Size          Latency (us)\n\
        0                       0.21\n\
        1                       0.23\n\
        4194304               812.55\n";

    const OSU_MBW_MR: &str = "# OSU MPI Multiple Bandwidth / Message Rate Test v5.3\n\
        # [ pairs: 1 ] [ window size: 64 ]\n\
        # Size                  MB/s        Messages/s\n\
        1                       2.61        2606432.91\n\
        2                       5.38        2691095.44\n";

    #[test]
    fn osu_text_parses() {
        assert_eq!(
            parse_output(OSU_LATENCY),
            vec![(0, 0.21), (1, 0.23), (4194304, 812.55)]
        );
        assert_eq!(parse_output(OSU_MBW_MR), vec![(1, 2.61), (2, 5.38)]);
        // A launcher's chatter on stdout is not a row.
        let noisy = "[host:123] warning: something\n\nmpirun: note\n8  12.5\n";
        assert_eq!(parse_output(noisy), vec![(8, 12.5)]);
        assert!(
            parse_output("# OSU MPI Bandwidth Test v5.3\n# Size  Bandwidth (MB/s)\n").is_empty()
        );
    }

    #[test]
    fn benches_by_name() {
        assert!(bench("osu_bw").is_ok_and(|b| !b.lower_is_better));
        assert!(bench("osu_latency").is_ok_and(|b| b.lower_is_better && b.two_ranks));
        assert!(
            bench("osu_allreduce").is_err_and(
                |e| e.contains("osu_latency, osu_bw, osu_bibw, osu_mbw_mr, osu_multi_lat")
            )
        );
    }

    fn run(mpi: usize, b: &'static Bench, before: f64, after: f64, rows: &[(usize, f64)]) -> Run {
        Run {
            mpi,
            bench: b,
            round: 1,
            before,
            after,
            rows: rows.to_vec(),
        }
    }

    #[test]
    fn medians_and_ratio_against_the_better_peer() {
        let lat = bench("osu_latency").unwrap();
        let runs = [
            run(0, lat, 50.0, 50.0, &[(0, 1.0), (8, 2.0), (16, 9.0)]),
            run(0, lat, 50.0, 50.0, &[(0, 3.0), (8, 4.0), (16, 9.0)]),
            run(0, lat, 50.0, 50.0, &[(0, 2.0), (8, 100.0), (16, 9.0)]),
            run(1, lat, 50.0, 50.0, &[(0, 4.0), (8, 1.0)]),
            run(2, lat, 50.0, 50.0, &[(0, 8.0), (8, 2.0)]),
        ];
        let refs: Vec<&Run> = runs.iter().collect();
        let t = table(&refs, 3, true, 8);
        assert_eq!(t.len(), 2, "sizes above the maximum are left out");
        // Size 0: medians 2, 4, 8; the better (lower) peer is MPI 1: 2 / 4.
        assert_eq!(t[0].medians, vec![Some(2.0), Some(4.0), Some(8.0)]);
        assert_eq!(t[0].ratio, Some((0.5, 1)));
        // Size 8: rmpi's median 4 (one outlier of 100 ignored), peers 1 and 2.
        assert_eq!(t[1].medians, vec![Some(4.0), Some(1.0), Some(2.0)]);
        assert_eq!(t[1].ratio, Some((4.0, 1)));

        // Bandwidth: the better peer is the higher one.
        let bw = bench("osu_bw").unwrap();
        let runs = [
            run(0, bw, 50.0, 50.0, &[(1, 10.0)]),
            run(1, bw, 50.0, 50.0, &[(1, 20.0)]),
            run(2, bw, 50.0, 50.0, &[(1, 40.0)]),
            run(2, bw, 50.0, 50.0, &[(1, 30.0)]),
        ];
        let refs: Vec<&Run> = runs.iter().collect();
        let t = table(&refs, 3, false, 1 << 22);
        assert_eq!(t[0].medians, vec![Some(10.0), Some(20.0), Some(35.0)]);
        assert_eq!(t[0].ratio, Some((10.0 / 35.0, 2)));

        // A size only rmpi has: no ratio.
        let runs = [
            run(0, bw, 50.0, 50.0, &[(2, 10.0)]),
            run(1, bw, 50.0, 50.0, &[]),
        ];
        let refs: Vec<&Run> = runs.iter().collect();
        assert_eq!(table(&refs, 2, false, 8)[0].ratio, None);
    }

    #[test]
    fn report_per_state_with_mixed_runs_apart() {
        let lat = bench("osu_latency").unwrap();
        let names = vec!["rmpi".to_string(), "openmpi".to_string()];
        let runs = vec![
            run(0, lat, 40.0, 60.0, &[(0, 1.0), (1, 1.5)]),
            run(1, lat, 55.0, 50.0, &[(0, 2.0), (1, 2.5)]),
            // Slow, but only rmpi: no table.
            run(0, lat, 270.0, 260.0, &[(0, 3.0), (1, 3.0)]),
            // Mixed.
            run(1, lat, 55.0, 270.0, &[(0, 9.0), (1, 9.5)]),
        ];
        let text = report(lat, &runs, &names, 1 << 22);
        assert!(
            text.contains("## osu_latency, fast (probe < 120 ns): one-way latency (us), median of runs rmpi 1, openmpi 1; probe 40-60 ns"),
            "{text}"
        );
        assert!(text.contains("< 1, rmpi faster"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>()
                    == ["0", "B", "1.00", "2.00", "0.50", "openmpi"]),
            "{text}"
        );
        assert!(
            text.contains("slow (probe > 200 ns): runs rmpi 1, openmpi 0: not every MPI ran"),
            "{text}"
        );
        assert!(text.contains("mixed (the probe changed state during the run; in no table): openmpi round 1 55->270 ns"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["1", "B", "9.50"]),
            "{text}"
        );
        // No middle runs: no middle heading.
        assert!(!text.contains("middle"), "{text}");
    }

    #[test]
    fn builds_are_kept_apart_per_mpicc() {
        let m = |name: &str, cc: &str| Mpi {
            name: name.into(),
            mpicc: PathBuf::from(cc),
            launch: vec![],
            exe: PathBuf::new(),
        };
        let root = Path::new("/tmp/x");
        let a = build_subdir(root, &m("rmpi", "/a/debug/mpicc"));
        let b = build_subdir(root, &m("rmpi", "/a/release/mpicc"));
        assert_ne!(a, b);
        assert!(a
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("rmpi-"));
        assert_eq!(a, build_subdir(root, &m("rmpi", "/a/debug/mpicc")));
    }
}
