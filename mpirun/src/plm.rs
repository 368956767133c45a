//! Starting the node daemons of a multi-host job (Open MPI's plm rsh): one daemon per host,
//! through the launch agent (`ssh` unless `--launch-agent` / `--mca plm_rsh_agent` says
//! otherwise; started directly on this host), each connecting back to mpirun with the job's
//! cookie and receiving its part of the job (`orted.rs`).

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
    /// The launch agent (or the daemon itself, on this host): reaped when the job ends.
    pub agent: Child,
}

/// The launch agent as a command and its first arguments (`ssh`, `ssh -x`, a script...).
pub fn agent_words(agent: &str) -> Result<Vec<String>, String> {
    let words: Vec<String> = agent.split_whitespace().map(str::to_string).collect();
    if words.is_empty() {
        return Err("the launch agent is empty (--launch-agent / --mca plm_rsh_agent)".into());
    }
    Ok(words)
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
    agent: &[String],
    sigfd: &nix::sys::signalfd::SignalFd,
) -> Result<Vec<Node>, String> {
    let listener = TcpListener::bind("0.0.0.0:0")
        .map_err(|e| format!("cannot listen for the node daemons: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find mpirun's own path: {e}"))?;
    let (addrs, cookie) = (addresses(), cookie());
    // Hosts without ranks get no daemon; `used[k]` is host k's node index or None.
    let used: Vec<usize> = (0..hosts.len()).filter(|h| node_of.contains(h)).collect();
    let mut jobs = Vec::new();
    for &h in &used {
        let ranks: Vec<usize> = (0..node_of.len()).filter(|&r| node_of[r] == h).collect();
        jobs.push(NodeJob::new(spec, ranks)?);
    }
    let mut agents: Vec<Child> = Vec::new();
    let kill_agents = |agents: &mut Vec<Child>| {
        for a in agents.iter_mut() {
            let _ = a.kill();
            let _ = a.wait();
        }
    };
    for (node, &h) in used.iter().enumerate() {
        let host = &hosts[h].name;
        let mut cmd = if ras::is_local(host) {
            Command::new(&exe)
        } else {
            let mut c = Command::new(&agent[0]);
            c.args(&agent[1..]).arg(host).arg(&exe);
            c
        };
        cmd.arg(orted::FLAG)
            .arg(&addrs)
            .arg(port.to_string())
            .arg(node.to_string())
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
            Ok(c) => agents.push(c),
            Err(e) => {
                kill_agents(&mut agents);
                let what = if ras::is_local(host) {
                    exe.display().to_string()
                } else {
                    agent[0].clone()
                };
                return Err(format!(
                    "cannot start the daemon for host {host} ({what}): {e}"
                ));
            }
        }
    }
    let mut links: Vec<Option<Link>> = (0..used.len()).map(|_| None).collect();
    let until = Instant::now() + CONNECT_WAIT;
    while links.iter().any(Option::is_none) {
        // Ctrl-C while an agent hangs (a password prompt, an unreachable host) stops the launch.
        while let Ok(Some(info)) = sigfd.read_signal() {
            if info.ssi_signo as i32 != libc::SIGCHLD {
                kill_agents(&mut agents);
                let name = crate::signals::signal_name(info.ssi_signo as i32).unwrap_or_default();
                return Err(format!(
                    "received {name} while starting the node daemons; stopped"
                ));
            }
        }
        for (node, a) in agents.iter_mut().enumerate() {
            if links[node].is_none() {
                if let Ok(Some(st)) = a.try_wait() {
                    let host = &hosts[used[node]].name;
                    kill_agents(&mut agents);
                    return Err(format!(
                        "the daemon for host {host} ended ({st}) before it connected back to mpirun; \
                         check that `{} {host}` works and that mpirun is at {} there",
                        agent.join(" "),
                        exe.display()
                    ));
                }
            }
        }
        if Instant::now() >= until {
            let missing: Vec<&str> = (0..used.len())
                .filter(|&n| links[n].is_none())
                .map(|n| hosts[used[n]].name.as_str())
                .collect();
            kill_agents(&mut agents);
            return Err(format!(
                "the daemons for {} did not connect back within {} s",
                missing.join(", "),
                CONNECT_WAIT.as_secs()
            ));
        }
        match listener.accept() {
            Ok((s, _)) => greet(s, &cookie, &jobs, &mut links),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                kill_agents(&mut agents);
                return Err(format!("cannot accept the node daemons: {e}"));
            }
        }
    }
    Ok(links
        .into_iter()
        .zip(agents)
        .enumerate()
        .map(|(node, (link, agent))| Node {
            host: hosts[used[node]].name.clone(),
            link: link.expect("every node connected"),
            agent,
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
