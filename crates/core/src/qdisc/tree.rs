//! The qdisc tree of one emulated device (one direction of the link), edited
//! by tc commands with the kernel's rules (`tc_modify_qdisc`, `tc_get_qdisc`,
//! `tc_ctl_tclass` in net/sched/sch_api.c).
//!
//! Design: `QdiscTree` owns the root qdisc and *is* a `Qdisc` itself,
//! delegating every datapath call to the root; `link::Path` holds one and
//! runs it like any other discipline, and hands it to tc requests as it is,
//! e.g. `path.edit_qdisc(now, |tree, t, drops| tree.apply(&cmd, t, drops))`.
//!
//! Rules carried over from the kernel:
//! * A new device has its default qdisc with handle `0:` at the root
//!   (pfifo_fast, or `default_qdisc`), or mq with one default child per TX
//!   queue on a multi-queue device.
//! * Handles not given are allocated `8001:`, `8002:`, ... (kernel's
//!   `qdisc_alloc_handle`; the counter only moves forward, skips handles the
//!   device uses, and moves on even if the qdisc is then refused). The
//!   kernel's counter is one for the machine; here one for the link, both
//!   devices sharing it (`AutoHandles`).
//! * `add` = create + exclusive, `replace` = create + replace, `change` = no
//!   flags, `link` = replace only; the default (handle 0) qdisc counts as
//!   absent, so `add root` works on a fresh device and fails with "Exclusivity
//!   flag on, cannot modify." once a root was added.
//! * `del root` restores the default root; deleting a qdisc under a class
//!   attaches the default child there (the device default under mq, a pfifo
//!   under other classful parents).
//!
//! Deviations, chosen for an emulator: a replaced or deleted qdisc's frames
//! are not freed as in the kernel but moved on, so a switch loses nothing in
//! flight: the old root's frames go into the new root; the frames of a qdisc
//! taken out from under a class are enqueued again at the root, which
//! classifies them anew (so every ancestor accounts for them). Frames the
//! receiver refuses are counted as drops. Moving an existing qdisc to another
//! parent (`replace ... handle H:` where `H:` lives elsewhere) is refused.
//!
//! Frames the driver refused wait in the path's requeue slot, which the
//! kernel keeps on the root qdisc (`gso_skb`); they survive a root switch
//! (the kernel frees them with the old root) and count in whichever root
//! the tree dumps, whose `requeues` start from zero (`requeue::RequeueSlot`).
//!
//! A command that fails leaves the tree untouched: new qdiscs are built before
//! anything is swapped, and disciplines apply `change` atomically.
use crate::dir::Dir;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

use super::estimator::{Estimators, RateEstimator, Target};
use super::kinds;
use super::request::{Object, Options, Request, Verb};
use super::requeue::RequeueSlot;
use super::{
    seed_for, tc_h_make, tc_h_minor, Classful, Errno, FilterHost, FlowListing, Handle, Qdisc,
    QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, Refusal, Verdict, TC_H_ROOT,
};
use crate::handle::{qdisc_handle, tc_handle};
use crate::packet::filter::Filter;
use crate::packet::{Drops, Packet};
use crate::time::Instant;

/// The kernel's counter of automatic qdisc handles (`qdisc_alloc_handle`'s
/// `static u32 autohandle`, net/sched/sch_api.c): one for the whole
/// machine, so the devices of one link share it (each clone shares the
/// counter). It holds the last major handed out, from 8000: (none yet);
/// the next is the first after it that the device does not use.
#[derive(Clone, Debug)]
pub struct AutoHandles(Arc<AtomicU16>);

impl Default for AutoHandles {
    /// A fresh counter: the first automatic handle is 8001:.
    fn default() -> Self {
        AutoHandles(Arc::new(AtomicU16::new(0x8000)))
    }
}

impl PartialEq for AutoHandles {
    /// The counter is the machine's state, not a property of a device: any
    /// two compare equal.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for AutoHandles {}

impl AutoHandles {
    /// Takes the next major after the last one handed out (after fffe:
    /// comes 8000:) for which `free` holds, as the kernel's loop does;
    /// None when all 32,768 are taken. The counter moves on with the
    /// allocation, whether or not the qdisc is then created (as the
    /// kernel's static does).
    fn alloc(&self, free: impl Fn(u16) -> bool) -> Option<u16> {
        // ffff: is TC_H_ROOT's major: the counter wraps to 8000: instead.
        let step = |m: u16| if m >= 0xFFFE { 0x8000 } else { m + 1 };
        loop {
            let last = self.0.load(Ordering::Relaxed);
            let mut major = last;
            let found = (0..0x8000).find_map(|_| {
                major = step(major);
                free(major).then_some(major)
            })?;
            // Another device's tree took a handle meanwhile: start again
            // from it (the kernel's RTNL lock serializes the two).
            if self
                .0
                .compare_exchange(last, found, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return Some(found);
            }
        }
    }
}

/// What the kernel knows about the device below the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevSpec {
    /// The device (direction) the tree is on.
    pub dev: Dir,
    /// `dev->tx_queue_len`: default limits of pfifo_fast, pfifo, ...
    pub txqueuelen: u32,
    /// Device MTU (`psched_mtu` = MTU + 14).
    pub mtu: u32,
    /// TX queues: 1 gives the default qdisc at the root, more give mq.
    pub tx_queues: u16,
    /// `net.core.default_qdisc` (a `default_leaf` kind of `kinds`).
    pub default_qdisc: String,
    /// The kinds qdiscs on this device are built from.
    pub kinds: &'static [kinds::KindEntry],
    /// Seed every qdisc created here derives its perturbation from.
    pub seed: u64,
    /// The automatic handle counter, shared by the link's devices.
    pub autohandles: AutoHandles,
}

impl DevSpec {
    /// A single-queue TAP with the kinds of `kinds`: txqueuelen 1000, MTU
    /// 1500, pfifo_fast.
    pub fn new(dev: Dir, kinds: &'static [kinds::KindEntry]) -> DevSpec {
        DevSpec {
            dev,
            txqueuelen: 1000,
            mtu: 1500,
            tx_queues: 1,
            default_qdisc: "pfifo_fast".into(),
            kinds,
            seed: 0,
            autohandles: AutoHandles::default(),
        }
    }

    /// `psched_mtu(dev)`: MTU plus the Ethernet header.
    pub fn psched_mtu(&self) -> u32 {
        self.mtu + 14
    }

    /// The ctx a qdisc attached directly to the device gets.
    pub fn ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        QdiscCtx {
            handle,
            parent,
            txqueuelen: self.txqueuelen,
            psched_mtu: self.psched_mtu(),
            seed: seed_for(self.seed, handle),
        }
    }

    fn validate(&self) -> Result<(), Refusal> {
        if !kinds::lookup(self.kinds, &self.default_qdisc).is_some_and(|k| k.default_leaf) {
            return Err(Refusal::new(
                Errno::EINVAL,
                format!(
                    "default qdisc \"{}\" is not allowed (use one of {})",
                    self.default_qdisc,
                    kinds::names(self.kinds, |k| k.default_leaf)
                ),
            ));
        }
        if !(1..=super::mq::MAX_QUEUES).contains(&self.tx_queues) {
            return Err(Refusal::new(
                Errno::EINVAL,
                format!(
                    "tx_queues {} is out of range (1..{})",
                    self.tx_queues,
                    super::mq::MAX_QUEUES
                ),
            ));
        }
        Ok(())
    }
}

/// The netlink flags a tc verb sends.
#[derive(Clone, Copy)]
struct NlmFlags {
    create: bool,
    excl: bool,
    replace: bool,
}

impl NlmFlags {
    fn of(verb: Verb) -> NlmFlags {
        let (create, excl, replace) = match verb {
            Verb::Add => (true, true, false),
            Verb::Replace => (true, false, true),
            Verb::Link => (false, false, true),
            Verb::Change | Verb::Delete | Verb::Show => (false, false, false),
        };
        NlmFlags {
            create,
            excl,
            replace,
        }
    }
}

/// A qdisc found in a dump: the class ids leading to it from the root.
struct Found<'d> {
    path: Vec<Handle>,
    dump: &'d QdiscDump,
}

impl<'d> Found<'d> {
    /// Path of the child attached at `classid` under this qdisc.
    fn child_path(&self, classid: Handle) -> Vec<Handle> {
        let mut p = self.path.clone();
        p.push(classid);
        p
    }
}

/// Pre-order search, root first (like `qdisc_lookup`).
fn find<'d>(d: &'d QdiscDump, handle: Handle) -> Option<Found<'d>> {
    if d.handle == handle {
        return Some(Found {
            path: Vec::new(),
            dump: d,
        });
    }
    d.children.iter().find_map(|c| {
        find(c, handle).map(|mut f| {
            f.path.insert(0, c.parent);
            f
        })
    })
}

/// The qdisc of `handle` in a dump, to write in.
fn find_mut(d: &mut QdiscDump, handle: Handle) -> Option<&mut QdiscDump> {
    if d.handle == handle {
        return Some(d);
    }
    d.children.iter_mut().find_map(|c| find_mut(c, handle))
}

/// The bytes and packets an estimator's target has sent, its qdisc found
/// at `path` below `root`.
fn bstats(root: &mut Box<dyn Qdisc>, target: Target, path: &[Handle]) -> Option<(u64, u64)> {
    let node = node_at(root, path)?;
    match target {
        Target::Qdisc(_) => {
            let c = node.counters();
            Some((c.bytes, c.packets))
        }
        Target::Class(_, classid) => node.as_classful()?.class_bstats(classid),
    }
}

/// `qdisc_create`'s refusal of an estimator `gen_new_estimator` refuses.
fn check_estimator(cmd: &Request) -> Result<(), Refusal> {
    match cmd.rate {
        Some(spec) => spec.check().map_err(|e| Refusal {
            message: Some("Failed to generate new estimator.".into()),
            ..e
        }),
        None => Ok(()),
    }
}

/// The live qdisc at `path` below `root`.
fn node_at<'a>(root: &'a mut Box<dyn Qdisc>, path: &[Handle]) -> Option<&'a mut Box<dyn Qdisc>> {
    let mut cur = root;
    for &classid in path {
        cur = cur.as_classful()?.child_mut(classid)?;
    }
    Some(cur)
}

fn classful_at<'a>(root: &'a mut Box<dyn Qdisc>, path: &[Handle]) -> Option<&'a mut dyn Classful> {
    node_at(root, path)?.as_classful()
}

/// `tc_new_tfilter`'s extack when the filter's parent qdisc is not there.
const PARENT_QDISC: &str = "Parent Qdisc doesn't exists.";

/// `qdisc_leaf`'s refusal of a parent without classes.
fn not_classful() -> Refusal {
    Refusal::new(Errno::EOPNOTSUPP, "Parent qdisc is not classful.")
}

/// `tc_get_qdisc`'s refusal to delete a qdisc of handle 0 (a default one).
fn handle_of_zero() -> Refusal {
    Refusal::new(Errno::ENOENT, "Cannot delete qdisc with handle of zero.")
}

/// A qdisc of the tree's dump that the tree no longer has (cannot happen:
/// the dump is taken within the same command).
fn vanished() -> Refusal {
    Refusal::new(Errno::ENOENT, "qdisc vanished while applying the command")
}

/// Where a new qdisc goes.
enum Slot {
    Root,
    Class {
        parent: Vec<Handle>,
        classid: Handle,
    },
}

/// The qdisc tree of one device.
pub struct QdiscTree {
    dev: DevSpec,
    root: Box<dyn Qdisc>,
    /// The frames the driver refused, as the root's counters show them.
    slot: RequeueSlot,
    /// The rate estimators of the device's qdiscs and classes.
    est: Estimators,
}

impl QdiscTree {
    /// A device with its default root qdisc.
    pub fn new(dev: DevSpec) -> Result<QdiscTree, Refusal> {
        dev.validate()?;
        let root = default_root(&dev);
        Ok(QdiscTree {
            dev,
            root,
            slot: RequeueSlot::default(),
            est: Estimators::default(),
        })
    }

    /// A device whose root is `root`, built outside tc (a discipline of
    /// one's own, a test's or a benchmark's); tc requests then edit it like
    /// any root. `dev` is taken as it is (`new` checks it against its
    /// kinds): where its kinds lack its default qdisc, a default child is
    /// pfifo_fast (`kinds::default_leaf`).
    pub fn with_root(dev: DevSpec, root: Box<dyn Qdisc>) -> QdiscTree {
        QdiscTree {
            dev,
            root,
            slot: RequeueSlot::default(),
            est: Estimators::default(),
        }
    }

    /// A frame of `len` bytes of TX queue `queue` (its index) was refused
    /// by the driver and parked in the requeue slot (`link::Path` holds
    /// the frame).
    pub fn requeued(&mut self, queue: usize, len: u32) {
        self.slot.requeued(queue, len);
        self.tell_requeued();
    }

    /// A parked frame was handed to the driver again.
    pub fn resent(&mut self, queue: usize, len: u32) {
        self.slot.resent(queue, len);
        self.tell_requeued();
    }

    /// A parked frame moved from TX queue `from` to `to`, the device's
    /// queue count having changed.
    pub fn requeued_moved(&mut self, from: usize, to: usize, len: u32) {
        self.slot.moved(from, to, len);
        self.tell_requeued();
    }

    /// Hands the slot's waiting frames to the qdisc of each TX queue
    /// (`Qdisc::set_requeued`): mq's children one queue each, any other
    /// root all of them.
    fn tell_requeued(&mut self) {
        let n = self.root.tx_queue_count();
        if n > 1 {
            for i in 0..n {
                let (frames, bytes) = self.slot.waiting(i);
                self.root.queue_set_requeued(i, frames, bytes);
            }
        } else {
            self.root
                .set_requeued(self.slot.frames(), self.slot.bytes());
        }
    }

    /// The root's dump with the requeue slot folded in.
    fn dump_with_slot(&self, mut d: QdiscDump) -> QdiscDump {
        self.slot.fold_into(&mut d, self.root.kind() == "mq");
        d
    }

    /// The device below the tree.
    pub fn dev(&self) -> &DevSpec {
        &self.dev
    }

    /// The root qdisc.
    pub fn root(&self) -> &dyn Qdisc {
        &*self.root
    }

    /// Refuses a request for the other device.
    pub fn check_dev(&self, dev: Option<Dir>) -> Result<(), Refusal> {
        match dev {
            Some(dev) if dev != self.dev.dev => Err(Refusal::new(
                Errno::EINVAL,
                format!(
                    "a command for dev {} reached the tree of dev {}",
                    dev.dev(),
                    self.dev.dev.dev()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Carries out one tc request at `now` and returns the extack warnings
    /// a successful change left (HTB quantum, TBF burst below the MTU), as
    /// the kernel words them; the front end prints them. (A `qdisc|class|
    /// filter show` is the front end's, printed from `dump` and `filters`.)
    /// Frames freed by the request go to `drops`. On error nothing has
    /// changed.
    pub fn apply(
        &mut self,
        cmd: &Request,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<Vec<String>, Refusal> {
        self.check_dev(cmd.dev)?;
        // The estimators' timers run on their own in the kernel: whatever
        // ended by now has run before a request reads or replaces them.
        if self.est.due(now) {
            self.run_estimators(now);
        }
        match (cmd.object, cmd.verb) {
            (Object::Filter, Verb::Show) => {
                return Err(Refusal::new(
                    Errno::EOPNOTSUPP,
                    "tc filter show is printed from the tree's filters by the tc front end",
                ))
            }
            (_, Verb::Show) => {
                return Err(Refusal::new(
                    Errno::EOPNOTSUPP,
                    "tc qdisc|class show is printed from the tree's dump by the tc front end",
                ))
            }
            (Object::Qdisc, Verb::Delete) => self.delete_qdisc(cmd, now, drops)?,
            (Object::Qdisc, _) => self.modify_qdisc(cmd, now, drops)?,
            (Object::Class, _) => self.modify_class(cmd, now, drops)?,
            (Object::Filter, Verb::Add | Verb::Replace) => self.add_filter(cmd, now)?,
            (Object::Filter, Verb::Delete) => self.delete_filters(cmd, now)?,
            (Object::Filter, _) => {
                return Err(Refusal::new(
                    Errno::EOPNOTSUPP,
                    "bloatbox supports tc filter add, del and show (no change/link)",
                ))
            }
        }
        // A qdisc the command made (a new root, an mq child) learns what
        // waits in the slot of its TX queue.
        self.tell_requeued();
        self.sync_estimators(now);
        Ok(self.take_warnings())
    }

    /// The warnings classful qdiscs left for the last command, as the
    /// kernel's extack warnings read (`sch_htb: ...`), one each.
    fn take_warnings(&mut self) -> Vec<String> {
        fn walk(q: &mut Box<dyn Qdisc>, out: &mut Vec<String>) {
            let kind = q.kind();
            let Some(cl) = q.as_classful() else { return };
            for w in cl.take_warnings() {
                let module = if w.starts_with("sch_") {
                    String::new()
                } else {
                    format!("sch_{kind}: ")
                };
                out.push(format!("{module}{w}"));
            }
            for c in cl.children_mut() {
                walk(c, out);
            }
        }
        let mut out = Vec::new();
        walk(&mut self.root, &mut out);
        out
    }

    /// `qdisc_alloc_handle`: the next automatic handle of the link's
    /// counter that this device (whose tree `d` is) does not use.
    fn alloc_handle(&self, d: &QdiscDump) -> Result<Handle, Refusal> {
        let free = |major: u16| find(d, tc_h_make(major, 0)).is_none();
        match self.dev.autohandles.alloc(free) {
            Some(major) => Ok(tc_h_make(major, 0)),
            None => Err(Refusal::new(
                Errno::ENOSPC,
                "no free automatic qdisc handle (8000:..fffe: all in use).",
            )),
        }
    }

    /// Checks that `p` is classful and has the class `classid` names
    /// (`qdisc_leaf`: `cops->find`); returns the qdisc attached there, if
    /// any, as `p`'s child.
    fn check_leaf<'d>(
        &mut self,
        p: &Found<'d>,
        classid: Handle,
    ) -> Result<Option<&'d QdiscDump>, Refusal> {
        let Some(cl) = classful_at(&mut self.root, &p.path) else {
            return Err(not_classful().below(format!(
                "{} {} has no classes to attach to",
                p.dump.kind,
                qdisc_handle(p.dump.handle)
            )));
        };
        let class = cl.find_class(classid);
        let child = p
            .dump
            .children
            .iter()
            .find(|c| cl.find_class(c.parent) == class);
        if !p.dump.classes.iter().any(|c| c.classid == class) && !cl.undumped_class(class) {
            return Err(
                Refusal::new(Errno::ENOENT, "Specified class not found.").below(format!(
                    "no class {} under {} {}",
                    tc_handle(classid),
                    p.dump.kind,
                    qdisc_handle(p.dump.handle)
                )),
            );
        }
        Ok(child)
    }

    /// `tc qdisc add|change|replace|link` (`tc_modify_qdisc`).
    fn modify_qdisc(
        &mut self,
        cmd: &Request,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let flags = NlmFlags::of(cmd.verb);
        let d = self.root.dump(now);
        let clid = cmd.parent.unwrap_or(0);
        let handle = cmd.handle.unwrap_or(0);
        let kind = cmd.kind.as_deref();
        let options = cmd.qdisc_options();

        // Either the qdisc to change (its path and dump) or where to create.
        let mut graft_on_change = false;
        let (slot, current): (Slot, Option<Found<'_>>) = if clid != 0 {
            let (slot, at) = if clid != TC_H_ROOT {
                let p = find(&d, clid & 0xFFFF_0000).ok_or_else(|| {
                    Refusal::new(Errno::ENOENT, "Failed to find specified qdisc.").below(format!(
                        "no qdisc {} for parent {}",
                        qdisc_handle(clid & 0xFFFF_0000),
                        tc_handle(clid)
                    ))
                })?;
                let at = self.check_leaf(&p, clid)?.map(|q| Found {
                    path: p.child_path(clid),
                    dump: q,
                });
                (
                    Slot::Class {
                        parent: p.path,
                        classid: clid,
                    },
                    at,
                )
            } else {
                let root = Found {
                    path: Vec::new(),
                    dump: &d,
                };
                (Slot::Root, Some(root))
            };
            // The default qdisc (handle 0) counts as absent.
            let q = at.filter(|q| q.dump.handle != 0);
            let same = q
                .as_ref()
                .is_some_and(|q| handle != 0 && q.dump.handle == handle);
            if same {
                (slot, q)
            } else if handle != 0 {
                if q.is_some() && !flags.replace {
                    return Err(Refusal::new(
                        Errno::EEXIST,
                        "NLM_F_REPLACE needed to override.",
                    ));
                }
                if let Some(elsewhere) = find(&d, handle) {
                    if flags.excl {
                        return Err(Refusal::new(
                            Errno::EEXIST,
                            "Exclusivity flag on, cannot override.",
                        ));
                    }
                    if kind.is_some_and(|k| k != elsewhere.dump.kind) {
                        return Err(Refusal::new(
                            Errno::EINVAL,
                            "Invalid qdisc name: must match existing qdisc.",
                        ));
                    }
                    return Err(Refusal::new(
                        Errno::EINVAL,
                        format!(
                            "qdisc {} already exists elsewhere in the tree; bloatbox does not \
                             move qdiscs between parents (delete it first)",
                            qdisc_handle(handle)
                        ),
                    ));
                }
                (slot, None)
            } else {
                match q {
                    None => (slot, None),
                    // Another kind without a handle: the kernel grafts a new
                    // qdisc in its place when the request may create (add,
                    // replace) and also for a bare change (no flags), which
                    // skips the NLM_F_CREATE check (`req_change`,
                    // `create_n_graft2` in tc_modify_qdisc).
                    Some(q) if kind.is_some_and(|k| k != q.dump.kind) => {
                        if flags.create && (flags.replace || flags.excl) {
                            (slot, None)
                        } else if !flags.create && !flags.replace && !flags.excl {
                            graft_on_change = true;
                            (slot, None)
                        } else {
                            (slot, Some(q))
                        }
                    }
                    Some(q) => (slot, Some(q)),
                }
            }
        } else {
            if handle == 0 {
                return Err(Refusal::new(Errno::EINVAL, "Handle cannot be zero.")
                    .below("give \"root\", \"parent M:m\" or \"handle M:\""));
            }
            let q = find(&d, handle).ok_or_else(|| {
                Refusal::new(Errno::ENOENT, "Specified qdisc not found.")
                    .below(format!("no qdisc {}", qdisc_handle(handle)))
            })?;
            (Slot::Root, Some(q))
        };

        if let Some(q) = current {
            // Change the parameters of an existing qdisc.
            if flags.excl {
                return Err(Refusal::new(
                    Errno::EEXIST,
                    "Exclusivity flag on, cannot modify.",
                ));
            }
            if kind.is_some_and(|k| k != q.dump.kind) {
                return Err(Refusal::new(
                    Errno::EINVAL,
                    "Invalid qdisc name: must match existing qdisc.",
                )
                .below(if handle == 0 {
                    format!(
                        "{} is a {}; use replace to swap kinds",
                        qdisc_handle(q.dump.handle),
                        q.dump.kind
                    )
                } else {
                    // tc_modify_qdisc (net/sched/sch_api.c): a request that
                    // names the handle of the qdisc in place changes that
                    // qdisc, replace or not.
                    format!(
                        "{h} is a {}, and a request naming handle {h} changes it, even \
                         replace; to swap kinds, replace without \"handle {h}\" (or with \
                         another handle), or delete it first",
                        q.dump.kind,
                        h = qdisc_handle(q.dump.handle),
                    )
                }));
            }
            // A request without options changes nothing of the qdisc's and
            // succeeds, whether or not the kind can change (`qdisc_change`
            // calls `ops->change` only for TCA_OPTIONS).
            let node = node_at(&mut self.root, &q.path).ok_or_else(vanished)?;
            if *options != QdiscOptions::None {
                node.change(options, now, drops)?;
            }
            // `qdisc_change` then replaces the estimator, ignoring its
            // errors ("change can't be undone"); a multi-queue root keeps
            // none.
            let mq_root = q.path.is_empty() && node.tx_queue_count() > 1;
            if let Some(spec) = cmd.rate.filter(|s| !mq_root && s.check().is_ok()) {
                let target = Target::Qdisc(q.dump.handle);
                let c = node.counters();
                let est = RateEstimator::new(spec, c.bytes, c.packets, now, self.est.get(target));
                self.est.set(target, q.path.clone(), est);
            }
            return Ok(());
        }

        // Create a new qdisc and graft it.
        if !flags.create && !graft_on_change {
            return Err(Refusal::new(
                Errno::ENOENT,
                "Qdisc not found. To create specify NLM_F_CREATE flag.",
            ));
        }
        let kind =
            kind.ok_or_else(|| Refusal::new(Errno::ENOENT, "Specified qdisc kind is unknown."))?;
        if kinds::lookup(self.dev.kinds, kind).is_none() {
            return Err(kinds::unknown_kind(self.dev.kinds, kind));
        }
        let new_handle = if handle != 0 {
            handle
        } else {
            self.alloc_handle(&d)?
        };
        let path = match slot {
            Slot::Root => {
                let ctx = self.dev.ctx(new_handle, TC_H_ROOT);
                let new = kinds::new_qdisc(kind, ctx, &self.dev, options)?;
                if cmd.rate.is_some() && new.tx_queue_count() > 1 {
                    return Err(Refusal::new(
                        Errno::EOPNOTSUPP,
                        "Cannot attach rate estimator to a multi-queue root qdisc.",
                    )
                    .below("put the estimators on mq's children (parent 1:1, 1:2, ...)"));
                }
                check_estimator(cmd)?;
                self.swap_root(new, now, drops);
                Vec::new()
            }
            Slot::Class { parent, classid } => {
                let cl = classful_at(&mut self.root, &parent).ok_or_else(not_classful)?;
                let ctx = cl.child_ctx(new_handle, classid);
                let new = kinds::new_qdisc(kind, ctx, &self.dev, options)?;
                check_estimator(cmd)?;
                let old = cl.graft(classid, new)?;
                self.requeue_at_root(old, now, drops);
                let mut path = parent;
                path.push(classid);
                path
            }
        };
        if let Some(spec) = cmd.rate {
            self.start_estimator(Target::Qdisc(new_handle), path, spec, now);
        }
        Ok(())
    }

    /// Attaches a new estimator (`gen_new_estimator`) to `target`, reached
    /// by `path`, on its counters as they stand.
    fn start_estimator(
        &mut self,
        target: Target,
        path: Vec<Handle>,
        spec: super::estimator::EstimatorSpec,
        now: Instant,
    ) {
        if let Some((bytes, packets)) = bstats(&mut self.root, target, &path) {
            let est = RateEstimator::new(spec, bytes, packets, now, self.est.get(target));
            self.est.set(target, path, est);
        }
    }

    /// Drops the estimators of qdiscs and classes a command removed
    /// (`gen_kill_estimator` in `qdisc_destroy` and the kinds'
    /// `destroy_class`) and follows those that moved.
    fn sync_estimators(&mut self, now: Instant) {
        if self.est.entries.is_empty() {
            return;
        }
        let d = self.root.dump(now);
        self.est.retain(|target| match target {
            Target::Qdisc(h) => find(&d, h).map(|f| f.path),
            Target::Class(h, classid) => find(&d, h)
                .filter(|f| f.dump.classes.iter().any(|c| c.classid == classid))
                .map(|f| f.path),
        });
    }

    /// Runs the estimators whose interval ended by `now` (`est_timer`),
    /// before the frame that found the clock past it is counted.
    fn run_estimators(&mut self, now: Instant) {
        let root = &mut self.root;
        self.est.entries.retain_mut(|e| {
            if e.est.next() > now {
                return true;
            }
            match bstats(root, e.target, &e.path) {
                Some((bytes, packets)) => {
                    e.est.run_until(now, bytes, packets);
                    true
                }
                None => false,
            }
        });
        self.est.reschedule();
    }

    /// The dump with each estimator's reading at `now` in the counters of
    /// its qdisc or class (`gnet_stats_copy_rate_est`).
    fn with_rates(&self, mut d: QdiscDump, now: Instant) -> QdiscDump {
        for e in &self.est.entries {
            let stats = match e.target {
                Target::Qdisc(h) => find_mut(&mut d, h).map(|q| &mut q.stats),
                Target::Class(h, classid) => find_mut(&mut d, h).and_then(|q| {
                    q.classes
                        .iter_mut()
                        .find(|c| c.classid == classid)
                        .and_then(|c| c.stats.as_mut())
                }),
            };
            if let Some(s) = stats {
                s.rate_est = Some(e.est.read_at(now, s.bytes, s.packets));
            }
        }
        d
    }

    /// `tc qdisc del` (`tc_get_qdisc` with RTM_DELQDISC).
    fn delete_qdisc(
        &mut self,
        cmd: &Request,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let d = self.root.dump(now);
        let clid = cmd.parent.unwrap_or(0);
        let handle = cmd.handle.unwrap_or(0);
        let (q, slot) = if clid != 0 {
            let (q, slot) = if clid != TC_H_ROOT {
                let p = find(&d, clid & 0xFFFF_0000).ok_or_else(|| {
                    Refusal::new(
                        Errno::ENOENT,
                        "Failed to find qdisc with specified classid.",
                    )
                    .below(format!("no qdisc {}", qdisc_handle(clid & 0xFFFF_0000)))
                })?;
                (
                    self.check_leaf(&p, clid)?,
                    Slot::Class {
                        parent: p.path,
                        classid: clid,
                    },
                )
            } else {
                (Some(&d), Slot::Root)
            };
            // A class whose qdisc is not listed (a default pfifo, the noop
            // qdisc) holds one with handle 0 in the kernel (qdisc_leaf);
            // netem's class without a child holds none (`netem_leaf`: NULL).
            let empty = match &slot {
                Slot::Class { parent, classid } => classful_at(&mut self.root, parent)
                    .is_some_and(|cl| cl.undumped_class(cl.find_class(*classid))),
                Slot::Root => false,
            };
            let q = match (q, &slot) {
                (Some(q), _) => q,
                (None, Slot::Class { .. }) if empty => {
                    return Err(Refusal::new(
                        Errno::ENOENT,
                        "Cannot find qdisc with specified handle.",
                    )
                    .below(format!("class {} holds no qdisc", tc_handle(clid))))
                }
                (None, Slot::Class { .. }) if handle != 0 => {
                    return Err(Refusal::new(Errno::EINVAL, "Invalid handle."))
                }
                (None, Slot::Class { .. }) => return Err(handle_of_zero()),
                (None, Slot::Root) => {
                    return Err(Refusal::new(
                        Errno::ENOENT,
                        "Cannot find specified qdisc on specified device.",
                    ))
                }
            };
            if handle != 0 && q.handle != handle {
                return Err(
                    Refusal::new(Errno::EINVAL, "Invalid handle.").below(format!(
                        "the qdisc there is {} {}, not {}",
                        q.kind,
                        qdisc_handle(q.handle),
                        qdisc_handle(handle)
                    )),
                );
            }
            (q, slot)
        } else {
            let q = find(&d, handle).ok_or_else(|| {
                Refusal::new(Errno::ENOENT, "Failed to find qdisc with specified handle.")
                    .below(format!("no qdisc {}", qdisc_handle(handle)))
            })?;
            (q.dump, Slot::Root)
        };
        if cmd.kind.as_deref().is_some_and(|k| k != q.kind) {
            return Err(Refusal::new(
                Errno::EINVAL,
                "Invalid qdisc name: must match existing qdisc.",
            )
            .below(format!("{} is a {}", qdisc_handle(q.handle), q.kind)));
        }
        if clid == 0 {
            return Err(Refusal::new(Errno::EINVAL, "Classid cannot be zero.")
                .below("say where it is: \"root\" or \"parent M:m\""));
        }
        if q.handle == 0 {
            return Err(handle_of_zero());
        }
        match slot {
            Slot::Root => {
                let new = default_root(&self.dev);
                self.swap_root(new, now, drops);
            }
            Slot::Class { parent, classid } => {
                let node = node_at(&mut self.root, &parent).ok_or_else(vanished)?;
                let cl = node.as_classful().ok_or_else(not_classful)?;
                let old = cl.ungraft(classid)?;
                self.requeue_at_root(old, now, drops);
            }
        }
        Ok(())
    }

    /// `tc class add|change|replace|del` (`tc_ctl_tclass`).
    fn modify_class(
        &mut self,
        cmd: &Request,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let d = self.root.dump(now);
        let mut portid = cmd.parent.unwrap_or(0);
        let mut clid = cmd.handle.unwrap_or(0);
        let mut qid = clid & 0xFFFF_0000;
        if portid != TC_H_ROOT {
            let qid1 = portid & 0xFFFF_0000;
            if qid != 0 && qid1 != 0 {
                if qid != qid1 {
                    return Err(Refusal::bare(Errno::EINVAL).below(format!(
                        "classid {} and parent {} belong to different qdiscs",
                        tc_handle(clid),
                        tc_handle(portid)
                    )));
                }
            } else if qid1 != 0 {
                qid = qid1;
            } else if qid == 0 {
                qid = d.handle;
            }
            if portid != 0 {
                portid = qid | tc_h_minor(portid) as u32;
            }
        } else if qid == 0 {
            qid = d.handle;
        }
        let q = find(&d, qid).ok_or_else(|| {
            Refusal::bare(Errno::ENOENT).below(format!(
                "no qdisc {} on dev {}",
                qdisc_handle(qid),
                self.dev.dev.dev()
            ))
        })?;
        if let Some(k) = cmd.kind.as_deref() {
            if k != q.dump.kind {
                return Err(Refusal::bare(Errno::EINVAL).below(format!(
                    "qdisc {} is {}, not {k}",
                    qdisc_handle(qid),
                    q.dump.kind
                )));
            }
        }
        if clid == 0 {
            if portid == TC_H_ROOT {
                clid = qid;
            }
        } else {
            clid = qid | tc_h_minor(clid) as u32;
        }
        let exists = clid != 0 && q.dump.classes.iter().any(|c| c.classid == clid);
        let (kind, path) = (q.dump.kind.clone(), q.path);
        let options = cmd.class_options();
        let cl = classful_at(&mut self.root, &path).ok_or_else(|| {
            Refusal::bare(Errno::EINVAL)
                .below(format!("{kind} {} has no classes", qdisc_handle(qid)))
        })?;
        let missing = || {
            Refusal::bare(Errno::ENOENT).below(format!(
                "no class {} under {kind} {}",
                tc_handle(clid),
                qdisc_handle(qid)
            ))
        };
        let add = |cl: &mut dyn Classful| {
            if clid == 0 {
                return Err(Refusal::bare(Errno::EINVAL)
                    .below("give the new class an id with \"classid M:m\""));
            }
            // No parent (0) means a top-level class, which the kernel's
            // disciplines treat like TC_H_ROOT.
            let parent = if portid == 0 { TC_H_ROOT } else { portid };
            cl.add_class(clid, parent, options)
        };
        // gen_new_estimator's checks come before the class changes.
        if cmd.rate.is_some() && cmd.verb != Verb::Delete {
            if let Err(e) = check_estimator(cmd) {
                return Err(Refusal::bare(e.errno));
            }
        }
        let result = match cmd.verb {
            Verb::Add if exists => Err(Refusal::bare(Errno::EEXIST).below(format!(
                "class {} exists; use \"tc class change\" or \"replace\"",
                tc_handle(clid)
            ))),
            Verb::Add => add(cl),
            Verb::Replace if !exists => add(cl),
            Verb::Change | Verb::Replace if exists => cl.change_class(clid, options),
            Verb::Delete if exists => cl.delete_class(clid, drops),
            Verb::Change | Verb::Delete => Err(missing()),
            Verb::Replace | Verb::Link | Verb::Show => {
                Err(Refusal::new(Errno::EOPNOTSUPP, "unsupported class verb"))
            }
        };
        // Frames a class operation purged (a leaf turned inner) are freed
        // now, not at the next enqueue or dequeue.
        cl.flush_freed(drops);
        result?;
        // A kind whose `change_class` reads TCA_RATE attaches (or
        // replaces, keeping its averages) the class's estimator.
        if let Some(spec) = cmd.rate.filter(|_| cmd.verb != Verb::Delete) {
            if let Some((bytes, packets)) = cl.class_bstats(clid) {
                let target = Target::Class(qid, clid);
                let est = RateEstimator::new(spec, bytes, packets, now, self.est.get(target));
                self.est.set(target, path, est);
            }
        }
        Ok(())
    }

    /// `tc filter add`: the filter goes to the block `filter_target` names.
    fn add_filter(&mut self, cmd: &Request, now: Instant) -> Result<(), Refusal> {
        let Options::Filter(filter) = &cmd.options else {
            return Err(Refusal::new(
                Errno::EINVAL,
                "tc filter add carries no filter",
            ));
        };
        self.filter_target(cmd, now, |host, _| host?.add_filter(filter.clone()))
    }

    /// `tc filter del dev X [parent P] [prio N]`: the filters of that prio
    /// (all without one) go.
    fn delete_filters(&mut self, cmd: &Request, now: Instant) -> Result<(), Refusal> {
        let prio = match cmd.options {
            Options::FilterPrio(prio) => prio,
            _ => None,
        };
        self.filter_target(cmd, now, |host, _| {
            match host?.chain_mut(cmd.parent)?.delete(prio) {
                0 if prio.is_some() => Err(Refusal::new(
                    Errno::ENOENT,
                    "Filter with specified priority/protocol not found.",
                )),
                _ => Ok(()),
            }
        })
    }

    /// `tc filter show dev X [parent P]` (`tc_dump_tfilter`): the qdisc
    /// the request names and a copy of its filters, which the front end
    /// prints.
    pub fn filters(&mut self, cmd: &Request, now: Instant) -> Result<FilterListing, Refusal> {
        self.check_dev(cmd.dev)?;
        if cmd.dev.is_none() {
            return Err(Refusal::new(
                Errno::EINVAL,
                "tc filter show needs \"dev left|right\"",
            ));
        }
        let mut listing = FilterListing {
            qdisc: 0,
            filters: Vec::new(),
        };
        // A qdisc or class without a filter block shows none (the kernel's
        // dump skips it).
        self.filter_target(cmd, now, |host, handle| {
            listing.qdisc = handle;
            if let Ok(chain) = host.and_then(|h| h.chain_mut(cmd.parent)) {
                listing.filters = chain.filters().to_vec();
            }
            Ok(())
        })?;
        Ok(listing)
    }

    /// Runs `op` on the qdisc a filter command names (`tc_new_tfilter`):
    /// the qdisc of the parent's major (the root when none is given), which
    /// must have the class `parent M:m` names; `op` gets the error to give
    /// where that qdisc takes no filters.
    fn filter_target(
        &mut self,
        cmd: &Request,
        now: Instant,
        op: impl FnOnce(Result<&mut dyn FilterHost, Refusal>, Handle) -> Result<(), Refusal>,
    ) -> Result<(), Refusal> {
        let d = self.root.dump(now);
        let parent = cmd.parent.filter(|&p| p != 0 && p != TC_H_ROOT);
        let q = match parent {
            None => Found {
                path: Vec::new(),
                dump: &d,
            },
            Some(p) => find(&d, p & 0xFFFF_0000).ok_or_else(|| {
                Refusal::new(Errno::EINVAL, PARENT_QDISC).below(format!(
                    "no qdisc {} on dev {}",
                    qdisc_handle(p & 0xFFFF_0000),
                    self.dev.dev.dev()
                ))
            })?,
        };
        if let Some(p) = parent.filter(|&p| tc_h_minor(p) != 0) {
            if !q.dump.classes.iter().any(|c| c.classid == p) {
                return Err(
                    Refusal::new(Errno::ENOENT, "Specified class doesn't exist.").below(format!(
                        "no class {} under {} {}",
                        tc_handle(p),
                        q.dump.kind,
                        qdisc_handle(q.dump.handle)
                    )),
                );
            }
        }
        let (kind, handle) = (q.dump.kind.clone(), q.dump.handle);
        let node = node_at(&mut self.root, &q.path)
            .ok_or_else(|| Refusal::new(Errno::EINVAL, PARENT_QDISC))?;
        let classful = node.as_classful().is_some();
        let host = node.as_filter_host().ok_or_else(|| {
            if classful {
                Refusal::new(Errno::EOPNOTSUPP, "Class doesn't support filters.").below(format!(
                    "{kind} takes no filters; htb, qfq, sfq, fq_codel, fq_pie and cake do"
                ))
            } else {
                Refusal::new(Errno::EINVAL, "Qdisc not classful.").below(format!(
                    "{kind} cannot take filters; attach them to htb, qfq, sfq, fq_codel, fq_pie or cake"
                ))
            }
        });
        op(host, handle)
    }

    /// Hands the frames of a qdisc taken out from under a class back to the
    /// root, which classifies them again (so every ancestor accounts for
    /// them); what is refused is counted as dropped.
    fn requeue_at_root(&mut self, old: Option<Box<dyn Qdisc>>, now: Instant, drops: &mut Drops) {
        if let Some(mut old) = old {
            for pkt in old.drain_all() {
                self.root.enqueue(pkt, now, drops);
            }
        }
    }

    /// Sets the device's TX queue count (`ethtool -L DEV tx N`). A default
    /// root (handle 0) becomes the default for the new count, mq above one
    /// queue and the default qdisc at one, as the device gets at its next
    /// activation (`dev_activate`, net/sched/sch_generic.c); its frames
    /// move into the new root. Any other root stays, except an mq whose
    /// children (one per queue) would no longer match: that is refused.
    /// On error nothing changes.
    pub fn change_tx_queues(
        &mut self,
        n: u16,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let next = DevSpec {
            tx_queues: n,
            ..self.dev.clone()
        };
        next.validate()?;
        let root = self.root.dump(now);
        let default = root.handle == 0;
        if !default && root.kind == "mq" && root.classes.len() != usize::from(n) {
            return Err(Refusal::new(
                Errno::EBUSY,
                format!(
                    "the root is mq {} with one child per TX queue ({}); \
                     replace it first (tc qdisc replace dev {} root pfifo_fast, or delete it), \
                     then change the queues and add mq again",
                    qdisc_handle(root.handle),
                    root.classes.len(),
                    self.dev.dev.dev(),
                ),
            ));
        }
        self.dev = next;
        if default {
            self.swap_root(default_root(&self.dev), now, drops);
            self.sync_estimators(now);
        }
        Ok(())
    }

    fn swap_root(&mut self, new: Box<dyn Qdisc>, now: Instant, drops: &mut Drops) {
        self.slot.new_root();
        let mut old = std::mem::replace(&mut self.root, new);
        self.tell_requeued();
        for pkt in old.drain_all() {
            self.root.enqueue(pkt, now, drops);
        }
    }
}

/// The filters of one qdisc, for `tc filter show`.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterListing {
    /// The qdisc's handle.
    pub qdisc: Handle,
    /// Its filters in classification order (none without a filter block).
    pub filters: Vec<Filter>,
}

/// The root a device gets: its default qdisc, or mq on a multi-queue device.
fn default_root(dev: &DevSpec) -> Box<dyn Qdisc> {
    let ctx = dev.ctx(0, TC_H_ROOT);
    if dev.tx_queues > 1 {
        if let Ok(q) = kinds::new_qdisc("mq", ctx, dev, &QdiscOptions::None) {
            return q;
        }
    }
    kinds::default_leaf(ctx, dev)
}

impl Qdisc for QdiscTree {
    fn kind(&self) -> &'static str {
        self.root.kind()
    }
    fn enqueue(&mut self, pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        if self.est.due(now) {
            self.run_estimators(now);
        }
        self.root.enqueue(pkt, now, drops)
    }
    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        if self.est.due(now) {
            self.run_estimators(now);
        }
        self.root.dequeue(now, drops)
    }
    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.root.peek(now, drops)
    }
    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        self.root.next_wakeup(now)
    }
    fn qlen(&self) -> u32 {
        self.root.qlen()
    }
    fn backlog(&self) -> u64 {
        self.root.backlog()
    }
    fn counters(&self) -> QdiscStats {
        self.root.counters()
    }
    fn stats(&self) -> QdiscStats {
        self.root.stats()
    }
    fn can_bypass(&self) -> bool {
        self.root.can_bypass()
    }
    fn count_bypass(&mut self, pkt: &Packet) {
        self.root.count_bypass(pkt)
    }
    fn reset(&mut self, drops: &mut Drops) {
        self.root.reset(drops)
    }
    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        self.root.change(options, now, drops)
    }
    fn dump(&self, now: Instant) -> QdiscDump {
        self.with_rates(self.dump_with_slot(self.root.dump(now)), now)
    }
    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        self.with_rates(
            self.dump_with_slot(self.root.dump_listing(now, listing)),
            now,
        )
    }
    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        self.root.as_classful()
    }
    fn drain_all(&mut self) -> Vec<Packet> {
        self.root.drain_all()
    }
    fn tx_queue_count(&self) -> usize {
        self.root.tx_queue_count()
    }
    fn dequeue_queue(&mut self, queue: usize, now: Instant, drops: &mut Drops) -> Option<Packet> {
        if self.est.due(now) {
            self.run_estimators(now);
        }
        self.root.dequeue_queue(queue, now, drops)
    }
    fn queue_qlen(&self, queue: usize) -> u32 {
        self.root.queue_qlen(queue)
    }
    fn copies(&self) -> u64 {
        self.root.copies()
    }
    fn queue_wakeup(&self, queue: usize, now: Instant) -> Option<Instant> {
        self.root.queue_wakeup(queue, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(last: u16) -> AutoHandles {
        AutoHandles(Arc::new(AtomicU16::new(last)))
    }

    #[test]
    fn auto_handles_skip_used_ones_and_wrap_to_8000_after_fffe() {
        let h = AutoHandles::default();
        assert_eq!(h.alloc(|_| true), Some(0x8001));
        assert_eq!(h.alloc(|m| m != 0x8002), Some(0x8003));
        // ffff: would be TC_H_ROOT's major: 8000: follows fffe:.
        let h = at(0xFFFD);
        assert_eq!(h.alloc(|_| true), Some(0xFFFE));
        assert_eq!(h.alloc(|_| true), Some(0x8000));
        assert_eq!(h.alloc(|_| true), Some(0x8001));
        // All 32,768 in use: none, and the counter stays.
        let h = at(0x9000);
        assert_eq!(h.alloc(|_| false), None);
        assert_eq!(h.alloc(|m| m == 0x8fff), Some(0x8fff));
        // Clones share the counter.
        let (a, b) = (AutoHandles::default(), AutoHandles::default());
        let a2 = a.clone();
        assert_eq!(a.alloc(|_| true), Some(0x8001));
        assert_eq!(a2.alloc(|_| true), Some(0x8002));
        assert_eq!(b.alloc(|_| true), Some(0x8001));
    }
}
