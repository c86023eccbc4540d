//! HTB's scheduling (sch_htb.c): activity (`htb_activate_prios`,
//! `htb_deactivate_prios`: leaves hooked into the row of their level or
//! the feeds of the ancestors they borrow from), the per-level event
//! queues of classes waiting for a mode change (`htb_do_events`), the
//! charge of a sent frame up the tree (`htb_charge_class`), and dequeue:
//! levels bottom-up, prios in order, DRR inside a (level, prio)
//! (`htb_lookup_leaf`, `htb_dequeue_tree`, `htb_dequeue`).

use super::active::{bits, ActiveSet, SetRef};
use super::class::Mode;
use super::{Htb, MAXDEPTH, MBUFFER};
use crate::packet::{Drops, Packet};
use crate::qdisc::Qdisc;
use crate::time::{Instant, NS_PER_SEC};

impl Htb {
    fn set_mut(&mut self, r: SetRef) -> &mut ActiveSet {
        match r {
            SetRef::Row(level, prio) => &mut self.rows[level][prio],
            SetRef::Feed(slot, prio) => &mut self.cl_mut(slot).feeds[prio],
        }
    }

    // ----- activity: rows, feeds, event queue (5.3, 5.4) -----

    fn add_class_to_row(&mut self, slot: usize, mask: u8) {
        let (level, classid) = (self.cl(slot).level, self.cl(slot).classid);
        self.row_mask[level] |= mask;
        for prio in bits(mask) {
            self.rows[level][prio].insert(classid, slot);
        }
    }

    fn remove_class_from_row(&mut self, slot: usize, mask: u8) {
        let (level, classid) = (self.cl(slot).level, self.cl(slot).classid);
        let mut emptied = 0u8;
        for prio in bits(mask) {
            let row = &mut self.rows[level][prio];
            if row.ptr == Some(classid) {
                row.advance();
            }
            row.remove(classid);
            if row.is_empty() {
                emptied |= 1 << prio;
            }
        }
        self.row_mask[level] &= !emptied;
    }

    /// `htb_activate_prios`: hook the class (and, while borrowing, its
    /// ancestors) into feeds up to the first CAN_SEND class, into its row.
    fn activate_prios(&mut self, slot: usize) {
        let mut cl = slot;
        let mut mask = self.cl(cl).prio_activity;
        while self.cl(cl).mode == Mode::MayBorrow && mask != 0 {
            let Some(p) = self.cl(cl).parent else { break };
            let classid = self.cl(cl).classid;
            for prio in bits(mask) {
                let feed = &mut self.cl_mut(p).feeds[prio];
                if !feed.is_empty() {
                    // The parent is already active at this prio.
                    mask &= !(1 << prio);
                }
                feed.insert(classid, cl);
            }
            self.cl_mut(p).prio_activity |= mask;
            cl = p;
        }
        if self.cl(cl).mode == Mode::CanSend && mask != 0 {
            self.add_class_to_row(cl, mask);
        }
    }

    /// `htb_deactivate_prios`: the inverse of `activate_prios`.
    fn deactivate_prios(&mut self, slot: usize) {
        let mut cl = slot;
        let mut mask = self.cl(cl).prio_activity;
        while self.cl(cl).mode == Mode::MayBorrow && mask != 0 {
            let Some(p) = self.cl(cl).parent else { break };
            let classid = self.cl(cl).classid;
            let m = mask;
            mask = 0;
            for prio in bits(m) {
                let feed = &mut self.cl_mut(p).feeds[prio];
                if feed.ptr == Some(classid) {
                    // Forget the pointer, remember where to resume.
                    feed.last_ptr_id = classid;
                    feed.ptr = None;
                }
                feed.remove(classid);
                if feed.is_empty() {
                    mask |= 1 << prio;
                }
            }
            self.cl_mut(p).prio_activity &= !mask;
            cl = p;
        }
        if self.cl(cl).mode == Mode::CanSend && mask != 0 {
            self.remove_class_from_row(cl, mask);
        }
    }

    /// `htb_activate`: a leaf got frames.
    pub(super) fn activate(&mut self, slot: usize) {
        if self.cl(slot).prio_activity == 0 {
            let prio = self.cl(slot).prio;
            self.cl_mut(slot).prio_activity = 1 << prio;
            self.activate_prios(slot);
        }
    }

    /// `htb_deactivate` (idempotent): a leaf became empty.
    pub(super) fn deactivate(&mut self, slot: usize) {
        if self.cl(slot).prio_activity != 0 {
            self.deactivate_prios(slot);
            self.cl_mut(slot).prio_activity = 0;
        }
    }

    fn add_to_wait_tree(&mut self, slot: usize, delay: i64) {
        let mut key = self.now + delay;
        if key == self.now {
            key += 1;
        }
        let level = self.cl(slot).level;
        self.near_ev_cache[level] = self.near_ev_cache[level].min(key);
        self.pq_seq += 1;
        let seq = self.pq_seq;
        self.wait_pq[level].insert((key, seq, slot));
        self.cl_mut(slot).pq = Some((key, seq));
    }

    pub(super) fn remove_from_wait_tree(&mut self, slot: usize) {
        let level = self.cl(slot).level;
        if let Some((key, seq)) = self.cl_mut(slot).pq.take() {
            self.wait_pq[level].remove(&(key, seq, slot));
        }
    }

    /// `htb_change_class_mode`: recompute the mode, move the class between
    /// rows and feeds, count entries into CANT_SEND.
    fn change_class_mode(&mut self, slot: usize, diff: &mut i64) {
        let new_mode = self.cl(slot).class_mode(diff);
        let cl = self.cl_mut(slot);
        if new_mode == cl.mode {
            return;
        }
        if new_mode == Mode::CantSend {
            cl.overlimits += 1;
            self.stats.overlimits += 1;
        }
        if self.cl(slot).prio_activity != 0 {
            if self.cl(slot).mode != Mode::CantSend {
                self.deactivate_prios(slot);
            }
            self.cl_mut(slot).mode = new_mode;
            if new_mode != Mode::CantSend {
                self.activate_prios(slot);
            }
        } else {
            self.cl_mut(slot).mode = new_mode;
        }
    }

    /// `htb_do_events`: mode changes due at `self.now` on one level.
    /// Returns the time of the next pending event of the level.
    fn do_events(&mut self, level: usize) -> Option<i64> {
        loop {
            let &(key, seq, slot) = self.wait_pq[level].first()?;
            if key > self.now {
                return Some(key);
            }
            self.wait_pq[level].remove(&(key, seq, slot));
            self.cl_mut(slot).pq = None;
            let mut diff = (self.now - self.cl(slot).t_c).min(MBUFFER);
            self.change_class_mode(slot, &mut diff);
            if self.cl(slot).mode != Mode::CanSend {
                self.add_to_wait_tree(slot, diff);
            }
        }
    }

    /// `htb_charge_class`: the leaf and every ancestor pay for `len` bytes
    /// (`segs` packets: a super-frame's segments) sent at `level`; classes
    /// below `level` borrowed.
    fn charge_class(&mut self, slot: usize, level: usize, len: u64, segs: u64) {
        let now = self.now;
        let mut next = Some(slot);
        while let Some(i) = next {
            let cl = self.cl_mut(i);
            let diff = (now - cl.t_c).min(MBUFFER);
            if cl.level >= level {
                if cl.level == level {
                    cl.lends += 1;
                }
                cl.accnt_tokens(len, diff);
            } else {
                cl.borrows += 1;
                cl.tokens += diff;
            }
            cl.accnt_ctokens(len, diff);
            cl.t_c = now;
            if cl.level != 0 {
                cl.bytes += len;
                cl.packets += segs;
            }
            let old_mode = cl.mode;
            let mut diff = 0;
            self.change_class_mode(i, &mut diff);
            if old_mode != self.cl(i).mode {
                if old_mode != Mode::CanSend {
                    self.remove_from_wait_tree(i);
                }
                if self.cl(i).mode != Mode::CanSend {
                    self.add_to_wait_tree(i, diff);
                }
            }
            next = self.cl(i).parent;
        }
    }

    // ----- dequeue (5.5) -----

    /// `htb_lookup_leaf`: descend from the row pointer through feed
    /// pointers to a leaf, rewinding exhausted feeds and advancing the
    /// pointer one level up.
    fn lookup_leaf(&mut self, level: usize, prio: usize) -> Option<usize> {
        let mut stack = [SetRef::Row(level, prio); MAXDEPTH];
        let mut sp = 0usize;
        for _ in 0..65535 {
            let set = self.set_mut(stack[sp]);
            if set.is_empty() {
                return None;
            }
            if set.ptr.is_none() && set.last_ptr_id != 0 {
                set.ptr = set.next_upper(set.last_ptr_id);
            }
            set.last_ptr_id = 0;
            match set.ptr {
                None => {
                    set.ptr = set.members.first().map(|m| m.0);
                    if sp > 0 {
                        sp -= 1;
                        let up = self.set_mut(stack[sp]);
                        up.ptr?;
                        up.advance();
                    }
                }
                Some(classid) => {
                    let slot = set.slot_of(classid)?;
                    if self.cl(slot).level == 0 {
                        return Some(slot);
                    }
                    if sp + 1 >= MAXDEPTH {
                        return None;
                    }
                    sp += 1;
                    stack[sp] = SetRef::Feed(slot, prio);
                }
            }
        }
        None
    }

    /// Advances the DRR pointer that selected `slot` at `level`.
    fn next_in_drr(&mut self, slot: usize, level: usize, prio: usize) {
        let set = match (level, self.cl(slot).parent) {
            (0, _) | (_, None) => SetRef::Row(0, prio),
            (_, Some(p)) => SetRef::Feed(p, prio),
        };
        self.set_mut(set).advance();
    }

    /// Runs `op` on a leaf's qdisc, keeping our qlen/backlog in step with
    /// the child and counting what it dropped. Returns `op`'s result and
    /// the number of frames the child dropped.
    pub(super) fn leaf_op<R>(
        &mut self,
        slot: usize,
        drops: &mut Drops,
        op: impl FnOnce(&mut dyn Qdisc, &mut Drops) -> R,
    ) -> Option<(R, u64)> {
        let before = drops.len();
        let leaf = self.cl_mut(slot).leaf.as_mut()?;
        let (q0, b0) = (leaf.qlen(), leaf.backlog());
        let r = op(leaf.as_mut(), drops);
        let (q1, b1) = (leaf.qlen(), leaf.backlog());
        self.qlen = (self.qlen + q1).saturating_sub(q0);
        self.backlog = (self.backlog + b1).saturating_sub(b0);
        let dropped = (drops.len() - before) as u64;
        self.stats.drops += dropped;
        Some((r, dropped))
    }

    #[inline]
    pub(super) fn leaf_qlen(&self, slot: usize) -> u32 {
        self.cl(slot).leaf.as_ref().map_or(0, |q| q.qlen())
    }

    /// `htb_dequeue_tree`: DRR among the leaves reachable at (level, prio).
    fn dequeue_tree(
        &mut self,
        prio: usize,
        level: usize,
        now: Instant,
        drops: &mut Drops,
    ) -> Option<Packet> {
        let mut start = self.lookup_leaf(level, prio);
        let mut cur = start;
        let (slot, pkt) = loop {
            let slot = cur?;
            if self.leaf_qlen(slot) > 0 {
                if let Some((Some(pkt), _)) = self.leaf_op(slot, drops, |q, d| q.dequeue(now, d)) {
                    break (slot, pkt);
                }
                if self.leaf_qlen(slot) > 0 {
                    // A shaping child held its frames back: try the next.
                    if !self.cl(slot).non_work_conserving {
                        self.cl_mut(slot).non_work_conserving = true;
                        if !self.non_wc.contains(&slot) {
                            self.non_wc.push(slot);
                        }
                    }
                    self.next_in_drr(slot, level, prio);
                    cur = self.lookup_leaf(level, prio);
                    if cur == start {
                        return None;
                    }
                    continue;
                }
                // Otherwise the child dropped its last frames (AQM at
                // dequeue); like the kernel's qlen_notify, deactivate.
            }
            // An empty leaf (drops inside the child, or a graft): deactivate
            // and skip it.
            self.deactivate(slot);
            if self.row_mask[level] & (1 << prio) == 0 {
                return None;
            }
            let next = self.lookup_leaf(level, prio);
            if cur == start {
                start = next;
            }
            cur = next;
        };
        let (len, segs) = (pkt.len as u64, pkt.segs() as u64);
        let cl = self.cl_mut(slot);
        cl.bytes += len;
        cl.packets += segs;
        cl.deficit[level] -= len as i64;
        if cl.deficit[level] < 0 {
            cl.deficit[level] += cl.quantum;
            self.next_in_drr(slot, level, prio);
        }
        if self.leaf_qlen(slot) == 0 {
            self.deactivate(slot);
        }
        self.charge_class(slot, level, len, segs);
        Some(pkt)
    }

    pub(super) fn dequeue_inner(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        if let Some(p) = self.direct.pop_front() {
            self.qlen -= 1;
            self.backlog -= p.len as u64;
            return Some(p);
        }
        if self.qlen == 0 {
            return None;
        }
        self.now = now.nanos() as i64;
        let mut next_event = self.now + 5 * NS_PER_SEC as i64;
        for level in 0..MAXDEPTH {
            let mut event = self.near_ev_cache[level];
            if self.now >= event {
                event = self
                    .do_events(level)
                    .unwrap_or(self.now + NS_PER_SEC as i64);
                self.near_ev_cache[level] = event;
            }
            next_event = next_event.min(event);
            for prio in bits(self.row_mask[level]) {
                if let Some(p) = self.dequeue_tree(prio, level, now, drops) {
                    return Some(p);
                }
            }
        }
        self.stalled = true;
        self.watchdog = Instant::from_nanos(next_event.max(self.now) as u64);
        None
    }
}
