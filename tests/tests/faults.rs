//! Fault injection (issue 15 item 2): a rank ends itself by SIGKILL, SIGSEGV or exit without
//! MPI_Finalize while every rank is inside the same operation (`tests/c/fault.c`): MPI_Init's
//! PMI exchange, eager and rendezvous transfers, collectives, communicator creation,
//! MPI_Finalize. Each time the job must end by mpirun's teardown (never `--timeout`), with one
//! line naming the rank, its pid and the cause, the documented exit code (128 + signal, or the
//! rank's exit code), and nothing left behind. Over sm, and over ib with RMPI_TEST_BTL=ib.
//! The teardown times (fault to mpirun's exit) are printed: `cargo test --test faults -- --nocapture`.

use rmpi_tests::*;
use std::time::{SystemTime, UNIX_EPOCH};

const POINTS: &[&str] = &[
    "init",
    "eager",
    "rndv",
    "bcast",
    "allreduce",
    "alltoall",
    "barrier",
    "split",
    "finalize",
];

/// Runs one fault at np 3 (victim: rank 1) and checks the job's end; returns the teardown time
/// in ms (from the victim's last word to mpirun's exit, ±20 ms of polling).
fn fault(point: &str, how: &str) -> f64 {
    let m = marker(&format!("fault-{point}-{how}"));
    let prog = c_program("tests/c/fault.c");
    let r = mpirun_np(3, &prog, &[point, how, "1", &m]);
    let ended = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as f64;
    let what = format!("{point}/{how}: {}{}", r.stdout, r.stderr);
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("fault "))
        .unwrap_or_else(|| panic!("{what}"));
    let mut f = line.split_whitespace().skip(1);
    let pid: i32 = f.next().and_then(|p| p.parse().ok()).expect("pid");
    let at: f64 = f.next().and_then(|t| t.parse().ok()).expect("time");
    let (code, cause) = match how {
        "kill" => (137, "was killed by signal 9 (SIGKILL)".to_string()),
        "segv" => (139, "was killed by signal 11 (SIGSEGV)".to_string()),
        _ => (5, "exited with code 5".to_string()),
    };
    assert_eq!(r.code, Some(code), "{what}");
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("mpirun: "))
        .collect();
    assert_eq!(lines.len(), 1, "{what}");
    assert!(
        lines[0].starts_with(&format!("mpirun: rank 1 (pid {pid}) {cause}"))
            && lines[0].ends_with("; killing the job"),
        "{what}"
    );
    assert!(!r.stderr.contains("still running 30 s"), "{what}");
    for _ in 0..50 {
        if processes_with(&m).is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        processes_with(&m),
        Vec::<u32>::new(),
        "{what}: ranks left running"
    );
    (ended - at) / 1e6
}

fn campaign(how: &str) {
    let mut table = Vec::new();
    for p in POINTS {
        table.push(format!("{p} {:.0} ms", fault(p, how)));
    }
    println!(
        "teardown after {how} ({}): {}",
        suite_btl().unwrap_or("sm".into()),
        table.join(", ")
    );
    assert_eq!(
        shm_leftovers(),
        Vec::<String>::new(),
        "files left in /dev/shm"
    );
}

#[test]
fn sigkill_at_every_point() {
    campaign("kill");
}

#[test]
fn sigsegv_at_every_point() {
    campaign("segv");
}

#[test]
fn exit_without_finalize_at_every_point() {
    campaign("exit");
}
