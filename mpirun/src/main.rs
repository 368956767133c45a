//! `mpirun`: starts N ranks of a program on this node (or, with `--host`/`--hostfile`, through
//! one daemon per host), serves them PMI-1, forwards their output and signals, and tears the job
//! down at the first failure. See docs/DESIGN.md.

mod cli;
mod foreign;
mod job;
mod lines;
mod mca;
mod memhook_info;
mod oob;
mod orted;
mod plm;
mod pmi_conn;
mod pmi_relay;
mod pmi_server;
mod pmi_wire;
mod program;
mod ras;
mod report;
mod shm_report;
mod signals;
mod spawn;
mod spawn_req;
mod stdio;
mod topo;

use std::os::fd::AsFd;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

/// Exit code for bad input (nothing was started), as clap uses for usage errors; also for a
/// program built with another MPI.
const EXIT_USAGE: u8 = 2;
/// Exit code when the job could not be set up or started.
const EXIT_LAUNCH: u8 = 1;

fn main() -> ExitCode {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if raw.get(1).is_some_and(|a| a == orted::FLAG) {
        return orted::run(&raw[2..]);
    }
    let argv = cli::normalize_args(raw);
    let cli = cli::Cli::try_parse_from(argv).unwrap_or_else(|e| {
        if e.kind() == clap::error::ErrorKind::DisplayVersion {
            print!("{e}");
            println!("{}", memhook_info::version_line());
            std::process::exit(0);
        }
        if !e.use_stderr() {
            e.exit() // --help
        }
        report::say(&format!("mpirun: {}", cli::usage_error_line(&e)));
        std::process::exit(EXIT_USAGE.into())
    });
    if cli.shm_report || cli.mca_list {
        let ncores = std::thread::available_parallelism().map_or(1, |n| n.get());
        return shm_report::run(&cli, ncores);
    }
    match hosts(&cli) {
        Ok(Some(h)) if h.iter().any(|h| !ras::is_local(&h.name)) => return run_on_hosts(cli, h),
        Ok(_) => {}
        Err(msg) => return fail(EXIT_USAGE, &msg),
    }
    let (topo, ncores) = match topo::for_job(&cli) {
        Ok(t) => t,
        Err(msg) => return fail(EXIT_USAGE, &msg),
    };
    let mut spec = match cli::validate(cli, ncores, &|k| std::env::var_os(k)) {
        Ok(s) => s,
        Err(msg) => return fail(EXIT_USAGE, &msg),
    };
    if let Err(msg) = topo::place(&topo, &mut spec) {
        return fail(EXIT_USAGE, &msg);
    }
    if spec.do_not_launch {
        return ExitCode::SUCCESS;
    }
    // Ranks of another MPI's program would not speak our PMI (or not reliably): N singletons.
    let needed = foreign::needed::needed(&spec.program).unwrap_or_default();
    if let Some(f) = foreign::classify(needed.iter().map(String::as_str), false) {
        return fail(
            EXIT_USAGE,
            &foreign::needs_message(&spec.argv0.to_string_lossy(), &f),
        );
    }
    for (name, _) in &spec.mca {
        if let Some(w) = mca::unknown(name) {
            crate::report::say(&w);
        }
    }
    // MCA values from the command line win over RMPI_MCA_* from the environment.
    let lookup = |name: &str| {
        spec.mca_value(name)
            .map(str::to_string)
            .or_else(|| std::env::var(format!("RMPI_MCA_{name}")).ok())
            .or_else(|| std::env::var(name).ok())
    };
    let params = match btl_sm::Params::resolve(spec.n, &lookup) {
        Ok(p) => p,
        Err(e) => return fail(EXIT_USAGE, &e.to_string()),
    };
    if let Err(e) = mca::check_values(spec.n, &lookup) {
        return fail(EXIT_USAGE, &e);
    }

    // Before any rank exists, so that no SIGCHLD or Ctrl-C is missed.
    let sigfd = match signals::block_and_open() {
        Ok(fd) => fd,
        Err(e) => return fail(EXIT_LAUNCH, &format!("cannot set up signal handling: {e}")),
    };
    // Held open until mpirun exits; every rank inherits it.
    let memfd = match btl_sm::Segment::create_memfd(&params) {
        Ok(fd) => fd,
        Err(e) => {
            return fail(
                EXIT_LAUNCH,
                &format!("cannot create the shared-memory segment: {e}"),
            )
        }
    };
    let seg = spawn::Segment {
        fd: memfd.as_fd(),
        size: btl_sm::segment_size(&params),
    };
    let start = Instant::now();
    let started = match spawn::spawn_all(&spec, seg) {
        Ok(s) => s,
        Err(msg) => return fail(EXIT_LAUNCH, &msg),
    };
    let code = job::Job::new(started, sigfd, &spec, start).run();
    drop(memfd);
    ExitCode::from(code as u8)
}

/// The hosts of `--host` and `--hostfile`, if any were given.
fn hosts(cli: &cli::Cli) -> Result<Option<Vec<ras::Host>>, String> {
    let mut hosts = Vec::new();
    for list in &cli.host {
        hosts.extend(ras::parse_host_list(list)?);
    }
    if let Some(path) = &cli.hostfile {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read hostfile {}: {e}", path.display()))?;
        hosts.extend(ras::parse_hostfile(&path.display().to_string(), &text)?);
    }
    // Inside a Slurm allocation, its hosts unless others were named (Open MPI's rule).
    if hosts.is_empty() {
        if let (Ok(list), Ok(tasks)) = (
            std::env::var("SLURM_JOB_NODELIST"),
            std::env::var("SLURM_TASKS_PER_NODE"),
        ) {
            hosts = ras::slurm_hosts(&list, &tasks)?;
        }
    }
    Ok((!hosts.is_empty()).then_some(hosts))
}

/// A job on several hosts: one daemon per host (`plm`, `orted`), ranks placed on hosts by
/// `ras`, and on each host's cores by its daemon (`--bind-to` and the defaults as on one host).
fn run_on_hosts(mut cli: cli::Cli, hosts: Vec<ras::Host>) -> ExitCode {
    let order = match cli.map_by.as_deref() {
        None => ras::Order::BySlot,
        Some(m) if m.starts_with("slot") => ras::Order::BySlot,
        Some(m) if m.starts_with("node") => ras::Order::ByNode,
        Some(m) => {
            return fail(
                EXIT_USAGE,
                &format!("--map-by {m} with --host/--hostfile: only slot and node are supported across hosts"),
            )
        }
    };
    let slots: usize = match cli.npernode {
        Some(0) => return fail(EXIT_USAGE, "invalid --npernode 0: must be at least 1"),
        Some(k) => k * hosts.len(),
        None => hosts.iter().map(|h| h.slots).sum(),
    };
    let oversubscribe = cli.oversubscribe
        || cli
            .map_by
            .as_deref()
            .is_some_and(|m| m.contains(":oversubscribe"));
    let agent = cli.launch_agent.clone();
    let per_node = cli.npernode;
    let placement = orted::NodePlacement::from_cli(&cli);
    // The slot check is ras::place's, in terms of hosts.
    cli.oversubscribe = true;
    cli.map_by = None;
    let spec = match cli::validate(cli, slots, &|k| std::env::var_os(k)) {
        Ok(s) => s,
        Err(msg) => return fail(EXIT_USAGE, &msg),
    };
    let node_of = match ras::place(&hosts, spec.n, order, per_node, oversubscribe) {
        Ok(v) => v,
        Err(msg) => return fail(EXIT_USAGE, &msg),
    };
    let lookup = |name: &str| {
        spec.mca_value(name)
            .map(str::to_string)
            .or_else(|| std::env::var(format!("RMPI_MCA_{name}")).ok())
    };
    if let Err(e) = mca::check_values(spec.n, &lookup) {
        return fail(EXIT_USAGE, &e);
    }
    for (name, _) in &spec.mca {
        if let Some(w) = mca::unknown(name) {
            crate::report::say(&w);
        }
    }
    // As Open MPI: an agent named wins, then srun inside a Slurm allocation, then ssh.
    let in_slurm = std::env::var_os("SLURM_JOB_ID").is_some();
    let agent = match agent.or_else(|| lookup("plm_rsh_agent")) {
        Some(a) => plm::Agent::rsh(&a),
        None if in_slurm => Ok(plm::Agent::Srun),
        None => plm::Agent::rsh("ssh"),
    };
    let agent = match agent {
        Ok(a) => a,
        Err(msg) => return fail(EXIT_USAGE, &msg),
    };
    if spec.do_not_launch {
        return ExitCode::SUCCESS;
    }
    // Before any daemon exists, so that no SIGCHLD or Ctrl-C is missed.
    let sigfd = match signals::block_and_open() {
        Ok(fd) => fd,
        Err(e) => return fail(EXIT_LAUNCH, &format!("cannot set up signal handling: {e}")),
    };
    let start = Instant::now();
    let nodes = match plm::launch(&spec, &hosts, &node_of, &agent, &placement, &sigfd) {
        Ok(n) => n,
        Err(msg) => return fail(EXIT_LAUNCH, &msg),
    };
    let code = job::Job::with_nodes(nodes, &node_of, sigfd, &spec, start, hosts, agent).run();
    ExitCode::from(code as u8)
}

fn fail(code: u8, msg: &str) -> ExitCode {
    report::say(&format!("mpirun: {msg}"));
    ExitCode::from(code)
}
