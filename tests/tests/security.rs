//! Another local user cannot get into a job (issue 15 item 6). Run as root, the test starts a
//! job over the soft verbs provider and, as uid/gid 65534, tries to read a rank's descriptors
//! (its shared-memory memfd among them) and dials the rank's abstract socket: the first is
//! refused by the kernel, the second closed by the rank (SO_PEERCRED). Not root: skipped, with
//! the reason printed. The named segment used under Hydra is created 0600 (btl-sm's unit test
//! `named_segment_is_owner_only`).

use rmpi_tests::*;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn another_user_cannot_attach_or_dial_a_rank() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let root = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(2) == Some("0"));
    if !root {
        println!("skipped: switching to a second uid needs root");
        return;
    }
    // Plain cc, in a directory every user can reach: it runs as nobody.
    let dir = std::env::temp_dir().join(marker("intruder"));
    std::fs::create_dir_all(&dir).unwrap();
    let intruder = dir.join("intruder");
    let cc = Command::new("cc")
        .arg("-o")
        .arg(&intruder)
        .arg(repo_root().join("tests/c/intruder.c"))
        .status()
        .expect("cc");
    assert!(cc.success());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let victim = c_program("tests/c/orphan.c");
    let m = marker("security");
    let mut job = Command::new(bin("mpirun"));
    job.args(["--timeout", "60", "-np", "2", "--mca", "btl", "ib,self"])
        .args(["--mca", "btl_ib_device", "soft"])
        .arg(&victim)
        .args(["recv", &m])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = job.spawn().expect("mpirun");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    for _ in 0..2 {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        assert!(l.starts_with("ready"), "{l}");
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = processes_with(&m)
        .into_iter()
        .find(|&p| p != child.id())
        .expect("a rank");
    let sockets = std::fs::read_to_string("/proc/net/unix").unwrap();
    let name = sockets
        .split_whitespace()
        .find_map(|w| {
            w.strip_prefix(&format!("@rmpi-ib-soft-{pid}-"))
                .map(|rest| format!("rmpi-ib-soft-{pid}-{rest}"))
        })
        .expect("the rank's listening socket");
    // The control: the job's own user may read the descriptors and stays connected while the
    // rank waits for its hello.
    let o = Command::new(&intruder)
        .args([&pid.to_string(), &name])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains("fds: open") && said.contains("socket: kept"),
        "{said}"
    );
    let o = Command::new(&intruder)
        .args([&pid.to_string(), &name])
        .uid(65534)
        .gid(65534)
        .output()
        .expect("run the intruder");
    let _ = child.kill();
    let _ = child.wait();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains("fds: refused"),
        "{said}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(said.contains("socket: closed"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}
