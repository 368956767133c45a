//! Rust example and test programs under the real mpirun.

use rmpi_tests::*;

#[test]
fn hello_at_1_2_4_8() {
    for np in [1, 2, 4, 8] {
        let r = mpirun_np(np, &example("hello"), &[]);
        r.assert_ok();
        for rank in 0..np {
            assert!(
                r.stdout
                    .contains(&format!("Hello from rank {rank} of {np}")),
                "np {np}: {}",
                r.stdout
            );
        }
    }
}

#[test]
fn ring_at_1_2_4_8() {
    for np in [1, 2, 4, 8] {
        let r = mpirun_np(np, &example("ring"), &[]);
        r.assert_ok();
        assert!(r.stdout.contains("ring: OK"), "np {np}: {}", r.stdout);
    }
}

/// Sizes around the inline limit (48), 4 KiB, the default eager limits (16384 for a stream,
/// 32768 for a reply), 1 MiB, 16 MiB.
const SIZES: [&str; 15] = [
    "0", "1", "47", "48", "4095", "4096", "4097", "16383", "16384", "16385", "32767", "32768",
    "32769", "1048576", "16777216",
];

#[test]
fn pingpong_payloads_at_2_4_8() {
    for np in [2, 4, 8] {
        let r = mpirun_np(np, &example("pingpong"), &SIZES);
        r.assert_ok();
        assert!(r.stdout.contains("pingpong: OK"), "np {np}: {}", r.stdout);
    }
}

#[test]
fn pingpong_each_large_message_path() {
    // Streamed rendezvous (none), single copy (cma), and auto (streams unless oversubscribed).
    let p = example("pingpong");
    let cases = [
        ("2", "none"),
        ("2", "cma"),
        ("3", "none"),
        ("3", "cma"),
        ("2", "auto"),
    ];
    for (np, mode) in cases {
        let mut args = vec![
            "-np",
            np,
            "--oversubscribe",
            "--mca",
            "btl_sm_single_copy",
            mode,
        ];
        args.push(p.to_str().unwrap());
        args.extend_from_slice(&SIZES);
        let r = mpirun(&args);
        r.assert_ok();
        assert!(r.stdout.contains("pingpong: OK"), "{mode}: {}", r.stdout);
    }
}

#[test]
fn pingpong_with_small_channels() {
    // Rings far smaller than the messages: eager messages stream in many fragments.
    let p = example("pingpong");
    let args = [
        "-np",
        "2",
        "--mca",
        "btl_sm_fifo_cells",
        "4",
        "--mca",
        "btl_sm_payload_bytes",
        "1024",
        "--mca",
        "btl_sm_eager_limit",
        "65536",
        p.to_str().unwrap(),
        "0",
        "1",
        "100",
        "1000",
        "4097",
        "65536",
        "65537",
        "1048576",
    ];
    let r = mpirun(&args);
    r.assert_ok();
    assert!(r.stdout.contains("pingpong: OK"), "{}", r.stdout);
}

#[test]
fn any_source_any_tag_ordering() {
    for (np, bytes) in [(2, "16"), (4, "16"), (8, "16"), (4, "5000"), (3, "100000")] {
        let r = mpirun_np(np, &bin("ordering"), &["300", bytes]);
        r.assert_ok();
        assert!(r.stdout.contains("ordering: OK"), "np {np}: {}", r.stdout);
    }
}

#[test]
fn ordering_many_messages() {
    let r = mpirun_np(4, &bin("ordering"), &["5000", "16"]);
    r.assert_ok();
}

#[test]
fn truncation_is_reported() {
    let r = mpirun_np(2, &bin("truncate"), &[]);
    r.assert_ok();
    assert!(r.stdout.contains("truncate: OK"), "{}", r.stdout);
}

#[test]
fn singleton_without_mpirun() {
    let r = run_bounded(
        std::process::Command::new(example("hello")),
        std::time::Duration::from_secs(60),
    );
    r.assert_ok();
    assert!(r.stdout.contains("Hello from rank 0 of 1"), "{}", r.stdout);
}

#[test]
fn nonblocking_api_at_1_2_3_8() {
    for np in [1, 2, 3, 8] {
        let r = mpirun_np(np, &bin("nonblocking"), &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains("nonblocking: OK"),
            "np {np}: {}",
            r.stdout
        );
    }
}
