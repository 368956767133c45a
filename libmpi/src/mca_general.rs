// The MCA parameters libmpi, memhook and mpirun read themselves (the transports list their own:
// `btl_sm::PARAMS`, `btl_ib::PARAMS`). One table for `mpirun --mca-list` and its "did you mean"
// (mpirun/src/mca.rs) and for the MPI_T control variables (libmpi/src/capi/tool_cvar.rs): both
// `include!` this file, so the two can never disagree.

/// (name, default, meaning).
pub const GENERAL: &[(&str, &str, &str)] = &[
    (
        "plm_rsh_agent",
        "ssh",
        "mpirun: the command that starts a node daemon on another host of --host/--hostfile \
         (the host name and the daemon's command are appended); as --launch-agent",
    ),
    (
        "btl_base_verbose",
        "0",
        "1: each rank names its transports (and why ib is not used), the line probe's \
         figures, rendezvous counts at finalize, and under MPI_THREAD_MULTIPLE whether the \
         runtime is biased to the initialising thread and when another thread ends that",
    ),
    (
        "mpi_yield_when_idle",
        "auto",
        "1: waiting ranks yield the CPU at once (on by default when oversubscribed)",
    ),
    (
        "mpi_thread_level",
        "funneled",
        "the level MPI_Init asks for, as MPI_Init_thread's required: single, funneled, \
         serialized or multiple (or 0-3), e.g. to run a single-threaded program under \
         MULTIPLE's locking; as Open MPI's OMPI_MPI_THREAD_LEVEL",
    ),
    (
        "mpi_async_progress",
        "0",
        "1: a progress thread in each rank advances non-blocking operations (rendezvous, \
         collective schedules, one-sided targets) while the application computes, woken when a \
         peer sends to its rank; the runtime then runs under MPI_THREAD_MULTIPLE's lock",
    ),
    (
        "mpi_async_progress_interval",
        "100",
        "microseconds between the progress thread's polls where nothing wakes it (tcp, ib, \
         sends queued behind a full ring; over sm peers ring it); 0: it spins, for nodes with a \
         core to spare",
    ),
    (
        "osc_direct",
        "auto",
        "one-sided: off sends every RMA operation as a message to the target; auto loads and \
         stores windows the node's ranks map, and uses CMA for MPI_Win_create memory",
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
    (
        "coll_hier",
        "auto",
        "auto: small bcast, reduce, allreduce, allgather and barrier go through the node's L3 \
         domains when the ranks are placed in several (inside each domain, then between their \
         leaders); 0: flat. Rules the automatic choice only: a coll_tuned_*_algorithm that \
         forces hierarchical still gets it",
    ),
    (
        "coll_tuned_allreduce_algorithm",
        "0",
        "force allreduce's (blocking, non-blocking, persistent) algorithm: 0 automatic (by size, \
         op and placement), 1 recursive_doubling, 2 ring, 3 rabenseifner, 4 hierarchical; the \
         number or the name. One that cannot apply (2-4 with a non-commutative op, 2-3 with \
         fewer elements than ranks, 4 with one L3 domain) runs the automatic choice",
    ),
    (
        "coll_tuned_bcast_algorithm",
        "0",
        "force bcast's algorithm: 0 automatic, 1 binomial, 2 scatter_allgather (root scatters, \
         ring allgather), 3 hierarchical; the number or the name. 3 with one L3 domain runs the \
         automatic choice",
    ),
    (
        "coll_tuned_reduce_algorithm",
        "0",
        "force reduce's algorithm: 0 automatic, 1 binomial, 2 reduce_scatter_gather (ring \
         reduce-scatter, blocks to the root), 3 hierarchical; the number or the name. 2-3 with a \
         non-commutative op, 2 with fewer elements than ranks, 3 with one L3 domain run the \
         automatic choice",
    ),
    (
        "coll_tuned_barrier_algorithm",
        "0",
        "force barrier's algorithm: 0 automatic, 1 dissemination, 2 hierarchical; the number \
         or the name. 2 with one L3 domain runs the automatic choice",
    ),
    (
        "coll_tuned_allgather_algorithm",
        "0",
        "force allgather(v)'s algorithm: 0 automatic, 1 all_at_once (one round with everyone), \
         2 bruck, 3 ring, 4 hierarchical; the number or the name. 2 with unequal or out-of-order \
         blocks, 4 with one L3 domain run the automatic choice",
    ),
    (
        "hwloc_base_topo_file",
        "",
        "mpirun: map and bind on the topology in this hwloc XML file (a machine this one is not: \
         reported, not applied), as HWLOC_XMLFILE does",
    ),
];

/// The algorithms each `coll_tuned_*_algorithm` parameter forces, by number: index 0 is the
/// automatic choice. libmpi reads them (coll/tune.rs), mpirun checks values against them; their
/// GENERAL entries above list the same numbers and names.
pub const TUNED: &[(&str, &[&str])] = &[
    (
        "coll_tuned_allreduce_algorithm",
        &[
            "auto",
            "recursive_doubling",
            "ring",
            "rabenseifner",
            "hierarchical",
        ],
    ),
    (
        "coll_tuned_bcast_algorithm",
        &["auto", "binomial", "scatter_allgather", "hierarchical"],
    ),
    (
        "coll_tuned_reduce_algorithm",
        &["auto", "binomial", "reduce_scatter_gather", "hierarchical"],
    ),
    (
        "coll_tuned_barrier_algorithm",
        &["auto", "dissemination", "hierarchical"],
    ),
    (
        "coll_tuned_allgather_algorithm",
        &["auto", "all_at_once", "bruck", "ring", "hierarchical"],
    ),
];

/// The algorithm number `value` names for a `TUNED` parameter's `names`: its number or its
/// name. None for anything else.
pub fn tuned_choice(names: &[&str], value: &str) -> Option<usize> {
    let v = value.trim();
    match v.parse::<usize>() {
        Ok(i) => (i < names.len()).then_some(i),
        Err(_) => names.iter().position(|n| n.eq_ignore_ascii_case(v)),
    }
}
