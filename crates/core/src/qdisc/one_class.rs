//! The one fixed class `X:1` of the qdiscs that wrap a single child (TBF,
//! net/sched/sch_tbf.c, and RED, net/sched/sch_red.c): their
//! `Qdisc_class_ops` have no `change` or `delete` (tc_ctl_tclass answers
//! EOPNOTSUPP), `find` answers 1 for any minor of the qdisc's major,
//! `graft` swaps the child (the noop qdisc where none is given) and
//! `dump_class` reports the child as the class's leaf. A kind that says
//! where its child and its ctx are (`OneClass`) gets those class
//! operations (`Classful`) from here; the dump of that class and of the
//! child (an invisible default bfifo, handle 0, shows as the class's leaf
//! queue) is here too, so both kinds share it.

use super::dump::{lift_hidden_child, QueueOccupancy};
use super::{noop::Noop, Refusal};
use super::{tc_h_major, tc_h_minor, ClassDump, Errno, Handle, Qdisc, QdiscDump, QdiscStats};
use super::{ClassOptions, Classful, QdiscCtx};
use crate::handle::tc_h_make;
use crate::packet::Drops;

/// A qdisc with one fixed class holding its one child: what it must say,
/// and what it may add, for the class operations it gets (`Classful`).
pub trait OneClass {
    /// Its kind (`TCA_KIND`), for the refusals.
    const KIND: &'static str;
    /// Whether its dump lists the class (SFB's `sfb_dump_class` answers
    /// ENOSYS: the class exists, `tc class show` lists it not).
    const DUMPS_CLASS: bool = true;
    /// Its ctx (handle, device).
    fn ctx(&self) -> &QdiscCtx;
    /// Its child.
    fn child(&mut self) -> &mut Box<dyn Qdisc>;
    /// Called after a graft put a new child in the class (TBF forgets the
    /// throttle it computed for the old one).
    fn grafted(&mut self) {}
    /// The warnings of its last change (`Classful::take_warnings`).
    fn warnings(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// `tc class add|change|del` answer EOPNOTSUPP; `find` (`tbf_find`,
/// `red_find`) answers the one class for any minor of the qdisc's major;
/// `graft` swaps the child and returns the one it replaces with its frames
/// (the caller moves them on or drops them); a deleted child leaves the
/// noop qdisc, which drops every frame until a qdisc is added.
impl<T: OneClass> Classful for T {
    fn add_class(&mut self, _: Handle, _: Handle, _: &ClassOptions) -> Result<(), Refusal> {
        Err(refuse(T::KIND))
    }

    fn change_class(&mut self, _: Handle, _: &ClassOptions) -> Result<(), Refusal> {
        Err(refuse(T::KIND))
    }

    fn delete_class(&mut self, _: Handle, _: &mut Drops) -> Result<(), Refusal> {
        Err(refuse(T::KIND))
    }

    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        check_graft(T::KIND, self.ctx().handle, classid)?;
        let old = std::mem::replace(self.child(), child);
        self.grafted();
        Ok(Some(old))
    }

    fn child_mut(&mut self, _: Handle) -> Option<&mut Box<dyn Qdisc>> {
        Some(self.child())
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        vec![self.child()]
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx().child(handle, parent)
    }

    fn find_class(&self, classid: Handle) -> Handle {
        find(self.ctx().handle, classid)
    }

    fn undumped_class(&self, classid_asked: Handle) -> bool {
        !T::DUMPS_CLASS && classid_asked == classid(self.ctx().handle)
    }

    fn after_delete(&self, _: Handle) -> Box<dyn Qdisc> {
        after_delete(self.ctx().handle)
    }

    fn take_warnings(&mut self) -> Vec<String> {
        self.warnings()
    }
}

/// The refusal of `tc class add|change|del` on a `kind` qdisc's one class.
pub fn refuse(kind: &str) -> Refusal {
    Refusal::bare(Errno::EOPNOTSUPP).below(format!(
        "{kind} has a single fixed class :1; attach a qdisc to it with \
         `tc qdisc add ... parent <{kind} handle>:1 ...`"
    ))
}

/// The one class of the qdisc `handle`: `handle:1`.
pub fn classid(handle: Handle) -> Handle {
    tc_h_make(tc_h_major(handle), 1)
}

/// `find`: any minor of the qdisc's major is the one class (the child
/// keeps the parent id it was added with); another major is left as is.
pub fn find(handle: Handle, classid_asked: Handle) -> Handle {
    if tc_h_major(classid_asked) == tc_h_major(handle) {
        classid(handle)
    } else {
        classid_asked
    }
}

/// Whether a child may be grafted under `classid` of the `kind` qdisc
/// `handle`: only under its own major.
pub fn check_graft(kind: &str, handle: Handle, classid_asked: Handle) -> Result<(), Refusal> {
    if tc_h_major(classid_asked) == tc_h_major(handle) {
        return Ok(());
    }
    let major = tc_h_major(handle);
    Err(Refusal::new(
        Errno::EINVAL,
        format!(
            "class {:x}:{:x} is not a class of {kind} {major:x}: (use parent {major:x}:1).",
            tc_h_major(classid_asked),
            tc_h_minor(classid_asked),
        ),
    ))
}

/// What `graft` with no new qdisc leaves in the class: the noop qdisc,
/// which drops every frame until a qdisc is added.
pub fn after_delete(handle: Handle) -> Box<dyn Qdisc> {
    Box::new(Noop::new(classid(handle)))
}

/// The dump of the one class of the `kind` qdisc `handle` holding `child`
/// (already dumped), with no counters of its own (the class ops have no
/// `dump_stats`). Returns the class and the children the qdisc's dump
/// lists; a default child (handle 0) is not listed, its frames are
/// appended to `occupancy` as the class's leaf queue.
pub fn dump(
    kind: &str,
    handle: Handle,
    child: QdiscDump,
    occupancy: &mut Vec<QueueOccupancy>,
) -> (ClassDump, Vec<QdiscDump>) {
    let classid = classid(handle);
    let class = ClassDump {
        kind: kind.into(),
        classid,
        parent: handle,
        leaf: (child.handle != 0).then_some(child.handle),
        stats: Some(QdiscStats::default()),
        ..ClassDump::default()
    };
    let children = if child.handle != 0 {
        vec![child]
    } else {
        occupancy.extend(lift_hidden_child(child, classid));
        Vec::new()
    };
    (class, children)
}
