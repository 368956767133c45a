//! The memhook provider compiled into this build: named by `--version`, and for `ldpreload`,
//! `libmemhook_preload.so` put into the ranks' LD_PRELOAD.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

use memory_manager as memhook;

/// `libmemhook_preload.so`: `$RMPI_MEMHOOK_PRELOAD`, else next to this mpirun (cargo puts both
/// in target/<profile>/), else in `../lib` (an installed prefix: `PREFIX/bin/mpirun`).
fn preload_path() -> Option<PathBuf> {
    const FILE: &str = "libmemhook_preload.so";
    if let Some(p) = std::env::var_os("RMPI_MEMHOOK_PRELOAD") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let bindir = exe.parent()?;
    let beside = bindir.join(FILE);
    let installed = bindir.parent().map(|prefix| prefix.join("lib").join(FILE));
    Some(match installed {
        Some(p) if !beside.exists() && p.exists() => p,
        _ => beside,
    })
}

/// The `--version` line about memory-release interception.
pub fn version_line() -> String {
    let state = match memhook::PROVIDER {
        "ldpreload" => match preload_path().filter(|p| p.exists()) {
            Some(p) => format!("active in the ranks: mpirun preloads {}", p.display()),
            None => "unavailable: libmemhook_preload.so not found next to mpirun (set RMPI_MEMHOOK_PRELOAD)".into(),
        },
        "ptmalloc" => "active in programs linked with libmpi_abi (it exports the malloc family)".into(),
        // hooks and none: the same check the ranks make at MPI_Init, made here.
        _ => match memhook::init() {
            memhook::Status::Active => "active (self-test passed here; ranks patch libc at MPI_Init)".into(),
            s => s.to_string(),
        },
    };
    format!("memhook provider: {}: {state}", memhook::PROVIDER)
}

/// The ranks' LD_PRELOAD when the build uses the `ldpreload` provider: the preload library
/// first, then what the user asked for (`-x LD_PRELOAD=...` or mpirun's own environment).
pub fn ld_preload(user: Option<&OsString>) -> Option<OsString> {
    if memhook::PROVIDER != "ldpreload" {
        return None;
    }
    let lib = preload_path().filter(|p| p.exists());
    let Some(lib) = lib else {
        static WARNED: OnceLock<()> = OnceLock::new();
        WARNED.get_or_init(|| {
            crate::report::say("mpirun: warning: libmemhook_preload.so not found next to mpirun (set RMPI_MEMHOOK_PRELOAD): memory-release events are unavailable in the ranks")
        });
        return None;
    };
    let mut v = OsString::from(lib);
    let inherited = std::env::var_os("LD_PRELOAD");
    if let Some(u) = user.or(inherited.as_ref()).filter(|u| !u.is_empty()) {
        v.push(" ");
        v.push(u);
    }
    Some(v)
}
