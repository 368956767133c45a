//! Open MPI's words for placements: `--report-bindings` lines, the `[BB/../..][../..]` picture,
//! `--display-map` and an lstopo-like `--display-topology`.

use super::map::{Placement, Plan};
use super::policy::Mapping;
use super::{Level, Topology};

/// `MCW rank 3 bound to socket 0[core 1[hwt 0-1]]: [../BB][../..]`, or `is not bound`, as
/// Open MPI prints it (without its `[host:pid] ` prefix, which the caller adds).
pub fn binding_line(topo: &Topology, rank: usize, place: &Placement) -> String {
    if place.pus.is_empty() {
        return format!("MCW rank {rank} is not bound (or bound to all available processors)");
    }
    format!(
        "MCW rank {rank} bound to {}: {}",
        words(topo, &place.pus),
        picture(topo, &place.pus)
    )
}

/// `socket 0[core 0[hwt 0-1]], socket 0[core 1[hwt 0]]`: every core with a bound PU.
fn words(topo: &Topology, bound: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < topo.pus.len() {
        let core = topo.pus[i].at[Level::Core as usize];
        let mut j = i;
        let mut hwts = Vec::new();
        while j < topo.pus.len() && topo.pus[j].at[Level::Core as usize] == core {
            if bound.contains(&j) {
                hwts.push(j - i);
            }
            j += 1;
        }
        if !hwts.is_empty() {
            parts.push(format!(
                "socket {}[core {}[hwt {}]]",
                topo.pus[i].at[Level::Package as usize],
                core,
                ranges(&hwts)
            ));
        }
        i = j;
    }
    parts.join(", ")
}

/// One bracket per package, cores split by `/`, one character per PU: `B` bound, `.` not.
pub fn picture(topo: &Topology, bound: &[usize]) -> String {
    let mut s = String::new();
    for (i, pu) in topo.pus.iter().enumerate() {
        let first_in_package =
            i == 0 || topo.pus[i - 1].at[Level::Package as usize] != pu.at[Level::Package as usize];
        let first_in_core =
            i == 0 || topo.pus[i - 1].at[Level::Core as usize] != pu.at[Level::Core as usize];
        if first_in_package {
            if i > 0 {
                s.push(']');
            }
            s.push('[');
        } else if first_in_core {
            s.push('/');
        }
        s.push(if bound.contains(&i) { 'B' } else { '.' });
    }
    if !topo.pus.is_empty() {
        s.push(']');
    }
    s
}

/// `0-3,8`.
pub fn ranges(v: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(",")
}

fn mapping_name(m: Mapping) -> String {
    match m {
        Mapping::Slots => "slot".into(),
        Mapping::Core => "core".into(),
        Mapping::Hwthread => "hwthread".into(),
        Mapping::ByObject(l) => l.policy_name().into(),
        Mapping::PerResource(n, l) => format!("ppr:{n}:{}", l.policy_name()),
    }
}

/// `--display-map`: the policies, then one line per rank with its OS CPUs.
pub fn map_text(topo: &Topology, plan: &Plan) -> String {
    let mut s = format!(
        " Mapping policy: {}  Binding policy: {}{}\n",
        mapping_name(plan.mapping),
        plan.binding.level.map_or("none", |l| l.policy_name()),
        if plan.binding.overload_allowed {
            ":overload-allowed"
        } else {
            ""
        }
    );
    for (rank, place) in plan.ranks.iter().enumerate() {
        let os: Vec<usize> = place.pus.iter().map(|&p| topo.pus[p].os).collect();
        s += &format!(
            "  rank {rank}: {}\n",
            if os.is_empty() {
                "not bound".to_string()
            } else {
                format!("cpus {} {}", ranges(&os), picture(topo, &place.pus))
            }
        );
    }
    s
}

/// `--display-topology`: lstopo's console tree of the levels mpirun uses.
pub fn topology_text(topo: &Topology) -> String {
    let mut s = format!(
        "Topology of {}: {} packages, {} NUMA nodes, {} L3, {} cores, {} PUs{}\n",
        topo.source,
        topo.count(Level::Package),
        topo.count(Level::Numa),
        topo.count(Level::L3),
        topo.count(Level::Core),
        topo.pus.len(),
        if topo.this_system {
            ""
        } else {
            " (not this machine: ranks are not bound)"
        }
    );
    let shown: Vec<Level> = Level::ALL[1..]
        .iter()
        .copied()
        .filter(|&l| topo.present[l as usize])
        .collect();
    for (i, pu) in topo.pus.iter().enumerate() {
        for (depth, &l) in shown.iter().enumerate() {
            let opens = i == 0 || topo.pus[i - 1].at[l as usize] != pu.at[l as usize];
            if opens {
                let os = if l == Level::Pu {
                    format!(" (P#{})", pu.os)
                } else {
                    String::new()
                };
                s += &format!(
                    "{}{} L#{}{os}\n",
                    "  ".repeat(depth + 1),
                    l.lstopo_name(),
                    pu.at[l as usize]
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_mpi_words_and_picture() {
        let t = Topology::synthetic(2, 1, 1, 2, 2);
        let p = Placement { pus: vec![2, 3] };
        assert_eq!(
            binding_line(&t, 1, &p),
            "MCW rank 1 bound to socket 0[core 1[hwt 0-1]]: [../BB][../..]"
        );
        let p = Placement { pus: vec![4, 6] };
        assert_eq!(
            binding_line(&t, 0, &p),
            "MCW rank 0 bound to socket 1[core 2[hwt 0]], socket 1[core 3[hwt 0]]: [../..][B./B.]"
        );
        let one = Topology::synthetic(1, 1, 1, 4, 1);
        assert_eq!(picture(&one, &[1]), "[./B/./.]");
        assert_eq!(
            binding_line(&one, 2, &Placement { pus: vec![] }),
            "MCW rank 2 is not bound (or bound to all available processors)"
        );
        assert_eq!(ranges(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    }

    #[test]
    fn topology_tree() {
        let t = Topology::synthetic(1, 1, 1, 2, 1);
        let text = topology_text(&t);
        assert!(
            text.contains("1 packages, 1 NUMA nodes, 1 L3, 2 cores, 2 PUs"),
            "{text}"
        );
        assert!(text.contains("Core L#1\n"), "{text}");
        assert!(text.contains("PU L#1 (P#1)"), "{text}");
    }
}
