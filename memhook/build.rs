//! Picks the provider: the one feature named, or the platform default when none is.
fn main() {
    let named: Vec<&str> = ["ptmalloc", "hooks", "ldpreload", "none"]
        .into_iter()
        .filter(|p| std::env::var_os(format!("CARGO_FEATURE_{}", p.to_uppercase())).is_some())
        .collect();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let provider = match named.as_slice() {
        [one] => *one,
        // Several named: lib.rs stops the build with a compile_error! naming them.
        [_, _, ..] => "conflict",
        [] if arch == "x86_64" && os == "linux" => "hooks",
        [] => "none",
    };
    println!("cargo::rustc-check-cfg=cfg(memhook_provider, values(\"ptmalloc\", \"hooks\", \"ldpreload\", \"none\", \"conflict\"))");
    println!("cargo::rustc-cfg=memhook_provider=\"{provider}\"");
    println!("cargo::rustc-env=MEMHOOK_PROVIDER={provider}");
    println!(
        "cargo::rustc-env=MEMHOOK_FEATURES_NAMED={}",
        named.join(" and ")
    );
    println!("cargo::rerun-if-changed=build.rs");
}
