//! Open MPI's placement options, parsed: `--map-by`, `--bind-to`, `--rank-by`, `--cpu-set`.
//! Errors are one user-facing line naming the option and what it accepts.

use super::Level;

/// Where ranks go (`--map-by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapping {
    /// Rank i on slot (core) i: `slot`, `node` (one node), and the default for np <= 2 (`core`).
    Slots,
    /// Rank i on core i.
    Core,
    /// Rank i on hardware thread i.
    Hwthread,
    /// Round robin over the objects of a level, the next free core in each.
    ByObject(Level),
    /// `ppr:N:object`: N ranks in each object of the level, in order.
    PerResource(usize, Level),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapPolicy {
    pub mapping: Mapping,
    /// Whether the user named it (the default binding follows an explicit mapping object).
    pub given: bool,
    /// `:PE=n`: cores per rank.
    pub pe: usize,
    /// `:oversubscribe` / `:nooversubscribe`, when given.
    pub oversubscribe: Option<bool>,
}

/// What each rank is bound to (`--bind-to`); `None` in `Bind::To` means not bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindPolicy {
    pub level: Option<Level>,
    pub overload_allowed: bool,
}

/// The whole placement request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub map: MapPolicy,
    /// `None`: Open MPI's default (see `map::default_binding`).
    pub bind: Option<BindPolicy>,
    /// `--rank-by`; `None`: mapping order.
    pub rank_by: Option<Level>,
    /// `--cpu-set`: the OS indexes of the PUs the job may use.
    pub cpu_set: Option<Vec<usize>>,
    /// `--use-hwthread-cpus`: a slot is a hardware thread, not a core.
    pub hwthread_cpus: bool,
}

impl Policy {
    /// Nothing asked for: Open MPI's defaults throughout.
    pub fn unspecified() -> Policy {
        Policy {
            map: MapPolicy {
                mapping: Mapping::Slots,
                given: false,
                pe: 1,
                oversubscribe: None,
            },
            bind: None,
            rank_by: None,
            cpu_set: None,
            hwthread_cpus: false,
        }
    }
}

const OBJECTS: &str = "hwthread, core, l1cache, l2cache, l3cache, numa, package (or socket)";

/// An object level by Open MPI's name.
fn level(name: &str) -> Option<Level> {
    Some(match name {
        "hwthread" => Level::Pu,
        "core" => Level::Core,
        "l1cache" => Level::L1,
        "l2cache" => Level::L2,
        "l3cache" => Level::L3,
        "numa" => Level::Numa,
        "socket" | "package" => Level::Package,
        "node" | "board" => Level::Machine,
        _ => return None,
    })
}

pub fn parse_map_by(s: &str) -> Result<MapPolicy, String> {
    let bad = |why: &str| format!("invalid --map-by '{s}': {why}");
    let lower = s.to_ascii_lowercase();
    let mut parts = lower.split(':');
    let head = parts.next().unwrap_or("");
    let mut policy = MapPolicy {
        mapping: Mapping::Slots,
        given: true,
        pe: 1,
        oversubscribe: None,
    };
    policy.mapping = match head {
        "slot" | "node" | "board" => Mapping::Slots,
        "core" => Mapping::Core,
        "hwthread" => Mapping::Hwthread,
        "ppr" => {
            let n = parts.next().and_then(|n| n.parse::<usize>().ok()).filter(|&n| n > 0);
            let obj = parts.next().and_then(level);
            match (n, obj) {
                (Some(n), Some(l)) => Mapping::PerResource(n, l),
                _ => return Err(bad(&format!("expected ppr:N:OBJECT with N >= 1 and OBJECT one of {OBJECTS}, node"))),
            }
        }
        other => match level(other) {
            Some(l) => Mapping::ByObject(l),
            None => {
                return Err(bad(&format!(
                    "expected slot, node, ppr:N:OBJECT or one of {OBJECTS}, then optional :PE=n, :span, :oversubscribe"
                )))
            }
        },
    };
    for m in parts {
        if let Some(n) = m.strip_prefix("pe=") {
            policy.pe = n
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad("PE=n needs a whole number of cores n >= 1"))?;
        } else if m == "oversubscribe" {
            policy.oversubscribe = Some(true);
        } else if m == "nooversubscribe" {
            policy.oversubscribe = Some(false);
        } else if m == "span" || m == "fill" {
            // One node: spanning all nodes' objects as one list changes nothing.
        } else {
            return Err(bad(&format!(
                "unknown modifier '{m}' (expected PE=n, span, oversubscribe or nooversubscribe)"
            )));
        }
    }
    Ok(policy)
}

pub fn parse_bind_to(s: &str) -> Result<BindPolicy, String> {
    let lower = s.to_ascii_lowercase();
    let mut parts = lower.split(':');
    let head = parts.next().unwrap_or("");
    let level = match head {
        "none" => None,
        other => match level(other).filter(|&l| l != Level::Machine) {
            Some(l) => Some(l),
            None => {
                return Err(format!(
                    "invalid --bind-to '{s}': expected none or one of {OBJECTS}, then optional :overload-allowed"
                ))
            }
        },
    };
    let mut bind = BindPolicy {
        level,
        overload_allowed: false,
    };
    for q in parts {
        match q {
            "overload-allowed" => bind.overload_allowed = true,
            "if-supported" => {}
            other => {
                return Err(format!(
                    "invalid --bind-to '{s}': unknown qualifier '{other}' (expected overload-allowed or if-supported)"
                ))
            }
        }
    }
    Ok(bind)
}

pub fn parse_rank_by(s: &str) -> Result<Option<Level>, String> {
    let lower = s.to_ascii_lowercase();
    let head = lower.split(':').next().unwrap_or("");
    match head {
        "slot" | "node" => Ok(None),
        other => level(other).map(Some).ok_or_else(|| {
            format!("invalid --rank-by '{s}': expected slot, node or one of {OBJECTS}")
        }),
    }
}

/// `0-3,8,10-11`: OS indexes of processing units.
pub fn parse_cpu_set(s: &str) -> Result<Vec<usize>, String> {
    let bad = || {
        format!("invalid --cpu-set '{s}': expected a list of CPU numbers and ranges, e.g. 0-3,8")
    };
    let mut cpus = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let a: usize = a.trim().parse().map_err(|_| bad())?;
        let b: usize = b.trim().parse().map_err(|_| bad())?;
        if a > b || b >= 1 << 20 {
            return Err(bad());
        }
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_by_spellings() {
        assert_eq!(parse_map_by("core").unwrap().mapping, Mapping::Core);
        assert_eq!(
            parse_map_by("socket").unwrap().mapping,
            Mapping::ByObject(Level::Package)
        );
        assert_eq!(
            parse_map_by("L3cache:PE=4").unwrap(),
            MapPolicy {
                mapping: Mapping::ByObject(Level::L3),
                given: true,
                pe: 4,
                oversubscribe: None
            }
        );
        assert_eq!(
            parse_map_by("ppr:2:numa").unwrap().mapping,
            Mapping::PerResource(2, Level::Numa)
        );
        assert_eq!(
            parse_map_by("numa:oversubscribe").unwrap().oversubscribe,
            Some(true)
        );
        for bad in [
            "",
            "chip",
            "ppr:0:core",
            "ppr:2",
            "core:PE=0",
            "core:PE=x",
            "core:sideways",
        ] {
            let e = parse_map_by(bad).unwrap_err();
            assert!(e.starts_with(&format!("invalid --map-by '{bad}'")), "{e}");
        }
    }

    #[test]
    fn bind_to_spellings() {
        assert_eq!(parse_bind_to("none").unwrap().level, None);
        let b = parse_bind_to("core:overload-allowed").unwrap();
        assert_eq!((b.level, b.overload_allowed), (Some(Level::Core), true));
        assert_eq!(
            parse_bind_to("package").unwrap().level,
            Some(Level::Package)
        );
        assert!(parse_bind_to("node").is_err());
        assert!(parse_bind_to("core:loose")
            .unwrap_err()
            .contains("unknown qualifier 'loose'"));
    }

    #[test]
    fn cpu_sets() {
        assert_eq!(parse_cpu_set("0-2,8, 1").unwrap(), vec![0, 1, 2, 8]);
        for bad in ["", "a", "3-1", "1-", "-1", "99999999"] {
            assert!(parse_cpu_set(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_rank_by("core").unwrap(), Some(Level::Core));
        assert_eq!(parse_rank_by("slot").unwrap(), None);
        assert!(parse_rank_by("x").is_err());
    }
}
