//! The order in which a classful qdisc's walk visits its classes: the
//! kernel keeps them in a `struct Qdisc_class_hash` (net/sched/sch_api.c
//! `qdisc_class_hash_init`, `_insert`, `_remove`, `_grow`) and its
//! `walk` (`htb_walk`, `qfq_walk`) goes bucket by bucket, each bucket from
//! its head, so `tc class show` lists classes in that order rather than
//! sorted. Only the order is modelled: the classes themselves stay where
//! their qdisc keeps them. Touched by class add and delete only, never on
//! the packet path.

use crate::handle::Handle;

/// The buckets of one qdisc's class hash, each a list of class ids with
/// its head first.
#[derive(Clone, Debug)]
pub struct ClassHash {
    buckets: Vec<Vec<Handle>>,
    elems: usize,
}

impl Default for ClassHash {
    fn default() -> Self {
        ClassHash::new()
    }
}

/// `qdisc_class_hash`: the bucket of `id` under `mask`.
fn bucket(id: Handle, mask: usize) -> usize {
    let mut id = id;
    id ^= id >> 8;
    id ^= id >> 4;
    id as usize & mask
}

impl ClassHash {
    /// `qdisc_class_hash_init`: four empty buckets.
    pub fn new() -> ClassHash {
        ClassHash {
            buckets: vec![Vec::new(); 4],
            elems: 0,
        }
    }

    /// `qdisc_class_hash_insert`: `id` at the head of its bucket.
    pub fn insert(&mut self, id: Handle) {
        let b = bucket(id, self.buckets.len() - 1);
        self.buckets[b].insert(0, id);
        self.elems += 1;
    }

    /// `qdisc_class_hash_remove`.
    pub fn remove(&mut self, id: Handle) {
        let b = bucket(id, self.buckets.len() - 1);
        if let Some(i) = self.buckets[b].iter().position(|&c| c == id) {
            self.buckets[b].remove(i);
            self.elems -= 1;
        }
    }

    /// `qdisc_class_hash_grow`: once more than 3/4 full, twice the buckets,
    /// each old bucket's classes moved in order to the head of their new
    /// bucket (so two that land together swap).
    pub fn grow(&mut self) {
        if self.elems * 4 <= self.buckets.len() * 3 {
            return;
        }
        let mask = self.buckets.len() * 2 - 1;
        let mut new = vec![Vec::new(); mask + 1];
        for id in self.buckets.iter().flatten() {
            new[bucket(*id, mask)].insert(0, *id);
        }
        self.buckets = new;
    }

    /// The class ids in walk order.
    pub fn walk(&self) -> impl Iterator<Item = Handle> + '_ {
        self.buckets.iter().flatten().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order Linux 6.18 listed an HTB's classes in after they were
    /// added in this order (`tc class show`, the battery's "htb classes in
    /// the kernel's order" session).
    #[test]
    fn walk_order_is_the_kernels() {
        let mut h = ClassHash::new();
        let add = |h: &mut ClassHash, id: Handle| {
            h.insert(id);
            h.grow();
        };
        add(&mut h, 0x1_0001);
        add(&mut h, 0x1_0010);
        add(&mut h, 0x1_0020);
        assert_eq!(h.walk().collect::<Vec<_>>(), [0x1_0010, 0x1_0001, 0x1_0020]);
        for id in [0x30, 0x2, 0x100, 0xff, 0x11, 0x5, 0x3, 0x1000, 0xabcd] {
            add(&mut h, 0x1_0000 | id);
        }
        assert_eq!(
            h.walk().map(|id| id & 0xFFFF).collect::<Vec<_>>(),
            [0xabcd, 0x11, 0xff, 0x1000, 0x10, 0x1, 0x100, 0x20, 0x2, 0x3, 0x30, 0x5]
        );
        h.remove(0x1_0011);
        assert_eq!(h.walk().count(), 11);
        assert!(!h.walk().any(|id| id == 0x1_0011));
    }
}
