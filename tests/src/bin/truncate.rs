//! A receive into a buffer smaller than the message fails with MPI_ERR_TRUNCATE, for an eager
//! and a rendezvous message, and the job carries on afterwards.

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let sizes = [100usize, 1 << 20];
    if world.rank() == 0 {
        for &s in &sizes {
            world.send(&vec![7u8; s], 1, 3).expect("send");
        }
        world.send(&[42u8], 1, 4).expect("send");
    } else if world.rank() == 1 {
        for &s in &sizes {
            let mut small = vec![0u8; 10];
            let e = world
                .recv(&mut small, 0, 3)
                .expect_err("a truncated receive must fail");
            assert_eq!(e.class, rmpi::ErrorClass::Truncate, "{s} bytes: {e}");
            assert_eq!(small, vec![7u8; 10], "the part that fits is delivered");
        }
        let mut one = [0u8];
        world.recv(&mut one, 0, 4).expect("recv after truncation");
        assert_eq!(one[0], 42);
        println!("truncate: OK");
    }
}
