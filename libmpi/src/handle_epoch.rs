//! A count of handle frees that may give a handle value another meaning: a datatype or a
//! reduction operation freed (its handle may come back as another). Caches keyed by handles
//! (coll/cache.rs) compare it. It lives below both the handle tables and their users, so the
//! tables need not know who caches (the layers stay one-way: datatype and op do not call coll).

use std::sync::atomic::{AtomicU64, Ordering};

static EPOCH: AtomicU64 = AtomicU64::new(0);

/// A datatype or operation handle was freed.
pub fn bump() {
    EPOCH.fetch_add(1, Ordering::Relaxed);
}

/// The count now: a value cached under an older count may name freed handles.
pub fn current() -> u64 {
    EPOCH.load(Ordering::Relaxed)
}
