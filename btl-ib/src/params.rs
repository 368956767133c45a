//! Tunables of the ib transport, as MCA parameters (`--mca btl_ib_buf_size 8192`, or the
//! environment variables `RMPI_MCA_<name>` / `<name>`), listed by `mpirun --mca-list`.

use crate::rcache::Mode;
use crate::verbs::DeviceChoice;

/// One tunable: name, default in words, meaning.
pub struct ParamInfo {
    pub name: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "btl",
        default: "self,sm,ib,tcp",
        meaning: "transports to use (self, sm, ib, tcp): sm within a node; between nodes ib \
                  when its device opens on every rank, else tcp; `^ib` excludes; `ib,self` or \
                  `tcp,self` forces that transport between ranks of one node",
    },
    ParamInfo {
        name: "btl_ib_device",
        default: "auto",
        meaning: "verbs provider: auto (the first RDMA device with an active port), verbs (the \
                  same, required), soft (the software provider: processes of one machine)",
    },
    ParamInfo {
        name: "btl_ib_buf_size",
        default: "8192",
        meaning: "bytes per send/receive bounce buffer, i.e. the largest fragment (>= 256)",
    },
    ParamInfo {
        name: "btl_ib_recv_bufs",
        default: "auto: 256 / peers, between 4 and 16",
        meaning: "receive buffers posted per peer, i.e. the send credits each peer gets",
    },
    ParamInfo {
        name: "btl_ib_send_bufs",
        default: "auto: 4 x recv_bufs, at least 64",
        meaning: "registered send bounce buffers shared by all peers",
    },
    ParamInfo {
        name: "btl_ib_leave_pinned",
        default: "auto",
        meaning: "registration cache: auto (on when memhook delivers memory-release events), \
                  1, 0, force (on even without events: stale registrations possible; tests)",
    },
    ParamInfo {
        name: "btl_ib_rcache_max_bytes",
        default: "auto: RLIMIT_MEMLOCK minus the bounce buffers, 1 GiB if unlimited",
        meaning: "bound on bytes the registration cache keeps registered; LRU eviction above it",
    },
    ParamInfo {
        name: "btl_ib_verbose",
        default: "0",
        meaning: "1: say which device is used, print the registration-cache counters at finalize",
    },
    ParamInfo {
        name: "btl_ib_debug_bad_rkey",
        default: "0",
        meaning: "fault injection for tests: rendezvous announces a corrupted rkey",
    },
];

/// The tunables, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub device: DeviceChoice,
    pub buf_size: usize,
    pub recv_bufs: usize,
    pub send_bufs: usize,
    pub leave_pinned: Mode,
    /// None: automatic (from RLIMIT_MEMLOCK).
    pub rcache_max_bytes: Option<usize>,
    pub verbose: bool,
    pub debug_bad_rkey: bool,
}

/// An MCA value from the environment: `RMPI_MCA_<name>` first, then `<name>`.
pub fn mca(name: &str) -> Option<String> {
    std::env::var(format!("RMPI_MCA_{name}"))
        .or_else(|_| std::env::var(name))
        .ok()
}

fn number(name: &str, v: &str) -> Result<usize, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("{name}={v}: expected a non-negative integer"))
}

fn flag(name: &str, v: &str) -> Result<bool, String> {
    match v.trim() {
        "0" | "false" | "no" | "" => Ok(false),
        "1" | "true" | "yes" => Ok(true),
        _ => Err(format!("{name}={v}: expected 0 or 1")),
    }
}

impl Params {
    /// From the environment, for a rank with `peers` peers over ib.
    pub fn from_env(peers: usize) -> Result<Params, String> {
        Params::resolve(peers, &|n| mca(n))
    }

    pub fn resolve(peers: usize, get: &dyn Fn(&str) -> Option<String>) -> Result<Params, String> {
        let device = match get("btl_ib_device") {
            Some(v) => DeviceChoice::parse(v.trim())?,
            None => DeviceChoice::Auto,
        };
        let buf_size = match get("btl_ib_buf_size") {
            Some(v) => number("btl_ib_buf_size", &v)?,
            None => 8192,
        };
        if !(256..=(1 << 20)).contains(&buf_size) {
            return Err(format!(
                "btl_ib_buf_size={buf_size}: must be between 256 and 1048576"
            ));
        }
        let recv_bufs = match get("btl_ib_recv_bufs").map(|v| number("btl_ib_recv_bufs", &v)) {
            Some(Ok(0)) | None => (256 / peers.max(1)).clamp(4, 16),
            Some(Ok(n)) if n < 2 => {
                return Err(format!("btl_ib_recv_bufs={n}: at least 2 are needed"))
            }
            Some(r) => r?,
        };
        let send_bufs = match get("btl_ib_send_bufs").map(|v| number("btl_ib_send_bufs", &v)) {
            Some(Ok(0)) | None => (4 * recv_bufs).max(64),
            Some(r) => r?,
        };
        let leave_pinned = match get("btl_ib_leave_pinned") {
            Some(v) => Mode::parse(v.trim())?,
            None => Mode::Auto,
        };
        let rcache_max_bytes = match get("btl_ib_rcache_max_bytes") {
            Some(v) => match number("btl_ib_rcache_max_bytes", &v)? {
                0 => None,
                n => Some(n),
            },
            None => None,
        };
        let verbose = match get("btl_ib_verbose") {
            Some(v) => flag("btl_ib_verbose", &v)?,
            None => false,
        };
        let debug_bad_rkey = match get("btl_ib_debug_bad_rkey") {
            Some(v) => flag("btl_ib_debug_bad_rkey", &v)?,
            None => false,
        };
        Ok(Params {
            device,
            buf_size,
            recv_bufs,
            send_bufs,
            leave_pinned,
            rcache_max_bytes,
            verbose,
            debug_bad_rkey,
        })
    }
}

/// The `btl` parameter: which transports may be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BtlSelection {
    pub self_: bool,
    pub sm: bool,
    pub ib: bool,
    pub tcp: bool,
}

impl BtlSelection {
    /// `self,sm,ib` style lists, or `^ib` style exclusions; `vader` is accepted for `sm` and
    /// `openib`/`uct` for `ib`, as Open MPI users type them.
    pub fn parse(v: &str) -> Result<BtlSelection, String> {
        let v = v.trim();
        let (exclude, list) = match v.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, v),
        };
        let mut named = BtlSelection {
            self_: false,
            sm: false,
            ib: false,
            tcp: false,
        };
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match name {
                "self" => named.self_ = true,
                "sm" | "vader" => named.sm = true,
                "ib" | "openib" | "uct" => named.ib = true,
                "tcp" => named.tcp = true,
                other => {
                    return Err(format!(
                        "btl={v}: unknown transport `{other}` (known: self, sm, ib, tcp)"
                    ))
                }
            }
        }
        Ok(if exclude {
            BtlSelection {
                self_: !named.self_,
                sm: !named.sm,
                ib: !named.ib,
                tcp: !named.tcp,
            }
        } else {
            named
        })
    }

    pub fn from_env() -> Result<BtlSelection, String> {
        match mca("btl") {
            Some(v) => BtlSelection::parse(&v),
            None => Ok(BtlSelection::ALL),
        }
    }

    pub const ALL: BtlSelection = BtlSelection {
        self_: true,
        sm: true,
        ib: true,
        tcp: true,
    };

    pub fn names(&self) -> String {
        let mut v = Vec::new();
        if self.self_ {
            v.push("self");
        }
        if self.sm {
            v.push("sm");
        }
        if self.ib {
            v.push("ib");
        }
        if self.tcp {
            v.push("tcp");
        }
        v.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |n| pairs.iter().find(|p| p.0 == n).map(|p| p.1.to_string())
    }

    #[test]
    fn defaults_scale_with_peers() {
        let p = Params::resolve(1, &with(&[])).unwrap();
        assert_eq!((p.recv_bufs, p.send_bufs, p.buf_size), (16, 64, 8192));
        let p = Params::resolve(63, &with(&[])).unwrap();
        assert_eq!(p.recv_bufs, 4);
        assert_eq!(p.device, DeviceChoice::Auto);
        assert_eq!(p.leave_pinned, Mode::Auto);
    }

    #[test]
    fn bad_values_are_named() {
        let e = Params::resolve(1, &with(&[("btl_ib_buf_size", "12")])).unwrap_err();
        assert!(e.contains("btl_ib_buf_size=12"), "{e}");
        let e = Params::resolve(1, &with(&[("btl_ib_device", "mlx")])).unwrap_err();
        assert!(e.contains("btl_ib_device=mlx"), "{e}");
        let e = Params::resolve(1, &with(&[("btl_ib_leave_pinned", "x")])).unwrap_err();
        assert!(e.contains("btl_ib_leave_pinned"), "{e}");
        let e = Params::resolve(1, &with(&[("btl_ib_recv_bufs", "1")])).unwrap_err();
        assert!(e.contains("btl_ib_recv_bufs=1"), "{e}");
    }

    #[test]
    fn btl_lists() {
        let s = BtlSelection::parse("ib,self").unwrap();
        assert_eq!((s.self_, s.sm, s.ib), (true, false, true));
        let s = BtlSelection::parse("^ib").unwrap();
        assert_eq!((s.self_, s.sm, s.ib), (true, true, false));
        let s = BtlSelection::parse("vader,self").unwrap();
        assert!(s.sm && s.self_ && !s.ib);
        let s = BtlSelection::parse("tcp,self").unwrap();
        assert!(s.tcp && s.self_ && !s.sm && !s.ib);
        assert!(BtlSelection::parse("^tcp").unwrap().ib);
        assert!(BtlSelection::parse("udp,self").unwrap_err().contains("udp"));
        assert_eq!(BtlSelection::ALL.names(), "self,sm,ib,tcp");
    }
}
