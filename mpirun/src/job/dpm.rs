//! Dynamic processes in the running job: `mcmd=spawn` starts a new job (own world, KVS and
//! shared-memory segment) whose ranks join the same poll loop, so they share the timeout and
//! the teardown; and the name service (`publish_name`, `lookup_name`, `unpublish_name`).

use std::ffi::OsString;
use std::os::fd::AsFd;

use super::{Job, Rank};
use crate::orted::{App, NodeJob, NodePlacement};
use crate::pmi_server::PmiServer;
use crate::pmi_wire::{format, Message};
use crate::spawn::{spawn_child, Extra, Segment};
use crate::spawn_req::{Cmd, Fed};

impl Job {
    pub(super) fn server_of(&self, r: usize) -> &PmiServer {
        &self.servers[self.ranks[r].job]
    }

    /// Rank `r`'s request if it is one of dynamic processes: the reply (empty: none yet).
    pub(super) fn dpm_request(&mut self, r: usize, line: &str) -> Option<String> {
        match self.ranks[r].spawn.feed(line) {
            Fed::NotMine => {}
            Fed::More => return Some(String::new()),
            Fed::Bad(why) => {
                crate::report::say(&format!("mpirun: rank {r}: {why}"));
                return Some(spawn_result(Err(why)));
            }
            Fed::Done(cmds) => return Some(spawn_result(self.spawn_job(cmds))),
        }
        let msg = Message::parse(line);
        let service = msg.get("service").unwrap_or("").to_string();
        let reply = match msg.cmd()? {
            "publish_name" => {
                let port = msg.get("port").unwrap_or("");
                let ok =
                    !service.is_empty() && !port.is_empty() && !self.names.contains_key(&service);
                if ok {
                    self.names.insert(service, port.to_string());
                }
                format(&[
                    ("cmd", "publish_result"),
                    ("rc", if ok { "0" } else { "-1" }),
                ])
            }
            "unpublish_name" => {
                let ok = self.names.remove(&service).is_some();
                format(&[
                    ("cmd", "unpublish_result"),
                    ("rc", if ok { "0" } else { "-1" }),
                ])
            }
            "lookup_name" => match self.names.get(&service) {
                Some(p) => format(&[("cmd", "lookup_result"), ("rc", "0"), ("port", p)]),
                None => format(&[("cmd", "lookup_result"), ("rc", "-1")]),
            },
            _ => return None,
        };
        Some(reply)
    }

    /// Starts the commands of one spawn request as a new job; the error is why not (nothing of
    /// it is left running then).
    fn spawn_job(&mut self, cmds: Vec<Cmd>) -> Result<(), String> {
        let n: usize = cmds.iter().map(|c| c.nprocs).sum();
        if n == 0 {
            return Err("no processes to start".into());
        }
        if self.failure.is_some() {
            return Err("the job is being torn down".into());
        }
        // Resolve every program first, so that a bad name starts nothing.
        let mut progs = Vec::new();
        for c in &cmds {
            let info = |k: &str| {
                c.info
                    .iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.clone())
            };
            let wdir = info("wdir").map(std::path::PathBuf::from);
            // The info key `path` first, then PATH, then the working directory.
            let mut path = OsString::new();
            if let Some(p) = info("path") {
                path.push(p);
                path.push(":");
            }
            path.push(std::env::var_os("PATH").unwrap_or_default());
            path.push(":.");
            let name = OsString::from(&c.execname);
            let found = match &wdir {
                Some(d) if !c.execname.starts_with('/') && c.execname.contains('/') => {
                    crate::program::resolve(d.join(&c.execname).as_os_str(), Some(&path))
                }
                _ => crate::program::resolve(&name, Some(&path)),
            };
            let prog = found.map_err(|e| format!("cannot spawn: {e}"))?;
            progs.push((prog, wdir));
        }
        if self.agent.is_some() {
            return self.spawn_on_hosts(&cmds, progs, n);
        }
        let mut spec = self.spec.clone();
        let lookup = |name: &str| {
            spec.mca_value(name)
                .map(str::to_string)
                .or_else(|| std::env::var(format!("RMPI_MCA_{name}")).ok())
                .or_else(|| std::env::var(name).ok())
        };
        let params = btl_sm::Params::resolve(n, &lookup).map_err(|e| e.to_string())?;
        let memfd = btl_sm::Segment::create_memfd(&params)
            .map_err(|e| format!("cannot create the shared-memory segment: {e}"))?;
        let ncores = std::thread::available_parallelism().map_or(1, |c| c.get());
        spec.oversubscribed = self.running() + n > ncores;
        // The placement plan is the first job's: the children are not bound.
        spec.bindings.clear();
        spec.localities.clear();
        spec.job_locality = None;
        spec.n = n;
        let job = self.servers.len();
        let mut started = Vec::new();
        let mut rank = 0;
        for (i, (c, (prog, wdir))) in cmds.iter().zip(progs).enumerate() {
            spec.program = prog;
            spec.argv0 = OsString::from(&c.execname);
            spec.args = c.args.iter().map(OsString::from).collect();
            let extra = Extra {
                size: Some(n),
                env: child_env(c, i),
                wdir,
            };
            let seg = Segment {
                fd: memfd.as_fd(),
                size: btl_sm::segment_size(&params),
            };
            for _ in 0..c.nprocs {
                match spawn_child(&spec, seg, rank, &extra) {
                    Ok(s) => started.push(s),
                    Err(e) => {
                        for mut s in started {
                            let _ = s.child.kill();
                            let _ = s.child.wait();
                        }
                        return Err(format!("cannot start {}: {e}", c.execname));
                    }
                }
                rank += 1;
            }
        }
        let mut server = PmiServer::new(n, format!("rmpi_{}_{job}", std::process::id()));
        server.set_universe(self.spec.universe);
        self.servers.push(server);
        self.segments.push(memfd);
        for (jrank, s) in started.into_iter().enumerate() {
            self.ranks.push(Rank::local(s, job, jrank));
        }
        Ok(())
    }
}

impl Job {
    /// A multi-host job's spawn: the children go to the job's hosts (`spawn_hosts.rs`), one
    /// new daemon per host they use, which starts them and relays their PMI, output and exits
    /// as the first job's daemons do; parents and children meet over TCP where they do not
    /// share a host (libmpi's dpm).
    fn spawn_on_hosts(
        &mut self,
        cmds: &[Cmd],
        progs: Vec<(std::path::PathBuf, Option<std::path::PathBuf>)>,
        n: usize,
    ) -> Result<(), String> {
        let mut busy = vec![0; self.hosts.len()];
        for r in self.ranks.iter().filter(|r| r.status.is_none()) {
            if let super::Proc::Remote(k) = r.proc_ {
                if let Some(h) = self.hosts.iter().position(|h| h.name == self.nodes[k].host) {
                    busy[h] += 1;
                }
            }
        }
        let wanted: Vec<(usize, Option<&str>)> = cmds
            .iter()
            .map(|c| {
                let host = c.info.iter().find(|(k, _)| k == "host");
                (c.nprocs, host.map(|(_, v)| v.as_str()))
            })
            .collect();
        let host_of = super::spawn_hosts::place(&self.hosts, &busy, &wanted)?;
        let app_of: Vec<usize> = cmds
            .iter()
            .enumerate()
            .flat_map(|(i, c)| std::iter::repeat_n(i, c.nprocs))
            .collect();
        let mut apps = Vec::new();
        for (i, (c, (prog, wdir))) in cmds.iter().zip(&progs).enumerate() {
            let utf8 = |p: &std::path::Path| {
                p.to_str().map(str::to_string).ok_or(format!(
                    "{} is not UTF-8, which a multi-host launch needs",
                    p.display()
                ))
            };
            apps.push(App {
                program: utf8(prog)?,
                argv0: c.execname.clone(),
                args: c.args.clone(),
                env: child_env(c, i),
                wdir: wdir.as_deref().map(utf8).transpose()?,
            });
        }
        // One daemon per host used, in order of first use; `node_of` numbers them.
        let mut used: Vec<usize> = Vec::new();
        for &h in &host_of {
            if !used.contains(&h) {
                used.push(h);
            }
        }
        let node_of: Vec<usize> = host_of
            .iter()
            .map(|h| used.iter().position(|u| u == h).expect("used"))
            .collect();
        let mut spec = self.spec.clone();
        spec.n = n;
        let mut jobs = Vec::new();
        for node in 0..used.len() {
            let ranks: Vec<usize> = (0..n).filter(|&r| node_of[r] == node).collect();
            let mut j = NodeJob::new(&spec, ranks.clone(), &NodePlacement::default())?;
            j.apps = apps.clone();
            j.app_of = ranks.iter().map(|&r| app_of[r]).collect();
            jobs.push(j);
        }
        let names: Vec<&str> = used.iter().map(|&h| self.hosts[h].name.as_str()).collect();
        let agent = self.agent.as_ref().expect("a multi-host job has its agent");
        let nodes = crate::plm::start_daemons(&names, &jobs, agent, None)?;
        let job = self.servers.len();
        let mut server = PmiServer::new(n, format!("rmpi_{}_{job}", std::process::id()));
        server.set_universe(self.spec.universe);
        server.set_mapping(crate::ras::process_mapping(&node_of));
        server.keep_journal();
        self.servers.push(server);
        let (first_node, base) = (self.nodes.len(), self.ranks.len());
        for mut node in nodes {
            node.base = base;
            self.nodes.push(node);
        }
        for (jrank, &node) in node_of.iter().enumerate() {
            self.ranks.push(Rank::remote(first_node + node, job, jrank));
        }
        Ok(())
    }
}

/// What a child of spawn command `i` finds in its environment: MPI_APPNUM and the parents'
/// port.
fn child_env(c: &Cmd, i: usize) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vec![("RMPI_APPNUM".into(), i.to_string())];
    if let Some((_, port)) = c.preput.iter().find(|(k, _)| k == "PARENT_ROOT_PORT_NAME") {
        env.push(("RMPI_PARENT_PORT".into(), port.clone()));
    }
    env
}

fn spawn_result(r: Result<(), String>) -> String {
    match r {
        Ok(()) => format(&[("cmd", "spawn_result"), ("rc", "0")]),
        // The reason last: the client takes the rest of the line after `msg=`.
        Err(why) => format(&[("cmd", "spawn_result"), ("rc", "-1"), ("msg", &why)]),
    }
}
