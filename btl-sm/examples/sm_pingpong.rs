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

/// Receive one fragment and copy it out, as the pml does into the user's buffer.
fn recv_one(t: &mut SmTransport, into: &mut [u8]) -> usize {
    loop {
        let mut len = 0;
        if t.poll(&mut |_, _, b| {
            len = b.len();
            into[..len].copy_from_slice(b);
        }) > 0
        {
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

const STREAM_SIZES: [usize; 4] = [8, 28, 1024, 0];
const STREAM_FRAGS: usize = 1_000_000;

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let sizes = [0usize, 8, 48, 64, 128, 276, 512, 1024, 2048, 4096, 8192, 16384, 32768];
    let p = Params::from_env(2).unwrap();
    if let Ok(fd) = std::env::var("SM_PINGPONG_FD") {
        // SAFETY: PR_SET_PDEATHSIG takes plain integers; it makes this spinning child die with
        // its parent instead of spinning forever.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        pin(1);
        let mut t =
            SmTransport::new(Segment::attach_fd(fd.parse().unwrap(), &p).unwrap(), 1).unwrap();
        let buf = vec![0u8; t.max_frag()];
        let mut inbuf = vec![0u8; t.max_frag()];
        for _ in &sizes {
            for _ in 0..iters + 1000 {
                let len = recv_one(&mut t, &mut inbuf);
                send(&mut t, 0, &buf[..len]);
            }
        }
        // Streams: just drain, then say so.
        for _ in STREAM_SIZES {
            let mut got = 0usize;
            while got < STREAM_FRAGS {
                got += t.poll(&mut |_, _, b| inbuf[..b.len()].copy_from_slice(b));
            }
            send(&mut t, 0, &[]);
        }
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
    let mut inbuf = vec![0u8; t.max_frag()];
    println!("{:>8} {:>12}", "bytes", "one-way us");
    for &n in &sizes {
        for _ in 0..1000 {
            send(&mut t, 1, &buf[..n]);
            recv_one(&mut t, &mut inbuf);
        }
        let t0 = Instant::now();
        for _ in 0..iters {
            send(&mut t, 1, &buf[..n]);
            recv_one(&mut t, &mut inbuf);
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / iters as f64 / 2.0;
        println!("{n:>8} {us:>12.3}");
    }
    // Streams of fragments (message rate and bandwidth); 0 stands for max_frag.
    for &n in &STREAM_SIZES {
        let frag = if n == 0 { t.max_frag() } else { n };
        let t0 = Instant::now();
        for _ in 0..STREAM_FRAGS {
            send(&mut t, 1, &buf[..frag]);
        }
        recv_one(&mut t, &mut inbuf);
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "stream {frag} B fragments: {:.1} ns each, {:.2} GB/s",
            secs * 1e9 / STREAM_FRAGS as f64,
            (STREAM_FRAGS * frag) as f64 / secs / 1e9
        );
    }
    child.wait().unwrap();
}
