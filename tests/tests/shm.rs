//! btl-sm at the job level: the memory model against the real segment, both layouts under real
//! oversubscribed jobs, and running out of memory for the segment.

use rmpi_tests::*;

/// The test program, compiled once for all tests here (they run in parallel).
fn prog() -> std::path::PathBuf {
    static P: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    P.get_or_init(|| c_program("tests/c/shm_alltoall.c"))
        .clone()
}

/// `mpirun --shm-report --json -np n [mca...]`'s segment_size.
fn model_size(n: usize, mca: &[&str]) -> u64 {
    let np = n.to_string();
    let mut args = vec!["--shm-report", "--json", "-np", &np];
    args.extend_from_slice(mca);
    let r = mpirun(&args);
    r.assert_ok();
    let key = "\"segment_size\":";
    let at = r.stdout.find(key).expect("segment_size in the JSON") + key.len();
    let digits: String = r.stdout[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().unwrap()
}

fn real_size(n: usize, mca: &[&str], prog: &std::path::Path) -> u64 {
    let np = n.to_string();
    let mut args = vec!["-np", &np, "--oversubscribe"];
    args.extend_from_slice(mca);
    args.push(prog.to_str().unwrap());
    let r = mpirun(&args);
    r.assert_ok();
    assert!(r.stdout.contains(" No Errors"), "n={n}: {}", r.stdout);
    let line = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("segment_size "))
        .expect("rank 0 reports the segment size");
    line.trim().parse().unwrap()
}

#[test]
fn model_equals_real_segment() {
    let p = prog();
    for n in [2usize, 8, 32, 64] {
        let (m, r) = (model_size(n, &[]), real_size(n, &[], &p));
        assert_eq!(m, r, "n={n}: model {m} bytes, real {r} bytes");
    }
    // Both layouts at one n, and the thread-multiple layout.
    let fifo = ["--mca", "btl_sm_fastbox_max_procs", "0"];
    assert_eq!(model_size(8, &fifo), real_size(8, &fifo, &p));
    let mt = ["--mca", "btl_sm_thread_layout", "multi"];
    assert_eq!(model_size(8, &mt), real_size(8, &mt, &p));
    assert!(model_size(8, &mt) > model_size(8, &[]));
}

#[test]
fn fifo_layout_with_tiny_pools_still_correct() {
    let p = prog();
    let mca = [
        "--mca",
        "btl_sm_fastbox_max_procs",
        "0",
        "--mca",
        "btl_sm_fifo_size",
        "4",
        "--mca",
        "btl_sm_fragments",
        "2",
        "--mca",
        "btl_sm_fragment_size",
        "256",
    ];
    real_size(6, &mca, &p);
}

#[test]
fn report_and_mca_list() {
    let r = mpirun(&["--shm-report", "-np", "1024"]);
    r.assert_ok();
    for s in [
        "FIFOs+queues",
        "eager frags",
        "other",
        "10418",
        "924",
        "23658",
    ] {
        assert!(r.stdout.contains(s), "{s}: {}", r.stdout);
    }
    assert!(model_size(1024, &[]) <= 300_000_000);
    let r = mpirun(&["--mca-list"]);
    r.assert_ok();
    for p in [
        "btl_sm_eager_limit",
        "btl_sm_fifo_size",
        "btl_sm_fragment_size",
        "btl_sm_fragments",
        "btl_sm_thread_layout",
        "btl_sm_fastbox_max_procs",
        "default:",
    ] {
        assert!(r.stdout.contains(p), "{p}: {}", r.stdout);
    }
    let r = mpirun(&["--shm-report", "-np", "4", "--mca", "btl_sm_fragments", "0"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("btl_sm_fragments"), "{}", r.stderr);
}

/// The launcher refuses a segment larger than the available memory, naming the tunables and
/// the size, and starts no rank.
#[test]
fn segment_larger_than_memory_is_refused_up_front() {
    let p = prog();
    // 4 x 128 x 1 GiB: more than any machine this runs on, below the 1 TiB sanity ceiling.
    let mca = [
        "--mca",
        "btl_sm_fastbox_max_procs",
        "0",
        "--mca",
        "btl_sm_fragment_size",
        "1g",
        "--mca",
        "btl_sm_fragments",
        "128",
    ];
    let need = model_size(4, &mca).to_string();
    let mut args = vec!["-np", "4", "--oversubscribe"];
    args.extend_from_slice(&mca);
    args.push(p.to_str().unwrap());
    let r = mpirun(&args);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("out of memory for the shared segment")
            && r.stderr.contains("btl_sm_fragments")
            && r.stderr.contains(&need),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("No Errors"));
}

/// When the ranks cannot map the segment (address-space limit), every rank fails MPI_Init with
/// the same message and the job ends with an error instead of a crash or a hang.
#[test]
fn ranks_that_cannot_map_report_it() {
    let p = prog();
    let mpirun_path = bin("mpirun");
    let cmd = format!(
        "ulimit -v 4000000; exec {} --timeout 60 -np 3 --oversubscribe --mca \
         btl_sm_fastbox_max_procs 0 --mca btl_sm_fragment_size 64m --mca btl_sm_fragments 32 {}",
        mpirun_path.display(),
        p.display()
    );
    let mut c = std::process::Command::new("sh");
    c.arg("-c").arg(cmd);
    let r = run_bounded(c, std::time::Duration::from_secs(90));
    assert_ne!(r.code, Some(0));
    assert_ne!(r.code, Some(124), "must not hang: {}", r.stderr);
    assert!(
        r.stderr.contains("out of memory for the shared segment")
            && r.stderr.contains("btl_sm_fragment_size"),
        "{}",
        r.stderr
    );
}

/// Eager, streamed rendezvous (CTS/DATA) and CMA rendezvous (RTS/FIN) over the FIFO layout.
#[test]
fn fifo_layout_carries_every_protocol() {
    let pingpong = c_program("examples/c/pingpong.c");
    for single_copy in ["none", "cma", "auto"] {
        let r = mpirun(&[
            "-np",
            "2",
            "--oversubscribe",
            "--mca",
            "btl_sm_fastbox_max_procs",
            "0",
            "--mca",
            "btl_sm_single_copy",
            single_copy,
            pingpong.to_str().unwrap(),
            "0",
            "1",
            "40",
            "41",
            "4095",
            "4096",
            "4097",
            "16384",
            "16385",
            "1048576",
            "16777216",
        ]);
        r.assert_ok();
        assert!(
            r.stdout.contains("pingpong: OK"),
            "{single_copy}: {}",
            r.stdout
        );
    }
}
