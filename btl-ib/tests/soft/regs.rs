//! Registration: RLIMIT_MEMLOCK enforced (in a child with the limit lowered), unmapped ranges,
//! overlapping registrations, keys, the table bound, and the local remap check.

use crate::harness::*;
use btl_ib::verbs::soft::SoftDevice;
use btl_ib::verbs::*;

pub fn memlock_child() {
    let ctl = Ctl::new();
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a live rlimit.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) }, 0);
    rl.rlim_cur = 256 << 10;
    // SAFETY: rl is a live rlimit; lowering our own soft limit only.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &rl) }, 0);
    let mut dev = SoftDevice::open().unwrap();
    let b = Buf::new(1 << 20);
    let m1 = dev.reg_mr(b.addr(), 128 << 10, Access::ALL).unwrap();
    assert_eq!(dev.pinned(), (128 << 10, Some(256 << 10)));
    let e = dev
        .reg_mr(b.addr() + (256 << 10), 192 << 10, Access::ALL)
        .unwrap_err();
    assert_eq!(e.errno, libc::ENOMEM, "{e:?}");
    for want in ["196608", "131072", "262144", "raise `ulimit -l`"] {
        assert!(e.message.contains(want), "{want} not in: {}", e.message);
    }
    dev.dereg_mr(m1).unwrap();
    assert_eq!(dev.pinned().0, 0);
    let m2 = dev.reg_mr(b.addr(), 192 << 10, Access::ALL).unwrap();
    dev.dereg_mr(m2).unwrap();
    ctl.say("ok");
}

#[test]
fn memlock_limit_is_enforced_with_a_clear_message() {
    let mut peer = Peer::spawn("memlock", &[]);
    assert_eq!(peer.expect(T), "ok");
    peer.finish(T);
}

#[test]
fn unmapped_range_is_efault() {
    let mut dev = SoftDevice::open().unwrap();
    let b = Buf::new(2 * 4096);
    // SAFETY: the second page of our own mapping.
    unsafe { libc::munmap((b.addr() + 4096) as *mut libc::c_void, 4096) };
    let e = dev.reg_mr(b.addr(), 2 * 4096, Access::ALL).unwrap_err();
    assert_eq!(e.errno, libc::EFAULT, "{e:?}");
    assert_eq!(dev.pinned().0, 0);
}

/// Locked kB of the mappings inside `[addr, +len)`, from /proc/self/smaps.
fn locked_kb(addr: usize, len: usize) -> usize {
    let s = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    let mut kb = 0;
    for line in s.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, e)) = range.split_once('-') {
                if let (Ok(a), Ok(e)) = (usize::from_str_radix(a, 16), usize::from_str_radix(e, 16))
                {
                    inside = a >= addr && e <= addr + len;
                    continue;
                }
            }
        }
        if let Some(v) = line.strip_prefix("Locked:") {
            if inside {
                kb += v.trim().trim_end_matches(" kB").parse::<usize>().unwrap();
            }
        }
    }
    kb
}

#[test]
fn overlapping_registrations_keep_shared_pages_locked() {
    let mut dev = SoftDevice::open().unwrap();
    let pg = 4096;
    let b = Buf::new(6 * pg);
    let m1 = dev.reg_mr(b.addr(), 4 * pg, Access::ALL).unwrap();
    let m2 = dev
        .reg_mr(b.addr() + 2 * pg + 10, 4 * pg - 10, Access::ALL)
        .unwrap();
    assert_eq!(dev.pinned().0, 8 * pg);
    assert_eq!(locked_kb(b.addr(), b.len), 24);
    dev.dereg_mr(m1).unwrap();
    assert_eq!(
        locked_kb(b.addr(), b.len),
        16,
        "pages of the live region stay locked"
    );
    dev.dereg_mr(m2).unwrap();
    assert_eq!(locked_kb(b.addr(), b.len), 0);
    assert_eq!(dev.pinned().0, 0);
}

#[test]
fn keys_are_generational_and_the_table_is_bounded() {
    let mut dev = SoftDevice::open().unwrap();
    let b = Buf::new(4096);
    let mut mrs = Vec::new();
    loop {
        // Empty regions pin nothing: the table fills before RLIMIT_MEMLOCK.
        match dev.reg_mr(b.addr(), 0, Access::ALL) {
            Ok(m) => mrs.push(m),
            Err(e) => {
                assert_eq!(e.errno, libc::ENOMEM);
                assert!(e.message.contains("table is full"), "{e:?}");
                break;
            }
        }
        assert!(mrs.len() <= 1 << 16, "no bound on the table");
    }
    assert!(mrs.iter().all(|m| m.lkey != 0 && m.lkey == m.rkey));
    let old = mrs[0];
    dev.dereg_mr(old).unwrap();
    let again = dev.reg_mr(b.addr(), 0, Access::ALL).unwrap();
    assert_ne!(again.lkey, old.lkey);
    assert!(dev.dereg_mr(old).is_err(), "a stale key is refused");
    for m in mrs.into_iter().skip(1).chain([again]) {
        dev.dereg_mr(m).unwrap();
    }
    assert_eq!(dev.pinned().0, 0);
}

#[test]
fn garbage_address_is_rejected() {
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(1, 1).unwrap();
    for bad in [&b"xyz"[..], &[0u8; 40][..]] {
        let e = dev.connect(qp, bad, 1).unwrap_err();
        assert!(e.0.contains("soft verbs address"), "{e:?}");
    }
    let mut a = dev.address();
    a[4] = 99; // version
    assert!(dev.connect(qp, &a, 1).unwrap_err().0.contains("version"));
}

#[test]
fn send_from_remapped_region_is_loc_prot_err() {
    let mut dev = SoftDevice::open().unwrap();
    if !dev.remap_detection() {
        eprintln!(
            "NOTE: PFNs are not visible (no CAP_SYS_ADMIN): remap detection off, test skipped"
        );
        return;
    }
    // A loopback pair inside one device.
    let (q1, q2) = (dev.create_qp(4, 4).unwrap(), dev.create_qp(4, 4).unwrap());
    let addr = dev.address();
    dev.connect(q1, &addr, q2).unwrap();
    dev.connect(q2, &addr, q1).unwrap();
    let b = Buf::new(2 * 4096);
    let mr = dev.reg_mr(b.addr(), b.len, Access::ALL).unwrap();
    let sge = Sge {
        addr: b.addr() + 4000,
        len: 200,
        lkey: mr.lkey,
    };
    dev.post_recv(
        q2,
        7,
        Sge {
            addr: b.addr(),
            len: 64,
            lkey: mr.lkey,
        },
    )
    .unwrap();
    dev.post_send(
        q1,
        SendWr::Send {
            wr_id: 1,
            sge: Sge { len: 8, ..sge },
            imm: Some(5),
        },
    )
    .unwrap();
    let mut wcs = Vec::new();
    poll_n(&mut dev, &mut wcs, 2, T);
    assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}");
    remap(b.addr(), b.len, 0xcc);
    wcs.clear();
    dev.post_send(
        q1,
        SendWr::Send {
            wr_id: 2,
            sge,
            imm: None,
        },
    )
    .unwrap();
    poll_n(&mut dev, &mut wcs, 1, T);
    assert_eq!(wcs[0].status, WcStatus::LocProtErr, "{wcs:?}");
    assert!(
        wcs[0].detail.as_ref().unwrap().contains("were remapped"),
        "{wcs:?}"
    );
}

#[test]
fn loopback_hello_before_local_connect_is_kept_and_queued_sends_flow() {
    let mut dev = SoftDevice::open().unwrap();
    let (q1, q2) = (dev.create_qp(4, 4).unwrap(), dev.create_qp(4, 4).unwrap());
    let addr = dev.address();
    let b = Buf::new(4096);
    let mr = dev.reg_mr(b.addr(), b.len, Access::ALL).unwrap();
    // q1 (the smaller) dials at once; its send and hello wait for q2's connect.
    dev.connect(q1, &addr, q2).unwrap();
    let sge = Sge {
        addr: b.addr(),
        len: 0,
        lkey: mr.lkey,
    };
    dev.post_send(
        q1,
        SendWr::Send {
            wr_id: 1,
            sge,
            imm: Some(42),
        },
    )
    .unwrap();
    let mut wcs = Vec::new();
    for _ in 0..100 {
        dev.poll_cq(&mut wcs, 8);
    }
    dev.connect(q2, &addr, q1).unwrap();
    dev.post_recv(
        q2,
        2,
        Sge {
            addr: b.addr() + 100,
            len: 100,
            lkey: mr.lkey,
        },
    )
    .unwrap();
    poll_n(&mut dev, &mut wcs, 2, T);
    let r = wcs.iter().find(|w| w.opcode == WcOpcode::Recv).unwrap();
    assert_eq!(
        (r.qpn, r.status, r.byte_len, r.imm),
        (q2, WcStatus::Success, 0, Some(42))
    );
    dev.destroy_qp(q1).unwrap();
    dev.destroy_qp(q2).unwrap();
}
