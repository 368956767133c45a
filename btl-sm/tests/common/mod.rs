//! Shared test helpers: a tiny PRNG, self-describing fragment contents, a rank driver, and
//! re-exec of the test binary as a child process.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use btl_sm::SmTransport;

/// xorshift64*: deterministic, no dependency.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const POOL_SPAN: usize = 1 << 16;

/// Fragment contents as a function of (sender, receiver, sequence): a 12-byte header
/// (s, r, q, len), possibly cut short, followed by a slice of a fixed random pool at an
/// offset derived from (s, r, q). Cheap to produce and to check (memcmp).
pub struct Pattern {
    pool: Vec<u8>,
}

pub struct Frag<'a> {
    pub tag: u8,
    pub hdr: [u8; 12],
    pub hdr_len: usize,
    pub data: &'a [u8],
}

impl Pattern {
    pub fn new(max_frag: usize) -> Pattern {
        let mut r = XorShift::new(42);
        Pattern {
            pool: (0..POOL_SPAN + max_frag).map(|_| r.next() as u8).collect(),
        }
    }

    pub fn frag(&self, s: usize, r: usize, q: u64, len: usize) -> Frag<'_> {
        let mut hdr = [0u8; 12];
        hdr[0..2].copy_from_slice(&(s as u16).to_le_bytes());
        hdr[2..4].copy_from_slice(&(r as u16).to_le_bytes());
        hdr[4..8].copy_from_slice(&(q as u32).to_le_bytes());
        hdr[8..12].copy_from_slice(&(len as u32).to_le_bytes());
        let hdr_len = [0, 5, 12][(q % 3) as usize].min(len);
        let h = XorShift::new((s as u64) << 48 ^ (r as u64) << 32 ^ q).next();
        let off = (h as usize) % POOL_SPAN;
        Frag {
            tag: (q as u8) ^ (s as u8).wrapping_mul(17),
            hdr,
            hdr_len,
            data: &self.pool[off..off + len - hdr_len],
        }
    }

    /// Why `bytes` is not fragment q of s→r with length `len`, if it is not.
    pub fn check(
        &self,
        s: usize,
        r: usize,
        q: u64,
        len: usize,
        tag: u8,
        bytes: &[u8],
    ) -> Option<String> {
        let f = self.frag(s, r, q, len);
        if bytes.len() != len {
            return Some(format!(
                "{s}->{r} #{q}: length {} expected {len}",
                bytes.len()
            ));
        }
        if tag != f.tag {
            return Some(format!("{s}->{r} #{q}: tag {tag} expected {}", f.tag));
        }
        if bytes[..f.hdr_len] != f.hdr[..f.hdr_len] || &bytes[f.hdr_len..] != f.data {
            let pos = bytes
                .iter()
                .zip(f.hdr[..f.hdr_len].iter().chain(f.data))
                .position(|(a, b)| a != b);
            return Some(format!(
                "{s}->{r} #{q} (len {len}): bytes differ from offset {pos:?}"
            ));
        }
        None
    }
}

/// Fragment lengths of one ordered pair: mostly small, some up to max_frag, some boundaries.
pub struct Lengths {
    rng: XorShift,
    max_frag: usize,
}

impl Lengths {
    pub fn new(s: usize, r: usize, max_frag: usize) -> Lengths {
        Lengths {
            rng: XorShift::new(((s as u64) << 20) ^ (r as u64) ^ 0xabcdef),
            max_frag,
        }
    }
    pub fn next(&mut self) -> usize {
        let m = self.max_frag;
        match self.rng.below(16) {
            0 => self.rng.below(m as u64 + 1) as usize,
            1 => [0, 1, 47, 48, 49, 63, 64, 65, m - 1, m][self.rng.below(10) as usize],
            // Inline fragments spanning one to eight cells, and just past them.
            2..=5 => (self.rng.below(521) as usize).min(m),
            _ => self.rng.below(101) as usize,
        }
    }
}

/// Drive one rank: send `count` fragments to each of `send_to`, receive and check `count` from
/// each of `recv_from` (in per-sender order). Fails after `stall` without any progress.
pub fn run_rank(
    t: &mut SmTransport,
    send_to: &[usize],
    recv_from: &[usize],
    count: u64,
    stall: Duration,
) -> Result<(), String> {
    let me = t.me();
    let pat = Pattern::new(t.max_frag());
    struct Out {
        peer: usize,
        lens: Lengths,
        q: u64,
        len: usize,
    }
    let mut outs: Vec<Out> = send_to
        .iter()
        .map(|&p| {
            let mut lens = Lengths::new(me, p, t.max_frag());
            let len = lens.next();
            Out {
                peer: p,
                lens,
                q: 0,
                len,
            }
        })
        .collect();
    let mut ins: Vec<(Lengths, u64)> = (0..t.n())
        .map(|s| (Lengths::new(s, me, t.max_frag()), 0))
        .collect();
    let expect_from: Vec<bool> = (0..t.n()).map(|s| recv_from.contains(&s)).collect();
    let mut err: Option<String> = None;
    let mut last = Instant::now();
    let mut spins = 0u32;
    loop {
        let mut progress = false;
        for o in outs.iter_mut().filter(|o| o.q < count) {
            // A few per peer per round, so all peers advance together.
            for _ in 0..8 {
                let f = pat.frag(me, o.peer, o.q, o.len);
                if !t.try_send(o.peer, f.tag, &f.hdr[..f.hdr_len], f.data) {
                    break;
                }
                progress = true;
                o.q += 1;
                if o.q == count {
                    break;
                }
                o.len = o.lens.next();
            }
        }
        let got = t.poll(&mut |s, tag, bytes| {
            if err.is_some() {
                return;
            }
            if !expect_from[s] {
                err = Some(format!("rank {me}: unexpected fragment from {s}"));
                return;
            }
            let (lens, q) = &mut ins[s];
            if *q >= count {
                err = Some(format!("rank {me}: extra fragment from {s}"));
                return;
            }
            let len = lens.next();
            err = pat.check(s, me, *q, len, tag, bytes);
            *q += 1;
        });
        if let Some(e) = err {
            return Err(format!("rank {me}: {e}"));
        }
        let sent_all = outs.iter().all(|o| o.q == count);
        let got_all = recv_from.iter().all(|&s| ins[s].1 == count);
        if sent_all && got_all {
            if std::env::var("BTLSM_VERBOSE").is_ok() {
                let sent: Vec<_> = outs.iter().map(|o| (o.peer, o.q)).collect();
                let got: Vec<_> = recv_from.iter().map(|&s| (s, ins[s].1)).collect();
                eprintln!(
                    "rank {me} pid {}: sent {sent:?} received {got:?}",
                    std::process::id()
                );
            }
            return Ok(());
        }
        if progress || got > 0 {
            spins = 0;
        } else {
            spins += 1;
            // Oversubscribed in tests (more processes than cores): give the CPU away.
            std::thread::yield_now();
            if spins & 1023 == 0 && last.elapsed() > stall {
                let sent: Vec<_> = outs.iter().map(|o| (o.peer, o.q)).collect();
                let got: Vec<_> = recv_from.iter().map(|&s| (s, ins[s].1)).collect();
                return Err(format!(
                    "rank {me}: no progress for {stall:?}; sent {sent:?}, received {got:?}"
                ));
            }
            continue;
        }
        last = Instant::now();
    }
}

/// Re-run this test binary with only `test_name`, with extra environment. Its stdout is piped.
pub fn spawn_self(test_name: &str, env: &[(String, String)]) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        test_name,
        "--exact",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ]);
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdout(Stdio::piped())
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawning child")
}

/// Wait for all children; kill the rest and fail if any fails or the deadline passes.
pub fn wait_all(children: &mut [Child], limit: Duration) -> Result<(), String> {
    let t0 = Instant::now();
    let mut done = vec![false; children.len()];
    let mut failure = None;
    while done.iter().any(|d| !d) {
        for (i, c) in children.iter_mut().enumerate() {
            if done[i] {
                continue;
            }
            if let Some(st) = c.try_wait().unwrap() {
                done[i] = true;
                if !st.success() && failure.is_none() {
                    failure = Some(format!("child {i} failed: {st}"));
                }
            }
        }
        if failure.is_some() || t0.elapsed() > limit {
            for (i, c) in children.iter_mut().enumerate() {
                if !done[i] {
                    let _ = c.kill();
                    let _ = c.wait();
                }
            }
            return Err(
                failure.unwrap_or_else(|| format!("children still running after {limit:?}"))
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}
