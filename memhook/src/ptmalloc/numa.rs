//! NUMA placement of macro-blocks (issue 21). The memory source keeps its free macro-blocks per
//! node; a heap takes a new block from the node of the CPU its thread runs on (looked up when it
//! needs a block, never per malloc); a block given back goes to the node written in its header
//! (its home), whichever thread frees it. Fresh blocks are bound to their node with
//! `mbind(MPOL_PREFERRED)`; where mbind is refused (EPERM or ENOSYS in containers) the first
//! touch, by the heap's own thread, places them instead.
//!
//! The CPU → node map is read once from /sys/devices/system/node/node*/cpulist, with raw reads
//! into stack buffers (this runs inside malloc: no allocation). One node, or nothing readable:
//! everything is node 0 and nothing more is done (no getcpu, no mbind). For tests on one-node
//! machines, `MEMHOOK_PTMALLOC_NUMA_FAKE="0-0:1-1"` pretends: node i's CPUs are the i-th
//! `:`-separated cpulist; mbind is skipped for such nodes. Node ids from [`MAX_NODES`] up
//! share node 0's source.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

pub const MAX_NODES: usize = 16;
const MAX_CPUS: usize = 1024;
const MPOL_PREFERRED: usize = 1;

const UNREAD: u8 = 0;
const READ: u8 = 1;

static STATE: AtomicU8 = AtomicU8::new(UNREAD);
static NODES: AtomicUsize = AtomicUsize::new(1);
static FAKE: AtomicBool = AtomicBool::new(false);
static NO_MBIND: AtomicBool = AtomicBool::new(false);
static CPU_NODE: [AtomicU8; MAX_CPUS] = [const { AtomicU8::new(0) }; MAX_CPUS];

/// Calls `f` with each CPU of a cpulist ("0-3,8,10-11"); false if it does not parse.
pub(super) fn parse_cpulist(s: &[u8], mut f: impl FnMut(usize)) -> bool {
    let s = s.trim_ascii();
    if s.is_empty() {
        return true; // a node without CPUs
    }
    for part in s.split(|&c| c == b',') {
        let mut ends = part.splitn(2, |&c| c == b'-');
        let (Some(a), b) = (ends.next().and_then(num), ends.next()) else {
            return false;
        };
        let b = match b {
            Some(b) => match num(b) {
                Some(b) if b >= a => b,
                _ => return false,
            },
            None => a,
        };
        for cpu in a..=b.min(MAX_CPUS - 1) {
            f(cpu);
        }
    }
    true
}

fn num(s: &[u8]) -> Option<usize> {
    if s.is_empty() || s.len() > 9 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |n, &d| n * 10 + (d - b'0') as usize))
}

/// Reads a small file into `buf` (no allocation).
fn read_file<'a>(path: &std::ffi::CStr, buf: &'a mut [u8]) -> Option<&'a [u8]> {
    // SAFETY: open/read/close of a NUL-terminated path into our own stack buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        (n >= 0).then(|| &buf[..n as usize])
    }
}

/// The fake layout, if `MEMHOOK_PTMALLOC_NUMA_FAKE` names one: its node count.
fn read_fake() -> Option<usize> {
    // SAFETY: getenv reads the environment without allocating; the name is NUL-terminated.
    let p = unsafe { libc::getenv(c"MEMHOOK_PTMALLOC_NUMA_FAKE".as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-null getenv result is a NUL-terminated string.
    let v = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
    let mut nodes = 0;
    for (node, list) in v.split(|&c| c == b':').take(MAX_NODES).enumerate() {
        if !parse_cpulist(list, |cpu| {
            CPU_NODE[cpu].store(node as u8, Ordering::Relaxed)
        }) {
            CPU_NODE.iter().for_each(|n| n.store(0, Ordering::Relaxed));
            return None; // malformed: the machine's own layout, from a clean map
        }
        nodes = node + 1;
    }
    (nodes > 0).then_some(nodes)
}

/// "/sys/devices/system/node/node<N>/cpulist" in `out`.
fn node_path(out: &mut [u8; 64], node: usize) -> Option<&std::ffi::CStr> {
    let mut n = 0;
    let mut put = |s: &[u8]| {
        out[n..n + s.len()].copy_from_slice(s);
        n += s.len();
    };
    put(b"/sys/devices/system/node/node");
    if node >= 10 {
        put(&[b'0' + (node / 10) as u8]);
    }
    put(&[b'0' + (node % 10) as u8]);
    put(b"/cpulist\0");
    std::ffi::CStr::from_bytes_until_nul(&out[..n]).ok()
}

/// The machine's layout from sysfs: its node count (1 if unreadable).
fn read_sysfs() -> usize {
    let mut nodes = 1;
    for node in 0..MAX_NODES {
        let mut path = [0u8; 64];
        let Some(cpath) = node_path(&mut path, node) else {
            continue;
        };
        let mut buf = [0u8; 1024];
        let Some(text) = read_file(cpath, &mut buf) else {
            continue; // node ids may have holes
        };
        if parse_cpulist(text, |cpu| {
            CPU_NODE[cpu].store(node as u8, Ordering::Relaxed)
        }) {
            nodes = node + 1;
        }
    }
    nodes
}

/// Reads the layout once. Racing readers compute and store the same map; the map is complete
/// before `STATE` says so.
#[cold]
fn init() {
    let nodes = match read_fake() {
        Some(n) => {
            FAKE.store(true, Ordering::Relaxed);
            n
        }
        None => read_sysfs(),
    };
    NODES.store(nodes, Ordering::Relaxed);
    STATE.store(READ, Ordering::Release);
}

/// How many nodes the source keeps blocks for (1: NUMA placement is off).
pub fn nodes() -> usize {
    if STATE.load(Ordering::Acquire) != READ {
        init();
    }
    NODES.load(Ordering::Relaxed)
}

/// The node of the CPU the calling thread runs on now. Called when a heap needs a block.
pub fn current() -> usize {
    if nodes() <= 1 {
        return 0;
    }
    // SAFETY: sched_getcpu takes no arguments (glibc answers from the vDSO or rseq).
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu < 0 || cpu as usize >= MAX_CPUS {
        return 0;
    }
    CPU_NODE[cpu as usize].load(Ordering::Relaxed) as usize
}

/// Asks the kernel to place a fresh mapping's pages on `node` (preferred, so a full node falls
/// back rather than failing). Skipped for one node, fake nodes, or once the kernel refused.
pub fn bind(addr: usize, len: usize, node: usize) {
    if nodes() <= 1 || FAKE.load(Ordering::Relaxed) || NO_MBIND.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = mbind(addr, len, node) {
        if e == libc::EPERM || e == libc::ENOSYS {
            NO_MBIND.store(true, Ordering::Relaxed); // first touch from now on
        }
    }
}

/// `mbind(MPOL_PREFERRED)` of `[addr, addr + len)` to `node` (< 64); Err(errno). errno itself
/// is left as it was: malloc must not change it when it works.
fn mbind(addr: usize, len: usize, node: usize) -> Result<(), i32> {
    let mask: u64 = 1 << node;
    // SAFETY: this thread's errno slot.
    let saved = unsafe { *libc::__errno_location() };
    // SAFETY: mbind on a mapping of ours, not yet handed out; the kernel reads `maxnode - 1`
    // = 64 bits of node mask from `mask`, on our stack.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            MPOL_PREFERRED,
            &mask as *const u64,
            65usize,
            0usize,
        )
    };
    // SAFETY: as above.
    let e = unsafe { std::ptr::replace(libc::__errno_location(), saved) };
    if r == 0 {
        Ok(())
    } else {
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(s: &str) -> Option<Vec<usize>> {
        let mut v = Vec::new();
        parse_cpulist(s.as_bytes(), |c| v.push(c)).then_some(v)
    }

    #[test]
    fn cpulists() {
        assert_eq!(cpus("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(cpus("1-1"), Some(vec![1]));
        assert_eq!(cpus("\n"), Some(vec![]));
        assert_eq!(cpus("3-1"), None);
        assert_eq!(cpus("x"), None);
        assert_eq!(cpus("0-"), None);
    }

    /// The syscall edge on this machine's node 0: bound as asked (get_mempolicy says so), or
    /// refused the way containers do, which `bind` takes as "first touch from now on".
    #[test]
    fn mbind_prefers_node_0_or_is_refused() {
        // SAFETY: a fresh anonymous mapping, unmapped below.
        let m = unsafe { crate::sys::mmap_anon(2 << 20) };
        assert_ne!(m, libc::MAP_FAILED);
        let r = mbind(m as usize, 2 << 20, 0);
        println!("mbind to node 0: {r:?}");
        match r {
            Ok(()) => {
                let (mut mode, mut mask) = (-1i32, 0u64);
                // SAFETY: get_mempolicy writes the mode and 64 bits of node mask (maxnode 65)
                // for the address, which is ours (MPOL_F_ADDR = 2).
                let r = unsafe {
                    libc::syscall(
                        libc::SYS_get_mempolicy,
                        &mut mode as *mut i32,
                        &mut mask as *mut u64,
                        65usize,
                        m as usize,
                        2usize,
                    )
                };
                assert_eq!(r, 0);
                assert_eq!((mode as usize, mask), (MPOL_PREFERRED, 1));
            }
            Err(e) => assert!(e == libc::EPERM || e == libc::ENOSYS, "mbind: errno {e}"),
        }
        // SAFETY: our mapping.
        unsafe { crate::sys::munmap(m, 2 << 20) };
    }

    #[test]
    fn machine_layout_is_readable() {
        // Every machine has node 0 (or no sysfs: one node); CPU 0 is on some node we know.
        let n = nodes();
        assert!((1..=MAX_NODES).contains(&n));
        assert!(current() < n);
    }
}
