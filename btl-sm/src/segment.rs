//! Creating, opening and mapping the node segment, and the header consistency check.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memmap2::{MmapOptions, MmapRaw};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::sys::mman::{shm_open, shm_unlink};
use nix::sys::stat::{fstat, Mode};
use nix::unistd::ftruncate;

use crate::layout::Layout;
use crate::params::{Params, SingleCopy};

/// Exact size in bytes of the node segment for these parameters.
///
/// Panics if the sizes overflow, which `Params::resolve` rules out.
pub fn segment_size(p: &Params) -> usize {
    Layout::try_new(p)
        .expect("btl-sm: segment size overflows")
        .total
}

#[derive(Debug)]
pub struct SmError(pub String);

/// Refuse up front a segment larger than the memory the kernel says is available (a memfd is
/// sparse: without this check, running out would be a SIGBUS in some rank at first touch).
fn check_room(size: usize, p: &Params) -> Result<(), SmError> {
    let Ok(info) = std::fs::read_to_string("/proc/meminfo") else {
        return Ok(());
    };
    let avail = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u128>().ok())
        .map(|kb| kb * 1024);
    match avail {
        Some(a) if (size as u128) > a => Err(SmError(format!(
            "btl-sm: out of memory for the shared segment: {} local ranks need {size} bytes but \
             only {a} bytes of memory are available; lower {} (see mpirun --shm-report)",
            p.n_local,
            p.size_tunables()
        ))),
        _ => Ok(()),
    }
}

impl std::fmt::Display for SmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for SmError {}

const MAGIC: u64 = u64::from_le_bytes(*b"rmpi-sm\0");
const VERSION: u32 = 2;

// Offsets of the info line's fields (all accessed atomically).
const INFO_MAGIC: usize = 0;
const INFO_CLAIM: usize = 8;
const INFO_VERSION: usize = 12;
const INFO_N: usize = 16;
const INFO_FIFO: usize = 20;
const INFO_PAYLOAD: usize = 24;
const INFO_SINGLE: usize = 28;
const INFO_EAGER: usize = 32;
const INFO_FINGERPRINT: usize = 40;

/// A mapping of the node segment.
pub struct Segment {
    map: MmapRaw,
    params: Params,
    layout: Layout,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("addr", &self.map.as_ptr())
            .field("len", &self.map.len())
            .field("params", &self.params)
            .finish()
    }
}

fn sm_err(what: &str, e: impl std::fmt::Display) -> SmError {
    SmError(format!("btl-sm: {what}: {e}"))
}

fn shm_name(name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else {
        format!("/{name}")
    }
}

impl Segment {
    /// Launcher side: a zero-filled memfd of `segment_size(p)` bytes, without CLOEXEC.
    pub fn create_memfd(p: &Params) -> io::Result<OwnedFd> {
        p.check()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // No CLOEXEC: ranks inherit it across exec. NOEXEC_SEAL keeps kernels with
        // vm.memfd_noexec=2 happy; kernels before 6.3 reject the flag, so retry without it.
        let noexec = MFdFlags::from_bits_retain(libc::MFD_NOEXEC_SEAL);
        let fd = match memfd_create("rmpi-sm", noexec) {
            Err(Errno::EINVAL) => memfd_create("rmpi-sm", MFdFlags::empty()),
            r => r,
        }?;
        let size = segment_size(p);
        check_room(size, p).map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e.0))?;
        ftruncate(&fd, size as libc::off_t).map_err(|e| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!(
                    "btl-sm: cannot size the segment to {size} bytes ({e}); lower {}",
                    p.size_tunables()
                ),
            )
        })?;
        Ok(fd)
    }

    /// Rank side: map an inherited segment fd; fails if its size is not `segment_size(p)`.
    pub fn attach_fd(fd: RawFd, p: &Params) -> Result<Segment, SmError> {
        if fd < 0 {
            return Err(SmError(format!("btl-sm: invalid segment fd {fd}")));
        }
        // SAFETY: the caller hands us an open fd it keeps owning; we only use it for the
        // duration of this call (fstat + mmap) and never close it.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        Self::map_fd(fd, p, "segment fd")
    }

    /// Named POSIX shm (for foreign launchers): create, size and map.
    pub fn create_named(name: &str, p: &Params) -> Result<Segment, SmError> {
        p.check().map_err(SmError)?;
        let name = shm_name(name);
        let what = format!("shm segment {name}");
        let fd = shm_open(
            name.as_str(),
            OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_RDWR,
            Mode::from_bits_truncate(0o600),
        )
        .map_err(|e| sm_err(&format!("creating {what}"), e))?;
        let r = Self::size_named(&fd, p, &what).and_then(|_| Self::map_fd(fd.as_fd(), p, &what));
        if r.is_err() {
            let _ = shm_unlink(name.as_str());
        }
        r
    }

    pub fn open_named(name: &str, p: &Params) -> Result<Segment, SmError> {
        p.check().map_err(SmError)?;
        let name = shm_name(name);
        let what = format!("shm segment {name}");
        let fd = shm_open(name.as_str(), OFlag::O_RDWR, Mode::empty())
            .map_err(|e| sm_err(&format!("opening {what}"), e))?;
        Self::map_fd(fd.as_fd(), p, &what)
    }

    pub fn unlink_named(name: &str) -> io::Result<()> {
        Ok(shm_unlink(shm_name(name).as_str())?)
    }

    /// The parameters this mapping was made for.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Mapped length (= `segment_size(self.params())`).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    pub(crate) fn base(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// Size a freshly created named segment, refusing up front when the shm filesystem lacks
    /// room (a too-small /dev/shm would otherwise raise SIGBUS on first touch).
    fn size_named(fd: &OwnedFd, p: &Params, what: &str) -> Result<(), SmError> {
        let size = segment_size(p);
        if let Ok(vfs) = nix::sys::statvfs::fstatvfs(fd) {
            let avail = (vfs.blocks_available() as u128) * (vfs.fragment_size() as u128);
            if vfs.blocks() > 0 && avail < size as u128 {
                return Err(SmError(format!(
                    "btl-sm: {what} needs {size} bytes but only {avail} are free in the shm \
                     filesystem; enlarge /dev/shm or lower {}",
                    p.size_tunables()
                )));
            }
        }
        ftruncate(fd, size as libc::off_t).map_err(|e| sm_err(&format!("sizing {what}"), e))
    }

    fn map_fd(fd: BorrowedFd<'_>, p: &Params, what: &str) -> Result<Segment, SmError> {
        p.check().map_err(SmError)?;
        let layout = Layout::try_new(p).expect("checked");
        let st = fstat(fd).map_err(|e| sm_err(&format!("fstat of {what}"), e))?;
        if st.st_size as u64 != layout.total as u64 {
            return Err(SmError(format!(
                "btl-sm: {what} is {} bytes but segment_size is {} for n_local={} \
                 fifo_cells={} payload_bytes={} (launcher and rank disagree on parameters?)",
                st.st_size, layout.total, p.n_local, p.fifo_cells, p.payload_bytes
            )));
        }
        let map = MmapOptions::new()
            .len(layout.total)
            .map_raw(fd.as_raw_fd())
            .map_err(|e| {
                SmError(format!(
                    "btl-sm: out of memory for the shared segment: mapping {what} of {} bytes \
                     for {} local ranks failed ({e}); lower {}",
                    layout.total,
                    p.n_local,
                    p.size_tunables()
                ))
            })?;
        let seg = Segment {
            map,
            params: p.clone(),
            layout,
        };
        seg.check_header(what)?;
        Ok(seg)
    }

    fn info_u32(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off & 3 == 0 && off + 4 <= 64);
        // SAFETY: off is inside the info line (first 64 bytes of a mapping of >= one page),
        // 4-aligned since the mapping is page-aligned; the mapping lives as long as &self, and
        // all accesses to the info line from any process are atomic.
        unsafe { AtomicU32::from_ptr(self.base().add(self.layout.info() + off).cast()) }
    }

    fn info_u64(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off & 7 == 0 && off + 8 <= 64);
        // SAFETY: as in info_u32, with 8-byte alignment.
        unsafe { AtomicU64::from_ptr(self.base().add(self.layout.info() + off).cast()) }
    }

    /// First attacher records the parameters; later ones compare. Nobody waits: a zeroed
    /// segment is valid, and a check skipped while the first attacher is mid-write loses nothing
    /// essential (the size check already passed).
    fn check_header(&self, what: &str) -> Result<(), SmError> {
        let p = &self.params;
        let fp = fingerprint(p);
        let claimed = self
            .info_u32(INFO_CLAIM)
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if claimed {
            self.info_u64(INFO_MAGIC).store(MAGIC, Ordering::Relaxed);
            self.info_u32(INFO_VERSION)
                .store(VERSION, Ordering::Relaxed);
            self.info_u32(INFO_N)
                .store(p.n_local as u32, Ordering::Relaxed);
            self.info_u32(INFO_FIFO)
                .store(p.fifo_cells as u32, Ordering::Relaxed);
            self.info_u32(INFO_PAYLOAD)
                .store(p.payload_bytes as u32, Ordering::Relaxed);
            self.info_u32(INFO_SINGLE)
                .store(single_code(p.single_copy), Ordering::Relaxed);
            self.info_u64(INFO_EAGER)
                .store(p.eager_limit as u64, Ordering::Relaxed);
            self.info_u64(INFO_FINGERPRINT).store(fp, Ordering::Release);
            return Ok(());
        }
        let theirs = self.info_u64(INFO_FINGERPRINT).load(Ordering::Acquire);
        if theirs == 0 || theirs == fp {
            return Ok(());
        }
        let magic = self.info_u64(INFO_MAGIC).load(Ordering::Relaxed);
        if magic != MAGIC {
            return Err(SmError(format!(
                "btl-sm: {what} is not an rmpi shared-memory segment (bad magic {magic:#x})"
            )));
        }
        Err(SmError(format!(
            "btl-sm: {what} was set up with version={} n_local={} fifo_cells={} \
             payload_bytes={} eager_limit={} single_copy={} but this process has version={VERSION} \
             n_local={} fifo_cells={} payload_bytes={} eager_limit={} single_copy={} \
             (or another btl_sm_* parameter differs)",
            self.info_u32(INFO_VERSION).load(Ordering::Relaxed),
            self.info_u32(INFO_N).load(Ordering::Relaxed),
            self.info_u32(INFO_FIFO).load(Ordering::Relaxed),
            self.info_u32(INFO_PAYLOAD).load(Ordering::Relaxed),
            self.info_u64(INFO_EAGER).load(Ordering::Relaxed),
            self.info_u32(INFO_SINGLE).load(Ordering::Relaxed),
            p.n_local,
            p.fifo_cells,
            p.payload_bytes,
            p.eager_limit,
            single_code(p.single_copy),
        )))
    }
}

fn single_code(s: SingleCopy) -> u32 {
    match s {
        SingleCopy::Cma => 1,
        SingleCopy::None => 2,
        SingleCopy::Auto => 3,
    }
}

/// FNV-1a over everything that must agree; never 0 (0 means "not yet recorded").
fn fingerprint(p: &Params) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in [
        VERSION as u64,
        p.n_local as u64,
        p.fifo_cells as u64,
        p.payload_bytes as u64,
        p.eager_limit as u64,
        single_code(p.single_copy) as u64,
        p.fastbox_max_procs as u64,
        p.fifo_size as u64,
        p.fastboxes as u64,
        p.fastbox_size as u64,
        p.fragment_size as u64,
        p.fragments as u64,
        p.thread_multiple as u64,
        p.line as u64,
    ] {
        for b in v.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(n: usize) -> Params {
        Params::resolve(n, &|_| None).unwrap()
    }

    #[test]
    fn memfd_is_zeroed_and_sized() {
        let p = params(3);
        let fd = Segment::create_memfd(&p).unwrap();
        let seg = Segment::attach_fd(fd.as_raw_fd(), &p).unwrap();
        assert_eq!(seg.len(), segment_size(&p));
        // SAFETY: the slice covers exactly our mapping; nothing else writes it in this test.
        let bytes = unsafe { std::slice::from_raw_parts(seg.base(), seg.len()) };
        assert!(bytes[64..].iter().all(|&b| b == 0));
        // fd is still ours and usable.
        assert!(fstat(fd.as_fd()).is_ok());
        // No CLOEXEC: children must inherit it.
        let flags = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_GETFD).unwrap();
        assert_eq!(flags & libc::FD_CLOEXEC, 0);
    }

    #[test]
    fn size_mismatch_is_reported() {
        let fd = Segment::create_memfd(&params(2)).unwrap();
        let e = Segment::attach_fd(fd.as_raw_fd(), &params(64)).unwrap_err();
        let msg = e.to_string();
        let (a, b) = (segment_size(&params(2)), segment_size(&params(64)));
        assert!(
            msg.contains(&a.to_string()) && msg.contains(&b.to_string()),
            "{msg}"
        );
        assert!(Segment::attach_fd(-1, &params(2)).is_err());
    }

    #[test]
    fn param_mismatch_is_reported() {
        let p = params(4);
        let fd = Segment::create_memfd(&p).unwrap();
        let _a = Segment::attach_fd(fd.as_raw_fd(), &p).unwrap();
        let _b = Segment::attach_fd(fd.as_raw_fd(), &p).unwrap();
        let q = Params {
            eager_limit: 100,
            ..p.clone()
        };
        let e = Segment::attach_fd(fd.as_raw_fd(), &q).unwrap_err();
        let first = format!("eager_limit={}", p.eager_limit);
        assert!(e.to_string().contains(&first), "{e}");
    }

    #[test]
    fn named_lifecycle() {
        let name = format!("/rmpi-sm-test-{}", std::process::id());
        let p = params(2);
        let a = Segment::create_named(&name, &p).unwrap();
        assert!(Segment::create_named(&name, &p).is_err(), "O_EXCL");
        let b = Segment::open_named(&name, &p).unwrap();
        assert_eq!(a.len(), b.len());
        let e = Segment::open_named(&name, &params(3)).unwrap_err();
        assert!(e.to_string().contains("bytes"), "{e}");
        Segment::unlink_named(&name).unwrap();
        assert!(Segment::open_named(&name, &p).is_err());
        assert!(Segment::unlink_named(&name).is_err());
    }

    #[test]
    fn named_segment_is_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let name = format!("/rmpi-sm-mode-{}", std::process::id());
        let _a = Segment::create_named(&name, &params(2)).unwrap();
        let mode = std::fs::metadata(format!("/dev/shm{name}")).map(|m| m.permissions().mode());
        Segment::unlink_named(&name).unwrap();
        // The umask may only take bits away.
        assert_eq!(mode.unwrap() & 0o777, 0o600);
    }

    #[test]
    fn invalid_params_rejected() {
        let mut p = params(2);
        p.fifo_cells = 3;
        assert!(Segment::create_memfd(&p).is_err());
        assert!(Segment::create_named("/rmpi-sm-never", &p).is_err());
    }
}
