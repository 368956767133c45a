//! Tunables of the tcp transport, as MCA parameters (`--mca btl_tcp_if_include eth0`, or the
//! environment variables `RMPI_MCA_<name>` / `<name>`), listed by `mpirun --mca-list`.

/// One tunable: name, default in words, meaning.
pub struct ParamInfo {
    pub name: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

/// Open MPI's default exclusion: loopback and PPP links.
pub const DEFAULT_EXCLUDE: &str = "127.0.0.1/8,sppp";

pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "btl_tcp_if_include",
        default: "(none)",
        meaning: "interfaces to use, comma-separated names or CIDR ranges (eth0,10.0.0.0/8); \
                  exclusive with btl_tcp_if_exclude",
    },
    ParamInfo {
        name: "btl_tcp_if_exclude",
        default: DEFAULT_EXCLUDE,
        meaning: "interfaces not to use, names or CIDR ranges; by default loopback is excluded \
                  unless no other interface is up (then loopback is used)",
    },
    ParamInfo {
        name: "btl_tcp_sndbuf",
        default: "4194304",
        meaning: "SO_SNDBUF of each connection in bytes (the kernel caps it at \
                  net.core.wmem_max); 0 leaves it to the kernel's autotuning",
    },
    ParamInfo {
        name: "btl_tcp_rcvbuf",
        default: "0",
        meaning: "SO_RCVBUF of each connection in bytes (capped at net.core.rmem_max); 0 (the \
                  default, as Open MPI's): the kernel's autotuning, which a fixed size turns off \
                  (4-32 KiB one-way 6-22 % faster with it; streams of 4-16 KiB 10-16 % slower)",
    },
    ParamInfo {
        name: "btl_tcp_max_frag",
        default: "131072",
        meaning: "largest rendezvous fragment in bytes (>= 1024): the streaming unit (an eager \
                  message goes whole in one frame, up to btl_tcp_eager_limit)",
    },
    ParamInfo {
        name: "btl_tcp_eager_limit",
        default: "131072",
        meaning: "largest message sent eagerly to a peer over tcp (bytes), in one frame; larger \
                  ones use rendezvous, which costs a round trip (at 128 KiB one way 38 -> 26 us \
                  eager across namespace hosts)",
    },
    ParamInfo {
        name: "btl_tcp_send_queue",
        default: "4194304",
        meaning: "bytes queued per peer before a send is refused until progress drains them",
    },
    ParamInfo {
        name: "btl_tcp_coalesce",
        default: "32768",
        meaning: "MPI_Isend messages up to this many bytes that follow another to the same peer \
                  with no progress between (a window) are held and written together at the next \
                  progress (any MPI call that waits or tests), batches of up to 128 KiB in \
                  sendmsg calls of up to 64000 bytes; 0 writes each at once",
    },
    ParamInfo {
        name: "btl_tcp_verbose",
        default: "0",
        meaning: "1: say which interfaces and addresses are used, and count fragments",
    },
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub if_include: Option<String>,
    pub if_exclude: Option<String>,
    pub sndbuf: usize,
    pub rcvbuf: usize,
    pub max_frag: usize,
    pub eager_limit: usize,
    pub send_queue: usize,
    pub coalesce: usize,
    pub verbose: bool,
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

/// Eager up to 128 KiB: across two namespace hosts (unmodified OSU 5.3 osu_latency, medians of
/// 4-7 interleaved rounds, probe 52-80 ns) 128 KiB took 34-38 us one way by rendezvous and
/// 25-27 us eager, read into place. Open MPI's btl tcp is at 64 KiB but sends that much with its
/// rendezvous request.
pub const DEFAULT_EAGER_LIMIT: usize = 128 << 10;

/// Room for the pml's match header in an eager frame.
const EAGER_HEADROOM: usize = 64;

impl Params {
    /// The largest frame: a rendezvous fragment, or a whole eager message and its header.
    pub fn max_frame(&self) -> usize {
        self.max_frag.max(self.eager_limit + EAGER_HEADROOM)
    }

    pub fn from_env() -> Result<Params, String> {
        Params::resolve(&|n| mca(n))
    }

    pub fn resolve(get: &dyn Fn(&str) -> Option<String>) -> Result<Params, String> {
        let num = |name: &str, default: usize| match get(name) {
            Some(v) => number(name, &v),
            None => Ok(default),
        };
        let text = |name: &str| get(name).map(|v| v.trim().to_string());
        let if_include = text("btl_tcp_if_include").filter(|v| !v.is_empty());
        let if_exclude = text("btl_tcp_if_exclude");
        if if_include.is_some() && if_exclude.is_some() {
            // As Open MPI: the two lists together are ambiguous.
            return Err("btl_tcp_if_include and btl_tcp_if_exclude are mutually exclusive".into());
        }
        let max_frag = num("btl_tcp_max_frag", 128 << 10)?;
        if !(1024..=(64 << 20)).contains(&max_frag) {
            return Err(format!(
                "btl_tcp_max_frag={max_frag}: must be between 1024 and 67108864"
            ));
        }
        let eager_limit = num("btl_tcp_eager_limit", DEFAULT_EAGER_LIMIT)?;
        if eager_limit > 64 << 20 {
            return Err(format!(
                "btl_tcp_eager_limit={eager_limit}: must be at most 67108864"
            ));
        }
        let verbose = match text("btl_tcp_verbose").as_deref() {
            None | Some("0" | "false" | "no" | "") => false,
            Some("1" | "true" | "yes") => true,
            Some(v) => return Err(format!("btl_tcp_verbose={v}: expected 0 or 1")),
        };
        Ok(Params {
            if_include,
            if_exclude,
            sndbuf: num("btl_tcp_sndbuf", 4 << 20)?,
            rcvbuf: num("btl_tcp_rcvbuf", 0)?,
            max_frag,
            eager_limit,
            send_queue: num("btl_tcp_send_queue", 4 << 20)?,
            coalesce: num("btl_tcp_coalesce", 32 << 10)?,
            verbose,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |n| pairs.iter().find(|p| p.0 == n).map(|p| p.1.to_string())
    }

    #[test]
    fn defaults_and_errors() {
        let p = Params::resolve(&with(&[])).unwrap();
        assert_eq!(
            (p.max_frag, p.sndbuf, p.if_include.clone()),
            (128 << 10, 4 << 20, None)
        );
        let e = Params::resolve(&with(&[
            ("btl_tcp_if_include", "lo"),
            ("btl_tcp_if_exclude", "eth0"),
        ]));
        assert!(e.unwrap_err().contains("mutually exclusive"));
        assert_eq!(p.eager_limit, 128 << 10);
        // A whole eager message and its header fit one frame; rendezvous pieces stay max_frag.
        assert_eq!(p.max_frame(), (128 << 10) + 64);
        let big = Params::resolve(&with(&[("btl_tcp_eager_limit", "1024")])).unwrap();
        assert_eq!(big.max_frame(), 128 << 10);
        let e = Params::resolve(&with(&[("btl_tcp_max_frag", "10")])).unwrap_err();
        assert!(e.contains("btl_tcp_max_frag=10"), "{e}");
        let e = Params::resolve(&with(&[("btl_tcp_eager_limit", "1073741824")])).unwrap_err();
        assert!(e.contains("must be at most"), "{e}");
    }
}
