//! Raw system calls for the hooks, which must not call back into the functions they replace, and
//! the size lookup `shmdt` needs. No allocation anywhere: these run inside free().
//! Shared (by `#[path]`) with the preload library, so it depends on nothing but `libc`.

#![allow(dead_code)]

/// Converts a raw syscall return into the libc convention (-1 and errno).
fn ret(r: libc::c_long) -> libc::c_long {
    if (-4095..0).contains(&r) {
        // SAFETY: __errno_location returns this thread's errno slot, always valid.
        unsafe { *libc::__errno_location() = -r as i32 };
        -1
    } else {
        r
    }
}

/// A system call with up to five arguments, returning the kernel's raw value (-errno on error).
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn raw5(nr: libc::c_long, a: usize, b: usize, c: usize, d: usize, e: usize) -> libc::c_long {
    let r: libc::c_long;
    // SAFETY: the x86-64 Linux syscall convention: number in rax, arguments in rdi, rsi, rdx,
    // r10, r8; the kernel clobbers rcx and r11. The caller vouches for the arguments.
    unsafe {
        std::arch::asm!("syscall", inlateout("rax") nr => r, in("rdi") a, in("rsi") b,
            in("rdx") c, in("r10") d, in("r8") e, lateout("rcx") _, lateout("r11") _,
            options(nostack));
    }
    r
}

/// A system call with six arguments (mmap).
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn raw6(
    nr: libc::c_long,
    a: usize,
    b: usize,
    c: usize,
    d: usize,
    e: usize,
    f: usize,
) -> libc::c_long {
    let r: libc::c_long;
    // SAFETY: as in raw5, the sixth argument in r9.
    unsafe {
        std::arch::asm!("syscall", inlateout("rax") nr => r, in("rdi") a, in("rsi") b,
            in("rdx") c, in("r10") d, in("r8") e, in("r9") f, lateout("rcx") _, lateout("r11") _,
            options(nostack));
    }
    r
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
unsafe fn raw6(
    nr: libc::c_long,
    a: usize,
    b: usize,
    c: usize,
    d: usize,
    e: usize,
    f: usize,
) -> libc::c_long {
    // SAFETY: forwarded; libc's syscall() does not go through the hooked wrappers.
    let r = unsafe { libc::syscall(nr, a, b, c, d, e, f) };
    if r == -1 {
        // SAFETY: as in `ret`.
        -(unsafe { *libc::__errno_location() }) as libc::c_long
    } else {
        r
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
unsafe fn raw5(nr: libc::c_long, a: usize, b: usize, c: usize, d: usize, e: usize) -> libc::c_long {
    // SAFETY: forwarded; libc's syscall() does not go through the hooked wrappers.
    let r = unsafe { libc::syscall(nr, a, b, c, d, e) };
    if r == -1 {
        // SAFETY: as in `ret`.
        -(unsafe { *libc::__errno_location() }) as libc::c_long
    } else {
        r
    }
}

/// munmap without going through libc's (possibly patched) wrapper.
///
/// # Safety
/// As munmap(2): nothing may use the range afterwards.
pub unsafe fn munmap(addr: *mut libc::c_void, len: usize) -> libc::c_int {
    // SAFETY: forwarded.
    ret(unsafe { raw5(libc::SYS_munmap, addr as usize, len, 0, 0, 0) }) as libc::c_int
}

/// # Safety
/// As mremap(2).
pub unsafe fn mremap(
    old: *mut libc::c_void,
    old_len: usize,
    new_len: usize,
    flags: libc::c_int,
    new_addr: *mut libc::c_void,
) -> *mut libc::c_void {
    // SAFETY: forwarded.
    let r = unsafe {
        raw5(
            libc::SYS_mremap,
            old as usize,
            old_len,
            new_len,
            flags as usize,
            new_addr as usize,
        )
    };
    ret(r) as *mut libc::c_void
}

/// # Safety
/// As madvise(2).
pub unsafe fn madvise(addr: *mut libc::c_void, len: usize, advice: libc::c_int) -> libc::c_int {
    // SAFETY: forwarded.
    ret(unsafe { raw5(libc::SYS_madvise, addr as usize, len, advice as usize, 0, 0) })
        as libc::c_int
}

/// The brk system call: returns the new break (the old one on failure), never an error code.
///
/// # Safety
/// Moving the break down releases memory someone may still use.
pub unsafe fn brk(addr: usize) -> usize {
    // SAFETY: forwarded.
    unsafe { raw5(libc::SYS_brk, addr, 0, 0, 0, 0) as usize }
}

/// # Safety
/// As shmdt(2).
pub unsafe fn shmdt(addr: *const libc::c_void) -> libc::c_int {
    // SAFETY: forwarded.
    ret(unsafe { raw5(libc::SYS_shmdt, addr as usize, 0, 0, 0, 0) }) as libc::c_int
}

/// mmap(2) without libc's wrapper, with glibc's offset check.
///
/// # Safety
/// As mmap(2); with MAP_FIXED, whatever was mapped at `addr` is gone.
pub unsafe fn mmap(
    addr: *mut libc::c_void,
    len: usize,
    prot: libc::c_int,
    flags: libc::c_int,
    fd: libc::c_int,
    off: libc::off_t,
) -> *mut libc::c_void {
    if off & 0xfff != 0 {
        // SAFETY: this thread's errno slot.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        return libc::MAP_FAILED;
    }
    // SAFETY: forwarded.
    let r = unsafe {
        raw6(
            libc::SYS_mmap,
            addr as usize,
            len,
            prot as usize,
            flags as usize,
            fd as usize,
            off as usize,
        )
    };
    ret(r) as *mut libc::c_void
}

/// Whether an mmap with these flags replaces what is mapped at its address.
pub fn mmap_replaces(flags: libc::c_int) -> bool {
    flags & libc::MAP_FIXED != 0
}

/// mmap without libc's wrapper (the allocator's memory source), for symmetry with munmap.
///
/// # Safety
/// As mmap(2) with no address hint and no file.
pub unsafe fn mmap_anon(len: usize) -> *mut libc::c_void {
    // SAFETY: an anonymous private mapping at a kernel-chosen address touches nothing of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            0usize,
            len,
            (libc::PROT_READ | libc::PROT_WRITE) as usize,
            (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as usize,
            -1isize as usize,
            0usize,
        )
    };
    if r < 0 {
        libc::MAP_FAILED
    } else {
        r as *mut libc::c_void
    }
}

/// Whether `advice` releases the pages (their contents read back as zero or refault).
pub fn advice_releases(advice: libc::c_int) -> bool {
    advice == libc::MADV_DONTNEED || advice == libc::MADV_FREE || advice == libc::MADV_REMOVE
}

/// The length of the mapping that starts at `addr`, read from /proc/self/maps without
/// allocating (shmdt is given only the address). 0 if none starts there.
pub fn mapping_len_at(addr: usize) -> usize {
    let path = b"/proc/self/maps\0";
    // SAFETY: a NUL-terminated path; raw open so no hooked wrapper or allocation is involved.
    let fd = unsafe {
        raw5(
            libc::SYS_open,
            path.as_ptr() as usize,
            libc::O_RDONLY as usize,
            0,
            0,
            0,
        )
    };
    if fd < 0 {
        return 0;
    }
    let mut buf = [0u8; 4096];
    let mut line = [0u8; 64]; // only the "start-end" prefix of each line matters
    let mut ll = 0usize;
    let mut at_line_start_skip = false;
    let mut found = 0usize;
    'read: loop {
        // SAFETY: reading into a stack buffer of the length given.
        let n = unsafe {
            raw5(
                libc::SYS_read,
                fd as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
                0,
                0,
            )
        };
        if n <= 0 {
            break;
        }
        for &b in &buf[..n as usize] {
            if b == b'\n' {
                if let Some((s, e)) = parse_range(&line[..ll]) {
                    if s == addr {
                        found = e - s;
                        break 'read;
                    }
                }
                ll = 0;
                at_line_start_skip = false;
            } else if !at_line_start_skip {
                if b == b' ' || ll == line.len() {
                    at_line_start_skip = true;
                } else {
                    line[ll] = b;
                    ll += 1;
                }
            }
        }
    }
    // SAFETY: closing the descriptor opened above.
    unsafe { raw5(libc::SYS_close, fd as usize, 0, 0, 0, 0) };
    found
}

fn parse_range(s: &[u8]) -> Option<(usize, usize)> {
    let dash = s.iter().position(|&b| b == b'-')?;
    Some((hex(&s[..dash])?, hex(&s[dash + 1..])?))
}

fn hex(s: &[u8]) -> Option<usize> {
    if s.is_empty() {
        return None;
    }
    let mut v = 0usize;
    for &b in s {
        let d = (b as char).to_digit(16)? as usize;
        v = v.checked_mul(16)? + d;
    }
    Some(v)
}
