//! Symbol interposition of the calls that give memory back to the OS: the same definitions serve
//! the preload library (`LD_PRELOAD`) and the ptmalloc provider (exported by libmpi_abi.so, which
//! the application links before libc). Unlike entry-point patching, these see only calls made
//! through the dynamic linker, not libc's internal ones; the preload library covers those by
//! reporting free() and realloc() too. Shared by `#[path]`, so only `libc` is used here.

/// Event source numbers, as `memhook::Source` numbers them.
pub const SRC_MUNMAP: u32 = 0;
pub const SRC_MREMAP: u32 = 1;
pub const SRC_MADVISE: u32 = 2;
pub const SRC_BRK: u32 = 3;
pub const SRC_SHMDT: u32 = 4;
pub const SRC_FREE: u32 = 5;
pub const SRC_REALLOC: u32 = 6;
pub const SRC_MMAP_FIXED: u32 = 8;

extern "C" {
    /// glibc's sbrk under its exported internal name, which our `sbrk` cannot shadow.
    pub fn __sbrk(increment: libc::intptr_t) -> *mut libc::c_void;
}

/// Defines `munmap`, `mremap`, `mmap`/`mmap64`, `madvise`, `brk`, `sbrk` and `shmdt`, each reporting through
/// `$deliver(source: u32, addr: usize, len: usize)` (record-only, lock-free) before acting.
/// `$sys` is the path of the raw-syscall module.
#[macro_export]
#[doc(hidden)]
macro_rules! __memhook_interpose_release_calls {
    ($deliver:path, $sys:path, $ip:path) => {
        use $ip as __mh_ip;
        use $sys as __mh_sys;

        /// munmap(2), reported first.
        ///
        /// # Safety
        /// As munmap(2).
        #[no_mangle]
        pub unsafe extern "C" fn munmap(
            addr: *mut $crate::__libc::c_void,
            len: usize,
        ) -> $crate::__libc::c_int {
            $deliver(__mh_ip::SRC_MUNMAP, addr as usize, len);
            // SAFETY: the caller's munmap, forwarded to the kernel.
            unsafe { __mh_sys::munmap(addr, len) }
        }

        /// mremap(2) (variadic in C; on x86-64 the fifth argument is in r8 either way).
        ///
        /// # Safety
        /// As mremap(2).
        #[no_mangle]
        pub unsafe extern "C" fn mremap(
            old: *mut $crate::__libc::c_void,
            old_len: usize,
            new_len: usize,
            flags: $crate::__libc::c_int,
            new_addr: *mut $crate::__libc::c_void,
        ) -> *mut $crate::__libc::c_void {
            $deliver(__mh_ip::SRC_MREMAP, old as usize, old_len);
            if flags & $crate::__libc::MREMAP_FIXED != 0 {
                $deliver(__mh_ip::SRC_MMAP_FIXED, new_addr as usize, new_len);
            }
            // SAFETY: the caller's mremap, forwarded to the kernel.
            unsafe { __mh_sys::mremap(old, old_len, new_len, flags, new_addr) }
        }

        /// mmap(2); MAP_FIXED replaces what was mapped there, which is reported.
        ///
        /// # Safety
        /// As mmap(2).
        #[no_mangle]
        pub unsafe extern "C" fn mmap(
            addr: *mut $crate::__libc::c_void,
            len: usize,
            prot: $crate::__libc::c_int,
            flags: $crate::__libc::c_int,
            fd: $crate::__libc::c_int,
            off: $crate::__libc::off_t,
        ) -> *mut $crate::__libc::c_void {
            if __mh_sys::mmap_replaces(flags) {
                $deliver(__mh_ip::SRC_MMAP_FIXED, addr as usize, len);
            }
            // SAFETY: the caller's mmap, forwarded to the kernel.
            unsafe { __mh_sys::mmap(addr, len, prot, flags, fd, off) }
        }

        /// mmap64(2), the same call on 64-bit Linux.
        ///
        /// # Safety
        /// As mmap(2).
        #[no_mangle]
        pub unsafe extern "C" fn mmap64(
            addr: *mut $crate::__libc::c_void,
            len: usize,
            prot: $crate::__libc::c_int,
            flags: $crate::__libc::c_int,
            fd: $crate::__libc::c_int,
            off: $crate::__libc::off_t,
        ) -> *mut $crate::__libc::c_void {
            // SAFETY: forwarded.
            unsafe { mmap(addr, len, prot, flags, fd, off) }
        }

        /// madvise(2); the advices that drop pages are reported.
        ///
        /// # Safety
        /// As madvise(2).
        #[no_mangle]
        pub unsafe extern "C" fn madvise(
            addr: *mut $crate::__libc::c_void,
            len: usize,
            advice: $crate::__libc::c_int,
        ) -> $crate::__libc::c_int {
            if __mh_sys::advice_releases(advice) {
                $deliver(__mh_ip::SRC_MADVISE, addr as usize, len);
            }
            // SAFETY: the caller's madvise, forwarded to the kernel.
            unsafe { __mh_sys::madvise(addr, len, advice) }
        }

        /// sbrk(2) through glibc's, so its record of the break stays right.
        ///
        /// # Safety
        /// As sbrk(2).
        #[no_mangle]
        pub unsafe extern "C" fn sbrk(
            inc: $crate::__libc::intptr_t,
        ) -> *mut $crate::__libc::c_void {
            if inc < 0 {
                // SAFETY: sbrk(0) only reads the break.
                let cur = unsafe { __mh_ip::__sbrk(0) } as usize;
                let len = inc.unsigned_abs().min(cur);
                $deliver(__mh_ip::SRC_BRK, cur - len, len);
            }
            // SAFETY: the caller's sbrk, forwarded to glibc.
            unsafe { __mh_ip::__sbrk(inc) }
        }

        /// brk(2), done as the equivalent sbrk so glibc's record of the break stays right.
        ///
        /// # Safety
        /// As brk(2).
        #[no_mangle]
        pub unsafe extern "C" fn brk(addr: *mut $crate::__libc::c_void) -> $crate::__libc::c_int {
            // SAFETY: sbrk(0) only reads the break.
            let cur = unsafe { __mh_ip::__sbrk(0) } as usize;
            let want = addr as usize;
            if want < cur {
                $deliver(__mh_ip::SRC_BRK, want, cur - want);
            }
            // SAFETY: moving the break to `want`, as the caller asked.
            let r = unsafe { __mh_ip::__sbrk(want.wrapping_sub(cur) as $crate::__libc::intptr_t) };
            if r as isize == -1 {
                -1
            } else {
                0
            }
        }

        /// shmdt(2); the segment's length comes from /proc/self/maps.
        ///
        /// # Safety
        /// As shmdt(2).
        #[no_mangle]
        pub unsafe extern "C" fn shmdt(
            addr: *const $crate::__libc::c_void,
        ) -> $crate::__libc::c_int {
            let len = __mh_sys::mapping_len_at(addr as usize);
            $deliver(__mh_ip::SRC_SHMDT, addr as usize, len);
            // SAFETY: the caller's shmdt, forwarded to the kernel.
            unsafe { __mh_sys::shmdt(addr) }
        }
    };
}
