//! HTB's class management (sch_htb.c `htb_change_class`, `htb_delete`,
//! `htb_graft`, `htb_dump_class`, `htb_dump_class_stats`) and its filter
//! chains (`htb_tcf_block`): classes are added under the qdisc or an inner
//! class (a leaf given a child becomes inner, its queue purged; an inner
//! class losing its last child becomes a leaf again), changed, deleted,
//! given another leaf qdisc, and dumped with their typed options and
//! extended statistics.

use super::class::{Class, Mode};
use super::options::HtbClassOptions;
use super::{Htb, MAXDEPTH};
use crate::packet::filter::FilterChain;
use crate::packet::Drops;
use crate::qdisc::dump::Xstats;
use crate::qdisc::fifo::{Fifo, FifoKind};
use crate::qdisc::htb::HtbXstats;
use crate::qdisc::tbf::ns_to_ticks;
use crate::qdisc::{
    tc_h_major, tc_h_make, tc_h_minor, ClassDump, ClassOptions, Classful, Errno, FilterHost,
    Handle, Qdisc, QdiscCtx, QdiscStats, Refusal, TC_H_ROOT,
};

fn fmt_classid(h: Handle) -> String {
    format!("{:x}:{:x}", tc_h_major(h), tc_h_minor(h))
}

/// The `tc_htb_opt` of a class request: `htb_change_class` refuses a
/// request without one, or with a zero rate or ceil (`-EINVAL`).
fn class_options(options: &ClassOptions) -> Result<&HtbClassOptions, Refusal> {
    match options {
        ClassOptions::Htb(o) if o.rate.rate != 0 && o.ceil.rate != 0 => Ok(o),
        ClassOptions::Htb(_) | ClassOptions::None => Err(Refusal::bare(Errno::EINVAL)
            .beside_stop("an htb class needs a rate and a ceil above 0")),
        _ => Err(Refusal::new(
            Errno::EINVAL,
            "htb: class options of another kind.",
        )),
    }
}

impl Htb {
    /// Normalises a class id given with major 0 (`:10`) to ours.
    fn full_id(&self, h: Handle) -> Handle {
        if tc_h_major(h) == 0 {
            tc_h_make(tc_h_major(self.ctx.handle), tc_h_minor(h))
        } else {
            h
        }
    }

    /// One class as `tc -s -d class show` prints it; `leaf` is the handle
    /// of its qdisc when that is visible (non-zero).
    pub(super) fn class_dump(&self, cl: &Class, leaf: Option<Handle>) -> ClassDump {
        let (qlen, backlog) = cl.leaf.as_ref().map_or((0, 0), |q| (q.qlen(), q.backlog()));
        // htb_dump_class_stats: the buckets as `__s32` psched ticks.
        let ticks = |ns| {
            let t = ns_to_ticks(ns).clamp(i64::from(i32::MIN), i64::from(i32::MAX));
            i32::try_from(t).unwrap_or_default()
        };
        let (tokens, ctokens) = (ticks(cl.tokens), ticks(cl.ctokens));
        ClassDump {
            kind: "htb".into(),
            classid: cl.classid,
            parent: cl.parent.map_or(TC_H_ROOT, |p| self.cl(p).classid),
            leaf,
            options: ClassOptions::Htb(cl.dumped_options()),
            stats: Some(QdiscStats {
                bytes: cl.bytes,
                packets: cl.packets,
                drops: cl.drops,
                overlimits: cl.overlimits,
                backlog,
                qlen,
                ..QdiscStats::default()
            }),
            queue: QdiscStats::default(),
            xstats: Some(Xstats::HtbClass(HtbXstats {
                lends: cl.lends,
                borrows: cl.borrows,
                giants: 0,
                tokens,
                ctokens,
            })),
        }
    }
}

impl Classful for Htb {
    fn flush_freed(&mut self, drops: &mut Drops) {
        self.flush_purged(drops);
    }

    fn add_class(
        &mut self,
        classid: Handle,
        parent: Handle,
        options: &ClassOptions,
    ) -> Result<(), Refusal> {
        let classid = self.full_id(classid);
        let major = tc_h_major(self.ctx.handle);
        // `htb_change_class`: any classid of this qdisc's major, minor 0
        // included (tc shows class X:0 as "X:").
        if classid == 0 || tc_h_major(classid) != major {
            return Err(Refusal::new(
                Errno::EINVAL,
                format!(
                    "classid {} does not belong to htb {major:x}: (use classid {major:x}:MINOR with MINOR 0..ffff).",
                    fmt_classid(classid)
                ),
            ));
        }
        if self.find(classid).is_some() {
            return Err(Refusal::bare(Errno::EEXIST).beside_stop(format!(
                "class {} already exists; use `tc class change` to modify it",
                fmt_classid(classid)
            )));
        }
        if parent != TC_H_ROOT && tc_h_major(parent) != major && tc_h_major(parent) != 0 {
            return Err(Refusal::new(
                Errno::EINVAL,
                format!(
                    "parent {:x}: is not this htb ({major:x}:).",
                    tc_h_major(parent)
                ),
            ));
        }
        // `htb_find(parentid)`: a parent that does not exist makes this a
        // root class, as in the kernel; "parent X:" names the root unless a
        // class X:0 exists.
        let parent_slot = if parent == TC_H_ROOT {
            None
        } else {
            let p = self.full_id(parent);
            let found = self.find(p);
            if found.is_none() && tc_h_minor(p) != 0 {
                self.warnings.push(format!(
                    "parent class {} does not exist: class {} is a root class (as the kernel makes it)",
                    fmt_classid(p),
                    fmt_classid(classid)
                ));
            }
            found
        };
        let opts = class_options(options)?;
        if let Some(gp) = parent_slot.and_then(|p| self.cl(p).parent) {
            if self.cl(gp).level < 2 {
                return Err(Refusal::new(
                    Errno::EINVAL,
                    "sch_htb: tree is too deep (HTB allows 8 levels: a root class, 6 inner levels and leaves).",
                ));
            }
        }
        self.resync();
        if let Some(p) = parent_slot {
            if self.cl(p).level == 0 {
                // Turn the parent leaf into an inner class.
                self.purge_leaf(p);
                self.deactivate(p);
                if self.cl(p).mode != Mode::CanSend {
                    self.remove_from_wait_tree(p);
                    self.cl_mut(p).mode = Mode::CanSend;
                }
                let level = self.cl(p).parent.map_or(MAXDEPTH, |gp| self.cl(gp).level) - 1;
                let cl = self.cl_mut(p);
                cl.level = level;
                cl.leaf = None;
                cl.non_work_conserving = false;
                for f in cl.feeds.iter_mut() {
                    f.clear();
                }
            }
        }
        let leaf = Fifo::new(FifoKind::Pfifo, self.ctx.child(0, classid));
        let mut cl = Class::new(
            classid,
            parent_slot,
            Box::new(leaf),
            self.clock.nanos() as i64,
        );
        self.warnings.extend(cl.apply(opts, self.r2q));
        cl.tokens = cl.buffer;
        cl.ctokens = cl.cbuffer;
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.classes[s] = Some(cl);
                s
            }
            None => {
                self.classes.push(Some(cl));
                self.classes.len() - 1
            }
        };
        self.ids.insert(classid, slot);
        // htb_change_class: qdisc_class_hash_insert, then _grow.
        self.clhash.insert(classid);
        self.clhash.grow();
        if let Some(p) = parent_slot {
            self.cl_mut(p).children += 1;
        }
        self.stalled = false;
        Ok(())
    }

    fn change_class(&mut self, classid: Handle, options: &ClassOptions) -> Result<(), Refusal> {
        let classid = self.full_id(classid);
        let slot = self.find(classid).ok_or_else(|| {
            Refusal::bare(Errno::ENOENT).beside_stop(format!(
                "class {} does not exist; use `tc class add`",
                fmt_classid(classid)
            ))
        })?;
        let opts = class_options(options)?;
        let r2q = self.r2q;
        let warning = self.cl_mut(slot).apply(opts, r2q);
        self.warnings.extend(warning);
        self.stalled = false;
        Ok(())
    }

    /// `htb_change_class` attaches `TCA_RATE` to the class.
    fn class_bstats(&self, classid: Handle) -> Option<(u64, u64)> {
        let cl = self.cl(self.find(self.full_id(classid))?);
        Some((cl.bytes, cl.packets))
    }

    fn delete_class(&mut self, classid: Handle, drops: &mut Drops) -> Result<(), Refusal> {
        let classid = self.full_id(classid);
        let slot = self.find(classid).ok_or_else(|| {
            Refusal::bare(Errno::ENOENT)
                .beside_stop(format!("class {} does not exist", fmt_classid(classid)))
        })?;
        if self.cl(slot).children > 0 {
            return Err(
                Refusal::new(Errno::EBUSY, "HTB class in use.").below(format!(
                    "class {} has child classes; delete them first",
                    fmt_classid(classid)
                )),
            );
        }
        self.resync();
        let parent = self.cl(slot).parent;
        let last_child =
            self.cl(slot).level == 0 && parent.is_some_and(|p| self.cl(p).children <= 1);
        self.purge_leaf(slot);
        self.flush_purged(drops);
        self.ids.remove(&classid);
        self.clhash.remove(classid);
        if let Some(p) = parent {
            self.cl_mut(p).children -= 1;
        }
        self.deactivate(slot);
        if self.cl(slot).mode != Mode::CanSend {
            self.remove_from_wait_tree(slot);
        }
        if let (true, Some(p)) = (last_child, parent) {
            // htb_parent_to_leaf: the parent becomes a leaf with a new pfifo.
            if self.cl(p).mode != Mode::CanSend {
                self.remove_from_wait_tree(p);
            }
            let ctx = self.ctx.child(0, self.cl(p).classid);
            let t_c = self.clock.nanos() as i64;
            let cl = self.cl_mut(p);
            cl.level = 0;
            for f in cl.feeds.iter_mut() {
                f.clear();
            }
            cl.leaf = Some(Box::new(Fifo::new(FifoKind::Pfifo, ctx)));
            cl.deficit = [0; MAXDEPTH];
            cl.tokens = cl.buffer;
            cl.ctokens = cl.cbuffer;
            cl.t_c = t_c;
            cl.mode = Mode::CanSend;
        }
        self.classes[slot] = None;
        self.free_slots.push(slot);
        self.stalled = false;
        Ok(())
    }

    /// Replaces a leaf's qdisc. The old one is returned with its frames
    /// (the caller moves them on with `drain_all` or drops them).
    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        let classid = self.full_id(classid);
        let slot = self.find(classid).ok_or_else(|| {
            Refusal::new(
                Errno::ENOENT,
                format!(
                    "class {} does not exist (add it with `tc class add` first).",
                    fmt_classid(classid)
                ),
            )
        })?;
        if self.cl(slot).level != 0 {
            return Err(Refusal::new(
                Errno::EINVAL,
                format!(
                    "class {} is an inner class (it has child classes); qdiscs attach to leaf classes only.",
                    fmt_classid(classid)
                ),
            ));
        }
        self.dirty = true;
        let cl = self.cl_mut(slot);
        cl.non_work_conserving = false;
        Ok(cl.leaf.replace(child))
    }

    fn child_mut(&mut self, classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        let slot = self.find(self.full_id(classid))?;
        self.dirty = true;
        self.cl_mut(slot).leaf.as_mut()
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        self.dirty = true;
        self.classes
            .iter_mut()
            .flatten()
            .filter_map(|c| c.leaf.as_mut())
            .collect()
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx.child(handle, parent)
    }

    fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

impl FilterHost for Htb {
    fn filter_qdisc(&self) -> Handle {
        self.ctx.handle
    }

    /// The qdisc's chain (`parent 1:` or none) or a class's (`parent 1:1`,
    /// used when classification reaches that inner class).
    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        let major = tc_h_major(self.ctx.handle);
        match parent {
            None => Ok(&mut self.filters),
            Some(p) if p == TC_H_ROOT || p == self.ctx.handle => Ok(&mut self.filters),
            Some(p) => {
                let p = self.full_id(p);
                if tc_h_major(p) != major {
                    return Err(Refusal::new(
                        Errno::EINVAL,
                        format!(
                            "filter parent {} is not this htb ({major:x}:).",
                            fmt_classid(p)
                        ),
                    ));
                }
                let slot = self.find(p).ok_or_else(|| {
                    Refusal::new(
                        Errno::ENOENT,
                        format!(
                            "filter parent class {} does not exist (add the class first).",
                            fmt_classid(p)
                        ),
                    )
                })?;
                Ok(&mut self.cl_mut(slot).filters)
            }
        }
    }
}
