// The MCA parameters libmpi, memhook and mpirun read themselves (the transports list their own:
// `btl_sm::PARAMS`, `btl_ib::PARAMS`). One table for `mpirun --mca-list` and its "did you mean"
// (mpirun/src/mca.rs) and for the MPI_T control variables (libmpi/src/capi/tool_cvar.rs): both
// `include!` this file, so the two can never disagree.

/// (name, default, meaning).
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
        "auto: small bcast, reduce, allreduce and barrier go through the node's L3 domains when \
         the ranks are placed in several (intra-L3 trees, then between their leaders); 0: flat",
    ),
    (
        "hwloc_base_topo_file",
        "",
        "mpirun: map and bind on the topology in this hwloc XML file (a machine this one is not: \
         reported, not applied), as HWLOC_XMLFILE does",
    ),
];
