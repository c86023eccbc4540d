//! The driver's command handling: draining its direction's queue at the
//! top of an iteration and carrying out each request (a link change, its
//! part of a `set`, a typed tc request on its tree, its tree's device, dump
//! or filters) at the current time, then, after one that may have changed
//! the link or its tree, deciding again whether GSO super-frames pass
//! whole. Requests and replies are typed: no tc text is read or written
//! here (`crate::tc::talk` does that on the commander's side).

use std::sync::mpsc::TryRecvError;

use crate::qdisc::Qdisc;
use crate::time::Clock;

use super::super::command::{Refused, Request, Stepper};
use super::Driver;

/// A stepped direction (no thread of its own) does, when a request is
/// queued, what its thread's loop does when the doorbell rings: it carries
/// out the requests, reads what its port has, advances the lane to now,
/// writes what it delivered and publishes a snapshot at once, so readers
/// see the request's effect. (A shutdown request is left to
/// `Datapath::shutdown`, which ends a stepped datapath.)
impl Stepper for Driver {
    fn step(&mut self) {
        let _ = self.inbox.wake.read();
        let _stop = self.drain_commands();
        if self.failure.is_none() {
            self.read_port();
        }
        let now = self.clock.now();
        let released = self.poll_lane(now);
        self.write_out(false, released);
        self.publish(now);
    }
}

impl Driver {
    /// Carries out every queued request; true if the thread must stop.
    pub(super) fn drain_commands(&mut self) -> bool {
        loop {
            let req = match self.inbox.requests.try_recv() {
                Ok(req) => req,
                Err(TryRecvError::Empty) => return false,
                // The handle is gone: nobody can stop us later, so stop now.
                Err(TryRecvError::Disconnected) => return true,
            };
            let now = self.clock.now();
            let path = self.lane.path_mut();
            // The asker may have given up waiting: nothing to do then.
            // A request that changed the link or its tree says so.
            let changed = match req {
                Request::Shutdown => return true,
                Request::SetLink { change, reply } => {
                    let mut params = *path.params();
                    (change.0)(&mut params);
                    path.set_params(params, now);
                    let _ = reply.try_send(params);
                    true
                }
                Request::Read { reply } => {
                    let _ = reply.try_send((*path.params(), path.shape().clone()));
                    false
                }
                Request::Install { change, reply } => {
                    // The queue count first: it alone can be refused by
                    // the tree (an mq root of another count), and then
                    // nothing of the change is made.
                    let queues = match change.params {
                        Some(params) => path
                            .set_tx_queues(params.tx_queues, now)
                            .map_err(Refused::Queues),
                        None => Ok(()),
                    };
                    let installed = queues.and_then(|()| {
                        if let Some(params) = change.params {
                            path.set_params(params, now);
                        }
                        match change.shape {
                            Some(shape) => path.set_shape(shape, now).map_err(Refused::Shape),
                            None => Ok(()),
                        }
                    });
                    let _ = reply.try_send(installed);
                    true
                }
                Request::Device { reply } => {
                    let _ = reply.try_send(path.qdisc().dev().clone());
                    false
                }
                Request::Apply { request, reply } => {
                    let said =
                        path.edit_qdisc(now, |tree, t, drops| tree.apply(&request, t, drops));
                    let _ = reply.try_send(said);
                    true
                }
                // A dump and a filter listing read the tree without running
                // the qdisc (a dump makes no dequeue in the kernel either).
                Request::Dump { dev, reply } => {
                    let dump = path
                        .inspect_qdisc(now, |tree, t| tree.check_dev(dev).map(|()| tree.dump(t)));
                    let _ = reply.try_send(dump);
                    false
                }
                Request::Filters { request, reply } => {
                    let listing = path.inspect_qdisc(now, |tree, t| tree.filters(&request, t));
                    let _ = reply.try_send(listing);
                    false
                }
            };
            if changed {
                self.refresh_gso();
            }
        }
    }
}
