//! A spinlock: the allocator runs before threads or mutexes are usable (seed 002: "spinlocks as
//! much as possible") and must not allocate. Held only for a few pointer updates.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Spin<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through `lock`, which gives one thread at a time access.
unsafe impl<T: Send> Sync for Spin<T> {}

impl<T> Spin<T> {
    pub const fn new(value: T) -> Self {
        Spin {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    pub fn lock<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        self.acquire();
        // SAFETY: the flag was taken above, so this is the only access until it is released.
        let r = f(unsafe { &mut *self.value.get() });
        self.locked.store(false, Ordering::Release);
        r
    }

    /// Takes the lock with no access to the value (fork's prepare handler); undone by
    /// [`Spin::release`].
    pub fn acquire(&self) {
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.locked.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        }
    }

    /// Releases a lock taken with [`Spin::acquire`] (fork's parent and child handlers).
    pub fn release(&self) {
        self.locked.store(false, Ordering::Release);
    }
}
