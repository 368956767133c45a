//! Mapping, ranking and binding on one node, as Open MPI 4.1 does them.
//!
//! 1. Map: each rank gets a locale — a core (`slot`, `core`), a PU (`hwthread`) or an object
//!    (`--map-by numa`: round robin over the objects that still have a free core; `ppr:N:obj`:
//!    N in each). `:PE=n` gives each rank n cores of its locale.
//! 2. Rank (`--rank-by X`): passes over the objects of level X, each taking the first unranked
//!    locale that lies in it; without it, mapping order.
//! 3. Bind, in rank order: to the object of the binding level that contains the locale, or, when
//!    the level is finer than the locale, to the least used such object inside it. More ranks on
//!    an object than it has cpus is refused unless `:overload-allowed`.
//!
//! The expected results in the tests are Open MPI 4.1.4's own (`mpirun.openmpi --display-devel-map
//! --do-not-launch` with the same synthetic topology; scripts/bindings-vs-openmpi.sh).

use super::policy::{BindPolicy, Mapping, Policy};
use super::{Level, Topology};

/// Where one rank runs: the PUs (indexes into `Topology::pus`) it is bound to, empty when not
/// bound (also when bound to every PU the job has).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub pus: Vec<usize>,
}

/// The outcome for the whole job, with the policies that were in force (for `--display-map`).
#[derive(Debug)]
pub struct Plan {
    pub ranks: Vec<Placement>,
    pub mapping: Mapping,
    pub binding: BindPolicy,
}

/// A rank's locale before binding: a set of PUs (one core's, one PU, or one object's).
#[derive(Debug, Clone)]
struct Locale {
    level: Level,
    pus: Vec<usize>,
}

/// How many slots the node has: cores, or PUs with `--use-hwthread-cpus`.
pub fn slots(topo: &Topology, policy: &Policy) -> usize {
    let level = if hwthread_cpus(policy) {
        Level::Pu
    } else {
        Level::Core
    };
    objects(topo, level).len()
}

/// A slot is a hardware thread: asked for, or implied by mapping by hardware thread (as in
/// Open MPI).
fn hwthread_cpus(policy: &Policy) -> bool {
    policy.hwthread_cpus || (policy.map.given && policy.map.mapping == Mapping::Hwthread)
}

/// The objects of a level that hold at least one PU of the job, each as its PUs in order.
fn objects(topo: &Topology, level: Level) -> Vec<Vec<usize>> {
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    for (p, pu) in topo.pus.iter().enumerate() {
        let i = pu.at[level as usize];
        match out.iter_mut().find(|(j, _)| *j == i) {
            Some((_, v)) => v.push(p),
            None => out.push((i, vec![p])),
        }
    }
    out.into_iter().map(|(_, v)| v).collect()
}

/// Open MPI's binding when none is given.
pub fn default_binding(policy: &Policy, n: usize, oversubscribed: bool) -> BindPolicy {
    let to = |level| BindPolicy {
        level: Some(level),
        overload_allowed: false,
    };
    let core = if hwthread_cpus(policy) {
        Level::Pu
    } else {
        Level::Core
    };
    if oversubscribed {
        return BindPolicy {
            level: None,
            overload_allowed: true,
        };
    }
    if policy.map.pe > 1 {
        return to(core);
    }
    if policy.map.given {
        match policy.map.mapping {
            Mapping::Core => return to(Level::Core),
            Mapping::Hwthread => return to(Level::Pu),
            Mapping::ByObject(l) if l != Level::Machine => return to(l),
            _ => {}
        }
    }
    if n <= 2 {
        to(core)
    } else {
        to(Level::Numa)
    }
}

/// Places `n` ranks of a job of `job_n` (fewer on one host of several, `topo::place_node`),
/// whose size chooses Open MPI's default mapping and binding. `oversubscribed`: more ranks
/// (times PE) than slots, already allowed by the caller. The error is one user-facing line
/// without `mpirun: `.
pub fn plan_of(
    topo: &Topology,
    policy: &Policy,
    n: usize,
    job_n: usize,
    oversubscribed: bool,
) -> Result<Plan, String> {
    let mapping = default_mapping(policy, job_n);
    let locales = map(topo, policy, mapping, n)?;
    let order = rank_order(topo, &locales, policy.rank_by);
    let binding = policy
        .bind
        .unwrap_or_else(|| default_binding(policy, job_n, oversubscribed));
    let ranks = bind(topo, policy, &binding, &locales, &order)?;
    Ok(Plan {
        ranks,
        mapping,
        binding,
    })
}

/// Open MPI's mapping when none is given: by core for up to two ranks, else by NUMA node.
pub fn default_mapping(policy: &Policy, n: usize) -> Mapping {
    if policy.map.given {
        policy.map.mapping
    } else if n <= 2 {
        Mapping::Core
    } else {
        Mapping::ByObject(Level::Numa)
    }
}

fn map(
    topo: &Topology,
    policy: &Policy,
    mapping: Mapping,
    n: usize,
) -> Result<Vec<Locale>, String> {
    let pe = policy.map.pe;
    let cores = objects(topo, Level::Core);
    let pus: Vec<Vec<usize>> = (0..topo.pus.len()).map(|p| vec![p]).collect();
    let slot_level = if hwthread_cpus(policy) {
        Level::Pu
    } else {
        Level::Core
    };
    let take_in_order = |list: &[Vec<usize>], level: Level, per: usize| -> Vec<Locale> {
        (0..n)
            .map(|r| Locale {
                level,
                pus: (0..per)
                    .flat_map(|k| list[(r * per + k) % list.len()].iter().copied())
                    .collect(),
            })
            .collect()
    };
    let machine = || Locale {
        level: Level::Machine,
        pus: (0..topo.pus.len()).collect(),
    };
    Ok(match mapping {
        // By slot (or node): no locale below the node, so binding spreads the ranks.
        Mapping::Slots | Mapping::ByObject(Level::Machine) if pe == 1 => vec![machine(); n],
        Mapping::Slots | Mapping::ByObject(Level::Machine) if slot_level == Level::Pu => {
            take_in_order(&pus, Level::Pu, pe)
        }
        Mapping::Slots | Mapping::ByObject(Level::Machine) | Mapping::Core => {
            take_in_order(&cores, Level::Core, pe)
        }
        Mapping::Hwthread | Mapping::ByObject(Level::Pu) => take_in_order(&pus, Level::Pu, pe),
        Mapping::ByObject(Level::Core) => take_in_order(&cores, Level::Core, pe),
        Mapping::ByObject(level) => {
            require(topo, level, "--map-by")?;
            round_robin(topo, level, n, pe)
        }
        Mapping::PerResource(per, level) => {
            require(topo, level, "--map-by ppr")?;
            let objs = objects(topo, level);
            if n > per * objs.len() {
                return Err(format!(
                    "--map-by ppr:{per}:{} places at most {} ranks on this node ({} {} objects), {n} requested",
                    level.policy_name(),
                    per * objs.len(),
                    objs.len(),
                    level.policy_name()
                ));
            }
            let mut out = Vec::with_capacity(n);
            'objs: for obj in &objs {
                let mut free = cores_of(topo, obj);
                for _ in 0..per {
                    if out.len() == n {
                        break 'objs;
                    }
                    out.push(object_locale(level, obj, &mut free, pe));
                }
            }
            out
        }
    })
}

/// A policy that names a level the machine does not report (no L3 on some parts) is an error,
/// as in Open MPI, rather than a silent fallback.
fn require(topo: &Topology, level: Level, option: &str) -> Result<(), String> {
    if topo.present[level as usize] {
        Ok(())
    } else {
        Err(format!(
            "{option} {}: the topology of {} has no {} objects",
            level.policy_name(),
            topo.source,
            level.lstopo_name()
        ))
    }
}

/// The cores (as PU lists) inside an object, in order.
fn cores_of(topo: &Topology, obj_pus: &[usize]) -> Vec<Vec<usize>> {
    let mut cores: Vec<Vec<usize>> = Vec::new();
    for &p in obj_pus {
        let c = topo.pus[p].at[Level::Core as usize];
        match cores.last_mut() {
            Some(last) if topo.pus[last[0]].at[Level::Core as usize] == c => last.push(p),
            _ => cores.push(vec![p]),
        }
    }
    cores
}

/// A rank in an object: the object itself, or with `PE=n` its next n free cores.
fn object_locale(level: Level, obj: &[usize], free: &mut Vec<Vec<usize>>, pe: usize) -> Locale {
    if pe > 1 {
        let take = pe.min(free.len());
        let pus: Vec<usize> = free.drain(..take).flatten().collect();
        if !pus.is_empty() {
            return Locale {
                level: Level::Core,
                pus,
            };
        }
    } else if !free.is_empty() {
        free.remove(0);
    }
    Locale {
        level,
        pus: obj.to_vec(),
    }
}

/// Round robin over a level's objects, skipping those without `pe` free cores; once none has
/// room (oversubscribed), round robin regardless.
fn round_robin(topo: &Topology, level: Level, n: usize, pe: usize) -> Vec<Locale> {
    let objs = objects(topo, level);
    let mut free: Vec<Vec<Vec<usize>>> = objs.iter().map(|o| cores_of(topo, o)).collect();
    let mut out = Vec::with_capacity(n);
    let mut next = 0;
    for _ in 0..n {
        let k = (0..objs.len())
            .map(|d| (next + d) % objs.len())
            .find(|&k| free[k].len() >= pe)
            .unwrap_or(next % objs.len());
        out.push(object_locale(level, &objs[k], &mut free[k], pe));
        next = k + 1;
    }
    out
}

/// The locale index of each rank: mapping order, or passes over the objects of `rank_by`.
fn rank_order(topo: &Topology, locales: &[Locale], rank_by: Option<Level>) -> Vec<usize> {
    let Some(level) = rank_by else {
        return (0..locales.len()).collect();
    };
    let objs = objects(topo, level);
    // For each object, the locales touching it, in mapping order.
    let mut queues: Vec<std::collections::VecDeque<usize>> = objs
        .iter()
        .map(|o| {
            (0..locales.len())
                .filter(|&l| locales[l].pus.iter().any(|p| o.contains(p)))
                .collect()
        })
        .collect();
    let mut taken = vec![false; locales.len()];
    let mut order = Vec::with_capacity(locales.len());
    while order.len() < locales.len() {
        let before = order.len();
        for q in queues.iter_mut() {
            while let Some(l) = q.pop_front() {
                if !taken[l] {
                    taken[l] = true;
                    order.push(l);
                    break;
                }
            }
        }
        if order.len() == before {
            // Unreachable with every locale in some object; keep the rest in mapping order.
            order.extend((0..locales.len()).filter(|&l| !taken[l]));
        }
    }
    order
}

fn bind(
    topo: &Topology,
    policy: &Policy,
    binding: &BindPolicy,
    locales: &[Locale],
    order: &[usize],
) -> Result<Vec<Placement>, String> {
    let Some(level) = binding.level else {
        return Ok(vec![Placement { pus: Vec::new() }; locales.len()]);
    };
    require(topo, level, "--bind-to")?;
    let targets = objects(topo, level);
    let target_of = |p: usize| {
        targets
            .iter()
            .position(|t| t.contains(&p))
            .expect("every PU is in one object of each level")
    };
    let mut used = vec![0usize; targets.len()];
    let mut ranks = Vec::with_capacity(locales.len());
    for &l in order {
        let loc = &locales[l];
        let pus: Vec<usize> =
            if policy.map.pe > 1 && loc.level == Level::Core && level >= Level::Core {
                // PE=n: the rank's own cores, each counted once.
                let mut ts: Vec<usize> = loc.pus.iter().map(|&p| target_of(p)).collect();
                ts.dedup();
                for t in ts {
                    used[t] += 1;
                }
                loc.pus.clone()
            } else if level <= loc.level {
                // The binding object contains the locale.
                let t = target_of(loc.pus[0]);
                used[t] += 1;
                targets[t].clone()
            } else {
                // Finer than the locale: the least used object inside it.
                let t = (0..targets.len())
                    .filter(|&t| loc.pus.contains(&targets[t][0]))
                    .min_by_key(|&t| (used[t], t))
                    .expect("a locale holds at least one object of every finer level");
                used[t] += 1;
                targets[t].clone()
            };
        ranks.push(pus);
    }
    if !binding.overload_allowed {
        let cpu_level = if hwthread_cpus(policy) {
            Level::Pu
        } else {
            Level::Core
        };
        for (t, &u) in used.iter().enumerate() {
            let cpus = cores_of(topo, &targets[t]).len();
            let cpus = if cpu_level == Level::Pu {
                targets[t].len()
            } else {
                cpus
            };
            if u > cpus {
                return Err(format!(
                    "binding {u} ranks to {} {t} would put more ranks than cpus ({cpus}) on it; \
                     add :overload-allowed to --bind-to, or use --bind-to none",
                    level.policy_name()
                ));
            }
        }
    }
    let all = topo.pus.len();
    let mut out = vec![Placement { pus: Vec::new() }; locales.len()];
    for (rank, pus) in ranks.into_iter().enumerate() {
        out[rank] = Placement {
            pus: if pus.len() == all { Vec::new() } else { pus },
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::policy::{parse_bind_to, parse_map_by, parse_rank_by};
    use super::super::report::ranges;
    use super::*;

    /// Open MPI's `pack:2 numa:2 l3:2 core:16 pu:2`: 2 packages, 4 NUMA nodes, 8 L3, 128 cores.
    fn big() -> Topology {
        Topology::synthetic(2, 2, 2, 16, 2)
    }

    /// `pack:2 l3:2 core:4 pu:1` with one NUMA node for the whole machine.
    fn small() -> Topology {
        let mut t = Topology::synthetic(2, 1, 2, 4, 1);
        for pu in &mut t.pus {
            pu.at[Level::Numa as usize] = 0;
        }
        t.counts[Level::Numa as usize] = 1;
        t
    }

    /// Runs `mpirun -np n ARGS` through the mapper; each rank as its PU ranges, `none` unbound.
    fn place(topo: &Topology, n: usize, args: &str) -> Result<Vec<String>, String> {
        let mut policy = Policy::unspecified();
        let mut allow = false;
        let mut it = args.split_whitespace();
        while let Some(a) = it.next() {
            match a {
                "--map-by" => policy.map = parse_map_by(it.next().unwrap())?,
                "--bind-to" => policy.bind = Some(parse_bind_to(it.next().unwrap())?),
                "--rank-by" => policy.rank_by = parse_rank_by(it.next().unwrap())?,
                "--oversubscribe" => allow = true,
                other => panic!("test option {other}"),
            }
        }
        let over = n * policy.map.pe > slots(topo, &policy);
        assert!(!over || allow, "the caller refuses this");
        let plan = plan_of(topo, &policy, n, n, over)?;
        Ok(plan
            .ranks
            .iter()
            .map(|p| {
                if p.pus.is_empty() {
                    "none".into()
                } else {
                    ranges(&p.pus)
                }
            })
            .collect())
    }

    /// Each row: topology, np, options, then Open MPI 4.1.4's binding of every rank.
    #[test]
    fn same_as_open_mpi() {
        let cases: &[(&str, usize, &str, &str)] = &[
            ("big", 1, "", "0-1"),
            ("big", 2, "", "0-1 2-3"),
            ("big", 3, "", "0-63 64-127 128-191"),
            ("big", 5, "", "0-63 64-127 128-191 192-255 0-63"),
            (
                "big",
                6,
                "--map-by l3cache",
                "0-31 32-63 64-95 96-127 128-159 160-191",
            ),
            (
                "big",
                6,
                "--map-by l3cache --bind-to core",
                "0-1 32-33 64-65 96-97 128-129 160-161",
            ),
            ("big", 4, "--map-by numa", "0-63 64-127 128-191 192-255"),
            ("big", 4, "--map-by numa --bind-to hwthread", "0 64 128 192"),
            ("big", 4, "--map-by core --bind-to hwthread", "0 2 4 6"),
            ("big", 4, "--map-by hwthread", "0 1 2 3"),
            (
                "big",
                4,
                "--map-by hwthread --bind-to core",
                "0-1 0-1 2-3 2-3",
            ),
            ("big", 3, "--bind-to none", "none none none"),
            ("big", 3, "--bind-to l3cache", "0-31 64-95 128-159"),
            ("big", 4, "--map-by slot", "0-63 64-127 128-191 192-255"),
            ("big", 4, "--map-by slot --bind-to core", "0-1 2-3 4-5 6-7"),
            ("big", 4, "--map-by l3cache:PE=4", "0-7 32-39 64-71 96-103"),
            (
                "big",
                6,
                "--map-by l3cache --rank-by core",
                "0-31 32-63 64-95 96-127 128-159 160-191",
            ),
            (
                "big",
                4,
                "--bind-to core:overload-allowed",
                "0-1 64-65 128-129 192-193",
            ),
            (
                "big",
                4,
                "--map-by ppr:2:l3cache --bind-to core",
                "0-1 2-3 32-33 34-35",
            ),
            (
                "big",
                4,
                "--map-by socket --bind-to core",
                "0-1 128-129 2-3 130-131",
            ),
            (
                "big",
                5,
                "--map-by socket",
                "0-127 128-255 0-127 128-255 0-127",
            ),
            ("big", 3, "--bind-to socket", "0-127 0-127 128-255"),
            (
                "big",
                6,
                "--map-by socket --rank-by core --bind-to core",
                "0-1 2-3 4-5 128-129 130-131 132-133",
            ),
            ("big", 2, "--map-by ppr:1:socket", "0-1 128-129"),
            ("small", 4, "", "none none none none"),
            ("small", 8, "", "none none none none none none none none"),
            (
                "small",
                9,
                "--oversubscribe",
                "none none none none none none none none none",
            ),
            ("small", 4, "--map-by l3cache --bind-to core", "0 4 8 12"),
            ("small", 4, "--map-by numa --bind-to core", "0 1 2 3"),
            ("small", 5, "--map-by socket:PE=2", "0-1 8-9 2-3 10-11 4-5"),
        ];
        for &(t, n, args, want) in cases {
            let topo = if t == "big" { big() } else { small() };
            let got = place(&topo, n, args).unwrap_or_else(|e| panic!("{t} -np {n} {args}: {e}"));
            assert_eq!(got.join(" "), want, "{t} -np {n} {args}");
        }
        // 200 ranks on 128 cores: not bound, as Open MPI (NONE:OVERLOAD-ALLOWED).
        assert!(place(&big(), 200, "--oversubscribe")
            .unwrap()
            .iter()
            .all(|p| p == "none"));
    }

    #[test]
    fn refusals_name_the_problem() {
        let e = place(&big(), 129, "--bind-to core --oversubscribe").unwrap_err();
        assert!(e.contains("more ranks than cpus"), "{e}");
        let e = place(&big(), 9, "--map-by ppr:1:numa").unwrap_err();
        assert!(e.contains("at most 4 ranks"), "{e}");
        let mut no_l3 = big();
        no_l3.present[Level::L3 as usize] = false;
        let e = place(&no_l3, 2, "--map-by l3cache").unwrap_err();
        assert!(e.contains("no L3 objects"), "{e}");
    }

    #[test]
    fn pe_takes_whole_cores_and_counts_them() {
        assert_eq!(
            place(&big(), 3, "--map-by core:PE=2").unwrap(),
            vec!["0-3", "4-7", "8-11"]
        );
        assert_eq!(
            place(&small(), 2, "--map-by numa:PE=3 --bind-to core").unwrap(),
            vec!["0-2", "3-5"]
        );
    }
}
