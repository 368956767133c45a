//! Invalidation through memhook: real mappings released with real munmap/madvise (caught by the
//! provider's hooks), and synthetic events to overflow the recorder. Skipped (with a note) when
//! the provider compiled in delivers no events.

use memhook::Source;

use super::{acq, counts, finish, pg, serial, MockDevice};
use crate::rcache::invalidate::SLOTS;
use crate::rcache::{Mode, Rcache};
use crate::verbs::Access;

fn active(test: &str) -> bool {
    let on = memhook::is_active();
    if !on {
        eprintln!(
            "{test}: skipped, memhook provider {} delivers no events",
            memhook::PROVIDER
        );
    }
    on
}

/// An anonymous read-write mapping, at `hint` if that range is still free, else anywhere.
fn map(len: usize, hint: usize) -> usize {
    try_map(len, hint)
        .or_else(|| try_map(len, 0))
        .unwrap_or_else(|| panic!("mmap: {}", std::io::Error::last_os_error()))
}

fn try_map(len: usize, hint: usize) -> Option<usize> {
    let flags = libc::MAP_PRIVATE
        | libc::MAP_ANONYMOUS
        | if hint != 0 {
            libc::MAP_FIXED_NOREPLACE
        } else {
            0
        };
    // SAFETY: a new anonymous mapping; MAP_FIXED_NOREPLACE never replaces an existing one.
    let p = unsafe {
        libc::mmap(
            hint as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p as usize)
}

fn unmap(addr: usize, len: usize) {
    // SAFETY: the test's own mapping from `map`, which nothing else uses.
    let r = unsafe { libc::munmap(addr as *mut libc::c_void, len) };
    assert_eq!(r, 0, "munmap: {}", std::io::Error::last_os_error());
}

fn page() -> usize {
    super::page()
}

#[test]
fn auto_and_on_follow_memhook() {
    let _g = serial();
    for mode in [Mode::Auto, Mode::On] {
        let rc = Rcache::new(mode, 1 << 30);
        assert_eq!(rc.enabled().is_ok(), memhook::is_active(), "{mode:?}");
        assert_eq!(rc.tracks_releases(), memhook::is_active());
        if let Err(why) = rc.enabled() {
            assert!(
                why.contains(memhook::PROVIDER)
                    && why.contains("delivers no memory-release events"),
                "{why}"
            );
        }
    }
}

#[test]
fn one_cache_per_process() {
    let _g = serial();
    if !active("one_cache_per_process") {
        return;
    }
    let first = Rcache::new(Mode::Auto, 1 << 30);
    assert_eq!(first.enabled(), Ok(()));
    let second = Rcache::new(Mode::On, 1 << 30);
    assert!(second
        .enabled()
        .unwrap_err()
        .contains("one cache per process"));
    let forced = Rcache::new(Mode::Force, 1 << 30);
    assert!(forced.enabled().is_ok() && !forced.tracks_releases());
    drop((first, second, forced));
    assert_eq!(Rcache::new(Mode::Auto, 1 << 30).enabled(), Ok(()));
}

#[test]
fn invalidation_by_real_munmap() {
    let _g = serial();
    if !active("invalidation_by_real_munmap") {
        return;
    }
    let (mut rc, mut dev) = (Rcache::new(Mode::Auto, 1 << 30), MockDevice::new());
    let len = 4 * page();
    let a = map(len, 0);
    let h = acq(&mut rc, &mut dev, a + 100, len - 200);
    let old = rc.mr(h);
    rc.release(&mut dev, h);
    let h = acq(&mut rc, &mut dev, a + 100, len - 200);
    assert_eq!(rc.mr(h), old);
    rc.release(&mut dev, h);
    assert_eq!(counts(&rc), (1, 1, 0, 0));

    unmap(a, len);
    // Same addresses, new pages (if the kernel lets us have the range again).
    let b = map(len, a);
    let h = acq(&mut rc, &mut dev, a + 100, len - 200);
    let new = rc.mr(h);
    assert_ne!(
        new.lkey, old.lkey,
        "the stale registration must not be reused"
    );
    assert!(!dev.is_live(old), "the old registration was deregistered");
    assert_eq!(counts(&rc), (1, 2, 0, 1));
    rc.release(&mut dev, h);
    unmap(b, len);
    finish(rc, dev);
}

#[test]
fn invalidation_by_madvise_dontneed() {
    let _g = serial();
    if !active("invalidation_by_madvise_dontneed") {
        return;
    }
    let (mut rc, mut dev) = (Rcache::new(Mode::Auto, 1 << 30), MockDevice::new());
    let len = 2 * page();
    let a = map(len, 0);
    let h = acq(&mut rc, &mut dev, a, len);
    let old = rc.mr(h);
    rc.release(&mut dev, h);
    // SAFETY: the test's own mapping; DONTNEED only drops its (untouched) pages.
    let r = unsafe {
        libc::madvise(
            (a + page()) as *mut libc::c_void,
            page(),
            libc::MADV_DONTNEED,
        )
    };
    assert_eq!(r, 0);
    let h = acq(&mut rc, &mut dev, a, 1);
    assert_ne!(rc.mr(h).lkey, old.lkey);
    assert!(!dev.is_live(old));
    assert_eq!(counts(&rc), (0, 2, 0, 1));
    rc.release(&mut dev, h);
    unmap(a, len);
    finish(rc, dev);
}

#[test]
fn invalidation_of_in_use_entry_is_deferred() {
    let _g = serial();
    if !active("invalidation_of_in_use_entry_is_deferred") {
        return;
    }
    let (mut rc, mut dev) = (Rcache::new(Mode::Auto, 1 << 30), MockDevice::new());
    let len = 2 * page();
    let a = map(len, 0);
    let h = acq(&mut rc, &mut dev, a, len);
    let old = rc.mr(h);
    unmap(a, len);
    // Any acquire applies the event: the entry leaves the lookup structure, stays registered.
    let other = acq(&mut rc, &mut dev, pg(0), 1);
    assert_eq!(rc.stats().invalidations, 1);
    assert!(dev.is_live(old), "in use: not deregistered yet");
    assert_eq!(
        rc.mr(h),
        old,
        "the handle in use still names its registration"
    );
    // The same addresses again: a miss, a new registration beside the old one.
    let h2 = acq(&mut rc, &mut dev, a, len);
    assert_ne!(rc.mr(h2).lkey, old.lkey);
    assert_eq!(dev.live.len(), 3);
    assert_eq!(rc.stats().pinned_bytes, 2 * len + page());
    rc.release(&mut dev, h);
    assert!(!dev.is_live(old), "deregistered at its last release");
    assert_eq!(rc.stats().entries, 2);
    rc.release(&mut dev, h2);
    rc.release(&mut dev, other);
    assert_eq!(counts(&rc), (0, 3, 0, 1));
    finish(rc, dev);
}

#[test]
fn recorder_overflow_flushes_everything() {
    let _g = serial();
    if !active("recorder_overflow_flushes_everything") {
        return;
    }
    let (mut rc, mut dev) = (Rcache::new(Mode::Auto, 1 << 30), MockDevice::new());
    for n in 0..3 {
        let h = acq(&mut rc, &mut dev, pg(2 * n), 1);
        rc.release(&mut dev, h);
    }
    let held = acq(&mut rc, &mut dev, pg(10), 1);
    let held_mr = rc.mr(held);
    // Releases of unrelated (never mapped) ranges, more than the recorder holds.
    for i in 0..SLOTS + 10 {
        memhook::notify(Source::Munmap, pg(1000 + 2 * i), page());
    }
    let h = acq(&mut rc, &mut dev, pg(0), 1);
    assert_eq!(rc.stats().invalidations, 4, "all four entries flushed");
    assert_eq!(dev.live.len(), 2, "the one in use and the new one");
    assert!(dev.is_live(held_mr));
    rc.release(&mut dev, held);
    assert!(!dev.is_live(held_mr));
    rc.release(&mut dev, h);
    // Drained: no flush on the next lookup.
    let h = acq(&mut rc, &mut dev, pg(0), 1);
    rc.release(&mut dev, h);
    assert_eq!(counts(&rc), (1, 5, 0, 4));
    finish(rc, dev);
}

#[test]
fn events_not_overlapping_keep_entries() {
    let _g = serial();
    if !active("events_not_overlapping_keep_entries") {
        return;
    }
    let (mut rc, mut dev) = (Rcache::new(Mode::Auto, 1 << 30), MockDevice::new());
    let h = acq(&mut rc, &mut dev, pg(4), 2 * page());
    rc.release(&mut dev, h);
    // Just below and just above the entry's pages.
    memhook::notify(Source::Munmap, pg(0), 4 * page());
    memhook::notify(Source::Madvise, pg(6), page());
    let h = rc.acquire(&mut dev, pg(5), 1, Access::REMOTE_READ).unwrap();
    rc.release(&mut dev, h);
    assert_eq!(counts(&rc), (1, 1, 0, 0));
    // One byte of overlap is enough.
    memhook::notify(Source::Munmap, pg(6) - 1, 1);
    let h = acq(&mut rc, &mut dev, pg(5), 1);
    rc.release(&mut dev, h);
    assert_eq!(counts(&rc), (1, 2, 0, 1));
    finish(rc, dev);
}
