//! The deficit round robin that DRR and ETS's bandwidth-sharing bands share
//! (net/sched/sch_drr.c `drr_dequeue`, net/sched/sch_ets.c
//! `ets_qdisc_dequeue`, the same loop in both): an active list of the
//! classes whose child holds frames, in the order they became backlogged;
//! a class joins its tail with its deficit set to its quantum. The head
//! class peeks its child: a head frame no longer than its deficit is taken
//! (the deficit pays for it; a child left empty leaves the list); else the
//! class earns another quantum and moves to the tail. A child that shows no
//! frame while it holds some (a shaper below, `qdisc_warn_nonwc`) stops the
//! round: nothing is sent, as in the kernel. A child emptied by its own
//! drops at peek leaves the list (the kernel's `qlen_notify`). The list is
//! a ring of class keys whose capacity grows to the number of classes once,
//! so the packet path does not allocate.

use super::Qdisc;
use crate::packet::{Drops, Packet};
use crate::time::Instant;
use std::collections::VecDeque;

/// A class that takes part in the round robin.
pub(crate) trait RoundClass {
    /// Its child, quantum and deficit.
    fn member(&mut self) -> Member<'_>;
}

/// What a class in the round robin exposes: its child, quantum and
/// deficit.
pub(crate) struct Member<'a> {
    /// The class's qdisc.
    pub child: &'a mut dyn Qdisc,
    /// Bytes the class may send per round (`cl->quantum`).
    pub quantum: u32,
    /// Bytes it may still send in this round (`cl->deficit`).
    pub deficit: &'a mut u32,
}

/// The active list (`q->active`) of classes keyed by `K`.
#[derive(Debug)]
pub(crate) struct Rounds<K> {
    active: VecDeque<K>,
}

impl<K: Copy + Eq> Rounds<K> {
    /// An empty list.
    pub fn new() -> Self {
        Rounds {
            active: VecDeque::new(),
        }
    }

    /// `cl_is_active`.
    fn contains(&self, k: K) -> bool {
        self.active.contains(&k)
    }

    /// Class `k` on the list exactly while its child `m` holds frames: it
    /// joins the tail if the child holds some and it is not on the list
    /// (the enqueue's `list_add_tail`), it leaves if the child holds none
    /// (`qlen_notify`'s `list_del_init`).
    pub fn sync(&mut self, k: K, m: Member<'_>) {
        let on = self.contains(k);
        if m.child.qlen() > 0 && !on {
            self.join(k, m);
        } else if m.child.qlen() == 0 && on {
            self.leave(k);
        }
    }

    /// `list_add_tail(&cl->alist, &q->active)` with `cl->deficit =
    /// cl->quantum`: class `k`, not on the list, joins its tail.
    pub fn join(&mut self, k: K, m: Member<'_>) {
        *m.deficit = m.quantum;
        self.active.push_back(k);
    }

    /// `list_del_init(&cl->alist)`: class `k` leaves the list, if on it.
    pub fn leave(&mut self, k: K) {
        if let Some(i) = self.active.iter().position(|&a| a == k) {
            self.active.remove(i);
        }
    }

    /// Every class leaves the list (`reset`).
    pub fn clear(&mut self) {
        self.active.clear();
    }

    /// The keys on the list, head first.
    pub fn iter(&self) -> impl Iterator<Item = K> + '_ {
        self.active.iter().copied()
    }

    /// The deficit round robin's next frame and its class, of `classes`,
    /// where `index` finds a key's class (`None` for a class that is gone,
    /// which leaves the list).
    pub fn dequeue<C: RoundClass>(
        &mut self,
        classes: &mut [C],
        index: impl Fn(&[C], K) -> Option<usize>,
        now: Instant,
        drops: &mut Drops,
    ) -> Option<(K, Packet)> {
        loop {
            let k = *self.active.front()?;
            let Some(i) = index(classes, k) else {
                self.active.pop_front();
                continue;
            };
            let Member {
                child,
                quantum,
                deficit,
            } = classes[i].member();
            match child.peek(now, drops).map(|p| p.len) {
                None if child.qlen() == 0 => {
                    self.active.pop_front();
                }
                None => return None,
                Some(len) if len <= *deficit => {
                    *deficit -= len;
                    let pkt = child.dequeue(now, drops);
                    if child.qlen() == 0 {
                        self.active.pop_front();
                    }
                    return pkt.map(|p| (k, p));
                }
                Some(_) => {
                    *deficit = deficit.wrapping_add(quantum);
                    self.active.rotate_left(1);
                }
            }
        }
    }
}
