//! PMI-1 `mcmd=spawn` requests (MPI_Comm_spawn's), as MPICH's simple PMI sends them: one block of
//! `key=value` lines per command from `mcmd=spawn` to `endcmd`, `spawnssofar` counting up to
//! `totspawns`; the server answers once, after the last. A value is the rest of its line, so an
//! argument may hold spaces. Pure parsing.

/// One command to start.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cmd {
    pub nprocs: usize,
    pub execname: String,
    pub args: Vec<String>,
    /// `preput_key_i` / `preput_val_i`: put in the children's KVS (here: their environment).
    pub preput: Vec<(String, String)>,
    pub info: Vec<(String, String)>,
}

/// The blocks of one request received so far.
#[derive(Default)]
pub struct Pending {
    block: Option<Vec<(String, String)>>,
    done: Vec<Cmd>,
}

/// What one line did.
#[derive(Debug, PartialEq, Eq)]
pub enum Fed {
    /// Not part of a spawn request.
    NotMine,
    /// Taken; more to come.
    More,
    /// The request is complete.
    Done(Vec<Cmd>),
    /// Malformed: the request is dropped; the reason.
    Bad(String),
}

impl Pending {
    #[cfg(test)]
    pub fn active(&self) -> bool {
        self.block.is_some() || !self.done.is_empty()
    }

    pub fn feed(&mut self, line: &str) -> Fed {
        let line = line.trim_end_matches(['\n', '\r']);
        let Some(block) = self.block.as_mut() else {
            if line == "mcmd=spawn" {
                self.block = Some(Vec::new());
                return Fed::More;
            }
            return Fed::NotMine;
        };
        if line != "endcmd" {
            let (k, v) = line.split_once('=').unwrap_or((line, ""));
            block.push((k.to_string(), v.to_string()));
            return Fed::More;
        }
        let kv = self.block.take().expect("in a block");
        let get = |k: &str| kv.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        let num = |k: &str| get(k).and_then(|v| v.trim().parse::<usize>().ok());
        let (Some(nprocs), Some(execname), Some(tot), Some(sofar)) = (
            num("nprocs"),
            get("execname"),
            num("totspawns"),
            num("spawnssofar"),
        ) else {
            self.done.clear();
            return Fed::Bad(
                "spawn request without nprocs, execname, totspawns or spawnssofar".into(),
            );
        };
        let pairs = |kp: &str, vp: &str, n: usize| -> Vec<(String, String)> {
            (0..n)
                .filter_map(|i| {
                    Some((
                        get(&format!("{kp}{i}"))?.to_string(),
                        get(&format!("{vp}{i}"))?.to_string(),
                    ))
                })
                .collect()
        };
        let argcnt = num("argcnt").unwrap_or(0);
        let cmd = Cmd {
            nprocs,
            execname: execname.to_string(),
            args: (1..=argcnt)
                .map(|i| get(&format!("arg{i}")).unwrap_or("").to_string())
                .collect(),
            preput: pairs("preput_key_", "preput_val_", num("preput_num").unwrap_or(0)),
            info: pairs("info_key_", "info_val_", num("info_num").unwrap_or(0)),
        };
        self.done.push(cmd);
        if sofar >= tot {
            Fed::Done(std::mem::take(&mut self.done))
        } else {
            Fed::More
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_commands() {
        let mut p = Pending::default();
        assert_eq!(p.feed("cmd=get key=a\n"), Fed::NotMine);
        let block = |i: usize| {
            format!(
                "mcmd=spawn\nnprocs={i}\nexecname=./c{i}\ntotspawns=2\nspawnssofar={i}\nargcnt=2\n\
                 arg1=a b\narg2=\npreput_num=1\npreput_key_0=PARENT_ROOT_PORT_NAME\n\
                 preput_val_0=p\ninfo_num=1\ninfo_key_0=wdir\ninfo_val_0=/tmp\nendcmd\n"
            )
        };
        for l in block(1).lines() {
            assert_eq!(p.feed(l), Fed::More);
        }
        let mut last = Fed::More;
        for l in block(2).lines() {
            last = p.feed(l);
        }
        let Fed::Done(cmds) = last else {
            panic!("{last:?}")
        };
        assert_eq!(cmds.len(), 2);
        assert_eq!(cmds[1].nprocs, 2);
        assert_eq!(cmds[0].args, vec!["a b".to_string(), String::new()]);
        assert_eq!(cmds[0].preput[0].1, "p");
        assert_eq!(cmds[0].info, vec![("wdir".into(), "/tmp".into())]);
        assert!(!p.active());
    }
}
