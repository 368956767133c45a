//! soak: every rank sends random-size messages (0 B to `--max-bytes`) to random peers, round
//! after round, for `--seconds`; receivers take them with ANY_SOURCE/ANY_TAG through probe,
//! iprobe, mprobe, improbe and wildcard receives, while a cancelled receive and non-blocking
//! collectives run beside them. Every byte, every status and MPI's non-overtaking order (the
//! messages of one sender arrive in the order sent) are checked against a plan every rank
//! computes from the seed. The first mismatch ends the rank with exit code 1, naming it.

use std::time::Instant;

use clap::Parser;
use rmpi::{Communicator, Op, Source, Status, Tag};

#[derive(Parser)]
#[command(
    name = "soak",
    about = "Random traffic with every byte and order guarantee checked"
)]
struct Args {
    /// Stop starting rounds after this many seconds
    #[arg(long, default_value_t = 20.0)]
    seconds: f64,
    /// Largest message (bytes)
    #[arg(long, default_value_t = 16 << 20)]
    max_bytes: usize,
    /// Most messages one rank sends per round
    #[arg(long, default_value_t = 4)]
    sends: u64,
    /// Seed of the plan (the same on every rank)
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Flip one byte of the first non-empty message rank 0 sends (shows the checker works)
    #[arg(long, hide = true)]
    inject_corruption: bool,
    /// Ignored: lets a test find this job's processes by their command line
    #[arg(long, hide = true)]
    label: Option<String>,
}

/// Tags of planned messages are below this; the cancelled receive waits on it.
const TAG_NEVER_SENT: i32 = 30000;

/// splitmix64: small, fast, and the same on every rank.
struct Rng(u64);

impl Rng {
    fn new(parts: &[u64]) -> Rng {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        for &p in parts {
            r.0 ^= p;
            r.next();
        }
        r
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One planned message: the `seq`-th of `src` this round.
#[derive(Clone, Copy, Debug)]
struct Msg {
    src: i32,
    seq: u64,
    dst: i32,
    len: usize,
    tag: i32,
}

/// Every rank's sends of `round`, in send order per source.
fn plan(a: &Args, round: u64, n: i32) -> Vec<Msg> {
    let mut all = Vec::new();
    for src in 0..n {
        let mut rng = Rng::new(&[a.seed, round, src as u64]);
        for seq in 0..rng.below(a.sends + 1) {
            let dst = rng.below(n as u64) as i32;
            // Mostly small, some medium, a few up to the largest: every protocol each round.
            let cap = match rng.below(100) {
                0..=49 => 256,
                50..=79 => 16 << 10,
                80..=94 => 1 << 20,
                _ => a.max_bytes,
            };
            let len = rng.below(cap.min(a.max_bytes) as u64 + 1) as usize;
            let tag = rng.below(1000) as i32;
            all.push(Msg {
                src,
                seq,
                dst,
                len,
                tag,
            });
        }
    }
    all
}

/// The payload of one message: a stream only (round, source, seq) determine.
fn fill(buf: &mut [u8], round: u64, m: &Msg) {
    let mut rng = Rng::new(&[round, m.src as u64, m.seq, 0x50a4]);
    for chunk in buf.chunks_mut(8) {
        let w = rng.next().to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

fn fail(me: i32, round: u64, what: String) -> ! {
    eprintln!("soak: rank {me}: round {round}: {what}");
    std::process::exit(1);
}

/// Checks one received message against the next one planned from its source.
fn check(me: i32, round: u64, want: &Msg, st: &Status, got: &[u8], expect: &mut Vec<u8>) {
    if st.tag() != want.tag || st.count_bytes() != want.len {
        fail(
            me,
            round,
            format!(
                "message {} from rank {}: tag {} and {} bytes, planned tag {} and {} bytes \
                 (out of order or corrupt)",
                want.seq,
                want.src,
                st.tag(),
                st.count_bytes(),
                want.tag,
                want.len
            ),
        );
    }
    expect.resize(want.len, 0);
    fill(expect, round, want);
    if let Some(i) = (0..want.len).find(|&i| got[i] != expect[i]) {
        fail(
            me,
            round,
            format!(
                "message {} from rank {} ({} bytes): byte {i} is {:#04x}, not {:#04x}",
                want.seq, want.src, want.len, got[i], expect[i]
            ),
        );
    }
}

/// Receives the `count` messages planned to this rank, in five different ways, and checks
/// each against the next one planned from its source. Returns the bytes received.
fn receive_all(
    world: &Communicator,
    a: &Args,
    round: u64,
    mine: &mut [std::collections::VecDeque<Msg>],
    count: usize,
    big: &mut [u8],
) -> usize {
    let me = world.rank();
    let mut expect = Vec::new();
    let mut bytes = 0;
    let mut how = Rng::new(&[a.seed, round, me as u64, 0x7ec]);
    for _ in 0..count {
        let (st, buf): (Status, Vec<u8>) = match how.below(5) {
            0 => {
                let st = world.probe(Source::Any, Tag::Any).unwrap();
                let mut buf = vec![0u8; st.count_bytes()];
                (world.recv(&mut buf, st.source(), st.tag()).unwrap(), buf)
            }
            1 => {
                let st = loop {
                    if let Some(st) = world.iprobe(Source::Any, Tag::Any).unwrap() {
                        break st;
                    }
                };
                let mut buf = vec![0u8; st.count_bytes()];
                (world.recv(&mut buf, st.source(), st.tag()).unwrap(), buf)
            }
            2 => {
                let (msg, st) = world.mprobe(Source::Any, Tag::Any).unwrap();
                let mut buf = vec![0u8; st.count_bytes()];
                let got = msg.recv(&mut buf).unwrap();
                (got, buf)
            }
            3 => {
                let (msg, st) = loop {
                    if let Some(m) = world.improbe(Source::Any, Tag::Any).unwrap() {
                        break m;
                    }
                };
                let mut buf = vec![0u8; st.count_bytes()];
                (msg.recv(&mut buf).unwrap(), buf)
            }
            _ => {
                let st = world.recv(big, Source::Any, Tag::Any).unwrap();
                (st.clone(), big[..st.count_bytes()].to_vec())
            }
        };
        let src = st.source();
        let Some(want) = mine.get_mut(src as usize).and_then(|q| q.pop_front()) else {
            fail(me, round, format!("unplanned message from rank {src}"));
        };
        check(me, round, &want, &st, &buf, &mut expect);
        bytes += want.len;
    }
    bytes
}

fn main() -> rmpi::Result<()> {
    let a = Args::parse();
    let universe = rmpi::initialize()?;
    let world = universe.world();
    let (me, n) = (world.rank(), world.size());
    let start = Instant::now();
    let mut big = vec![0u8; a.max_bytes];
    // Totals over the job, summed by each round's allreduce.
    let (mut msgs, mut bytes, mut colls, mut cancels) = (0u64, 0u64, 0u64, 0u64);
    let mut round = 0u64;
    loop {
        let all = plan(&a, round, n);
        let mut sends: Vec<(Msg, Vec<u8>)> = all
            .iter()
            .filter(|m| m.src == me)
            .map(|m| {
                let mut b = vec![0u8; m.len];
                fill(&mut b, round, m);
                (*m, b)
            })
            .collect();
        if a.inject_corruption && me == 0 {
            if let Some((_, b)) = sends.iter_mut().find(|(_, b)| !b.is_empty()) {
                let i = b.len() / 2;
                b[i] ^= 0x5a;
            }
        }
        let mut mine = vec![std::collections::VecDeque::new(); n as usize];
        for m in all.iter().filter(|m| m.dst == me) {
            mine[m.src as usize].push_back(*m);
        }
        let incoming = all.iter().filter(|m| m.dst == me).count();
        // A broadcast of a size and root that change every round.
        let mut rng = Rng::new(&[a.seed, round, 0xbc]);
        let (root, blen) = (rng.below(n as u64) as i32, rng.below(64 << 10) as usize);
        let bmsg = Msg {
            src: root,
            seq: u64::MAX,
            dst: -1,
            len: blen,
            tag: 0,
        };
        let mut bbuf = vec![0u8; blen];
        if me == root {
            fill(&mut bbuf, round, &bmsg);
        }
        let stop_now = u64::from(me == 0 && start.elapsed().as_secs_f64() >= a.seconds);
        let mut sums = [0u64; 3];
        let mut never = [0u8; 8];
        let got = rmpi::scope(|s| {
            let barrier = world.ibarrier(s).unwrap();
            let bcast = world.ibroadcast(s, &mut bbuf, root).unwrap();
            let cancelled = world
                .irecv(s, &mut never, Source::Any, TAG_NEVER_SENT)
                .unwrap();
            let reqs: Vec<_> = sends
                .iter()
                .map(|(m, b)| world.isend(s, b, m.dst, m.tag).unwrap())
                .collect();
            let got = receive_all(&world, &a, round, &mut mine, incoming, &mut big);
            cancelled.cancel().unwrap();
            if !cancelled.wait().unwrap().is_cancelled() {
                fail(
                    me,
                    round,
                    "a receive nobody matched was not cancelled".into(),
                );
            }
            rmpi::wait_all(reqs).unwrap();
            barrier.wait().unwrap();
            bcast.wait().unwrap();
            got
        });
        let mut expect = vec![0u8; blen];
        fill(&mut expect, round, &bmsg);
        if bbuf != expect {
            fail(
                me,
                round,
                format!("broadcast of {blen} bytes from rank {root} differs"),
            );
        }
        let mine_now = [incoming as u64, got as u64, stop_now];
        rmpi::scope(|s| {
            world
                .iall_reduce(s, &mine_now, &mut sums, Op::Sum)
                .unwrap()
                .wait()
                .unwrap();
        });
        let planned: u64 = all.iter().map(|m| m.len as u64).sum();
        if sums[0] != all.len() as u64 || sums[1] != planned {
            fail(
                me,
                round,
                format!(
                    "the job received {} messages of {} bytes; {} of {} were sent",
                    sums[0],
                    sums[1],
                    all.len(),
                    planned
                ),
            );
        }
        msgs += sums[0];
        bytes += sums[1] + blen as u64 * (n as u64 - 1);
        colls += 3;
        cancels += n as u64;
        round += 1;
        if sums[2] != 0 {
            break;
        }
    }
    if me == 0 {
        println!(
            "soak: {n} ranks, {round} rounds in {:.1} s: {msgs} messages and {bytes} bytes \
             checked, {colls} non-blocking collectives, {cancels} cancelled receives, no errors",
            start.elapsed().as_secs_f64()
        );
    }
    drop(universe);
    Ok(())
}
