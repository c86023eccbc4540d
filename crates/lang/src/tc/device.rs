//! The devices tc talks to. A `Device` is one emulated device's qdisc tree
//! as the tc front end reaches it: a tree at hand (`At`: the configuration's
//! build, the fuzz targets, tests) or a direction of the running datapath,
//! whose thread owns the tree (`crate::datapath::Commander`). tc reads a
//! command line and prints the answer on its own side (`crate::tc::talk`);
//! the device only carries out typed requests and answers typed values: the
//! device below the tree, `QdiscTree::apply`'s outcome, the tree's dump, a
//! qdisc's filters. A device that cannot be reached (`Device::Unreached`:
//! a datapath that does not answer) says so with an error of its own,
//! which tc hands back as it is rather than word it as tc's.

use std::convert::Infallible;

use crate::dir::Dir;
use crate::packet::Drops;
use crate::qdisc::request::Request;
use crate::qdisc::tree::{DevSpec, FilterListing, QdiscTree};
use crate::qdisc::{Qdisc, QdiscDump};
use crate::refusal::Refusal;
use crate::time::Instant;

/// What a device answers: once it was reached (`Ok`), its tree's value or
/// its typed refusal (which tc words on its own side); else why it was not
/// (`Err`).
pub type Answer<T, U> = Result<Result<T, Refusal>, U>;

/// One device's qdisc tree, as tc reaches it.
pub trait Device {
    /// Why the device could not be reached (`Infallible` for a tree at hand).
    type Unreached;

    /// The device below the tree: its name, its TX queues, and the kinds
    /// its qdiscs are built from (which parse a command's options).
    fn spec(&mut self) -> Result<DevSpec, Self::Unreached>;

    /// Carries out `request` on the tree (`QdiscTree::apply`): the extack
    /// warnings a change left, or the tree's refusal (then nothing changed).
    fn apply(&mut self, request: Request) -> Answer<Vec<String>, Self::Unreached>;

    /// The tree's dump, read without running the qdisc, for a show naming
    /// `dev` (`QdiscTree::check_dev` refuses the other device's).
    fn dump(&mut self, dev: Option<Dir>) -> Answer<QdiscDump, Self::Unreached>;

    /// The qdisc a `tc filter show` request names and its filters
    /// (`QdiscTree::filters`), read without running the qdisc.
    fn filters(&mut self, request: Request) -> Answer<FilterListing, Self::Unreached>;
}

/// A tree at hand, reached at the instant `now`; the frames its requests
/// free go to `drops`.
pub struct At<'a> {
    /// The device's tree.
    pub tree: &'a mut QdiscTree,
    /// When the requests are carried out.
    pub now: Instant,
    /// Where the frames a request frees go.
    pub drops: &'a mut Drops,
}

impl Device for At<'_> {
    type Unreached = Infallible;

    fn spec(&mut self) -> Result<DevSpec, Infallible> {
        Ok(self.tree.dev().clone())
    }

    fn apply(&mut self, request: Request) -> Answer<Vec<String>, Infallible> {
        Ok(self.tree.apply(&request, self.now, self.drops))
    }

    fn dump(&mut self, dev: Option<Dir>) -> Answer<QdiscDump, Infallible> {
        Ok(self.tree.check_dev(dev).map(|()| self.tree.dump(self.now)))
    }

    fn filters(&mut self, request: Request) -> Answer<FilterListing, Infallible> {
        Ok(self.tree.filters(&request, self.now))
    }
}
