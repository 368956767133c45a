//! The PMI-1 requests of dynamic processes, as MPICH's simple PMI sends them: `mcmd=spawn`
//! (one multi-line block per command, one `spawn_result` after the last) and the name service
//! (`publish_name`, `lookup_name`, `unpublish_name`).

use crate::error::{Error, ErrorClass, Result};
use crate::pmi::{parse_line, Pmi};

/// One command of MPI_Comm_spawn(_multiple).
#[derive(Clone, Debug, Default)]
pub struct SpawnCmd {
    pub command: String,
    pub args: Vec<String>,
    pub maxprocs: i32,
    /// Info keys passed to the launcher (`wdir`, `path`, ...).
    pub info: Vec<(String, String)>,
}

/// A value on its own line may hold spaces but not a line end.
fn one_line(what: &str, v: &str) -> Result<()> {
    if v.contains('\n') {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{what} contains a line end, which cannot be passed to the launcher"),
        ));
    }
    Ok(())
}

impl Pmi {
    /// Asks the launcher to start `cmds` with `port` in their environment (the key
    /// `PARENT_ROOT_PORT_NAME`, as MPICH names it).
    pub fn spawn(&mut self, cmds: &[SpawnCmd], port: &str) -> Result<()> {
        let mut req = String::new();
        for (i, c) in cmds.iter().enumerate() {
            one_line("the command", &c.command)?;
            req += &format!(
                "mcmd=spawn\nnprocs={}\nexecname={}\ntotspawns={}\nspawnssofar={}\nargcnt={}\n",
                c.maxprocs,
                c.command,
                cmds.len(),
                i + 1,
                c.args.len()
            );
            for (j, a) in c.args.iter().enumerate() {
                one_line("an argument", a)?;
                req += &format!("arg{}={a}\n", j + 1);
            }
            req +=
                &format!("preput_num=1\npreput_key_0=PARENT_ROOT_PORT_NAME\npreput_val_0={port}\n");
            req += &format!("info_num={}\n", c.info.len());
            for (j, (k, v)) in c.info.iter().enumerate() {
                one_line("an info value", v)?;
                req += &format!("info_key_{j}={k}\ninfo_val_{j}={v}\n");
            }
            req += "endcmd\n";
        }
        self.send(&req)?;
        let reply = self.recv()?;
        let kv = parse_line(&reply);
        if kv.get("cmd") != Some(&"spawn_result") {
            return Err(Error::new(
                ErrorClass::Spawn,
                format!("PMI: expected spawn_result, got: {}", reply.trim_end()),
            ));
        }
        match kv.get("rc") {
            Some(&"0") => Ok(()),
            _ => {
                // The reason is the rest of the line after `msg=` (it may hold spaces).
                let why = reply
                    .split_once("msg=")
                    .map_or("unknown reason", |(_, m)| m.trim_end());
                Err(Error::new(
                    ErrorClass::Spawn,
                    format!("the launcher could not start the processes: {why}"),
                ))
            }
        }
    }

    /// MPI_UNIVERSE_SIZE as the launcher gives it (None if it does not).
    pub fn universe_size(&mut self) -> Option<i32> {
        let r = self.call("cmd=get_universe_size\n", "universe_size").ok()?;
        parse_line(&r).get("size")?.parse().ok()
    }

    pub fn publish_name(&mut self, service: &str, port: &str) -> Result<()> {
        let r = self.call(
            &format!("cmd=publish_name service={service} port={port}\n"),
            "publish_result",
        )?;
        match parse_line(&r).get("rc") {
            Some(&"0") => Ok(()),
            _ => Err(Error::new(
                ErrorClass::Service,
                format!("service \"{service}\" is already published"),
            )),
        }
    }

    pub fn unpublish_name(&mut self, service: &str) -> Result<()> {
        let r = self.call(
            &format!("cmd=unpublish_name service={service}\n"),
            "unpublish_result",
        )?;
        match parse_line(&r).get("rc") {
            Some(&"0") => Ok(()),
            _ => Err(Error::new(
                ErrorClass::Service,
                format!("service \"{service}\" is not published"),
            )),
        }
    }

    pub fn lookup_name(&mut self, service: &str) -> Result<String> {
        let r = self.call(
            &format!("cmd=lookup_name service={service}\n"),
            "lookup_result",
        )?;
        let kv = parse_line(&r);
        match (kv.get("rc"), kv.get("port")) {
            (Some(&"0"), Some(p)) => Ok(p.to_string()),
            _ => Err(Error::new(
                ErrorClass::Name,
                format!("no service is published under the name \"{service}\""),
            )),
        }
    }
}
