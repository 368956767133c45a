//! Queue semantics across processes: RNR (sends before receives), LocLenErr and the flush
//! that follows, peer death, orderly teardown.

use crate::harness::*;
use btl_ib::verbs::soft::SoftDevice;
use btl_ib::verbs::*;
use std::time::{Duration, Instant};

const RNR_MSGS: usize = 100; // 6.4 MiB of sends: under the default 8 MiB RLIMIT_MEMLOCK
const SLOT: usize = 64 << 10;

fn rnr_len(i: usize) -> usize {
    (i * 7919) % (SLOT + 1)
}

pub fn rnr_child() {
    let ctl = Ctl::new();
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(RNR_MSGS as u32, 1).unwrap();
    pair_child(&ctl, &mut dev, &[qp], "");
    let mut buf = Buf::new(RNR_MSGS * SLOT);
    let mr = dev.reg_mr(buf.addr(), buf.len, Access::ALL).unwrap();
    for i in 0..RNR_MSGS {
        let b = &mut buf.bytes()[i * SLOT..i * SLOT + rnr_len(i)];
        for (j, x) in b.iter_mut().enumerate() {
            *x = pattern(i, j);
        }
        let sge = Sge {
            addr: buf.addr() + i * SLOT,
            len: rnr_len(i),
            lkey: mr.lkey,
        };
        dev.post_send(
            qp,
            SendWr::Send {
                wr_id: i as u64,
                sge,
                imm: Some(i as u32),
            },
        )
        .unwrap();
    }
    let mut wcs = Vec::new();
    poll_n(&mut dev, &mut wcs, RNR_MSGS, T);
    for (i, w) in wcs.iter().enumerate() {
        assert_eq!((w.wr_id, w.status), (i as u64, WcStatus::Success), "{w:?}");
    }
    ctl.say("sent");
    child_end(&ctl, &mut dev);
}

#[test]
fn rnr_sends_posted_before_receives_all_arrive_in_order() {
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(1, 64).unwrap();
    let mut peer = Peer::spawn("rnr", &[]);
    pair_parent(&mut peer, &mut dev, &[qp]);
    // No receive posted for a while: the sender's messages must wait, not fail.
    let mut wcs = Vec::new();
    let end = Instant::now() + Duration::from_millis(300);
    while Instant::now() < end {
        dev.poll_cq(&mut wcs, 16);
    }
    assert!(wcs.is_empty(), "{wcs:?}");
    let mut buf = Buf::new(64 * SLOT);
    let mr = dev.reg_mr(buf.addr(), buf.len, Access::ALL).unwrap();
    for k in 0..64 {
        let sge = Sge {
            addr: buf.addr() + k * SLOT,
            len: SLOT,
            lkey: mr.lkey,
        };
        dev.post_recv(qp, k as u64, sge).unwrap();
    }
    let start = Instant::now();
    let mut i = 0;
    while i < RNR_MSGS {
        assert!(start.elapsed() < T, "got {i} of {RNR_MSGS}");
        wcs.clear();
        dev.poll_cq(&mut wcs, 16);
        for w in &wcs {
            assert_eq!(
                (w.status, w.imm, w.byte_len),
                (WcStatus::Success, Some(i as u32), rnr_len(i)),
                "{w:?}"
            );
            let k = w.wr_id as usize;
            let b = &buf.bytes()[k * SLOT..k * SLOT + w.byte_len];
            assert!(
                b.iter().enumerate().all(|(j, &x)| x == pattern(i, j)),
                "msg {i} bytes"
            );
            let sge = Sge {
                addr: buf.addr() + k * SLOT,
                len: SLOT,
                lkey: mr.lkey,
            };
            dev.post_recv(qp, k as u64, sge).unwrap();
            i += 1;
        }
    }
    assert_eq!(peer.expect_polling(&mut dev, &mut wcs, T), "sent");
    parent_end(&mut peer);
}

pub fn send_big_child() {
    let ctl = Ctl::new();
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(4, 4).unwrap();
    pair_child(&ctl, &mut dev, &[qp], "");
    let buf = Buf::new(4096);
    let mr = dev.reg_mr(buf.addr(), buf.len, Access::ALL).unwrap();
    let sge = Sge {
        addr: buf.addr(),
        len: 1000,
        lkey: mr.lkey,
    };
    dev.post_send(
        qp,
        SendWr::Send {
            wr_id: 1,
            sge,
            imm: None,
        },
    )
    .unwrap();
    let mut wcs = Vec::new();
    poll_n(&mut dev, &mut wcs, 1, T);
    assert_eq!(wcs[0].status, WcStatus::Success);
    child_end(&ctl, &mut dev);
}

#[test]
fn too_long_message_is_loc_len_err_and_flushes_the_rest() {
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(4, 4).unwrap();
    let mut peer = Peer::spawn("send_big", &[]);
    pair_parent(&mut peer, &mut dev, &[qp]);
    let buf = Buf::new(3 * 4096);
    let mr = dev.reg_mr(buf.addr(), buf.len, Access::ALL).unwrap();
    dev.post_recv(
        qp,
        10,
        Sge {
            addr: buf.addr(),
            len: 100,
            lkey: mr.lkey,
        },
    )
    .unwrap();
    dev.post_recv(
        qp,
        11,
        Sge {
            addr: buf.addr() + 4096,
            len: 4096,
            lkey: mr.lkey,
        },
    )
    .unwrap();
    dev.post_recv(
        qp,
        12,
        Sge {
            addr: buf.addr() + 8192,
            len: 4096,
            lkey: mr.lkey,
        },
    )
    .unwrap();
    let mut wcs = Vec::new();
    poll_n(&mut dev, &mut wcs, 3, T);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status),
        (10, WcStatus::LocLenErr),
        "{wcs:?}"
    );
    assert!(
        wcs[0].detail.as_ref().unwrap().contains("1000 bytes"),
        "{wcs:?}"
    );
    for w in &wcs[1..] {
        assert_eq!(w.status, WcStatus::WrFlushErr, "{w:?}");
    }
    // Later work on the QP in error: flushed, one completion each.
    wcs.clear();
    let sge = Sge {
        addr: buf.addr(),
        len: 10,
        lkey: mr.lkey,
    };
    dev.post_send(
        qp,
        SendWr::Send {
            wr_id: 20,
            sge,
            imm: None,
        },
    )
    .unwrap();
    dev.post_recv(qp, 21, sge).unwrap();
    poll_n(&mut dev, &mut wcs, 2, T);
    assert!(
        wcs.iter().all(|w| w.status == WcStatus::WrFlushErr),
        "{wcs:?}"
    );
    assert_eq!((wcs[0].wr_id, wcs[1].wr_id), (20, 21));
    parent_end(&mut peer);
}

pub fn idle_child() {
    let ctl = Ctl::new();
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(4, 4).unwrap();
    pair_child(&ctl, &mut dev, &[qp], "");
    child_end(&ctl, &mut dev);
}

#[test]
fn peer_death_completes_everything_with_errors() {
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(128, 8).unwrap();
    let mut peer = Peer::spawn("idle", &[]);
    pair_parent(&mut peer, &mut dev, &[qp]);
    let buf = Buf::new(64 * SLOT);
    let mr = dev.reg_mr(buf.addr(), buf.len, Access::ALL).unwrap();
    for k in 0..3 {
        dev.post_recv(
            qp,
            100 + k,
            Sge {
                addr: buf.addr(),
                len: SLOT,
                lkey: mr.lkey,
            },
        )
        .unwrap();
    }
    // The peer never receives: its socket fills and most sends stay queued.
    for k in 0..64 {
        let sge = Sge {
            addr: buf.addr() + k * SLOT,
            len: SLOT,
            lkey: mr.lkey,
        };
        dev.post_send(
            qp,
            SendWr::Send {
                wr_id: k as u64,
                sge,
                imm: None,
            },
        )
        .unwrap();
    }
    let mut wcs = Vec::new();
    let end = Instant::now() + Duration::from_millis(200);
    while Instant::now() < end {
        dev.poll_cq(&mut wcs, 64);
    }
    assert!(
        wcs.len() < 64,
        "the peer's queue should have filled: {}",
        wcs.len()
    );
    peer.kill();
    poll_n(&mut dev, &mut wcs, 67, Duration::from_secs(10));
    let sends: Vec<&Wc> = wcs.iter().filter(|w| w.opcode == WcOpcode::Send).collect();
    let ok = sends
        .iter()
        .take_while(|w| w.status == WcStatus::Success)
        .count();
    assert_eq!(sends[ok].status, WcStatus::RetryExcErr, "{:?}", sends[ok]);
    let d = sends[ok].detail.as_ref().unwrap();
    assert!(
        d.contains("without a disconnect") && d.contains(&peer.pid().to_string()),
        "{d}"
    );
    assert!(sends[ok + 1..]
        .iter()
        .all(|w| w.status == WcStatus::WrFlushErr));
    let recvs: Vec<&Wc> = wcs.iter().filter(|w| w.opcode == WcOpcode::Recv).collect();
    assert_eq!(recvs.len(), 3);
    assert!(
        recvs.iter().all(|w| w.status == WcStatus::WrFlushErr),
        "{recvs:?}"
    );
    let mut more = Vec::new();
    std::thread::sleep(Duration::from_millis(50));
    dev.poll_cq(&mut more, 64);
    assert!(more.is_empty(), "{more:?}");
}

pub fn orderly_child() {
    let ctl = Ctl::new();
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(4, 4).unwrap();
    let buf = Buf::new(4 * 4096);
    let mr = dev.reg_mr(buf.addr(), buf.len, Access::ALL).unwrap();
    for k in 0..4 {
        dev.post_recv(
            qp,
            k,
            Sge {
                addr: buf.addr() + k as usize * 4096,
                len: 4096,
                lkey: mr.lkey,
            },
        )
        .unwrap();
    }
    pair_child(&ctl, &mut dev, &[qp], "");
    let mut wcs = Vec::new();
    assert_eq!(ctl.hear(&mut dev, &mut wcs), "destroyed");
    let end = Instant::now() + Duration::from_millis(300);
    while Instant::now() < end {
        dev.poll_cq(&mut wcs, 16);
    }
    assert_eq!(
        wcs.len(),
        2,
        "only the two messages, no flush of the other receives: {wcs:?}"
    );
    assert!(wcs
        .iter()
        .all(|w| w.status == WcStatus::Success && w.opcode == WcOpcode::Recv));
    wcs.clear();
    let sge = Sge {
        addr: buf.addr(),
        len: 8,
        lkey: mr.lkey,
    };
    dev.post_send(
        qp,
        SendWr::Send {
            wr_id: 9,
            sge,
            imm: None,
        },
    )
    .unwrap();
    poll_n(&mut dev, &mut wcs, 1, T);
    assert_eq!(wcs[0].status, WcStatus::WrFlushErr);
    assert!(
        wcs[0]
            .detail
            .as_ref()
            .unwrap()
            .contains("peer closed its QP"),
        "{wcs:?}"
    );
    child_end(&ctl, &mut dev);
}

#[test]
fn orderly_destroy_leaves_peer_receives_posted() {
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(4, 4).unwrap();
    let mut peer = Peer::spawn("orderly", &[]);
    pair_parent(&mut peer, &mut dev, &[qp]);
    let buf = Buf::new(4096);
    let mr = dev.reg_mr(buf.addr(), buf.len, Access::ALL).unwrap();
    for k in 0..2 {
        let sge = Sge {
            addr: buf.addr(),
            len: 100,
            lkey: mr.lkey,
        };
        dev.post_send(
            qp,
            SendWr::Send {
                wr_id: k,
                sge,
                imm: None,
            },
        )
        .unwrap();
    }
    let mut wcs = Vec::new();
    poll_n(&mut dev, &mut wcs, 2, T);
    assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}");
    dev.destroy_qp(qp).unwrap();
    peer.send("destroyed");
    parent_end(&mut peer);
}
