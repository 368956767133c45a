//! The MCA parameters rmpi reads, for `--mca-list` and for a warning (with a "did you mean")
//! when `--mca` names one nothing reads: a typo would otherwise silently change nothing.
//! The transports list their own (`btl_sm::PARAMS`, `btl_ib::PARAMS`); the rest are here.

/// (name, default, meaning) of the parameters libmpi and memhook read themselves.
pub const GENERAL: &[(&str, &str, &str)] = &[
    (
        "btl_base_verbose",
        "0",
        "1: each rank names its transports (and why ib is not used), the line probe's \
         figures, and rendezvous counts at finalize",
    ),
    (
        "mpi_yield_when_idle",
        "auto",
        "1: waiting ranks yield the CPU at once (on by default when oversubscribed)",
    ),
    (
        "memhook_verbose",
        "0",
        "1: each rank reports the memory-release provider at init and its event counters at \
         finalize",
    ),
    (
        "memhook_ptmalloc_policy",
        "release",
        "ptmalloc provider: retain never returns memory to the OS",
    ),
    (
        "memhook_ptmalloc_shared",
        "1",
        "ptmalloc provider: large blocks come from a memfd the node's ranks map (0: private)",
    ),
];

/// Every parameter name rmpi reads.
pub fn names() -> impl Iterator<Item = &'static str> {
    btl_ib::PARAMS
        .iter()
        .map(|p| p.name)
        .chain(btl_sm::PARAMS.iter().map(|p| p.name))
        .chain(GENERAL.iter().map(|p| p.0))
}

/// None when rmpi reads `name`; else the warning, with the closest known name if one is close.
pub fn unknown(name: &str) -> Option<String> {
    if names().any(|n| n == name) {
        return None;
    }
    let best = names()
        .map(|n| (distance(name, n), n))
        .min()
        .filter(|&(d, n)| d <= 3.max(n.len() / 5));
    let hint = best.map_or(String::new(), |(_, n)| format!(" (did you mean {n}?)"));
    Some(format!(
        "mpirun: warning: no part of rmpi reads MCA parameter {name}{hint}; it is passed to the \
         ranks as RMPI_MCA_{name} all the same (mpirun --mca-list lists those read)"
    ))
}

/// Levenshtein distance (names are short ASCII).
fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + (x != y) as usize)
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_pass_and_typos_get_a_suggestion() {
        assert_eq!(unknown("btl_sm_eager_limit"), None);
        assert_eq!(unknown("btl_base_verbose"), None);
        let w = unknown("btl_sm_eager_limt").unwrap();
        assert!(w.contains("did you mean btl_sm_eager_limit?"), "{w}");
        let w = unknown("coll_tuned_use_dynamic_rules").unwrap();
        assert!(!w.contains("did you mean"), "{w}");
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
