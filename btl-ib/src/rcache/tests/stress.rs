//! Random acquires, releases and (when events are delivered) releases of memory, checked
//! against what the cache promises: a handle covers its range with the access asked, its
//! registration is live and predates no event on its pages, and the accounting matches the
//! device's.

use std::collections::HashMap;

use memhook::Source;

use super::{finish, page, pg, serial, MockDevice};
use crate::rcache::{Handle, Mode, Rcache};
use crate::verbs::{Access, Mr};

struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

const ACCESSES: [Access; 4] = [
    Access::LOCAL_WRITE,
    Access::REMOTE_READ,
    Access::REMOTE_WRITE,
    Access::ALL,
];

fn run(seed: u64, max_pages: usize, limit_pages: Option<usize>) {
    let p = page();
    let mut rc = Rcache::new(Mode::Force, max_pages * p);
    let events = rc.tracks_releases();
    let mut dev = match limit_pages {
        Some(l) => MockDevice::with_limit(l * p),
        None => MockDevice::new(),
    };
    let mut rng = Lcg(seed);
    let mut held: Vec<(Handle, Mr)> = Vec::new();
    // lkey -> step of its registration; (step, start, end) of each synthetic release.
    let mut born: HashMap<u32, usize> = HashMap::new();
    let mut released: Vec<(usize, usize, usize)> = Vec::new();
    for step in 0..3000 {
        match rng.next(10) {
            0..=4 => {
                let addr = pg(rng.next(24)) + rng.next(p);
                let len = 1 + rng.next(3 * p);
                let access = ACCESSES[rng.next(4)];
                match rc.acquire(&mut dev, addr, len, access) {
                    Ok(h) => {
                        let mr = rc.mr(h);
                        assert!(mr.addr <= addr && addr + len <= mr.addr + mr.len);
                        assert!(mr.access.contains(access));
                        assert!(dev.is_live(mr));
                        let b = *born.entry(mr.lkey).or_insert(step);
                        for &(t, s, e) in &released {
                            assert!(
                                t < b || e <= mr.addr || mr.addr + mr.len <= s,
                                "seed {seed} step {step}: {mr:?} (registered at {b}) survived the release of {s:#x}..{e:#x} at {t}"
                            );
                        }
                        held.push((h, mr));
                    }
                    Err(e) => assert_eq!(e.errno, libc::ENOMEM, "{}", e.message),
                }
            }
            5..=8 if !held.is_empty() => {
                let (h, mr) = held.swap_remove(rng.next(held.len()));
                assert_eq!(rc.mr(h), mr);
                rc.release(&mut dev, h);
            }
            9 if events => {
                let (s, e) = (pg(rng.next(24)) + rng.next(p), p / 2 + rng.next(2 * p));
                memhook::notify(Source::Munmap, s, e);
                released.push((step, s, s + e));
            }
            _ => {}
        }
        let st = rc.stats();
        assert_eq!(st.pinned_bytes, dev.pinned_bytes());
        assert_eq!(st.entries, dev.live.len());
        assert!(st.pinned_bytes <= max_pages * p);
        // In use entries stay registered whatever happened meanwhile.
        assert!(held.iter().all(|(_, mr)| dev.is_live(*mr)));
    }
    for (h, _) in held {
        rc.release(&mut dev, h);
    }
    let st = rc.stats();
    assert!(st.hits > 0 && st.misses > 0, "{st}");
    finish(rc, dev);
}

#[test]
fn random_operations_keep_the_promises() {
    let _g = serial();
    run(1, 1000, None);
    run(2, 12, None);
    run(3, 1000, Some(10));
    run(4, 8, Some(10));
}
