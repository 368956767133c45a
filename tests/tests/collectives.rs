//! Collectives and reductions under the real mpirun: C programs (MPICH-style, printing
//! " No Errors") and the Rust API program, at 1, 2, 3, 4, 5, 8 and 13 ranks (oversubscribed on
//! small machines; 13 = 8 + 5 exercises the non-power-of-two paths with more ranks).

use rmpi_tests::*;

const NPS: [usize; 7] = [1, 2, 3, 4, 5, 8, 13];

fn c_test(name: &str) {
    let prog = c_program(&format!("tests/c/{name}.c"));
    for np in NPS {
        let r = mpirun_np(np, &prog, &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "{name} at np {np}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn c_bcast() {
    c_test("coll_bcast");
}

/// Blocking collectives repeated with the same arguments reuse their schedule (coll/cache.rs).
#[test]
fn c_repeated_calls_and_freed_handles() {
    c_test("coll_cache");
}

#[test]
fn c_reduce() {
    c_test("coll_reduce");
}

#[test]
fn c_allreduce() {
    c_test("coll_allreduce");
}

#[test]
fn c_gather_scatter_allgather() {
    c_test("coll_gather");
}

#[test]
fn c_alltoall() {
    c_test("coll_alltoall");
}

#[test]
fn c_scan_reduce_scatter() {
    c_test("coll_scan");
}

#[test]
fn c_nonblocking_and_p2p_mix() {
    c_test("coll_nonblocking");
}

/// A non-blocking collective started before a blocking one on one rank and after it on the
/// others matches (separate tag spaces), single-threaded and under MPI_THREAD_MULTIPLE, where
/// MPI_Barrier runs as a schedule (mpi4py's ULFM testIAgree).
#[test]
fn c_nonblocking_crossing_blocking() {
    let prog = c_program("tests/c/coll_nb_blocking_cross.c");
    for level in ["single", "multiple"] {
        for np in [2, 3, 5] {
            let r = mpirun_np(np, &prog, &[level]);
            r.assert_ok();
            assert!(
                r.stdout.contains(" No Errors"),
                "{level} at np {np}:\n{}\n{}",
                r.stdout,
                r.stderr
            );
        }
    }
}

#[test]
fn c_user_ops() {
    c_test("coll_userop");
}

#[test]
fn rust_collectives_api() {
    for np in NPS {
        let r = mpirun_np(np, &bin("collectives"), &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains("collectives: OK"),
            "np {np}: {}",
            r.stdout
        );
    }
}

/// The hierarchical bcast, reduce, allreduce and barrier (coll/hier.rs): the collective programs
/// and the Rust API program again, with the ranks told they sit in several L3 domains
/// (`RMPI_LOCALITY_ALL`, as mpirun sets it from its placement on a machine that has them):
/// round-robin domains (no domain contiguous in rank order), blocks, and one rank alone.
#[test]
fn hierarchical_collectives_by_l3_domain() {
    let layouts: &[(usize, &[u32])] = &[
        (5, &[0, 1, 0, 1, 0]),
        (6, &[0, 0, 0, 1, 1, 1]),
        (7, &[2, 0, 1, 2, 0, 1, 2]),
        (8, &[0, 0, 0, 0, 0, 0, 0, 1]),
        (13, &[0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0]),
    ];
    let progs: Vec<_> = [
        "coll_bcast",
        "coll_reduce",
        "coll_allreduce",
        "coll_userop",
        "coll_nonblocking",
    ]
    .iter()
    .map(|n| (n.to_string(), c_program(&format!("tests/c/{n}.c"))))
    .collect();
    for (np, domains) in layouts {
        let all: Vec<String> = domains.iter().map(|d| format!("0.0.{d}")).collect();
        let env = format!("RMPI_LOCALITY_ALL={}", all.join(","));
        let np_s = np.to_string();
        for (name, p) in progs
            .iter()
            .map(|(n, p)| (n.as_str(), p.to_str().unwrap()))
            .chain([(
                "collectives",
                bin("collectives").to_str().unwrap().to_string().leak() as &str,
            )])
        {
            let r = mpirun(&["-np", &np_s, "--oversubscribe", "-x", &env, p]);
            r.assert_ok();
            assert!(
                r.stdout.contains(" No Errors") || r.stdout.contains("collectives: OK"),
                "{name} at np {np} with {env}:\n{}\n{}",
                r.stdout,
                r.stderr
            );
        }
    }
}

/// Ranks told they sit in `domains` L3 domains (`RMPI_LOCALITY_ALL`), as mpirun's placement
/// says on a machine with several; `at(rank)` names a rank's domain.
fn locality(np: usize, at: impl Fn(usize) -> usize) -> String {
    let all: Vec<String> = (0..np).map(|r| format!("0.0.{}", at(r))).collect();
    format!("RMPI_LOCALITY_ALL={}", all.join(","))
}

/// Every algorithm `knob` can force (1..=`last`; 0 is the automatic choice the other tests run)
/// under the collective programs at np 3, 5 and 8, each checking every value: blocking,
/// non-blocking (`I` forms), persistent (coll_persistent; the Rust API's persistent_coll) and
/// derived datatypes where listed.
/// The ranks sit in two round-robin L3 domains, so the hierarchical algorithm applies too; a
/// forced one that cannot (a non-commutative op in coll_userop, fewer elements than ranks)
/// must still give the right answer.
fn forced_algorithms(knob: &str, last: usize, programs: &[&str]) {
    let progs: Vec<(String, String)> = programs
        .iter()
        .map(|&n| {
            // The Rust API's programs (tests/src/bin) print "<name>: OK".
            let p = if ["collectives", "persistent_coll", "nonblocking"].contains(&n) {
                bin(n)
            } else {
                c_program(&format!("tests/c/{n}.c"))
            };
            (n.to_string(), p.to_str().unwrap().to_string())
        })
        .collect();
    for np in [3usize, 5, 8] {
        let env = locality(np, |r| r % 2);
        let np_s = np.to_string();
        for v in 1..=last {
            let v_s = v.to_string();
            for (name, p) in &progs {
                let r = mpirun(&[
                    "-np",
                    &np_s,
                    "--oversubscribe",
                    "-x",
                    &env,
                    "--mca",
                    knob,
                    &v_s,
                    p,
                ]);
                r.assert_ok();
                assert!(
                    r.stdout.contains(" No Errors") || r.stdout.contains(&format!("{name}: OK")),
                    "{name} at np {np} with {knob}={v}:\n{}\n{}",
                    r.stdout,
                    r.stderr
                );
            }
        }
    }
}

#[test]
fn forced_allreduce_algorithms() {
    forced_algorithms(
        "coll_tuned_allreduce_algorithm",
        4,
        &[
            "coll_allreduce",
            "coll_userop",
            "coll_derived",
            "coll_persistent",
            "persistent_coll",
        ],
    );
}

#[test]
fn forced_bcast_algorithms() {
    forced_algorithms(
        "coll_tuned_bcast_algorithm",
        3,
        &["coll_bcast", "coll_dtype", "coll_persistent", "collectives"],
    );
}

#[test]
fn forced_reduce_algorithms() {
    forced_algorithms(
        "coll_tuned_reduce_algorithm",
        3,
        &["coll_reduce", "coll_persistent"],
    );
}

#[test]
fn forced_barrier_algorithms() {
    forced_algorithms(
        "coll_tuned_barrier_algorithm",
        2,
        &["coll_nonblocking", "coll_persistent", "collectives"],
    );
}

#[test]
fn forced_allgather_algorithms() {
    forced_algorithms(
        "coll_tuned_allgather_algorithm",
        4,
        &[
            "coll_gather",
            "coll_derived",
            "coll_persistent",
            "collectives",
        ],
    );
}

/// The hierarchical allgather(v) chosen automatically (coll/hier.rs): blocks must land at
/// their ranks' offsets whatever the domains' shapes: round-robin (no domain contiguous),
/// blocks, one rank alone, and three uneven domains.
#[test]
fn hierarchical_allgather_by_l3_domain() {
    let layouts: &[(usize, &dyn Fn(usize) -> usize)] = &[
        (5, &|r| r % 2),
        (8, &|r| r % 3),
        (6, &|r| r / 3),
        (8, &|r| usize::from(r == 7)),
        (7, &|r| [0, 0, 1, 2, 2, 2, 1][r]),
    ];
    let progs: Vec<_> = ["coll_gather", "coll_derived", "coll_persistent"]
        .iter()
        .map(|n| (n.to_string(), c_program(&format!("tests/c/{n}.c"))))
        .collect();
    for (np, at) in layouts {
        let env = locality(*np, at);
        let np_s = np.to_string();
        for (name, p) in &progs {
            let r = mpirun(&[
                "-np",
                &np_s,
                "--oversubscribe",
                "-x",
                &env,
                p.to_str().unwrap(),
            ]);
            r.assert_ok();
            assert!(
                r.stdout.contains(" No Errors"),
                "{name} at np {np} with {env}:\n{}\n{}",
                r.stdout,
                r.stderr
            );
        }
    }
}

/// `coll_hier=0` turns off only the automatic choice of the hierarchy: a knob that forces the
/// hierarchical algorithm still runs it, and gets every value right.
#[test]
fn forced_hierarchy_with_coll_hier_off() {
    let env = locality(5, |r| r % 2);
    for (knob, v, prog) in [
        (
            "coll_tuned_allreduce_algorithm",
            "hierarchical",
            "coll_allreduce",
        ),
        ("coll_tuned_bcast_algorithm", "hierarchical", "coll_bcast"),
        ("coll_tuned_reduce_algorithm", "hierarchical", "coll_reduce"),
        (
            "coll_tuned_barrier_algorithm",
            "hierarchical",
            "coll_nonblocking",
        ),
        (
            "coll_tuned_allgather_algorithm",
            "hierarchical",
            "coll_gather",
        ),
    ] {
        let p = c_program(&format!("tests/c/{prog}.c"));
        let r = mpirun(&[
            "-np",
            "5",
            "--oversubscribe",
            "-x",
            &env,
            "--mca",
            "coll_hier",
            "0",
            "--mca",
            knob,
            v,
            p.to_str().unwrap(),
        ]);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "{prog} with {knob}={v}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

/// A collective's sends stay eager up to sm's eager limit toward peers the line probe calls
/// far (a bcast tree would otherwise wait for a rendezvous handshake at each level), while a
/// point-to-point message of the same size goes by rendezvous.
#[test]
fn coll_sends_to_far_peers_stay_eager() {
    let p = c_program("tests/c/coll_far_eager.c");
    let prog = p.to_str().expect("utf-8 path");
    let r = mpirun(&[
        "-np",
        "2",
        "--mca",
        "btl_sm_eager_limit_far",
        "4k",
        "--mca",
        "btl_sm_eager_limit_stream",
        "4k",
        "--mca",
        "btl_sm_near_ns",
        "0",
        "--mca",
        "btl_base_verbose",
        "1",
        prog,
    ]);
    r.assert_no_errors("coll_far_eager, every pair far");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if suite_btl().is_some() || cores < 2 || !r.stderr.contains("eager 4096") {
        return; // no probe here: every limit is the eager limit
    }
    // Rendezvous receives per rank: single copy + split + streamed.
    let rndv = |rank: u32| -> u64 {
        let line = r
            .stderr
            .lines()
            .find(|l| l.contains(&format!("rank {rank}: rendezvous receives:")))
            .unwrap_or_else(|| panic!("no rendezvous line for rank {rank}:\n{}", r.stderr));
        let nums: Vec<u64> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect();
        // "rank R: rendezvous receives: G read ..., C split ... (B of them ...), S streamed"
        nums[1] + nums[2] + nums[4]
    };
    assert_eq!(rndv(0), 0, "{}", r.stderr);
    assert_eq!(rndv(1), 1, "{}", r.stderr);
}
