//! `mpicc`: the C compiler wrapper for rmpi, in the style of Open MPI's `mpicc`.
//!
//! Runs `$RMPI_CC` (default `cc`) as
//!
//! ```text
//! $RMPI_CC -I<incdir> <user args> [-L<libdir> -Wl,-rpath,<libdir> -lmpi]
//! ```
//!
//! The link flags are appended only when the command links, i.e. not with
//! `-c`, `-S`, `-E`, `-M`, `-MM` or `-fsyntax-only`, and not when there is no
//! input at all (`mpicc -v`, `mpicc -dumpversion`).
//!
//! * libdir: the directory holding this executable (canonicalised), which is
//!   where cargo puts `libmpi.so` (`target/release`, `target/debug`).
//! * incdir: `$RMPI_INCDIR` if set, else `<libdir>/include` if it exists (an
//!   installed layout), else this crate's `include/` directory as it was at
//!   build time.
//!
//! Wrapper options (consumed, never passed to the compiler):
//!
//! * `-show`, `--show`, `-showme`, `--showme`: print the command, do not run it.
//! * `--showme:compile`, `--showme:link`, `--showme:command`,
//!   `--showme:incdirs`, `--showme:libdirs`, `--showme:libs`,
//!   `--showme:version` (Open MPI's set), and MPICH's `-compile_info`,
//!   `-link_info`.
//! * `--version`: the wrapper's version, then the compiler's `--version`.
//!
//! `$RMPI_CC` may hold a command with arguments (`ccache gcc`, `gcc -m64`);
//! it is split on whitespace.  The exit status is the compiler's; a compiler
//! killed by a signal gives 128 + the signal number; a compiler that cannot
//! be started gives one line on stderr and exit status 127.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const WRAPPER_VERSION: &str = env!("CARGO_PKG_VERSION");
const BUILD_INCDIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include");
const DEFAULT_CC: &str = "cc";
const LIB_FILE: &str = "libmpi.so";

/// What the compiler will do with the user's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Compiles and links (or just links): append the link flags.
    Link,
    /// `-c`, `-S`, `-E`, `-M`, `-MM`, `-fsyntax-only`: no link step.
    CompileOnly,
    /// No input files at all (`-v`, `-dumpversion`, `--help`): nothing to link.
    NoInput,
}

/// Which part of the command line the user asked to see instead of running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Show {
    /// Run the compiler.
    Run,
    /// `-show` / `--showme`: the whole command line.
    Command,
    /// `--showme:compile`: the compile flags.
    CompileFlags,
    /// `--showme:link`: the link flags.
    LinkFlags,
    /// `--showme:command`: the compiler alone.
    Compiler,
    /// `--showme:incdirs`.
    IncDirs,
    /// `--showme:libdirs`.
    LibDirs,
    /// `--showme:libs`.
    Libs,
    /// `--showme:version`.
    WrapperVersion,
    /// `-compile_info` (MPICH): the command as if compiling only.
    CompileInfo,
    /// `-link_info` (MPICH): the command as if linking.
    LinkInfo,
    /// `--version`: our version, then the compiler's.
    Version,
}

/// Compiler options whose value is the next argument when written apart
/// (`-o out`, `-I dir`, `-x c`, `-MF deps.d`, ...).  Their value is never an
/// input file nor a mode flag.
const TAKES_VALUE: &[&str] = &[
    "-o",
    "-x",
    "-I",
    "-L",
    "-l",
    "-D",
    "-U",
    "-A",
    "-B",
    "-G",
    "-T",
    "-u",
    "-e",
    "-z",
    "-MF",
    "-MT",
    "-MQ",
    "-include",
    "-imacros",
    "-isystem",
    "-idirafter",
    "-iprefix",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-iquote",
    "-isysroot",
    "-imultilib",
    "-Xlinker",
    "-Xassembler",
    "-Xpreprocessor",
    "-Xclang",
    "-aux-info",
    "-dumpbase",
    "-dumpdir",
    "-wrapper",
    "--param",
    "--sysroot",
    "-target",
    "-arch",
];

/// Options that stop the compiler before the link step.
const NO_LINK: &[&str] = &["-c", "-S", "-E", "-M", "-MM", "-fsyntax-only"];

/// Decides whether the compiler invocation described by `args` links.
fn classify<S: AsRef<str>>(args: &[S]) -> Mode {
    let mut compile_only = false;
    let mut has_input = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_ref();
        i += 1;
        if NO_LINK.contains(&a) {
            compile_only = true;
        } else if TAKES_VALUE.contains(&a) {
            // `-l m` names a library: an input of the link step.
            if a == "-l" && i < args.len() {
                has_input = true;
            }
            i += 1;
        } else if a == "-" {
            // Source from stdin (with -x).
            has_input = true;
        } else if a.starts_with("-l") {
            has_input = true;
        } else if a.starts_with('-') {
            // Any other option (including -Wl,..., -MD, -MMD, -MF<file>).
        } else {
            // A source, object or archive file, or an @response file.
            has_input = true;
        }
    }
    if compile_only {
        Mode::CompileOnly
    } else if has_input {
        Mode::Link
    } else {
        Mode::NoInput
    }
}

/// Removes the wrapper's own options from `args`; returns what to show (the
/// last such option wins) and the arguments left for the compiler.
fn split_wrapper_args(args: Vec<String>) -> (Show, Vec<String>) {
    let mut show = Show::Run;
    let mut rest = Vec::with_capacity(args.len());
    for a in args {
        let s = match a.as_str() {
            "-show" | "--show" | "-showme" | "--showme" => Show::Command,
            "--showme:compile" | "-showme:compile" => Show::CompileFlags,
            "--showme:link" | "-showme:link" => Show::LinkFlags,
            "--showme:command" | "-showme:command" => Show::Compiler,
            "--showme:incdirs" | "-showme:incdirs" => Show::IncDirs,
            "--showme:libdirs" | "-showme:libdirs" => Show::LibDirs,
            "--showme:libs" | "-showme:libs" => Show::Libs,
            "--showme:version" | "-showme:version" => Show::WrapperVersion,
            "-compile_info" | "--compile_info" => Show::CompileInfo,
            "-link_info" | "--link_info" => Show::LinkInfo,
            "--version" => Show::Version,
            _ => {
                rest.push(a);
                continue;
            }
        };
        show = s;
    }
    (show, rest)
}

/// Splits `$RMPI_CC` into the program and its leading arguments.
fn compiler_words(spec: Option<&str>) -> Vec<String> {
    let words: Vec<String> = spec
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    if words.is_empty() {
        vec![DEFAULT_CC.to_owned()]
    } else {
        words
    }
}

fn compile_flags(incdir: &Path) -> Vec<String> {
    vec![format!("-I{}", incdir.display())]
}

fn link_flags(libdir: &Path) -> Vec<String> {
    vec![
        format!("-L{}", libdir.display()),
        format!("-Wl,-rpath,{}", libdir.display()),
        "-lmpi".to_owned(),
    ]
}

/// The full command: compiler words, include flags, user args, link flags.
fn build_command(
    cc: &[String],
    incdir: &Path,
    libdir: &Path,
    args: &[String],
    link: bool,
) -> Vec<String> {
    let mut cmd = Vec::with_capacity(cc.len() + args.len() + 4);
    cmd.extend(cc.iter().cloned());
    cmd.extend(compile_flags(incdir));
    cmd.extend(args.iter().cloned());
    if link {
        cmd.extend(link_flags(libdir));
    }
    cmd
}

/// Quotes a word for a POSIX shell when it needs it.
fn shell_quote(w: &str) -> String {
    let plain = !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^".contains(&b));
    if plain {
        w.to_owned()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

fn shell_join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The directory this executable lives in (symlinks resolved).
fn exe_dir() -> Result<PathBuf, String> {
    let exe = env::current_exe().map_err(|e| format!("cannot locate own executable: {e}"))?;
    let exe = exe.canonicalize().unwrap_or(exe);
    exe.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("executable {} has no parent directory", exe.display()))
}

fn include_dir(libdir: &Path, env_incdir: Option<OsString>) -> PathBuf {
    if let Some(d) = env_incdir.filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let installed = libdir.join("include");
    if installed.is_dir() {
        return installed;
    }
    PathBuf::from(BUILD_INCDIR)
}

/// Exit code for a finished child: its code, or 128 + signal.
fn exit_code_of(status: std::process::ExitStatus) -> u8 {
    if let Some(c) = status.code() {
        return (c & 0xff) as u8;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return (128 + sig).clamp(0, 255) as u8;
        }
    }
    1
}

fn run(cmd: &[String], cc_display: &str) -> ExitCode {
    match Command::new(&cmd[0]).args(&cmd[1..]).status() {
        Ok(status) => ExitCode::from(exit_code_of(status)),
        Err(e) => {
            eprintln!("mpicc: cannot run '{cc_display}': {e}");
            ExitCode::from(127)
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = match env::args_os().skip(1).map(OsString::into_string).collect() {
        Ok(a) => a,
        Err(bad) => {
            eprintln!(
                "mpicc: argument is not valid UTF-8: {}",
                bad.to_string_lossy()
            );
            return ExitCode::from(2);
        }
    };
    let (show, args) = split_wrapper_args(args);

    let cc_spec = env::var("RMPI_CC").ok();
    let cc = compiler_words(cc_spec.as_deref());
    let cc_display = cc.join(" ");

    let libdir = match exe_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("mpicc: {e}");
            return ExitCode::from(1);
        }
    };
    let incdir = include_dir(&libdir, env::var_os("RMPI_INCDIR"));

    // `mpicc -show` with nothing else shows the full compile-and-link line.
    let mode = match (show, args.is_empty()) {
        (Show::Command, true) => Mode::Link,
        _ => classify(&args),
    };

    let print = |words: Vec<String>| {
        println!("{}", shell_join(&words));
        ExitCode::SUCCESS
    };
    match show {
        Show::Run | Show::Command => {}
        Show::CompileFlags => return print(compile_flags(&incdir)),
        Show::LinkFlags => return print(link_flags(&libdir)),
        Show::Compiler => return print(cc),
        Show::IncDirs => return print(vec![incdir.display().to_string()]),
        Show::LibDirs => return print(vec![libdir.display().to_string()]),
        Show::Libs => return print(vec!["mpi".to_owned()]),
        Show::WrapperVersion => {
            println!("mpicc (rmpi) {WRAPPER_VERSION}");
            return ExitCode::SUCCESS;
        }
        Show::CompileInfo => return print(build_command(&cc, &incdir, &libdir, &args, false)),
        Show::LinkInfo => return print(build_command(&cc, &incdir, &libdir, &args, true)),
        Show::Version => {
            println!("mpicc (rmpi) {WRAPPER_VERSION}: wrapper for '{cc_display}'");
            println!("  include dir: {}", incdir.display());
            println!("  library dir: {}", libdir.display());
            let mut cmd = cc.clone();
            cmd.push("--version".to_owned());
            return run(&cmd, &cc_display);
        }
    }

    let link = mode == Mode::Link;
    let cmd = build_command(&cc, &incdir, &libdir, &args, link);
    if show == Show::Command {
        return print(cmd);
    }
    // Linking without our library would silently pick up another MPI's libmpi.so from the
    // system's search path: refuse instead.
    if link && !libdir.join(LIB_FILE).exists() {
        eprintln!(
            "mpicc: {LIB_FILE} not found in {}; build it with cargo build -p libmpi",
            libdir.display()
        );
        return ExitCode::from(1);
    }
    run(&cmd, &cc_display)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(s: &str) -> Mode {
        let v: Vec<&str> = s.split_whitespace().collect();
        classify(&v)
    }

    #[test]
    fn compile_only_flags() {
        assert_eq!(mode("-c foo.c"), Mode::CompileOnly);
        assert_eq!(mode("-c foo.c -o foo.o"), Mode::CompileOnly);
        assert_eq!(mode("foo.c -c"), Mode::CompileOnly);
        assert_eq!(mode("-S foo.c"), Mode::CompileOnly);
        assert_eq!(mode("-E foo.c"), Mode::CompileOnly);
        assert_eq!(mode("-M foo.c"), Mode::CompileOnly);
        assert_eq!(mode("-MM foo.c"), Mode::CompileOnly);
        assert_eq!(mode("-fsyntax-only foo.c"), Mode::CompileOnly);
        assert_eq!(mode("-MMD -MP -c foo.c"), Mode::CompileOnly);
        assert_eq!(mode("-x c -E -"), Mode::CompileOnly);
        assert_eq!(mode("-DNDEBUG -O2 -Wall -c a.c b.c"), Mode::CompileOnly);
    }

    #[test]
    fn linking_commands() {
        assert_eq!(mode("foo.c"), Mode::Link);
        assert_eq!(mode("foo.c -o foo"), Mode::Link);
        assert_eq!(mode("-O2 a.o b.o -o prog"), Mode::Link);
        assert_eq!(mode("foo.c -lm"), Mode::Link);
        assert_eq!(mode("-shared -fPIC lib.c -o libx.so"), Mode::Link);
        assert_eq!(mode("-x c -"), Mode::Link);
        assert_eq!(mode("@args.rsp"), Mode::Link);
        assert_eq!(mode("-Wl,-O1 foo.o"), Mode::Link);
        assert_eq!(mode("-lfoo"), Mode::Link);
        assert_eq!(mode("-l foo"), Mode::Link);
        assert_eq!(mode("libfoo.a main.o"), Mode::Link);
    }

    #[test]
    fn dependency_flags_do_not_stop_linking() {
        // -MD/-MMD generate dependencies as a side effect of a normal build.
        assert_eq!(mode("-MD foo.c -o foo"), Mode::Link);
        assert_eq!(mode("-MMD -MP -MF foo.d foo.c -o foo"), Mode::Link);
        assert_eq!(mode("-MD -MT foo -MQ bar foo.c"), Mode::Link);
        assert_eq!(mode("-MFfoo.d -MD foo.c"), Mode::Link);
    }

    #[test]
    fn option_values_are_not_inputs_or_modes() {
        // The value of -o, -I, -x, -D ... is neither an input nor a mode flag.
        assert_eq!(mode("-o prog"), Mode::NoInput);
        assert_eq!(mode("-I include -D X -U Y -x c"), Mode::NoInput);
        assert_eq!(mode("-o -c foo.c"), Mode::Link);
        assert_eq!(mode("-include config.h foo.c"), Mode::Link);
        assert_eq!(mode("-Xlinker -c foo.o"), Mode::Link);
        assert_eq!(mode("-MF -c foo.c"), Mode::Link);
    }

    #[test]
    fn no_input_queries() {
        assert_eq!(mode(""), Mode::NoInput);
        assert_eq!(mode("-v"), Mode::NoInput);
        assert_eq!(mode("-dumpversion"), Mode::NoInput);
        assert_eq!(mode("-dumpmachine"), Mode::NoInput);
        assert_eq!(mode("--help"), Mode::NoInput);
        assert_eq!(mode("-print-search-dirs"), Mode::NoInput);
        assert_eq!(mode("-Wl,-O1"), Mode::NoInput);
    }

    fn strings(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn wrapper_options_are_consumed() {
        let (show, rest) = split_wrapper_args(strings("-show foo.c -o foo"));
        assert_eq!(show, Show::Command);
        assert_eq!(rest, strings("foo.c -o foo"));
        let (show, rest) = split_wrapper_args(strings("--showme -c foo.c"));
        assert_eq!(show, Show::Command);
        assert_eq!(rest, strings("-c foo.c"));
        assert_eq!(
            split_wrapper_args(strings("--showme:link")).0,
            Show::LinkFlags
        );
        assert_eq!(
            split_wrapper_args(strings("--showme:compile")).0,
            Show::CompileFlags
        );
        assert_eq!(split_wrapper_args(strings("-link_info")).0, Show::LinkInfo);
        assert_eq!(split_wrapper_args(strings("--version")).0, Show::Version);
        let (show, rest) = split_wrapper_args(strings("-O2 -Wall foo.c"));
        assert_eq!(show, Show::Run);
        assert_eq!(rest, strings("-O2 -Wall foo.c"));
        // -v and -version belong to the compiler.
        assert_eq!(split_wrapper_args(strings("-v")).1, strings("-v"));
    }

    #[test]
    fn command_layout() {
        let inc = Path::new("/r/libmpi/include");
        let lib = Path::new("/r/target/release");
        let cc = compiler_words(None);
        let args = strings("-O2 ring.c -o ring");
        assert_eq!(
            build_command(&cc, inc, lib, &args, classify(&args) == Mode::Link),
            strings(
                "cc -I/r/libmpi/include -O2 ring.c -o ring \
                 -L/r/target/release -Wl,-rpath,/r/target/release -lmpi"
            )
        );
        let args = strings("-c ring.c");
        assert_eq!(
            build_command(&cc, inc, lib, &args, classify(&args) == Mode::Link),
            strings("cc -I/r/libmpi/include -c ring.c")
        );
    }

    #[test]
    fn compiler_from_env() {
        assert_eq!(compiler_words(None), strings("cc"));
        assert_eq!(compiler_words(Some("")), strings("cc"));
        assert_eq!(compiler_words(Some("  ")), strings("cc"));
        assert_eq!(compiler_words(Some("clang")), strings("clang"));
        assert_eq!(
            compiler_words(Some("ccache gcc -m64")),
            strings("ccache gcc -m64")
        );
    }

    #[test]
    fn include_dir_choice() {
        let tmp = env::temp_dir().join(format!("mpicc-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        // No <libdir>/include: the build-time include directory.
        assert_eq!(include_dir(&tmp, None), PathBuf::from(BUILD_INCDIR));
        // $RMPI_INCDIR wins; an empty value is ignored.
        assert_eq!(
            include_dir(&tmp, Some("/x/inc".into())),
            PathBuf::from("/x/inc")
        );
        assert_eq!(
            include_dir(&tmp, Some("".into())),
            PathBuf::from(BUILD_INCDIR)
        );
        // Installed layout.
        std::fs::create_dir_all(tmp.join("include")).unwrap();
        assert_eq!(include_dir(&tmp, None), tmp.join("include"));
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("-I/a/b"), "-I/a/b");
        assert_eq!(shell_quote("-Wl,-rpath,/a"), "-Wl,-rpath,/a");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("-DX=\"1\""), "'-DX=\"1\"'");
    }

    #[test]
    fn build_include_dir_has_mpi_h() {
        assert!(
            Path::new(BUILD_INCDIR).join("mpi.h").is_file(),
            "{BUILD_INCDIR}/mpi.h missing"
        );
    }
}
