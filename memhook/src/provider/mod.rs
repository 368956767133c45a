//! The provider compiled in; each `install` returns why it cannot deliver events, if it cannot.

#[cfg(memhook_provider = "hooks")]
mod hooks;
#[cfg(memhook_provider = "hooks")]
pub use hooks::install;

#[cfg(memhook_provider = "ldpreload")]
mod ldpreload;
#[cfg(memhook_provider = "ldpreload")]
pub use ldpreload::install;

#[cfg(memhook_provider = "ptmalloc")]
pub use crate::ptmalloc::install;

#[cfg(any(memhook_provider = "none", memhook_provider = "conflict"))]
pub fn install() -> Result<(), &'static str> {
    Err("memhook was built with the `none` provider: memory releases are not intercepted")
}
