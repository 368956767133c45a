//! A lock-free, allocation-free place for a subscriber to record ranges from inside a hook and
//! drain them later from its own context.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

const FREE: u8 = 0;
const WRITING: u8 = 1;
const FULL: u8 = 2;

struct Slot {
    state: AtomicU8,
    addr: AtomicUsize,
    len: AtomicUsize,
}

/// `N` ranges; when full, [`Recorder::drain`] reports an overflow, and the subscriber must then
/// treat everything as released (e.g. flush its whole cache): dropping a range is never silent.
pub struct Recorder<const N: usize> {
    slots: [Slot; N],
    hint: AtomicUsize,
    /// Slots claimed and not yet drained: when it reaches N, recording is one load, not a scan.
    used: AtomicUsize,
    overflow: AtomicBool,
}

impl<const N: usize> Default for Recorder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Recorder<N> {
    pub const fn new() -> Self {
        Recorder {
            slots: [const {
                Slot {
                    state: AtomicU8::new(FREE),
                    addr: AtomicUsize::new(0),
                    len: AtomicUsize::new(0),
                }
            }; N],
            hint: AtomicUsize::new(0),
            used: AtomicUsize::new(0),
            overflow: AtomicBool::new(false),
        }
    }

    /// Records a range: safe to call from any hook (a bounded scan of CAS attempts, no locks).
    pub fn record(&self, addr: usize, len: usize) {
        if self.used.fetch_add(1, Ordering::AcqRel) >= N {
            self.used.fetch_sub(1, Ordering::AcqRel);
            self.overflow.store(true, Ordering::Release);
            return;
        }
        // A slot is free for us: `used` counted us in, so at most N claimers scan at once.
        let start = self.hint.fetch_add(1, Ordering::Relaxed);
        for k in 0..N {
            let s = &self.slots[(start + k) % N];
            if s.state
                .compare_exchange(FREE, WRITING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                s.addr.store(addr, Ordering::Relaxed);
                s.len.store(len, Ordering::Relaxed);
                s.state.store(FULL, Ordering::Release);
                return;
            }
        }
        // Rare: concurrent claimers took the free slots this scan had passed. Conservative.
        self.used.fetch_sub(1, Ordering::AcqRel);
        self.overflow.store(true, Ordering::Release);
    }

    /// Hands every recorded range to `f` and frees its slot. Returns `false` if ranges were
    /// lost to overflow since the last drain (the caller must then assume everything changed).
    /// One drainer at a time (the subscriber's own context).
    pub fn drain(&self, mut f: impl FnMut(usize, usize)) -> bool {
        let lost = self.overflow.swap(false, Ordering::AcqRel);
        for s in &self.slots {
            if s.state.load(Ordering::Acquire) == FULL {
                f(
                    s.addr.load(Ordering::Relaxed),
                    s.len.load(Ordering::Relaxed),
                );
                s.state.store(FREE, Ordering::Release);
                self.used.fetch_sub(1, Ordering::AcqRel);
            }
        }
        !lost
    }
}

#[cfg(test)]
mod tests {
    use super::Recorder;

    #[test]
    fn records_drains_and_reports_overflow() {
        let r: Recorder<4> = Recorder::new();
        r.record(1, 2);
        r.record(3, 4);
        let mut got = Vec::new();
        assert!(r.drain(|a, l| got.push((a, l))));
        got.sort();
        assert_eq!(got, [(1, 2), (3, 4)]);
        for i in 0..5 {
            r.record(i, 1);
        }
        let mut n = 0;
        assert!(!r.drain(|_, _| n += 1), "the fifth range overflowed");
        assert_eq!(n, 4);
        assert!(r.drain(|_, _| panic!("empty")));
    }
}
