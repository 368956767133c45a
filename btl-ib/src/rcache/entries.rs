//! The registrations: a slab of entries addressed by generation-checked handles, and the lookup
//! structure, a `BTreeMap` by start address over the cached entries. Cached entries never
//! overlap (a miss replaces the entries it overlaps, see `Rcache::miss_cached`), so the only
//! candidate to cover an address is the entry with the greatest start at or below it: lookups
//! are O(log n).

use std::collections::BTreeMap;

use super::Handle;
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

struct Slot {
    gen: u32,
    entry: Option<Entry>,
}

/// Handles pack the slot index (low half) and the slot's generation (high half), so that a
/// handle kept past its entry's end is recognized instead of naming the slot's next tenant.
const HALF: u32 = usize::BITS / 2;
const IDX_MASK: usize = (1usize << HALF) - 1;

fn handle(idx: u32, gen: u32) -> Handle {
    Handle(((gen as usize & IDX_MASK) << HALF) | idx as usize)
}

pub(super) struct Entries {
    slots: Vec<Slot>,
    free: Vec<u32>,
    tree: BTreeMap<usize, u32>,
}

impl Entries {
    pub fn new() -> Entries {
        Entries {
            slots: Vec::new(),
            free: Vec::new(),
            tree: BTreeMap::new(),
        }
    }

    /// Stores `e` (in the lookup structure if it is `Cached`) and returns its handle.
    pub fn insert(&mut self, e: Entry) -> Handle {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    gen: 0,
                    entry: None,
                });
                u32::try_from(self.slots.len() - 1).expect("rcache: too many entries")
            }
        };
        let slot = &mut self.slots[idx as usize];
        debug_assert!(slot.entry.is_none());
        slot.entry = Some(e);
        if e.state == State::Cached {
            debug_assert!(self.overlapping(e.start(), e.end()).is_empty());
            self.tree.insert(e.start(), idx);
        }
        self.handle(idx)
    }

    /// The current handle of slot `i`.
    pub fn handle(&self, i: u32) -> Handle {
        handle(i, self.slots[i as usize].gen)
    }

    /// The slot `h` names, if its entry is still there.
    pub fn index(&self, h: Handle) -> Option<u32> {
        let idx = h.0 & IDX_MASK;
        let gen = h.0 >> HALF;
        let slot = self.slots.get(idx)?;
        (slot.entry.is_some() && slot.gen as usize & IDX_MASK == gen).then_some(idx as u32)
    }

    pub fn get(&self, i: u32) -> &Entry {
        self.slots[i as usize]
            .entry
            .as_ref()
            .expect("rcache: empty slot")
    }

    pub fn get_mut(&mut self, i: u32) -> &mut Entry {
        self.slots[i as usize]
            .entry
            .as_mut()
            .expect("rcache: empty slot")
    }

    /// Frees the slot (and leaves the lookup structure); its handles go stale.
    pub fn remove(&mut self, i: u32) -> Entry {
        let slot = &mut self.slots[i as usize];
        let e = slot.entry.take().expect("rcache: empty slot");
        slot.gen = slot.gen.wrapping_add(1);
        self.free.push(i);
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
        (0..self.slots.len() as u32)
            .filter(|&i| self.slots[i as usize].entry.is_some())
            .collect()
    }
}
