//! `mpicc`: the C compiler wrapper (see `wrapper.rs`).

mod wrapper;

fn main() -> std::process::ExitCode {
    wrapper::main(wrapper::Lang::C)
}
