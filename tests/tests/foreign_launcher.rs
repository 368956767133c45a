//! Our ranks started by MPICH's Hydra (`mpiexec.mpich`), a foreign PMI-1 launcher: local rank 0
//! creates the segment, publishes it through PMI and unlinks it once all have attached.

use std::process::Command;
use std::time::Duration;

use rmpi_tests::*;

fn hydra() -> Option<&'static str> {
    ["mpiexec.mpich", "mpiexec.hydra"].into_iter().find(|p| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn hydra_runs_our_pingpong() {
    let Some(launcher) = hydra() else {
        println!("SKIPPED: mpiexec.mpich is not installed (Debian package mpich)");
        return;
    };
    for np in ["2", "3"] {
        let mut cmd = Command::new(launcher);
        cmd.args(["-n", np])
            .arg(example("pingpong"))
            .args(["0", "1", "4097", "1048576"]);
        let r = run_bounded(cmd, Duration::from_secs(JOB_TIMEOUT_S));
        r.assert_ok();
        assert!(r.stdout.contains("pingpong: OK"), "{}", r.stdout);
    }
    assert_eq!(
        shm_leftovers(),
        Vec::<String>::new(),
        "files left in /dev/shm"
    );
}
