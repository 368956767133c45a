//! librmalloc.so under LD_PRELOAD in real programs: python3, git in a temporary repository, gcc
//! building a small project (and the result running), and a threaded C++ program that forks while
//! its threads allocate. Each program must succeed and print what it prints without the library.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// target/rmalloc/librmalloc.so, the library as users build it (`--profile rmalloc`: no_std,
/// build.rs), built once per test run (cargo does not build a cdylib for its package's
/// integration tests).
fn lib() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            // This test binary is <target>/<profile>/deps/preload-<hash>.
            let exe = std::env::current_exe().unwrap();
            let target = exe.ancestors().nth(3).unwrap().to_path_buf();
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .args([
                    "build",
                    "-q",
                    "--lib",
                    "--profile",
                    "rmalloc",
                    "-p",
                    "memhook-rmalloc",
                ])
                .arg("--target-dir")
                .arg(&target)
                .status()
                .unwrap();
            assert!(
                status.success(),
                "cargo build --profile rmalloc librmalloc.so"
            );
            let l = target.join("rmalloc").join("librmalloc.so");
            assert!(l.exists(), "{} not built", l.display());
            l
        })
        .clone()
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rmalloc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `cmd` with librmalloc.so preloaded; panics with its output unless it exits 0.
fn preloaded(mut cmd: Command, what: &str) -> Output {
    let o = cmd
        .env("LD_PRELOAD", lib())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        o.status.success(),
        "{what} under librmalloc.so: {}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Builds tests/c/NAME.cpp (C++17, with `flags`) into DIR/NAME.
fn gpp(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.cpp"));
    let exe = dir.join(name);
    let st = Command::new("g++")
        .arg("-std=c++17")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .args(flags)
        .status()
        .expect("run g++");
    assert!(st.success(), "g++ {name}.cpp");
    exe
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The allocator really is the one in use: malloc resolves to librmalloc.so.
#[test]
fn malloc_is_ours() {
    let mut c = Command::new("python3");
    c.args([
        "-c",
        "import ctypes; l = ctypes.CDLL(None); h = ctypes.CDLL('libdl.so.2'); \
         import sys; print(open('/proc/self/maps').read().count('librmalloc.so') > 0)",
    ]);
    assert_eq!(stdout(&preloaded(c, "python3 maps")).trim(), "True");
}

/// The library loads nothing beyond the C library: no libgcc_s.so.1 (Rust's unwinder comes
/// from libgcc_eh.a, build.rs), which every preloaded program would otherwise map and count in
/// its resident set.
#[test]
fn needs_only_libc() {
    let o = Command::new("readelf")
        .arg("-d")
        .arg(lib())
        .output()
        .expect("run readelf");
    assert!(o.status.success(), "readelf -d librmalloc.so");
    let needed: Vec<String> = stdout(&o)
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| {
            l.split('[')
                .nth(1)
                .map(|n| n.trim_end_matches(']').to_string())
        })
        .collect();
    assert!(
        !needed.is_empty(),
        "no NEEDED entries parsed from readelf -d"
    );
    for n in &needed {
        assert!(
            n == "libc.so.6" || n.starts_with("ld-linux"),
            "librmalloc.so needs {n} (all: {needed:?})"
        );
    }
}

/// `readelf -SW -s` of the library: its section headers, then its symbols.
fn readelf_sections_symbols() -> String {
    let o = Command::new("readelf")
        .args(["-SW", "-s"])
        .arg(lib())
        .output()
        .expect("run readelf");
    assert!(o.status.success(), "readelf -SW -s librmalloc.so");
    stdout(&o)
}

/// The allocated sections in `readelf -SW` output: (name, address, size).
fn sections(out: &str) -> Vec<(&str, u64, u64)> {
    // Section headers: "[Nr] Name Type Address Off Size ...".
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(']').nth(1)?.split_whitespace().collect();
            let hex = |s: &str| u64::from_str_radix(s, 16).ok();
            Some((*f.first()?, hex(f.get(2)?)?, hex(f.get(4)?)?))
        })
        .collect()
}

/// The library links nothing of Rust's standard library (lib.rs: `no_std` under the rmalloc
/// profile), so a program maps only the allocator's pages: no std symbol, and a small text.
#[test]
fn no_standard_library() {
    let out = readelf_sections_symbols();
    let std_syms: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().nth(7))
        .filter(|n| n.contains("3std") || n.contains("_ZN3std"))
        .collect();
    assert!(
        std_syms.is_empty(),
        "std is linked in: {:?}",
        &std_syms[..std_syms.len().min(5)]
    );
    let text: u64 = sections(&out)
        .iter()
        .filter(|(name, _, _)| name.starts_with(".text"))
        .map(|&(_, _, size)| size)
        .sum();
    assert!(text > 0 && text < 96 << 10, "text is {text} bytes");
}

/// The code every program runs lies together, ahead of the standard library's cold code
/// (build.rs): the entry points, the allocator's slow path, the PLT stubs (`__cxa_finalize` at
/// exit goes through one), and no `pthread_atfork` stub linked in at the far end.
#[test]
fn hot_code_together() {
    let out = readelf_sections_symbols();
    let sections = sections(&out);
    let section = |name: &str| -> Option<(u64, u64)> {
        sections
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|&(_, addr, size)| (addr, size))
    };
    let (lo, size) = section(".text.rmalloc_hot").expect("a .text.rmalloc_hot section");
    assert!(
        section(".plt").is_none(),
        "the PLT stubs are not in .text.rmalloc_hot"
    );
    // Symbols: "Num: Value Size Type Bind Vis Ndx Name".
    let symbols: Vec<(u64, &str)> = out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 8 && f[3] == "FUNC")
                .then(|| Some((u64::from_str_radix(f[1], 16).ok()?, f[7])))?
        })
        .collect();
    let inside = |name: &str| {
        symbols
            .iter()
            .any(|&(a, n)| n.split('@').next() == Some(name) && a >= lo && a < lo + size)
    };
    for f in ["malloc", "free", "calloc", "realloc", "_Znwm", "_ZdlPv"] {
        assert!(inside(f), "{f} is not in .text.rmalloc_hot");
    }
    assert!(
        symbols
            .iter()
            .any(|&(a, n)| n.contains("alloc_slow") && a >= lo && a < lo + size),
        "the allocator's slow path is not in .text.rmalloc_hot"
    );
    assert!(
        !symbols.iter().any(|&(_, n)| n == "pthread_atfork"),
        "the pthread_atfork stub is linked in (fork.rs calls __register_atfork)"
    );
}

#[test]
fn python3() {
    python3_with(&[]);
}

/// The same under a fake two-node NUMA layout (CPU 0: node 0, CPU 1: node 1): threads take
/// blocks from their CPU's node and free across nodes.
#[test]
fn python3_fake_numa() {
    python3_with(&[("MEMHOOK_PTMALLOC_NUMA_FAKE", "0-0:1-1")]);
}

fn python3_with(env: &[(&str, &str)]) {
    let script = r#"
import json, threading, subprocess, os, collections
def work(n):
    d = collections.defaultdict(list)
    for i in range(20000):
        d[i % 997].append(str(i) * (i % 13))
        if i % 11 == 0: d.pop((i * 7) % 997, None)
    return sum(len(v) for v in d.values())
ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in ts: t.start()
out = subprocess.run(['python3', '-c', 'print(sum(range(10)))'], capture_output=True, text=True).stdout
pid = os.fork()
if pid == 0:
    os._exit(0 if len(json.dumps(list(range(50000)))) > 0 else 1)
assert os.waitpid(pid, 0)[1] == 0
for t in ts: t.join()
big = bytearray(50 << 20); big[-1] = 1
print(out.strip(), len(json.dumps({str(i): list(range(i % 50)) for i in range(5000)})), sum(big))
"#;
    let mut c = Command::new("python3");
    c.args(["-c", script]).envs(env.iter().copied());
    assert_eq!(stdout(&preloaded(c, "python3")).trim(), "45 494590 1");
}

#[test]
fn git() {
    let d = tmpdir("git");
    let git = |args: &[&str]| {
        let mut c = Command::new("git");
        c.current_dir(&d)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args);
        preloaded(c, &format!("git {}", args.join(" ")))
    };
    assert!(stdout(&git(&["--version"])).starts_with("git version"));
    git(&["init", "-q"]);
    for i in 0..200 {
        std::fs::write(d.join(format!("f{i}.txt")), format!("{i}\n").repeat(i + 1)).unwrap();
    }
    git(&["add", "."]);
    git(&["commit", "-qm", "first"]);
    std::fs::write(d.join("f7.txt"), "changed\n").unwrap();
    assert_eq!(stdout(&git(&["status", "--short"])).trim(), "M f7.txt");
    git(&["commit", "-qam", "second"]);
    assert_eq!(stdout(&git(&["log", "--oneline"])).lines().count(), 2);
    git(&["gc", "-q"]);
    assert!(stdout(&git(&["diff", "HEAD~1", "--stat"])).contains("1 file changed"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn gcc_builds_a_project() {
    let d = tmpdir("gcc");
    std::fs::write(
        d.join("util.h"),
        "#include <stddef.h>\nchar *repeat(const char *s, size_t n);\nlong fib(int n);\n",
    )
    .unwrap();
    std::fs::write(
        d.join("util.c"),
        "#include <stdlib.h>\n#include <string.h>\n#include \"util.h\"\n\
         char *repeat(const char *s, size_t n) { size_t l = strlen(s); char *r = malloc(l * n + 1);\n\
         for (size_t i = 0; i < n; i++) memcpy(r + i * l, s, l); r[l * n] = 0; return r; }\n\
         long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n",
    )
    .unwrap();
    std::fs::write(
        d.join("main.c"),
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"util.h\"\n\
         int main(void) { char *r = repeat(\"ab\", 1000); printf(\"%zu %ld\\n\", strlen(r), fib(20)); free(r); return 0; }\n",
    )
    .unwrap();
    std::fs::write(
        d.join("Makefile"),
        "prog: main.o util.o\n\tgcc -O2 -o prog main.o util.o\n%.o: %.c util.h\n\tgcc -O2 -Wall -c $<\n",
    )
    .unwrap();
    let mut c = Command::new("make");
    c.current_dir(&d).args(["-s", "-j2"]);
    preloaded(c, "make (gcc)");
    let mut c = Command::new(d.join("prog"));
    c.current_dir(&d);
    assert_eq!(
        stdout(&preloaded(c, "the built program")).trim(),
        "2000 6765"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn threaded_cpp_with_fork() {
    let d = tmpdir("cpp");
    let exe = gpp(&d, "threads", &["-O2", "-pthread"]);
    let o = preloaded(Command::new(&exe), "threads (C++)");
    assert_eq!(stdout(&o).trim(), "threads ok");
    let _ = std::fs::remove_dir_all(&d);
}

/// C++'s operator new and delete are the library's, with C++'s failure semantics (the
/// new-handler, std::bad_alloc, null from nothrow), aligned forms, and malloc's alignments.
#[test]
fn cpp_operator_new_and_delete() {
    let d = tmpdir("newdelete");
    let exe = gpp(&d, "newdelete", &["-O1", "-fno-builtin", "-ldl"]);
    let o = preloaded(Command::new(&exe), "newdelete (C++)");
    assert_eq!(stdout(&o).trim(), "new/delete ok");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn large_blocks_reused_and_grown() {
    let d = tmpdir("large");
    let exe = d.join("large");
    let st = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/large.c"))
        .status()
        .expect("run gcc");
    assert!(st.success(), "gcc large.c");
    assert_eq!(
        stdout(&preloaded(Command::new(&exe), "large")).trim(),
        "large ok"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The spy: a trace of tests/c/spy.c read back by ptmalloc-spy shows the remote frees, the live
/// objects by class and the large block.
#[test]
fn spy_trace() {
    let d = tmpdir("spy");
    let exe = d.join("spy");
    let st = Command::new("gcc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&exe)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/spy.c"))
        .status()
        .expect("run gcc");
    assert!(st.success(), "gcc spy.c");
    let trace = d.join("trace.bin");
    let mut c = Command::new(&exe);
    c.env("MEMHOOK_PTMALLOC_TRACE", &trace);
    preloaded(c, "spy");
    let spy = PathBuf::from(env!("CARGO_BIN_EXE_ptmalloc-spy"));
    let o = Command::new(&spy)
        .arg(&trace)
        .output()
        .expect("run ptmalloc-spy");
    let out = stdout(&o);
    assert!(o.status.success(), "ptmalloc-spy: {out}");
    let fields = |prefix: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in\n{out}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    // The main thread's chain is the first: 1000 mallocs (and pthread_create's), 400 frees, all
    // of them remote.
    let main = out
        .lines()
        .find(|l| l.starts_with("0x"))
        .unwrap_or_else(|| panic!("no chain in\n{out}"));
    let m: Vec<&str> = main.split_whitespace().collect();
    assert_eq!(&m[4..6], ["400", "400"], "main chain: {main}\n{out}");
    // By class: 600 objects of 112 bytes, 50 of 3072, one large block.
    assert_eq!(fields("7 ")[1..3], ["112", "600"], "{out}");
    assert_eq!(fields("26 ")[1..3], ["3072", "50"], "{out}");
    assert_eq!(fields("large blocks")[4..7], ["1", "0", "0"], "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

/// The decision component: with a footprint target the process is always over, freed large
/// blocks go straight back to the OS (the spy counts none kept or reused); without one they are
/// kept and reused.
#[test]
fn footprint_target_gives_memory_back() {
    let d = tmpdir("target");
    let exe = d.join("large");
    let st = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/large.c"))
        .status()
        .expect("run gcc");
    assert!(st.success(), "gcc large.c");
    let spy = PathBuf::from(env!("CARGO_BIN_EXE_ptmalloc-spy"));
    let source_line = |target: Option<&str>| -> Vec<u64> {
        let trace = d.join("trace.bin");
        let mut c = Command::new(&exe);
        c.env("MEMHOOK_PTMALLOC_TRACE", &trace);
        if let Some(t) = target {
            c.env("MEMHOOK_PTMALLOC_TARGET", t);
        }
        preloaded(c, "large with a trace");
        let out = stdout(&Command::new(&spy).arg(&trace).output().unwrap());
        let line = out
            .lines()
            .find(|l| l.starts_with("memory source:"))
            .unwrap_or_else(|| panic!("no source line in\n{out}"))
            .to_string();
        // "... large blocks F fresh, R reused, K kept, X released"
        let tail = &line[line.find("large blocks").unwrap()..];
        tail.split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().unwrap())
            .collect()
    };
    let free = source_line(None);
    assert!(
        free[1] > 0 && free[2] > 0,
        "no target: reused and kept {free:?}"
    );
    let pressed = source_line(Some("1m"));
    assert_eq!(
        pressed[1..3],
        [0, 0],
        "target 1m: none reused or kept {pressed:?}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
