//! btl-ib through real jobs on the software verbs provider (`--mca btl ib,self --mca
//! btl_ib_device soft`): data paths, the registration cache against memory reuse (for whichever
//! memhook provider the workspace was built with), and the failures users must see clearly:
//! unreachable pairs, no device, pinned-memory limits, a bad rkey, a peer dying.

use std::process::Command;
use std::time::Duration;

use rmpi_tests::*;

const IB: [&str; 6] = ["--mca", "btl", "ib,self", "--mca", "btl_ib_device", "soft"];

fn ib_job(np: usize, extra: &[&str], prog: &str, args: &[&str]) -> Run {
    let np = np.to_string();
    let mut v = vec!["-np", np.as_str(), "--oversubscribe"];
    v.extend_from_slice(&IB);
    v.extend_from_slice(extra);
    v.push(prog);
    v.extend_from_slice(args);
    mpirun(&v)
}

/// The memhook provider `mpirun --version` names.
fn memhook_provider() -> String {
    let r = mpirun(&["--version"]);
    r.assert_ok();
    let line = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("memhook provider: "))
        .unwrap_or_else(|| panic!("no provider line in --version:\n{}", r.stdout))
        .to_string();
    line.split(':').next().unwrap().to_string()
}

/// mpirun under a lowered RLIMIT_MEMLOCK (KiB).
fn with_memlock(kib: usize, args: &[&str]) -> Run {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -l {kib} && exec \"$@\""))
        .arg("sh")
        .arg(bin("mpirun"))
        .args(["--timeout", "60"])
        .args(args);
    run_bounded(cmd, Duration::from_secs(90))
}

#[test]
fn pingpong_over_ib_every_size() {
    let prog = example("pingpong");
    for np in [2, 3] {
        let r = ib_job(
            np,
            &["--mca", "btl_base_verbose", "1"],
            prog.to_str().unwrap(),
            &[],
        );
        r.assert_ok();
        assert!(r.stdout.contains("OK"), "{}", r.stdout);
        assert!(r.stderr.contains("btl ib: device soft"), "{}", r.stderr);
    }
}

#[test]
fn small_windows_and_buffers_still_deliver_everything() {
    // Two credits per peer and 256-byte fragments: flow control and fragmentation under stress.
    // Sizes up to 4 MiB: a 16 MiB message is over the rcache bound that RLIMIT_MEMLOCK sets
    // here and would cross as 65,536 bounce fragments each way (minutes in a debug build on a
    // loaded machine); `messages_over_the_memlock_limit_fall_back_to_bounce_buffers` covers that.
    let prog = example("pingpong");
    let extra = [
        "--mca",
        "btl_ib_recv_bufs",
        "2",
        "--mca",
        "btl_ib_send_bufs",
        "3",
        "--mca",
        "btl_ib_buf_size",
        "256",
    ];
    let sizes = [
        "0", "1", "255", "256", "257", "4095", "4096", "4097", "65536", "1048576", "4194304",
    ];
    ib_job(3, &extra, prog.to_str().unwrap(), &sizes).assert_ok();
}

#[test]
fn c_programs_over_ib() {
    for (src, np) in [
        ("tests/c/p2p_many.c", 4),
        ("tests/c/coll_allreduce.c", 5),
        ("tests/c/coll_alltoall.c", 4),
        ("tests/c/p2p_ssend.c", 2),
    ] {
        let prog = c_program(src);
        let r = ib_job(np, &[], prog.to_str().unwrap(), &[]);
        r.assert_ok();
        assert!(r.stdout.contains("No Errors"), "{src}: {}", r.stdout);
    }
}

/// Free and malloc again at the same address between sends: the receiver gets the new data,
/// whatever the memhook provider (the cache is on where events arrive, off otherwise).
#[test]
fn cache_follows_free_and_malloc_at_the_same_address() {
    let prog = c_program("tests/c/ib_reuse.c");
    let r = ib_job(
        2,
        &["--mca", "btl_ib_verbose", "1"],
        prog.to_str().unwrap(),
        &[],
    );
    r.assert_ok();
    assert!(r.stdout.contains(" No Errors"), "{}", r.stdout);
    assert!(!r.stdout.contains("STALE"), "{}", r.stdout);
    let cache_lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("registration cache"))
        .collect();
    assert!(!cache_lines.is_empty(), "{}", r.stderr);
    if memhook_provider() == "none" {
        assert!(
            cache_lines.iter().all(|l| l.contains("off")),
            "with provider none the cache must turn itself off:\n{}",
            r.stderr
        );
    }
}

/// The same program with the cache forced on although no events arrive (provider `none`): the
/// stale registration is used, and the software provider notices that its pages changed. This
/// is what proves the test above can fail.
#[test]
fn forced_cache_without_events_is_caught() {
    if memhook_provider() != "none" {
        eprintln!("skipped: needs the workspace built with memory-manager/none");
        return;
    }
    let prog = c_program("tests/c/ib_reuse.c");
    let r = ib_job(
        2,
        &["--mca", "btl_ib_leave_pinned", "force"],
        prog.to_str().unwrap(),
        &[],
    );
    if r.stdout.contains("same address 0/") {
        eprintln!("skipped: malloc never gave the freed address back, so nothing could go stale");
        return;
    }
    assert!(
        !r.ok(),
        "a stale registration went unnoticed:\n{}{}",
        r.stdout,
        r.stderr
    );
    assert!(
        r.stderr.contains("remapped") || r.stdout.contains("STALE"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn unreachable_pairs_fail_at_init_naming_the_pair() {
    let prog = example("hello");
    let p = prog.to_str().unwrap();
    let r = mpirun(&["-np", "2", "--mca", "btl", "self", p]);
    assert!(!r.ok());
    assert!(
        r.stderr.contains("no transport reaches rank"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("sm is not selected"), "{}", r.stderr);
    let r = mpirun(&["-np", "2", "--mca", "btl", "sm", p]);
    assert!(!r.ok());
    assert!(r.stderr.contains("self is not selected"), "{}", r.stderr);
    // No RDMA device here: forcing the real provider names the pair and the reason.
    let r = mpirun(&[
        "-np",
        "2",
        "--mca",
        "btl",
        "ib,self",
        "--mca",
        "btl_ib_device",
        "verbs",
        p,
    ]);
    assert!(!r.ok());
    assert!(
        r.stderr.contains("no transport reaches rank"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("btl ib"), "{}", r.stderr);
}

#[test]
fn no_device_disqualifies_ib_and_runs_on_sm() {
    let prog = example("pingpong");
    let r = mpirun(&[
        "-np",
        "2",
        "--mca",
        "btl",
        "self,sm,ib",
        "--mca",
        "btl_ib_device",
        "auto",
        "--mca",
        "btl_base_verbose",
        "1",
        prog.to_str().unwrap(),
    ]);
    r.assert_ok();
    assert!(r.stderr.contains("btl ib: not needed"), "{}", r.stderr);
    assert!(r.stderr.contains("btl ib: disqualified"), "{}", r.stderr);
    assert!(r.stderr.contains("transports self,sm"), "{}", r.stderr);
}

#[test]
fn bounce_buffers_over_the_memlock_limit_fail_clearly() {
    let prog = example("pingpong");
    let mut args = vec!["-np", "2"];
    args.extend_from_slice(&IB);
    args.push(prog.to_str().unwrap());
    let r = with_memlock(64, &args);
    assert!(!r.ok());
    assert!(r.stderr.contains("cannot register the"), "{}", r.stderr);
    assert!(r.stderr.contains("ulimit -l"), "{}", r.stderr);
}

#[test]
fn messages_over_the_memlock_limit_fall_back_to_bounce_buffers() {
    // Enough for the bounce buffers, not for a 4 MiB message: it is streamed, correctly.
    let prog = c_program("tests/c/ib_reuse.c");
    let mut args = vec!["-np", "2"];
    args.extend_from_slice(&IB);
    args.push(prog.to_str().unwrap());
    let r = with_memlock(2048, &args);
    r.assert_ok();
    assert!(r.stdout.contains(" No Errors"), "{}", r.stdout);
    assert!(r.stderr.contains("cannot register a"), "{}", r.stderr);
}

#[test]
fn bad_rkey_is_a_clear_error() {
    let prog = example("pingpong");
    let r = ib_job(
        2,
        &["--mca", "btl_ib_debug_bad_rkey", "1"],
        prog.to_str().unwrap(),
        &[],
    );
    assert!(!r.ok(), "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("IBV_WC_REM_ACCESS_ERR"), "{}", r.stderr);
    assert!(r.stderr.contains("rkey"), "{}", r.stderr);
}

#[test]
fn peer_dying_mid_transfer_ends_the_job() {
    let prog = c_program("tests/c/ib_peer_dies.c");
    let r = ib_job(2, &[], prog.to_str().unwrap(), &[]);
    assert!(!r.ok(), "{}{}", r.stdout, r.stderr);
    assert_ne!(r.code, Some(124), "the job hung:\n{}", r.stderr);
    assert!(!r.stdout.contains("unnoticed"), "{}", r.stdout);
    assert!(r.stderr.contains("rank 1"), "{}", r.stderr);
}
