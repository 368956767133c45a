//! `mpirun`: starts N ranks of a program on this node, serves them PMI-1, forwards their output
//! and signals, and tears the job down at the first failure. See docs/DESIGN.md.

mod cli;
mod foreign;
mod job;
mod lines;
mod mca;
mod memhook_info;
mod pmi_conn;
mod pmi_server;
mod pmi_wire;
mod program;
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
    let argv = cli::normalize_args(std::env::args_os().collect());
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

fn fail(code: u8, msg: &str) -> ExitCode {
    report::say(&format!("mpirun: {msg}"));
    ExitCode::from(code)
}
