//! The command line: Open MPI spellings normalised, parsed with clap, validated into a `JobSpec`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser};

use crate::program;
use crate::topo::policy::{self, MapPolicy, Mapping, Policy};

/// Open MPI long options users type with one dash (`-np 4`), and how many values each takes.
const SINGLE_DASH_LONG: &[(&str, usize)] = &[
    ("np", 1),
    ("mca", 2),
    ("oversubscribe", 0),
    ("timeout", 1),
    ("tag-output", 0),
    ("bind-to", 1),
    ("map-by", 1),
    ("rank-by", 1),
    ("cpu-set", 1),
    ("report-bindings", 0),
    ("display-map", 0),
    ("display-topology", 0),
    ("do-not-launch", 0),
    ("use-hwthread-cpus", 0),
    ("version", 0),
    ("help", 0),
    ("shm-report", 0),
    ("mca-list", 0),
    ("json", 0),
    ("host", 1),
    ("hostfile", 1),
    ("machinefile", 1),
    ("npernode", 1),
    ("launch-agent", 1),
];

/// Value counts of the remaining options, so normalisation can tell where the program starts.
const OTHER_WITH_VALUES: &[(&str, usize)] = &[
    ("-n", 1),
    ("-x", 1),
    ("--np", 1),
    ("--mca", 2),
    ("--timeout", 1),
    ("--bind-to", 1),
    ("--map-by", 1),
    ("--rank-by", 1),
    ("--cpu-set", 1),
    ("-H", 1),
    ("--host", 1),
    ("--hostfile", 1),
    ("--machinefile", 1),
    ("--npernode", 1),
    ("--launch-agent", 1),
];

/// Rewrites single-dash long options (`-np`, `-mca`, ...) to their `--` form, up to the program
/// name; everything from the program name on is left untouched.
pub fn normalize_args(args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter();
    out.extend(it.next()); // argv[0]
    while let Some(arg) = it.next() {
        let Some(s) = arg.to_str() else {
            out.push(arg); // not UTF-8: can only be the program name
            break;
        };
        if s == "--" || s == "-" || !s.starts_with('-') {
            out.push(arg);
            break;
        }
        let (name, inline_value) = match s.split_once('=') {
            Some((n, _)) => (n, true),
            None => (s, false),
        };
        let single = SINGLE_DASH_LONG
            .iter()
            .find(|(long, _)| name.strip_prefix('-') == Some(long));
        let other = OTHER_WITH_VALUES.iter().find(|(opt, _)| *opt == name);
        let (rewritten, n_values) = match (single, other) {
            (Some(&(_, n)), _) => (OsString::from(format!("-{s}")), n),
            (None, Some(&(_, n))) => (arg, n),
            (None, None) => (arg, 0),
        };
        out.push(rewritten);
        if !inline_value {
            out.extend(it.by_ref().take(n_values));
        }
    }
    out.extend(it);
    out
}

/// A clap usage error as one user-facing line (without the `mpirun: ` prefix): clap's own
/// rendering spans several lines with a usage block, and bad input gets one clear line here.
pub fn usage_error_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let ctx = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => v.first().cloned(),
        _ => None,
    };
    let hint =
        ctx(ContextKind::SuggestedArg).map_or(String::new(), |s| format!("; did you mean '{s}'?"));
    match (e.kind(), ctx(ContextKind::InvalidArg)) {
        (ErrorKind::UnknownArgument, Some(a)) => {
            format!("unknown option '{a}'{hint} (mpirun --help lists the options)")
        }
        (ErrorKind::WrongNumberOfValues | ErrorKind::InvalidValue, Some(a))
            if a.starts_with("--mca") =>
        {
            "--mca takes two values, a name and a value (--mca KEY VALUE)".into()
        }
        (ErrorKind::WrongNumberOfValues | ErrorKind::InvalidValue, Some(a)) => {
            format!("option '{a}' is missing its value")
        }
        _ => {
            // Fall back on clap's first line, without its "error: " and styling.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid command line");
            format!(
                "{} (mpirun --help lists the options)",
                first.trim_start_matches("error: ")
            )
        }
    }
}

/// Run N copies of a program as one MPI job, on this node or on the hosts given.
#[derive(Parser, Debug)]
#[command(
    name = "mpirun",
    version = concat!("(rmpi) ", env!("CARGO_PKG_VERSION")),
    about = "Run N copies of a program as one MPI job on this node",
    override_usage = "mpirun [OPTIONS] <PROGRAM> [ARGS]..."
)]
pub struct Cli {
    /// Number of ranks (default: one per available core); `-np` is accepted too
    #[arg(short = 'n', long = "np", value_name = "N", allow_hyphen_values = true)]
    pub np: Option<String>,

    /// Allow more ranks than cores
    #[arg(long)]
    pub oversubscribe: bool,

    /// Bind each rank to an object (default: core for up to 2 ranks, else NUMA node; none when
    /// oversubscribed); qualifier :overload-allowed
    #[arg(
        long,
        value_name = "none|hwthread|core|l1cache|l2cache|l3cache|numa|package"
    )]
    pub bind_to: Option<String>,

    /// Place ranks by slot, node, hwthread, core, l1cache..l3cache, numa, package or ppr:N:OBJECT;
    /// modifiers :PE=n, :span, :oversubscribe
    #[arg(long, value_name = "OBJECT[:PE=n]")]
    pub map_by: Option<String>,

    /// Number the placed ranks round robin over the objects of this level (default: mapping order)
    #[arg(long, value_name = "slot|hwthread|core|...|package")]
    pub rank_by: Option<String>,

    /// Restrict the job to these CPUs (OS numbers, e.g. 0-3,8)
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub cpu_set: Option<String>,

    /// Count hardware threads, not cores, as slots
    #[arg(long)]
    pub use_hwthread_cpus: bool,

    /// Print each rank's binding, in Open MPI's format, on stderr
    #[arg(long)]
    pub report_bindings: bool,

    /// Print the mapping and binding policies and every rank's CPUs before starting
    #[arg(long)]
    pub display_map: bool,

    /// Print the node's topology (hwloc) before starting
    #[arg(long)]
    pub display_topology: bool,

    /// Do everything up to starting the ranks (mapping, binding, reports), then stop
    #[arg(long)]
    pub do_not_launch: bool,

    /// Export an environment variable to the ranks (repeatable)
    #[arg(short = 'x', value_name = "VAR[=VALUE]", action = ArgAction::Append)]
    pub export: Vec<String>,

    /// Set an MCA parameter, passed to ranks as RMPI_MCA_<KEY> (repeatable)
    #[arg(
        long,
        num_args = 2,
        value_names = ["KEY", "VALUE"],
        action = ArgAction::Append,
        allow_hyphen_values = true
    )]
    pub mca: Vec<String>,

    /// MPI_UNIVERSE_SIZE: how many processes the job may grow to with MPI_Comm_spawn (default:
    /// $RMPI_UNIVERSE_SIZE, else the larger of the rank count and the cores)
    #[arg(long, value_name = "N")]
    pub universe_size: Option<usize>,

    /// Prefix each output line with `[rank] `
    #[arg(long)]
    pub tag_output: bool,

    /// Run on these hosts: NAME or NAME:SLOTS, comma-separated (a host named again adds slots)
    #[arg(short = 'H', long = "host", value_name = "HOSTS", action = ArgAction::Append)]
    pub host: Vec<String>,

    /// Run on the hosts of this file: one per line, `NAME [slots=N]`
    #[arg(long = "hostfile", visible_alias = "machinefile", value_name = "FILE")]
    pub hostfile: Option<PathBuf>,

    /// Start exactly N ranks on each host
    #[arg(long, value_name = "N")]
    pub npernode: Option<usize>,

    /// The command that starts mpirun's daemon on another host (default: ssh; the host name and
    /// the daemon's command are appended); as --mca plm_rsh_agent
    #[arg(long = "launch-agent", value_name = "CMD", allow_hyphen_values = true)]
    pub launch_agent: Option<String>,

    /// Kill the job after this many seconds (exit code 124)
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true)]
    pub timeout: Option<String>,

    /// Print the shared-memory model for -np N ranks and the current MCA values; start nothing
    #[arg(long)]
    pub shm_report: bool,

    /// With --shm-report: print it as JSON
    #[arg(long)]
    pub json: bool,

    /// List the MCA parameters (also environment variables) with defaults and meaning
    #[arg(long)]
    pub mca_list: bool,

    /// The program to run, then its arguments (passed on untouched)
    #[arg(
        value_name = "PROGRAM",
        trailing_var_arg = true,
        value_parser = clap::value_parser!(OsString)
    )]
    pub command: Vec<OsString>,
}

/// A validated job description.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub n: usize,
    /// Resolved path of the program.
    pub program: PathBuf,
    /// The name as the user typed it (the ranks' argv[0]).
    pub argv0: OsString,
    pub args: Vec<OsString>,
    /// More ranks than cores.
    pub oversubscribed: bool,
    /// Mapping, ranking and binding as asked for (`topo::map::plan` applies them).
    pub policy: Policy,
    /// The OS CPUs each rank is bound to, in rank order; empty: not bound. Filled by `main`
    /// from the plan; empty for every rank until then.
    pub bindings: Vec<Vec<usize>>,
    /// Each rank's place in the machine for `RMPI_LOCALITY` (`topo::locality`), empty when the
    /// topology is not this machine's.
    pub localities: Vec<String>,
    /// Every rank's package, NUMA node and L3 (`topo::job_locality`), for `RMPI_LOCALITY_ALL`.
    pub job_locality: Option<String>,
    pub report_bindings: bool,
    pub display_map: bool,
    pub display_topology: bool,
    pub do_not_launch: bool,
    pub exports: Vec<(String, OsString)>,
    /// MCA parameters from the command line; one entry per key, the last value given wins.
    pub mca: Vec<(String, String)>,
    pub tag_output: bool,
    /// MPI_UNIVERSE_SIZE (PMI `get_universe_size`).
    pub universe: usize,
    /// The limit in seconds as given (for the message) and as a Duration.
    pub timeout: Option<(f64, Duration)>,
}

impl JobSpec {
    /// A node daemon's part of a job started on several hosts (`orted.rs`): what its ranks
    /// need to start, unbound (binding on other hosts is not planned yet).
    pub fn for_node(
        n: usize,
        program: PathBuf,
        argv0: OsString,
        args: Vec<OsString>,
        exports: Vec<(String, OsString)>,
        mca: Vec<(String, String)>,
        oversubscribed: bool,
    ) -> JobSpec {
        JobSpec {
            n,
            program,
            argv0,
            args,
            oversubscribed,
            policy: Policy::unspecified(),
            bindings: vec![Vec::new(); n],
            localities: vec![String::new(); n],
            job_locality: None,
            report_bindings: false,
            display_map: false,
            display_topology: false,
            do_not_launch: false,
            exports,
            mca,
            tag_output: false,
            universe: n,
            timeout: None,
        }
    }

    /// The value of an MCA parameter from the command line.
    pub fn mca_value(&self, name: &str) -> Option<&str> {
        self.mca
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The placement options, parsed (before the topology is read: `--cpu-set` restricts it).
pub fn placement(cli: &Cli) -> Result<Policy, String> {
    placement_of(
        cli.map_by.as_deref(),
        cli.bind_to.as_deref(),
        cli.rank_by.as_deref(),
        cli.cpu_set.as_deref(),
        cli.use_hwthread_cpus,
    )
}

/// `placement` from the options' words (a node daemon gets them from mpirun).
pub fn placement_of(
    map_by: Option<&str>,
    bind_to: Option<&str>,
    rank_by: Option<&str>,
    cpu_set: Option<&str>,
    hwthread_cpus: bool,
) -> Result<Policy, String> {
    let mut map = match map_by {
        Some(s) => policy::parse_map_by(s)?,
        None => MapPolicy {
            mapping: Mapping::Slots,
            given: false,
            pe: 1,
            oversubscribe: None,
        },
    };
    if map.pe > 1 && matches!(map.mapping, Mapping::Hwthread) {
        return Err("invalid --map-by: PE=n counts cores; it cannot go with hwthread".into());
    }
    map.given = map_by.is_some();
    Ok(Policy {
        map,
        bind: bind_to.map(policy::parse_bind_to).transpose()?,
        rank_by: match rank_by {
            Some(s) => policy::parse_rank_by(s)?,
            None => None,
        },
        cpu_set: cpu_set.map(policy::parse_cpu_set).transpose()?,
        hwthread_cpus,
    })
}

/// Checks the parsed command line. `ncores` is how many cores the job may use; `env` reads
/// mpirun's environment. The error is one user-facing line without the `mpirun: ` prefix.
pub fn validate(
    cli: Cli,
    ncores: usize,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<JobSpec, String> {
    let policy = placement(&cli)?;
    let mut command = cli.command.into_iter();
    let Some(argv0) = command.next() else {
        return Err("no program given (usage: mpirun [options] <program> [args...])".into());
    };
    let args: Vec<OsString> = command.collect();

    let n = match &cli.np {
        None => ncores,
        Some(s) => match s.parse::<usize>() {
            Ok(0) => return Err(format!("invalid number of ranks '{s}': must be at least 1")),
            Ok(n) => n,
            Err(_) => {
                return Err(format!(
                    "invalid number of ranks '{s}': expected a positive integer"
                ))
            }
        },
    };

    let timeout = match &cli.timeout {
        None => None,
        Some(s) => {
            let bad = || format!("invalid --timeout '{s}': expected a positive number of seconds");
            let secs: f64 = s.trim().parse().map_err(|_| bad())?;
            if secs.is_nan() || secs <= 0.0 {
                return Err(bad());
            }
            Some((secs, Duration::try_from_secs_f64(secs).map_err(|_| bad())?))
        }
    };

    let mut exports = Vec::new();
    for x in &cli.export {
        let (name, value) = match x.split_once('=') {
            Some((name, value)) => (name, Some(OsString::from(value))),
            None => (x.as_str(), None),
        };
        if name.is_empty() {
            return Err(format!("invalid -x '{x}': expected VAR or VAR=VALUE"));
        }
        // `-x VAR` with VAR unset in mpirun has nothing to export.
        if let Some(value) = value.or_else(|| env(name)) {
            exports.push((name.to_string(), value));
        }
    }

    let mut mca: Vec<(String, String)> = Vec::new();
    for pair in cli.mca.chunks(2) {
        let [key, value] = pair else {
            unreachable!("clap takes --mca values in pairs")
        };
        if key.is_empty() || key.contains('=') {
            return Err(format!("invalid MCA parameter name '{key}'"));
        }
        match mca.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value.clone(),
            None => mca.push((key.clone(), value.clone())),
        }
    }

    let program = program::resolve(&argv0, env("PATH").as_deref())?;

    let oversubscribed = n > ncores;
    if oversubscribed && !cli.oversubscribe && policy.map.oversubscribe != Some(true) {
        let cores = if ncores == 1 {
            "1 core is".to_string()
        } else {
            format!("{ncores} cores are")
        };
        return Err(format!(
            "{n} ranks requested but only {cores} available; use --oversubscribe to run more ranks than cores"
        ));
    }
    let universe = match cli.universe_size {
        Some(u) => u,
        None => match env("RMPI_UNIVERSE_SIZE") {
            Some(v) => v
                .to_str()
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| format!("RMPI_UNIVERSE_SIZE={v:?} is not a number"))?,
            None => n.max(ncores),
        },
    }
    .max(n);
    Ok(JobSpec {
        n,
        program,
        argv0,
        args,
        oversubscribed,
        policy,
        bindings: vec![Vec::new(); n],
        localities: vec![String::new(); n],
        job_locality: None,
        report_bindings: cli.report_bindings,
        display_map: cli.display_map,
        display_topology: cli.display_topology,
        do_not_launch: cli.do_not_launch,
        exports,
        mca,
        tag_output: cli.tag_output,
        universe,
        timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    fn norm(v: &[&str]) -> Vec<String> {
        normalize_args(os(v))
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect()
    }

    #[test]
    fn normalises_single_dash_long_options_before_program() {
        assert_eq!(
            norm(&[
                "mpirun",
                "-np",
                "4",
                "-mca",
                "a",
                "b",
                "-oversubscribe",
                "-timeout",
                "5",
                "-tag-output",
                "-bind-to",
                "none",
                "-map-by",
                "slot",
                "prog",
                "-np",
                "2"
            ]),
            [
                "mpirun",
                "--np",
                "4",
                "--mca",
                "a",
                "b",
                "--oversubscribe",
                "--timeout",
                "5",
                "--tag-output",
                "--bind-to",
                "none",
                "--map-by",
                "slot",
                "prog",
                "-np",
                "2"
            ]
        );
    }

    #[test]
    fn option_values_are_not_taken_for_the_program() {
        // `-oversubscribe` here is the value of -x, and `-np` after the program is its own.
        assert_eq!(
            norm(&["mpirun", "-x", "-np", "-n", "2", "--mca", "k", "-mca", "p", "-mca"]),
            ["mpirun", "-x", "-np", "-n", "2", "--mca", "k", "-mca", "p", "-mca"]
        );
        assert_eq!(norm(&["mpirun", "-np=3", "p"]), ["mpirun", "--np=3", "p"]);
        assert_eq!(
            norm(&["mpirun", "-n4", "p", "-timeout"]),
            ["mpirun", "-n4", "p", "-timeout"]
        );
        assert_eq!(norm(&["mpirun", "--", "-np"]), ["mpirun", "--", "-np"]);
    }

    fn parse(v: &[&str]) -> Cli {
        Cli::try_parse_from(normalize_args(os(v))).unwrap()
    }

    fn spec(v: &[&str], ncores: usize) -> Result<JobSpec, String> {
        let env = |k: &str| match k {
            "PATH" => Some(OsString::from("/bin:/usr/bin")),
            "HOME" => Some(OsString::from("/home/u")),
            _ => None,
        };
        validate(parse(v), ncores, &env)
    }

    #[test]
    fn program_args_are_untouched() {
        let s = spec(
            &["mpirun", "-np", "2", "sh", "-c", "--tag-output", "-np", "3"],
            4,
        )
        .unwrap();
        assert_eq!(s.n, 2);
        assert!(!s.tag_output);
        assert_eq!(s.argv0, "sh");
        assert!(s.program.ends_with("sh"));
        assert_eq!(s.args, os(&["-c", "--tag-output", "-np", "3"]));
    }

    #[test]
    fn full_option_set() {
        let s = spec(
            &[
                "mpirun",
                "-np",
                "3",
                "-x",
                "FOO=bar",
                "-x",
                "HOME",
                "-x",
                "UNSET_VAR",
                "--mca",
                "k1",
                "v1",
                "-mca",
                "k2",
                "v2",
                "--mca",
                "k1",
                "v3",
                "--tag-output",
                "--timeout",
                "2.5",
                "--map-by",
                "core",
                "sh",
            ],
            4,
        )
        .unwrap();
        assert_eq!(s.n, 3);
        assert!(!s.oversubscribed);
        assert_eq!(s.policy.map.mapping, Mapping::Core);
        assert!(s.policy.map.given && s.policy.bind.is_none());
        assert_eq!(
            s.exports,
            [
                ("FOO".to_string(), OsString::from("bar")),
                ("HOME".to_string(), OsString::from("/home/u"))
            ]
        );
        assert_eq!(
            s.mca,
            [
                ("k1".to_string(), "v3".to_string()),
                ("k2".to_string(), "v2".to_string())
            ]
        );
        assert_eq!(s.mca_value("k1"), Some("v3"));
        assert_eq!(s.mca_value("k9"), None);
        assert!(s.tag_output);
        assert_eq!(s.timeout, Some((2.5, Duration::from_millis(2500))));
    }

    #[test]
    fn np_defaults_to_cores() {
        assert_eq!(spec(&["mpirun", "sh"], 3).unwrap().n, 3);
    }

    #[test]
    fn oversubscription() {
        assert_eq!(
            spec(&["mpirun", "-np", "4", "sh"], 2).unwrap_err(),
            "4 ranks requested but only 2 cores are available; use --oversubscribe to run more ranks than cores"
        );
        assert_eq!(
            spec(&["mpirun", "-np", "2", "sh"], 1).unwrap_err(),
            "2 ranks requested but only 1 core is available; use --oversubscribe to run more ranks than cores"
        );
        let s = spec(&["mpirun", "-np", "4", "-oversubscribe", "sh"], 2).unwrap();
        assert!(s.oversubscribed);
        assert_eq!(s.policy.bind, None);
        let s = spec(
            &[
                "mpirun",
                "-np",
                "4",
                "--oversubscribe",
                "--bind-to",
                "core",
                "sh",
            ],
            2,
        )
        .unwrap();
        assert_eq!(
            s.policy.bind.and_then(|b| b.level),
            Some(crate::topo::Level::Core)
        );
        // --oversubscribe without actually oversubscribing changes nothing.
        let s = spec(&["mpirun", "-np", "2", "--oversubscribe", "sh"], 2).unwrap();
        assert!(!s.oversubscribed);
        // The modifier of --map-by says the same as --oversubscribe.
        let s = spec(
            &["mpirun", "-np", "4", "--map-by", "core:oversubscribe", "sh"],
            2,
        )
        .unwrap();
        assert!(s.oversubscribed);
    }

    #[test]
    fn bad_input_messages() {
        let err = |v: &[&str]| spec(v, 4).unwrap_err();
        assert!(err(&["mpirun", "-np", "2"]).starts_with("no program given"));
        assert_eq!(
            err(&["mpirun", "-np", "0", "sh"]),
            "invalid number of ranks '0': must be at least 1"
        );
        assert_eq!(
            err(&["mpirun", "-np", "two", "sh"]),
            "invalid number of ranks 'two': expected a positive integer"
        );
        assert_eq!(
            err(&["mpirun", "--timeout", "0", "sh"]),
            "invalid --timeout '0': expected a positive number of seconds"
        );
        assert!(err(&["mpirun", "--timeout=-1", "sh"]).starts_with("invalid --timeout"));
        assert!(err(&["mpirun", "--timeout", "nan", "sh"]).starts_with("invalid --timeout"));
        assert!(err(&["mpirun", "--timeout", "1e300", "sh"]).starts_with("invalid --timeout"));
        assert!(err(&["mpirun", "--bind-to", "board", "sh"])
            .starts_with("invalid --bind-to 'board': expected none or one of hwthread, core"));
        assert!(err(&["mpirun", "--map-by", "chiplet", "sh"])
            .starts_with("invalid --map-by 'chiplet': expected slot, node, ppr:N:OBJECT"));
        assert!(err(&["mpirun", "--rank-by", "x", "sh"]).starts_with("invalid --rank-by 'x'"));
        assert!(err(&["mpirun", "--cpu-set", "3-1", "sh"]).starts_with("invalid --cpu-set '3-1'"));
        assert!(err(&["mpirun", "--map-by", "hwthread:PE=2", "sh"]).contains("PE=n counts cores"));
        assert_eq!(
            err(&["mpirun", "-x", "=v", "sh"]),
            "invalid -x '=v': expected VAR or VAR=VALUE"
        );
        assert_eq!(
            err(&["mpirun", "--mca", "a=b", "1", "sh"]),
            "invalid MCA parameter name 'a=b'"
        );
        assert_eq!(
            err(&["mpirun", "no-such-prog-xyz"]),
            "program 'no-such-prog-xyz' not found in PATH"
        );
    }

    #[test]
    fn clap_rejects_unknown_options_and_incomplete_mca() {
        assert!(Cli::try_parse_from(os(&["mpirun", "--bogus", "sh"])).is_err());
        assert!(Cli::try_parse_from(os(&["mpirun", "--mca", "k"])).is_err());
    }

    fn usage_line(v: &[&str]) -> String {
        usage_error_line(&Cli::try_parse_from(normalize_args(os(v))).unwrap_err())
    }

    #[test]
    fn usage_errors_are_one_line() {
        assert_eq!(
            usage_line(&["mpirun", "--hots", "a,b", "sh"]),
            "unknown option '--hots'; did you mean '--host'? (mpirun --help lists the options)"
        );
        assert_eq!(
            usage_line(&["mpirun", "--oversubscrib", "sh"]),
            "unknown option '--oversubscrib'; did you mean '--oversubscribe'? \
             (mpirun --help lists the options)"
        );
        assert_eq!(
            usage_line(&["mpirun", "--mca", "k"]),
            "--mca takes two values, a name and a value (--mca KEY VALUE)"
        );
        assert_eq!(
            usage_line(&["mpirun", "--timeout"]),
            "option '--timeout <SECONDS>' is missing its value"
        );
        for v in [
            &["mpirun", "--bogus"][..],
            &["mpirun", "-np"],
            &["mpirun", "-x"],
        ] {
            assert!(!usage_line(v).contains('\n'), "{v:?}");
        }
    }

    #[test]
    fn negative_values_reach_validation() {
        let err = |v: &[&str]| spec(v, 4).unwrap_err();
        assert_eq!(
            err(&["mpirun", "-np", "-1", "sh"]),
            "invalid number of ranks '-1': expected a positive integer"
        );
        assert!(err(&["mpirun", "--timeout", "-5", "sh"]).starts_with("invalid --timeout '-5'"));
        let s = spec(&["mpirun", "--mca", "k", "-1", "sh"], 4).unwrap();
        assert_eq!(s.mca_value("k"), Some("-1"));
    }

    #[test]
    fn version_string() {
        let e = Cli::try_parse_from(os(&["mpirun", "--version"])).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("mpirun (rmpi) {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}
