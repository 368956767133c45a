//! A slab whose keys carry the slot's generation: a key kept past its value's removal is
//! recognized as stale instead of naming the slot's next tenant. Used for registration-cache
//! entries and for the real provider's outstanding work requests.

struct Slot<T> {
    gen: u32,
    value: Option<T>,
}

pub struct GenSlab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for GenSlab<T> {
    fn default() -> Self {
        GenSlab {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<T> GenSlab<T> {
    /// Stores `v`; returns its slot index (see [`GenSlab::key`] for a stable name).
    pub fn insert(&mut self, v: T) -> u32 {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    gen: 0,
                    value: None,
                });
                u32::try_from(self.slots.len() - 1).expect("slab: 2^32 live values")
            }
        };
        self.slots[idx as usize].value = Some(v);
        self.live += 1;
        idx
    }

    /// The key of slot `idx`'s current value: generation in the high half, index in the low.
    pub fn key(&self, idx: u32) -> u64 {
        (u64::from(self.slots[idx as usize].gen) << 32) | u64::from(idx)
    }

    /// The slot `key` names, if its value is still there.
    pub fn index_of(&self, key: u64) -> Option<u32> {
        let idx = (key & 0xffff_ffff) as u32;
        let slot = self.slots.get(idx as usize)?;
        (slot.value.is_some() && u64::from(slot.gen) == key >> 32).then_some(idx)
    }

    /// Panics on an empty slot (an index that did not come from a live value).
    pub fn get(&self, idx: u32) -> &T {
        self.slots[idx as usize]
            .value
            .as_ref()
            .expect("slab: empty slot")
    }

    pub fn get_mut(&mut self, idx: u32) -> &mut T {
        self.slots[idx as usize]
            .value
            .as_mut()
            .expect("slab: empty slot")
    }

    /// Frees the slot; its keys go stale.
    pub fn remove(&mut self, idx: u32) -> T {
        let slot = &mut self.slots[idx as usize];
        let v = slot.value.take().expect("slab: empty slot");
        slot.gen = slot.gen.wrapping_add(1);
        self.free.push(idx);
        self.live -= 1;
        v
    }

    /// Removes the value `key` names; None when stale or unknown.
    pub fn take(&mut self, key: u64) -> Option<T> {
        self.index_of(key).map(|i| self.remove(i))
    }

    /// Removes every value `drop` says to; returns how many.
    pub fn remove_where(&mut self, mut drop: impl FnMut(&T) -> bool) -> usize {
        let doomed: Vec<u32> = self.indices().filter(|&i| drop(self.get(i))).collect();
        for &i in &doomed {
            self.remove(i);
        }
        doomed.len()
    }

    /// Indices of the live values.
    pub fn indices(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.slots.len() as u32).filter(|&i| self.slots[i as usize].value.is_some())
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::GenSlab;

    #[test]
    fn stale_keys_are_refused_and_slots_reused() {
        let mut s = GenSlab::default();
        let a = s.insert("a");
        let ka = s.key(a);
        assert_eq!(s.index_of(ka), Some(a));
        assert_eq!(s.take(ka), Some("a"));
        assert_eq!(s.take(ka), None);
        let b = s.insert("b");
        assert_eq!(b, a, "the slot is reused");
        assert_ne!(s.key(b), ka);
        assert_eq!(s.index_of(ka), None);
        assert_eq!(*s.get(b), "b");
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn remove_where_counts() {
        let mut s = GenSlab::default();
        for i in 0..10 {
            s.insert(i);
        }
        assert_eq!(s.remove_where(|v| v % 2 == 0), 5);
        assert_eq!(s.len(), 5);
        assert!(s.indices().all(|i| s.get(i) % 2 == 1));
    }
}
