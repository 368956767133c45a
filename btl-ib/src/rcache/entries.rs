//! The registrations: a slab of entries addressed by generation-checked handles, and the lookup
//! structure, a `BTreeMap` by start address over the cached entries. Cached entries never
//! overlap (a miss replaces the entries it overlaps, see `Rcache::miss_cached`), so the only
//! candidate to cover an address is the entry with the greatest start at or below it: lookups
//! are O(log n).

use std::collections::BTreeMap;

use super::Handle;
use crate::slab::GenSlab;
use crate::verbs::{Access, Mr};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// In the lookup structure (and in the LRU while unused).
    Cached,
    /// Out of the lookup structure, still registered: its memory was released, it was replaced
    /// by a merged entry while in use, or caching is off. Deregistered at its last release.
    Detached,
    /// Already deregistered (by `clear` while in use): its last release only frees the slot.
    Dead,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub mr: Mr,
    pub refs: u32,
    pub state: State,
}

impl Entry {
    pub fn start(&self) -> usize {
        self.mr.addr
    }
    pub fn end(&self) -> usize {
        self.mr.addr + self.mr.len
    }
}

pub(super) struct Entries {
    slab: GenSlab<Entry>,
    tree: BTreeMap<usize, u32>,
}

impl Entries {
    pub fn new() -> Entries {
        Entries {
            slab: GenSlab::default(),
            tree: BTreeMap::new(),
        }
    }

    /// Stores `e` (in the lookup structure if it is `Cached`) and returns its handle.
    pub fn insert(&mut self, e: Entry) -> Handle {
        if e.state == State::Cached {
            debug_assert!(self.overlapping(e.start(), e.end()).is_empty());
        }
        let idx = self.slab.insert(e);
        if e.state == State::Cached {
            self.tree.insert(e.start(), idx);
        }
        self.handle(idx)
    }

    /// The current handle of slot `i` (its key: generation and index, so that a handle kept
    /// past its entry's end is recognized instead of naming the slot's next tenant).
    pub fn handle(&self, i: u32) -> Handle {
        Handle(self.slab.key(i) as usize)
    }

    /// The slot `h` names, if its entry is still there.
    pub fn index(&self, h: Handle) -> Option<u32> {
        self.slab.index_of(h.0 as u64)
    }

    pub fn get(&self, i: u32) -> &Entry {
        self.slab.get(i)
    }

    pub fn get_mut(&mut self, i: u32) -> &mut Entry {
        self.slab.get_mut(i)
    }

    /// Frees the slot (and leaves the lookup structure); its handles go stale.
    pub fn remove(&mut self, i: u32) -> Entry {
        let e = self.slab.remove(i);
        if e.state == State::Cached {
            self.tree.remove(&e.start());
        }
        e
    }

    /// Takes a cached entry out of the lookup structure, keeping its registration.
    pub fn detach(&mut self, i: u32) {
        let e = self.get_mut(i);
        if e.state == State::Cached {
            e.state = State::Detached;
            let start = e.start();
            self.tree.remove(&start);
        }
    }

    /// The cached entry covering `[addr, end)` with at least `access`, if any.
    pub fn find(&self, addr: usize, end: usize, access: Access) -> Option<u32> {
        let (_, &i) = self.tree.range(..=addr).next_back()?;
        let e = self.get(i);
        (e.end() >= end && e.mr.access.contains(access)).then_some(i)
    }

    /// The cached entries overlapping `[start, end)`, highest first.
    pub fn overlapping(&self, start: usize, end: usize) -> Vec<u32> {
        self.tree
            .range(..end)
            .rev()
            .map(|(_, &i)| i)
            .take_while(|&i| self.get(i).end() > start)
            .collect()
    }

    /// Every cached entry.
    pub fn cached(&self) -> Vec<u32> {
        self.tree.values().copied().collect()
    }

    /// Every entry, cached or not.
    pub fn all(&self) -> Vec<u32> {
        self.slab.indices().collect()
    }
}
