//! Three build choices that keep the preloaded library's resident pages few.
//!
//! 1. Rust's unwinder is linked statically (libgcc_eh.a) instead of libgcc_s.so.1, which the
//!    standard library asks for with `-lgcc_s`: a preloaded allocator should load nothing but
//!    libc (the shared libgcc cost every program about 90 KiB of resident pages, mimalloc-bench's
//!    small tests 3-5 % of their peak RSS). A `libgcc_s.so` linker script in OUT_DIR, found before
//!    the system's, stands for `-lgcc_eh`; rustc's version script keeps the unwinder's symbols
//!    local, so the program's own C++ exceptions still go through its libgcc_s.
//! 2. The code every program runs (the malloc family, operator new and delete, the allocator
//!    itself, std's load-time argv hook, the PLT that `__cxa_finalize` goes through at exit)
//!    goes into one output section ahead of `.text`, away from
//!    the standard library's cold code (formatting, panics, backtraces: most of the 260 KiB).
//!    The kernel maps file pages 64 KiB around each one touched (fault-around), so hot code spread
//!    among cold code made about 180 KiB of the library resident in every program; together it
//!    fits in two such windows. Each function in it starts on a 64-byte line (`SUBALIGN`): where
//!    malloc's and free's branches fall moved glibc-simple's time by 5 % between builds.
//!    `INSERT BEFORE .text` adds the section to ld's default script
//!    rather than replacing it; rustc puts each function in its own `.text.<symbol>` section, so
//!    the patterns below pick them by mangled name.
//! 3. Built with the `rmalloc` profile (panic=abort), the library is `no_std` (lib.rs): without
//!    std's panic, formatting and backtrace code it has 35 KiB of text instead of 290, and a
//!    program maps 13 of its pages instead of 35 (1 then matters only to std builds). Any
//!    other profile unwinds, which a `no_std` crate cannot, so it keeps std. Cargo tells a build
//!    script neither the profile nor its panic strategy (CARGO_CFG_PANIC is the target's
//!    default), but OUT_DIR is `<target>/[<triple>/]<profile>/build/<package>-<hash>/out`.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(rmalloc_nostd)");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let profile = std::path::Path::new(&out)
        .ancestors()
        .nth(3)
        .and_then(|p| p.file_name());
    if profile.is_some_and(|p| p == "rmalloc") {
        println!("cargo:rustc-cfg=rmalloc_nostd");
    }
    std::fs::write(format!("{out}/libgcc_s.so"), "INPUT(-lgcc_eh)\n")
        .expect("write the libgcc_s.so linker script");
    println!("cargo:rustc-link-search=native={out}");

    let hot = format!("{out}/hot-text.ld");
    std::fs::write(&hot, HOT_TEXT).expect("write the hot-text linker script");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-T,{hot}");
    println!("cargo:rerun-if-changed=build.rs");
}

/// The exported C entry points by name, C++'s operators by their Itanium prefixes (new: `_Znw`,
/// `_Zna`; delete: `_Zdl`, `_Zda`), Rust functions of the `memhook::ptmalloc` and `rmalloc`
/// paths (legacy or v0 mangling both spell `7memhook8ptmalloc`), and the one standard-library
/// function every load runs.
const HOT_TEXT: &str = "SECTIONS
{
  .text.rmalloc_hot : SUBALIGN(64)
  {
    *(.plt) *(.iplt)
    *(.text.malloc .text.free .text.cfree .text.calloc .text.realloc .text.reallocarray)
    *(.text.posix_memalign .text.aligned_alloc .text.memalign .text.valloc .text.pvalloc)
    *(.text.malloc_usable_size)
    *(.text._Znw* .text._Zna* .text._Zdl* .text._Zda*)
    *(.text.*7memhook8ptmalloc* .text.*7rmalloc*)
    *(.text.*ARGV_INIT_ARRAY*)
  }
}
INSERT BEFORE .text;
";
