//! The `hooks` provider: libc's munmap, mremap, madvise, brk and shmdt are patched at their entry
//! points (as Open MPI's patcher and UCX's bistro do): the first 13 bytes become
//! `movabs r11, hook; jmp r11`. mmap is patched too: MAP_FIXED replaces what was mapped. Calls from inside libc (free() unmapping a large chunk, malloc
//! trimming the heap with brk or madvise) reach the same entry points, so they are caught too.
//! The hooks never return into the patched code: each records the event and makes the system
//! call itself. brk is also how sbrk (and so malloc_trim) moves the break.
//!
//! Patching rewrites code other threads may be executing, so it happens once, at init, which
//! callers (MPI_Init) do before starting threads; a later patch of the same code is skipped.

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::events::{notify, Source};
use crate::sys;

/// libc's own break pointer, which glibc's brk keeps and sbrk reads.
static CURBRK: AtomicPtr<usize> = AtomicPtr::new(std::ptr::null_mut());

unsafe extern "C" fn hook_munmap(addr: *mut c_void, len: usize) -> c_int {
    notify(Source::Munmap, addr as usize, len);
    // SAFETY: the caller's munmap, forwarded to the kernel.
    unsafe { sys::munmap(addr, len) }
}

// mremap is variadic in C; on x86-64 the optional fifth argument arrives in r8 either way.
unsafe extern "C" fn hook_mremap(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    // The old range may move (or shrink): report all of it, before the kernel acts.
    notify(Source::Mremap, old as usize, old_len);
    if flags & libc::MREMAP_FIXED != 0 {
        notify(Source::MmapFixed, new_addr as usize, new_len);
    }
    // SAFETY: the caller's mremap, forwarded to the kernel.
    unsafe { sys::mremap(old, old_len, new_len, flags, new_addr) }
}

unsafe extern "C" fn hook_mmap(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off_t,
) -> *mut c_void {
    if sys::mmap_replaces(flags) {
        notify(Source::MmapFixed, addr as usize, len);
    }
    // SAFETY: the caller's mmap, forwarded to the kernel.
    unsafe { sys::mmap(addr, len, prot, flags, fd, off) }
}

unsafe extern "C" fn hook_madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int {
    if sys::advice_releases(advice) {
        notify(Source::Madvise, addr as usize, len);
    }
    // SAFETY: the caller's madvise, forwarded to the kernel.
    unsafe { sys::madvise(addr, len, advice) }
}

/// glibc's brk: the kernel's answer is stored in __curbrk; below the request means ENOMEM.
unsafe extern "C" fn hook_brk(addr: *mut c_void) -> c_int {
    let curbrk = CURBRK.load(Ordering::Relaxed);
    // SAFETY: brk(0) only reads the current break.
    let cur = unsafe { sys::brk(0) };
    let want = addr as usize;
    if want != 0 && want < cur {
        notify(Source::Brk, want, cur - want);
    }
    // SAFETY: the caller's brk, forwarded to the kernel.
    let new = unsafe { sys::brk(want) };
    // SAFETY: CURBRK points at libc's __curbrk (resolved at install), a plain pointer-sized
    // variable that glibc's own brk writes the same way.
    unsafe { *curbrk = new };
    if new < want {
        // SAFETY: this thread's errno slot.
        unsafe { *libc::__errno_location() = libc::ENOMEM };
        -1
    } else {
        0
    }
}

unsafe extern "C" fn hook_shmdt(addr: *const c_void) -> c_int {
    let len = sys::mapping_len_at(addr as usize);
    notify(Source::Shmdt, addr as usize, len);
    // SAFETY: the caller's shmdt, forwarded to the kernel.
    unsafe { sys::shmdt(addr) }
}

const PATCH_LEN: usize = 13;

/// `movabs r11, target; jmp r11` (r11 is a scratch register, clobbered by syscall anyway).
fn jump_to(target: usize) -> [u8; PATCH_LEN] {
    let mut code = [0u8; PATCH_LEN];
    code[0] = 0x49;
    code[1] = 0xBB;
    code[2..10].copy_from_slice(&target.to_le_bytes());
    code[10..13].copy_from_slice(&[0x41, 0xFF, 0xE3]);
    code
}

/// Overwrites the first bytes of `func` with a jump to `hook`.
///
/// # Safety
/// `func` must be the entry of a function at least PATCH_LEN bytes long with no jump target
/// inside its first PATCH_LEN bytes (true of glibc 2.36's syscall wrappers patched here), and no
/// other thread may be executing those bytes.
unsafe fn patch(func: *mut u8, hook: usize) -> Result<(), &'static str> {
    let code = jump_to(hook);
    // SAFETY: reading PATCH_LEN bytes of mapped code (the caller's contract).
    if unsafe { std::slice::from_raw_parts(func, PATCH_LEN) } == code {
        return Ok(()); // already ours
    }
    // SAFETY: sysconf reads a constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let start = func as usize & !(page - 1);
    let end = (func as usize + PATCH_LEN).next_multiple_of(page);
    let rwx = libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC;
    // SAFETY: changing the protection of libc's text pages that hold `func`; they stay
    // executable throughout, so other code on those pages keeps running.
    if unsafe { libc::mprotect(start as *mut c_void, end - start, rwx) } != 0 {
        return Err("cannot make libc's code writable (mprotect refused: W^X policy?)");
    }
    // SAFETY: the range is now writable; the caller guarantees no thread runs these bytes.
    unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), func, PATCH_LEN) };
    // SAFETY: as above, restoring read+execute.
    unsafe {
        libc::mprotect(
            start as *mut c_void,
            end - start,
            libc::PROT_READ | libc::PROT_EXEC,
        )
    };
    Ok(())
}

/// The size of the function starting at `f`, from libc's symbol table (dladdr1 RTLD_DL_SYMENT).
fn function_size(f: *mut c_void) -> Option<usize> {
    const RTLD_DL_SYMENT: c_int = 1;
    // SAFETY: dladdr1 fills `info` and points `sym` at the loader's own symbol entry.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let mut sym: *mut c_void = std::ptr::null_mut();
        if libc::dladdr1(f, &mut info, &mut sym, RTLD_DL_SYMENT) == 0
            || sym.is_null()
            || info.dli_saddr != f
        {
            return None;
        }
        Some((*sym.cast::<libc::Elf64_Sym>()).st_size as usize)
    }
}

fn libc_symbol(handle: *mut c_void, name: &CStr) -> Result<*mut c_void, &'static str> {
    // SAFETY: a valid handle from dlopen and a NUL-terminated name.
    let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
    if p.is_null() {
        Err("a libc function to patch was not found")
    } else {
        Ok(p)
    }
}

/// Patches libc. Errors say why the provider is unavailable.
pub fn install() -> Result<(), &'static str> {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return Err("entry-point patching is implemented for x86-64 Linux only");
    }
    // SAFETY: RTLD_NOLOAD only looks up the already loaded libc; the name is NUL-terminated.
    let h = unsafe { libc::dlopen(c"libc.so.6".as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if h.is_null() {
        return Err("libc.so.6 is not loaded (static binary or another C library)");
    }
    let curbrk = libc_symbol(h, c"__curbrk")?;
    CURBRK.store(curbrk.cast(), Ordering::Relaxed);
    let targets: [(&CStr, usize); 6] = [
        (c"munmap", hook_munmap as *const () as usize),
        (c"mremap", hook_mremap as *const () as usize),
        (c"madvise", hook_madvise as *const () as usize),
        (c"brk", hook_brk as *const () as usize),
        (c"shmdt", hook_shmdt as *const () as usize),
        (c"mmap", hook_mmap as *const () as usize),
    ];
    let mut funcs = [std::ptr::null_mut::<u8>(); 6];
    for (f, (name, _)) in funcs.iter_mut().zip(&targets) {
        let p = libc_symbol(h, name)?;
        // A shorter function would have its neighbour overwritten.
        if !matches!(function_size(p), Some(n) if n >= PATCH_LEN) {
            return Err(
                "a libc function to patch is shorter than the 13-byte jump (unknown libc build)",
            );
        }
        *f = p.cast();
    }
    for (f, (_, hook)) in funcs.iter().zip(&targets) {
        // SAFETY: glibc's x86-64 wrappers for these calls are each longer than PATCH_LEN with no
        // branch into their first PATCH_LEN bytes; install runs once at init (see module docs).
        unsafe { patch(*f, *hook)? };
    }
    Ok(())
}
