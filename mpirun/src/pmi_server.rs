//! The PMI-1 server's state: one job-wide KVS, the barrier, and who called init/finalize.
//! Pure: takes request lines, returns what to send; the event loop does the I/O.

use std::collections::HashMap;

use crate::pmi_wire::{format, Message};

pub const KVSNAME_MAX: usize = 256;
pub const KEYLEN_MAX: usize = 64;
pub const VALLEN_MAX: usize = 1024;
/// What one rank may hold in the KVS: far above what libmpi puts (a few keys per rank), low
/// enough that a rank flooding puts cannot exhaust mpirun's memory (1024 ranks: 1 GiB at most).
pub const KEYS_PER_RANK: usize = 4096;
pub const BYTES_PER_RANK: usize = 1 << 20;

/// Why a request was refused, when that means the client is broken (not, say, a `get` of a key
/// nobody put yet): the event loop reports the first of each kind per rank on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Complaint {
    Malformed,
    Unknown,
    BadPut,
    KvsFull,
    Version,
    TooLong,
}

impl Complaint {
    pub const ALL: usize = 6;

    pub fn text(self) -> &'static str {
        match self {
            Complaint::Malformed => "sent a PMI request without cmd=",
            Complaint::Unknown => "sent an unknown PMI command",
            Complaint::BadPut => "sent a PMI put with a missing, empty or over-long key or value",
            Complaint::KvsFull => {
                "put more into the PMI key-value space than a rank may \
                                   (4096 keys, 1 MiB)"
            }
            Complaint::Version => "asked for a PMI version other than 1",
            Complaint::TooLong => "sent a PMI request line longer than 64 KiB",
        }
    }
}

/// What the event loop must do after one request.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// Send this line to the requesting rank.
    Reply(String),
    /// Send this line to every rank (barrier release).
    ReplyAll(String),
    /// The rank called `PMI_Abort`: tear the job down.
    Abort { code: i32, message: Option<String> },
    /// Nothing to send (yet).
    None,
}

pub struct PmiServer {
    size: usize,
    /// MPI_UNIVERSE_SIZE (`get_universe_size`); the job's size unless set.
    universe: usize,
    kvsname: String,
    /// Key -> (the rank that put it, or None for mpirun's own, value).
    kvs: HashMap<String, (Option<usize>, String)>,
    /// Keys and key+value bytes each rank holds in `kvs`.
    held: Vec<(usize, usize)>,
    complaint: Option<Complaint>,
    in_barrier: Vec<bool>,
    waiting: usize,
    initialized: Vec<bool>,
    finalized: Vec<bool>,
    /// Keys put since the last `take_published`, when node daemons hold copies of the KVS.
    journal: Option<Vec<String>>,
}

/// The answer to a `get` that found `value` (also given by the node daemons, `pmi_relay.rs`).
pub fn get_found(value: &str) -> String {
    format(&[
        ("cmd", "get_result"),
        ("rc", "0"),
        ("msg", "success"),
        ("value", value),
    ])
}

impl PmiServer {
    pub fn new(size: usize, kvsname: String) -> Self {
        let mut kvs = HashMap::new();
        // One node holding all N ranks, in Hydra's notation.
        kvs.insert(
            "PMI_process_mapping".to_string(),
            (None, format!("(vector,(0,1,{size}))")),
        );
        PmiServer {
            size,
            universe: size,
            kvsname,
            kvs,
            held: vec![(0, 0); size],
            complaint: None,
            in_barrier: vec![false; size],
            waiting: 0,
            initialized: vec![false; size],
            finalized: vec![false; size],
            journal: None,
        }
    }

    /// From now on, record what is put, for `take_published` (a job with node daemons).
    pub fn keep_journal(&mut self) {
        self.journal = Some(self.kvs.keys().cloned().collect());
    }

    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// The keys put since the last call (all of them the first time), with their values now.
    pub fn take_published(&mut self) -> Vec<(String, String)> {
        let Some(j) = self.journal.as_mut() else {
            return Vec::new();
        };
        let mut keys = std::mem::take(j);
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter()
            .filter_map(|k| self.kvs.get(&k).map(|(_, v)| (k.clone(), v.clone())))
            .collect()
    }

    /// The ranks' hosts, in Hydra's notation (`ras::process_mapping`).
    pub fn set_mapping(&mut self, mapping: String) {
        let key = "PMI_process_mapping".to_string();
        if let Some(j) = self.journal.as_mut() {
            j.push(key.clone());
        }
        self.kvs.insert(key, (None, mapping));
    }

    pub fn set_universe(&mut self, n: usize) {
        self.universe = n.max(self.size);
    }

    pub fn initialized(&self, rank: usize) -> bool {
        self.initialized[rank]
    }

    pub fn finalized(&self, rank: usize) -> bool {
        self.finalized[rank]
    }

    /// Why the last request handled was refused, if it shows a broken client.
    pub fn take_complaint(&mut self) -> Option<Complaint> {
        self.complaint.take()
    }

    /// The answer to a request line over 64 KiB (dropped unread).
    pub fn too_long(&mut self) -> Action {
        self.complaint = Some(Complaint::TooLong);
        Action::Reply(format(&[
            ("cmd", "error"),
            ("rc", "-1"),
            ("msg", "line_too_long"),
        ]))
    }

    /// Handles one request line from `rank`.
    pub fn handle(&mut self, rank: usize, line: &str) -> Action {
        let msg = Message::parse(line);
        let Some(cmd) = msg.cmd() else {
            if msg.is_empty() {
                return Action::None;
            }
            self.complaint = Some(Complaint::Malformed);
            return Action::Reply(format(&[
                ("cmd", "error"),
                ("rc", "-1"),
                ("msg", "missing_cmd"),
            ]));
        };
        let reply = match cmd {
            "init" => {
                // The simple wire protocol is version 1; anything else is refused.
                let ok = matches!(msg.get("pmi_version"), None | Some("1"));
                if ok {
                    self.initialized[rank] = true;
                } else {
                    self.complaint = Some(Complaint::Version);
                }
                format(&[
                    ("cmd", "response_to_init"),
                    ("pmi_version", "1"),
                    ("pmi_subversion", "1"),
                    ("rc", if ok { "0" } else { "-1" }),
                ])
            }
            "get_maxes" => format(&[
                ("cmd", "maxes"),
                ("kvsname_max", &KVSNAME_MAX.to_string()),
                ("keylen_max", &KEYLEN_MAX.to_string()),
                ("vallen_max", &VALLEN_MAX.to_string()),
                ("rc", "0"),
            ]),
            "get_appnum" => format(&[("cmd", "appnum"), ("appnum", "0"), ("rc", "0")]),
            "get_my_kvsname" => format(&[
                ("cmd", "my_kvsname"),
                ("kvsname", &self.kvsname),
                ("rc", "0"),
            ]),
            "get_universe_size" => format(&[
                ("cmd", "universe_size"),
                ("size", &self.universe.to_string()),
                ("rc", "0"),
            ]),
            "put" => self.put(rank, &msg),
            "get" => self.get(&msg),
            "barrier_in" => return self.barrier_in(rank),
            "finalize" => {
                self.finalized[rank] = true;
                format(&[("cmd", "finalize_ack"), ("rc", "0")])
            }
            "abort" => {
                let code = msg
                    .get("exitcode")
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(1);
                let message = msg.get("message").map(str::to_string);
                return Action::Abort { code, message };
            }
            other => {
                self.complaint = Some(Complaint::Unknown);
                format(&[
                    ("cmd", &format!("{other}_result")),
                    ("rc", "-1"),
                    ("msg", "unknown_command"),
                ])
            }
        };
        Action::Reply(reply)
    }

    fn put(&mut self, rank: usize, msg: &Message) -> String {
        let fail = |why: &str| format(&[("cmd", "put_result"), ("rc", "-1"), ("msg", why)]);
        if let Some(err) = self.check_kvsname(msg) {
            return fail(err);
        }
        self.complaint = Some(Complaint::BadPut);
        let (Some(key), Some(value)) = (msg.get("key"), msg.get("value")) else {
            return fail("missing_key_or_value");
        };
        if key.is_empty() || key.len() > KEYLEN_MAX {
            return fail("invalid_key");
        }
        if value.len() > VALLEN_MAX {
            return fail("value_too_long");
        }
        self.complaint = None;
        let bytes = key.len() + value.len();
        let old = self
            .kvs
            .get(key)
            .map(|(owner, v)| (*owner, key.len() + v.len()));
        let (keys, held) = self.held[rank];
        let (keys, held) = match old {
            Some((Some(o), b)) if o == rank => (keys, held - b + bytes),
            _ => (keys + 1, held + bytes),
        };
        if keys > KEYS_PER_RANK || held > BYTES_PER_RANK {
            self.complaint = Some(Complaint::KvsFull);
            return fail("kvs_full");
        }
        if let Some((Some(o), b)) = old {
            if o != rank {
                self.held[o].0 -= 1;
                self.held[o].1 -= b;
            }
        }
        self.held[rank] = (keys, held);
        if let Some(j) = self.journal.as_mut() {
            j.push(key.to_string());
        }
        self.kvs
            .insert(key.to_string(), (Some(rank), value.to_string()));
        format(&[("cmd", "put_result"), ("rc", "0"), ("msg", "success")])
    }

    fn get(&self, msg: &Message) -> String {
        let fail = |why: &str| format(&[("cmd", "get_result"), ("rc", "-1"), ("msg", why)]);
        if let Some(err) = self.check_kvsname(msg) {
            return fail(err);
        }
        let Some(key) = msg.get("key") else {
            return fail("missing_key");
        };
        match self.kvs.get(key) {
            Some((_, v)) => get_found(v),
            None => fail(&format!("key_{key}_not_found")),
        }
    }

    /// A kvsname may be omitted; when given it must be ours.
    fn check_kvsname(&self, msg: &Message) -> Option<&'static str> {
        match msg.get("kvsname") {
            Some(k) if k != self.kvsname => Some("unknown_kvsname"),
            _ => None,
        }
    }

    fn barrier_in(&mut self, rank: usize) -> Action {
        // A repeated barrier_in from the same rank counts once.
        if !self.in_barrier[rank] {
            self.in_barrier[rank] = true;
            self.waiting += 1;
        }
        if self.waiting < self.size {
            return Action::None;
        }
        self.in_barrier.fill(false);
        self.waiting = 0;
        Action::ReplyAll(format(&[("cmd", "barrier_out")]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(a: Action) -> String {
        match a {
            Action::Reply(s) => s,
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn init_and_queries() {
        let mut s = PmiServer::new(3, "rmpi_42".into());
        assert!(!s.initialized(1));
        assert_eq!(
            reply(s.handle(1, "cmd=init pmi_version=1 pmi_subversion=1\n")),
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"
        );
        assert!(s.initialized(1));
        assert!(!s.initialized(0));
        assert_eq!(
            reply(s.handle(1, "cmd=get_maxes")),
            "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 rc=0\n"
        );
        assert_eq!(
            reply(s.handle(1, "cmd=get_appnum")),
            "cmd=appnum appnum=0 rc=0\n"
        );
        assert_eq!(
            reply(s.handle(1, "cmd=get_my_kvsname")),
            "cmd=my_kvsname kvsname=rmpi_42 rc=0\n"
        );
        assert_eq!(
            reply(s.handle(1, "cmd=get_universe_size")),
            "cmd=universe_size size=3 rc=0\n"
        );
    }

    #[test]
    fn init_with_wrong_version_is_refused() {
        let mut s = PmiServer::new(1, "k".into());
        assert_eq!(
            reply(s.handle(0, "cmd=init pmi_version=2 pmi_subversion=0")),
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1\n"
        );
        assert!(!s.initialized(0));
    }

    #[test]
    fn kvs_put_get_overwrite_missing() {
        let mut s = PmiServer::new(2, "k".into());
        assert_eq!(
            reply(s.handle(0, "cmd=put kvsname=k key=a value=1")),
            "cmd=put_result rc=0 msg=success\n"
        );
        assert_eq!(
            reply(s.handle(1, "cmd=get kvsname=k key=a")),
            "cmd=get_result rc=0 msg=success value=1\n"
        );
        s.handle(1, "cmd=put kvsname=k key=a value=2");
        assert_eq!(
            reply(s.handle(0, "cmd=get kvsname=k key=a")),
            "cmd=get_result rc=0 msg=success value=2\n"
        );
        assert_eq!(
            reply(s.handle(0, "cmd=get kvsname=k key=zz")),
            "cmd=get_result rc=-1 msg=key_zz_not_found\n"
        );
        assert_eq!(
            reply(s.handle(0, "cmd=get kvsname=k key=PMI_process_mapping")),
            "cmd=get_result rc=0 msg=success value=(vector,(0,1,2))\n"
        );
    }

    #[test]
    fn kvs_rejects_bad_requests() {
        let mut s = PmiServer::new(1, "k".into());
        let long_key = "k".repeat(KEYLEN_MAX + 1);
        let long_val = "v".repeat(VALLEN_MAX + 1);
        for (line, why) in [
            (
                "cmd=put kvsname=other key=a value=1".to_string(),
                "unknown_kvsname",
            ),
            ("cmd=put key=a".to_string(), "missing_key_or_value"),
            (format!("cmd=put key={long_key} value=1"), "invalid_key"),
            (format!("cmd=put key=a value={long_val}"), "value_too_long"),
        ] {
            assert_eq!(
                reply(s.handle(0, &line)),
                format!("cmd=put_result rc=-1 msg={why}\n")
            );
        }
        assert_eq!(
            reply(s.handle(0, "cmd=get")),
            "cmd=get_result rc=-1 msg=missing_key\n"
        );
    }

    #[test]
    fn a_rank_flooding_puts_is_refused_at_its_share() {
        let mut s = PmiServer::new(2, "k".into());
        let put =
            |s: &mut PmiServer, r, k: &str| reply(s.handle(r, &format!("cmd=put key={k} value=v")));
        for i in 0..KEYS_PER_RANK {
            assert!(put(&mut s, 0, &format!("k{i}")).contains("rc=0"));
        }
        assert_eq!(s.take_complaint(), None);
        assert_eq!(
            put(&mut s, 0, "one-more"),
            "cmd=put_result rc=-1 msg=kvs_full\n"
        );
        assert_eq!(s.take_complaint(), Some(Complaint::KvsFull));
        // Overwriting one's own key costs nothing more; the other rank has its own share.
        assert!(put(&mut s, 0, "k7").contains("rc=0"));
        assert!(put(&mut s, 1, "k8").contains("rc=0"));
        assert!(
            put(&mut s, 0, "one-more").contains("rc=0"),
            "k8 moved to rank 1's share"
        );
        let big = "v".repeat(VALLEN_MAX);
        let mut refused = false;
        for i in 0..2000 {
            let r = reply(s.handle(1, &format!("cmd=put key=b{i} value={big}")));
            if r.contains("kvs_full") {
                refused = true;
                assert!(i * (VALLEN_MAX + 4) > BYTES_PER_RANK / 2, "{i}");
                break;
            }
        }
        assert!(refused);
        assert_eq!(
            reply(s.handle(0, "cmd=get key=k8")),
            "cmd=get_result rc=0 msg=success value=v\n"
        );
    }

    #[test]
    fn broken_requests_are_complained_about() {
        let mut s = PmiServer::new(1, "k".into());
        for (line, c) in [
            ("key=1", Complaint::Malformed),
            ("cmd=frob", Complaint::Unknown),
            ("cmd=put key=", Complaint::BadPut),
            ("cmd=init pmi_version=2", Complaint::Version),
        ] {
            s.handle(0, line);
            assert_eq!(s.take_complaint(), Some(c), "{line}");
        }
        assert_eq!(
            s.too_long(),
            Action::Reply("cmd=error rc=-1 msg=line_too_long\n".into())
        );
        assert_eq!(s.take_complaint(), Some(Complaint::TooLong));
        s.handle(0, "cmd=get key=nobody");
        assert_eq!(
            s.take_complaint(),
            None,
            "a missing key is no sign of a broken client"
        );
    }

    #[test]
    fn barrier_releases_all_once_everyone_arrived() {
        let mut s = PmiServer::new(3, "k".into());
        assert_eq!(s.handle(0, "cmd=barrier_in"), Action::None);
        assert_eq!(s.handle(0, "cmd=barrier_in"), Action::None);
        assert_eq!(s.handle(2, "cmd=barrier_in"), Action::None);
        assert_eq!(
            s.handle(1, "cmd=barrier_in"),
            Action::ReplyAll("cmd=barrier_out\n".into())
        );
        // The next barrier starts from scratch.
        assert_eq!(s.handle(1, "cmd=barrier_in"), Action::None);
        assert_eq!(s.handle(0, "cmd=barrier_in"), Action::None);
        assert_eq!(
            s.handle(2, "cmd=barrier_in"),
            Action::ReplyAll("cmd=barrier_out\n".into())
        );
    }

    #[test]
    fn single_rank_barrier_is_immediate() {
        let mut s = PmiServer::new(1, "k".into());
        assert_eq!(
            s.handle(0, "cmd=barrier_in\n"),
            Action::ReplyAll("cmd=barrier_out\n".into())
        );
    }

    #[test]
    fn finalize_is_tracked() {
        let mut s = PmiServer::new(2, "k".into());
        assert_eq!(
            reply(s.handle(1, "cmd=finalize")),
            "cmd=finalize_ack rc=0\n"
        );
        assert!(s.finalized(1));
        assert!(!s.finalized(0));
    }

    #[test]
    fn abort_with_and_without_details() {
        let mut s = PmiServer::new(2, "k".into());
        assert_eq!(
            s.handle(1, "cmd=abort exitcode=7 message=bad things happened\n"),
            Action::Abort {
                code: 7,
                message: Some("bad things happened".into())
            }
        );
        assert_eq!(
            s.handle(0, "cmd=abort"),
            Action::Abort {
                code: 1,
                message: None
            }
        );
    }

    #[test]
    fn unknown_and_malformed() {
        let mut s = PmiServer::new(1, "k".into());
        assert_eq!(
            reply(s.handle(0, "cmd=spawn nprocs=2")),
            "cmd=spawn_result rc=-1 msg=unknown_command\n"
        );
        assert_eq!(
            reply(s.handle(0, "hello")),
            "cmd=error rc=-1 msg=missing_cmd\n"
        );
        assert_eq!(s.handle(0, "\n"), Action::None);
    }

    #[test]
    fn the_journal_lists_each_key_put_since_the_last_fence_once() {
        let mut s = PmiServer::new(2, "k".into());
        s.handle(0, "cmd=put key=early value=1");
        assert!(s.take_published().is_empty(), "no journal yet");
        s.keep_journal();
        s.set_mapping("(vector,(0,2,1))".into());
        s.handle(0, "cmd=put key=a value=1");
        s.handle(1, "cmd=put key=a value=2");
        s.handle(1, "cmd=put key=b value=3");
        let got = s.take_published();
        let keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["PMI_process_mapping", "a", "b", "early"]);
        assert_eq!(got[1].1, "2");
        assert!(s.take_published().is_empty());
        s.handle(0, "cmd=put key=b value=4");
        assert_eq!(s.take_published(), [("b".to_string(), "4".to_string())]);
    }
}
