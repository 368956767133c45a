//! A node daemon's share of PMI: the daemons are the inner level of a tree (as Hydra's proxies
//! and Open MPI's orteds are), so that mpirun's work per fence grows with the hosts, not with
//! the ranks.
//! - `get`s of keys published at the last fence are answered here from the node's copy of the
//!   KVS; a miss (a key put since, or never) goes on to mpirun, which judges it.
//! - `barrier_in`s are held until every rank of the node with an open PMI connection has entered,
//!   then go on together; mpirun releases the node with one `FENCE` frame that carries the keys
//!   put since the previous fence and the release line for every rank.
//! - Everything else (init, put, spawn, abort, finalize...) goes on to mpirun unchanged.
//!
//! Pure: the daemon's event loop (`orted.rs`) does the I/O. A PMI-1 client waits for each answer
//! before its next request, so answering some requests here never reorders a rank's answers.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::lines::LineBuf;
use crate::pmi_wire::Message;

/// Far above any legal PMI-1 line (vallen_max is 1024); mpirun judges longer ones.
const MAX_LINE: usize = 64 * 1024;

/// What becomes of one request line.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    /// Answer the rank with this line.
    Answer(String),
    /// Hold it: the rank entered the fence.
    Barrier,
    /// Pass the bytes on to mpirun.
    Forward,
}

/// The request stream of one rank: its partial line, and whether it is inside a multi-line
/// `mcmd=spawn ... endcmd` block (whose lines are arguments, never commands).
pub struct RankStream {
    lines: LineBuf,
    in_mcmd: bool,
}

impl Default for RankStream {
    fn default() -> Self {
        RankStream {
            lines: LineBuf::new(MAX_LINE),
            in_mcmd: false,
        }
    }
}

impl RankStream {
    /// Takes bytes from the rank and calls `f` on each complete line with its route.
    pub fn push(&mut self, kvs: &NodeKvs, bytes: &[u8], mut f: impl FnMut(&[u8], Route)) {
        self.lines.push(bytes);
        let in_mcmd = &mut self.in_mcmd;
        self.lines.drain_lines(|line| {
            let route = route(kvs, in_mcmd, line);
            f(line, route)
        });
    }

    /// The unterminated rest, at the rank's EOF (mpirun sees it as it would have).
    pub fn take_rest(&mut self) -> Option<Vec<u8>> {
        self.lines.take_rest()
    }
}

fn route(kvs: &NodeKvs, in_mcmd: &mut bool, line: &[u8]) -> Route {
    let text = String::from_utf8_lossy(line);
    if *in_mcmd {
        *in_mcmd = text.trim_end() != "endcmd";
        return Route::Forward;
    }
    if text.starts_with("mcmd=") {
        *in_mcmd = text.trim_end() != "endcmd";
        return Route::Forward;
    }
    let msg = Message::parse(&text);
    match msg.cmd() {
        Some("barrier_in") => Route::Barrier,
        Some("get") => match kvs.lookup(&msg) {
            Some(v) => Route::Answer(crate::pmi_server::get_found(v)),
            None => Route::Forward,
        },
        _ => Route::Forward,
    }
}

/// The node's copy of the job's KVS, as of the last fence.
#[derive(Default)]
pub struct NodeKvs {
    kvsname: Option<String>,
    map: HashMap<String, String>,
}

impl NodeKvs {
    fn lookup(&self, msg: &Message) -> Option<&str> {
        let ours = self.kvsname.as_deref()?;
        if msg.get("kvsname").is_some_and(|k| k != ours) {
            return None;
        }
        self.map.get(msg.get("key")?).map(String::as_str)
    }

    /// Takes a `FENCE` frame's payload (`fence_payload`); returns the line that releases each
    /// rank of the node.
    pub fn load(&mut self, payload: &[u8]) -> Result<String, String> {
        let v: Value = serde_json::from_slice(payload).map_err(|e| format!("bad fence: {e}"))?;
        let release = v["release"].as_str().ok_or("fence lacks release")?;
        let name = v["kvsname"].as_str().ok_or("fence lacks kvsname")?;
        self.kvsname = Some(name.to_string());
        for e in v["entries"].as_array().ok_or("fence lacks entries")? {
            if let (Some(k), Some(val)) = (e[0].as_str(), e[1].as_str()) {
                self.map.insert(k.to_string(), val.to_string());
            }
        }
        Ok(release.to_string())
    }
}

/// mpirun's `FENCE` frame: the keys put since the last one, and the release line.
pub fn fence_payload(kvsname: &str, entries: &[(String, String)], release: &str) -> Vec<u8> {
    json!({ "kvsname": kvsname, "entries": entries, "release": release })
        .to_string()
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(kvs: &NodeKvs, s: &mut RankStream, bytes: &[u8]) -> Vec<(String, Route)> {
        let mut v = Vec::new();
        s.push(kvs, bytes, |l, r| {
            v.push((String::from_utf8_lossy(l).into_owned(), r))
        });
        v
    }

    #[test]
    fn gets_are_answered_after_a_fence_and_misses_go_on() {
        let mut kvs = NodeKvs::default();
        let mut s = RankStream::default();
        // Before any fence nothing is known here.
        let r = routes(&kvs, &mut s, b"cmd=get kvsname=k1 key=a\n");
        assert_eq!(r[0].1, Route::Forward);
        let entries = vec![("a".to_string(), "1".to_string())];
        let release = kvs
            .load(&fence_payload("k1", &entries, "cmd=barrier_out\n"))
            .unwrap();
        assert_eq!(release, "cmd=barrier_out\n");
        let r = routes(
            &kvs,
            &mut s,
            b"cmd=get kvsname=k1 key=a\ncmd=get key=a\ncmd=get kvsname=k1 key=b\ncmd=get kvsname=other key=a\n",
        );
        let hit = Route::Answer("cmd=get_result rc=0 msg=success value=1\n".into());
        assert_eq!(r[0].1, hit);
        assert_eq!(r[1].1, hit);
        assert_eq!(r[2].1, Route::Forward);
        assert_eq!(r[3].1, Route::Forward);
        // A later fence replaces a value put again.
        let entries = vec![("a".to_string(), "2".to_string())];
        kvs.load(&fence_payload("k1", &entries, "x\n")).unwrap();
        let r = routes(&kvs, &mut s, b"cmd=get key=a\n");
        assert_eq!(
            r[0].1,
            Route::Answer("cmd=get_result rc=0 msg=success value=2\n".into())
        );
        assert!(kvs.load(b"{}").is_err());
    }

    #[test]
    fn lines_split_across_reads_and_spawn_blocks_pass_through() {
        let kvs = NodeKvs::default();
        let mut s = RankStream::default();
        assert!(routes(&kvs, &mut s, b"cmd=barr").is_empty());
        let r = routes(&kvs, &mut s, b"ier_in\ncmd=put key=x value=1\n");
        assert_eq!(r[0], ("cmd=barrier_in\n".into(), Route::Barrier));
        assert_eq!(r[1].1, Route::Forward);
        // An argument that reads like a command is still an argument.
        let r = routes(
            &kvs,
            &mut s,
            b"mcmd=spawn\nnprocs=1\narg1=a cmd=barrier_in\nendcmd\ncmd=barrier_in\n",
        );
        let fwd: Vec<&Route> = r.iter().map(|(_, r)| r).collect();
        assert_eq!(
            fwd,
            [
                &Route::Forward,
                &Route::Forward,
                &Route::Forward,
                &Route::Forward,
                &Route::Barrier
            ]
        );
        assert!(routes(&kvs, &mut s, b"cmd=fin").is_empty());
        assert_eq!(s.take_rest(), Some(b"cmd=fin".to_vec()));
    }
}
