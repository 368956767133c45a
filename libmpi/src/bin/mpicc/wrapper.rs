//! The compiler wrappers `mpicc` (C) and `mpicxx`/`mpic++` (C++), in the style of Open MPI's.
//!
//! Runs the compiler (`$RMPI_CC`, default `cc`; for C++ `$RMPI_CXX`, default `c++`) as
//!
//! ```text
//! <compiler> -I<incdir> <user args> [-L<libdir> -Wl,-rpath,<libdir> -lmpi_abi]
//! ```
//!
//! The link flags are appended only when the command links, i.e. not with
//! `-c`, `-S`, `-E`, `-M`, `-MM` or `-fsyntax-only`, and not when there is no
//! input at all (`mpicc -v`, `mpicc -dumpversion`). The library is the MPI 5.0
//! ABI's `libmpi_abi` (SONAME `libmpi_abi.so.1`): a name no other MPI's
//! `libmpi.so` can shadow, whatever `LD_LIBRARY_PATH` says.
//!
//! Where things are is found from this executable's own location, so a tree
//! can be moved (relocatable):
//!
//! * installed (`scripts/install.sh PREFIX`): `PREFIX/bin/mpicc`, libdir
//!   `PREFIX/lib`, incdir `PREFIX/include`;
//! * a cargo target directory (`target/release/mpicc`): libdir is that
//!   directory, where cargo puts `libmpi_abi.so`; the wrapper keeps the
//!   `libmpi_abi.so.1` link beside it that programs load at run time (cargo
//!   has no post-build step to make it); incdir is `$RMPI_INCDIR` if set, else
//!   `<libdir>/include` if it exists, else this crate's `include/` directory
//!   as it was at build time.
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
//! The compiler variable may hold a command with arguments (`ccache gcc`,
//! `gcc -m64`); it is split on whitespace.  The exit status is the
//! compiler's; a compiler killed by a signal gives 128 + the signal number; a
//! compiler that cannot be started gives one line on stderr and exit status
//! 127.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const WRAPPER_VERSION: &str = env!("CARGO_PKG_VERSION");
const BUILD_INCDIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include");
/// What the linker is asked for (`-lmpi_abi`), what programs load (the SONAME), and what cargo
/// builds.
const LIB_NAME: &str = "mpi_abi";
const LIB_SONAME: &str = "libmpi_abi.so.1";
const LIB_CARGO_FILE: &str = "libmpi_abi.so";

/// Which language the wrapper compiles.
#[allow(dead_code)] // each wrapper binary constructs one of them
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    C,
    Cxx,
}

impl Lang {
    /// The wrapper's name in messages.
    fn wrapper(self) -> &'static str {
        match self {
            Lang::C => "mpicc",
            Lang::Cxx => "mpicxx",
        }
    }

    /// The variable naming the compiler, and the compiler when it is unset.
    fn compiler_var(self) -> (&'static str, &'static str) {
        match self {
            Lang::C => ("RMPI_CC", "cc"),
            Lang::Cxx => ("RMPI_CXX", "c++"),
        }
    }
}
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

/// Splits the compiler variable's value into the program and its leading arguments.
fn compiler_words(spec: Option<&str>, default: &str) -> Vec<String> {
    let words: Vec<String> = spec
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    if words.is_empty() {
        vec![default.to_owned()]
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
        format!("-l{LIB_NAME}"),
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

/// Where the library and the header are, relative to the wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    libdir: PathBuf,
    incdir: PathBuf,
    /// A cargo target directory (not an installed prefix).
    cargo: bool,
}

/// An installed prefix (`PREFIX/bin/<wrapper>` beside `PREFIX/lib/libmpi_abi.so.1`), else the
/// cargo target directory the wrapper was built into.
fn layout(bindir: &Path, env_incdir: Option<OsString>) -> Layout {
    if let Some(prefix) = bindir.parent().filter(|_| bindir.ends_with("bin")) {
        let (libdir, incdir) = (prefix.join("lib"), prefix.join("include"));
        if libdir.join(LIB_SONAME).exists() && incdir.join("mpi.h").exists() {
            let incdir = env_incdir
                .filter(|d| !d.is_empty())
                .map_or(incdir, PathBuf::from);
            return Layout {
                libdir,
                incdir,
                cargo: false,
            };
        }
    }
    Layout {
        incdir: include_dir(bindir, env_incdir),
        libdir: bindir.to_path_buf(),
        cargo: true,
    }
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

/// In a cargo target directory, make `libmpi_abi.so.1` (what programs load) point at cargo's
/// `libmpi_abi.so`. Created under a temporary name and renamed, so concurrent wrappers never
/// see it half made. Returns whether the library can be loaded under its SONAME.
fn ensure_soname_link(libdir: &Path) -> bool {
    let link = libdir.join(LIB_SONAME);
    if !libdir.join(LIB_CARGO_FILE).exists() {
        return link.exists();
    }
    if std::fs::read_link(&link).is_ok_and(|t| t == Path::new(LIB_CARGO_FILE)) {
        return true;
    }
    let tmp = libdir.join(format!(".{LIB_SONAME}.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(LIB_CARGO_FILE, &tmp)
        .and_then(|()| std::fs::rename(&tmp, &link))
        .is_ok()
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

fn run(wrapper: &str, cmd: &[String], cc_display: &str) -> ExitCode {
    match Command::new(&cmd[0]).args(&cmd[1..]).status() {
        Ok(status) => ExitCode::from(exit_code_of(status)),
        Err(e) => {
            eprintln!("{wrapper}: cannot run '{cc_display}': {e}");
            ExitCode::from(127)
        }
    }
}

pub fn main(lang: Lang) -> ExitCode {
    let wrapper = lang.wrapper();
    let args: Vec<String> = match env::args_os().skip(1).map(OsString::into_string).collect() {
        Ok(a) => a,
        Err(bad) => {
            eprintln!(
                "{wrapper}: argument is not valid UTF-8: {}",
                bad.to_string_lossy()
            );
            return ExitCode::from(2);
        }
    };
    let (show, args) = split_wrapper_args(args);

    let (var, default) = lang.compiler_var();
    let cc_spec = env::var(var).ok();
    let cc = compiler_words(cc_spec.as_deref(), default);
    let cc_display = cc.join(" ");

    let bindir = match exe_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{wrapper}: {e}");
            return ExitCode::from(1);
        }
    };
    let Layout {
        libdir,
        incdir,
        cargo,
    } = layout(&bindir, env::var_os("RMPI_INCDIR"));
    // Every mode, -show included: build tools take the flags from -show and link themselves.
    let loadable = if cargo {
        ensure_soname_link(&libdir)
    } else {
        libdir.join(LIB_SONAME).exists()
    };

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
        Show::Libs => return print(vec![LIB_NAME.to_owned()]),
        Show::WrapperVersion => {
            println!("{wrapper} (rmpi) {WRAPPER_VERSION}");
            return ExitCode::SUCCESS;
        }
        Show::CompileInfo => return print(build_command(&cc, &incdir, &libdir, &args, false)),
        Show::LinkInfo => return print(build_command(&cc, &incdir, &libdir, &args, true)),
        Show::Version => {
            println!("{wrapper} (rmpi) {WRAPPER_VERSION}: wrapper for '{cc_display}'");
            println!("  include dir: {}", incdir.display());
            println!("  library dir: {} ({LIB_SONAME})", libdir.display());
            let mut cmd = cc.clone();
            cmd.push("--version".to_owned());
            return run(wrapper, &cmd, &cc_display);
        }
    }

    let link = mode == Mode::Link;
    let cmd = build_command(&cc, &incdir, &libdir, &args, link);
    if show == Show::Command {
        return print(cmd);
    }
    // A link against a missing library gives a program that cannot start: say so now.
    if link && !loadable {
        eprintln!(
            "{wrapper}: {LIB_SONAME} not found in {}; build it with cargo build -p libmpi-abi",
            libdir.display()
        );
        return ExitCode::from(1);
    }
    run(wrapper, &cmd, &cc_display)
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
        let cc = compiler_words(None, "cc");
        let args = strings("-O2 ring.c -o ring");
        assert_eq!(
            build_command(&cc, inc, lib, &args, classify(&args) == Mode::Link),
            strings(
                "cc -I/r/libmpi/include -O2 ring.c -o ring \
                 -L/r/target/release -Wl,-rpath,/r/target/release -lmpi_abi"
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
        assert_eq!(compiler_words(None, "cc"), strings("cc"));
        assert_eq!(compiler_words(Some(""), "cc"), strings("cc"));
        assert_eq!(compiler_words(Some("  "), "c++"), strings("c++"));
        assert_eq!(compiler_words(Some("clang"), "cc"), strings("clang"));
        assert_eq!(
            compiler_words(Some("ccache gcc -m64"), "cc"),
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
    fn installed_and_cargo_layouts() {
        let tmp = env::temp_dir().join(format!("mpicc-layout-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let bin = tmp.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        // Not (yet) a prefix: the cargo layout, the library beside the wrapper.
        let l = layout(&bin, None);
        assert!(l.cargo);
        assert_eq!(l.libdir, bin);
        // A prefix: PREFIX/lib/libmpi_abi.so.1 and PREFIX/include/mpi.h.
        std::fs::create_dir_all(tmp.join("lib")).unwrap();
        std::fs::create_dir_all(tmp.join("include")).unwrap();
        std::fs::write(tmp.join("lib").join(LIB_SONAME), b"").unwrap();
        std::fs::write(tmp.join("include/mpi.h"), b"").unwrap();
        assert_eq!(
            layout(&bin, None),
            Layout {
                libdir: tmp.join("lib"),
                incdir: tmp.join("include"),
                cargo: false
            }
        );
        assert_eq!(
            layout(&bin, Some("/x/inc".into())).incdir,
            PathBuf::from("/x/inc")
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn soname_link_in_a_cargo_directory() {
        let tmp = env::temp_dir().join(format!("mpicc-soname-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        assert!(!ensure_soname_link(&tmp), "no library, no link");
        std::fs::write(tmp.join(LIB_CARGO_FILE), b"x").unwrap();
        assert!(ensure_soname_link(&tmp));
        assert_eq!(
            std::fs::read_link(tmp.join(LIB_SONAME)).unwrap(),
            PathBuf::from(LIB_CARGO_FILE)
        );
        // A stale link (or file) is replaced; a right one is left alone.
        std::fs::remove_file(tmp.join(LIB_SONAME)).unwrap();
        std::os::unix::fs::symlink("elsewhere", tmp.join(LIB_SONAME)).unwrap();
        assert!(ensure_soname_link(&tmp));
        assert!(ensure_soname_link(&tmp));
        assert_eq!(std::fs::read(tmp.join(LIB_SONAME)).unwrap(), b"x");
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
