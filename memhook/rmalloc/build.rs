//! Links Rust's unwinder statically (libgcc_eh.a) instead of libgcc_s.so.1, which the standard
//! library asks for with `-lgcc_s`: a preloaded allocator should load nothing but libc (the
//! shared libgcc cost every program about 90 KiB of resident pages, mimalloc-bench's small
//! tests 3-5 % of their peak RSS). A `libgcc_s.so` linker script in OUT_DIR, found before the
//! system's, stands for `-lgcc_eh`; rustc's version script keeps the unwinder's symbols local,
//! so the program's own C++ exceptions still go through its libgcc_s.
fn main() {
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(format!("{out}/libgcc_s.so"), "INPUT(-lgcc_eh)\n")
        .expect("write the libgcc_s.so linker script");
    println!("cargo:rustc-link-search=native={out}");
    println!("cargo:rerun-if-changed=build.rs");
}
