//! Slurm, both ways, against a real Slurm (Debian's slurmctld, slurmd and munge) that
//! `scripts/slurm.sh` starts on this machine with two nodes in network namespaces: ranks started
//! directly by `srun --mpi=pmi2` (Slurm's pmi2 plugin serves the PMI-1 wire protocol our client
//! speaks), and mpirun inside an allocation, which reads the allocation and starts its daemons
//! with srun. Everything is stopped and removed afterwards, also when a test fails.

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use rmpi_tests::*;

static SLURM: Mutex<()> = Mutex::new(());

struct Slurm {
    prefix: String,
    conf: String,
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

fn slurm_sh() -> String {
    repo_root()
        .join("scripts/slurm.sh")
        .to_str()
        .expect("utf-8 path")
        .to_string()
}

impl Slurm {
    fn up() -> Slurm {
        let guard = SLURM.lock().unwrap_or_else(|e| e.into_inner());
        remove_stale_test_hosts();
        let prefix = format!("s{:x}", std::process::id());
        let out = Command::new(slurm_sh())
            .args(["up", &prefix, "2"])
            .output()
            .expect("run scripts/slurm.sh");
        let s = Slurm {
            prefix,
            conf: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            _one_at_a_time: guard,
        };
        assert!(
            out.status.success(),
            "scripts/slurm.sh up failed (needs root, iproute2 and Debian's slurm packages): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        s
    }

    /// A Slurm client command (`srun`, `salloc`) against this Slurm, bounded.
    fn run(&self, args: &[&str]) -> Run {
        let mut cmd = Command::new(args[0]);
        cmd.args(&args[1..]).env("SLURM_CONF", &self.conf);
        run_bounded(cmd, Duration::from_secs(JOB_TIMEOUT_S))
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let _ = Command::new(slurm_sh())
            .args(["down", &self.prefix])
            .status();
    }
}

#[test]
fn srun_starts_ranks_directly_sm_within_a_node_tcp_between() {
    let slurm = Slurm::up();
    let prog = c_program("tests/c/tcp_pingpong.c");
    let r = slurm.run(&[
        "srun",
        "--mpi=pmi2",
        "--time=2",
        "-N",
        "2",
        "-n",
        "4",
        "--export=ALL,RMPI_MCA_btl_base_verbose=1",
        prog.to_str().unwrap(),
    ]);
    r.assert_ok();
    assert!(r.stdout.contains("tcp_pingpong: OK"), "{}", r.stdout);
    assert_eq!(
        r.stderr.matches("transports self,sm,tcp").count(),
        4,
        "{}",
        r.stderr
    );
}

/// `salloc -N 2 -n 4 mpirun --timeout 60 ARGS`.
fn mpirun_in_allocation(slurm: &Slurm, args: &[&str]) -> Run {
    let mpirun = bin("mpirun");
    let mut v = vec![
        "salloc",
        "--time=2",
        "-N",
        "2",
        "-n",
        "4",
        mpirun.to_str().unwrap(),
        "--timeout",
        "60",
    ];
    v.extend_from_slice(args);
    slurm.run(&v)
}

#[test]
fn mpirun_inside_an_allocation_starts_its_daemons_with_srun() {
    let slurm = Slurm::up();
    let hello = example("hello");
    let r = mpirun_in_allocation(&slurm, &[hello.to_str().unwrap()]);
    r.assert_ok();
    // By slot over the allocation's two hosts.
    for (rank, host) in [(0, "node1"), (1, "node1"), (2, "node2"), (3, "node2")] {
        assert!(
            r.stdout.contains(&format!("rank {rank} of 4 on {host}")),
            "rank {rank}: {}",
            r.stdout
        );
    }
    // One srun step starts the daemons of both hosts (their ranks inherit its step id).
    let r = mpirun_in_allocation(
        &slurm,
        &["/bin/sh", "-c", "echo step $SLURM_JOB_ID.$SLURM_STEP_ID"],
    );
    r.assert_ok();
    let steps: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("step "))
        .collect();
    assert_eq!(steps.len(), 4, "{}", r.stdout);
    assert!(steps.iter().all(|l| l == &steps[0]), "{}", r.stdout);
    let prog = c_program("tests/c/tcp_pingpong.c");
    let r = mpirun_in_allocation(
        &slurm,
        &[
            "--map-by",
            "node",
            "--mca",
            "btl_base_verbose",
            "1",
            prog.to_str().unwrap(),
        ],
    );
    r.assert_ok();
    assert!(r.stdout.contains("tcp_pingpong: OK"), "{}", r.stdout);
    assert_eq!(
        r.stderr.matches("transports self,sm,tcp").count(),
        4,
        "{}",
        r.stderr
    );
    // MPI_Comm_spawn: the parents fill node1, the children's daemon starts on node2 by a step
    // of its own.
    let prog = c_program("tests/c/dpm_hosts.c");
    let r = mpirun_in_allocation(&slurm, &["-np", "2", prog.to_str().unwrap(), "spawn", "2"]);
    r.assert_ok();
    assert!(
        r.stdout.contains("child 0 on node2\n") && r.stdout.contains("child 1 on node2\n"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("dpm_hosts: OK"), "{}", r.stdout);
}
