//! All-to-all streams: every process sends `msgs` messages of mixed sizes (0..=64 KiB, with
//! imm) to every other at once; receivers check order, sizes, imm and every byte.

use crate::harness::*;
use btl_ib::verbs::soft::SoftDevice;
use btl_ib::verbs::*;
use std::time::Instant;

const RECVS: usize = 16;
const SENDS: usize = 8;
const SLOT: usize = 64 << 10;

fn size_of_msg(i: u64, src: usize) -> usize {
    let h = (i ^ (src as u64) << 40).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    match i % 997 {
        0 => 0,
        1 => SLOT,
        _ if h & 7 == 0 => (h as usize >> 3) % (SLOT + 1),
        _ => (h as usize >> 3) % 2048,
    }
}

fn byte(i: u64, src: usize, j: usize) -> u8 {
    (i as usize * 31 + j * 7 + src * 13 + (j >> 8)) as u8
}

/// Parent: spawns `n` peers, relays the address lines, waits for all to finish.
pub fn run(n: usize, msgs: u64) {
    let mut peers: Vec<Peer> = (0..n)
        .map(|r| Peer::spawn("mesh", &[r.to_string(), n.to_string(), msgs.to_string()]))
        .collect();
    let lines: Vec<String> = peers.iter_mut().map(|p| p.expect(T)).collect();
    for p in peers.iter_mut() {
        for l in &lines {
            p.send(l);
        }
    }
    for p in peers.iter_mut() {
        assert_eq!(p.expect(T * 3), "done");
    }
    for p in peers.iter_mut() {
        p.send("bye");
    }
    for p in peers.iter_mut() {
        assert_eq!(p.expect(T), "ok");
        p.finish(T);
    }
}

/// Child: rank of n, `msgs` to each other rank.
pub fn child(a: &[String]) {
    let (me, n, msgs): (usize, usize, u64) = (
        a[0].parse().unwrap(),
        a[1].parse().unwrap(),
        a[2].parse().unwrap(),
    );
    let ctl = Ctl::new();
    let mut dev = SoftDevice::open().unwrap();
    let qpns: Vec<Qpn> = (0..n)
        .map(|r| {
            if r == me {
                0
            } else {
                dev.create_qp(SENDS as u32, RECVS as u32).unwrap()
            }
        })
        .collect();
    let q: Vec<String> = qpns.iter().map(|x| x.to_string()).collect();
    ctl.say(&format!("{me} {} {}", hex(&dev.address()), q.join(" ")));
    let mut wcs = Vec::new();
    let mut addrs = vec![Vec::new(); n];
    let mut their = vec![0; n]; // their QP number for me
    for _ in 0..n {
        let l = ctl.hear(&mut dev, &mut wcs);
        let f: Vec<&str> = l.split_whitespace().collect();
        let r: usize = f[0].parse().unwrap();
        addrs[r] = unhex(f[1]);
        their[r] = f[2 + me].parse().unwrap();
    }
    for r in (0..n).filter(|&r| r != me) {
        dev.connect(qpns[r], &addrs[r], their[r]).unwrap();
    }
    let peer_of = |qpn: Qpn| qpns.iter().position(|&x| x == qpn && x != 0).unwrap();
    let mut rbuf: Vec<Buf> = (0..n).map(|_| Buf::new(RECVS * SLOT)).collect();
    let mut sbuf: Vec<Buf> = (0..n).map(|_| Buf::new(SENDS * SLOT)).collect();
    let mut rmr = Vec::new();
    let mut smr = Vec::new();
    for r in 0..n {
        rmr.push(
            dev.reg_mr(rbuf[r].addr(), rbuf[r].len, Access::ALL)
                .unwrap(),
        );
        smr.push(
            dev.reg_mr(sbuf[r].addr(), sbuf[r].len, Access::ALL)
                .unwrap(),
        );
        if r != me {
            for k in 0..RECVS {
                let sge = Sge {
                    addr: rbuf[r].addr() + k * SLOT,
                    len: SLOT,
                    lkey: rmr[r].lkey,
                };
                dev.post_recv(qpns[r], k as u64, sge).unwrap();
            }
        }
    }
    let mut sent = vec![0u64; n];
    let mut got = vec![0u64; n];
    let mut free: Vec<Vec<usize>> = (0..n).map(|_| (0..SENDS).collect()).collect();
    let others = (n - 1) as u64;
    let start = Instant::now();
    let mut out = Vec::new();
    while got.iter().sum::<u64>() < msgs * others
        || sent.iter().sum::<u64>() < msgs * others
        || free.iter().map(Vec::len).sum::<usize>() < SENDS * n
    {
        assert!(
            start.elapsed() < T,
            "rank {me}: stuck: sent {sent:?} got {got:?} free {free:?}"
        );
        for r in (0..n).filter(|&r| r != me) {
            while sent[r] < msgs {
                let Some(slot) = free[r].pop() else { break };
                let i = sent[r];
                let len = size_of_msg(i, me);
                let b = &mut sbuf[r].bytes()[slot * SLOT..slot * SLOT + len];
                for (j, x) in b.iter_mut().enumerate() {
                    *x = byte(i, me, j);
                }
                let sge = Sge {
                    addr: sbuf[r].addr() + slot * SLOT,
                    len,
                    lkey: smr[r].lkey,
                };
                dev.post_send(
                    qpns[r],
                    SendWr::Send {
                        wr_id: slot as u64,
                        sge,
                        imm: Some(i as u32),
                    },
                )
                .unwrap();
                sent[r] += 1;
            }
        }
        out.clear();
        dev.poll_cq(&mut out, 64);
        for wc in &out {
            assert_eq!(wc.status, WcStatus::Success, "rank {me}: {wc:?}");
            let r = peer_of(wc.qpn);
            match wc.opcode {
                WcOpcode::Send => free[r].push(wc.wr_id as usize),
                WcOpcode::Recv => {
                    let i = got[r];
                    assert_eq!(wc.imm, Some(i as u32), "rank {me} from {r}: out of order");
                    assert_eq!(
                        wc.byte_len,
                        size_of_msg(i, r),
                        "rank {me} from {r}: msg {i} size"
                    );
                    let k = wc.wr_id as usize;
                    let b = &rbuf[r].bytes()[k * SLOT..k * SLOT + wc.byte_len];
                    for (j, &x) in b.iter().enumerate() {
                        if x != byte(i, r, j) {
                            panic!(
                                "rank {me} from {r}: msg {i} byte {j} is {x}, want {}",
                                byte(i, r, j)
                            );
                        }
                    }
                    got[r] += 1;
                    let sge = Sge {
                        addr: rbuf[r].addr() + k * SLOT,
                        len: SLOT,
                        lkey: rmr[r].lkey,
                    };
                    dev.post_recv(qpns[r], k as u64, sge).unwrap();
                }
                o => panic!("unexpected {o:?}"),
            }
        }
    }
    eprintln!("rank {me} done in {:?}", start.elapsed());
    ctl.say("done");
    wcs.clear();
    assert_eq!(ctl.hear(&mut dev, &mut wcs), "bye");
    assert!(
        wcs.is_empty(),
        "rank {me}: completions after the end: {wcs:?}"
    );
    for r in (0..n).filter(|&r| r != me) {
        dev.destroy_qp(qpns[r]).unwrap();
    }
    drop(dev);
    ctl.say("ok");
}

#[test]
fn two_way_10000_messages_ordered_exactly_once() {
    run(2, 10_000);
}

#[test]
fn hammer_four_processes_all_to_all() {
    run(4, 1500);
}
