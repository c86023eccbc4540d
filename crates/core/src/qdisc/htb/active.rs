//! The kernel's per-level rows and per-class feeds (sch_htb.c's rbtrees
//! keyed by classid, `htb_add_to_id_tree`, `htb_next_rb_node`) as sorted
//! vectors with the same "current pointer" semantics: a removed
//! pointed-to member advances a row's pointer, or leaves a feed's pointer
//! to resume at the next classid (`last_ptr_id`).

use super::NUMPRIO;

/// A row or a feed: active classes ordered by classid, with the DRR
/// "current" pointer (by classid) and the classid to resume after when the
/// pointed-to member left a feed.
#[derive(Default, Debug)]
pub(super) struct ActiveSet {
    pub(super) members: Vec<(u32, usize)>,
    pub(super) ptr: Option<u32>,
    pub(super) last_ptr_id: u32,
}

impl ActiveSet {
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
    #[inline]
    pub(super) fn insert(&mut self, classid: u32, slot: usize) {
        if let Err(pos) = self.members.binary_search_by_key(&classid, |m| m.0) {
            self.members.insert(pos, (classid, slot));
        }
    }
    #[inline]
    pub(super) fn remove(&mut self, classid: u32) {
        if let Ok(pos) = self.members.binary_search_by_key(&classid, |m| m.0) {
            self.members.remove(pos);
        }
    }
    #[inline]
    pub(super) fn slot_of(&self, classid: u32) -> Option<usize> {
        let pos = self.members.binary_search_by_key(&classid, |m| m.0).ok()?;
        Some(self.members[pos].1)
    }
    /// The first member with classid >= `id` (`htb_id_find_next_upper`).
    #[inline]
    pub(super) fn next_upper(&self, id: u32) -> Option<u32> {
        let pos = self.members.partition_point(|m| m.0 < id);
        self.members.get(pos).map(|m| m.0)
    }
    /// `rb_next` of the pointer.
    #[inline]
    pub(super) fn advance(&mut self) {
        self.ptr = self
            .ptr
            .and_then(|id| id.checked_add(1))
            .and_then(|id| self.next_upper(id));
    }
    #[inline]
    pub(super) fn clear(&mut self) {
        self.members.clear();
        self.ptr = None;
        self.last_ptr_id = 0;
    }
}

/// Where an `ActiveSet` lives: a row of the qdisc or a feed of an inner class.
#[derive(Clone, Copy, Debug)]
pub(super) enum SetRef {
    Row(usize, usize),
    Feed(usize, usize),
}

/// The set bits of a prio mask, lowest first.
#[inline]
pub(super) fn bits(mask: u8) -> impl Iterator<Item = usize> {
    (0..NUMPRIO).filter(move |p| mask & (1 << p) != 0)
}
