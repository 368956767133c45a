//! The ABI's versioned name: programs linked with -lmpi_abi record NEEDED libmpi_abi.so.1
//! (ABI 1.x), whatever file name a build or an install gives the library.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi_abi.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
