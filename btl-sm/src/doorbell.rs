//! Doorbells: a word a sleeping thread waits on with `futex(2)` and other processes of the node
//! ring (the word lies in the shared segment; the futex is not process-private). Used by
//! libmpi's async progress thread, which sleeps until a peer sends to its rank instead of
//! waking on a timer (a timer wake-up costs its core about 20 µs on a VM).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The word's values (the sleeper and its process set them; ringers only take `RING_ME`, or
/// `QUIET` for a sender stopped by a full ring, to `AWAKE`).
pub const AWAKE: u32 = 0;
/// Asleep until a fragment arrives (peers ring) or the timeout.
pub const RING_ME: u32 = 1;
/// Asleep with nothing to do for arrivals: only a sender that finds the ring to this rank full
/// wakes it (`ring_full`), so that it drains.
pub const QUIET: u32 = 3;

/// Sleep while `word` holds `expected`, at most `timeout`; returns at once if it does not.
pub fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT reads the aligned 4-byte word (valid for the call: `word` is a
    // reference) and the timespec on our stack; it writes nothing of ours.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        )
    };
}

/// Wake the thread sleeping on `word`, if any.
pub fn wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only uses the word's address as a key; it touches no memory.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, 1) };
}

/// Ring `word` if its owner sleeps until rung: after a fragment is written for it, or when
/// work needs it. The fence orders the fragment's stores before the load of the word, against
/// the sleeper's store of `RING_ME` before its last look at its rings (else both could miss).
#[inline]
pub fn ring(word: &AtomicU32) {
    std::sync::atomic::fence(Ordering::SeqCst);
    wake_if(word, |v| v == RING_ME);
}

/// A send to `word`'s owner found its ring full: wake the owner's thread if it sleeps
/// `RING_ME` or `QUIET`, so that it drains the ring (the owner's application may be computing
/// with nothing posted for these messages). No fence: a full ring stays full, and the sender
/// rings again at its next try.
#[inline]
pub fn ring_full(word: &AtomicU32) {
    wake_if(word, |v| v == RING_ME || v == QUIET);
}

/// Take `word` to `AWAKE` and wake its sleeper if it holds a value `asleep` accepts. One load
/// when it does not.
#[inline]
fn wake_if(word: &AtomicU32, asleep: impl Fn(u32) -> bool) {
    let v = word.load(Ordering::Relaxed);
    if asleep(v)
        && word
            .compare_exchange(v, AWAKE, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    {
        wake(word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_ring_wakes_the_sleeper_and_a_timeout_ends_the_sleep() {
        let w = Arc::new(AtomicU32::new(RING_ME));
        let t0 = Instant::now();
        wait(&w, RING_ME, Duration::from_millis(20));
        assert!(t0.elapsed() >= Duration::from_millis(15));
        // Not asleep on that value: at once.
        wait(&w, AWAKE, Duration::from_secs(10));
        let w2 = w.clone();
        let sleeper = std::thread::spawn(move || {
            while w2.load(Ordering::SeqCst) == RING_ME {
                wait(&w2, RING_ME, Duration::from_secs(10));
            }
        });
        std::thread::sleep(Duration::from_millis(10));
        let t0 = Instant::now();
        ring(&w);
        sleeper.join().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert_eq!(w.load(Ordering::SeqCst), AWAKE);
        // A word not asking to be rung stays as it is.
        let busy = AtomicU32::new(2);
        ring(&busy);
        ring_full(&busy);
        assert_eq!(busy.load(Ordering::SeqCst), 2);
        // QUIET: only a full ring wakes it.
        let quiet = AtomicU32::new(QUIET);
        ring(&quiet);
        assert_eq!(quiet.load(Ordering::SeqCst), QUIET);
        ring_full(&quiet);
        assert_eq!(quiet.load(Ordering::SeqCst), AWAKE);
    }
}
