//! Every rank but 0 sends N messages to rank 0 with tags cycling over a few values and a
//! sequence number in the payload; rank 0 receives them all with ANY_SOURCE/ANY_TAG and checks
//! that each sender's messages arrive in order (MPI's non-overtaking rule), then receives a
//! second batch by explicit tag to check tag matching skips over other tags.
//! Usage: ordering [messages per sender] [payload bytes]

use rmpi::{Source, Tag};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(2000, |a| a.parse().expect("count"));
    let bytes: usize = args
        .next()
        .map_or(16, |a| a.parse().expect("bytes"))
        .max(16);
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let tags = 5u64;
    if rank != 0 {
        let mut msg = vec![0u8; bytes];
        for seq in 0..n {
            msg[..8].copy_from_slice(&seq.to_le_bytes());
            msg[8..16].copy_from_slice(&(rank as u64).to_le_bytes());
            for (i, b) in msg[16..].iter_mut().enumerate() {
                *b = (seq as usize + i) as u8;
            }
            world.send(&msg, 0, (seq % tags) as i32).expect("send");
        }
        // Second batch, after the barrier so rank 0's wildcards cannot see it: tags in
        // reverse order of how rank 0 will ask for them.
        world.barrier().expect("barrier");
        for t in 0..3 {
            world
                .send(&[rank as u64, t], 0, 100 + t as i32)
                .expect("send");
        }
    } else {
        let mut next = vec![0u64; size as usize];
        let mut buf = vec![0u8; bytes];
        for _ in 0..n * (size as u64 - 1) {
            let st = world.recv(&mut buf, Source::Any, Tag::Any).expect("recv");
            let seq = u64::from_le_bytes(buf[..8].try_into().unwrap());
            let from = u64::from_le_bytes(buf[8..16].try_into().unwrap());
            let src = st.source() as usize;
            assert_eq!(
                from as usize, src,
                "payload names rank {from} but status says {src}"
            );
            assert_eq!(
                seq, next[src],
                "from rank {src}: got message {seq}, expected {}",
                next[src]
            );
            assert_eq!(
                st.tag() as u64,
                seq % tags,
                "tag of message {seq} from {src}"
            );
            assert_eq!(st.count_bytes(), bytes);
            for (i, b) in buf[16..].iter().enumerate() {
                assert_eq!(
                    *b,
                    (seq as usize + i) as u8,
                    "byte {} of message {seq} from {src}",
                    i + 16
                );
            }
            next[src] += 1;
        }
        world.barrier().expect("barrier");
        for src in 1..size {
            for t in (0..3).rev() {
                let mut m = [0u64; 2];
                let st = world.recv(&mut m, src, 100 + t).expect("recv by tag");
                assert_eq!((m[0], m[1], st.tag()), (src as u64, t as u64, 100 + t));
            }
        }
        println!(
            "ordering: OK ({} senders x {n} messages of {bytes} bytes)",
            size - 1
        );
    }
}
