//! Memory registration messages and the pinned-memory limit.

use super::ffi::strerror;
use crate::verbs::RegError;

/// RLIMIT_MEMLOCK's soft limit in bytes; None when unlimited.
pub fn memlock_limit() -> Option<usize> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid out-pointer for getrlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return None;
    }
    if r.rlim_cur == libc::RLIM_INFINITY {
        None
    } else {
        Some(usize::try_from(r.rlim_cur).unwrap_or(usize::MAX))
    }
}

/// The error for a failed `ibv_reg_mr`, with what the user can do about it.
pub fn reg_error(
    errno: i32,
    addr: usize,
    len: usize,
    pinned: usize,
    limit: Option<usize>,
) -> RegError {
    let head = format!(
        "ibv_reg_mr({len} bytes at {addr:#x}) failed: {}",
        strerror(errno)
    );
    let message = match errno {
        libc::ENOMEM => {
            let lim = match limit {
                Some(l) => format!("{l} bytes"),
                None => "unlimited".into(),
            };
            format!(
                "{head}: pinned memory limit (RLIMIT_MEMLOCK = {lim}; raise `ulimit -l`); \
                 {pinned} bytes already registered by this process"
            )
        }
        libc::EFAULT => format!("{head}: the range is not mapped in this process"),
        libc::EACCES | libc::EPERM => {
            format!("{head}: the range is read-only but local write access was asked")
        }
        _ => head,
    };
    RegError { errno, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enomem_names_the_memlock_limit() {
        let e = reg_error(libc::ENOMEM, 0x1000, 1 << 20, 8 << 20, Some(8 << 20));
        assert_eq!(e.errno, libc::ENOMEM);
        assert!(
            e.message.contains(
                "pinned memory limit (RLIMIT_MEMLOCK = 8388608 bytes; raise `ulimit -l`)"
            ),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("1048576 bytes at 0x1000"),
            "{}",
            e.message
        );
        let e = reg_error(libc::ENOMEM, 0x1000, 1, 0, None);
        assert!(
            e.message.contains("RLIMIT_MEMLOCK = unlimited"),
            "{}",
            e.message
        );
    }

    #[test]
    fn other_errors_keep_errno_and_strerror() {
        let e = reg_error(libc::EFAULT, 0, 4096, 0, None);
        assert_eq!(e.errno, libc::EFAULT);
        assert!(e.message.contains("not mapped"), "{}", e.message);
        let e = reg_error(libc::EINVAL, 0, 0, 0, None);
        assert!(e.message.contains("Invalid argument"), "{}", e.message);
    }

    #[test]
    fn memlock_limit_matches_getrlimit() {
        // Whatever the machine's limit is, it is either unlimited or a byte count.
        if let Some(l) = memlock_limit() {
            assert!(l < usize::MAX);
        }
    }
}
