//! The calling thread's heap pointer, in a thread-local slot read with the initial-exec model.
//!
//! Rust's `thread_local!` in a shared library (librmalloc.so, libmpi_abi.so) compiles to the
//! general-dynamic model, a `__tls_get_addr` call on every malloc and free (14 % of a
//! malloc/free loop). On x86-64 Linux the slot is instead an 8-byte `.tbss` symbol of our own,
//! reached through its GOT TP offset and `%fs` (what C's `__thread` with
//! `-ftls-model=initial-exec` does, as mimalloc does): one load. The loader gives such a library
//! static TLS (a library dlopen'ed later takes it from the static surplus). Elsewhere,
//! `thread_local!`.

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imp {
    use std::arch::{asm, global_asm};

    // Hidden: one slot per library that links memhook, never shared across libraries.
    global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 3",
        ".globl memhook_ptmalloc_heap_slot",
        ".hidden memhook_ptmalloc_heap_slot",
        ".type memhook_ptmalloc_heap_slot, @tls_object",
        ".size memhook_ptmalloc_heap_slot, 8",
        "memhook_ptmalloc_heap_slot:",
        ".zero 8",
        ".popsection",
    );

    #[inline(always)]
    pub fn get() -> usize {
        let v: usize;
        // SAFETY: reads this thread's 8-byte slot at its TP offset (from the GOT); no other
        // memory is touched.
        unsafe {
            asm!(
                "movq memhook_ptmalloc_heap_slot@GOTTPOFF(%rip), {v}",
                "movq %fs:({v}), {v}",
                v = out(reg) v,
                options(att_syntax, nostack, readonly, preserves_flags)
            );
        }
        v
    }

    #[inline(always)]
    pub fn set(x: usize) {
        // SAFETY: writes this thread's own slot only.
        unsafe {
            asm!(
                "movq memhook_ptmalloc_heap_slot@GOTTPOFF(%rip), {t}",
                "movq {x}, %fs:({t})",
                t = out(reg) _,
                x = in(reg) x,
                options(att_syntax, nostack, preserves_flags)
            );
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod imp {
    use std::cell::Cell;

    thread_local! {
        // Const, no destructor: no registration or allocation on first use.
        static SLOT: Cell<usize> = const { Cell::new(0) };
    }

    #[inline(always)]
    pub fn get() -> usize {
        SLOT.with(|c| c.get())
    }

    #[inline(always)]
    pub fn set(x: usize) {
        SLOT.with(|c| c.set(x))
    }
}

pub use imp::{get, set};
