//! The `ldpreload` provider: `libmemhook_preload.so` (memhook/preload), put in LD_PRELOAD by
//! mpirun, interposes the release calls; here we attach to it and turn its reports into events.

use crate::events::{notify, Source};

/// The protocol version the preload library must speak.
const PRELOAD_ABI: u32 = 1;

extern "C" fn sink(source: u32, addr: usize, len: usize) {
    if let Some(s) = Source::from_u32(source) {
        notify(s, addr, len);
    }
}

pub fn install() -> Result<(), &'static str> {
    // SAFETY: looking up a symbol by a NUL-terminated name in the global scope.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"memhook_preload_attach".as_ptr()) };
    if p.is_null() {
        return Err(
            "libmemhook_preload.so is not preloaded (mpirun adds it to the ranks' LD_PRELOAD)",
        );
    }
    // SAFETY: the preload library defines memhook_preload_attach with this signature.
    let attach: extern "C" fn(extern "C" fn(u32, usize, usize)) -> u32 =
        unsafe { std::mem::transmute(p) };
    if attach(sink) != PRELOAD_ABI {
        return Err("libmemhook_preload.so speaks another version of the attach protocol");
    }
    Ok(())
}
