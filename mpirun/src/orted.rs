//! A node daemon: `mpirun --rmpi-daemon ADDRS PORT NODE COOKIE`, started by mpirun on each host
//! of a multi-host job through the launch agent (`plm.rs`). It connects back to mpirun, creates
//! the node's shared-memory segment, places and starts the node's ranks, relays their output to
//! mpirun (`oob.rs`), serves their PMI as the tree's inner level (`pmi_relay.rs`: gets from its
//! copy of the KVS, one fence per node), reports their exits and delivers mpirun's signals. Its
//! ranks die with it (PR_SET_PDEATHSIG, as under mpirun); when mpirun's connection goes away it
//! kills them and exits, so nothing outlives the job on any host.

use std::ffi::OsString;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitCode, ExitStatus};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::cli::JobSpec;
use crate::oob::{self, kind, Link};
use crate::pmi_relay::{NodeKvs, RankStream, Route};
use crate::report::say;
use crate::spawn;

/// The option that makes mpirun a daemon (not for users: mpirun passes it to itself).
pub const FLAG: &str = "--rmpi-daemon";
/// A NODE argument that starts with this lists every node's host name: the daemon's node is
/// the one named as its Slurm node (one `srun` step starts the daemons of every host).
pub const BY_NAME: &str = "@";
/// How long a daemon waits for mpirun's connection and job.
const CONNECT_WAIT: Duration = Duration::from_secs(30);
/// How long a finished daemon tries to hand its last frames to mpirun.
const LAST_WORDS: Duration = Duration::from_secs(10);

/// One host's part of the job, as mpirun sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeJob {
    pub program: String,
    pub argv0: String,
    pub args: Vec<String>,
    pub exports: Vec<(String, String)>,
    pub mca: Vec<(String, String)>,
    /// The world size.
    pub size: usize,
    /// The world ranks this host runs.
    pub ranks: Vec<usize>,
    pub placement: NodePlacement,
    /// A job MPI_Comm_spawn started: its commands (`program`... are the first's) and which
    /// one each of `ranks` runs. Its ranks are not bound (as a spawned job on one host).
    pub apps: Vec<App>,
    pub app_of: Vec<usize>,
    /// mpirun's working directory: the ranks start there where it exists on the host (as
    /// Open MPI's daemons do), else in the daemon's (the login directory under ssh).
    pub cwd: Option<String>,
}

/// One command of a spawned job.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct App {
    pub program: String,
    pub argv0: String,
    pub args: Vec<String>,
    /// Set for its ranks beyond the job's exports (the parents' port, MPI_APPNUM).
    pub env: Vec<(String, String)>,
    pub wdir: Option<String>,
}

impl App {
    fn to_json(&self) -> Value {
        json!({
            "program": self.program, "argv0": self.argv0, "args": self.args, "env": self.env,
            "wdir": self.wdir,
        })
    }

    fn from_json(v: &Value) -> Result<App, String> {
        Ok(App {
            program: str_of(v, "program")?,
            argv0: str_of(v, "argv0")?,
            args: strings_of(v, "args")?,
            env: pairs_of(v, "env")?,
            wdir: v["wdir"].as_str().map(str::to_string),
        })
    }
}

fn str_of(v: &Value, k: &str) -> Result<String, String> {
    v[k].as_str()
        .map(str::to_string)
        .ok_or(format!("job description lacks {k}"))
}

fn strings_of(v: &Value, k: &str) -> Result<Vec<String>, String> {
    v[k].as_array()
        .ok_or(format!("job description lacks {k}"))?
        .iter()
        .map(|x| x.as_str().map(str::to_string).ok_or(format!("bad {k}")))
        .collect()
}

fn pairs_of(v: &Value, k: &str) -> Result<Vec<(String, String)>, String> {
    v[k].as_array()
        .ok_or(format!("job description lacks {k}"))?
        .iter()
        .map(|p| match (p[0].as_str(), p[1].as_str()) {
            (Some(a), Some(b)) => Ok((a.to_string(), b.to_string())),
            _ => Err(format!("bad {k}")),
        })
        .collect()
}

fn indices_of(v: &Value, k: &str) -> Result<Vec<usize>, String> {
    v[k].as_array()
        .ok_or(format!("job description lacks {k}"))?
        .iter()
        .map(|r| r.as_u64().map(|r| r as usize).ok_or(format!("bad {k}")))
        .collect()
}

/// The binding options as given: each daemon plans its host's ranks on its own topology.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodePlacement {
    pub bind_to: Option<String>,
    pub rank_by: Option<String>,
    pub cpu_set: Option<String>,
    pub hwthread_cpus: bool,
    pub report_bindings: bool,
}

impl NodePlacement {
    pub fn from_cli(cli: &crate::cli::Cli) -> NodePlacement {
        NodePlacement {
            bind_to: cli.bind_to.clone(),
            rank_by: cli.rank_by.clone(),
            cpu_set: cli.cpu_set.clone(),
            hwthread_cpus: cli.use_hwthread_cpus,
            report_bindings: cli.report_bindings,
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "bind_to": self.bind_to, "rank_by": self.rank_by, "cpu_set": self.cpu_set,
            "hwthread_cpus": self.hwthread_cpus, "report_bindings": self.report_bindings,
        })
    }

    fn from_json(v: &Value) -> Result<NodePlacement, String> {
        let opt = |k: &str| match &v[k] {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            _ => Err(format!("bad placement {k}")),
        };
        let flag = |k: &str| v[k].as_bool().ok_or(format!("bad placement {k}"));
        Ok(NodePlacement {
            bind_to: opt("bind_to")?,
            rank_by: opt("rank_by")?,
            cpu_set: opt("cpu_set")?,
            hwthread_cpus: flag("hwthread_cpus")?,
            report_bindings: flag("report_bindings")?,
        })
    }

    /// Plans `spec`'s ranks of this host (`ranks`) on this host's topology: their bindings,
    /// and the `--report-bindings` lines.
    fn apply(&self, spec: &mut JobSpec, ranks: &[usize]) -> Result<(), String> {
        spec.policy = crate::cli::placement_of(
            None,
            self.bind_to.as_deref(),
            self.rank_by.as_deref(),
            self.cpu_set.as_deref(),
            self.hwthread_cpus,
        )?;
        spec.report_bindings = self.report_bindings;
        let file = crate::topo::topo_file(spec.mca_value("hwloc_base_topo_file"));
        let topo = crate::topo::load_for(file.as_deref(), &spec.policy)?;
        crate::topo::place_node(&topo, spec, ranks)
    }
}

fn utf8(what: &str, s: &std::ffi::OsStr) -> Result<String, String> {
    s.to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{what} {s:?} is not UTF-8, which a multi-host launch needs"))
}

impl NodeJob {
    pub fn new(
        spec: &JobSpec,
        ranks: Vec<usize>,
        placement: &NodePlacement,
    ) -> Result<NodeJob, String> {
        Ok(NodeJob {
            program: utf8("the program path", spec.program.as_os_str())?,
            argv0: utf8("the program name", &spec.argv0)?,
            args: spec
                .args
                .iter()
                .map(|a| utf8("the argument", a))
                .collect::<Result<_, _>>()?,
            exports: spec
                .exports
                .iter()
                .map(|(k, v)| Ok((k.clone(), utf8(&format!("-x {k}'s value"), v)?)))
                .collect::<Result<_, String>>()?,
            mca: spec.mca.clone(),
            size: spec.n,
            ranks,
            placement: placement.clone(),
            apps: Vec::new(),
            app_of: Vec::new(),
            cwd: std::env::current_dir()
                .ok()
                .and_then(|d| d.to_str().map(str::to_string)),
        })
    }

    pub fn to_json(&self) -> Vec<u8> {
        let apps: Vec<Value> = self.apps.iter().map(App::to_json).collect();
        json!({
            "program": self.program, "argv0": self.argv0, "args": self.args,
            "exports": self.exports, "mca": self.mca, "size": self.size, "ranks": self.ranks,
            "placement": self.placement.to_json(), "apps": apps, "app_of": self.app_of,
            "cwd": self.cwd,
        })
        .to_string()
        .into_bytes()
    }

    pub fn from_json(bytes: &[u8]) -> Result<NodeJob, String> {
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| format!("bad job description: {e}"))?;
        let job = NodeJob {
            program: str_of(&v, "program")?,
            argv0: str_of(&v, "argv0")?,
            args: strings_of(&v, "args")?,
            exports: pairs_of(&v, "exports")?,
            mca: pairs_of(&v, "mca")?,
            size: v["size"].as_u64().ok_or("job description lacks size")? as usize,
            ranks: indices_of(&v, "ranks")?,
            placement: NodePlacement::from_json(&v["placement"])?,
            apps: v["apps"]
                .as_array()
                .ok_or("job description lacks apps")?
                .iter()
                .map(App::from_json)
                .collect::<Result<_, _>>()?,
            app_of: indices_of(&v, "app_of")?,
            cwd: v["cwd"].as_str().map(str::to_string),
        };
        let spawned = !job.apps.is_empty();
        if spawned
            && (job.app_of.len() != job.ranks.len()
                || job.app_of.iter().any(|&a| a >= job.apps.len()))
        {
            return Err("bad job description: app_of".into());
        }
        Ok(job)
    }
}

fn host_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "?".into())
}

/// The daemon's entry point; `args` follow the flag.
pub fn run(args: &[OsString]) -> ExitCode {
    match serve(args) {
        Ok(code) => ExitCode::from(code),
        Err(msg) => {
            say(&format!("mpirun (daemon on {}): {msg}", host_name()));
            ExitCode::from(1)
        }
    }
}

fn connect(addrs: &str, port: u16) -> Result<TcpStream, String> {
    let mut tried = Vec::new();
    for a in addrs.split(',') {
        let Ok(ip) = a.parse() else { continue };
        match TcpStream::connect_timeout(&SocketAddr::new(ip, port), Duration::from_secs(5)) {
            Ok(s) => return Ok(s),
            Err(e) => tried.push(format!("{a}: {e}")),
        }
    }
    Err(format!(
        "cannot reach mpirun on port {port} ({})",
        tried.join("; ")
    ))
}

/// One rank of this node.
struct Rank {
    rank: u32,
    child: Child,
    pmi: Option<UnixStream>,
    /// PMI bytes from mpirun (or answered here) not yet written to the rank.
    to_pmi: Vec<u8>,
    /// Its requests, line by line (`pmi_relay.rs`).
    stream: RankStream,
    /// It entered the current fence; its `barrier_in` is held until the whole node has.
    in_fence: bool,
    pipes: [Option<File>; 2],
    status: Option<ExitStatus>,
}

fn serve(args: &[OsString]) -> Result<u8, String> {
    let arg = |i: usize| {
        args.get(i)
            .and_then(|a| a.to_str())
            .ok_or(format!("{FLAG}: missing argument {}", i + 1))
    };
    let (addrs, port, node, cookie) = (arg(0)?, arg(1)?, arg(2)?, arg(3)?);
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{FLAG}: bad port {port}"))?;
    let node = node_index(node, std::env::var("SLURMD_NODENAME").ok().as_deref())?;
    let mut sock = connect(addrs, port)?;
    let mut hello = Vec::new();
    oob::encode(&mut hello, kind::HELLO, node, cookie.as_bytes());
    sock.write_all(&hello)
        .map_err(|e| format!("cannot greet mpirun: {e}"))?;
    let job = read_job(&mut sock)?;

    // Before any rank exists, so that no SIGCHLD is missed.
    let sigfd = crate::signals::block_and_open()
        .map_err(|e| format!("cannot set up signal handling: {e}"))?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut spec = JobSpec::for_node(
        job.size,
        job.program.clone().into(),
        job.argv0.clone().into(),
        job.args.iter().map(OsString::from).collect(),
        job.exports
            .iter()
            .map(|(k, v)| (k.clone(), OsString::from(v)))
            .collect(),
        job.mca.clone(),
        job.ranks.len() > cores,
    );
    let mut link = Link::new(sock).map_err(|e| e.to_string())?;
    if let Some(d) = &job.cwd {
        // Where it does not exist here, the ranks start in the daemon's directory.
        let _ = std::env::set_current_dir(d);
    }
    let spawned = !job.apps.is_empty();
    let placed = if spawned {
        Ok(())
    } else {
        job.placement.apply(&mut spec, &job.ranks)
    };
    if let Err(e) = placed {
        let r = job.ranks.first().copied().unwrap_or(0) as u32;
        link.send(
            kind::FAILED,
            r,
            format!("cannot place its ranks: {e}").as_bytes(),
        );
        hand_over(&mut link);
        return Ok(1);
    }
    let lookup = |name: &str| {
        spec.mca_value(name)
            .map(str::to_string)
            .or_else(|| std::env::var(format!("RMPI_MCA_{name}")).ok())
    };
    let params = btl_sm::Params::resolve(job.ranks.len(), &lookup).map_err(|e| e.to_string())?;
    let memfd = btl_sm::Segment::create_memfd(&params)
        .map_err(|e| format!("cannot create the shared-memory segment: {e}"))?;
    let seg = spawn::Segment {
        fd: memfd.as_fd(),
        size: btl_sm::segment_size(&params),
    };
    let mut ranks: Vec<Rank> = Vec::new();
    for (i, &r) in job.ranks.iter().enumerate() {
        let started = match job.apps.get(job.app_of.get(i).copied().unwrap_or(0)) {
            Some(app) if spawned => {
                spec.program = app.program.clone().into();
                spec.argv0 = app.argv0.clone().into();
                spec.args = app.args.iter().map(OsString::from).collect();
                let extra = spawn::Extra {
                    size: Some(job.size),
                    env: app.env.clone(),
                    wdir: app.wdir.clone().map(Into::into),
                };
                spawn::spawn_child(&spec, seg, r, &extra)
            }
            _ => spawn::spawn_rank(&spec, seg, r),
        };
        match started {
            Ok(s) => {
                link.send(kind::STARTED, r as u32, s.child.id().to_string().as_bytes());
                ranks.push(Rank {
                    rank: r as u32,
                    child: s.child,
                    pmi: Some(s.pmi),
                    to_pmi: Vec::new(),
                    stream: RankStream::default(),
                    in_fence: false,
                    pipes: [Some(s.stdout), Some(s.stderr)],
                    status: None,
                });
            }
            Err(e) => {
                let msg = format!("cannot start {}: {e}", spec.program.display());
                link.send(kind::FAILED, r as u32, msg.as_bytes());
                kill_all(&mut ranks);
                hand_over(&mut link);
                return Ok(1);
            }
        }
    }
    let code = relay(&mut link, &mut ranks, &sigfd);
    drop(memfd);
    Ok(code)
}

/// The daemon's node: NODE itself, or (`BY_NAME`) the position of `slurm_name` in its list.
fn node_index(arg: &str, slurm_name: Option<&str>) -> Result<u32, String> {
    let Some(list) = arg.strip_prefix(BY_NAME) else {
        return arg.parse().map_err(|_| format!("{FLAG}: bad node {arg}"));
    };
    let name = slurm_name.ok_or("SLURMD_NODENAME is not set: not started by srun")?;
    list.split(',')
        .position(|h| h == name)
        .map(|n| n as u32)
        .ok_or(format!(
            "this host ({name}) is not one of the job's ({list})"
        ))
}

fn read_job(sock: &mut TcpStream) -> Result<NodeJob, String> {
    sock.set_read_timeout(Some(CONNECT_WAIT))
        .map_err(|e| e.to_string())?;
    let mut h = [0u8; 9];
    sock.read_exact(&mut h)
        .map_err(|e| format!("no job from mpirun: {e}"))?;
    let len = u32::from_le_bytes([h[5], h[6], h[7], h[8]]) as usize;
    if h[0] != kind::JOB || len > 16 << 20 {
        return Err("mpirun sent no job description".into());
    }
    let mut body = vec![0u8; len];
    sock.read_exact(&mut body)
        .map_err(|e| format!("no job from mpirun: {e}"))?;
    sock.set_read_timeout(None).map_err(|e| e.to_string())?;
    NodeJob::from_json(&body)
}

#[derive(Clone, Copy)]
enum Src {
    Link,
    Signals,
    Pmi(usize),
    Pipe(usize, usize),
}

/// The event loop: until every rank is reaped and its output relayed (0), or mpirun is gone (1).
fn relay(link: &mut Link, ranks: &mut [Rank], sigfd: &nix::sys::signalfd::SignalFd) -> u8 {
    let mut kvs = NodeKvs::default();
    loop {
        if ranks
            .iter()
            .all(|r| r.status.is_some() && r.pmi.is_none() && r.pipes.iter().all(Option::is_none))
        {
            hand_over(link);
            return 0;
        }
        let mut fds = Vec::new();
        let mut srcs = Vec::new();
        if let Some(s) = link.sock() {
            let mut ev = PollFlags::POLLIN;
            if link.wants_write() {
                ev |= PollFlags::POLLOUT;
            }
            fds.push(PollFd::new(s.as_fd(), ev));
            srcs.push(Src::Link);
        }
        fds.push(PollFd::new(sigfd.as_fd(), PollFlags::POLLIN));
        srcs.push(Src::Signals);
        for (i, r) in ranks.iter().enumerate() {
            if let Some(p) = &r.pmi {
                let mut ev = PollFlags::POLLIN;
                if !r.to_pmi.is_empty() {
                    ev |= PollFlags::POLLOUT;
                }
                fds.push(PollFd::new(p.as_fd(), ev));
                srcs.push(Src::Pmi(i));
            }
            for (k, p) in r.pipes.iter().enumerate() {
                if let Some(f) = p {
                    fds.push(PollFd::new(f.as_fd(), PollFlags::POLLIN));
                    srcs.push(Src::Pipe(i, k));
                }
            }
        }
        match poll(&mut fds, PollTimeout::from(1000u16)) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => {
                say(&format!("mpirun daemon: poll failed: {e}"));
                kill_all(ranks);
                return 1;
            }
        }
        let ready: Vec<(Src, PollFlags)> = fds
            .iter()
            .zip(srcs)
            .filter_map(|(f, s)| f.revents().filter(|r| !r.is_empty()).map(|r| (s, r)))
            .collect();
        drop(fds);
        let mut reap = false;
        for (src, flags) in ready {
            match src {
                Src::Signals => {
                    while let Ok(Some(info)) = sigfd.read_signal() {
                        if info.ssi_signo as i32 == libc::SIGCHLD {
                            reap = true;
                        } else {
                            // The agent's session ended (ssh hung up) or someone stops us.
                            kill_all(ranks);
                            return 1;
                        }
                    }
                }
                Src::Link => {
                    for f in link.read_frames(16) {
                        if let Err(e) = on_frame(ranks, &mut kvs, f) {
                            // The ranks would wait for a release that never comes: end the
                            // node now; mpirun sees the daemon gone and names this host.
                            say(&format!(
                                "mpirun (daemon on {}): {e}; killing this node's ranks",
                                host_name()
                            ));
                            kill_all(ranks);
                            return 1;
                        }
                    }
                    if !link.is_open() {
                        // mpirun is gone: nothing may outlive it.
                        kill_all(ranks);
                        return 1;
                    }
                }
                Src::Pmi(i) => {
                    if flags.contains(PollFlags::POLLOUT) {
                        write_pmi(&mut ranks[i]);
                    }
                    if flags.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
                    {
                        read_pmi(link, &mut ranks[i], &kvs, 16);
                    }
                }
                Src::Pipe(i, k) => read_pipe(link, &mut ranks[i], k, 16),
            }
        }
        if reap {
            for r in ranks.iter_mut().filter(|r| r.status.is_none()) {
                if let Ok(Some(st)) = r.child.try_wait() {
                    // What it said before dying goes first.
                    read_pmi(link, r, &kvs, 256);
                    for k in 0..2 {
                        read_pipe(link, r, k, 256);
                    }
                    r.status = Some(st);
                    link.send(kind::EXIT, r.rank, &st.into_raw().to_le_bytes());
                }
            }
        }
        enter_fence(link, ranks);
        link.flush();
    }
}

/// Once every rank of the node that can still speak has entered the fence, their held
/// `barrier_in`s go to mpirun together.
fn enter_fence(link: &mut Link, ranks: &mut [Rank]) {
    let entered = ranks.iter().any(|r| r.in_fence);
    if !entered || ranks.iter().any(|r| r.pmi.is_some() && !r.in_fence) {
        return;
    }
    for r in ranks.iter_mut().filter(|r| r.in_fence) {
        r.in_fence = false;
        link.send(kind::PMI, r.rank, b"cmd=barrier_in\n");
    }
}

/// Acts on one frame from mpirun; an error is a frame the node cannot go on after.
fn on_frame(ranks: &mut [Rank], kvs: &mut NodeKvs, f: oob::Frame) -> Result<(), String> {
    match f.kind {
        kind::FENCE => {
            let release = kvs.load(&f.payload)?;
            for r in ranks.iter_mut().filter(|r| r.pmi.is_some()) {
                r.to_pmi.extend_from_slice(release.as_bytes());
                write_pmi(r);
            }
        }
        kind::PMI => {
            if let Some(r) = ranks.iter_mut().find(|r| r.rank == f.rank) {
                if r.pmi.is_some() {
                    r.to_pmi.extend_from_slice(&f.payload);
                    write_pmi(r);
                }
            }
        }
        kind::SIGNAL => {
            let sig = f.payload.get(..4).map_or(libc::SIGKILL, |b| {
                i32::from_le_bytes([b[0], b[1], b[2], b[3]])
            });
            let Ok(sig) = Signal::try_from(sig) else {
                return Ok(());
            };
            for r in ranks
                .iter()
                .filter(|r| (f.rank == oob::ALL || r.rank == f.rank) && r.status.is_none())
            {
                // Unreaped, so the pid is still that rank's.
                let _ = kill(Pid::from_raw(r.child.id() as i32), sig);
            }
        }
        _ => {}
    }
    Ok(())
}

fn write_pmi(r: &mut Rank) {
    let Some(p) = r.pmi.as_mut() else { return };
    while !r.to_pmi.is_empty() {
        match p.write(&r.to_pmi) {
            Ok(n) => {
                r.to_pmi.drain(..n);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(_) => {
                // Gone; its read side reports the end.
                r.to_pmi.clear();
                return;
            }
        }
    }
}

/// Reads the rank's PMI requests: some answered here, fence entries held, the rest relayed.
fn read_pmi(link: &mut Link, r: &mut Rank, kvs: &NodeKvs, max_reads: usize) {
    let Some(sock) = r.pmi.as_mut() else { return };
    let mut chunk = vec![0u8; 64 * 1024];
    let mut end = false;
    let mut fwd = Vec::new();
    for _ in 0..max_reads {
        match sock.read(&mut chunk) {
            Ok(0) => {
                end = true;
                break;
            }
            Ok(n) => {
                let (to_pmi, in_fence) = (&mut r.to_pmi, &mut r.in_fence);
                r.stream.push(kvs, &chunk[..n], |line, route| match route {
                    Route::Forward => fwd.extend_from_slice(line),
                    Route::Answer(a) => to_pmi.extend_from_slice(a.as_bytes()),
                    Route::Barrier => *in_fence = true,
                });
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(_) => {
                end = true;
                break;
            }
        }
    }
    if end {
        fwd.extend(r.stream.take_rest().unwrap_or_default());
    }
    if !fwd.is_empty() {
        link.send(kind::PMI, r.rank, &fwd);
    }
    if end {
        r.pmi = None;
        link.send(kind::PMI_EOF, r.rank, &[]);
    } else {
        write_pmi(r);
    }
}

fn read_pipe(link: &mut Link, r: &mut Rank, k: usize, max_reads: usize) {
    let (data, eof) = if k == 0 {
        (kind::OUT, kind::OUT_EOF)
    } else {
        (kind::ERR, kind::ERR_EOF)
    };
    read_stream(link, r.rank, data, eof, &mut r.pipes[k], max_reads);
}

/// Relays what `src` has (at most `max_reads` reads) as `data` frames; at its end, an `eof`
/// frame, and `src` is closed.
fn read_stream<T: Read>(
    link: &mut Link,
    rank: u32,
    data: u8,
    eof: u8,
    src: &mut Option<T>,
    max_reads: usize,
) {
    let Some(s) = src.as_mut() else { return };
    let mut chunk = vec![0u8; 64 * 1024];
    for _ in 0..max_reads {
        match s.read(&mut chunk) {
            Ok(0) => {
                *src = None;
                link.send(eof, rank, &[]);
                return;
            }
            Ok(n) => link.send(data, rank, &chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(_) => {
                *src = None;
                link.send(eof, rank, &[]);
                return;
            }
        }
    }
}

fn kill_all(ranks: &mut [Rank]) {
    for r in ranks.iter_mut().filter(|r| r.status.is_none()) {
        let _ = r.child.kill();
        r.status = r.child.wait().ok();
    }
}

/// Blocks (bounded) until mpirun has every frame queued.
fn hand_over(link: &mut Link) {
    let until = Instant::now() + LAST_WORDS;
    while link.wants_write() && link.flush() && Instant::now() < until {
        if let Some(s) = link.sock() {
            let _ = poll(
                &mut [PollFd::new(s.as_fd(), PollFlags::POLLOUT)],
                PollTimeout::from(100u16),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_of_a_shared_step_finds_its_node_by_name() {
        assert_eq!(node_index("3", None), Ok(3));
        assert!(node_index("x", None).is_err());
        assert_eq!(node_index("@a,b,c", Some("b")), Ok(1));
        assert!(node_index("@a,b", Some("z")).unwrap_err().contains("(z)"));
        assert!(node_index("@a,b", None).is_err());
    }

    #[test]
    fn a_fence_frame_the_node_cannot_read_is_an_error() {
        let frame = |payload: &[u8]| oob::Frame {
            kind: kind::FENCE,
            rank: oob::ALL,
            payload: payload.to_vec(),
        };
        let mut kvs = NodeKvs::default();
        let good = crate::pmi_relay::fence_payload("k", &[], "cmd=barrier_out\n");
        assert_eq!(on_frame(&mut [], &mut kvs, frame(&good)), Ok(()));
        assert!(on_frame(&mut [], &mut kvs, frame(b"{not json"))
            .unwrap_err()
            .contains("bad fence"));
        assert!(on_frame(&mut [], &mut kvs, frame(b"{}")).is_err());
    }

    #[test]
    fn node_jobs_round_trip_through_json() {
        let j = NodeJob {
            program: "/bin/app".into(),
            argv0: "app".into(),
            args: vec!["-v".into(), "a b".into()],
            exports: vec![("X".into(), "1".into())],
            mca: vec![("btl".into(), "self,sm,tcp".into())],
            size: 4,
            ranks: vec![2, 3],
            placement: NodePlacement {
                bind_to: Some("core".into()),
                cpu_set: None,
                rank_by: None,
                hwthread_cpus: true,
                report_bindings: true,
            },
            apps: Vec::new(),
            app_of: Vec::new(),
            cwd: Some("/home/u/run".into()),
        };
        assert_eq!(NodeJob::from_json(&j.to_json()).unwrap(), j);
        assert!(NodeJob::from_json(b"{}").is_err());
        // A spawned job's commands.
        let mut s = j.clone();
        s.apps = vec![
            App {
                program: "/bin/a".into(),
                argv0: "a".into(),
                args: vec!["x".into()],
                env: vec![("RMPI_APPNUM".into(), "0".into())],
                wdir: None,
            },
            App {
                wdir: Some("/tmp".into()),
                ..App::default()
            },
        ];
        s.app_of = vec![0, 1];
        assert_eq!(NodeJob::from_json(&s.to_json()).unwrap(), s);
        s.app_of = vec![0, 2];
        assert!(NodeJob::from_json(&s.to_json()).is_err());
    }
}
