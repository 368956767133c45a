//! A program depending on rsmpi (crate `mpi`) and on rmpi's own API (crate `rmpi`): the names do
//! not collide, and rsmpi's C calls resolve to the rmpi crate linked into the program, so there is
//! one MPI library in the process. rsmpi initializes it; both APIs' views must agree, and rmpi's
//! own `initialize` must report that MPI is already initialized.

use mpi::collective::SystemOperation;
use mpi::traits::*;

fn main() {
    let universe = mpi::initialize().expect("MPI_Init through rsmpi");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let mut sum = 0i32;
    world.all_reduce_into(&rank, &mut sum, SystemOperation::sum());
    assert_eq!(sum, size * (size - 1) / 2, "all_reduce through rsmpi");
    let again = rmpi::initialize();
    assert!(
        again.is_err(),
        "rmpi::initialize after rsmpi's MPI_Init must fail"
    );
    assert_eq!(rmpi::LIBRARY_VERSION.split(' ').next(), Some("rmpi"));
    let lib = mpi::environment::library_version().unwrap_or_default();
    assert!(lib.starts_with(rmpi::LIBRARY_VERSION), "rsmpi sees {lib}");
    world.barrier();
    if rank == 0 {
        println!(
            "rsmpi+rmpi: {size} ranks ok (one library: {})",
            rmpi::LIBRARY_VERSION
        );
    }
}
