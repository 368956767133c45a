//! How far each local peer is, measured at MPI_Init: every pair of local ranks bounces its two
//! probe words (one in each rank's slot line) and takes the fastest trial's one-way time.
//!
//! Why: an eager message crosses between the cores twice (the sender's copy in, the receiver's
//! copy out) and a single-copy rendezvous once plus a handshake, so the size where rendezvous
//! starts to pay depends on what a line transfer costs between the two ranks: about 40 ns when
//! they share a cache, 150–300 ns across chiplets or sockets. Neither the rank nor the kernel's
//! topology can tell that on a VM whose vCPUs move between host cores; a measurement can.
//!
//! All pairs are probed in n-1 rounds (n even; a bye per round when odd) of the circle
//! schedule, so each rank talks to one partner at a time and the whole probe costs about
//! (n-1) x 100 round trips. The lower rank of a pair pings, the higher answers; a word says
//! `(partner + 1) << 16 | round trip number`, so a stale value from an earlier partner never
//! matches. A partner that never arrives is left unmeasured (None) after the caller's patience;
//! one that arrives but answers slowly (it shares a core) is cut short after 2 ms and is far.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Round trips per timed trial, and trials; the fastest trial is the line transfer itself (a
/// trial during which one rank was preempted is only ever slower).
const ROUND_TRIPS: u32 = 24;
const TRIALS: u32 = 4;

/// Partner of `me` in round `round` of the circle schedule over `n` ranks (rounds
/// `0..rounds(n)`), or None for a bye.
pub fn partner(n: usize, round: usize, me: usize) -> Option<usize> {
    let m = n + (n & 1);
    if m < 2 || me >= n || round >= m - 1 {
        return None;
    }
    // Rank m-1 stays fixed; the others rotate: in round r, position (r + k) pairs with
    // (r - k) mod (m-1), and the fixed rank pairs with r.
    let k = m - 1;
    let p = if me == k {
        round
    } else if me == round {
        k
    } else {
        (2 * round + k - me) % k
    };
    (p < n && p != me).then_some(p)
}

/// Rounds of the schedule for `n` ranks.
pub fn rounds(n: usize) -> usize {
    if n < 2 {
        0
    } else if n & 1 == 0 {
        n - 1
    } else {
        n
    }
}

/// Bounce the line with `partner` through `mine` (our word, the partner reads it) and `theirs`;
/// the fastest trial's one-way time in ns, or None if the partner did not come or went silent
/// within `patience`.
///
/// A pair that is not running at the same time (both ranks on one core of a busy machine) turns
/// each round trip into a scheduler time slice; the pinger then stops after `BUDGET` and says
/// so (`STOP`), and the pair counts as far from what it saw, rather than spending seconds on it.
pub fn exchange(
    me: usize,
    partner: usize,
    mine: &AtomicU32,
    theirs: &AtomicU32,
    patience: Duration,
) -> Option<u32> {
    let pinger = me < partner;
    let to = |n: u32| ((partner as u32 + 1) << 16) | (n & 0xffff);
    let from = |n: u32| ((me as u32 + 1) << 16) | (n & 0xffff);
    let deadline = Instant::now() + patience;
    // From the partner's first answer: waiting for it to arrive is patience's business.
    let mut arrived: Option<Instant> = None;
    let mut best = u64::MAX;
    let mut seq = 0u32;
    // One untimed trial first: it brings both words into the caches involved.
    for trial in 0..=TRIALS {
        let t0 = Instant::now();
        for _ in 0..ROUND_TRIPS {
            seq += 1;
            if pinger {
                mine.store(to(seq), Ordering::Release);
            }
            match wait(
                theirs,
                from(seq),
                (!pinger).then(|| from(STOP)),
                deadline,
                arrived,
            )? {
                Wait::Came => {}
                Wait::Stop => {
                    if pinger {
                        mine.store(to(STOP), Ordering::Release);
                    }
                    return one_way(best, arrived, seq);
                }
            }
            if arrived.is_none() {
                arrived = Some(Instant::now());
            }
            if !pinger {
                mine.store(to(seq), Ordering::Release);
            }
        }
        if trial > 0 {
            best = best.min(t0.elapsed().as_nanos() as u64);
        }
    }
    one_way(best, arrived, seq)
}

enum Wait {
    Came,
    /// The pinger's STOP came (answering side), or the budget is spent (pinger).
    Stop,
}

/// Spin until `theirs` holds `want` (or `stop`); None when past `deadline`. Once the partner
/// has `arrived`, a wait past its `BUDGET` stops the exchange.
fn wait(
    theirs: &AtomicU32,
    want: u32,
    stop: Option<u32>,
    deadline: Instant,
    arrived: Option<Instant>,
) -> Option<Wait> {
    let mut spins = 0u32;
    loop {
        let v = theirs.load(Ordering::Acquire);
        if v == want {
            return Some(Wait::Came);
        }
        if Some(v) == stop {
            return Some(Wait::Stop);
        }
        // Once the partner has been here, a word addressed to another rank means it has moved
        // on to its next round: our last answer or STOP was overwritten before we read it (we
        // lost the core). Waiting for the deadline would stall the rest of the probe.
        if arrived.is_some() && v >> 16 != want >> 16 {
            return Some(Wait::Stop);
        }
        spins = spins.wrapping_add(1);
        if spins & 4095 == 0 {
            let now = Instant::now();
            if now > deadline {
                return None;
            }
            if stop.is_none() && arrived.is_some_and(|a| now > a + BUDGET) {
                return Some(Wait::Stop);
            }
        }
        std::hint::spin_loop();
    }
}

/// Stop value of a word's low half (round trips are numbered from 1, far below it).
const STOP: u32 = 0xffff;
/// Wall time after which the pinger stops early: a pair sharing a core takes a time slice per
/// round trip, while ~120 round trips of even 1 µs take a tenth of it.
const BUDGET: Duration = Duration::from_millis(2);

/// The fastest full trial's one-way time, or, before any, what the round trips since the
/// partner's arrival took.
fn one_way(best: u64, arrived: Option<Instant>, round_trips: u32) -> Option<u32> {
    let ns = if best != u64::MAX {
        best / (2 * ROUND_TRIPS as u64)
    } else {
        let t = arrived.map_or(0, |a| a.elapsed().as_nanos() as u64);
        t / (2 * round_trips.saturating_sub(1).max(1) as u64)
    };
    Some(ns.min(u32::MAX as u64) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn every_pair_meets_once_and_nobody_twice_a_round() {
        for n in 1..=40 {
            let mut met = vec![vec![0u32; n]; n];
            for r in 0..rounds(n) {
                for (me, row) in met.iter_mut().enumerate() {
                    if let Some(p) = partner(n, r, me) {
                        assert_eq!(partner(n, r, p), Some(me), "n {n} round {r} rank {me}");
                        row[p] += 1;
                    }
                }
            }
            for (a, row) in met.iter().enumerate() {
                for (b, &k) in row.iter().enumerate() {
                    assert_eq!(k, (a != b) as u32, "n {n}: {a} and {b} met {k} times");
                }
            }
            assert_eq!(partner(n, rounds(n), 0), None);
        }
    }

    #[test]
    fn two_threads_measure_each_other() {
        let words: Arc<[AtomicU32; 2]> = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
        let w = words.clone();
        let t = std::thread::spawn(move || exchange(1, 0, &w[1], &w[0], Duration::from_secs(20)));
        let a = exchange(0, 1, &words[0], &words[1], Duration::from_secs(20));
        let b = t.join().unwrap();
        assert!(a.is_some() && b.is_some(), "{a:?} {b:?}");
    }

    #[test]
    fn a_slow_partner_is_cut_short_and_far() {
        // The answering side sleeps between round trips as if it had lost its core.
        let words: Arc<[AtomicU32; 2]> = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
        let w = words.clone();
        let t = std::thread::spawn(move || {
            let mut seq = 0;
            loop {
                let v = w[0].load(Ordering::Acquire);
                if v == (2 << 16) | STOP {
                    return;
                }
                if v != (2 << 16) | seq && v & 0xffff == seq + 1 {
                    seq += 1;
                    std::thread::sleep(Duration::from_micros(500));
                    w[1].store((1 << 16) | seq, Ordering::Release);
                }
                std::hint::spin_loop();
            }
        });
        let t0 = Instant::now();
        let ns = exchange(0, 1, &words[0], &words[1], Duration::from_secs(20)).unwrap();
        t.join().unwrap();
        assert!(ns > 100_000, "{ns} ns one way");
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    }

    #[test]
    fn a_partner_gone_to_its_next_round_is_not_waited_for() {
        // The answering side answers 3 round trips, then writes to another rank (its next
        // round) at once, before the pinger can have read its last answer or sent STOP.
        let words: Arc<[AtomicU32; 2]> = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
        let w = words.clone();
        let t = std::thread::spawn(move || {
            for seq in 1..=3 {
                loop {
                    let v = w[0].load(Ordering::Acquire);
                    if v == (2 << 16) | seq {
                        break;
                    }
                    // Descheduled past the pinger's budget on a loaded machine: it stopped.
                    if v == (2 << 16) | STOP {
                        return;
                    }
                    std::hint::spin_loop();
                }
                w[1].store((1 << 16) | seq, Ordering::Release);
            }
            w[1].store((7 << 16) | 1, Ordering::Release);
        });
        let t0 = Instant::now();
        let ns = exchange(0, 1, &words[0], &words[1], Duration::from_secs(20));
        t.join().unwrap();
        assert!(ns.is_some());
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    }

    #[test]
    fn a_silent_partner_is_left_unmeasured() {
        let (mine, theirs) = (AtomicU32::new(0), AtomicU32::new(0));
        assert_eq!(
            exchange(0, 1, &mine, &theirs, Duration::from_millis(20)),
            None
        );
        assert_eq!(
            exchange(1, 0, &mine, &theirs, Duration::from_millis(20)),
            None
        );
    }
}
