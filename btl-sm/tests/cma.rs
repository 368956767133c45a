//! Cross-memory attach against another process (this test binary re-executed).

mod common;

use std::io::{BufRead, BufReader, Read};

use btl_sm::cma;
use common::{spawn_self, XorShift};

const CHILD_ENV: &str = "BTLSM_CMA_CHILD";
const LEN: usize = 3 << 20;

fn contents() -> Vec<u8> {
    let mut r = XorShift::new(5);
    (0..LEN).map(|_| r.next() as u8).collect()
}

/// Child: publish the address of a known buffer, then wait for stdin to close.
#[test]
fn cma_child() {
    if std::env::var(CHILD_ENV).is_err() {
        return;
    }
    cma::allow_ptrace_from_any();
    let buf = contents();
    println!("ADDR {} {}", buf.as_ptr() as usize, buf.len());
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(buf);
    std::process::exit(0);
}

#[test]
fn reads_child_memory() {
    let mut child = spawn_self("cma_child", &[(CHILD_ENV.into(), "1".into())]);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let (addr, len) = loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "child exited early");
        if let Some(rest) = line.trim().strip_prefix("ADDR ") {
            let mut it = rest.split(' ').map(|x| x.parse::<usize>().unwrap());
            break (it.next().unwrap(), it.next().unwrap());
        }
    };
    assert_eq!(len, LEN);
    let want = contents();
    let mut got = vec![0u8; len];
    let r = cma::read(child.id() as i32, addr, &mut got);
    // Close its stdin so it exits whatever happened.
    drop(child.stdin.take());
    child.wait().unwrap();
    match r {
        Ok(()) => assert!(got == want, "CMA read returned different bytes"),
        // A sandbox without ptrace rights: the error must say so (the caller falls back).
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            eprintln!("CMA not permitted here; skipping content check: {e}")
        }
        Err(e) => panic!("cma::read failed: {e}"),
    }
    // An offset inside the buffer, odd length.
    // (The child is gone now, so this is the ESRCH case for a reaped pid too.)
    let e = cma::read(child.id() as i32, addr + 1, &mut got[..12345]).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
}

#[test]
fn invalid_pid_is_esrch() {
    let mut b = [0u8; 8];
    // Above the largest possible pid_max (2^22).
    let e = cma::read(1 << 30, 0x10000, &mut b).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
}

#[test]
fn own_memory_partial_range_is_efault() {
    let v = vec![1u8; 4096];
    let mut b = vec![0u8; 64];
    let me = std::process::id() as i32;
    cma::read(me, v.as_ptr() as usize + 100, &mut b).unwrap();
    assert!(b.iter().all(|&x| x == 1));
    let e = cma::read(me, 16, &mut b).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EFAULT));
}
