//! The API's edges: modes other than caching with events, clear, misuse of handles, stats.

use super::{acq, counts, finish, page, pg, serial, MockDevice, BASE};
use crate::rcache::register::page_range;
use crate::rcache::{Mode, Rcache, Stats};
use crate::verbs::Access;

#[test]
fn page_range_rounds_out() {
    let p = page();
    assert_eq!(page_range(BASE + 1, BASE + 2).unwrap(), (BASE, BASE + p));
    assert_eq!(page_range(BASE, BASE + p).unwrap(), (BASE, BASE + p));
    assert_eq!(
        page_range(BASE + p - 1, BASE + p + 1).unwrap(),
        (BASE, BASE + 2 * p)
    );
    assert_eq!(page_range(1, usize::MAX).unwrap_err().errno, libc::EINVAL);
}

#[test]
fn off_mode_deregisters_at_release() {
    let _g = serial();
    let (mut rc, mut dev) = (Rcache::new(Mode::Off, 1 << 30), MockDevice::new());
    assert_eq!(rc.enabled(), Err("btl_ib_leave_pinned=0"));
    assert!(!rc.tracks_releases());
    let h = acq(&mut rc, &mut dev, pg(0) + 5, 10);
    assert_eq!((rc.mr(h).addr, rc.mr(h).len), (pg(0), page()));
    let h2 = acq(&mut rc, &mut dev, pg(0) + 5, 10);
    assert_eq!(dev.live.len(), 2, "no sharing when not caching");
    rc.release(&mut dev, h);
    rc.release(&mut dev, h2);
    assert!(dev.live.is_empty());
    let h = acq(&mut rc, &mut dev, pg(0) + 5, 10);
    rc.release(&mut dev, h);
    assert_eq!(counts(&rc), (0, 3, 0, 0));
    assert_eq!((dev.regs, dev.deregs), (3, 3));
    // The bound still holds for registrations in use.
    let mut small = Rcache::new(Mode::Off, page());
    let h = acq(&mut small, &mut dev, pg(0), 1);
    assert_eq!(
        small
            .acquire(&mut dev, pg(3), 1, Access::ALL)
            .unwrap_err()
            .errno,
        libc::ENOMEM
    );
    small.release(&mut dev, h);
    finish(small, MockDevice::new());
    finish(rc, dev);
}

#[test]
fn force_mode_caches() {
    let _g = serial();
    let (mut rc, mut dev) = (Rcache::new(Mode::Force, 1 << 30), MockDevice::new());
    assert_eq!(rc.enabled(), Ok(()));
    assert_eq!(rc.tracks_releases(), memhook::is_active());
    for _ in 0..10 {
        let h = acq(&mut rc, &mut dev, pg(3), 3 * page());
        rc.release(&mut dev, h);
    }
    assert_eq!(counts(&rc), (9, 1, 0, 0));
    assert_eq!(dev.regs, 1);
    finish(rc, dev);
}

#[test]
fn clear_deregisters_in_use_too() {
    let _g = serial();
    let (mut rc, mut dev) = (Rcache::new(Mode::Force, 1 << 30), MockDevice::new());
    let a = acq(&mut rc, &mut dev, pg(0), 1);
    let b = acq(&mut rc, &mut dev, pg(4), 1);
    rc.release(&mut dev, b);
    rc.clear(&mut dev);
    assert!(dev.live.is_empty());
    assert_eq!((rc.stats().pinned_bytes, rc.stats().entries), (0, 0));
    // The in-use handle stays valid: released later without a second deregistration.
    assert_eq!(rc.mr(a).addr, pg(0));
    rc.release(&mut dev, a);
    assert_eq!(dev.deregs, 2);
    // The cache works on afterwards.
    let c = acq(&mut rc, &mut dev, pg(0), 1);
    rc.release(&mut dev, c);
    assert_eq!(counts(&rc), (0, 3, 0, 0));
    finish(rc, dev);
}

#[test]
#[should_panic(expected = "released more often than acquired")]
fn double_release_panics() {
    let _g = serial();
    let (mut rc, mut dev) = (Rcache::new(Mode::Force, 1 << 30), MockDevice::new());
    let k = acq(&mut rc, &mut dev, pg(8), 1);
    let k2 = acq(&mut rc, &mut dev, pg(8), 1);
    assert_eq!(k, k2, "one entry, one handle, two references");
    rc.release(&mut dev, k);
    rc.release(&mut dev, k2);
    rc.release(&mut dev, k);
}

#[test]
#[should_panic(expected = "not in use")]
fn stale_handle_is_refused() {
    let (mut rc, mut dev) = (Rcache::new(Mode::Off, 1 << 30), MockDevice::new());
    let h = acq(&mut rc, &mut dev, pg(0), 1);
    rc.release(&mut dev, h);
    // The slot is reused by the next entry; the old handle must not name it.
    let h2 = acq(&mut rc, &mut dev, pg(0), 1);
    assert_ne!(h, h2);
    rc.release(&mut dev, h);
}

#[test]
fn stats_display() {
    let s = Stats {
        hits: 98,
        misses: 2,
        evictions: 0,
        invalidations: 1,
        pinned_bytes: 4 << 20,
        entries: 1,
    };
    assert_eq!(
        s.to_string(),
        "rcache: 98 hits, 2 misses (98.0% hit rate), 0 evictions, 1 invalidations, 4.0 MiB pinned in 1 entries"
    );
    let z = Stats::default();
    assert_eq!(
        z.to_string(),
        "rcache: 0 hits, 0 misses, 0 evictions, 0 invalidations, 0 B pinned in 0 entries"
    );
    let k = Stats {
        pinned_bytes: 12 << 10,
        ..z
    };
    assert!(k.to_string().contains("12.0 KiB pinned"));
}

#[test]
fn mode_parse() {
    assert_eq!(Mode::parse("auto"), Ok(Mode::Auto));
    assert_eq!(Mode::parse("0"), Ok(Mode::Off));
    assert_eq!(Mode::parse("1"), Ok(Mode::On));
    assert_eq!(Mode::parse("force"), Ok(Mode::Force));
    assert!(Mode::parse("2")
        .unwrap_err()
        .contains("btl_ib_leave_pinned=2"));
}
