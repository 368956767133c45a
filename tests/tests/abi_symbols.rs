//! The C library defines every function mpi.h declares, as MPI_ and PMPI_ (issue 13): those
//! rmpi does not implement would be generated stubs (tools/gen_capi_stubs.py) that raise
//! MPI_ERR_UNSUPPORTED_OPERATION naming themselves; none is left.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use rmpi_tests::*;

/// The C library clients link (`libmpi_abi.so.1`).
fn library() -> PathBuf {
    c_library()
}

/// Every function mpi.h declares (its prototypes, MPI_ and PMPI_).
fn declared() -> BTreeSet<String> {
    let header = std::fs::read_to_string(repo_root().join("libmpi/include/mpi.h")).expect("mpi.h");
    header
        .lines()
        .filter(|l| !l.starts_with("typedef") && !l.starts_with('#') && l.ends_with(");"))
        .filter_map(|l| l.split('(').next()?.split_whitespace().last())
        .map(|name| name.trim_start_matches('*'))
        .filter(|name| name.starts_with("MPI_") || name.starts_with("PMPI_"))
        .map(str::to_owned)
        .collect()
}

/// The functions the library defines (`nm -D --defined-only`).
fn defined(lib: &std::path::Path) -> BTreeSet<String> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib)
        .output()
        .expect("run nm (binutils)");
    assert!(
        out.status.success(),
        "nm {}: {}",
        lib.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [_, "T" | "W" | "i", name] => Some(name.to_owned()),
            _ => None,
        })
        .collect()
}

#[test]
fn every_declared_function_is_defined() {
    let declared = declared();
    let mpi = declared.iter().filter(|n| n.starts_with("MPI_")).count();
    let pmpi = declared.iter().filter(|n| n.starts_with("PMPI_")).count();
    // The header's 664 functions (large-count `_c` forms included), each twice.
    assert!(
        mpi > 600 && mpi == pmpi,
        "parsed {mpi} MPI_ and {pmpi} PMPI_ prototypes"
    );
    assert!(declared.contains("MPI_Send_c") && declared.contains("PMPI_Wtime"));
    let lib = library();
    let defined = defined(&lib);
    let missing: Vec<&String> = declared.difference(&defined).collect();
    assert!(
        missing.is_empty(),
        "{} declares {} functions that {} does not define: {missing:?}",
        "mpi.h",
        missing.len(),
        lib.display()
    );
}

/// Run `python3 tools/<script> --check` in the repository.
fn generator_check(script: &str) {
    let out = Command::new("python3")
        .arg(repo_root().join("tools").join(script))
        .arg("--check")
        .current_dir(repo_root())
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{script} --check: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn generated_header_stubs_and_table_are_current() {
    generator_check("gen_mpi_h.py");
    generator_check("gen_capi_stubs.py");
}

/// The small functions added with the stubs, and MPI_T's empty pvar and event interface.
#[test]
fn c_stubs_raise_unsupported_operation() {
    let p = c_program("tests/c/unimplemented.c");
    mpirun_np(2, &p, &[]).assert_no_errors("unimplemented at np 2");
}
