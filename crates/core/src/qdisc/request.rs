//! A tc request as the kernel receives it over rtnetlink (`RTM_NEWQDISC`,
//! `RTM_NEWTCLASS`, `RTM_NEWTFILTER` and their del/get twins): the object,
//! the netlink flags its verb sends, the device, parent and handle, the kind,
//! the kind's options and the rate estimator asked for. `QdiscTree::apply` carries it out with the
//! kernel's rules; the tc front end (`crate::tc`) makes it from a command
//! line and prints the answers. The options are typed: a kind's
//! `TCA_OPTIONS` (`QdiscOptions`, `ClassOptions`), or a filter as `tc
//! filter` sends it.

use super::estimator::EstimatorSpec;
use super::options::{ClassOptions, QdiscOptions};
use crate::dir::Dir;
use crate::handle::Handle;
use crate::packet::filter::Filter;

/// `tc qdisc|class|filter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Object {
    /// `tc qdisc`.
    Qdisc,
    /// `tc class`.
    Class,
    /// `tc filter`.
    Filter,
}

/// The verb after the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// NLM_F_CREATE | NLM_F_EXCL.
    Add,
    /// No flags: modify what exists.
    Change,
    /// NLM_F_CREATE | NLM_F_REPLACE (classes: NLM_F_CREATE).
    Replace,
    /// NLM_F_REPLACE only (qdiscs).
    Link,
    /// `del`/`delete` (RTM_DELQDISC, RTM_DELTCLASS, RTM_DELTFILTER).
    Delete,
    /// `show`, `list`, `lst` (and no verb at all).
    Show,
}

/// What the request carries after the kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Options {
    /// Nothing (deletes, and requests without options).
    #[default]
    None,
    /// A qdisc's `TCA_OPTIONS`.
    Qdisc(QdiscOptions),
    /// A class's `TCA_OPTIONS`.
    Class(ClassOptions),
    /// `tc filter add|replace`: the filter.
    Filter(Filter),
    /// `tc filter del`: the prio whose filters go (`None`: every filter,
    /// as the kernel's prio 0).
    FilterPrio(Option<u16>),
}

/// One request to a device's qdisc tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Qdisc, class or filter.
    pub object: Object,
    /// What to do with it.
    pub verb: Verb,
    /// The device it names (`None`: whichever tree receives it).
    pub dev: Option<Dir>,
    /// `TCA_PARENT`: `TC_H_ROOT`, a class, or `None` (0).
    pub parent: Option<Handle>,
    /// qdisc `handle M:`, class `classid M:m`.
    pub handle: Option<Handle>,
    /// `TCA_KIND`.
    pub kind: Option<String>,
    /// The options after the kind.
    pub options: Options,
    /// `TCA_RATE`: tc's `estimator INTERVAL TIME_CONSTANT` on a qdisc or
    /// class (`None`: no estimator asked for).
    pub rate: Option<EstimatorSpec>,
}

impl Request {
    /// The qdisc options (none when the request carries others).
    pub fn qdisc_options(&self) -> &QdiscOptions {
        static NONE: QdiscOptions = QdiscOptions::None;
        match &self.options {
            Options::Qdisc(o) => o,
            _ => &NONE,
        }
    }

    /// The class options (none when the request carries others).
    pub fn class_options(&self) -> &ClassOptions {
        static NONE: ClassOptions = ClassOptions::None;
        match &self.options {
            Options::Class(o) => o,
            _ => &NONE,
        }
    }
}
