//! Jobs across hosts, on one machine: `scripts/netns.sh` makes two "nodes" of network namespaces
//! joined by a bridge, and mpirun starts a daemon in each through `--launch-agent`. Every byte at
//! every size between nodes (sm within a node, tcp between), collectives and communicators that
//! span nodes, placement by slot and by node, MPI_Abort and a killed rank on the remote node, a
//! killed daemon and a killed mpirun (nothing left in any namespace), and bad host input.
//! Every namespace, veth and bridge is removed afterwards, also when a test fails.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rmpi_tests::*;

/// One set of namespaces at a time (their names are per test process).
static NODES: Mutex<()> = Mutex::new(());

/// Two test nodes, `node1` and `node2`, removed on drop.
struct Nodes {
    prefix: String,
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

fn netns_sh() -> String {
    repo_root()
        .join("scripts/netns.sh")
        .to_str()
        .expect("utf-8 path")
        .to_string()
}

impl Nodes {
    fn up() -> Nodes {
        let guard = NODES.lock().unwrap_or_else(|e| e.into_inner());
        remove_stale_test_hosts();
        // `t` and the process id in hex (at most 8 characters, for interface names).
        let prefix = format!("t{:x}", std::process::id());
        let out = Command::new(netns_sh())
            .args(["up", &prefix, "2"])
            .output()
            .expect("run scripts/netns.sh");
        let nodes = Nodes {
            prefix,
            _one_at_a_time: guard,
        };
        assert!(
            out.status.success(),
            "scripts/netns.sh up failed (needs root and iproute2): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        nodes
    }

    /// The launch agent that runs a command on a node.
    fn agent(&self) -> String {
        format!("env RMPI_NETNS_PREFIX={} {} exec", self.prefix, netns_sh())
    }

    /// `mpirun --timeout ... --host node1:2,node2:2 --launch-agent AGENT <args>`.
    fn mpirun(&self, hosts: &str, args: &[&str]) -> Run {
        let agent = self.agent();
        // The suite's transport (RMPI_TEST_BTL) is not this test's: nodes need sm and tcp.
        let mut v = vec![
            "--host",
            hosts,
            "--launch-agent",
            agent.as_str(),
            "--mca",
            "btl",
            "self,sm,tcp",
        ];
        v.extend_from_slice(args);
        mpirun(&v)
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        let _ = Command::new(netns_sh())
            .args(["down", &self.prefix])
            .status();
    }
}

fn gone(m: &str) {
    let t0 = Instant::now();
    while !processes_with(m).is_empty() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_with(m),
        Vec::<u32>::new(),
        "processes left running"
    );
    assert_eq!(
        shm_leftovers(),
        Vec::<String>::new(),
        "files left in /dev/shm"
    );
}

#[test]
fn every_byte_between_two_nodes_by_slot_and_by_node() {
    let nodes = Nodes::up();
    let prog = c_program("tests/c/tcp_pingpong.c");
    for map in ["slot", "node"] {
        let m = marker("nodes-pingpong");
        let r = nodes.mpirun(
            "node1:2,node2:2",
            &[
                "--map-by",
                map,
                "--mca",
                "btl_base_verbose",
                "1",
                prog.to_str().unwrap(),
                &m,
            ],
        );
        r.assert_ok();
        assert!(r.stdout.contains("tcp_pingpong: OK"), "{map}: {}", r.stdout);
        // Two ranks per node: sm between them, tcp to the other node.
        assert_eq!(
            r.stderr.matches("transports self,sm,tcp").count(),
            4,
            "{map}: {}",
            r.stderr
        );
        gone(&m);
    }
}

#[test]
fn ranks_know_their_host_and_placement_follows_map_by() {
    let nodes = Nodes::up();
    // "Hello from rank R of N on HOST".
    let prog = example("hello");
    let hostname_of = |out: &str, rank: usize| -> String {
        out.lines()
            .find(|l| l.contains(&format!("rank {rank} of")))
            .map(|l| {
                if l.contains("node1") {
                    "node1"
                } else if l.contains("node2") {
                    "node2"
                } else {
                    "?"
                }
            })
            .unwrap_or("missing")
            .to_string()
    };
    let r = nodes.mpirun("node1:2,node2:2", &["-np", "4", prog.to_str().unwrap()]);
    r.assert_ok();
    let by_slot: Vec<String> = (0..4).map(|k| hostname_of(&r.stdout, k)).collect();
    assert_eq!(
        by_slot,
        ["node1", "node1", "node2", "node2"],
        "{}",
        r.stdout
    );
    let r = nodes.mpirun(
        "node1,node2",
        &[
            "--npernode",
            "2",
            "--map-by",
            "node",
            prog.to_str().unwrap(),
        ],
    );
    r.assert_ok();
    let by_node: Vec<String> = (0..4).map(|k| hostname_of(&r.stdout, k)).collect();
    assert_eq!(
        by_node,
        ["node1", "node2", "node1", "node2"],
        "{}",
        r.stdout
    );
}

#[test]
fn collectives_and_communicators_across_nodes() {
    let nodes = Nodes::up();
    for src in [
        "tests/c/coll_allreduce.c",
        "tests/c/coll_bcast.c",
        "tests/c/coll_alltoall.c",
        "tests/c/comm_dup.c",
        "tests/c/comm_create.c",
    ] {
        let prog = c_program(src);
        let r = nodes.mpirun(
            "node1:2,node2:2",
            &["--map-by", "node", prog.to_str().unwrap()],
        );
        r.assert_ok();
    }
}

#[test]
fn abort_on_the_remote_node_ends_the_job() {
    let nodes = Nodes::up();
    let prog = c_program("tests/c/abort.c");
    // By node: rank 1, which aborts, is on node2.
    let r = nodes.mpirun(
        "node1:2,node2:2",
        &["--map-by", "node", prog.to_str().unwrap()],
    );
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr.contains("rank 1 (pid")
            && r.stderr.contains("on node2)")
            && r.stderr.contains("MPI_Abort with error code 5"),
        "{}",
        r.stderr
    );
}

/// MPI_Comm_spawn in a job across hosts: the children go to the job's hosts by slot, free
/// slots first (Open MPI's mapping), or where the info key `host` says; each host they use gets
/// a daemon of its own. Parents and children on different hosts meet over TCP: every byte both
/// ways, collectives, merge; tests/c/spawn.c's whole sequence (spawn_multiple, publish/lookup,
/// accept/connect between the children's groups); a host outside the job is a clear
/// MPI_ERR_SPAWN; a killed child on a remote host ends the job and nothing is left.
#[test]
fn spawn_across_hosts() {
    let nodes = Nodes::up();
    let prog = c_program("tests/c/dpm_hosts.c");
    let p = prog.to_str().unwrap();
    // Two parents fill node1: the three children take node2's two slots, then node1.
    let r = nodes.mpirun("node1:2,node2:2", &["-np", "2", p, "spawn", "3"]);
    r.assert_ok();
    for (i, h) in ["node2", "node2", "node1"].iter().enumerate() {
        assert!(
            r.stdout.contains(&format!("child {i} on {h}\n")),
            "{}",
            r.stdout
        );
    }
    assert!(r.stdout.contains("dpm_hosts: OK"), "{}", r.stdout);
    // The info key: all on node2, beyond its slots.
    let r = nodes.mpirun("node1:2,node2:1", &["-np", "1", p, "spawn", "2", "node2"]);
    r.assert_ok();
    assert!(
        r.stdout.contains("child 0 on node2\n") && r.stdout.contains("child 1 on node2\n"),
        "{}",
        r.stdout
    );
    let r = nodes.mpirun("node1:1,node2:1", &["-np", "1", p, "spawn", "1", "node3"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("MPI_ERR_SPAWN")
            && r.stderr
                .contains("host names node3, which is not one of the job's hosts (node1,node2)"),
        "{}",
        r.stderr
    );
    let spawn = c_program("tests/c/spawn.c");
    let r = nodes.mpirun("node1:1,node2:1", &[spawn.to_str().unwrap(), "2"]);
    r.assert_no_errors("spawn.c across hosts");
    let m = marker("spawn-die");
    let r = nodes.mpirun("node1:1,node2:2", &[spawn.to_str().unwrap(), "die", &m]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("SIGKILL"), "{}", r.stderr);
    gone(&m);
}

/// Ranks (and spawned children) start in mpirun's working directory, as Open MPI's daemons
/// do, wherever the agent leaves the daemon (ssh: the login directory; here an agent that
/// starts it in /), so `./prog` works.
#[test]
fn ranks_start_in_mpiruns_directory() {
    let nodes = Nodes::up();
    let prog = c_program("tests/c/dpm_hosts.c");
    let dir = prog.parent().expect("dir");
    let agent = std::env::temp_dir().join(format!("rmpi-agent-{}", std::process::id()));
    std::fs::write(
        &agent,
        format!("#!/bin/sh\ncd /\nexec {} \"$@\"\n", nodes.agent()),
    )
    .expect("agent script");
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let name = format!("./{}", prog.file_name().unwrap().to_str().unwrap());
    let mut cmd = std::process::Command::new(bin("mpirun"));
    cmd.current_dir(dir).args([
        "--timeout",
        "60",
        "--host",
        "node1:1,node2:1",
        "--launch-agent",
        agent.to_str().unwrap(),
        &name,
        "spawn",
        "1",
    ]);
    let r = run_bounded(cmd, Duration::from_secs(90));
    let _ = std::fs::remove_file(&agent);
    r.assert_ok();
    assert!(r.stdout.contains("dpm_hosts: OK"), "{}", r.stdout);
}

/// Two jobs, one per host, meet: MPI_Comm_accept/connect through a port (its name carries
/// the host's TCP address) and MPI_Comm_join over a TCP socket. The processes of the other job
/// are reached over TCP (dynamic transport); every byte of 0 B - 4 MiB both ways, collectives
/// over the intercommunicator and its merge, disconnect.
#[test]
fn jobs_on_two_hosts_connect_accept_and_join() {
    let nodes = Nodes::up();
    let prog = c_program("tests/c/dpm_hosts.c");
    let dir = std::env::temp_dir().join(format!("rmpi-dpm-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (a, b) in [("server", "client"), ("join-server", "join-client")] {
        let file = dir.join(a);
        let _ = std::fs::remove_file(&file);
        let m = marker("dpm-hosts");
        let job = |host: &str, mode: &str| {
            let mut c = Command::new(netns_sh());
            c.env("RMPI_NETNS_PREFIX", &nodes.prefix).args([
                "exec",
                host,
                &format!(
                    "{} --timeout 60 -np 2 {} {mode} {} {m}",
                    bin("mpirun").display(),
                    prog.display(),
                    file.display()
                ),
            ]);
            c
        };
        let server = job("node1", a);
        let client = job("node2", b);
        let s = std::thread::spawn(move || run_bounded(server, Duration::from_secs(90)));
        let c = run_bounded(client, Duration::from_secs(90));
        let s = s.join().expect("server thread");
        for (what, r) in [(a, &s), (b, &c)] {
            r.assert_ok();
            assert!(r.stdout.contains("dpm_hosts: OK"), "{what}: {}", r.stdout);
        }
        gone(&m);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts `nodes MARKER` on node1:2,node2:2 in the background and waits until every rank said
/// where it runs: (mpirun, marker, [(rank, host, pid)]).
fn start_held_job(
    nodes: &Nodes,
) -> (
    std::process::Child,
    String,
    Vec<(usize, String, u32)>,
    std::sync::mpsc::Receiver<String>,
) {
    let m = marker("nodes-held");
    let prog = c_program("tests/c/nodes.c");
    let mut cmd = Command::new(bin("mpirun"));
    cmd.args([
        "--timeout",
        "120",
        "--host",
        "node1:2,node2:2",
        "--launch-agent",
        &nodes.agent(),
    ])
    .arg(&prog)
    .arg(&m)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn mpirun");
    let out = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    let (rx, erx) = (lines(out), lines(err));
    let mut ranks = Vec::new();
    while ranks.len() < 4 {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(l) => {
                let w: Vec<&str> = l.split_whitespace().collect();
                if let ["ready", r, h, p] = w[..] {
                    ranks.push((r.parse().unwrap(), h.to_string(), p.parse().unwrap()));
                }
            }
            Err(e) => {
                let _ = child.kill();
                panic!("the ranks did not get ready ({e})");
            }
        }
    }
    ranks.sort();
    std::thread::sleep(Duration::from_millis(300));
    (child, m, ranks, erx)
}

/// The lines of a child's output as they come, read by a thread of their own.
fn lines(r: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines().map_while(|l| l.ok()) {
            let _ = tx.send(line);
        }
    });
    rx
}

fn ppid(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')')
        .next()
        .and_then(|r| r.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

/// Waits (bounded) for mpirun to end; its exit code and stderr.
fn finish(
    mut child: std::process::Child,
    err: std::sync::mpsc::Receiver<String>,
) -> (Option<i32>, String) {
    let t0 = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st.code();
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("mpirun did not end within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut text = String::new();
    while let Ok(l) = err.recv_timeout(Duration::from_millis(500)) {
        text += &l;
        text.push('\n');
    }
    (code, text)
}

#[test]
fn a_killed_rank_on_the_remote_node_ends_the_job() {
    let nodes = Nodes::up();
    let (child, m, ranks, err) = start_held_job(&nodes);
    assert_eq!(ranks[3].1, "node2", "{ranks:?}");
    let _ = Command::new("kill")
        .args(["-KILL", &ranks[3].2.to_string()])
        .status();
    let (code, stderr) = finish(child, err);
    assert_eq!(code, Some(137), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "rank 3 (pid {} on node2) was killed by signal 9",
            ranks[3].2
        )),
        "{stderr}"
    );
    gone(&m);
}

#[test]
fn a_killed_daemon_ends_the_job_and_leaves_nothing() {
    let nodes = Nodes::up();
    let (child, m, ranks, err) = start_held_job(&nodes);
    let daemon = ppid(ranks[2].2);
    let cmdline = std::fs::read_to_string(format!("/proc/{daemon}/cmdline")).unwrap_or_default();
    assert!(
        cmdline.contains("--rmpi-daemon"),
        "rank 2's parent: {cmdline:?}"
    );
    let _ = Command::new("kill")
        .args(["-KILL", &daemon.to_string()])
        .status();
    let (code, stderr) = finish(child, err);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("lost the connection to the daemon on host node2"),
        "{stderr}"
    );
    gone(&m);
}

#[test]
fn a_killed_mpirun_leaves_nothing_on_any_node() {
    let nodes = Nodes::up();
    let (mut child, m, _ranks, _err) = start_held_job(&nodes);
    child.kill().expect("SIGKILL mpirun");
    child.wait().expect("reap mpirun");
    gone(&m);
    for n in ["node1", "node2"] {
        let out = Command::new("ip")
            .args(["netns", "pids", &format!("{}-{n}", nodes.prefix)])
            .output()
            .expect("ip netns pids");
        assert!(
            out.stdout.is_empty(),
            "{n}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// Each daemon binds its host's ranks on its own topology, as mpirun does on one host, and
/// reports them under its host's name.
#[test]
fn each_host_binds_its_ranks_and_reports_them() {
    let nodes = Nodes::up();
    let r = nodes.mpirun(
        "node1:2,node2:2",
        &[
            "--bind-to",
            "core",
            "--report-bindings",
            "/bin/sh",
            "-c",
            "echo bound $PMI_RANK $(hostname) $(grep Cpus_allowed_list /proc/self/status | cut -f2)",
        ],
    );
    r.assert_ok();
    let mut cpus = std::collections::HashMap::new();
    for l in r.stdout.lines().filter(|l| l.starts_with("bound ")) {
        let w: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(w.len(), 4, "{l}");
        cpus.insert(w[1].to_string(), (w[2].to_string(), w[3].to_string()));
    }
    assert_eq!(cpus.len(), 4, "{}", r.stdout);
    for (a, b, host) in [("0", "1", "node1"), ("2", "3", "node2")] {
        assert_eq!(cpus[a].0, host, "{}", r.stdout);
        assert_eq!(cpus[b].0, host, "{}", r.stdout);
        assert_ne!(cpus[a].1, cpus[b].1, "one core each: {}", r.stdout);
        for rank in [a, b] {
            assert!(
                r.stderr.lines().any(|l| l.starts_with(&format!("[{host}:"))
                    && l.contains(&format!("MCW rank {rank} bound to"))),
                "{}",
                r.stderr
            );
        }
    }
    // A policy a host cannot meet fails the launch with the host named.
    let r = nodes.mpirun("node1:1,node2:1", &["--bind-to", "l9cache", "/bin/true"]);
    assert_ne!(r.code, Some(0));
    assert!(r.stderr.contains("l9cache"), "{}", r.stderr);
}

#[test]
fn bad_hosts_get_clear_errors() {
    let prog = c_program("tests/c/hello_plain.c");
    let p = prog.to_str().unwrap();
    let r = mpirun(&["--host", "far1:1,far2:1", "-np", "3", p]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr
            .contains("3 ranks requested but the 2 hosts have 2 slots")
            && r.stderr.contains("--oversubscribe"),
        "{}",
        r.stderr
    );
    let r = mpirun(&["--host", "far1:x", p]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("invalid --host entry 'far1:x'"),
        "{}",
        r.stderr
    );
    let r = mpirun(&["--hostfile", "/nonexistent/hf", p]);
    assert!(
        r.stderr.contains("cannot read hostfile /nonexistent/hf"),
        "{}",
        r.stderr
    );
    // An agent that cannot reach the host: named, with what to check.
    // Both agents fail at once; whichever host's daemon is reaped first is the one named.
    let r = mpirun(&["--host", "far1:1,far2:1", "--launch-agent", "false", p]);
    assert_eq!(r.code, Some(1));
    assert!(
        ["far1", "far2"].iter().any(|h| r
            .stderr
            .contains(&format!("the daemon for host {h} ended"))
            && r.stderr.contains(&format!("check that `false {h}` works"))),
        "{}",
        r.stderr
    );
    let r = mpirun(&[
        "--host",
        "far1:1,far2:1",
        "--launch-agent",
        "/nonexistent/agent",
        p,
    ]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr
            .contains("cannot start the daemon for host far1 (/nonexistent/agent)"),
        "{}",
        r.stderr
    );
}

#[test]
fn ctrl_c_while_an_agent_hangs_stops_the_launch() {
    let m = marker("hung-agent");
    let dir = target_dir().join(&m);
    std::fs::create_dir_all(&dir).unwrap();
    let agent = dir.join("agent.sh");
    // An agent that never starts the daemon (a password prompt, a host that does not answer).
    std::fs::write(&agent, format!("#!/bin/bash\nexec -a {m} sleep 60\n")).unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut child = Command::new(bin("mpirun"))
        .args([
            "--host",
            "far1,far2",
            "--launch-agent",
            agent.to_str().unwrap(),
        ])
        .arg(example("hello"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mpirun");
    let t0 = Instant::now();
    while processes_with(&m).len() < 2 && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let err = child.stderr.take().unwrap();
    let (code, stderr) = finish(child, lines(err));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("received SIGINT while starting the node daemons"),
        "{stderr}"
    );
    gone(&m);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A host that vanishes without closing anything (its link goes down): the daemon's connection
/// times out (TCP keepalive and user timeout, about 5 s), mpirun tears the job down naming the
/// host, and the cut-off daemon kills its own ranks when it notices the same.
#[test]
fn a_host_cut_off_the_network_ends_the_job() {
    let nodes = Nodes::up();
    let (child, m, _ranks, err) = start_held_job(&nodes);
    let st = Command::new("ip")
        .args(["link", "set", &format!("{}v2", nodes.prefix), "down"])
        .status()
        .expect("ip link");
    assert!(st.success());
    let (code, stderr) = finish(child, err);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("lost the connection to the daemon on host node2"),
        "{stderr}"
    );
    gone(&m);
}
