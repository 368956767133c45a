//! The cache against a mock device. Most tests use addresses nothing maps (the mock never
//! touches memory), so that no memory-release event in the test process can concern them;
//! `events` uses real mappings and real munmaps.

mod api;
mod events;
mod mock;
mod stress;

use std::sync::{Mutex, MutexGuard};

use super::register::page_size;
use super::{Handle, Mode, Rcache};
use crate::verbs::Access;
use mock::MockDevice;

/// One cache per process (the memhook recorder is shared): tests that create caches take this.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Unmapped addresses (below any PIE image, heap or mmap area).
const BASE: usize = 0x1000_0000;

fn page() -> usize {
    page_size()
}

/// Page `n` of the fake area.
fn pg(n: usize) -> usize {
    BASE + n * page()
}

fn acq(rc: &mut Rcache, dev: &mut MockDevice, addr: usize, len: usize) -> Handle {
    rc.acquire(dev, addr, len, Access::ALL).expect("acquire")
}

fn counts(rc: &Rcache) -> (u64, u64, u64, u64) {
    let s = rc.stats();
    (s.hits, s.misses, s.evictions, s.invalidations)
}

/// Clears and checks that nothing is left registered.
fn finish(mut rc: Rcache, mut dev: MockDevice) {
    rc.clear(&mut dev);
    assert!(dev.live.is_empty(), "registrations left: {:?}", dev.live);
    assert_eq!((rc.stats().pinned_bytes, rc.stats().entries), (0, 0));
    assert_eq!(rc.dereg_errors(), 0);
}

#[test]
fn hit_on_same_buffer_and_sub_range() {
    let _g = serial();
    let (mut rc, mut dev) = (Rcache::new(Mode::Force, 1 << 30), MockDevice::new());
    let h = acq(&mut rc, &mut dev, pg(0) + 100, 1000);
    let mr = rc.mr(h);
    assert_eq!((mr.addr, mr.len, mr.access), (pg(0), page(), Access::ALL));
    rc.release(&mut dev, h);
    assert!(dev.is_live(mr), "kept registered after release");

    let h2 = acq(&mut rc, &mut dev, pg(0) + 100, 1000);
    assert_eq!(rc.mr(h2), mr);
    let h3 = acq(&mut rc, &mut dev, pg(0) + 2000, 8);
    assert_eq!(rc.mr(h3), mr, "a sub-range hits");
    // A narrower access right is served by the ALL registration too.
    let h4 = rc.acquire(&mut dev, pg(0), 1, Access::LOCAL_WRITE).unwrap();
    assert_eq!(rc.mr(h4).lkey, mr.lkey);
    for h in [h2, h3, h4] {
        rc.release(&mut dev, h);
    }
    assert_eq!(counts(&rc), (3, 1, 0, 0));
    assert_eq!((rc.stats().entries, rc.stats().pinned_bytes), (1, page()));
    assert_eq!(dev.regs, 1);
    finish(rc, dev);
}

#[test]
fn overlapping_miss_merges_unused_entries() {
    let _g = serial();
    let (mut rc, mut dev) = (Rcache::new(Mode::Force, 1 << 30), MockDevice::new());
    let a = acq(&mut rc, &mut dev, pg(0), page());
    let a_mr = rc.mr(a);
    rc.release(&mut dev, a);
    let b = acq(&mut rc, &mut dev, pg(2), page());
    rc.release(&mut dev, b);
    // Spans pages 0..3: replaces both cached entries by one.
    let c = acq(&mut rc, &mut dev, pg(0) + 10, 2 * page() + 10);
    let c_mr = rc.mr(c);
    assert_eq!((c_mr.addr, c_mr.len), (pg(0), 3 * page()));
    assert!(!dev.is_live(a_mr));
    assert_eq!(dev.live.len(), 1);
    rc.release(&mut dev, c);
    let d = acq(&mut rc, &mut dev, pg(2), 1);
    assert_eq!(rc.mr(d), c_mr);
    rc.release(&mut dev, d);
    assert_eq!(counts(&rc), (1, 3, 0, 0));
    finish(rc, dev);
}

#[test]
fn merge_falls_back_to_requested_range() {
    let _g = serial();
    let p = page();
    // The union cannot be registered (part of it is no longer mapped, unseen in Force mode).
    let (mut rc, mut dev) = (Rcache::new(Mode::Force, 1 << 30), MockDevice::new());
    let a = acq(&mut rc, &mut dev, pg(0), 2 * p);
    rc.release(&mut dev, a);
    dev.hole = Some((pg(0), pg(1)));
    let b = acq(&mut rc, &mut dev, pg(1), 2 * p);
    assert_eq!((rc.mr(b).addr, rc.mr(b).len), (pg(1), 2 * p));
    assert_eq!(dev.live.len(), 1);
    rc.release(&mut dev, b);
    finish(rc, dev);
    // The union does not fit under the bound beside the entry in use it replaces.
    let (mut rc, mut dev) = (Rcache::new(Mode::Force, 4 * p), MockDevice::new());
    let a = acq(&mut rc, &mut dev, pg(0), 2 * p);
    let b = acq(&mut rc, &mut dev, pg(1), 2 * p);
    assert_eq!((rc.mr(b).addr, rc.mr(b).len), (pg(1), 2 * p));
    assert_eq!(rc.stats().pinned_bytes, 4 * p);
    // `a` left the lookup structure: the next request for it hits `b` or misses, never `a`.
    let c = acq(&mut rc, &mut dev, pg(2), 1);
    assert_eq!(rc.mr(c), rc.mr(b));
    for h in [a, b, c] {
        rc.release(&mut dev, h);
    }
    assert_eq!(counts(&rc), (1, 2, 0, 0));
    finish(rc, dev);
}

#[test]
fn access_upgrade_misses() {
    let _g = serial();
    let (mut rc, mut dev) = (Rcache::new(Mode::Force, 1 << 30), MockDevice::new());
    let h = rc
        .acquire(&mut dev, pg(0), 64, Access::LOCAL_WRITE)
        .unwrap();
    let local = rc.mr(h);
    // In use: the upgrade registers anew and the old registration waits for its release.
    let up = rc
        .acquire(&mut dev, pg(0), 64, Access::REMOTE_READ)
        .unwrap();
    let up_mr = rc.mr(up);
    assert_ne!(up_mr.lkey, local.lkey);
    assert_eq!(up_mr.access, Access::LOCAL_WRITE | Access::REMOTE_READ);
    assert!(dev.is_live(local));
    rc.release(&mut dev, h);
    assert!(
        !dev.is_live(local),
        "a replaced entry goes at its last release"
    );
    rc.release(&mut dev, up);
    // Unused: replaced at once.
    let w = rc
        .acquire(&mut dev, pg(0), 64, Access::REMOTE_WRITE)
        .unwrap();
    assert_eq!(
        rc.mr(w).access,
        Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE
    );
    assert!(!dev.is_live(up_mr));
    rc.release(&mut dev, w);
    let again = rc
        .acquire(&mut dev, pg(0), 64, Access::LOCAL_WRITE)
        .unwrap();
    rc.release(&mut dev, again);
    assert_eq!(counts(&rc), (1, 3, 0, 0));
    assert_eq!(dev.live.len(), 1);
    finish(rc, dev);
}

#[test]
fn refcount_protects_from_eviction() {
    let _g = serial();
    let p = page();
    let (mut rc, mut dev) = (Rcache::new(Mode::Force, 2 * p), MockDevice::new());
    let a = acq(&mut rc, &mut dev, pg(0), p);
    let a2 = acq(&mut rc, &mut dev, pg(0), p);
    let b = acq(&mut rc, &mut dev, pg(4), p);
    let err = rc.acquire(&mut dev, pg(8), p, Access::ALL).unwrap_err();
    assert_eq!(err.errno, libc::ENOMEM);
    assert!(
        err.message.contains(&format!("{} bytes are in use", 2 * p))
            && err.message.contains(&format!("bound is {} bytes", 2 * p))
            && err.message.contains("btl_ib_rcache_max_bytes"),
        "{}",
        err.message
    );
    rc.release(&mut dev, a);
    // Still one reference: still not evictable.
    assert!(rc.acquire(&mut dev, pg(8), p, Access::ALL).is_err());
    rc.release(&mut dev, a2);
    let a_mr = rc.mr(b);
    let c = acq(&mut rc, &mut dev, pg(8), p);
    assert_eq!(rc.stats().evictions, 1);
    assert!(dev.is_live(a_mr), "b in use, a was evicted instead");
    assert_eq!(dev.live.len(), 2);
    rc.release(&mut dev, b);
    rc.release(&mut dev, c);
    finish(rc, dev);
}

#[test]
fn lru_order_of_eviction() {
    let _g = serial();
    let p = page();
    let (mut rc, mut dev) = (Rcache::new(Mode::Force, 3 * p), MockDevice::new());
    let mut mrs = Vec::new();
    for n in [0, 2, 4] {
        let h = acq(&mut rc, &mut dev, pg(n), p);
        mrs.push(rc.mr(h));
        rc.release(&mut dev, h);
    }
    // Page 0 used again: page 2 is now the least recently used, then page 4.
    let h = acq(&mut rc, &mut dev, pg(0), p);
    rc.release(&mut dev, h);
    let d = acq(&mut rc, &mut dev, pg(6), p);
    rc.release(&mut dev, d);
    assert!(dev.is_live(mrs[0]) && !dev.is_live(mrs[1]) && dev.is_live(mrs[2]));
    let e = acq(&mut rc, &mut dev, pg(8), p);
    rc.release(&mut dev, e);
    assert!(dev.is_live(mrs[0]) && !dev.is_live(mrs[2]));
    // A two-page request evicts the two oldest (page 0, then page 6).
    let f = acq(&mut rc, &mut dev, pg(10), 2 * p);
    assert_eq!(dev.live.len(), 2);
    assert!(!dev.is_live(mrs[0]));
    rc.release(&mut dev, f);
    assert_eq!(counts(&rc), (1, 6, 4, 0));
    finish(rc, dev);
}

#[test]
fn bound_is_respected() {
    let _g = serial();
    let p = page();
    let max = 5 * p;
    let (mut rc, mut dev) = (Rcache::new(Mode::Force, max), MockDevice::new());
    let mut held: Vec<Handle> = Vec::new();
    let mut x: u64 = 12345;
    for _ in 0..2000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = (x >> 33) as usize;
        let (start, len) = (pg(r % 16), 1 + (r >> 8) % (3 * p));
        match rc.acquire(&mut dev, start + (r >> 4) % p, len, Access::ALL) {
            Ok(h) => held.push(h),
            Err(e) => assert_eq!(e.errno, libc::ENOMEM, "{}", e.message),
        }
        if held.len() > 2 || (r & 1 == 0 && !held.is_empty()) {
            let h = held.remove((r >> 12) % held.len());
            rc.release(&mut dev, h);
        }
        assert!(rc.stats().pinned_bytes <= max && dev.pinned_bytes() <= max);
        assert_eq!(rc.stats().pinned_bytes, dev.pinned_bytes());
        assert_eq!(rc.stats().entries, dev.live.len());
    }
    for h in held {
        rc.release(&mut dev, h);
    }
    assert!(rc.stats().evictions > 0 && rc.stats().hits > 0);
    finish(rc, dev);
}

#[test]
fn device_enomem_evicts_unused_and_retries() {
    let _g = serial();
    let p = page();
    let (mut rc, mut dev) = (
        Rcache::new(Mode::Force, 1 << 30),
        MockDevice::with_limit(4 * p),
    );
    for n in 0..4 {
        let h = acq(&mut rc, &mut dev, pg(2 * n), p);
        rc.release(&mut dev, h);
    }
    assert_eq!(dev.live.len(), 4);
    let h = acq(&mut rc, &mut dev, pg(20), 2 * p);
    assert_eq!(dev.enomem_failures, 1);
    assert_eq!(rc.stats().evictions, 4, "every unused entry goes");
    assert_eq!(dev.live.len(), 1);
    // In use, nothing to evict: the device's error comes back, without a second try.
    let h2 = acq(&mut rc, &mut dev, pg(30), 2 * p);
    let err = rc.acquire(&mut dev, pg(40), p, Access::ALL).unwrap_err();
    assert_eq!(err.errno, libc::ENOMEM);
    assert!(err.message.contains("RLIMIT_MEMLOCK"), "{}", err.message);
    assert_eq!(dev.enomem_failures, 2);
    // One unused entry: evicted, the retry fails too, and says so.
    rc.release(&mut dev, h2);
    let err = rc
        .acquire(&mut dev, pg(40), 3 * p, Access::ALL)
        .unwrap_err();
    assert!(
        err.message.contains("after evicting all 1"),
        "{}",
        err.message
    );
    assert_eq!(dev.enomem_failures, 4);
    rc.release(&mut dev, h);
    finish(rc, dev);
}
