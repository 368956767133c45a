//! The running job: one single-threaded poll loop over the ranks' PMI sockets, their output pipes
//! and a signalfd; the first failure tears the job down.

mod dpm;
mod spawn_hosts;

use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::sys::signalfd::SignalFd;
use nix::unistd::Pid;

use crate::cli::JobSpec;
use crate::foreign::running::{self, Found, ProcTree};
use crate::foreign::schedule::Schedule;
use crate::oob;
use crate::pmi_conn::{PmiConn, Request};
use crate::pmi_relay;
use crate::pmi_server::{Action, Complaint, PmiServer};
use crate::report::{judge, say, Ended, Failure};
use crate::spawn::Started;
use crate::stdio::{Forwarder, OutPipe, Stream};

/// Between the first signal of a teardown and SIGKILL to the survivors.
const GRACE: Duration = Duration::from_secs(1);
/// How long output pipes may stay open after the last rank was reaped (a rank's background
/// child may hold them); their output is forwarded until then.
const LINGER: Duration = Duration::from_secs(1);
/// A rank's PMI connection may close this long before its exit is seen (it closes as the
/// process exits); still running after that, the rank has left the job.
const PMI_CLOSE_GRACE: Duration = Duration::from_millis(500);
/// MPI_ERR_PROC_ABORTED (the standard ABI's value): the error class a rank aborts with when a
/// peer it talks to has died.
const ERR_PROC_ABORTED: i32 = 58;
/// How long an abort with that class waits for the dead peer to become waitable: its memory
/// (what the survivor saw go) is released a moment before its exit status exists.
const PEER_DEATH_WAIT: Duration = Duration::from_millis(100);
/// Reads per ready descriptor per loop turn, so one chatty rank cannot starve the others.
const READS_PER_TURN: usize = 16;
/// Reads when draining a dead rank's socket and pipes: more than their buffers can hold, yet
/// bounded in case a surviving child of the rank keeps writing.
const DRAIN_READS: usize = 256;

/// A rank's process: mpirun's child, or a rank on another host behind its node daemon.
enum Proc {
    Local(Child),
    /// The index of its node in `Job::nodes`.
    Remote(usize),
}

struct Rank {
    proc_: Proc,
    /// 0 for a remote rank until its daemon reports it started.
    pid: i32,
    status: Option<ExitStatus>,
    pmi: PmiConn,
    pipes: [OutPipe; 2],
    /// When its PMI connection closed while it was between init and finalize.
    pmi_closed_at: Option<Instant>,
    /// The complaints already reported for it (one line each, the first time).
    complained: [bool; Complaint::ALL],
    /// Its job (0: the one mpirun started; then one per MPI_Comm_spawn) and rank in that job.
    job: usize,
    jrank: usize,
    /// A spawn request being received (`spawn_req.rs`).
    spawn: crate::spawn_req::Pending,
}

impl Rank {
    /// Rank `jrank` of job `job`, started by mpirun (`Started`).
    fn local(s: crate::spawn::Started, job: usize, jrank: usize) -> Rank {
        let pipes = [
            OutPipe::new(s.stdout, Stream::Out),
            OutPipe::new(s.stderr, Stream::Err),
        ];
        Rank::with(Proc::Local(s.child), PmiConn::new(s.pmi), pipes, job, jrank)
    }

    /// Rank `jrank` of job `job` behind node daemon `node`.
    fn remote(node: usize, job: usize, jrank: usize) -> Rank {
        let pipes = [OutPipe::remote(Stream::Out), OutPipe::remote(Stream::Err)];
        Rank::with(Proc::Remote(node), PmiConn::remote(), pipes, job, jrank)
    }

    fn with(proc_: Proc, pmi: PmiConn, pipes: [OutPipe; 2], job: usize, jrank: usize) -> Rank {
        Rank {
            pid: match &proc_ {
                Proc::Local(c) => c.id() as i32,
                Proc::Remote(_) => 0,
            },
            proc_,
            status: None,
            pmi,
            pipes,
            pmi_closed_at: None,
            complained: [false; Complaint::ALL],
            job,
            jrank,
            spawn: Default::default(),
        }
    }
}

#[derive(Clone, Copy)]
enum Source {
    Signals,
    Pmi(usize),
    Pipe(usize, usize),
    Node(usize),
}

pub struct Job {
    ranks: Vec<Rank>,
    /// One PMI server (KVS, barrier, kvsname) per job: mpirun's, then each spawned one.
    servers: Vec<PmiServer>,
    /// What spawned jobs inherit (options, MCA parameters, exports).
    spec: JobSpec,
    /// The spawned jobs' shared-memory segments, held until mpirun exits.
    segments: Vec<std::os::fd::OwnedFd>,
    /// MPI_Publish_name's services: name -> port, shared by all jobs.
    names: std::collections::HashMap<String, String>,
    sigfd: SignalFd,
    fwd: Forwarder,
    /// When the job times out, and the limit as given.
    deadline: Option<(Instant, f64)>,
    failure: Option<Failure>,
    /// When survivors of a teardown get SIGKILL.
    kill_at: Option<Instant>,
    all_reaped_at: Option<Instant>,
    /// When to look for another MPI's library in ranks that have not spoken PMI yet.
    foreign_scan: Schedule,
    /// The node daemons of a multi-host job (none on one host): the first job's, then those
    /// of the jobs MPI_Comm_spawn started.
    nodes: Vec<crate::plm::Node>,
    /// A multi-host job's hosts and how their daemons start, for MPI_Comm_spawn's children.
    hosts: Vec<crate::ras::Host>,
    agent: Option<crate::plm::Agent>,
}

impl Job {
    pub fn new(started: Vec<Started>, sigfd: SignalFd, spec: &JobSpec, start: Instant) -> Job {
        let (tag_output, timeout) = (spec.tag_output, spec.timeout);
        let n = started.len();
        let ranks = started
            .into_iter()
            .enumerate()
            .map(|(i, s)| Rank::local(s, 0, i))
            .collect();
        Job {
            ranks,
            servers: vec![{
                let mut s = PmiServer::new(n, format!("rmpi_{}", std::process::id()));
                s.set_universe(spec.universe);
                s
            }],
            spec: spec.clone(),
            segments: Vec::new(),
            names: Default::default(),
            sigfd,
            fwd: Forwarder::new(tag_output),
            deadline: timeout.map(|(secs, d)| (start + d, secs)),
            failure: None,
            kill_at: None,
            all_reaped_at: None,
            foreign_scan: Schedule::new(start),
            nodes: Vec::new(),
            hosts: Vec::new(),
            agent: None,
        }
    }

    /// A multi-host job: every rank behind its host's daemon (`node_of`: each rank's node).
    pub fn with_nodes(
        nodes: Vec<crate::plm::Node>,
        node_of: &[usize],
        sigfd: SignalFd,
        spec: &JobSpec,
        start: Instant,
        hosts: Vec<crate::ras::Host>,
        agent: crate::plm::Agent,
    ) -> Job {
        let mut job = Job::new(Vec::new(), sigfd, spec, start);
        job.ranks = node_of
            .iter()
            .enumerate()
            .map(|(i, &node)| Rank::remote(node, 0, i))
            .collect();
        job.hosts = hosts;
        job.agent = Some(agent);
        let mut server = PmiServer::new(node_of.len(), format!("rmpi_{}", std::process::id()));
        server.set_universe(spec.universe);
        server.set_mapping(crate::ras::process_mapping(node_of));
        // The daemons answer gets from the keys each fence sends them (`pmi_relay.rs`).
        server.keep_journal();
        job.servers = vec![server];
        job.nodes = nodes;
        job
    }

    /// Runs the job to the end (every rank reaped) and returns mpirun's exit code.
    pub fn run(mut self) -> i32 {
        loop {
            let now = Instant::now();
            if self.running() == 0 {
                let since = *self.all_reaped_at.get_or_insert(now);
                if !self.pipes_open() || now >= since + LINGER {
                    break;
                }
            }
            let ready = match self.poll_once(now) {
                Ok(r) => r,
                Err(e) => {
                    say(&format!("mpirun: poll failed: {e}; killing the job"));
                    self.kill_and_reap_now();
                    return 1;
                }
            };
            // Signals first: a Ctrl-C that also hit the ranks is reported as the cause, not
            // their deaths, and a rank's exit is judged after its last PMI message (drained on reap).
            for &(src, _) in &ready {
                if let Source::Signals = src {
                    self.on_signals();
                }
            }
            for &(src, flags) in &ready {
                match src {
                    Source::Signals => {}
                    Source::Pmi(r) => self.on_pmi(r, flags),
                    Source::Pipe(r, p) => {
                        self.ranks[r].pipes[p].pump(r, &mut self.fwd, READS_PER_TURN)
                    }
                    Source::Node(k) => self.on_node(k),
                }
            }
            self.flush_nodes();
            if ready.is_empty() {
                // Timers only; a reap pass costs little and guards against a missed SIGCHLD.
                self.reap();
            }
            self.check_timers(Instant::now());
        }
        self.end_nodes();
        self.failure.map_or(0, |f| f.exit_code())
    }

    fn running(&self) -> usize {
        self.ranks.iter().filter(|r| r.status.is_none()).count()
    }

    fn pipes_open(&self) -> bool {
        self.ranks
            .iter()
            .any(|r| r.pipes.iter().any(|p| p.is_open()))
    }

    fn poll_once(&self, now: Instant) -> nix::Result<Vec<(Source, PollFlags)>> {
        let mut fds = vec![PollFd::new(self.sigfd.as_fd(), PollFlags::POLLIN)];
        let mut srcs = vec![Source::Signals];
        for (k, n) in self.nodes.iter().enumerate() {
            if let Some(s) = n.link.sock() {
                let mut ev = PollFlags::POLLIN;
                if n.link.wants_write() {
                    ev |= PollFlags::POLLOUT;
                }
                fds.push(PollFd::new(s.as_fd(), ev));
                srcs.push(Source::Node(k));
            }
        }
        for (i, r) in self.ranks.iter().enumerate() {
            // PMI is served only while the job is healthy.
            if self.failure.is_none() {
                if let Some(fd) = r.pmi.fd() {
                    let mut ev = PollFlags::POLLIN;
                    if r.pmi.wants_write() {
                        ev |= PollFlags::POLLOUT;
                    }
                    fds.push(PollFd::new(fd, ev));
                    srcs.push(Source::Pmi(i));
                }
            }
            for (p, pipe) in r.pipes.iter().enumerate() {
                if let Some(fd) = pipe.fd() {
                    fds.push(PollFd::new(fd, PollFlags::POLLIN));
                    srcs.push(Source::Pipe(i, p));
                }
            }
        }
        let timeout = match self.next_wakeup().map(|t| t.saturating_duration_since(now)) {
            // Round up so a wakeup is never early (that would spin).
            Some(d) => {
                PollTimeout::try_from(d + Duration::from_micros(999)).unwrap_or(PollTimeout::MAX)
            }
            None => PollTimeout::NONE,
        };
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
        Ok(fds
            .iter()
            .zip(srcs)
            .filter_map(|(fd, src)| fd.revents().filter(|r| !r.is_empty()).map(|r| (src, r)))
            .collect())
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let timeout = self
            .deadline
            .filter(|_| self.failure.is_none())
            .map(|(t, _)| t);
        let linger = self.all_reaped_at.map(|t| t + LINGER);
        let scan = Some(self.foreign_scan.due()).filter(|_| self.scan_wanted());
        let left = self.pmi_left_at();
        [timeout, self.kill_at, linger, scan, left]
            .into_iter()
            .flatten()
            .min()
    }

    fn on_signals(&mut self) {
        let mut term = None;
        let mut child = false;
        while let Ok(Some(info)) = self.sigfd.read_signal() {
            match Signal::try_from(info.ssi_signo as i32) {
                Ok(Signal::SIGCHLD) => child = true,
                Ok(sig) => term = term.or(Some(sig)),
                Err(_) => {}
            }
        }
        if let Some(sig) = term {
            if self.failure.is_none() {
                let ranks = self.running();
                self.fail(
                    Failure::Signal {
                        sig: sig as i32,
                        ranks,
                    },
                    sig,
                );
            } else {
                // Asked again while tearing down: stop waiting.
                self.signal_all(Signal::SIGKILL);
                self.kill_at = None;
            }
        }
        if child {
            self.reap();
        }
    }

    /// Reap until a rank's end fails the job or `wait` passes; whether one did.
    fn reap_within(&mut self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        loop {
            self.reap();
            if self.failure.is_some() {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn reap(&mut self) {
        for i in 0..self.ranks.len() {
            if self.ranks[i].status.is_some() {
                continue;
            }
            let Proc::Local(child) = &mut self.ranks[i].proc_ else {
                continue; // its daemon reports its end
            };
            let status = match child.try_wait() {
                Ok(Some(s)) => s,
                Ok(None) => continue,
                Err(e) => {
                    say(&format!("mpirun: cannot wait for rank {i}: {e}"));
                    ExitStatus::from_raw(255 << 8)
                }
            };
            self.on_exit(i, status);
        }
    }

    fn on_exit(&mut self, i: usize, status: ExitStatus) {
        // Reaped: from now on its pid may belong to another process, so nothing may signal or
        // inspect it.
        self.ranks[i].status = Some(status);
        if self.failure.is_none() {
            // Whatever it sent before dying (finalize, abort) counts.
            self.serve_pmi(i, DRAIN_READS);
        }
        let rank = &mut self.ranks[i];
        for pipe in &mut rank.pipes {
            pipe.pump(i, &mut self.fwd, DRAIN_READS);
        }
        if self.failure.is_some() {
            return; // killed by the teardown, or dying with it: expected
        }
        let ended = match (status.code(), status.signal()) {
            (Some(c), _) => Ended::Code(c),
            (None, Some(s)) => Ended::Signal(s),
            (None, None) => Ended::Code(255),
        };
        let pid = rank.pid;
        let init = self.server_of(i).initialized(self.ranks[i].jrank);
        let fin = self.server_of(i).finalized(self.ranks[i].jrank);
        if let Some(f) = judge(i, pid, ended, init, fin) {
            self.fail(f, Signal::SIGTERM);
        }
    }

    fn on_pmi(&mut self, r: usize, flags: PollFlags) {
        if self.failure.is_some() {
            return;
        }
        if flags.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR) {
            self.serve_pmi(r, READS_PER_TURN);
        }
        if flags.contains(PollFlags::POLLOUT) {
            self.ranks[r].pmi.flush();
        }
    }

    /// Reads rank `r`'s pending PMI requests and answers them.
    fn serve_pmi(&mut self, r: usize, max_reads: usize) {
        for req in self.ranks[r].pmi.read_lines(max_reads) {
            let line = match req {
                Request::Line(l) => l,
                Request::TooLong => {
                    if let Action::Reply(reply) = self.servers[self.ranks[r].job].too_long() {
                        self.ranks[r].pmi.queue(&reply);
                    }
                    self.complain(r);
                    continue;
                }
            };
            // MPICH's PMI client speaks PMI-1 too: before answering a rank's first init, look at
            // what it runs (it waits for the answer, so it is still there to be looked at).
            if !self.server_of(r).initialized(self.ranks[r].jrank) && is_init(&line) {
                if let Some(found) = self.inspect(r, &ProcTree::read()) {
                    self.fail_foreign(r, found);
                    return;
                }
            }
            if let Some(reply) = self.dpm_request(r, &line) {
                if !reply.is_empty() {
                    self.ranks[r].pmi.queue(&reply);
                }
                continue;
            }
            let (job, jrank) = (self.ranks[r].job, self.ranks[r].jrank);
            let action = self.servers[job].handle(jrank, &line);
            self.complain(r);
            match action {
                Action::Reply(reply) => self.ranks[r].pmi.queue(&reply),
                Action::ReplyAll(reply) => {
                    let mut fenced = vec![false; self.nodes.len()];
                    for rank in self.ranks.iter_mut().filter(|k| k.job == job) {
                        match rank.proc_ {
                            // Its daemon releases it with the node's fence frame.
                            Proc::Remote(k) => fenced[k] = true,
                            Proc::Local(_) => rank.pmi.queue(&reply),
                        }
                    }
                    if fenced.contains(&true) {
                        let server = &mut self.servers[job];
                        let entries = server.take_published();
                        let payload = pmi_relay::fence_payload(server.kvsname(), &entries, &reply);
                        for (k, _) in fenced.iter().enumerate().filter(|(_, &f)| f) {
                            self.nodes[k]
                                .link
                                .send(oob::kind::FENCE, oob::ALL, &payload);
                        }
                    }
                }
                Action::Abort { code, .. } => {
                    // A survivor's abort can arrive before the death that caused it is reaped
                    // (seen over ib: an RDMA READ from the dead rank failed first). Report the
                    // death, the job's real cause and exit code, when there is one.
                    if code == ERR_PROC_ABORTED && self.reap_within(PEER_DEATH_WAIT) {
                        return;
                    }
                    let pid = self.ranks[r].pid;
                    self.fail(Failure::Abort { rank: r, pid, code }, Signal::SIGTERM);
                    return;
                }
                Action::None => {}
            }
        }
        for rank in &mut self.ranks {
            if rank.pmi.wants_write() {
                rank.pmi.flush();
            }
        }
        let between = self.server_of(r).initialized(self.ranks[r].jrank)
            && !self.server_of(r).finalized(self.ranks[r].jrank);
        let rank = &mut self.ranks[r];
        if !rank.pmi.is_open() && rank.pmi_closed_at.is_none() && rank.status.is_none() && between {
            rank.pmi_closed_at = Some(Instant::now());
        }
    }

    /// Reports on stderr why the server refused rank `r`'s last request, the first time each
    /// kind happens: the rank got an error reply, and its user should learn why.
    fn complain(&mut self, r: usize) {
        let Some(c) = self.servers[self.ranks[r].job].take_complaint() else {
            return;
        };
        let rank = &mut self.ranks[r];
        if !std::mem::replace(&mut rank.complained[c as usize], true) {
            say(&format!(
                "mpirun: rank {r} (pid {}) {}; answered with an error (further ones are not reported)",
                rank.pid,
                c.text()
            ));
        }
    }

    /// When the first rank whose PMI connection closed before MPI_Finalize has been given up on.
    fn pmi_left_at(&self) -> Option<Instant> {
        self.ranks
            .iter()
            .filter(|r| r.status.is_none() && self.failure.is_none())
            .filter_map(|r| r.pmi_closed_at)
            .min()
            .map(|t| t + PMI_CLOSE_GRACE)
    }

    /// Whether some rank may still be running another MPI's program unnoticed: it is running
    /// and has not spoken PMI (those that have were looked at then).
    fn scan_wanted(&self) -> bool {
        self.failure.is_none()
            && (0..self.ranks.len()).any(|i| {
                self.ranks[i].status.is_none()
                    && !self.server_of(i).initialized(self.ranks[i].jrank)
            })
    }

    /// Looks for another MPI's library in the ranks that have not spoken PMI: a program that
    /// never will (Open MPI's) would otherwise run as a singleton or hang.
    fn scan_foreign(&mut self) {
        if !self.scan_wanted() {
            return;
        }
        let tree = ProcTree::read();
        for r in 0..self.ranks.len() {
            if self.ranks[r].status.is_some() || self.server_of(r).initialized(self.ranks[r].jrank)
            {
                continue;
            }
            if let Some(found) = self.inspect(r, &tree) {
                self.fail_foreign(r, found);
                return;
            }
        }
    }

    /// Rank `r`'s processes (itself, then what it started) with another MPI's library loaded.
    /// Only for an unreaped rank, whose pid is still its own.
    fn inspect(&self, r: usize, tree: &ProcTree) -> Option<Found> {
        let rank = &self.ranks[r];
        // A remote rank's pid is another host's.
        if rank.status.is_some() || matches!(rank.proc_, Proc::Remote(_)) {
            return None;
        }
        running::inspect(&tree.tree(rank.pid))
    }

    /// Tears the job down for a foreign program. The ranks' own children (the real program under
    /// a script or `sh -c`) are not ranks: they get SIGKILL now, or they would outlive the job.
    fn fail_foreign(&mut self, r: usize, found: Found) {
        let tree = ProcTree::read();
        for rank in self
            .ranks
            .iter()
            .filter(|k| k.status.is_none() && matches!(k.proc_, Proc::Local(_)))
        {
            for &pid in &tree.tree(rank.pid)[1..] {
                // Not our children, so not held for us: a pid could be reused between reading
                // the tree and this call, a window of microseconds against a pid space that
                // takes far longer to wrap.
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        let pid = self.ranks[r].pid;
        self.fail(
            Failure::Foreign {
                rank: r,
                pid,
                found,
            },
            Signal::SIGTERM,
        );
    }

    fn check_timers(&mut self, now: Instant) {
        if self.pmi_left_at().is_some_and(|t| now >= t) {
            self.reap(); // an exit is the better explanation, if there is one
            let left = (0..self.ranks.len()).find(|&r| {
                let rank = &self.ranks[r];
                rank.status.is_none()
                    && rank
                        .pmi_closed_at
                        .is_some_and(|t| now >= t + PMI_CLOSE_GRACE)
            });
            if let (Some(rank), None) = (left, &self.failure) {
                let pid = self.ranks[rank].pid;
                self.fail(Failure::LeftPmi { rank, pid }, Signal::SIGTERM);
            }
        }
        if self.failure.is_none() && now >= self.foreign_scan.due() {
            self.scan_foreign();
            self.foreign_scan.advance(now);
        }
        if let Some((at, secs)) = self.deadline {
            if self.failure.is_none() && now >= at {
                let ranks = self.running();
                self.fail(Failure::Timeout { secs, ranks }, Signal::SIGTERM);
            }
        }
        if self.kill_at.is_some_and(|t| now >= t) {
            self.signal_all(Signal::SIGKILL);
            self.kill_at = None;
        }
    }

    /// The first failure: report it, signal every remaining rank, SIGKILL after the grace period.
    fn fail(&mut self, failure: Failure, sig: Signal) {
        let host = failure
            .rank()
            .and_then(|(r, _)| match self.ranks.get(r)?.proc_ {
                Proc::Remote(k) => Some(self.nodes[k].host.as_str()),
                Proc::Local(_) => None,
            });
        say(&failure.message_on(host));
        self.failure = Some(failure);
        self.signal_all(sig);
        self.kill_at = Some(Instant::now() + GRACE);
    }

    fn signal_all(&mut self, sig: Signal) {
        for r in self.ranks.iter().filter(|r| r.status.is_none()) {
            if let Proc::Local(_) = r.proc_ {
                // Unreaped, so the pid is still ours (at worst a zombie): no risk of hitting another process.
                let _ = kill(Pid::from_raw(r.pid), sig);
            }
        }
        for n in &mut self.nodes {
            n.link
                .send(oob::kind::SIGNAL, oob::ALL, &(sig as i32).to_le_bytes());
            n.link.flush();
        }
    }

    fn kill_and_reap_now(&mut self) {
        for r in self.ranks.iter_mut().filter(|r| r.status.is_none()) {
            if let Proc::Local(child) = &mut r.proc_ {
                let _ = child.kill();
                r.status = child.wait().ok();
            }
        }
        self.end_nodes();
    }

    /// Frames from node daemon `k`: its ranks' starts, PMI, output and exits.
    fn on_node(&mut self, k: usize) {
        let frames = self.nodes[k].link.read_frames(READS_PER_TURN);
        let base = self.nodes[k].base;
        for f in frames {
            let r = base + f.rank as usize;
            let ours = self
                .ranks
                .get(r)
                .is_some_and(|x| matches!(x.proc_, Proc::Remote(n) if n == k));
            if !ours {
                continue;
            }
            match f.kind {
                oob::kind::STARTED => {
                    self.ranks[r].pid = std::str::from_utf8(&f.payload)
                        .ok()
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(0);
                }
                oob::kind::FAILED => {
                    if self.failure.is_none() {
                        let failure = Failure::LaunchFailed {
                            rank: r,
                            host: self.nodes[k].host.clone(),
                            why: String::from_utf8_lossy(&f.payload).into_owned(),
                        };
                        self.fail(failure, Signal::SIGTERM);
                    }
                }
                oob::kind::PMI | oob::kind::PMI_EOF => {
                    self.ranks[r]
                        .pmi
                        .feed(&f.payload, f.kind == oob::kind::PMI_EOF);
                    self.on_pmi(r, PollFlags::POLLIN);
                }
                oob::kind::OUT | oob::kind::ERR | oob::kind::OUT_EOF | oob::kind::ERR_EOF => {
                    let p = usize::from(matches!(f.kind, oob::kind::ERR | oob::kind::ERR_EOF));
                    let eof = matches!(f.kind, oob::kind::OUT_EOF | oob::kind::ERR_EOF);
                    self.ranks[r].pipes[p].feed(r, &mut self.fwd, &f.payload, eof);
                }
                oob::kind::EXIT if self.ranks[r].status.is_none() => {
                    let raw = f
                        .payload
                        .get(..4)
                        .map_or(255 << 8, |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                    self.on_exit(r, ExitStatus::from_raw(raw));
                }
                _ => {}
            }
        }
        if !self.nodes[k].link.is_open() {
            self.lost_node(k);
        }
    }

    /// Daemon `k`'s connection is gone: its unreaped ranks are lost with it.
    fn lost_node(&mut self, k: usize) {
        let lost: Vec<usize> = (0..self.ranks.len())
            .filter(|&r| {
                self.ranks[r].status.is_none()
                    && matches!(self.ranks[r].proc_, Proc::Remote(n) if n == k)
            })
            .collect();
        for &r in &lost {
            // Never to be heard of again: ended, for the job's accounting.
            self.ranks[r].status = Some(ExitStatus::from_raw(libc::SIGKILL));
            for p in &mut self.ranks[r].pipes {
                p.feed(r, &mut self.fwd, &[], true);
            }
        }
        if !lost.is_empty() && self.failure.is_none() {
            let failure = Failure::LostNode {
                host: self.nodes[k].host.clone(),
                ranks: lost.len(),
            };
            self.fail(failure, Signal::SIGTERM);
        }
    }

    /// Hands remote ranks' PMI replies to their daemons and writes what the links take.
    fn flush_nodes(&mut self) {
        if self.nodes.is_empty() {
            return;
        }
        for (r, rank) in self.ranks.iter_mut().enumerate() {
            if let Proc::Remote(k) = rank.proc_ {
                if let Some(bytes) = rank.pmi.take_out() {
                    let n = &mut self.nodes[k];
                    n.link.send(oob::kind::PMI, (r - n.base) as u32, &bytes);
                }
            }
        }
        for n in &mut self.nodes {
            n.link.flush();
        }
    }

    /// The job is over: close the daemons' connections (each then ends, killing whatever is
    /// left of its ranks) and reap them, SIGKILL after the grace period.
    fn end_nodes(&mut self) {
        for n in &mut self.nodes {
            n.link.close();
        }
        let until = Instant::now() + GRACE;
        for agent in self.nodes.iter_mut().filter_map(|n| n.agent.as_mut()) {
            loop {
                match agent.try_wait() {
                    Ok(None) if Instant::now() < until => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Ok(None) => {
                        let _ = agent.kill();
                        let _ = agent.wait();
                        break;
                    }
                    _ => break,
                }
            }
        }
        self.nodes.clear();
    }
}

/// A PMI-1 `cmd=init` request (parsed only for ranks that have not sent one yet).
fn is_init(line: &str) -> bool {
    crate::pmi_wire::Message::parse(line).cmd() == Some("init")
}
