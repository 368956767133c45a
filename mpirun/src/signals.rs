//! Signal plumbing: mpirun receives its signals through a signalfd; ranks start with a clean slate.

use nix::sys::signal::{sigprocmask, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

/// Signals mpirun handles in its event loop.
pub const HANDLED: [Signal; 4] = [
    Signal::SIGCHLD,
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
];

/// Blocks the handled signals (so they queue instead of acting) and opens a signalfd for them.
/// Call before starting any rank so that no SIGCHLD can be missed.
pub fn block_and_open() -> nix::Result<SignalFd> {
    let mut set = SigSet::empty();
    for s in HANDLED {
        set.add(s);
    }
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None)?;
    SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
}

/// In a forked child before exec: default dispositions and an empty mask, whatever mpirun
/// inherited or set. Async-signal-safe: only sigaction and sigprocmask, no allocation.
pub fn reset_for_child() -> nix::Result<()> {
    // All-zero is SIG_DFL with no flags and an empty mask.
    // SAFETY: libc::sigaction is plain old data, valid when zeroed.
    let dfl: libc::sigaction = unsafe { std::mem::zeroed() };
    for sig in 1..=libc::SIGRTMAX() {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: installing SIG_DFL runs no code in signal context; `dfl` outlives the call.
        // The C library refuses its internal signals (32, 33) with EINVAL, which is fine:
        // it sets those up itself in the new program.
        unsafe { libc::sigaction(sig, &dfl, std::ptr::null_mut()) };
    }
    sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)
}

/// `SIGSEGV` for 11; None for numbers without a name (real-time signals).
pub fn signal_name(sig: i32) -> Option<String> {
    Signal::try_from(sig).ok().map(|s| s.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(signal_name(11).as_deref(), Some("SIGSEGV"));
        assert_eq!(signal_name(15).as_deref(), Some("SIGTERM"));
        assert_eq!(signal_name(40), None);
    }
}
