//! Where this process runs in the node, as mpirun placed it: `RMPI_LOCALITY` names, for each
//! hardware level, the one object the rank's CPUs lie in (`Package:0,NUMANode:1,L3Cache:2,...`,
//! `-` where they span several). Read for MPI_Comm_split_type(MPI_COMM_TYPE_HW_GUIDED).
//! `RMPI_LOCALITY_ALL` has every rank's package, NUMA node and L3 (`P.N.L,P.N.L,...` by world
//! rank): the hierarchical collectives group ranks by it (`coll/hier.rs`).

use std::sync::OnceLock;

/// The levels by their `mpi_hw_resource_type` names (hwloc's), with Open MPI's spellings too.
const ALIASES: &[(&str, &str)] = &[
    ("package", "Package"),
    ("socket", "Package"),
    ("numanode", "NUMANode"),
    ("numa", "NUMANode"),
    ("l3cache", "L3Cache"),
    ("l2cache", "L2Cache"),
    ("l1cache", "L1Cache"),
    ("core", "Core"),
    ("pu", "PU"),
    ("hwthread", "PU"),
];

/// What the locality says of a resource type.
#[derive(Debug, PartialEq, Eq)]
pub enum Within {
    /// Not a type rmpi knows.
    Unknown,
    /// The process may run on more than one object of the type (or the launcher said nothing).
    Several,
    /// Object `index` of the type, and only it.
    One(u32),
}

/// Looks `resource` (case-insensitive) up in `locality` (the value of `RMPI_LOCALITY`).
pub fn within(locality: Option<&str>, resource: &str) -> Within {
    let lower = resource.to_ascii_lowercase();
    let Some(&(_, name)) = ALIASES.iter().find(|(a, _)| *a == lower) else {
        return Within::Unknown;
    };
    let Some(loc) = locality else {
        return Within::Several;
    };
    loc.split(',')
        .filter_map(|kv| kv.split_once(':'))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.parse().ok())
        .map_or(Within::Several, Within::One)
}

/// This process's own answer, from its environment.
pub fn own(resource: &str) -> Within {
    within(std::env::var("RMPI_LOCALITY").ok().as_deref(), resource)
}

/// Each world rank's L3 domain, when every rank of the job is held within one; parsed once.
pub fn l3_domains() -> Option<&'static [u32]> {
    static TABLE: OnceLock<Option<Vec<u32>>> = OnceLock::new();
    TABLE
        .get_or_init(|| parse_l3(&std::env::var("RMPI_LOCALITY_ALL").ok()?))
        .as_deref()
}

/// The L3 index of each `P.N.L` entry; None if any is unknown or malformed.
fn parse_l3(all: &str) -> Option<Vec<u32>> {
    all.split(',')
        .map(|e| e.split('.').nth(2)?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        let loc = Some("Package:1,NUMANode:2,L3Cache:-,Core:17,PU:-");
        assert_eq!(within(loc, "Package"), Within::One(1));
        assert_eq!(within(loc, "socket"), Within::One(1));
        assert_eq!(within(loc, "numanode"), Within::One(2));
        assert_eq!(within(loc, "L3Cache"), Within::Several);
        assert_eq!(within(loc, "hwthread"), Within::Several);
        assert_eq!(within(loc, "L2Cache"), Within::Several);
        assert_eq!(within(loc, "Board"), Within::Unknown);
        assert_eq!(within(None, "Core"), Within::Several);
    }

    #[test]
    fn job_table() {
        assert_eq!(parse_l3("0.0.0,0.0.1,1.1.2"), Some(vec![0, 1, 2]));
        assert_eq!(parse_l3("0.0.0,-.-.-"), None);
        assert_eq!(parse_l3("0.0"), None);
    }
}
