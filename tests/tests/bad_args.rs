//! The whole C ABI against bad arguments: the programs `tools/gen_bad_args.py` writes into
//! tests/c/generated/ call every function with one argument at a time made invalid (null,
//! reserved, garbage and freed handles, negative and overflowing counts, out-of-range ranks,
//! roots and tags, NULL output pointers, predefined objects freed) under MPI_ERRORS_RETURN,
//! each case in a forked child; and every function before MPI_Init and after MPI_Finalize.
//! A case fails on a crash, a hang, MPI_SUCCESS, a class other than the one the standard names
//! (or MPI_ERR_UNKNOWN/OTHER where it names none) or an empty message. Each run prints its
//! counts: cases tried, stubs (MPI_ERR_UNSUPPORTED_OPERATION), classes returned; the run that
//! completes the set (7 families, 2 phases) prints the sums as one `bad_args total` line.

use rmpi_tests::*;
use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// Program runs whose counts make the total: the 7 families and the 2 phases.
const RUNS: usize = 9;

#[derive(Default)]
struct Total {
    runs: usize,
    /// cases, failed, unsupported, no class named
    counts: [u64; 4],
    classes: BTreeMap<String, u64>,
}

static TOTAL: Mutex<Total> = Mutex::new(Total {
    runs: 0,
    counts: [0; 4],
    classes: BTreeMap::new(),
});

/// Add the counts `prog` printed (its first rank's lines: "N cases, F failed, U unsupported
/// (stubs), C with no class named" and "classes returned: CLASS=n ..."); print the total
/// once every run is in.
fn tally(prog: &str, stdout: &str) {
    let mut t = TOTAL.lock().unwrap_or_else(|p| p.into_inner());
    let counts = stdout.lines().find_map(|l| {
        l.strip_prefix(prog)?
            .strip_prefix(": ")?
            .strip_suffix(" with no class named")
    });
    let classes = stdout
        .lines()
        .find_map(|l| l.strip_prefix(prog)?.strip_prefix(": classes returned:"));
    if let Some(c) = counts {
        let nums = c.split(' ').filter_map(|w| w.parse::<u64>().ok());
        for (slot, n) in t.counts.iter_mut().zip(nums) {
            *slot += n;
        }
    }
    for (class, n) in classes
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
    {
        *t.classes.entry(class.to_string()).or_default() += n.parse::<u64>().unwrap_or(0);
    }
    t.runs += 1;
    if t.runs == RUNS {
        let [cases, failed, stubs, unnamed] = t.counts;
        let mut by: Vec<_> = t.classes.iter().collect();
        by.sort_by(|a, b| b.1.cmp(a.1));
        let by: Vec<String> = by.iter().map(|(c, n)| format!("{c}={n}")).collect();
        println!(
            "bad_args total: {cases} cases, {failed} failed, {stubs} unsupported (stubs), \
             {unnamed} where the standard names no class; classes returned: {}",
            by.join(" ")
        );
    }
}

fn family(name: &str) {
    family_np(name, 2);
}

fn family_np(name: &str, np: usize) {
    let p = c_program(&format!("tests/c/generated/bad_args_{name}.c"));
    let r = mpirun_np(np, &p, &[]);
    print!("{}", r.stdout);
    tally(&format!("bad_args_{name}"), &r.stdout);
    assert!(
        r.ok() && r.stdout.contains(&format!("bad_args_{name}: ")) && !r.stdout.contains("FAIL"),
        "bad_args_{name}:\n{}\n{}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn generated_programs_are_current() {
    let mut cmd = Command::new("python3");
    cmd.arg(repo_root().join("tools/gen_bad_args.py"))
        .arg("--check");
    let r = run_bounded(cmd, Duration::from_secs(60));
    assert!(r.ok(), "{}{}", r.stdout, r.stderr);
}

#[test]
fn bad_args_p2p() {
    family("p2p");
}

#[test]
fn bad_args_coll() {
    family("coll");
}

/// At np 3 (not a power of two): the communicator calls check ranks against the size.
#[test]
fn bad_args_comm() {
    family_np("comm", 3);
}

#[test]
fn bad_args_dtype() {
    family("dtype");
}

#[test]
fn bad_args_rma() {
    family("rma");
}

#[test]
fn bad_args_topo() {
    family("topo");
}

#[test]
fn bad_args_file() {
    family("file");
}

/// Before MPI_Init and after MPI_Finalize: every call an error (never a crash); what the
/// standard allows then succeeds. At np 3, a size that is not a power of two.
#[test]
fn bad_args_outside_init_and_finalize() {
    let p = c_program("tests/c/generated/bad_args_phases.c");
    for phase in ["before", "after"] {
        let r = mpirun_np(3, &p, &[phase]);
        print!("{}", r.stdout);
        tally(&format!("bad_args_phases {phase}"), &r.stdout);
        assert!(
            r.ok() && r.stdout.contains("bad_args_phases") && !r.stdout.contains("FAIL"),
            "{phase}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}
