//! The soak (issue 15 item 5): random traffic with every byte, status and ordering guarantee
//! checked (`benchmarks/src/bin/soak.rs`), at 16 oversubscribed ranks for 20 s; and 50 short
//! jobs started back to back, none hanging and none leaving a process behind.
//! `scripts/soak.sh` runs the long forms (10 minutes, 500 jobs).

use rmpi_tests::*;

#[test]
fn sixteen_ranks_for_twenty_seconds_with_every_byte_checked() {
    // Rounds in flight when the 20 s are up still finish: room beyond the default limit.
    let soak = bin("soak");
    let r = mpirun(&[
        "-np",
        "16",
        "--oversubscribe",
        "--timeout",
        "300",
        soak.to_str().unwrap(),
        "--seconds",
        "20",
    ]);
    r.assert_ok();
    assert!(r.stdout.starts_with("soak: 16 ranks, "), "{}", r.stdout);
    assert!(r.stdout.trim_end().ends_with(", no errors"), "{}", r.stdout);
    println!("{}", r.stdout.trim_end());
}

#[test]
fn the_checker_catches_one_flipped_byte() {
    let r = mpirun_np(3, &bin("soak"), &["--seconds", "1", "--inject-corruption"]);
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("soak: rank ")
            && r.stderr.contains("from rank 0")
            && r.stderr.contains("byte "),
        "{}",
        r.stderr
    );
}

#[test]
fn fifty_jobs_back_to_back_leave_nothing_behind() {
    let label = marker("soak50");
    for i in 0..50 {
        let np = 2 + i % 4;
        let seed = i.to_string();
        let r = mpirun_np(
            np,
            &bin("soak"),
            &[
                "--seconds",
                "0",
                "--max-bytes",
                "65536",
                "--seed",
                &seed,
                "--label",
                &label,
            ],
        );
        if !r.ok() {
            panic!("job {i} (np {np}) failed:\n{}{}", r.stdout, r.stderr);
        }
    }
    assert_eq!(processes_with(&label), Vec::<u32>::new());
}
