//! The node's topology as mpirun uses it: packages, NUMA nodes, caches, cores and hardware threads
//! (PUs), read once through hwloc (`load.rs`), then mapped and bound by Open MPI's policies
//! (`policy.rs`, `map.rs`) and reported in Open MPI's words (`report.rs`).
//!
//! The model is plain data, so the mapping can be tested for machines this one is not (hwloc's
//! synthetic topologies, or `Topology::synthetic` in unit tests).

pub mod load;
pub mod map;
pub mod policy;
pub mod report;

/// The levels a policy can name, outermost first. Every PU has an index at each level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Machine = 0,
    Package = 1,
    Numa = 2,
    L3 = 3,
    L2 = 4,
    L1 = 5,
    Core = 6,
    Pu = 7,
}

pub const LEVELS: usize = 8;

impl Level {
    pub const ALL: [Level; LEVELS] = [
        Level::Machine,
        Level::Package,
        Level::Numa,
        Level::L3,
        Level::L2,
        Level::L1,
        Level::Core,
        Level::Pu,
    ];

    /// Open MPI's name in policies (`--map-by l3cache`, `--bind-to hwthread`).
    pub fn policy_name(self) -> &'static str {
        match self {
            Level::Machine => "node",
            Level::Package => "package",
            Level::Numa => "numa",
            Level::L3 => "l3cache",
            Level::L2 => "l2cache",
            Level::L1 => "l1cache",
            Level::Core => "core",
            Level::Pu => "hwthread",
        }
    }

    /// hwloc's type name, as MPI_COMM_TYPE_HW_GUIDED's `mpi_hw_resource_type` takes it.
    pub fn hw_resource_name(self) -> &'static str {
        match self {
            Level::Machine => "Machine",
            Level::Package => "Package",
            Level::Numa => "NUMANode",
            Level::L3 => "L3Cache",
            Level::L2 => "L2Cache",
            Level::L1 => "L1Cache",
            Level::Core => "Core",
            Level::Pu => "PU",
        }
    }

    /// lstopo's name (`--display-topology`).
    pub fn lstopo_name(self) -> &'static str {
        match self {
            Level::Machine => "Machine",
            Level::Package => "Package",
            Level::Numa => "NUMANode",
            Level::L3 => "L3",
            Level::L2 => "L2",
            Level::L1 => "L1d",
            Level::Core => "Core",
            Level::Pu => "PU",
        }
    }
}

/// One hardware thread: its OS index (what `sched_setaffinity` takes) and the logical index of
/// the object containing it at every level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pu {
    pub os: usize,
    pub at: [usize; LEVELS],
}

/// The PUs the job may use, in logical order (hwloc's depth-first order), with how many objects
/// each level has. A level the machine lacks (no L3 reported, say) is marked absent; its index
/// is then its parent's, so every lookup still works.
#[derive(Debug, Clone)]
pub struct Topology {
    pub pus: Vec<Pu>,
    pub counts: [usize; LEVELS],
    pub present: [bool; LEVELS],
    /// The topology describes the machine mpirun runs on (not an XML file or a synthetic one):
    /// only then are ranks really bound.
    pub this_system: bool,
    /// Where it came from, for messages (`this machine`, `HWLOC_XMLFILE=...`).
    pub source: String,
}

impl Topology {
    /// How many objects of `level` there are.
    pub fn count(&self, level: Level) -> usize {
        self.counts[level as usize]
    }

    /// Keeps only the PUs whose OS index is in `cpus` (`--cpu-set`). Logical indexes stay those
    /// of the whole machine, as in Open MPI's reports.
    pub fn restrict(&mut self, cpus: &[usize]) -> Result<(), String> {
        let missing: Vec<String> = cpus
            .iter()
            .filter(|c| !self.pus.iter().any(|p| p.os == **c))
            .map(|c| c.to_string())
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "--cpu-set names CPU {} that {} does not have or mpirun may not use",
                missing.join(", "),
                self.source
            ));
        }
        self.pus.retain(|p| cpus.contains(&p.os));
        Ok(())
    }

    /// A regular machine for tests: `shape[i]` children per object at each of Package, Numa,
    /// L3, Core and Pu (L2 and L1 one per core, as on most x86 parts).
    #[cfg(test)]
    pub fn synthetic(packages: usize, numa: usize, l3: usize, cores: usize, pus: usize) -> Self {
        let mut all = Vec::new();
        let (mut ni, mut li, mut ci, mut pi) = (0, 0, 0, 0);
        for pk in 0..packages {
            for _ in 0..numa {
                for _ in 0..l3 {
                    for _ in 0..cores {
                        for _ in 0..pus {
                            all.push(Pu {
                                os: pi,
                                at: [0, pk, ni, li, ci, ci, ci, pi],
                            });
                            pi += 1;
                        }
                        ci += 1;
                    }
                    li += 1;
                }
                ni += 1;
            }
        }
        Topology {
            pus: all,
            counts: [1, packages, ni, li, ci, ci, ci, pi],
            present: [true; LEVELS],
            this_system: false,
            source: "synthetic".into(),
        }
    }
}

/// The topology a job maps onto, with `--cpu-set` applied, and how many ranks fit without
/// oversubscribing (slots divided by `PE`). mpirun's command line is parsed, not yet validated.
pub fn for_job(cli: &crate::cli::Cli) -> Result<(Topology, usize), String> {
    let policy = crate::cli::placement(cli)?;
    let given = cli
        .mca
        .chunks(2)
        .filter(|kv| kv[0] == "hwloc_base_topo_file")
        .map(|kv| kv[1].as_str())
        .next_back();
    let topo = load_for(topo_file(given).as_deref(), &policy)?;
    let slots = map::slots(&topo, &policy) / policy.map.pe;
    Ok((topo, slots.max(1)))
}

/// The topology file to read instead of this machine's: `--mca hwloc_base_topo_file` as
/// `given` (mpirun's, or the job's on a node daemon), else the environment's; empty is none.
pub fn topo_file(given: Option<&str>) -> Option<String> {
    given
        .map(str::to_string)
        .or_else(|| std::env::var("RMPI_MCA_hwloc_base_topo_file").ok())
        .filter(|f| !f.is_empty())
}

/// This machine's topology (or `file`'s), restricted to the policy's `--cpu-set`.
pub fn load_for(file: Option<&str>, policy: &policy::Policy) -> Result<Topology, String> {
    let mut topo = load::load(file)?;
    if let Some(cpus) = &policy.cpu_set {
        topo.restrict(cpus)?;
    }
    Ok(topo)
}

/// Plans the job's placement into `spec.bindings` and prints what was asked for
/// (`--display-topology`, `--display-map`, `--report-bindings`, on stderr as Open MPI does).
/// Ranks are bound only on the machine's own topology.
pub fn place(topo: &Topology, spec: &mut crate::cli::JobSpec) -> Result<(), String> {
    let all: Vec<usize> = (0..spec.n).collect();
    let plan = place_ranks(topo, spec, &all)?;
    if topo.this_system {
        spec.job_locality = job_locality(topo, &plan);
    }
    Ok(())
}

/// A node daemon's share of a job across hosts: its ranks (`ranks`, world numbers, of a job of
/// `spec.n`) planned on this host's topology, with the job's size choosing the defaults as Open
/// MPI's does. No `RMPI_LOCALITY_ALL`: that lists the ranks of one host.
pub fn place_node(
    topo: &Topology,
    spec: &mut crate::cli::JobSpec,
    ranks: &[usize],
) -> Result<(), String> {
    place_ranks(topo, spec, ranks).map(|_| ())
}

/// Plans `ranks` (world numbers), reports, and (on this machine's topology) writes their
/// bindings and localities at their world numbers.
fn place_ranks(
    topo: &Topology,
    spec: &mut crate::cli::JobSpec,
    ranks: &[usize],
) -> Result<map::Plan, String> {
    let plan = map::plan_of(topo, &spec.policy, ranks.len(), spec.n, spec.oversubscribed)?;
    let mut out = String::new();
    if spec.display_topology {
        out += &report::topology_text(topo);
    }
    if spec.display_map {
        out += &report::map_text(topo, &plan);
    }
    if spec.report_bindings {
        let host = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "localhost".into());
        let host = host.split('.').next().unwrap_or("localhost").to_string();
        let pid = std::process::id();
        for (&rank, p) in ranks.iter().zip(&plan.ranks) {
            out += &format!("[{host}:{pid}] {}\n", report::binding_line(topo, rank, p));
        }
        if !topo.this_system {
            out += &format!(
                "mpirun: the topology is {}, not this machine's: ranks are not bound\n",
                topo.source
            );
        }
    }
    if !out.is_empty() {
        crate::report::say(out.trim_end());
    }
    if topo.this_system {
        for (&rank, p) in ranks.iter().zip(&plan.ranks) {
            spec.localities[rank] = locality(topo, &p.pus);
            spec.bindings[rank] = p.pus.iter().map(|&i| topo.pus[i].os).collect();
        }
    }
    Ok(plan)
}

/// `Package:0,NUMANode:1,L3Cache:2,L2Cache:-,...`: for each level, the one object the PUs lie in, or `-` when
/// they span several. Unbound ranks (no PUs) may run on any PU of the job. libmpi reads it for
/// `MPI_Comm_split_type(MPI_COMM_TYPE_HW_GUIDED)`.
pub fn locality(topo: &Topology, bound: &[usize]) -> String {
    let all: Vec<usize>;
    let pus = if bound.is_empty() {
        all = (0..topo.pus.len()).collect();
        &all
    } else {
        bound
    };
    Level::ALL[1..]
        .iter()
        .map(|&l| {
            let first = topo.pus[pus[0]].at[l as usize];
            let one = topo.present[l as usize]
                && pus.iter().all(|&p| topo.pus[p].at[l as usize] == first);
            format!(
                "{}:{}",
                l.hw_resource_name(),
                if one { first.to_string() } else { "-".into() }
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Every rank's package, NUMA node and L3 (`P.N.L`, `-` where it may run in several), joined by
/// commas, for libmpi's hierarchical collectives (`RMPI_LOCALITY_ALL`). None past 64 KiB: an
/// environment string has limits, and a job that large gets the flat algorithms.
pub fn job_locality(topo: &Topology, plan: &map::Plan) -> Option<String> {
    let all: Vec<usize> = (0..topo.pus.len()).collect();
    let mut s = String::new();
    for (rank, p) in plan.ranks.iter().enumerate() {
        let pus = if p.pus.is_empty() { &all } else { &p.pus };
        if rank > 0 {
            s.push(',');
        }
        for (k, l) in [Level::Package, Level::Numa, Level::L3]
            .into_iter()
            .enumerate()
        {
            let first = topo.pus[pus[0]].at[l as usize];
            if k > 0 {
                s.push('.');
            }
            if pus.iter().all(|&q| topo.pus[q].at[l as usize] == first) {
                s += &first.to_string();
            } else {
                s.push('-');
            }
        }
        if s.len() > 64 * 1024 {
            return None;
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_locality_lists_every_rank() {
        let t = Topology::synthetic(2, 1, 2, 2, 1);
        let plan = map::Plan {
            ranks: vec![
                map::Placement { pus: vec![0] },
                map::Placement { pus: vec![2] },
                map::Placement { pus: vec![4, 5] },
                map::Placement { pus: vec![] },
            ],
            mapping: policy::Mapping::Core,
            binding: policy::BindPolicy {
                level: Some(Level::Core),
                overload_allowed: false,
            },
        };
        assert_eq!(job_locality(&t, &plan).unwrap(), "0.0.0,0.0.1,1.1.2,-.-.-");
    }

    #[test]
    fn locality_names_the_objects_a_binding_lies_in() {
        let t = Topology::synthetic(2, 2, 2, 2, 2);
        assert_eq!(
            locality(&t, &[2, 3]),
            "Package:0,NUMANode:0,L3Cache:0,L2Cache:1,L1Cache:1,Core:1,PU:-"
        );
        assert_eq!(
            locality(&t, &[]),
            "Package:-,NUMANode:-,L3Cache:-,L2Cache:-,L1Cache:-,Core:-,PU:-"
        );
        let one = Topology::synthetic(1, 1, 1, 2, 1);
        assert!(locality(&one, &[]).starts_with("Package:0,NUMANode:0,L3Cache:0,L2Cache:-"));
    }
}
