//! User-space single copy ("xmem", like Open MPI's smsc/xpmem without the kernel module).
//!
//! Owner side: a [`Source`] is a memfd, sized sparse and mapped `MAP_SHARED` once, from which
//! `MPI_Alloc_mem` carves page-granular blocks; freed pages go back to the kernel with
//! `fallocate(PUNCH_HOLE)`. Its range (and any other memfd-backed range, e.g. memhook's) is
//! registered with [`register_local`], so `expose` can give a key saying "this buffer lies in my
//! memfd `fd` mapped at `base`".
//!
//! Reader side: [`PeerMaps`] opens a peer's memfd once (`/proc/<pid>/fd/<fd>`, else
//! `pidfd_getfd`), maps it read-only for the rest of the job and reads with `memcpy`: no syscall
//! per transfer, no page pinning. Nothing is ever named in `/dev/shm`: a memfd disappears with
//! the last process that maps it.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, RwLock};

/// Blocks below this go to malloc: a page each would waste most of it, and messages this small
/// are eager anyway.
pub const MIN_BLOCK: usize = 4096;
/// Default reservation (`btl_sm_xmem_size`): address space, not memory; only touched pages cost.
pub const DEFAULT_SIZE: usize = 16 << 30;

/// Key bit saying "the buffer lies in a registered shared range" (the rest: fd and base page).
const SHARED: u64 = 1 << 63;
const FD_BITS: u32 = 27;
const PAGE_BITS: u32 = 36;

/// A memfd-backed range of this process that peers can map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub fd: RawFd,
    pub base: usize,
    pub len: usize,
}

impl Range {
    fn contains(&self, addr: usize, len: usize) -> bool {
        addr >= self.base && addr - self.base <= self.len && len <= self.len - (addr - self.base)
    }

    /// The key for a buffer in this range, or None when fd or base do not fit the encoding.
    pub fn key(&self) -> Option<u64> {
        let page = (self.base as u64) >> 12;
        let fd = self.fd as u64;
        (self.base & 4095 == 0 && page < 1 << PAGE_BITS && fd < 1 << FD_BITS)
            .then_some(SHARED | fd << PAGE_BITS | page)
    }
}

/// The (fd, base) a key names, if it is a shared-range key.
pub fn decode(key: u64) -> Option<(RawFd, usize)> {
    (key & SHARED != 0).then_some((
        ((key >> PAGE_BITS) & ((1 << FD_BITS) - 1)) as RawFd,
        ((key & ((1 << PAGE_BITS) - 1)) << 12) as usize,
    ))
}

static LOCAL: RwLock<Vec<Range>> = RwLock::new(Vec::new());

/// Make `r` known to [`find_local`] (for the life of the process).
pub fn register_local(r: Range) {
    let mut v = LOCAL.write().unwrap_or_else(|e| e.into_inner());
    if !v.contains(&r) {
        v.push(r);
    }
}

/// The registered range holding all of `[addr, addr + len)`, if any.
pub fn find_local(addr: usize, len: usize) -> Option<Range> {
    let v = LOCAL.read().unwrap_or_else(|e| e.into_inner());
    v.iter().copied().find(|r| r.contains(addr, len))
}

fn page_size() -> usize {
    crate::layout::page_size()
}

/// Create a memfd of `len` sparse bytes and map it shared, read-write. Returns (fd, base).
pub fn map_memfd(name: &str, len: usize) -> io::Result<(OwnedFd, *mut u8)> {
    let cname = std::ffi::CString::new(name).map_err(io::Error::other)?;
    // SAFETY: memfd_create reads the NUL-terminated name only.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: plain syscall on our own descriptor.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new shared mapping of the whole memfd at an address the kernel picks; nothing
    // else is mapped there. NORESERVE: only touched pages are memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_NORESERVE,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok((fd, p.cast()))
}

/// Return the pages `[off, off + len)` of `fd` to the kernel (they read as zeros again).
pub fn punch_hole(fd: RawFd, off: usize, len: usize) -> io::Result<()> {
    // SAFETY: plain syscall on a descriptor the caller owns; no memory of ours is passed.
    let r = unsafe {
        libc::fallocate(
            fd,
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off as libc::off_t,
            len as libc::off_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Free and used blocks of a source, as offsets (page multiples).
#[derive(Default)]
struct Blocks {
    /// Free runs: offset -> length, never adjacent (merged on free).
    free: BTreeMap<usize, usize>,
    /// Allocated blocks: offset -> length.
    used: HashMap<usize, usize>,
}

/// Why [`Source::free`] refused a pointer.
#[derive(Debug, PartialEq, Eq)]
pub enum FreeError {
    /// Inside the source but not the start of a live block (double free, interior pointer).
    NotABlock,
    /// Not inside this source at all (the caller frees it with `free`).
    Outside,
}

/// A process's node-shared memory source: a memfd mapped once, carved into page blocks.
pub struct Source {
    fd: OwnedFd,
    base: *mut u8,
    len: usize,
    blocks: Mutex<Blocks>,
    /// A forked child's copy: blocks are private memory now; nothing new is handed out.
    detached: std::sync::atomic::AtomicBool,
}

// SAFETY: `base` is a process-wide shared mapping owned by the source; the block bookkeeping is
// behind a mutex, and the memory itself is handed out in disjoint blocks.
unsafe impl Send for Source {}
// SAFETY: as above.
unsafe impl Sync for Source {}

impl Source {
    /// A source of `len` bytes (rounded up to pages) of address space.
    pub fn new(len: usize) -> io::Result<Source> {
        let page = page_size();
        let len = len
            .checked_next_multiple_of(page)
            .filter(|&l| l > 0)
            .ok_or_else(|| io::Error::other(format!("invalid shared source size {len}")))?;
        let (fd, base) = map_memfd("rmpi-xmem", len)?;
        let mut blocks = Blocks::default();
        blocks.free.insert(0, len);
        Ok(Source {
            fd,
            base,
            len,
            blocks: Mutex::new(blocks),
            detached: Default::default(),
        })
    }

    pub fn range(&self) -> Range {
        Range {
            fd: self.fd.as_raw_fd(),
            base: self.base as usize,
            len: self.len,
        }
    }

    pub fn contains(&self, p: *const u8) -> bool {
        (p as usize).wrapping_sub(self.base as usize) < self.len
    }

    /// A block of at least `size` bytes, page-aligned; None when no free run is large enough.
    pub fn alloc(&self, size: usize) -> Option<*mut u8> {
        let size = size.max(1).checked_next_multiple_of(page_size())?;
        if self.detached.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        let mut b = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        // First fit, lowest address first: keeps the used part of the memfd compact.
        let (&off, &run) = b.free.iter().find(|(_, &l)| l >= size)?;
        b.free.remove(&off);
        if run > size {
            b.free.insert(off + size, run - size);
        }
        b.used.insert(off, size);
        // SAFETY: off + size <= len: inside the mapping.
        Some(unsafe { self.base.add(off) })
    }

    /// Give back a block from [`Source::alloc`]; its pages are released to the kernel.
    pub fn free(&self, p: *mut u8) -> Result<(), FreeError> {
        if !self.contains(p) {
            return Err(FreeError::Outside);
        }
        let mut off = p as usize - self.base as usize;
        let mut b = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        let mut len = b.used.remove(&off).ok_or(FreeError::NotABlock)?;
        if self.detached.load(std::sync::atomic::Ordering::Relaxed) {
            // A private copy in a forked child: its own mapping, given back as such.
            // SAFETY: the block is dead (freed by its owner) and mapped by us alone.
            unsafe { libc::munmap(p.cast(), len) };
            return Ok(());
        }
        // Memory really goes back (it would otherwise stay as the memfd's pages). A failure
        // (no hole punching on this kernel) only leaves the pages in use.
        let _ = punch_hole(self.fd.as_raw_fd(), off, len);
        if let Some((&prev, &plen)) = b.free.range(..off).next_back() {
            if prev + plen == off {
                b.free.remove(&prev);
                off = prev;
                len += plen;
            }
        }
        if let Some(next) = b.free.remove(&(off + len)) {
            len += next;
        }
        b.free.insert(off, len);
        Ok(())
    }

    /// In a forked child (call from a `pthread_atfork` child handler): copy every live block
    /// into private memory at the same address, so parent and child stop sharing it, and hand
    /// out nothing more. Allocates nothing. False if the bookkeeping was locked at fork (another
    /// thread was inside alloc or free): the blocks then stay shared.
    pub fn make_private(&self) -> bool {
        let Ok(b) = self.blocks.try_lock() else {
            return false;
        };
        self.detached
            .store(true, std::sync::atomic::Ordering::Relaxed);
        for (&off, &len) in b.used.iter() {
            // SAFETY: [base + off, + len) is a live block of ours; the copy goes to a fresh
            // anonymous mapping which then replaces the block at the same address (MREMAP_FIXED),
            // so every pointer into it stays valid and names private memory.
            unsafe {
                let at = self.base.add(off);
                let tmp = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if tmp == libc::MAP_FAILED {
                    // Sharing silently with the parent would be worse than stopping.
                    libc::abort();
                }
                std::ptr::copy_nonoverlapping(at, tmp.cast::<u8>(), len);
                let r = libc::mremap(
                    tmp,
                    len,
                    len,
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                    at.cast::<libc::c_void>(),
                );
                if r == libc::MAP_FAILED {
                    libc::abort();
                }
            }
        }
        true
    }

    /// Bytes in live blocks.
    pub fn in_use(&self) -> usize {
        let b = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        b.used.values().sum()
    }

    /// Bytes of memory the memfd holds now (its allocated blocks, from fstat).
    pub fn resident(&self) -> io::Result<usize> {
        let st = nix::sys::stat::fstat(&self.fd).map_err(io::Error::from)?;
        Ok(st.st_blocks as usize * 512)
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, dropped once; blocks handed out must be dead by now
        // (the owner drops a source only when nothing uses it).
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// A peer's range mapped read-only here.
struct Mapped {
    ptr: *const u8,
    len: usize,
}

/// The peers' shared ranges this process has mapped, per (pid, fd), for the job.
#[derive(Default)]
pub struct PeerMaps {
    maps: HashMap<(i32, RawFd), Mapped>,
}

// SAFETY: the mappings are read-only views owned by this value.
unsafe impl Send for PeerMaps {}

impl PeerMaps {
    /// Copy `local.len()` bytes at `remote` (an address of process `pid`) from its memfd `fd`,
    /// mapped in that process at `base`, with memcpy. Errors say why (the caller falls back).
    pub fn read(
        &mut self,
        pid: i32,
        fd: RawFd,
        base: usize,
        remote: usize,
        local: &mut [u8],
    ) -> io::Result<()> {
        let m = match self.maps.entry((pid, fd)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(map_peer(pid, fd)?),
        };
        let off = remote.wrapping_sub(base);
        if remote < base || off > m.len || local.len() > m.len - off {
            return Err(io::Error::other(format!(
                "[{remote:#x}, +{}) lies outside the peer's shared range ({} bytes at {base:#x})",
                local.len(),
                m.len
            )));
        }
        // SAFETY: [off, off + len) lies inside the read-only mapping (checked above), which
        // lives as long as `self`; `local` is a distinct buffer of ours. The peer may write the
        // memory meanwhile only if it broke MPI's rule of not touching a buffer being sent.
        unsafe { std::ptr::copy_nonoverlapping(m.ptr.add(off), local.as_mut_ptr(), local.len()) };
        Ok(())
    }

    /// How many peer ranges are mapped.
    pub fn len(&self) -> usize {
        self.maps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }
}

impl Drop for PeerMaps {
    fn drop(&mut self) {
        for m in self.maps.values() {
            // SAFETY: each mapping was made by `map_peer` and is unmapped once, here.
            unsafe { libc::munmap(m.ptr as *mut libc::c_void, m.len) };
        }
    }
}

/// Open process `pid`'s descriptor `fd`: through /proc (a memfd can be reopened there), else
/// with pidfd_getfd (Linux 5.6). Both need ptrace read access to the peer, like CMA.
fn open_peer_fd(pid: i32, fd: RawFd) -> io::Result<OwnedFd> {
    let path = format!("/proc/{pid}/fd/{fd}\0");
    // SAFETY: a NUL-terminated path; open touches nothing else of ours.
    let r = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if r >= 0 {
        // SAFETY: a fresh descriptor nothing else owns.
        return Ok(unsafe { OwnedFd::from_raw_fd(r) });
    }
    let proc_err = io::Error::last_os_error();
    // SAFETY: raw syscalls with integer arguments; the returned descriptors are new and ours.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        return Err(io::Error::other(format!(
            "open {}: {proc_err}; pidfd_open: {}",
            path.trim_end_matches('\0'),
            io::Error::last_os_error()
        )));
    }
    // SAFETY: as above.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    // SAFETY: as above.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if r < 0 {
        return Err(io::Error::other(format!(
            "open {}: {proc_err}; pidfd_getfd: {}",
            path.trim_end_matches('\0'),
            io::Error::last_os_error()
        )));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(r as RawFd) })
}

fn map_peer(pid: i32, fd: RawFd) -> io::Result<Mapped> {
    let f = open_peer_fd(pid, fd)?;
    let st = nix::sys::stat::fstat(&f).map_err(io::Error::from)?;
    let len = st.st_size as usize;
    if len == 0 {
        return Err(io::Error::other(format!("pid {pid}'s fd {fd} is empty")));
    }
    // SAFETY: a new read-only shared mapping of the peer's memfd at an address the kernel picks.
    // The descriptor can close after mmap; the mapping keeps the file.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED | libc::MAP_NORESERVE,
            f.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(Mapped { ptr: p.cast(), len })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const MB: usize = 1 << 20;

    #[test]
    fn alloc_free_reuse_and_merge() {
        let s = Source::new(16 * MB).unwrap();
        let page = page_size();
        let a = s.alloc(1).unwrap();
        let b = s.alloc(page + 1).unwrap();
        let c = s.alloc(3 * page).unwrap();
        assert_eq!(a as usize % page, 0);
        assert_eq!(b as usize - a as usize, page);
        assert_eq!(c as usize - b as usize, 2 * page);
        assert_eq!(s.in_use(), 6 * page);
        s.free(b).unwrap();
        // First fit reuses b's run.
        let d = s.alloc(2 * page).unwrap();
        assert_eq!(d, b);
        assert_eq!(s.free(d), Ok(()));
        assert_eq!(s.free(d), Err(FreeError::NotABlock));
        // SAFETY: one byte into a, still inside the mapping; never dereferenced.
        assert_eq!(s.free(unsafe { a.add(1) }), Err(FreeError::NotABlock));
        let mut x = 0u8;
        assert_eq!(s.free(&mut x), Err(FreeError::Outside));
        s.free(a).unwrap();
        s.free(c).unwrap();
        assert_eq!(s.in_use(), 0);
        // Everything merged back: the whole source in one block.
        let all = s.alloc(16 * MB).unwrap();
        assert_eq!(all, a);
        assert!(s.alloc(1).is_none(), "full");
        s.free(all).unwrap();
        assert!(s.alloc(16 * MB + 1).is_none());
    }

    #[test]
    fn free_punches_holes() {
        let s = Source::new(64 * MB).unwrap();
        let p = s.alloc(8 * MB).unwrap();
        assert!(s.resident().unwrap() < MB);
        // SAFETY: p has 8 MiB of writable shared memory from alloc.
        unsafe { std::ptr::write_bytes(p, 0xa5, 8 * MB) };
        assert!(s.resident().unwrap() >= 8 * MB);
        s.free(p).unwrap();
        assert!(s.resident().unwrap() < MB, "{}", s.resident().unwrap());
        // The pages read as zeros again when reused.
        let q = s.alloc(8 * MB).unwrap();
        assert_eq!(q, p);
        // SAFETY: q is a live 8 MiB block.
        assert!(unsafe { std::slice::from_raw_parts(q, 8 * MB) }
            .iter()
            .all(|&x| x == 0));
        s.free(q).unwrap();
    }

    #[test]
    fn threads_hammer() {
        let s = Arc::new(Source::new(1024 * MB).unwrap());
        let threads: Vec<_> = (0..4u8)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut live: Vec<(*mut u8, usize)> = Vec::new();
                    for i in 0..1000usize {
                        let size = 1 + (i * 7919 + t as usize * 104729) % (100 << 10);
                        let p = s.alloc(size).expect("room");
                        // SAFETY: p has at least `size` writable bytes, ours alone.
                        unsafe { std::ptr::write_bytes(p, t ^ i as u8, size) };
                        live.push((p, size));
                        if i % 3 != 0 {
                            let (q, n) = live.swap_remove((i * 31) % live.len());
                            // SAFETY: q is a live block of ours of at least n bytes.
                            let v = unsafe { std::slice::from_raw_parts(q, n) };
                            let want = v[0];
                            assert!(v.iter().all(|&x| x == want), "block overwritten");
                            s.free(q).unwrap();
                        }
                    }
                    for (q, _) in live {
                        s.free(q).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(s.in_use(), 0);
        assert!(s.alloc(1024 * MB).is_some(), "all runs merged back");
    }

    #[test]
    fn forked_child_gets_private_blocks() {
        let s = Source::new(16 * MB).unwrap();
        let p = s.alloc(MB).unwrap();
        // SAFETY: a live 1 MiB block.
        unsafe { std::ptr::write_bytes(p, 0x11, MB) };
        // SAFETY: the child only runs make_private (no allocation), touches its own memory and
        // leaves with _exit.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                let ok = s.make_private() && *p == 0x11;
                std::ptr::write_bytes(p, 0x77, MB);
                let ok = ok && s.alloc(MB).is_none() && s.free(p).is_ok();
                libc::_exit(if ok { 0 } else { 1 });
            }
            let mut st = 0;
            libc::waitpid(pid, &mut st, 0);
            assert!(
                libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
                "child failed"
            );
        }
        // SAFETY: still a live 1 MiB block here.
        assert!(unsafe { std::slice::from_raw_parts(p, MB) }
            .iter()
            .all(|&x| x == 0x11));
        s.free(p).unwrap();
    }

    #[test]
    fn keys_round_trip_and_ranges() {
        let r = Range {
            fd: 12,
            base: 0x7f12_3456_7000,
            len: 1 << 30,
        };
        let k = r.key().unwrap();
        assert_eq!(decode(k), Some((12, 0x7f12_3456_7000)));
        assert_eq!(decode(0), None);
        assert!(Range { base: 1 << 50, ..r }.key().is_none());
        assert!(Range { base: 0x1001, ..r }.key().is_none());
        assert!(r.contains(r.base, r.len));
        assert!(r.contains(r.base + 10, r.len - 10));
        assert!(!r.contains(r.base + 10, r.len - 9));
        assert!(!r.contains(r.base - 1, 1));
        register_local(r);
        assert_eq!(find_local(r.base + 100, 100), Some(r));
        assert_eq!(find_local(r.base + r.len, 1), None);
    }

    #[test]
    fn peer_maps_read_through_proc() {
        let s = Source::new(32 * MB).unwrap();
        let r = s.range();
        let p = s.alloc(MB).unwrap();
        // SAFETY: a live 1 MiB block.
        let v = unsafe { std::slice::from_raw_parts_mut(p, MB) };
        for (i, x) in v.iter_mut().enumerate() {
            *x = (i * 13) as u8;
        }
        let me = std::process::id() as i32;
        let mut maps = PeerMaps::default();
        let mut out = vec![0u8; MB - 100];
        maps.read(me, r.fd, r.base, p as usize + 100, &mut out)
            .unwrap();
        assert_eq!(&out[..], &v[100..]);
        // Freed and reused: the cached mapping sees the new contents.
        s.free(p).unwrap();
        let q = s.alloc(2 * MB).unwrap();
        assert_eq!(q, p);
        // SAFETY: a live 2 MiB block.
        unsafe { std::ptr::write_bytes(q, 0x5a, 2 * MB) };
        let mut out2 = vec![0u8; 2 * MB];
        maps.read(me, r.fd, r.base, q as usize, &mut out2).unwrap();
        assert!(out2.iter().all(|&x| x == 0x5a));
        assert_eq!(maps.len(), 1);
        // Out of range and a bad descriptor are errors, not crashes.
        assert!(maps
            .read(me, r.fd, r.base, r.base + r.len - 10, &mut out2)
            .is_err());
        assert!(maps.read(me, 9999, r.base, r.base, &mut out2).is_err());
    }
}
