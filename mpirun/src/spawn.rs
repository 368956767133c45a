//! Starting the ranks: one socketpair and one process each, with the environment of docs/DESIGN.md.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::resource::{getrlimit, setrlimit, Resource};
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use nix::unistd::Pid;

use crate::cli::JobSpec;
use crate::signals;

/// One started rank, with mpirun's ends of its PMI socket and output pipes (all non-blocking).
pub struct Started {
    pub child: Child,
    pub pmi: UnixStream,
    pub stdout: File,
    pub stderr: File,
}

/// The node segment the ranks inherit.
#[derive(Clone, Copy)]
pub struct Segment<'a> {
    pub fd: BorrowedFd<'a>,
    pub size: usize,
}

/// Starts all ranks. If one cannot be started, those already running are killed and reaped,
/// and the error is the user-facing line (without `mpirun: `).
pub fn spawn_all(spec: &JobSpec, seg: Segment) -> Result<Vec<Started>, String> {
    raise_fd_limit(spec.n);
    let mut started: Vec<Started> = Vec::with_capacity(spec.n);
    for rank in 0..spec.n {
        match spawn_one(spec, seg, rank, &spec.bindings[rank], &Extra::default()) {
            Ok(s) => started.push(s),
            Err(e) => {
                for s in &mut started {
                    let _ = s.child.kill();
                    let _ = s.child.wait();
                }
                return Err(format!(
                    "cannot start rank {rank} ({}): {e}",
                    spec.program.display()
                ));
            }
        }
    }
    Ok(started)
}

/// mpirun holds three descriptors per rank; raise the soft limit (up to the hard one) when the
/// default would not do. If even the hard limit is too low, spawning fails with a clear EMFILE.
fn raise_fd_limit(n: usize) {
    let needed = (3 * n + 64) as u64;
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < needed {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, needed.min(hard), hard);
        }
    }
}

/// What a spawned job's ranks get beyond the job's own settings (`cmd=spawn`).
#[derive(Default)]
pub struct Extra {
    /// Their world size (the spec's `n` when None).
    pub size: Option<usize>,
    pub env: Vec<(String, String)>,
    pub wdir: Option<std::path::PathBuf>,
}

/// Starts world rank `rank` of the job, bound as `spec.bindings` says: a node daemon's ranks
/// (`orted.rs`).
pub fn spawn_rank(spec: &JobSpec, seg: Segment, rank: usize) -> io::Result<Started> {
    spawn_one(spec, seg, rank, &spec.bindings[rank], &Extra::default())
}

/// Starts rank `rank` of a spawned job (`Job::spawn_job`).
pub fn spawn_child(
    spec: &JobSpec,
    seg: Segment,
    rank: usize,
    extra: &Extra,
) -> io::Result<Started> {
    // Not bound: the plan placed the first job only.
    spawn_one(spec, seg, rank, &[], extra)
}

fn spawn_one(
    spec: &JobSpec,
    seg: Segment,
    rank: usize,
    cpus: &[usize],
    extra: &Extra,
) -> io::Result<Started> {
    // CLOEXEC on both ends, so no other rank inherits them; the child clears it on its own end.
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    let pmi_fd = theirs.as_raw_fd();
    let sm_fd = seg.fd.as_raw_fd();

    let mut cmd = Command::new(&spec.program);
    cmd.arg0(&spec.argv0).args(&spec.args);
    // An outer launcher's PMI variables would mislead the rank; ours are set below.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PMI_") {
            cmd.env_remove(key);
        }
    }
    cmd.env_remove("RMPI_TAG_OUTPUT");
    // Before the exports, so that `-x RMPI_LOCALITY_ALL=...` (tests of the hierarchy on a
    // machine that has none) wins.
    match &spec.job_locality {
        Some(all) => cmd.env("RMPI_LOCALITY_ALL", all),
        None => cmd.env_remove("RMPI_LOCALITY_ALL"),
    };
    for (k, v) in &spec.exports {
        cmd.env(k, v);
    }
    for (k, v) in &spec.mca {
        cmd.env(format!("RMPI_MCA_{k}"), v);
    }
    let user_preload = spec.exports.iter().find(|(k, _)| k == "LD_PRELOAD");
    if let Some(v) = crate::memhook_info::ld_preload(user_preload.map(|(_, v)| v)) {
        cmd.env("LD_PRELOAD", v);
    }
    if spec.oversubscribed {
        cmd.env("RMPI_YIELD", "1");
    }
    cmd.env("PMI_FD", pmi_fd.to_string())
        .env("PMI_RANK", rank.to_string())
        .env("PMI_SIZE", extra.size.unwrap_or(spec.n).to_string())
        .env("RMPI_SM_FD", sm_fd.to_string())
        .env("RMPI_SM_SIZE", seg.size.to_string());
    for (k, v) in &extra.env {
        cmd.env(k, v);
    }
    if let Some(d) = &extra.wdir {
        cmd.current_dir(d);
    }
    cmd.stdin(if rank == 0 && extra.size.is_none() {
        Stdio::inherit()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());

    // The plan's OS CPUs (none: not bound, the rank inherits mpirun's mask).
    let cpuset = if cpus.is_empty() {
        None
    } else {
        let mut set = CpuSet::new();
        for &c in cpus {
            set.set(c)?;
        }
        Some(set)
    };
    cmd.env("RMPI_BINDING", crate::topo::report::ranges(cpus));
    match spec.localities.get(rank).filter(|_| extra.size.is_none()) {
        Some(l) if !l.is_empty() => {
            cmd.env("RMPI_LOCALITY", l);
        }
        _ => {}
    }
    let launcher = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe
    // system calls (fcntl, sigaction, sigprocmask, sched_setaffinity, prctl, getppid, kill); it
    // allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            // No orphans: the rank ends with us, even when we are SIGKILLed (no handler of ours
            // runs then). Spawned from mpirun's main thread, which lives as long as mpirun. A
            // rank we did not start directly (`mpirun bash -c ./app`) is ended by libmpi's
            // launcher watch instead (EOF on its PMI socket).
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // We may have died between fork and prctl.
            if libc::getppid() != launcher {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            clear_cloexec(pmi_fd)?;
            clear_cloexec(sm_fd)?;
            signals::reset_for_child()?;
            if let Some(set) = &cpuset {
                sched_setaffinity(Pid::from_raw(0), set)?;
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    drop(theirs); // the rank holds the only copy now

    let pmi = UnixStream::from(ours);
    pmi.set_nonblocking(true)?;
    let stdout = nonblocking_file(child.stdout.take().expect("stdout is piped").into())?;
    let stderr = nonblocking_file(child.stderr.take().expect("stderr is piped").into())?;
    Ok(Started {
        child,
        pmi,
        stdout,
        stderr,
    })
}

/// In the child: let `fd` survive exec.
fn clear_cloexec(fd: RawFd) -> nix::Result<()> {
    // SAFETY: `fd` was open in the parent at fork time (held by spawn_one / main), so it is open
    // in the child for the duration of this call.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty())).map(drop)
}

fn nonblocking_file(fd: OwnedFd) -> io::Result<File> {
    let flags = OFlag::from_bits_retain(fcntl(fd.as_fd(), FcntlArg::F_GETFL)?);
    fcntl(fd.as_fd(), FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(File::from(fd))
}
