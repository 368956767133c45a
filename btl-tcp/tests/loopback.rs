//! Two or three transports in one process over loopback.

use btl_tcp::Deliver;
use btl_tcp::{Params, TcpFail, TcpTransport};

fn params(extra: &[(&str, &str)]) -> Params {
    let mut v = vec![("btl_tcp_if_include", "lo")];
    v.extend_from_slice(extra);
    Params::resolve(&|n| v.iter().find(|p| p.0 == n).map(|p| p.1.to_string())).unwrap()
}

/// Ranks 0..n, each reaching all others (peer index = rank with self skipped).
fn job(n: u32, extra: &[(&str, &str)]) -> Vec<TcpTransport> {
    let mut ts: Vec<TcpTransport> = (0..n)
        .map(|r| {
            let peers: Vec<u32> = (0..n).filter(|&p| p != r).collect();
            TcpTransport::open(params(extra), r, &peers).unwrap()
        })
        .collect();
    let addrs: Vec<String> = ts.iter().map(|t| t.address()).collect();
    for (r, t) in ts.iter_mut().enumerate() {
        let peers: Vec<usize> = (0..n as usize).filter(|&p| p != r).collect();
        for (i, &p) in peers.iter().enumerate() {
            t.set_peer_address(i, &addrs[p]).unwrap();
        }
    }
    ts
}

fn pattern(seed: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|k| (k.wrapping_mul(31) ^ seed) as u8)
        .collect()
}

type Got = Vec<(usize, u8, Vec<u8>)>;

fn poll_all(ts: &mut [TcpTransport], got: &mut [Got]) {
    for (t, g) in ts.iter_mut().zip(got.iter_mut()) {
        t.poll(&mut |p, tag, b| g.push((p, tag, b.to_vec())))
            .unwrap();
    }
}

#[test]
fn ordered_large_and_small_fragments() {
    let mut ts = job(2, &[("btl_tcp_send_queue", "300000")]);
    let max = ts[0].max_frag();
    let sizes: Vec<usize> = (0..200).map(|k| [0, 1, 7, 4096, max][k % 5]).collect();
    let mut got = vec![Vec::new(), Vec::new()];
    let mut next = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while got[1].len() < sizes.len() {
        assert!(
            std::time::Instant::now() < deadline,
            "stalled at {}",
            got[1].len()
        );
        while next < sizes.len() {
            let d = pattern(next, sizes[next]);
            let hdr = (next as u32).to_le_bytes();
            let (h, b) = if d.len() >= 4 {
                (&hdr[..], &d[4..])
            } else {
                (&[][..], &d[..])
            };
            if !ts[0]
                .try_send(0, (next % 7) as u8, h, b, next % 3 != 0)
                .unwrap()
            {
                break; // full: progress first
            }
            next += 1;
        }
        poll_all(&mut ts, &mut got);
    }
    for (k, (peer, tag, b)) in got[1].iter().enumerate() {
        assert_eq!((*peer, *tag as usize), (0, k % 7));
        assert_eq!(b.len(), sizes[k]);
        if sizes[k] >= 4 {
            assert_eq!(&b[..4], &(k as u32).to_le_bytes());
            assert_eq!(&b[4..], &pattern(k, sizes[k])[4..], "fragment {k}");
        }
    }
    assert!(ts[0].flushed());
}

/// Seven ranks, each sending to all six others in turn: more peers than are read directly on
/// every poll (4), small frames (which make a peer hot) mixed with large ones (which send it
/// back to epoll), so peers keep moving in and out of the hot set. Every frame arrives once,
/// in order per sender, with its bytes.
#[test]
fn many_peers_in_and_out_of_the_hot_set() {
    const N: usize = 7;
    const PER: usize = 120;
    let mut ts = job(N as u32, &[]);
    // Frame k from each sender to each receiver: mostly small, every 5th 8 KiB.
    let size = |k: usize| {
        if k % 5 == 4 {
            8192
        } else {
            [4, 16, 200, 1000][k % 4]
        }
    };
    let mut got: Vec<Got> = vec![Vec::new(); N];
    let mut next = vec![[0usize; N]; N];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let total = N * (N - 1) * PER;
    while got.iter().map(Vec::len).sum::<usize>() < total {
        assert!(std::time::Instant::now() < deadline, "stalled");
        for r in 0..N {
            for i in 0..N - 1 {
                let k = next[r][i];
                // Senders with low indices run ahead, so receivers see a shifting mix.
                if k == PER || k > next[r][0] + 3 * i + 1 {
                    continue;
                }
                let d = pattern(r * 1000 + k, size(k));
                if !ts[r]
                    .try_send(i, (k % 7) as u8, &d[..4], &d[4..], k % 2 == 0)
                    .unwrap()
                {
                    continue;
                }
                next[r][i] += 1;
            }
        }
        poll_all(&mut ts, &mut got);
    }
    for (r, g) in got.iter().enumerate() {
        for i in 0..N - 1 {
            let from = if i < r { i } else { i + 1 };
            let frames: Vec<&(usize, u8, Vec<u8>)> = g.iter().filter(|f| f.0 == i).collect();
            assert_eq!(frames.len(), PER, "rank {r} from rank {from}");
            for (k, f) in frames.iter().enumerate() {
                assert_eq!(f.1 as usize, k % 7, "rank {r} from {from}: frame {k}'s tag");
                assert_eq!(
                    f.2,
                    pattern(from * 1000 + k, size(k)),
                    "rank {r} from {from}: frame {k}"
                );
            }
        }
    }
}

#[test]
fn a_full_queue_refuses_then_drains() {
    // Small buffers so that the kernel fills up too: partial writes resume in the queue.
    let mut ts = job(
        2,
        &[
            ("btl_tcp_send_queue", "200000"),
            ("btl_tcp_sndbuf", "8192"),
            ("btl_tcp_rcvbuf", "8192"),
        ],
    );
    let d = pattern(1, 100_000);
    let mut sent = 0;
    let mut got = vec![Vec::new(), Vec::new()];
    // Establish first (the receiver must answer the handshake).
    assert!(ts[0].try_send(0, 1, &[], &d, false).unwrap());
    sent += 1;
    while got[1].is_empty() {
        poll_all(&mut ts, &mut got);
    }
    let mut refused = false;
    for _ in 0..100 {
        if ts[0].try_send(0, 1, &[], &d, false).unwrap() {
            sent += 1;
        } else {
            refused = true;
            break;
        }
    }
    assert!(refused, "the queue never filled");
    assert!(!ts[0].flushed());
    while got[1].len() < sent {
        poll_all(&mut ts, &mut got);
    }
    assert!(got[1].iter().all(|g| g.2 == d));
    assert!(ts[0].flushed());
}

#[test]
fn simultaneous_connects_leave_one_connection() {
    for _ in 0..20 {
        let mut ts = job(3, &[]);
        // Everyone sends to everyone before anyone polls: every pair connects both ways.
        for (r, t) in ts.iter_mut().enumerate() {
            for i in 0..2 {
                assert!(t.try_send(i, 9, &[r as u8], &[i as u8; 3], false).unwrap());
                assert!(t.try_send(i, 10, &[r as u8], &[], false).unwrap());
            }
        }
        let mut got = vec![Vec::new(), Vec::new(), Vec::new()];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while got.iter().any(|g| g.len() < 4) {
            assert!(std::time::Instant::now() < deadline, "{got:?}");
            poll_all(&mut ts, &mut got);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        poll_all(&mut ts, &mut got);
        for (r, g) in got.iter().enumerate() {
            assert_eq!(g.len(), 4, "exactly once");
            for i in 0..2 {
                let from: Vec<_> = g.iter().filter(|x| x.0 == i).collect();
                let sender = if i < r { i } else { i + 1 };
                let me = if r < sender { r } else { r - 1 };
                assert_eq!(from[0].1, 9);
                assert_eq!(from[0].2, [&[sender as u8][..], &[me as u8; 3]].concat());
                assert_eq!(from[1].1, 10, "in order");
            }
        }
    }
}

#[test]
fn a_closed_peer_is_reported_lost() {
    let mut ts = job(2, &[]);
    let mut got = vec![Vec::new(), Vec::new()];
    assert!(ts[1].try_send(0, 1, &[], b"hi", false).unwrap());
    while got[0].is_empty() {
        poll_all(&mut ts, &mut got);
    }
    let dead = ts.remove(0);
    drop(dead);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        assert!(std::time::Instant::now() < deadline, "no error");
        let r = ts[0]
            .poll(&mut |_, _, _| {})
            .and_then(|_| ts[0].try_send(0, 1, &[], b"x", false).map(drop));
        if let Err(e) = r {
            assert_eq!(e.class, TcpFail::PeerLost, "{}", e.message);
            assert!(e.message.contains("rank 0"), "{}", e.message);
            break;
        }
    }
}

#[test]
fn a_dead_listener_is_reported_lost() {
    let mut ts = job(2, &[]);
    let dead = ts.remove(1);
    drop(dead);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        assert!(std::time::Instant::now() < deadline, "no error");
        let r = ts[0]
            .try_send(0, 1, &[], b"x", false)
            .and_then(|_| ts[0].poll(&mut |_, _, _| {}));
        if let Err(e) = r {
            assert_eq!(e.class, TcpFail::PeerLost, "{}", e.message);
            break;
        }
    }
}

#[test]
fn a_stray_connection_is_closed_and_changes_nothing() {
    use std::io::{Read, Write};
    let mut ts = job(2, &[]);
    let a = ts[1].address();
    let addr = a.split_once(';').unwrap().1.split(',').next().unwrap();
    let mut stray = std::net::TcpStream::connect(addr).unwrap();
    // A hello with the wrong cookie, posing as rank 0.
    stray.write_all(&btl_tcp::handshake::hello(0, 1)).unwrap();
    let mut got = vec![Vec::new(), Vec::new()];
    assert!(ts[0].try_send(0, 3, b"h", b"data", false).unwrap());
    while got[1].is_empty() {
        poll_all(&mut ts, &mut got);
    }
    assert_eq!(got[1], [(0, 3, b"hdata".to_vec())]);
    // The acceptor closes it (EOF) without a byte of answer, while it keeps polling.
    stray.set_nonblocking(true).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut b = [0u8; 1];
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the stray connection stayed open"
        );
        match stray.read(&mut b) {
            Ok(0) => break,
            Ok(_) => panic!("the stray connection was answered"),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
        poll_all(&mut ts, &mut got);
    }
    assert_eq!(got[1].len(), 1);
}

/// A receiver that takes large frames' bytes straight into buffers of its own (tag 1), or
/// whole (tag 2): small socket buffers make 256 KiB frames arrive in pieces, so they are placed
/// from the middle of a read on. Every frame arrives once, in order per sender, with its bytes.
/// A receiver that places frames of tag 1: (sender, tag, head, bytes after the head), and the
/// buffer being filled.
#[derive(Default)]
struct Recv {
    got: Vec<(usize, u8, Vec<u8>, Vec<u8>)>,
    filling: Vec<Option<Vec<u8>>>,
    placed: usize,
}
impl Deliver for Recv {
    fn frame(&mut self, peer: usize, tag: u8, b: &[u8]) {
        let h = b.len().min(8);
        self.got.push((peer, tag, b[..h].to_vec(), b[h..].to_vec()));
    }
    fn place(&mut self, peer: usize, tag: u8, head: &[u8], rest: usize) -> Option<*mut u8> {
        assert_eq!(head.len(), 8);
        assert!(
            self.filling[peer].is_none(),
            "one placement per peer at a time"
        );
        if tag != 1 {
            return None;
        }
        let mut v = vec![0u8; rest];
        let p = v.as_mut_ptr();
        self.filling[peer] = Some(v); // the heap buffer does not move with the Vec
        Some(p)
    }
    fn placed(&mut self, peer: usize, tag: u8, head: &[u8], rest: usize) {
        let v = self.filling[peer].take().expect("placed after place");
        assert_eq!(v.len(), rest);
        self.got.push((peer, tag, head.to_vec(), v));
        self.placed += 1;
    }
}

#[test]
fn large_frames_are_read_into_place() {
    let small = [
        ("btl_tcp_sndbuf", "32768"),
        ("btl_tcp_rcvbuf", "32768"),
        ("btl_tcp_max_frag", "262144"),
        ("btl_tcp_send_queue", "1000000"),
    ];
    let mut ts = job(3, &small);
    ts[2].set_placement(8, 16 << 10);
    let sizes = [3usize, 20000, 262144, 5000, 100000, 8, 262144, 70000];
    let per_sender = 48;
    let mut next = [0usize; 2];
    let mut r = Recv {
        filling: vec![None, None],
        ..Recv::default()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while r.got.len() < 2 * per_sender {
        assert!(
            std::time::Instant::now() < deadline,
            "stalled at {}",
            r.got.len()
        );
        for s in 0..2 {
            // Rank 2 is peer 1 of both senders.
            while next[s] < per_sender {
                let k = next[s];
                let len = sizes[(k + s) % sizes.len()];
                let d = pattern(k * 2 + s, len.max(8));
                let tag = 1 + (k % 3 == 0) as u8; // every third whole
                if !ts[s].try_send(1, tag, &d[..8], &d[8..], false).unwrap() {
                    break;
                }
                next[s] += 1;
            }
            ts[s].poll(&mut |_, _, _| {}).unwrap();
        }
        ts[2].poll_into(&mut r).unwrap();
    }
    let mut seen = [0usize; 2];
    for (peer, tag, head, rest) in &r.got {
        let (s, k) = (*peer, seen[*peer]);
        seen[s] += 1;
        let len = sizes[(k + s) % sizes.len()];
        let d = pattern(k * 2 + s, len.max(8));
        assert_eq!(*tag, 1 + (k % 3 == 0) as u8, "sender {s} frame {k}");
        assert_eq!(head[..], d[..8], "sender {s} frame {k}: head");
        assert!(rest[..] == d[8..], "sender {s} frame {k}: {} bytes", len);
    }
    assert_eq!(seen, [per_sender, per_sender]);
    println!("{} of {} frames placed", r.placed, r.got.len());
    assert!(r.placed > 0, "no frame was read into place");
}

/// A burst of large frames that all reach the receiver's socket before it reads: each is read
/// into place (after the first, reads stop at the next frame's head), not whole into the
/// transport's buffer and copied.
#[test]
fn a_burst_of_large_frames_is_read_into_place() {
    let mut ts = job(2, &[("btl_tcp_send_queue", "4000000")]);
    ts[1].set_placement(8, 16 << 10);
    let n = 24;
    let mut r = Recv {
        filling: vec![None],
        ..Recv::default()
    };
    // Connect first, so that the burst below is written at once.
    let d = pattern(99, 64);
    assert!(ts[0].try_send(0, 2, &d[..8], &d[8..], false).unwrap());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while r.got.is_empty() {
        assert!(std::time::Instant::now() < deadline, "no connection");
        ts[0].poll(&mut |_, _, _| {}).unwrap();
        ts[1].poll_into(&mut r).unwrap();
    }
    for k in 0..n {
        let d = pattern(k, 32 << 10);
        assert!(ts[0].try_send(0, 1, &d[..8], &d[8..], false).unwrap());
    }
    while !ts[0].flushed() {
        ts[0].poll(&mut |_, _, _| {}).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    while r.got.len() < n + 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "stalled at {}",
            r.got.len()
        );
        ts[1].poll_into(&mut r).unwrap();
    }
    for (k, (_, tag, head, rest)) in r.got[1..].iter().enumerate() {
        let d = pattern(k, 32 << 10);
        assert_eq!(
            (*tag, &head[..], &rest[..]),
            (1, &d[..8], &d[8..]),
            "frame {k}"
        );
    }
    assert!(r.placed >= n / 2, "{} of {n} placed", r.placed);
}
