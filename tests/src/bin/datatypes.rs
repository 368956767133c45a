//! Derived datatypes from the Rust API around a ring: a matrix column (vector) received
//! contiguously, a subarray, a large (2 MiB) strided message through rendezvous with the type
//! dropped while in flight, truncation, and views that do not fit their buffer.

use rmpi::{ErrorClass, Order, UserDatatype, View, ViewMut};

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let f64t = UserDatatype::of::<f64>();

    // Column 2 of an 8x8 row-major matrix, received as 8 contiguous doubles.
    let n = 8usize;
    let m: Vec<f64> = (0..n * n)
        .map(|i| rank as f64 * 1000.0 + i as f64)
        .collect();
    let column = UserDatatype::vector(n, 1, n as isize, &f64t).expect("vector");
    assert_eq!(
        (column.size(), column.extent()),
        (64, ((n - 1) * n + 1) as isize * 8)
    );
    let mut col = vec![0f64; n];
    rmpi::scope(|s| {
        let view = View::with_origin(&m, 2 * 8, 1, &column).expect("column view");
        let r = world.irecv(s, &mut col, prev, 0).expect("irecv");
        let w = world.isend_view(s, view, next, 0).expect("isend_view");
        rmpi::wait_all(vec![r, w]).expect("wait");
    });
    for (i, v) in col.iter().enumerate() {
        assert_eq!(*v, prev as f64 * 1000.0 + (i * n + 2) as f64);
    }

    // A 2x3 block at (1, 2) of a 4x5 i32 array, into the same block of a zeroed array.
    let a: Vec<i32> = (0..20).map(|i| rank * 100 + i).collect();
    let mut b = vec![0i32; 20];
    let block = UserDatatype::subarray(
        &[4, 5],
        &[2, 3],
        &[1, 2],
        Order::C,
        &UserDatatype::of::<i32>(),
    )
    .expect("subarray");
    rmpi::scope(|s| {
        let r = world
            .irecv_view(s, ViewMut::new(&mut b, 1, &block).expect("view"), prev, 1)
            .expect("irecv_view");
        world
            .send_view(&View::new(&a, 1, &block).expect("view"), next, 1)
            .expect("send_view");
        let st = r.wait().expect("wait");
        assert_eq!(st.count_of(&block), Some(1));
        assert_eq!(st.count_bytes(), 24);
    });
    for (i, v) in b.iter().enumerate() {
        let (r, c) = (i / 5, i % 5);
        let inside = (1..3).contains(&r) && (2..5).contains(&c);
        assert_eq!(*v, if inside { prev * 100 + i as i32 } else { 0 }, "b[{i}]");
    }

    // 2 MiB strided message (every other double of 4 MiB), received contiguously; the type is
    // dropped before the request completes.
    let big = 1usize << 18;
    let src: Vec<f64> = (0..2 * big).map(|i| rank as f64 * 1e7 + i as f64).collect();
    let mut dst = vec![0f64; big];
    rmpi::scope(|s| {
        let strided = UserDatatype::vector(big, 1, 2, &f64t).expect("vector");
        let view = View::new(&src, 1, &strided).expect("view");
        drop(strided);
        let r = world.irecv(s, &mut dst, prev, 2).expect("irecv");
        let w = world.isend_view(s, view, next, 2).expect("isend");
        rmpi::wait_all(vec![w, r]).expect("wait");
    });
    assert!(dst
        .iter()
        .enumerate()
        .all(|(i, v)| *v == prev as f64 * 1e7 + (2 * i) as f64));

    // Truncation into a smaller strided view: what fits lands in place.
    let mut small = vec![0f64; 20];
    let half = UserDatatype::vector(5, 1, 2, &f64t).expect("vector");
    let r = rmpi::scope(|s| {
        let rr = world
            .irecv_view(
                s,
                ViewMut::new(&mut small, 1, &half).expect("view"),
                prev,
                3,
            )
            .expect("irecv");
        world.send(&src[..10], next, 3).expect("send");
        rr.wait()
    });
    assert_eq!(r.expect_err("truncated").class, ErrorClass::Truncate);
    for (i, v) in small.iter().enumerate() {
        let want = if i % 2 == 0 && i < 10 {
            prev as f64 * 1e7 + (i / 2) as f64
        } else {
            0.0
        };
        assert_eq!(*v, want, "small[{i}]");
    }

    // Halo exchange shape: the last column out, into the first column of a zeroed matrix.
    let mut h = vec![0f64; n * n];
    let st = world
        .sendrecv_view(
            &View::with_origin(&m, (n - 1) * 8, 1, &column).expect("view"),
            next,
            4,
            &mut ViewMut::new(&mut h, 1, &column).expect("view"),
            prev,
            4,
        )
        .expect("sendrecv_view");
    assert_eq!(st.count_of(&column), Some(1));
    for (i, v) in h.iter().enumerate() {
        let want = if i % n == 0 {
            prev as f64 * 1000.0 + (i + n - 1) as f64
        } else {
            0.0
        };
        assert_eq!(*v, want, "h[{i}]");
    }

    // Views that would reach outside their buffer are refused.
    let e = View::new(&m[..8], 1, &column).err().expect("too small");
    assert_eq!(e.class, ErrorClass::Buffer);
    let rev = UserDatatype::vector(3, 1, -2, &f64t).expect("vector");
    assert!(View::new(&m, 1, &rev).is_err());
    assert!(View::with_origin(&m, 32, 1, &rev).is_ok());

    world.barrier().expect("barrier");
    if rank == 0 {
        println!("datatypes: OK");
    }
}
