//! Reading the topology through hwloc, once, in mpirun.
//!
//! hwloc itself honours `HWLOC_XMLFILE` and `HWLOC_SYNTHETIC` (a fake machine for tests and for
//! comparing placements with Open MPI on this one); `--mca hwloc_base_topo_file FILE` (Open MPI's
//! name) sets the first. Only PUs this process may run on are kept (hwloc's default), so mpirun
//! started under `taskset` or a cgroup maps into what it was given.
//!
//! NUMA nodes are memory children in hwloc 2 and the `hwloc2` crate mislabels them when asked for
//! by type (../shared/DEPENDENCIES.md), so the tree is walked through normal children only and a
//! PU's NUMA node is read from its nodeset.

use hwloc2::{ObjectType, Topology as Hwloc, TopologyObject};

use super::{Level, Pu, Topology, LEVELS};

/// Loads the topology, or says why it cannot (one line, without `mpirun: `).
pub fn load(topo_file: Option<&str>) -> Result<Topology, String> {
    if let Some(f) = topo_file {
        if !std::path::Path::new(f).is_file() {
            return Err(format!("hwloc_base_topo_file '{f}': no such file"));
        }
        // Still single-threaded: no rank, no thread exists yet.
        std::env::set_var("HWLOC_XMLFILE", f);
    }
    let source = match (
        std::env::var("HWLOC_XMLFILE"),
        std::env::var("HWLOC_SYNTHETIC"),
    ) {
        (Ok(x), _) if !x.is_empty() => format!("HWLOC_XMLFILE={x}"),
        (_, Ok(s)) if !s.is_empty() => format!("HWLOC_SYNTHETIC={s}"),
        _ => "this machine".to_string(),
    };
    let this_system =
        source == "this machine" || std::env::var("HWLOC_THISSYSTEM").as_deref() == Ok("1");
    let Some(hw) = Hwloc::new() else {
        if this_system {
            // A container hwloc cannot read still runs jobs: one package of the CPUs we may use.
            return flat();
        }
        return Err(format!("hwloc cannot read the topology of {source}"));
    };
    let mut walk = Walk::default();
    walk.visit(hw.object_at_root(), [usize::MAX; LEVELS]);
    if walk.pus.is_empty() {
        return Err(format!(
            "the topology of {source} has no processing unit this process may use"
        ));
    }
    Ok(finish(walk, this_system, source))
}

/// Every CPU in mpirun's affinity mask as a core of one package (no hwloc).
fn flat() -> Result<Topology, String> {
    use nix::sched::{sched_getaffinity, CpuSet};
    let set = sched_getaffinity(nix::unistd::Pid::from_raw(0))
        .map_err(|e| format!("cannot read the CPU affinity mask: {e}"))?;
    let pus: Vec<Pu> = (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .enumerate()
        .map(|(i, os)| Pu {
            os,
            at: [0, 0, 0, 0, i, i, i, i],
        })
        .collect();
    let n = pus.len();
    Ok(Topology {
        pus,
        counts: [1, 1, 1, 1, n, n, n, n],
        present: [true, true, false, false, false, false, true, true],
        this_system: true,
        source: "this machine (hwloc could not read it: one package of the allowed CPUs)".into(),
    })
}

#[derive(Default)]
struct Walk {
    next: [usize; LEVELS],
    seen: [bool; LEVELS],
    /// PUs with their NUMA node's OS index (dense indexes are given in `finish`).
    pus: Vec<(Pu, Option<usize>)>,
}

fn level_of(t: ObjectType) -> Option<Level> {
    Some(match t {
        ObjectType::Machine => Level::Machine,
        ObjectType::Package => Level::Package,
        ObjectType::L3Cache => Level::L3,
        ObjectType::L2Cache => Level::L2,
        ObjectType::L1Cache => Level::L1,
        ObjectType::Core => Level::Core,
        ObjectType::PU => Level::Pu,
        _ => return None, // groups, dies, instruction caches: walked through
    })
}

impl Walk {
    fn visit(&mut self, obj: &TopologyObject, mut at: [usize; LEVELS]) {
        match obj.cpuset() {
            Some(c) if !c.is_empty() => {}
            _ => return, // nothing this process may run on below
        }
        if let Some(level) = level_of(obj.object_type()) {
            let l = level as usize;
            at[l] = self.next[l];
            self.next[l] += 1;
            self.seen[l] = true;
            if level == Level::Pu {
                let numa = obj.nodeset().and_then(|n| usize::try_from(n.first()).ok());
                self.pus.push((
                    Pu {
                        os: obj.os_index() as usize,
                        at,
                    },
                    numa,
                ));
                return;
            }
        }
        for child in obj.children() {
            self.visit(child, at);
        }
    }
}

/// Dense NUMA indexes, absent levels filled from their parent, and the counts.
fn finish(walk: Walk, this_system: bool, source: String) -> Topology {
    let mut numa_os: Vec<usize> = Vec::new();
    let mut pus = Vec::with_capacity(walk.pus.len());
    for (mut pu, numa) in walk.pus {
        pu.at[Level::Numa as usize] = match numa {
            Some(os) => match numa_os.iter().position(|&n| n == os) {
                Some(i) => i,
                None => {
                    numa_os.push(os);
                    numa_os.len() - 1
                }
            },
            None => usize::MAX,
        };
        pus.push(pu);
    }
    let mut present = walk.seen;
    present[Level::Numa as usize] = !numa_os.is_empty();
    present[Level::Machine as usize] = true;
    fill_absent(&mut pus, &present);
    let counts: [usize; LEVELS] =
        std::array::from_fn(|l| pus.iter().map(|p| p.at[l] + 1).max().unwrap_or(0));
    Topology {
        pus,
        counts,
        present,
        this_system,
        source,
    }
}

/// A level missing above a PU takes its parent's index (a machine without NUMA information is
/// one NUMA node; a core without its own L1 shares its parent's).
fn fill_absent(pus: &mut [Pu], present: &[bool; LEVELS]) {
    for pu in pus {
        pu.at[0] = 0;
        for (l, &here) in present.iter().enumerate().skip(1) {
            if !here || pu.at[l] == usize::MAX {
                pu.at[l] = pu.at[l - 1];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_levels_take_the_parent_index() {
        let mut pus = vec![
            Pu {
                os: 0,
                at: [0, 0, usize::MAX, usize::MAX, 0, 0, 0, 0],
            },
            Pu {
                os: 1,
                at: [0, 1, usize::MAX, usize::MAX, 1, 1, 1, 1],
            },
        ];
        let mut present = [true; LEVELS];
        present[Level::Numa as usize] = false;
        present[Level::L3 as usize] = false;
        fill_absent(&mut pus, &present);
        assert_eq!(pus[1].at, [0, 1, 1, 1, 1, 1, 1, 1]);
    }

    #[test]
    fn without_hwloc_every_allowed_cpu_is_a_core() {
        let t = flat().unwrap();
        assert!(!t.pus.is_empty());
        assert_eq!(t.count(Level::Core), t.pus.len());
        assert_eq!(t.count(Level::Package), 1);
    }

    #[test]
    fn this_machine_loads() {
        let t = load(None).expect("hwloc reads this machine");
        assert!(!t.pus.is_empty());
        assert_eq!(t.count(Level::Machine), 1);
        assert!(t.count(Level::Core) >= 1 && t.count(Level::Core) <= t.pus.len());
    }
}
