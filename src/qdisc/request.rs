//! A tc request as the kernel receives it over rtnetlink (`RTM_NEWQDISC`,
//! `RTM_NEWTCLASS`, `RTM_NEWTFILTER` and their del/get twins): the object,
//! the netlink flags its verb sends, the device, parent and handle, the kind,
//! and the kind's options. `QdiscTree::apply` carries it out with the
//! kernel's rules; the tc front end (`crate::tc`) makes it from a command
//! line and prints the answers. The options are still the tokens after the
//! kind, which each kind's constructor parses.

use crate::dir::Dir;
use crate::handle::Handle;

/// `tc qdisc|class|filter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Object {
    Qdisc,
    Class,
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
    Delete,
    /// `show`, `list`, `lst` (and no verb at all).
    Show,
}

/// Global flags before the object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// `-s`: counters and xstats.
    pub stats: bool,
    /// `-d`: detailed options.
    pub details: bool,
    /// `-j`: JSON.
    pub json: bool,
    /// `-p`: pretty JSON.
    pub pretty: bool,
}

/// A parsed tc command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcCommand {
    pub flags: Flags,
    pub object: Object,
    pub verb: Verb,
    /// `dev left|right`; `None` only for `show` (then every device is listed).
    pub dev: Option<Dir>,
    /// `root` (`TC_H_ROOT`) or `parent M:m`.
    pub parent: Option<Handle>,
    /// qdisc `handle M:`, class `classid M:m` (also the `handle`/`classid`
    /// filters of `show`).
    pub handle: Option<Handle>,
    /// The qdisc kind (qdisc and class commands).
    pub kind: Option<String>,
    /// qdisc/class: the tokens after the kind. filter: every token but
    /// `dev X` (what `Filter::parse` reads).
    pub args: Vec<String>,
    /// `tc qdisc show invisible`: also list default child qdiscs.
    pub invisible: bool,
}

impl TcCommand {
    /// The option tokens as `&str`s, as the constructors take them.
    pub fn arg_strs(&self) -> Vec<&str> {
        self.args.iter().map(String::as_str).collect()
    }
}
