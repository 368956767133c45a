//! CMake's FindMPI finds rmpi: tests/cmake (a project with `find_package(MPI REQUIRED)` and
//! `target_link_libraries(... MPI::MPI_C)` / `MPI::MPI_CXX`) configured with
//! `-DMPI_C_COMPILER=<our mpicc> -DMPI_CXX_COMPILER=<our mpicxx>`, built, checked to link our
//! library (not Open MPI's or MPICH's, which the machine may also have), and run under our mpirun.
//!
//! Needs cmake, make and g++ (`scripts/deps.sh cmake make g++`; scripts/test.sh installs them).

use std::process::Command;
use std::time::Duration;

use rmpi_tests::*;

#[test]
fn cmake_find_package_mpi_finds_rmpi() {
    let mpicc = bin("mpicc");
    let mpicxx = bin("mpicxx");
    let found = Command::new("cmake")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "cmake not found: `scripts/deps.sh cmake make g++` (scripts/test.sh does)"
    );
    // A build directory of this run's own: a cached configuration must never stand in.
    let build = target_dir().join(format!("cmake-client-{}", marker("b")));
    std::fs::create_dir_all(&build).expect("create the cmake build dir");
    let mut cmd = Command::new("cmake");
    cmd.arg("-S")
        .arg(repo_root().join("tests/cmake"))
        .arg("-B")
        .arg(&build)
        .arg(format!("-DMPI_C_COMPILER={}", mpicc.display()))
        .arg(format!("-DMPI_CXX_COMPILER={}", mpicxx.display()));
    let conf = run_bounded(cmd, Duration::from_secs(300));
    assert!(
        conf.ok(),
        "cmake configure failed:\n{}{}",
        conf.stdout,
        conf.stderr
    );
    // What FindMPI found, as the project prints it: our library and our mpi.h.
    let ours = target_dir().join("libmpi_abi.so");
    let include = repo_root().join("libmpi/include");
    for (var, want) in [
        ("MPI_C_LIBRARIES", ours.display().to_string()),
        ("MPI_CXX_LIBRARIES", ours.display().to_string()),
        ("MPI_C_INCLUDE_DIRS", include.display().to_string()),
        ("MPI_C_VERSION", "5.0".to_string()),
    ] {
        let line = conf
            .stdout
            .lines()
            .find_map(|l| l.split_once(&format!("rmpi-test {var}=")).map(|(_, v)| v))
            .unwrap_or_else(|| panic!("no {var} in cmake's output:\n{}", conf.stdout));
        assert_eq!(line, want, "FindMPI's {var}:\n{}", conf.stdout);
    }

    let mut cmd = Command::new("cmake");
    cmd.arg("--build").arg(&build);
    let b = run_bounded(cmd, Duration::from_secs(300));
    assert!(b.ok(), "cmake --build failed:\n{}{}", b.stdout, b.stderr);

    // The programs need our C library (its standard-ABI SONAME), found through the runpath
    // CMake gave them, and no other MPI's.
    for prog in ["hello_c", "hello_cxx"] {
        let elf = std::fs::read(build.join(prog)).expect("read the built program");
        let has = |s: &[u8]| elf.windows(s.len()).any(|w| w == s);
        assert!(
            has(b"libmpi_abi.so.1\0"),
            "{prog} does not need libmpi_abi.so.1"
        );
        for foreign in [
            &b"libmpi.so.40\0"[..],
            b"libmpich.so.12\0",
            b"libmpi.so.12\0",
        ] {
            assert!(!has(foreign), "{prog} needs another MPI's library");
        }
    }
    for np in [1, 3] {
        let r = mpirun_np(np, &build.join("hello_c"), &[]);
        r.assert_ok();
        assert!(
            r.stdout
                .contains(&format!("cmake hello_c: {np} ranks ok: rmpi")),
            "hello_c at np {np}:\n{}",
            r.stdout
        );
        let r = mpirun_np(np, &build.join("hello_cxx"), &[]);
        r.assert_ok();
        assert!(
            r.stdout
                .contains(&format!("cmake hello_cxx: {np} ranks ok")),
            "hello_cxx at np {np}:\n{}",
            r.stdout
        );
    }
    let _ = std::fs::remove_dir_all(&build);
}
