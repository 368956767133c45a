//! Every rank says hello: `mpirun -np 4 target/release/examples/hello`.

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    println!(
        "Hello from rank {} of {} on {}",
        world.rank(),
        world.size(),
        universe.processor_name()
    );
}
