//! Starting the node daemons of a multi-host job (Open MPI's plm rsh and slurm): one daemon per
//! host, through the launch agent (`ssh` unless `--launch-agent` / `--mca plm_rsh_agent` says
//! otherwise) once per host, or inside a Slurm allocation one `srun` step for all of them (one
//! request to slurmctld however many hosts); started directly on this host. Each daemon
//! connects back to mpirun with the job's cookie and receives its part of the job (`orted.rs`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::JobSpec;
use crate::oob::{self, kind, Link};
use crate::orted::{self, NodeJob};
use crate::ras::{self, Host};

/// How long the daemons have to connect (an ssh login included).
const CONNECT_WAIT: Duration = Duration::from_secs(60);

/// A started daemon, as the job sees it.
pub struct Node {
    pub host: String,
    pub link: Link,
    /// The process that started it (the agent, or the daemon itself on this host), reaped when
    /// the job ends; None for all but the first node of a shared `srun` step.
    pub agent: Option<Child>,
    /// Where its job's rank 0 is in mpirun's list of ranks: its frames name ranks of its job.
    pub base: usize,
}

/// How the daemons of other hosts are started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Agent {
    /// A command and its first arguments (`ssh`, `ssh -x`, a script...), run once per host with
    /// the host name and the daemon's command line after them.
    Rsh(Vec<String>),
    /// Inside a Slurm allocation: one step of one task per host.
    Srun,
}

impl Agent {
    pub fn rsh(agent: &str) -> Result<Agent, String> {
        let words: Vec<String> = agent.split_whitespace().map(str::to_string).collect();
        if words.is_empty() {
            return Err("the launch agent is empty (--launch-agent / --mca plm_rsh_agent)".into());
        }
        Ok(Agent::Rsh(words))
    }

    /// The command that starts the daemon on `hosts` (one host unless `Srun`); the daemon's
    /// arguments follow.
    fn command(&self, hosts: &[&str], exe: &std::path::Path) -> Command {
        match self {
            Agent::Rsh(words) => {
                let mut c = Command::new(&words[0]);
                c.args(&words[1..]).arg(hosts[0]).arg(exe);
                c
            }
            Agent::Srun => {
                let mut c = Command::new("srun");
                // As Open MPI's plm slurm: one unbound task per host that shares the
                // allocation with the ranks to come, and takes the step down when it fails.
                c.arg(format!("--nodes={}", hosts.len()))
                    .arg(format!("--ntasks={}", hosts.len()))
                    .args(["--ntasks-per-node=1", "--overlap", "--kill-on-bad-exit"])
                    .arg("--cpu-bind=none")
                    .arg(format!("--nodelist={}", hosts.join(",")))
                    .arg(exe);
                c
            }
        }
    }

    /// The command line a user can try by hand, for error messages.
    fn shown(&self, host: &str) -> String {
        match self {
            Agent::Rsh(words) => format!("{} {host}", words.join(" ")),
            Agent::Srun => format!("srun --nodes=1 --nodelist={host} hostname"),
        }
    }
}

/// This host's IPv4 addresses for the daemons to try, loopback first (a daemon on this host).
fn addresses() -> String {
    let mut v = vec!["127.0.0.1".to_string()];
    if let Ok(addrs) = nix::ifaddrs::getifaddrs() {
        for a in addrs {
            let Some(sin) = a.address.as_ref().and_then(|s| s.as_sockaddr_in()) else {
                continue;
            };
            let ip = sin.ip();
            if !ip.is_loopback() && !v.contains(&ip.to_string()) {
                v.push(ip.to_string());
            }
        }
    }
    v.join(",")
}

fn cookie() -> String {
    let mut b = [0u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_err()
    {
        b[..8].copy_from_slice(
            &(std::process::id() as u64 ^ Instant::now().elapsed().as_nanos() as u64).to_le_bytes(),
        );
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Starts one daemon per host that has ranks (`node_of`: each rank's host index) and hands each
/// its part of the job. On failure every daemon already started is killed.
pub fn launch(
    spec: &JobSpec,
    hosts: &[Host],
    node_of: &[usize],
    agent: &Agent,
    placement: &orted::NodePlacement,
    sigfd: &nix::sys::signalfd::SignalFd,
) -> Result<Vec<Node>, String> {
    // Hosts without ranks get no daemon; node n is host `used[n]`.
    let used: Vec<usize> = (0..hosts.len()).filter(|h| node_of.contains(h)).collect();
    let names: Vec<&str> = used.iter().map(|&h| hosts[h].name.as_str()).collect();
    let mut jobs = Vec::new();
    for &h in &used {
        let ranks: Vec<usize> = (0..node_of.len()).filter(|&r| node_of[r] == h).collect();
        jobs.push(NodeJob::new(spec, ranks, placement)?);
    }
    start_daemons(&names, &jobs, agent, Some(sigfd))
}

/// Starts one daemon on each of `names` and hands it its part of a job (`jobs`, in the same
/// order): the first job's, or one MPI_Comm_spawn started. On failure every daemon already
/// started is killed. A termination signal on `sigfd` stops the launch; without one (a running
/// job's spawn) signals stay queued for the job's loop.
pub fn start_daemons(
    names: &[&str],
    jobs: &[NodeJob],
    agent: &Agent,
    sigfd: Option<&nix::sys::signalfd::SignalFd>,
) -> Result<Vec<Node>, String> {
    let used = names;
    let listener = TcpListener::bind("0.0.0.0:0")
        .map_err(|e| format!("cannot listen for the node daemons: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find mpirun's own path: {e}"))?;
    let (addrs, cookie) = (addresses(), cookie());
    // Which nodes each process starts: this host's daemon directly, the others by the agent.
    let (here, there): (Vec<usize>, Vec<usize>) =
        (0..used.len()).partition(|&n| ras::is_local(names[n]));
    let mut groups: Vec<(Option<&Agent>, Vec<usize>)> =
        here.iter().map(|&n| (None, vec![n])).collect();
    match agent {
        Agent::Srun if !there.is_empty() => groups.push((Some(agent), there)),
        _ => groups.extend(there.iter().map(|&n| (Some(agent), vec![n]))),
    }
    let mut starts: Vec<(Child, Vec<usize>)> = Vec::new();
    let kill_starts = |starts: &mut Vec<(Child, Vec<usize>)>| {
        for (a, _) in starts.iter_mut() {
            let _ = a.kill();
            let _ = a.wait();
        }
    };
    for (how, group) in groups {
        let step_hosts: Vec<&str> = group.iter().map(|&n| names[n]).collect();
        let mut cmd = match how {
            None => Command::new(&exe),
            Some(a) => a.command(&step_hosts, &exe),
        };
        // A daemon of a shared step finds its node by its Slurm node name.
        let node_arg = match how {
            Some(Agent::Srun) => format!("{}{}", orted::BY_NAME, names.join(",")),
            _ => group[0].to_string(),
        };
        cmd.arg(orted::FLAG)
            .arg(&addrs)
            .arg(port.to_string())
            .arg(node_arg)
            .arg(&cookie)
            .stdin(Stdio::null());
        let launcher = std::process::id() as libc::pid_t;
        // SAFETY: runs in the forked child before exec; prctl, getppid and kill are
        // async-signal-safe and nothing is allocated.
        unsafe {
            cmd.pre_exec(move || {
                // The agent (and with it a daemon on this host) ends with mpirun.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != launcher {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                }
                crate::signals::reset_for_child().map_err(std::io::Error::from)
            });
        }
        match cmd.spawn() {
            Ok(c) => starts.push((c, group)),
            Err(e) => {
                kill_starts(&mut starts);
                let what = cmd.get_program().to_string_lossy().into_owned();
                let s = if step_hosts.len() > 1 { "s" } else { "" };
                return Err(format!(
                    "cannot start the daemon{s} for host{s} {} ({what}): {e}",
                    step_hosts.join(", ")
                ));
            }
        }
    }
    let mut links: Vec<Option<Link>> = (0..used.len()).map(|_| None).collect();
    let until = Instant::now() + CONNECT_WAIT;
    while links.iter().any(Option::is_none) {
        // Ctrl-C while an agent hangs (a password prompt, an unreachable host) stops the launch.
        while let Some(Ok(Some(info))) = sigfd.map(|s| s.read_signal()) {
            if info.ssi_signo as i32 != libc::SIGCHLD {
                kill_starts(&mut starts);
                let name = crate::signals::signal_name(info.ssi_signo as i32).unwrap_or_default();
                return Err(format!(
                    "received {name} while starting the node daemons; stopped"
                ));
            }
        }
        for (a, group) in starts.iter_mut() {
            let Some(&n) = group.iter().find(|&&n| links[n].is_none()) else {
                continue;
            };
            if let Ok(Some(st)) = a.try_wait() {
                let host = names[n];
                kill_starts(&mut starts);
                return Err(format!(
                    "the daemon for host {host} ended ({st}) before it connected back to mpirun; \
                     check that `{}` works and that mpirun is at {} there",
                    agent.shown(host),
                    exe.display()
                ));
            }
        }
        if Instant::now() >= until {
            let missing: Vec<&str> = (0..used.len())
                .filter(|&n| links[n].is_none())
                .map(|n| names[n])
                .collect();
            kill_starts(&mut starts);
            return Err(format!(
                "the daemons for {} did not connect back within {} s",
                missing.join(", "),
                CONNECT_WAIT.as_secs()
            ));
        }
        match listener.accept() {
            Ok((s, _)) => greet(s, &cookie, jobs, &mut links),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                kill_starts(&mut starts);
                return Err(format!("cannot accept the node daemons: {e}"));
            }
        }
    }
    let mut agents: Vec<Option<Child>> = (0..used.len()).map(|_| None).collect();
    for (a, group) in starts {
        agents[group[0]] = Some(a);
    }
    Ok(links
        .into_iter()
        .zip(agents)
        .enumerate()
        .map(|(node, (link, agent))| Node {
            host: names[node].to_string(),
            link: link.expect("every node connected"),
            agent,
            base: 0,
        })
        .collect())
}

/// Reads a connection's hello; a daemon of this job gets its part of the job. Anything else
/// (a stray connection, a wrong cookie) is dropped.
fn greet(s: TcpStream, cookie: &str, jobs: &[NodeJob], links: &mut [Option<Link>]) {
    let _ = greet_one(s, cookie, jobs, links);
}

fn greet_one(
    mut s: TcpStream,
    cookie: &str,
    jobs: &[NodeJob],
    links: &mut [Option<Link>],
) -> Option<()> {
    s.set_nonblocking(false).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut h = [0u8; 9];
    s.read_exact(&mut h).ok()?;
    let node = u32::from_le_bytes([h[1], h[2], h[3], h[4]]) as usize;
    let len = u32::from_le_bytes([h[5], h[6], h[7], h[8]]) as usize;
    if h[0] != kind::HELLO || len != cookie.len() || node >= jobs.len() || links[node].is_some() {
        return None;
    }
    let mut got = vec![0u8; len];
    s.read_exact(&mut got).ok()?;
    if got != cookie.as_bytes() {
        return None;
    }
    let mut frame = Vec::new();
    oob::encode(&mut frame, kind::JOB, 0, &jobs[node].to_json());
    s.write_all(&frame).ok()?;
    links[node] = Some(Link::new(s).ok()?);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(c: &Command) -> Vec<String> {
        std::iter::once(c.get_program())
            .chain(c.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn agents_build_their_command_lines() {
        let exe = std::path::Path::new("/opt/mpirun");
        let rsh = Agent::rsh("ssh -x").unwrap();
        assert_eq!(
            words(&rsh.command(&["n1"], exe)),
            ["ssh", "-x", "n1", "/opt/mpirun"]
        );
        assert_eq!(rsh.shown("n1"), "ssh -x n1");
        assert!(Agent::rsh("  ").is_err());
        // One step, one unbound task on each host.
        let w = words(&Agent::Srun.command(&["n1", "n2", "n3"], exe));
        assert_eq!(w[0], "srun");
        for a in [
            "--nodes=3",
            "--ntasks=3",
            "--ntasks-per-node=1",
            "--overlap",
            "--cpu-bind=none",
            "--nodelist=n1,n2,n3",
        ] {
            assert!(w.iter().any(|x| x == a), "{a} in {w:?}");
        }
        assert_eq!(w.last().unwrap(), "/opt/mpirun");
    }
}
