//! When to look at ranks that have not spoken PMI yet: often at first, since a foreign program
//! that exits at once can only be caught while it starts, then every two seconds (a scan reads
//! /proc for each such rank, so it stays cheap).

use std::time::{Duration, Instant};

/// Since the start of the job.
const EARLY: [Duration; 3] = [
    Duration::from_millis(50),
    Duration::from_millis(200),
    Duration::from_secs(1),
];
const EVERY: Duration = Duration::from_secs(2);

pub struct Schedule {
    start: Instant,
    done: u32,
}

impl Schedule {
    pub fn new(start: Instant) -> Schedule {
        Schedule { start, done: 0 }
    }

    pub fn due(&self) -> Instant {
        self.start + offset(self.done)
    }

    /// After a scan at `now`: the next one comes after `now` (missed ones are skipped).
    pub fn advance(&mut self, now: Instant) {
        while self.due() <= now {
            self.done += 1;
        }
    }
}

fn offset(i: u32) -> Duration {
    match EARLY.get(i as usize) {
        Some(&d) => d,
        None => EARLY[EARLY.len() - 1] + EVERY * (i + 1 - EARLY.len() as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_then_every_two_seconds() {
        let ms: Vec<u128> = (0..6).map(|i| offset(i).as_millis()).collect();
        assert_eq!(ms, [50, 200, 1000, 3000, 5000, 7000]);
    }

    #[test]
    fn missed_scans_are_skipped() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        assert_eq!(s.due(), t0 + Duration::from_millis(50));
        s.advance(t0 + Duration::from_millis(1500));
        assert_eq!(s.due(), t0 + Duration::from_secs(3));
        s.advance(t0 + Duration::from_secs(3));
        assert_eq!(s.due(), t0 + Duration::from_secs(5));
    }
}
