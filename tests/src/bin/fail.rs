//! Rank 1 fails in the way the first argument names; the other ranks wait in a receive that
//! never completes, so only mpirun's teardown can end them.
//! Modes: abort (MPI_Abort with code 7), exit3 (exit 3 without MPI_Finalize),
//! segv (killed by SIGSEGV), nofinalize (exit 0 without MPI_Finalize), hang (nobody fails:
//! only a timeout ends the job).

fn main() {
    let mode = std::env::args().nth(1).expect("mode");
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    if world.rank() == 1 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        match mode.as_str() {
            "abort" => world.abort(7),
            "exit3" => std::process::exit(3),
            // SAFETY: raising a signal on ourselves is the point of this test program.
            "segv" => unsafe {
                libc_raise_segv();
            },
            "nofinalize" => std::process::exit(0),
            "hang" => {}
            other => panic!("unknown mode {other}"),
        }
    }
    let mut buf = [0u8; 1];
    let _ = world.recv(&mut buf, 1, 99);
    unreachable!("rank 1 never sends");
}

/// Kill this process with SIGSEGV, as a crash would. Rust's runtime handles SIGSEGV itself
/// (to report stack overflows), so restore the default action first.
unsafe fn libc_raise_segv() {
    extern "C" {
        fn signal(sig: i32, handler: usize) -> usize;
        fn raise(sig: i32) -> i32;
    }
    const SIGSEGV: i32 = 11;
    const SIG_DFL: usize = 0;
    // SAFETY: setting the default disposition and raising a signal have no memory effects.
    unsafe {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
}
