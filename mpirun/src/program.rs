//! Finding the program to run the way execvp would, so a bad name is refused before anything starts.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::unistd::{access, AccessFlags};

/// PATH when the variable is unset, as glibc's execvp.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// Resolves `name`: taken as a path when it contains `/`, otherwise searched in `path_var`.
/// The error is the user-facing message (without the `mpirun: ` prefix).
pub fn resolve(name: &OsStr, path_var: Option<&OsStr>) -> Result<PathBuf, String> {
    let shown = name.to_string_lossy();
    if name.is_empty() {
        return Err("program '' not found".to_string());
    }
    if name.as_bytes().contains(&b'/') {
        let p = Path::new(name);
        return match check(p) {
            Check::Runnable => Ok(p.to_path_buf()),
            Check::NotExecutable => Err(format!("program '{shown}' is not executable")),
            Check::Missing => Err(format!("program '{shown}' not found")),
        };
    }
    let path_var = path_var.unwrap_or(OsStr::new(DEFAULT_PATH));
    let mut not_executable = None;
    for dir in path_var.as_bytes().split(|&b| b == b':') {
        // An empty PATH entry means the current directory.
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(OsStr::from_bytes(dir))
        };
        let candidate = dir.join(name);
        match check(&candidate) {
            Check::Runnable => return Ok(candidate),
            Check::NotExecutable => {
                not_executable.get_or_insert(candidate);
            }
            Check::Missing => {}
        }
    }
    match not_executable {
        Some(p) => Err(format!(
            "program '{shown}' ({}) is not executable",
            p.display()
        )),
        None => Err(format!("program '{shown}' not found in PATH")),
    }
}

enum Check {
    Runnable,
    NotExecutable,
    Missing,
}

fn check(p: &Path) -> Check {
    match p.metadata() {
        Err(_) => Check::Missing,
        Ok(m) if m.is_file() && access(p, AccessFlags::X_OK).is_ok() => Check::Runnable,
        Ok(_) => Check::NotExecutable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mpirun-program-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn finds_in_path() {
        let p = resolve(
            OsStr::new("sh"),
            Some(OsStr::new("/nonexistent:/bin:/usr/bin")),
        )
        .unwrap();
        assert!(p.ends_with("sh"));
    }

    #[test]
    fn missing_in_path() {
        let e = resolve(OsStr::new("no-such-prog-xyz"), Some(OsStr::new("/bin"))).unwrap_err();
        assert_eq!(e, "program 'no-such-prog-xyz' not found in PATH");
    }

    #[test]
    fn explicit_paths() {
        let d = tmpdir("explicit");
        let f = d.join("plain");
        fs::write(&f, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
        let shown = f.display().to_string();
        assert_eq!(
            resolve(f.as_os_str(), None).unwrap_err(),
            format!("program '{shown}' is not executable")
        );
        assert_eq!(
            resolve(d.as_os_str(), None).unwrap_err(),
            format!("program '{}' is not executable", d.display())
        );
        fs::set_permissions(&f, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(resolve(f.as_os_str(), None).unwrap(), f);
        let missing = d.join("missing");
        assert_eq!(
            resolve(missing.as_os_str(), None).unwrap_err(),
            format!("program '{}' not found", missing.display())
        );
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn path_skips_non_executable_but_reports_it() {
        let d = tmpdir("path");
        let f = d.join("tool");
        fs::write(&f, "x").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
        let e = resolve(OsStr::new("tool"), Some(d.as_os_str())).unwrap_err();
        assert!(
            e.starts_with("program 'tool' (") && e.ends_with("is not executable"),
            "{e}"
        );
        fs::remove_dir_all(&d).unwrap();
    }
}
