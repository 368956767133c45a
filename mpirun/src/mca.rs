//! The MCA parameters rmpi reads, for `--mca-list` and for a warning (with a "did you mean")
//! when `--mca` names one nothing reads: a typo would otherwise silently change nothing.
//! The transports list their own (`btl_sm::PARAMS`, `btl_ib::PARAMS`, `btl_tcp::PARAMS`); the
//! rest are here.

include!("../../libmpi/src/mca_general.rs");

/// Every parameter name rmpi reads.
pub fn names() -> impl Iterator<Item = &'static str> {
    btl_ib::PARAMS
        .iter()
        .map(|p| p.name)
        .chain(btl_sm::PARAMS.iter().map(|p| p.name))
        .chain(btl_tcp::PARAMS.iter().map(|p| p.name))
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

/// The values each general parameter takes, as its readers compare them (memhook reads its
/// own byte for byte, so a near miss such as `Retain` would silently mean the default).
const GENERAL_VALUES: &[(&str, &[&str])] = &[
    ("mpi_yield_when_idle", &["0", "1", "true", "false", "auto"]),
    ("mpi_async_progress", &["0", "1", "true", "false"]),
    ("osc_direct", &["auto", "off"]),
    ("memhook_ptmalloc_policy", &["release", "retain"]),
    ("memhook_ptmalloc_shared", &["0", "1"]),
    ("coll_hier", &["0", "auto"]),
];

/// Checks what mpirun can judge before anything starts, past btl_sm's own resolution: the `btl`
/// list, btl_ib's and btl_tcp's tunables and the general parameters. `n` is the job's size; the error is one
/// line without the `mpirun: ` prefix.
pub fn check_values(n: usize, get: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    if let Some(v) = get("btl") {
        btl_ib::BtlSelection::parse(&v)?;
    }
    btl_ib::Params::resolve(n.saturating_sub(1).max(1), get)?;
    btl_tcp::Params::resolve(get)?;
    for &(name, allowed) in GENERAL_VALUES {
        if let Some(v) = get(name) {
            if !allowed.contains(&v.trim()) {
                return Err(format!(
                    "invalid value {v:?} for MCA parameter {name}: expected one of {}",
                    allowed.join(", ")
                ));
            }
        }
    }
    for &(name, algorithms) in TUNED {
        if let Some(v) = get(name) {
            if tuned_choice(algorithms, &v).is_none() {
                let listed: Vec<String> = algorithms
                    .iter()
                    .enumerate()
                    .map(|(i, a)| format!("{i} {a}"))
                    .collect();
                return Err(format!(
                    "invalid value {v:?} for MCA parameter {name}: expected an algorithm's \
                     number or name: {}",
                    listed.join(", ")
                ));
            }
        }
    }
    if let Some(v) = get("mpi_async_progress_interval") {
        if v.trim().parse::<u64>().is_err() {
            return Err(format!(
                "invalid value {v:?} for MCA parameter mpi_async_progress_interval: expected \
                 microseconds (0: spin)"
            ));
        }
    }
    for name in ["btl_base_verbose", "memhook_verbose"] {
        if let Some(v) = get(name) {
            if v.trim().parse::<u32>().is_err() {
                return Err(format!(
                    "invalid value {v:?} for MCA parameter {name}: expected a non-negative \
                     integer (0 = quiet)"
                ));
            }
        }
    }
    Ok(())
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

    fn check(pairs: &[(&str, &str)]) -> Result<(), String> {
        check_values(4, &|k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn values_are_checked_before_launch() {
        assert_eq!(check(&[]), Ok(()));
        assert_eq!(
            check(&[("btl", "^ib"), ("mpi_yield_when_idle", "auto")]),
            Ok(())
        );
        assert_eq!(check(&[("memhook_ptmalloc_policy", "retain")]), Ok(()));
        assert_eq!(
            check(&[("btl", "tcp,self"), ("btl_tcp_if_include", "lo")]),
            Ok(())
        );
        assert_eq!(check(&[("coll_tuned_allreduce_algorithm", "3")]), Ok(()));
        assert_eq!(check(&[("coll_tuned_bcast_algorithm", "binomial")]), Ok(()));
        for bad in [
            ("btl", "udp"),
            ("btl_tcp_max_frag", "12"),
            ("btl_ib_buf_size", "1e99"),
            ("btl_ib_recv_bufs", "-1"),
            ("btl_ib_verbose", "maybe"),
            ("mpi_yield_when_idle", "7"),
            ("mpi_async_progress", "on"),
            ("mpi_async_progress_interval", "-1"),
            ("memhook_ptmalloc_policy", "Retain"),
            ("memhook_ptmalloc_shared", "yes"),
            ("btl_base_verbose", "nope"),
            ("memhook_verbose", "-1"),
            ("coll_tuned_allreduce_algorithm", "5"),
            ("coll_tuned_barrier_algorithm", "ring"),
            ("coll_tuned_allgather_algorithm", "-1"),
        ] {
            let e = check(&[bad]).unwrap_err();
            assert!(e.contains(bad.0) && !e.contains('\n'), "{bad:?}: {e}");
        }
    }

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
