//! Memory-release events in real ranks under mpirun: `--version` names the provider, and with
//! `--mca memhook_verbose 1` every rank says whether it is active and prints its event counters.
//! Works for whichever provider the workspace was built with.

use rmpi_tests::*;

/// The provider `mpirun --version` names.
fn provider() -> String {
    let r = mpirun(&["--version"]);
    r.assert_ok();
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("memhook provider: "))
        .unwrap_or_else(|| panic!("no provider line in --version:\n{}", r.stdout));
    line["memhook provider: ".len()..]
        .split(':')
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn ranks_report_provider_and_events() {
    let p = provider();
    assert!(
        ["hooks", "ldpreload", "ptmalloc", "none"].contains(&p.as_str()),
        "{p}"
    );
    let prog = c_program("tests/c/memhook_release.c");
    let np = 2;
    let r = mpirun(&[
        "-np",
        "2",
        "--oversubscribe",
        "--mca",
        "memhook_verbose",
        "1",
        prog.to_str().unwrap(),
    ]);
    r.assert_ok();
    assert!(r.stdout.contains(" No Errors"), "{}", r.stdout);
    let status: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains(&format!("memhook provider {p}: ")))
        .collect();
    let counters: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains(") events: "))
        .collect();
    assert_eq!(status.len(), np, "{}", r.stderr);
    assert_eq!(counters.len(), np, "{}", r.stderr);
    if p == "none" {
        assert!(
            status.iter().all(|l| l.contains("unavailable")),
            "{}",
            r.stderr
        );
        assert!(
            counters.iter().all(|l| l.ends_with("no events")),
            "{}",
            r.stderr
        );
    } else {
        assert!(
            status.iter().all(|l| l.ends_with(": active")),
            "{}",
            r.stderr
        );
        // At least the explicit munmap (and, for hooks, free() unmapping the 1 MiB block).
        assert!(
            counters.iter().all(|l| l.contains("munmap=")),
            "{}",
            r.stderr
        );
        if p == "hooks" {
            // The self-test's, free()'s (inside libc) and the explicit one.
            for l in &counters {
                let n: u64 = l
                    .split("munmap=")
                    .nth(1)
                    .unwrap()
                    .split('/')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!(n >= 3, "{l}");
            }
        }
    }
}
