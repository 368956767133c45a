//! C++'s `operator new` and `operator delete`, every form libstdc++ exports, straight on the
//! allocator. Without them a C++ program's `new` goes through libstdc++'s, which calls `malloc`
//! through the PLT: one more call and jump per allocation and per free (about 3 % of
//! mimalloc-bench's alloc-test; mimalloc and tcmalloc export them for the same reason).
//!
//! Allocation failure keeps C++'s semantics by handing the request to the next definition
//! (libstdc++'s, found with `dlsym(RTLD_NEXT)`): it calls the new-handler and our malloc again in
//! its loop, then throws `std::bad_alloc` (or returns null for the nothrow forms). The throwing
//! forms jump to it with our frame already gone (a naked function, `throwing!`): the library may
//! be built with panic=abort (`--profile rmalloc`), and there an exception unwinding through a
//! Rust frame would abort the program instead of reaching its `catch`. The nothrow forms call it:
//! libstdc++'s nothrow operators are `noexcept`, nothing unwinds out of them.

use std::ffi::{c_void, CStr};

use crate::__libc as libc;
use crate::ptmalloc;

/// The definition of the mangled operator `name` after ours.
#[cold]
fn next(name: &CStr) -> *mut c_void {
    // SAFETY: a lookup by a NUL-terminated name; RTLD_NEXT searches the objects after ours.
    let f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if f.is_null() {
        // Only a program with no libstdc++ calls these, and then not through its own symbols.
        const MSG: &[u8] = b"librmalloc.so: out of memory in operator new\n";
        // SAFETY: writes a static buffer to stderr, then ends the process.
        unsafe {
            libc::write(2, MSG.as_ptr().cast(), MSG.len());
            libc::abort();
        }
    }
    f
}

/// The operator's own (mangled) name as a C string, for [`next`].
macro_rules! name {
    ($name:ident) => {
        // SAFETY: an identifier has no NUL, and the one at the end is the only one.
        unsafe { CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes()) }
    };
}

/// The throwing forms, `name(size[, align]) = allocation;`: a naked entry that calls the
/// allocation (`$name::alloc`, ordinary Rust) and returns its result, or, when it is null, restores
/// the arguments and jumps to libstdc++'s operator (`$name::next`), which then runs as if the
/// program had called it: whatever it throws unwinds straight to the program's frames. Both
/// argument registers are kept whatever the form (a one-argument form's `rsi` is just carried),
/// and the stack stays 16-byte aligned at each call (the entry sees it 8 off, as every function
/// does).
macro_rules! throwing {
    ($($name:ident($($arg:ident),+) = $alloc:expr;)*) => {$(
        #[allow(non_snake_case)]
        mod $name {
            use super::*;
            pub extern "C" fn alloc($($arg: usize),+) -> *mut c_void {
                $alloc.cast()
            }
            #[cold]
            pub extern "C" fn next() -> *mut c_void {
                super::next(name!($name))
            }
        }
        // SAFETY (of the naked body): it keeps the C ABI. It touches only rdi, rsi and rax
        // (caller-saved) and its own pushes, which it pops before returning or jumping, and
        // calls with the stack 16-byte aligned; the jump goes to a function of this signature.
        #[no_mangle]
        #[unsafe(naked)]
        pub extern "C" fn $name($($arg: usize),+) -> *mut c_void {
            std::arch::naked_asm!(
                "push rdi",
                "push rsi",
                "sub rsp, 8",
                "call {alloc}",
                "add rsp, 8",
                "pop rsi",
                "pop rdi",
                "test rax, rax",
                "jz 2f",
                "ret",
                "2:",
                "push rdi",
                "push rsi",
                "sub rsp, 8",
                "call {next}",
                "add rsp, 8",
                "pop rsi",
                "pop rdi",
                "jmp rax",
                alloc = sym $name::alloc,
                next = sym $name::next,
            )
        }
    )*};
}

/// libstdc++'s nothrow `operator new` (`name`), which returns null after the new-handler loop.
#[cold]
#[inline(never)]
fn fail2(name: &CStr, size: usize, nt: usize) -> *mut c_void {
    // SAFETY: `name` names an operator of this signature.
    let f: unsafe extern "C" fn(usize, usize) -> *mut c_void =
        unsafe { std::mem::transmute(next(name)) };
    // SAFETY: calling libstdc++'s operator with its own arguments.
    unsafe { f(size, nt) }
}

/// As [`fail2`], for the aligned nothrow forms.
#[cold]
#[inline(never)]
fn fail3(name: &CStr, size: usize, align: usize, nt: usize) -> *mut c_void {
    // SAFETY: `name` names an operator of this signature.
    let f: unsafe extern "C" fn(usize, usize, usize) -> *mut c_void =
        unsafe { std::mem::transmute(next(name)) };
    // SAFETY: calling libstdc++'s operator with its own arguments.
    unsafe { f(size, align, nt) }
}

// The nothrow forms: `name(arguments) = allocation, the libstdc++ fallback taking the same
// arguments;` (the argument names are the caller's, so that the allocation can use them).
macro_rules! nothrow {
    ($($name:ident($size:ident $(, $arg:ident)*) = $alloc:expr, $fail:ident;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name($size: usize $(, $arg: usize)*) -> *mut c_void {
            let p = $alloc;
            if p.is_null() {
                return $fail(name!($name), $size $(, $arg)*);
            }
            p.cast()
        }
    )*};
}

// Every delete form: the pointer first, then a size, an alignment or a nothrow_t we do not need.
macro_rules! delete {
    ($($name:ident($($extra:ident),*)),*) => {$(
        /// # Safety
        /// `p` is null or a live pointer from operator new (so from this allocator).
        #[no_mangle]
        pub unsafe extern "C" fn $name(p: *mut c_void $(, $extra: usize)*) {
            $(let _ = $extra;)*
            // SAFETY: the caller's contract.
            unsafe { ptmalloc::free(p.cast()) }
        }
    )*};
}

throwing! {
    _Znwm(size) = ptmalloc::malloc(size);
    _Znam(size) = ptmalloc::malloc(size);
    _ZnwmSt11align_val_t(size, align) = ptmalloc::memalign(align, size);
    _ZnamSt11align_val_t(size, align) = ptmalloc::memalign(align, size);
}
nothrow! {
    _ZnwmRKSt9nothrow_t(size, nt) = ptmalloc::malloc(size), fail2;
    _ZnamRKSt9nothrow_t(size, nt) = ptmalloc::malloc(size), fail2;
    _ZnwmSt11align_val_tRKSt9nothrow_t(size, align, nt) = ptmalloc::memalign(align, size), fail3;
    _ZnamSt11align_val_tRKSt9nothrow_t(size, align, nt) = ptmalloc::memalign(align, size), fail3;
}
delete!(
    _ZdlPv(),
    _ZdaPv(),
    _ZdlPvm(size),
    _ZdaPvm(size),
    _ZdlPvRKSt9nothrow_t(nt),
    _ZdaPvRKSt9nothrow_t(nt),
    _ZdlPvSt11align_val_t(align),
    _ZdaPvSt11align_val_t(align),
    _ZdlPvmSt11align_val_t(size, align),
    _ZdaPvmSt11align_val_t(size, align),
    _ZdlPvSt11align_val_tRKSt9nothrow_t(align, nt),
    _ZdaPvSt11align_val_tRKSt9nothrow_t(align, nt)
);
