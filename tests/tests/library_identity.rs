//! The C library is the MPI 5.0 ABI's `libmpi_abi.so.1`, never mistaken for another MPI's
//! `libmpi.so` (Open MPI's is in the default search path on most machines), and an installed
//! prefix works wherever it is moved.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use rmpi_tests::*;

/// Open MPI's library directory on Debian; LD_LIBRARY_PATH naming it first is what an
/// environment module or a user's shell profile does.
const SYSTEM_LIBDIR: &str = "/usr/lib/x86_64-linux-gnu";

fn run(mut cmd: Command) -> Run {
    run_bounded(
        {
            cmd.env_remove("LD_LIBRARY_PATH");
            cmd
        },
        Duration::from_secs(300),
    )
}

fn sh(script: &str, envs: &[(&str, &str)]) -> Run {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script);
    let mut r = {
        c.env_remove("LD_LIBRARY_PATH");
        c.envs(envs.iter().copied());
        run_bounded(c, Duration::from_secs(300))
    };
    r.stdout = r.stdout.trim_end().to_string();
    r
}

/// `readelf -d` lines of one kind (NEEDED, SONAME, RUNPATH) of an ELF file.
fn dynamic(path: &Path, kind: &str) -> Vec<String> {
    let r = sh(&format!("readelf -d '{}'", path.display()), &[]);
    assert!(r.ok(), "readelf -d {}: {}", path.display(), r.stderr);
    r.stdout
        .lines()
        .filter(|l| l.contains(&format!("({kind})")))
        .filter_map(|l| Some(l.split('[').nth(1)?.trim_end_matches(']').to_string()))
        .collect()
}

/// Where `ldd` (with `envs`) says `program` loads `lib` from.
fn loaded_from(program: &Path, lib: &str, envs: &[(&str, &str)]) -> String {
    let r = sh(&format!("ldd '{}'", program.display()), envs);
    assert!(r.ok(), "ldd: {}", r.stderr);
    r.stdout
        .lines()
        .find(|l| l.trim_start().starts_with(lib))
        .unwrap_or_else(|| panic!("ldd shows no {lib}:\n{}", r.stdout))
        .split("=>")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_default()
        .to_string()
}

fn canonical(p: impl AsRef<Path>) -> PathBuf {
    std::fs::canonicalize(p.as_ref()).unwrap_or_else(|_| p.as_ref().to_path_buf())
}

fn check_identity_output(r: &Run, np: usize) {
    r.assert_no_errors("library_identity");
    let lines: Vec<&str> = r.stdout.lines().filter(|l| l.contains("abi 1.0")).collect();
    assert_eq!(lines.len(), np, "{}", r.stdout);
    for l in lines {
        assert!(
            l.contains("standard ABI 1.0") && l.contains("memhook provider"),
            "library version lacks the build's features: {l}"
        );
    }
}

#[test]
fn the_library_is_libmpi_abi_so_1() {
    let lib = c_library();
    assert_eq!(dynamic(&lib, "SONAME"), ["libmpi_abi.so.1"]);
    let target = target_dir();
    assert!(
        !target.join("libmpi.so").exists() || {
            // A stale file from before the rename in a developer's target dir is not ours now.
            let m = std::fs::metadata(target.join("libmpi.so"))
                .unwrap()
                .modified()
                .unwrap();
            m < std::fs::metadata(&lib).unwrap().modified().unwrap()
        },
        "the build still produces a libmpi.so"
    );
    let prog = c_program("tests/c/library_identity.c");
    let needed = dynamic(&prog, "NEEDED");
    assert!(needed.iter().any(|n| n == "libmpi_abi.so.1"), "{needed:?}");
    assert!(
        !needed.iter().any(|n| n.starts_with("libmpi.so")),
        "{needed:?}"
    );
}

#[test]
fn another_mpis_library_directory_first_does_not_win() {
    let prog = c_program("tests/c/library_identity.c");
    let envs = [("LD_LIBRARY_PATH", SYSTEM_LIBDIR)];
    assert_eq!(
        canonical(loaded_from(&prog, "libmpi_abi.so.1", &envs)),
        canonical(c_library()),
    );
    let mut cmd = Command::new(bin("mpirun"));
    cmd.args(["--timeout", "120", "-np", "2", "--oversubscribe"])
        .arg(&prog)
        .env("LD_LIBRARY_PATH", SYSTEM_LIBDIR);
    let r = run_bounded(cmd, Duration::from_secs(150));
    check_identity_output(&r, 2);
}

/// `scripts/install.sh PREFIX` over the binaries this suite built, then the prefix moved: its
/// wrappers, pkg-config files and mpirun work from the new place.
#[test]
fn installed_prefix_works_after_a_move() {
    ensure_built();
    let tmp = std::env::temp_dir().join(format!("rmpi-install-{}", marker("pfx")));
    let (first, moved) = (tmp.join("first"), tmp.join("moved"));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut install = Command::new(repo_root().join("scripts/install.sh"));
    install.arg(&first).arg("--no-build");
    if target_dir().file_name().is_some_and(|n| n == "debug") {
        install.arg("--debug");
    }
    install.env("CARGO_TARGET_DIR", target_dir().parent().unwrap());
    let r = run(install);
    assert!(r.ok(), "install.sh: {}{}", r.stdout, r.stderr);
    for f in [
        "bin/mpirun",
        "bin/mpiexec",
        "bin/mpicc",
        "bin/mpicxx",
        "bin/mpic++",
        "lib/libmpi_abi.so.1.0.0",
        "lib/libmpi_abi.so.1",
        "lib/libmpi_abi.so",
        "lib/pkgconfig/mpi.pc",
        "include/mpi.h",
    ] {
        assert!(first.join(f).exists(), "{f} not installed");
    }
    assert_eq!(
        dynamic(&first.join("lib/libmpi_abi.so.1.0.0"), "SONAME"),
        ["libmpi_abi.so.1"]
    );
    std::fs::rename(&first, &moved).unwrap();

    let bin = moved.join("bin");
    let out = tmp.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // The C tests, compiled and run from the moved prefix alone.
    for (src, np, expect) in [
        ("examples/c/ring.c", 3, "ring: OK"),
        ("tests/c/p2p_blocking.c", 2, " No Errors"),
        ("tests/c/coll_allreduce.c", 3, " No Errors"),
        ("tests/c/library_identity.c", 2, " No Errors"),
    ] {
        let exe = out.join(Path::new(src).file_stem().unwrap());
        let mut cc = Command::new(bin.join("mpicc"));
        cc.args(["-O2", "-o"]).arg(&exe).arg(repo_root().join(src));
        let r = run(cc);
        assert!(r.ok(), "moved mpicc {src}: {}", r.stderr);
        assert_eq!(
            dynamic(&exe, "RUNPATH"),
            [moved.join("lib").display().to_string()]
        );
        let mut job = Command::new(bin.join("mpiexec"));
        job.args([
            "--timeout",
            "120",
            "-np",
            &np.to_string(),
            "--oversubscribe",
        ])
        .arg(&exe);
        let r = run(job);
        assert!(
            r.ok() && r.stdout.contains(expect),
            "{src} from the moved prefix: {:?}\n{}\n{}",
            r.code,
            r.stdout,
            r.stderr
        );
    }

    // C++ through mpicxx (the C API from C++).
    let cxx_src = out.join("hello.cc");
    std::fs::write(
        &cxx_src,
        "#include <mpi.h>\n#include <iostream>\nint main(int c, char **v) {\n  MPI_Init(&c, &v);\n  \
         int r;\n  MPI_Comm_rank(MPI_COMM_WORLD, &r);\n  std::cout << \"c++ rank \" << r << std::endl;\n  \
         MPI_Finalize();\n}\n",
    )
    .unwrap();
    let mut cxx = Command::new(bin.join("mpic++"));
    cxx.arg("-o").arg(out.join("hello_cc")).arg(&cxx_src);
    let r = run(cxx);
    assert!(r.ok(), "mpic++: {}", r.stderr);
    let mut job = Command::new(bin.join("mpirun"));
    job.args(["--timeout", "120", "-np", "2", "--oversubscribe"])
        .arg(out.join("hello_cc"));
    let r = run(job);
    assert!(
        r.ok() && r.stdout.matches("c++ rank").count() == 2,
        "{}{}",
        r.stdout,
        r.stderr
    );

    // No rpath at all (pkg-config's flags, as a build system uses them): LD_LIBRARY_PATH finds
    // the library, and it is ours even with the system's MPI directory in the path too.
    let pc = moved.join("lib/pkgconfig");
    let plain = out.join("identity_plain");
    let r = sh(
        &format!(
            "cc -O2 -o '{}' '{}' $(pkg-config --cflags --libs mpi)",
            plain.display(),
            repo_root().join("tests/c/library_identity.c").display()
        ),
        &[("PKG_CONFIG_PATH", pc.to_str().unwrap())],
    );
    assert!(r.ok(), "cc with pkg-config mpi: {}", r.stderr);
    assert!(dynamic(&plain, "RUNPATH").is_empty() && dynamic(&plain, "RPATH").is_empty());
    let libpath = format!("{}:{SYSTEM_LIBDIR}", moved.join("lib").display());
    assert_eq!(
        canonical(loaded_from(
            &plain,
            "libmpi_abi.so.1",
            &[("LD_LIBRARY_PATH", &libpath)]
        )),
        canonical(moved.join("lib/libmpi_abi.so.1.0.0")),
    );
    let mut job = Command::new(bin.join("mpirun"));
    job.args(["--timeout", "120", "-np", "2", "--oversubscribe"])
        .arg(&plain)
        .env("LD_LIBRARY_PATH", &libpath);
    check_identity_output(&run_bounded(job, Duration::from_secs(150)), 2);

    std::fs::remove_dir_all(&tmp).unwrap();
}
