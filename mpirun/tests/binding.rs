//! Mapping, binding and their reports end to end: on this machine (ranks really bound) and on
//! hwloc synthetic topologies of machines this one is not (`HWLOC_SYNTHETIC`: planned and
//! reported, not applied). The expected placements are Open MPI 4.1.4's for the same options
//! (scripts/bindings-vs-openmpi.sh compares the two on 44 cases).

use std::process::{Command, Output, Stdio};

const MPIRUN: &str = env!("CARGO_BIN_EXE_mpirun");
/// 2 packages, 4 NUMA nodes, 8 L3 caches, 128 cores, 256 hardware threads.
const BIG: &str = "pack:2 numa:2 l3:2 core:16 pu:2";

fn mpirun(synthetic: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(MPIRUN);
    c.args(["--timeout", "30"]).args(args).stdin(Stdio::null());
    c.env_remove("HWLOC_XMLFILE").env_remove("HWLOC_THISSYSTEM");
    match synthetic {
        Some(s) => c.env("HWLOC_SYNTHETIC", s),
        None => c.env_remove("HWLOC_SYNTHETIC"),
    };
    c.output().expect("run mpirun")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ncores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn report_bindings_in_open_mpi_words_on_a_big_machine() {
    let o = mpirun(
        Some(BIG),
        &[
            "--report-bindings",
            "--map-by",
            "l3cache",
            "--bind-to",
            "core",
            "-np",
            "6",
            "--do-not-launch",
            "true",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("MCW rank")).collect();
    assert_eq!(lines.len(), 6, "{err}");
    // One rank per L3 (16 cores each), the first core of each.
    for (rank, core) in [0, 16, 32, 48, 64, 80].into_iter().enumerate() {
        let socket = core / 64;
        assert!(
            lines[rank].contains(&format!(
                "MCW rank {rank} bound to socket {socket}[core {core}[hwt 0-1]]: ["
            )),
            "{}",
            lines[rank]
        );
    }
    // The picture: two brackets (packages) of 64 cores with two hardware threads each.
    let picture = lines[1].split(": ").nth(1).unwrap();
    assert_eq!(picture.matches('[').count(), 2);
    assert_eq!(picture.matches("BB").count(), 1);
    assert_eq!(picture.matches('/').count(), 2 * 63);
    assert!(
        err.contains("not this machine's: ranks are not bound"),
        "{err}"
    );
}

#[test]
fn display_map_and_defaults_follow_open_mpi() {
    // Up to two ranks: by core, bound to a core. More: by NUMA node, bound to it.
    let o = mpirun(
        Some(BIG),
        &["--display-map", "-np", "2", "--do-not-launch", "true"],
    );
    let err = text(&o.stderr);
    assert!(
        err.contains("Mapping policy: core  Binding policy: core"),
        "{err}"
    );
    assert!(err.contains("rank 1: cpus 2-3 "), "{err}");
    let o = mpirun(
        Some(BIG),
        &["--display-map", "-np", "5", "--do-not-launch", "true"],
    );
    let err = text(&o.stderr);
    assert!(
        err.contains("Mapping policy: numa  Binding policy: numa"),
        "{err}"
    );
    for (rank, cpus) in ["0-63", "64-127", "128-191", "192-255", "0-63"]
        .iter()
        .enumerate()
    {
        assert!(err.contains(&format!("rank {rank}: cpus {cpus} ")), "{err}");
    }
    // ppr, PE and rank-by.
    let o = mpirun(
        Some(BIG),
        &[
            "--display-map",
            "-np",
            "4",
            "--map-by",
            "socket:PE=2",
            "--rank-by",
            "core",
            "--do-not-launch",
            "true",
        ],
    );
    let err = text(&o.stderr);
    for (rank, cpus) in ["0-3", "4-7", "128-131", "132-135"].iter().enumerate() {
        assert!(err.contains(&format!("rank {rank}: cpus {cpus} ")), "{err}");
    }
    let o = mpirun(
        Some(BIG),
        &["--display-topology", "--do-not-launch", "-np", "1", "true"],
    );
    let err = text(&o.stderr);
    assert!(
        err.contains("2 packages, 4 NUMA nodes, 8 L3, 128 cores, 256 PUs"),
        "{err}"
    );
}

#[test]
fn policies_that_cannot_be_met_are_one_clear_line() {
    let cases: &[(Option<&str>, &[&str], &str)] = &[
        (
            Some(BIG),
            &["-np", "129", "--bind-to", "core", "--oversubscribe"],
            "more ranks than cpus",
        ),
        (
            Some(BIG),
            &["-np", "129"],
            "129 ranks requested but only 128 cores are available",
        ),
        (
            Some(BIG),
            &["-np", "9", "--map-by", "ppr:1:numa"],
            "places at most 4 ranks",
        ),
        (
            Some("pack:2 core:2 pu:1"),
            &["-np", "2", "--map-by", "l3cache"],
            "has no L3 objects",
        ),
        (
            Some(BIG),
            &["-np", "1", "--cpu-set", "9999"],
            "--cpu-set names CPU 9999",
        ),
        (
            None,
            &["-np", "1", "--bind-to", "board"],
            "invalid --bind-to 'board'",
        ),
        (
            None,
            &["-np", "1", "--map-by", "chiplet"],
            "invalid --map-by 'chiplet'",
        ),
        (
            None,
            &[
                "-np",
                "1",
                "--mca",
                "hwloc_base_topo_file",
                "/nonexistent.xml",
            ],
            "no such file",
        ),
    ];
    for (syn, args, want) in cases {
        let mut all: Vec<&str> = args.to_vec();
        all.push("true");
        let o = mpirun(*syn, &all);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("mpirun: ") && err.contains(want),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn ranks_run_where_the_report_says() {
    let n = ncores().min(2).to_string();
    let o = mpirun(
        None,
        &[
            "-np",
            &n,
            "--report-bindings",
            "sh",
            "-c",
            "echo $PMI_RANK ${RMPI_BINDING:--} $(grep Cpus_allowed_list /proc/self/status | cut -f2)",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    assert_eq!(
        err.matches("MCW rank").count(),
        n.parse::<usize>().unwrap(),
        "{err}"
    );
    // Each rank's allowed CPUs are the ones mpirun planned (RMPI_BINDING), when it bound them.
    for line in out.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 3, "{out}");
        if f[1] != "-" {
            assert_eq!(f[1], f[2], "{out}");
        }
    }
    // On a synthetic machine the job still runs, unbound.
    let o = mpirun(
        Some(BIG),
        &[
            "-np",
            "2",
            "--oversubscribe",
            "sh",
            "-c",
            "echo x${RMPI_BINDING}x",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "xx\nxx\n");
}
