//! The last Rust equivalents of issue 3's calls: all_to_all_w / iall_to_all_w (per-rank
//! datatypes), UserDatatype::indexed_block, initialize_with_threading / threading.

use rmpi::{Threading, UserDatatype, WBlock};

fn main() {
    let (universe, provided) =
        rmpi::initialize_with_threading(Threading::Multiple).expect("MPI_Init_thread");
    // MULTIPLE since issue 16 (Communicator::shared).
    assert_eq!(
        provided,
        Threading::Multiple,
        "the level provided is MULTIPLE"
    );
    assert_eq!(universe.threading(), Threading::Multiple);
    let world = universe.world();
    let (rank, n) = (world.rank() as usize, world.size() as usize);

    // To rank j: values built from (me, j), described with a datatype that differs between
    // even and odd peers (u32, or a contiguous pair of u32).
    let u32t = UserDatatype::of::<u32>();
    let pair = UserDatatype::contiguous(2, &u32t).expect("pair type");
    let types: Vec<&UserDatatype> = (0..n)
        .map(|j| if j % 2 == 0 { &u32t } else { &pair })
        .collect();
    let elems = |j: usize| {
        if j.is_multiple_of(2) {
            j + 1
        } else {
            2 * (j + 1)
        }
    };
    let mut send = Vec::new();
    let mut sends = Vec::new();
    for j in 0..n {
        let displ = send.len() * 4;
        for k in 0..elems(j) {
            send.push((rank * 1000 + j * 10 + k) as u32);
        }
        let count = if j % 2 == 0 { j + 1 } else { j + 1 }; // elements of types[j]
        sends.push(WBlock {
            count,
            displ,
            datatype: types[j],
        });
    }
    let send_bytes: Vec<u8> = send.iter().flat_map(|x| x.to_le_bytes()).collect();
    let me_elems = elems(rank);
    let mut recv = vec![0u8; n * me_elems * 4];
    let recvs: Vec<WBlock> = (0..n)
        .map(|i| WBlock {
            count: rank + 1,
            displ: i * me_elems * 4,
            datatype: types[rank],
        })
        .collect();
    for round in 0..2 {
        recv.fill(0);
        if round == 0 {
            world
                .all_to_all_w(&send_bytes, &sends, &mut recv, &recvs)
                .expect("all_to_all_w");
        } else {
            rmpi::scope(|s| {
                let r = world
                    .iall_to_all_w(s, &send_bytes, &sends, &mut recv, &recvs)
                    .expect("iall_to_all_w");
                r.wait().expect("wait");
            });
        }
        for i in 0..n {
            for k in 0..me_elems {
                let at = (i * me_elems + k) * 4;
                let got = u32::from_le_bytes(recv[at..at + 4].try_into().unwrap());
                assert_eq!(
                    got as usize,
                    i * 1000 + rank * 10 + k,
                    "round {round}: from {i}, element {k}"
                );
            }
        }
    }
    // A type with holes (2 u32, 8 bytes apart) on one side, 2 plain u32 on the other: same
    // type signature. Holes of the receive buffer keep their bytes.
    let holes = UserDatatype::vector(2, 1, 2, &u32t).expect("vector");
    let word = |v: usize| (v as u32).to_le_bytes();
    for dir in 0..2 {
        let (mut hbuf, mut pbuf) = (vec![0xEEu8; 16 * n], vec![0u8; 8 * n]);
        for i in 0..n {
            for k in 0..2 {
                let v = word(rank * 100 + i * 10 + k);
                if dir == 0 {
                    hbuf[i * 16 + k * 8..i * 16 + k * 8 + 4].copy_from_slice(&v);
                } else {
                    pbuf[i * 8 + k * 4..i * 8 + k * 4 + 4].copy_from_slice(&v);
                }
            }
        }
        let hb: Vec<WBlock> = (0..n)
            .map(|i| WBlock {
                count: 1,
                displ: i * 16,
                datatype: &holes,
            })
            .collect();
        let pb: Vec<WBlock> = (0..n)
            .map(|i| WBlock {
                count: 2,
                displ: i * 8,
                datatype: &u32t,
            })
            .collect();
        if dir == 0 {
            world
                .all_to_all_w(&hbuf, &hb, &mut pbuf, &pb)
                .expect("all_to_all_w holes -> plain");
        } else {
            world
                .all_to_all_w(&pbuf, &pb, &mut hbuf, &hb)
                .expect("all_to_all_w plain -> holes");
        }
        for i in 0..n {
            for k in 0..2 {
                let at = if dir == 0 {
                    i * 8 + k * 4
                } else {
                    i * 16 + k * 8
                };
                let src = if dir == 0 { &pbuf } else { &hbuf };
                let got = u32::from_le_bytes(src[at..at + 4].try_into().unwrap());
                assert_eq!(
                    got as usize,
                    i * 100 + rank * 10 + k,
                    "dir {dir} from {i} [{k}]"
                );
            }
            if dir == 1 {
                assert_eq!(
                    &hbuf[i * 16 + 4..i * 16 + 8],
                    &[0xEE; 4],
                    "hole of block {i}"
                );
                assert_eq!(
                    &hbuf[i * 16 + 12..i * 16 + 16],
                    &[0xEE; 4],
                    "tail of block {i}"
                );
            }
        }
    }
    // A block reaching past its buffer is refused, not sent.
    let bad: Vec<WBlock> = (0..n)
        .map(|_| WBlock {
            count: 1,
            displ: 60,
            datatype: &holes,
        })
        .collect();
    let mut big = vec![0u8; 64];
    let e = world
        .all_to_all_w(&[0u8; 64], &bad, &mut big, &bad)
        .expect_err("out of bounds");
    assert_eq!(e.class, rmpi::ErrorClass::Count, "{e}");

    // indexed_block: blocks of 2 u32 at element displacements 0, 3 and 7.
    let ib = UserDatatype::indexed_block(2, &[0, 3, 7], &u32t).expect("indexed_block");
    assert_eq!(ib.size(), 6 * 4);
    assert_eq!(ib.extent(), 9 * 4);
    world.barrier().expect("barrier");
    if rank == 0 {
        println!("rust_gaps: OK ({n} ranks)");
    }
}
