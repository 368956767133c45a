//! bench-compare: the same C benchmarks (benchmarks/c/side_by_side.c) built with rmpi's mpicc and
//! with every other mpicc/mpirun pair on the machine, run interleaved (A B A B ...) so drift on a
//! shared machine hits all alike, best of the rounds per size, and a table of per-size ratios.
//! With `--osu DIR`: an external, unmodified OSU tree instead, with the cache-line probe around
//! every run and medians per probe state (benchmarks::osu).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use benchmarks::compare::{add_launch_args, build, find_mpis, run_once, Mpi};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

const SOURCE: &str = include_str!("../../c/side_by_side.c");

#[derive(Parser)]
// A later option replaces an earlier one, so scripts/osu-compare.sh's defaults can be overridden.
#[command(
    name = "bench-compare",
    args_override_self = true,
    about = "Run the same C ping-pong / bandwidth / allreduce benchmarks built with rmpi and with \
             every other MPI found (Open MPI, MPICH), interleaved, and print per-size ratios; \
             with --osu, an unmodified OSU micro-benchmarks tree instead, per cache-line probe state"
)]
struct Args {
    /// Ranks per job
    #[arg(long = "np", default_value_t = 2, value_parser = benchmarks::cli::positive)]
    np: usize,
    /// Largest message size (K/M/G suffixes: powers of 1024)
    #[arg(short = 'm', long = "max-size", value_parser = benchmarks::parse_size, default_value = "4M")]
    max_size: usize,
    /// Divide OSU's iteration counts by this for quicker, noisier runs
    #[arg(long = "divisor", default_value_t = 1, value_parser = benchmarks::cli::positive)]
    divisor: usize,
    /// Rounds of A B A B; each size keeps the best round
    #[arg(long = "rounds", default_value_t = 2, value_parser = benchmarks::cli::positive)]
    rounds: usize,
    /// Tests to run, comma-separated: lat, bw, bibw, allreduce
    #[arg(long = "tests", action = clap::ArgAction::Set, value_delimiter = ',',
          default_value = "lat,bw,bibw")]
    tests: Vec<Test>,
    /// Add the allreduce test to --tests
    #[arg(long = "allreduce")]
    allreduce: bool,
    /// Write each test's results per MPI as benchmark JSON here (for bench-plot)
    #[arg(long = "json-dir", value_name = "DIR")]
    json_dir: Option<PathBuf>,
    /// Seconds one run may take before it is killed
    #[arg(long = "timeout", default_value_t = 600)]
    timeout: u64,
    /// Build and run this unmodified OSU micro-benchmarks (5.3) source tree's point-to-point
    /// programs instead, with the cache-line probe before and after each run
    #[arg(long = "osu", value_name = "DIR",
          conflicts_with_all = ["tests", "allreduce", "divisor", "json_dir"])]
    osu: Option<PathBuf>,
    /// OSU programs to run, comma-separated: osu_latency, osu_bw, osu_bibw, osu_mbw_mr,
    /// osu_multi_lat
    #[arg(long = "osu-tests", action = clap::ArgAction::Set, value_delimiter = ',',
          default_value = "osu_latency,osu_bw,osu_bibw", value_parser = osu_test, requires = "osu")]
    osu_tests: Vec<String>,
    /// Arguments for every OSU program, one string (e.g. "-i 1000 -x 100"); OSU 5.3 takes no -m,
    /// so -m then only trims the tables
    #[arg(
        long = "osu-args",
        value_name = "ARGS",
        allow_hyphen_values = true,
        requires = "osu"
    )]
    osu_args: Option<String>,
    /// Where the OSU builds (one directory per MPI) and the line probe go [default:
    /// $TMPDIR/rmpi-osu]
    #[arg(long = "build-dir", value_name = "DIR", requires = "osu")]
    build_dir: Option<PathBuf>,
    /// Write every raw OSU run (MPI, program, round, probes before and after, rows) here
    #[arg(long = "json", value_name = "FILE", requires = "osu")]
    json: Option<PathBuf>,
    /// Extra arguments for rmpi's mpirun, one string (e.g. "--mca btl_sm_single_copy cma")
    #[arg(long = "rmpi-args", value_name = "ARGS", allow_hyphen_values = true)]
    rmpi_args: Option<String>,
    /// Extra arguments for Open MPI's mpirun, one string
    #[arg(long = "openmpi-args", value_name = "ARGS", allow_hyphen_values = true)]
    openmpi_args: Option<String>,
    /// Extra arguments for MPICH's mpiexec, one string
    #[arg(long = "mpich-args", value_name = "ARGS", allow_hyphen_values = true)]
    mpich_args: Option<String>,
    /// Only these MPIs, comma-separated (rmpi, openmpi, mpich, system) [default: every one
    /// found], e.g. across hosts where one MPI's launcher cannot reach them
    #[arg(long = "mpis", action = clap::ArgAction::Set, value_delimiter = ',')]
    mpis: Vec<String>,
}

fn osu_test(s: &str) -> Result<String, String> {
    benchmarks::osu::bench(s).map(|b| b.name.to_string())
}

/// A one-string argument list, split at white space (no quoting).
fn words(s: &Option<String>) -> Vec<String> {
    s.as_deref()
        .unwrap_or("")
        .split_whitespace()
        .map(String::from)
        .collect()
}

fn run_osu(args: &Args, tree: &Path, mpis: Vec<Mpi>) -> Result<(), String> {
    let opts = benchmarks::osu::Options {
        tree: benchmarks::osu::check_tree(tree)?,
        tests: args
            .osu_tests
            .iter()
            .enumerate()
            .filter(|(i, t)| !args.osu_tests[..*i].contains(t))
            .map(|(_, t)| benchmarks::osu::bench(t))
            .collect::<Result<_, _>>()?,
        rounds: args.rounds,
        max_size: args.max_size,
        np: args.np,
        osu_args: words(&args.osu_args),
        build_dir: args
            .build_dir
            .clone()
            .unwrap_or_else(benchmarks::osu::default_build_dir),
        json: args.json.clone(),
        timeout: Duration::from_secs(args.timeout),
    };
    benchmarks::osu::run(&opts, mpis)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Test {
    Lat,
    Bw,
    Bibw,
    Allreduce,
}

impl Test {
    fn mode(self) -> &'static str {
        match self {
            Test::Lat => "lat",
            Test::Bw => "bw",
            Test::Bibw => "bibw",
            Test::Allreduce => "allreduce",
        }
    }
    fn lower_is_better(self) -> bool {
        matches!(self, Test::Lat | Test::Allreduce)
    }
    fn what(self) -> &'static str {
        match self {
            Test::Lat => "one-way latency (us)",
            Test::Bw => "bandwidth, window of 64 (MB/s)",
            Test::Bibw => "bidirectional bandwidth, window of 64 (MB/s)",
            Test::Allreduce => "allreduce of doubles, average over ranks (us)",
        }
    }
    fn json_key(self) -> &'static str {
        match self {
            Test::Lat => "latency_us",
            Test::Bw | Test::Bibw => "bandwidth_mbs",
            Test::Allreduce => "avg_latency_us",
        }
    }
}

/// Keep the better value per size (lower or higher, by the test).
fn merge(best: &mut Vec<(usize, f64)>, run: Vec<(usize, f64)>, lower: bool) {
    if best.is_empty() {
        *best = run;
        return;
    }
    for (b, r) in best.iter_mut().zip(run) {
        if (lower && r.1 < b.1) || (!lower && r.1 > b.1) {
            b.1 = r.1;
        }
    }
}

fn size_label(s: usize) -> String {
    if s == 0 {
        "0 B".into()
    } else {
        benchmarks::plot::bytes_label(s as f64)
    }
}

fn print_table(test: Test, mpis: &[Mpi], results: &[Vec<(usize, f64)>], args: &Args) {
    println!(
        "\n## {}: {}, {} ranks, best of {} interleaved rounds",
        test.mode(),
        test.what(),
        args.np,
        args.rounds
    );
    println!("## ratio = how many times as fast rmpi is (> 1: rmpi faster)");
    let mut head = format!("{:>9}", "size");
    for m in mpis {
        head += &format!("{:>13}", m.name);
    }
    for m in &mpis[1..] {
        head += &format!("{:>14}", format!("vs {}", m.name));
    }
    println!("{head}");
    for (i, &(size, ours)) in results[0].iter().enumerate() {
        let mut line = format!("{:>9}", size_label(size));
        let vals: Vec<Option<f64>> = results.iter().map(|r| r.get(i).map(|x| x.1)).collect();
        for v in &vals {
            line += &v.map_or(format!("{:>13}", "-"), |v| format!("{v:>13.2}"));
        }
        for v in &vals[1..] {
            let ratio = v.and_then(|t| {
                let r = if test.lower_is_better() {
                    t / ours
                } else {
                    ours / t
                };
                r.is_finite().then_some(r)
            });
            line += &ratio.map_or(format!("{:>14}", "-"), |r| format!("{r:>14.2}"));
        }
        println!("{line}");
    }
}

fn write_json(
    dir: &Path,
    test: Test,
    m: &Mpi,
    rows: &[(usize, f64)],
    np: usize,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let results: Vec<_> = rows
        .iter()
        .map(|&(s, v)| {
            let mut o = serde_json::Map::new();
            o.insert("size".into(), json!(s));
            o.insert(test.json_key().into(), json!(v));
            serde_json::Value::Object(o)
        })
        .collect();
    // The point-to-point tests involve two ranks whatever --np; the allreduce all of them.
    let label = match test {
        Test::Allreduce => format!("{} {}, {np} ranks", m.name, test.mode()),
        _ => format!("{} {}", m.name, test.mode()),
    };
    let doc = json!({
        "benchmark": format!("side-by-side {}", test.mode()),
        "title": test.what(),
        "implementation": m.name,
        "label": label,
        "ranks": np,
        "results": results,
    });
    let path = dir.join(format!("{}-{}.json", test.mode(), m.name));
    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Every MPI found, with the extra launcher arguments asked for.
fn mpis_with_args(args: &Args) -> Result<Vec<Mpi>, String> {
    let mut mpis = find_mpis(args.np)?;
    add_launch_args(&mut mpis, "rmpi", &words(&args.rmpi_args));
    add_launch_args(&mut mpis, "openmpi", &words(&args.openmpi_args));
    add_launch_args(&mut mpis, "mpich", &words(&args.mpich_args));
    if !args.mpis.is_empty() {
        if let Some(bad) = args
            .mpis
            .iter()
            .find(|n| !mpis.iter().any(|m| &m.name == *n))
        {
            return Err(format!(
                "--mpis: {bad} is not among the MPIs found ({})",
                mpis.iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        mpis.retain(|m| args.mpis.contains(&m.name));
    }
    Ok(mpis)
}

fn run(args: &Args) -> Result<(), String> {
    if let Some(tree) = &args.osu {
        return run_osu(args, tree, mpis_with_args(args)?);
    }
    let mut tests = args.tests.clone();
    if args.allreduce && !tests.contains(&Test::Allreduce) {
        tests.push(Test::Allreduce);
    }
    if tests.contains(&Test::Allreduce) && args.max_size < 8 {
        return Err("the allreduce test needs -m 8 or more (it reduces doubles)".into());
    }
    let point_to_point = tests.iter().any(|&t| t != Test::Allreduce);
    if point_to_point && args.np < 2 {
        return Err("lat, bw and bibw need --np 2 or more".into());
    }
    let mpis = mpis_with_args(args)?;
    let dir = mpis[0]
        .mpicc
        .parent()
        .map_or_else(|| PathBuf::from("side-by-side"), |d| d.join("side-by-side"));
    let mpis = build(SOURCE, mpis, &dir)?;
    let names: Vec<&str> = mpis.iter().map(|m| m.name.as_str()).collect();
    eprintln!(
        "bench-compare: {} (built in {})",
        names.join(", "),
        dir.display()
    );
    let bar = ProgressBar::new((tests.len() * args.rounds * mpis.len()) as u64);
    if let Ok(style) =
        ProgressStyle::with_template("{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
    {
        bar.set_style(style);
    }
    bar.set_prefix("bench-compare");
    // Another MPI that fails to run is left out with a warning; rmpi failing is an error.
    let mut alive = vec![true; mpis.len()];
    for &test in &tests {
        let run_args = [
            test.mode().to_string(),
            args.max_size.to_string(),
            args.divisor.to_string(),
        ];
        let mut best: Vec<Vec<(usize, f64)>> = vec![Vec::new(); mpis.len()];
        for round in 0..args.rounds {
            for (i, (m, b)) in mpis.iter().zip(best.iter_mut()).enumerate() {
                bar.inc(1);
                if !alive[i] {
                    continue;
                }
                bar.set_message(format!("{} {} round {}", test.mode(), m.name, round + 1));
                match run_once(m, &run_args, Duration::from_secs(args.timeout)) {
                    Ok(rows) => merge(b, rows, test.lower_is_better()),
                    Err(e) if i > 0 => {
                        bar.suspend(|| eprintln!("bench-compare: leaving out {}: {e}", m.name));
                        alive[i] = false;
                        b.clear();
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        bar.suspend(|| print_table(test, &mpis, &best, args));
        if let Some(d) = &args.json_dir {
            for (m, b) in mpis.iter().zip(&best).filter(|(_, b)| !b.is_empty()) {
                write_json(d, test, m, b, args.np)?;
            }
        }
    }
    bar.finish_and_clear();
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-compare: {e}");
            ExitCode::FAILURE
        }
    }
}
