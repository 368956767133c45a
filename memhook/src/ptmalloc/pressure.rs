//! The memory source's decision component (seed 002's "adaptive memory consumption"): under the
//! `Release` policy, freed memory is kept for reuse while memory is cheap and given back at once,
//! with what is already kept, under pressure. Pressure is
//! - a footprint target: `MEMHOOK_PTMALLOC_TARGET=BYTES` (suffix k, m or g), exceeded by what
//!   the source has mapped, or
//! - the process's memory cgroup above 90 % of its limit (v2: `memory.current` against
//!   `memory.high`, else `memory.max`, of the cgroup named in /proc/self/cgroup; v1:
//!   `memory.usage_in_bytes` against `memory.limit_in_bytes` at /sys/fs/cgroup/memory).
//!
//! Called from the source's slow paths only (a block or large mapping freed); the cgroup files
//! are read at most every 100 ms, with raw reads into stack buffers (no allocation: this runs
//! inside free).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

const UNREAD: u8 = 0;
const READ: u8 = 1;

static STATE: AtomicU8 = AtomicU8::new(UNREAD);
static TARGET: AtomicUsize = AtomicUsize::new(usize::MAX);
static LAST_NS: AtomicU64 = AtomicU64::new(0);
static CGROUP_HOT: AtomicBool = AtomicBool::new(false);
/// Times pressure made the source give memory back (for stats and tests).
pub static TRIMS: AtomicU64 = AtomicU64::new(0);

fn parse_size(v: &[u8]) -> Option<usize> {
    let (digits, mult) = match v.last()? {
        b'k' | b'K' => (&v[..v.len() - 1], 1usize << 10),
        b'm' | b'M' => (&v[..v.len() - 1], 1 << 20),
        b'g' | b'G' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    let mut n: usize = 0;
    if digits.is_empty() {
        return None;
    }
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add((d - b'0') as usize)?;
    }
    n.checked_mul(mult)
}

/// Sets the footprint target (bytes mapped by the source); `usize::MAX`: none.
pub fn set_target(bytes: usize) {
    read_env();
    TARGET.store(bytes, Ordering::Relaxed);
}

fn read_env() {
    if STATE.swap(READ, Ordering::AcqRel) == READ {
        return;
    }
    // SAFETY: getenv reads the environment without allocating; the name is NUL-terminated.
    let p = unsafe { libc::getenv(c"MEMHOOK_PTMALLOC_TARGET".as_ptr()) };
    if !p.is_null() {
        // SAFETY: a non-null getenv result is a NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
        if let Some(n) = parse_size(v) {
            TARGET.store(n, Ordering::Relaxed);
        }
    }
}

/// Reads a small file into `buf` (no allocation); the bytes read.
fn read_file<'a>(path: &std::ffi::CStr, buf: &'a mut [u8]) -> Option<&'a [u8]> {
    // SAFETY: open/read/close on a NUL-terminated path and our own stack buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        (n > 0).then(|| &buf[..n as usize])
    }
}

fn number(v: &[u8]) -> Option<usize> {
    let end = v
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(v.len());
    parse_size(&v[..end])
}

/// Joins `dir` (no trailing NUL) and `file` into `out` as a C string.
fn join<'a>(out: &'a mut [u8; 512], dir: &[u8], file: &[u8]) -> Option<&'a std::ffi::CStr> {
    let n = dir.len() + file.len();
    if n + 1 > out.len() {
        return None;
    }
    out[..dir.len()].copy_from_slice(dir);
    out[dir.len()..n].copy_from_slice(file);
    out[n] = 0;
    std::ffi::CStr::from_bytes_with_nul(&out[..=n]).ok()
}

fn read_num(dir: &[u8], file: &[u8]) -> Option<usize> {
    let mut path = [0u8; 512];
    let mut buf = [0u8; 64];
    number(read_file(join(&mut path, dir, file)?, &mut buf)?)
}

/// Usage and limit of the process's memory cgroup, if it has a limit.
fn cgroup() -> Option<(usize, usize)> {
    let mut buf = [0u8; 512];
    if let Some(text) = read_file(c"/proc/self/cgroup", &mut buf) {
        if let Some(line) = text.split(|&c| c == b'\n').find(|l| l.starts_with(b"0::")) {
            let mut dir = [0u8; 400];
            let rel = &line[3..];
            let base = b"/sys/fs/cgroup";
            if base.len() + rel.len() + 1 < dir.len() {
                dir[..base.len()].copy_from_slice(base);
                dir[base.len()..base.len() + rel.len()].copy_from_slice(rel);
                let n = base.len() + rel.len();
                let d = if dir[n - 1] == b'/' {
                    &dir[..n]
                } else {
                    dir[n] = b'/';
                    &dir[..=n]
                };
                if let Some(cur) = read_num(d, b"memory.current") {
                    let limit = read_num(d, b"memory.high").or_else(|| read_num(d, b"memory.max"));
                    return limit.map(|l| (cur, l));
                }
            }
        }
    }
    let d = b"/sys/fs/cgroup/memory/";
    let cur = read_num(d, b"memory.usage_in_bytes")?;
    let limit = read_num(d, b"memory.limit_in_bytes")?;
    // v1 reports "no limit" as a huge number.
    (limit < (1usize << 60)).then_some((cur, limit))
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether memory should go back now, given the bytes the source has mapped.
pub fn under_pressure(mapped: usize) -> bool {
    read_env();
    if mapped > TARGET.load(Ordering::Relaxed) {
        return true;
    }
    let now = now_ns();
    let last = LAST_NS.load(Ordering::Relaxed);
    if now.saturating_sub(last) >= 100_000_000
        && LAST_NS
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        let hot = cgroup().is_some_and(|(cur, limit)| cur > limit / 10 * 9);
        CGROUP_HOT.store(hot, Ordering::Relaxed);
    }
    CGROUP_HOT.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size(b"4096"), Some(4096));
        assert_eq!(parse_size(b"64m"), Some(64 << 20));
        assert_eq!(parse_size(b"1G"), Some(1 << 30));
        assert_eq!(parse_size(b"x"), None);
        assert_eq!(parse_size(b""), None);
        assert_eq!(number(b"123\n"), Some(123));
        assert_eq!(number(b"max\n"), None);
    }

    #[test]
    fn cgroup_is_readable_or_absent() {
        // Whatever the machine: no panic, and a limit is positive.
        if let Some((_, limit)) = cgroup() {
            assert!(limit > 0);
        }
    }
}
