//! Least-recently-used order of the unused (refcount 0) cached entries: an intrusive doubly
//! linked list over slot indices, so that a hit on an unused entry unlinks it in O(1).

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Link {
    prev: u32,
    next: u32,
    linked: bool,
}

const UNLINKED: Link = Link {
    prev: NIL,
    next: NIL,
    linked: false,
};

/// Oldest at the front, most recently released at the back.
pub(super) struct Lru {
    links: Vec<Link>,
    head: u32,
    tail: u32,
    len: usize,
}

impl Lru {
    pub fn new() -> Lru {
        Lru {
            links: Vec::new(),
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn contains(&self, i: u32) -> bool {
        self.links.get(i as usize).is_some_and(|l| l.linked)
    }

    /// Appends `i` as the most recently used.
    pub fn push_back(&mut self, i: u32) {
        let iu = i as usize;
        if self.links.len() <= iu {
            self.links.resize(iu + 1, UNLINKED);
        }
        assert!(!self.links[iu].linked, "rcache lru: slot {i} linked twice");
        self.links[iu] = Link {
            prev: self.tail,
            next: NIL,
            linked: true,
        };
        if self.tail == NIL {
            self.head = i;
        } else {
            self.links[self.tail as usize].next = i;
        }
        self.tail = i;
        self.len += 1;
    }

    /// Unlinks `i`; returns whether it was linked.
    pub fn remove(&mut self, i: u32) -> bool {
        if !self.contains(i) {
            return false;
        }
        let Link { prev, next, .. } = self.links[i as usize];
        if prev == NIL {
            self.head = next;
        } else {
            self.links[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.links[next as usize].prev = prev;
        }
        self.links[i as usize] = UNLINKED;
        self.len -= 1;
        true
    }

    /// Unlinks and returns the least recently used.
    pub fn pop_front(&mut self) -> Option<u32> {
        let h = self.head;
        if h == NIL {
            return None;
        }
        self.remove(h);
        Some(h)
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;

    fn drain(l: &mut Lru) -> Vec<u32> {
        std::iter::from_fn(|| l.pop_front()).collect()
    }

    #[test]
    fn lru_order_and_unlink() {
        let mut l = Lru::new();
        for i in [3, 0, 7, 5] {
            l.push_back(i);
        }
        assert_eq!(l.len(), 4);
        assert!(l.remove(7) && !l.remove(7) && !l.remove(42));
        l.push_back(7);
        assert!(l.remove(3));
        assert_eq!(drain(&mut l), [0, 5, 7]);
        assert_eq!(l.len(), 0);
        l.push_back(1);
        assert_eq!(drain(&mut l), [1]);
    }
}
