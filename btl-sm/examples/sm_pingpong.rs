//! Ping-pong latency and streaming bandwidth between two processes over btl-sm.
//!
//! `cargo run --release -p btl-sm --example sm_pingpong [iters]`
//! Rank 1 is this binary re-executed with the segment fd inherited; ranks pin to CPUs 0 and 1.

use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Instant;

use btl_sm::{Params, Segment, SmTransport};

fn pin(cpu: usize) {
    let mut set = nix::sched::CpuSet::new();
    if set.set(cpu).is_ok() {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
}

fn recv_one(t: &mut SmTransport) -> usize {
    loop {
        let mut len = 0;
        if t.poll(&mut |_, _, b| len = b.len()) > 0 {
            return len;
        }
        std::hint::spin_loop();
    }
}

fn send(t: &mut SmTransport, peer: usize, buf: &[u8]) {
    while !t.try_send(peer, 1, &[], buf) {
        let _ = t.poll(&mut |_, _, _| {});
        std::hint::spin_loop();
    }
}

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let sizes = [0usize, 8, 48, 64, 128, 276, 1024, 4096, 16384, 32768];
    let p = Params::from_env(2).unwrap();
    if let Ok(fd) = std::env::var("SM_PINGPONG_FD") {
        // SAFETY: PR_SET_PDEATHSIG takes plain integers; it makes this spinning child die with
        // its parent instead of spinning forever.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        pin(1);
        let mut t =
            SmTransport::new(Segment::attach_fd(fd.parse().unwrap(), &p).unwrap(), 1).unwrap();
        let buf = vec![0u8; t.max_frag()];
        for _ in &sizes {
            for _ in 0..iters + 1000 {
                let len = recv_one(&mut t);
                send(&mut t, 0, &buf[..len]);
            }
        }
        // Bandwidth: just drain.
        let mut got = 0usize;
        let total = 200_000usize;
        while got < total {
            got += t.poll(&mut |_, _, _| {});
        }
        send(&mut t, 0, &[]);
        return;
    }
    pin(0);
    let fd = Segment::create_memfd(&p).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg(iters.to_string())
        .env("SM_PINGPONG_FD", fd.as_raw_fd().to_string())
        .spawn()
        .unwrap();
    let mut t = SmTransport::new(Segment::attach_fd(fd.as_raw_fd(), &p).unwrap(), 0).unwrap();
    let buf = vec![0u8; t.max_frag()];
    println!("{:>8} {:>12}", "bytes", "one-way us");
    for &n in &sizes {
        for _ in 0..1000 {
            send(&mut t, 1, &buf[..n]);
            recv_one(&mut t);
        }
        let t0 = Instant::now();
        for _ in 0..iters {
            send(&mut t, 1, &buf[..n]);
            recv_one(&mut t);
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / iters as f64 / 2.0;
        println!("{n:>8} {us:>12.3}");
    }
    let frag = t.max_frag();
    let total = 200_000usize;
    let t0 = Instant::now();
    for _ in 0..total {
        send(&mut t, 1, &buf[..frag]);
    }
    recv_one(&mut t);
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "stream {frag} B fragments: {:.2} GB/s",
        (total * frag) as f64 / secs / 1e9
    );
    child.wait().unwrap();
}
