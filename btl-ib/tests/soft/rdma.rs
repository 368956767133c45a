//! One-sided RDMA against a child process: correctness at offsets, every refused access, and
//! a region whose pages were replaced after registration.

use crate::harness::*;
use btl_ib::verbs::soft::SoftDevice;
use btl_ib::verbs::*;

const A_OFF: usize = 100;
const A_LEN: usize = 15000;

fn run(dev: &mut SoftDevice, qp: Qpn, wr: SendWr) -> Wc {
    dev.post_send(qp, wr).unwrap();
    let mut wcs = Vec::new();
    poll_n(dev, &mut wcs, 1, T);
    wcs.pop().unwrap()
}

pub fn target_child() {
    let ctl = Ctl::new();
    let mut dev = SoftDevice::open().unwrap();
    let qpns: Vec<Qpn> = (0..5).map(|_| dev.create_qp(4, 4).unwrap()).collect();
    let mut a = Buf::new(A_OFF + A_LEN + 1000);
    for (j, x) in a.bytes().iter_mut().enumerate() {
        *x = pattern(1, j);
    }
    let amr = dev.reg_mr(a.addr() + A_OFF, A_LEN, Access::ALL).unwrap();
    let b = Buf::new(4096);
    let bmr = dev.reg_mr(b.addr(), 4096, Access::LOCAL_WRITE).unwrap();
    let extra = format!("{} {} {} {}", amr.addr, amr.rkey, bmr.addr, bmr.rkey);
    pair_child(&ctl, &mut dev, &qpns, &extra);
    let mut wcs = Vec::new();
    loop {
        let l = ctl.hear(&mut dev, &mut wcs);
        let f: Vec<usize> = match l.strip_prefix("check ") {
            Some(r) => r.split(' ').map(|x| x.parse().unwrap()).collect(),
            None => break,
        };
        let (off, len, seed) = (f[0], f[1], f[2]);
        let ok = (0..len).all(|j| a.bytes()[A_OFF + off + j] == pattern(seed, j))
            && a.bytes()[A_OFF + off - 1] == pattern(1, A_OFF + off - 1)
            && a.bytes()[A_OFF + off + len] == pattern(1, A_OFF + off + len);
        ctl.say(if ok { "checked ok" } else { "checked bad" });
    }
    assert!(wcs.is_empty(), "the target of RDMA sees nothing: {wcs:?}");
    ctl.say("ok");
}

#[test]
fn rdma_read_write_at_offsets_and_refused_accesses() {
    let mut dev = SoftDevice::open().unwrap();
    let qpns: Vec<Qpn> = (0..5).map(|_| dev.create_qp(4, 4).unwrap()).collect();
    let mut peer = Peer::spawn("rdma_target", &[]);
    let x = pair_parent(&mut peer, &mut dev, &qpns);
    let x: Vec<u64> = x.iter().map(|s| s.parse().unwrap()).collect();
    let (a_addr, a_rkey, b_addr, b_rkey) = (x[0], x[1] as u32, x[2], x[3] as u32);
    let mut l = Buf::new(1 << 16);
    let lmr = dev.reg_mr(l.addr(), l.len, Access::ALL).unwrap();
    let q = qpns[0];
    for (off, len) in [
        (0, A_LEN),
        (1, 1),
        (4095, 2),
        (5000, 3000),
        (A_LEN - 1, 1),
        (7, 0),
    ] {
        l.bytes().fill(0);
        let local = Sge {
            addr: l.addr() + 3,
            len,
            lkey: lmr.lkey,
        };
        let w = run(
            &mut dev,
            q,
            SendWr::RdmaRead {
                wr_id: 1,
                local,
                remote_addr: a_addr + off as u64,
                rkey: a_rkey,
            },
        );
        assert_eq!(
            (w.status, w.opcode, w.byte_len),
            (WcStatus::Success, WcOpcode::RdmaRead, len),
            "{w:?}"
        );
        for j in 0..len {
            assert_eq!(
                l.bytes()[3 + j],
                pattern(1, A_OFF + off + j),
                "read at {off}+{j}"
            );
        }
    }
    for (j, b) in l.bytes()[..10000].iter_mut().enumerate() {
        *b = pattern(9, j);
    }
    let local = Sge {
        addr: l.addr(),
        len: 10000,
        lkey: lmr.lkey,
    };
    let w = run(
        &mut dev,
        q,
        SendWr::RdmaWrite {
            wr_id: 2,
            local,
            remote_addr: a_addr + 777,
            rkey: a_rkey,
        },
    );
    assert_eq!((w.status, w.byte_len), (WcStatus::Success, 10000), "{w:?}");
    peer.send("check 777 10000 9");
    let mut wcs = Vec::new();
    assert_eq!(peer.expect_polling(&mut dev, &mut wcs, T), "checked ok");

    let local = Sge {
        addr: l.addr(),
        len: 16,
        lkey: lmr.lkey,
    };
    let refused = |dev: &mut SoftDevice, q, raddr, rkey, want: &str, status| {
        let w = run(
            dev,
            q,
            SendWr::RdmaRead {
                wr_id: 3,
                local,
                remote_addr: raddr,
                rkey,
            },
        );
        assert_eq!(w.status, status, "{w:?}");
        assert!(w.detail.as_ref().unwrap().contains(want), "{w:?}");
    };
    // Another generation of the same slot, and a slot beyond the table.
    refused(
        &mut dev,
        qpns[1],
        a_addr,
        a_rkey ^ 1,
        "unknown rkey",
        WcStatus::RemAccessErr,
    );
    let w = run(
        &mut dev,
        qpns[1],
        SendWr::RdmaRead {
            wr_id: 4,
            local,
            remote_addr: a_addr,
            rkey: a_rkey,
        },
    );
    assert_eq!(
        w.status,
        WcStatus::WrFlushErr,
        "after an error the QP flushes: {w:?}"
    );
    refused(
        &mut dev,
        qpns[2],
        a_addr + A_LEN as u64 - 8,
        a_rkey,
        "out of bounds",
        WcStatus::RemAccessErr,
    );
    refused(
        &mut dev,
        qpns[3],
        b_addr,
        b_rkey,
        "lacks REMOTE_READ",
        WcStatus::RemAccessErr,
    );
    // A local buffer without LOCAL_WRITE cannot be the target of a READ.
    let ro = Buf::new(4096);
    let romr = dev.reg_mr(ro.addr(), 4096, Access::REMOTE_READ).unwrap();
    let local = Sge {
        addr: ro.addr(),
        len: 16,
        lkey: romr.lkey,
    };
    let w = run(
        &mut dev,
        qpns[4],
        SendWr::RdmaRead {
            wr_id: 5,
            local,
            remote_addr: a_addr,
            rkey: a_rkey,
        },
    );
    assert_eq!(w.status, WcStatus::LocProtErr, "{w:?}");
    peer.send("bye");
    assert_eq!(peer.expect(T), "ok");
    peer.finish(T);
}

pub fn remap_child() {
    let ctl = Ctl::new();
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(4, 4).unwrap();
    let mut a = Buf::new(4 * 4096);
    a.bytes().fill(0xaa);
    let mr = dev.reg_mr(a.addr(), a.len, Access::ALL).unwrap();
    let extra = format!("{} {} {}", mr.addr, mr.rkey, dev.remap_detection() as u8);
    pair_child(&ctl, &mut dev, &[qp], &extra);
    let mut wcs = Vec::new();
    if ctl.hear(&mut dev, &mut wcs) == "remap" {
        remap(a.addr(), a.len, 0xbb);
        ctl.say("remapped");
        assert_eq!(ctl.hear(&mut dev, &mut wcs), "bye");
    }
    ctl.say("ok");
}

#[test]
fn rdma_read_of_remapped_region_is_refused() {
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(4, 4).unwrap();
    let mut peer = Peer::spawn("remap_target", &[]);
    let x = pair_parent(&mut peer, &mut dev, &[qp]);
    let (addr, rkey): (u64, u32) = (x[0].parse().unwrap(), x[1].parse().unwrap());
    if x[2] != "1" || !dev.remap_detection() {
        eprintln!(
            "NOTE: PFNs are not visible (no CAP_SYS_ADMIN): remap detection off, test skipped"
        );
        peer.send("bye");
        return;
    }
    let mut l = Buf::new(4 * 4096);
    let lmr = dev.reg_mr(l.addr(), l.len, Access::ALL).unwrap();
    let local = Sge {
        addr: l.addr(),
        len: l.len,
        lkey: lmr.lkey,
    };
    let w = run(
        &mut dev,
        qp,
        SendWr::RdmaRead {
            wr_id: 1,
            local,
            remote_addr: addr,
            rkey,
        },
    );
    assert_eq!(w.status, WcStatus::Success, "{w:?}");
    assert!(l.bytes().iter().all(|&b| b == 0xaa));
    peer.send("remap");
    let mut wcs = Vec::new();
    assert_eq!(peer.expect_polling(&mut dev, &mut wcs, T), "remapped");
    let local = Sge { len: 4096, ..local };
    let w = run(
        &mut dev,
        qp,
        SendWr::RdmaRead {
            wr_id: 2,
            local,
            remote_addr: addr + 4096,
            rkey,
        },
    );
    assert_eq!(w.status, WcStatus::RemAccessErr, "{w:?}");
    let d = w.detail.unwrap();
    assert!(
        d.contains("were remapped since registration") && d.contains(&peer.pid().to_string()),
        "{d}"
    );
    parent_end(&mut peer);
}

#[test]
fn rdma_to_a_dead_peer_is_retry_exceeded() {
    let mut dev = SoftDevice::open().unwrap();
    let qp = dev.create_qp(4, 4).unwrap();
    let mut peer = Peer::spawn("remap_target", &[]);
    let x = pair_parent(&mut peer, &mut dev, &[qp]);
    let (addr, rkey): (u64, u32) = (x[0].parse().unwrap(), x[1].parse().unwrap());
    let l = Buf::new(4096);
    let lmr = dev.reg_mr(l.addr(), l.len, Access::ALL).unwrap();
    let local = Sge {
        addr: l.addr(),
        len: 64,
        lkey: lmr.lkey,
    };
    assert_eq!(
        run(
            &mut dev,
            qp,
            SendWr::RdmaRead {
                wr_id: 1,
                local,
                remote_addr: addr,
                rkey
            }
        )
        .status,
        WcStatus::Success
    );
    peer.kill();
    let w = run(
        &mut dev,
        qp,
        SendWr::RdmaRead {
            wr_id: 2,
            local,
            remote_addr: addr,
            rkey,
        },
    );
    assert_eq!(w.status, WcStatus::RetryExcErr, "{w:?}");
}
