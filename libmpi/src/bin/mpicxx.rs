//! `mpicxx` (installed also as `mpic++`): the C++ compiler wrapper. C++ programs use MPI's C
//! API (the standard dropped the C++ bindings); only the compiler differs from `mpicc`.

#[path = "mpicc/wrapper.rs"]
mod wrapper;

fn main() -> std::process::ExitCode {
    wrapper::main(wrapper::Lang::Cxx)
}
