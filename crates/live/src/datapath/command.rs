//! Requests to the running datapath (`Command`) and how they reach the
//! threads: each direction's thread has a bounded queue of typed `Request`s
//! and an eventfd its epoll watches. A `Commander` routes a link change to
//! the direction it names without blocking. A `set` plan (all or nothing
//! over both directions) and a tc line are carried out by the commander on
//! the caller's thread: it asks each direction's thread for what it needs
//! and waits for the typed answers, computes the result, and sends each its
//! part; for a tc line that means reading the line and its options
//! (against the kinds of the device it names), sending the typed request,
//! dump or filter listing the line asks for to the direction it names (to
//! both for `tc qdisc show` without a device), and printing the answer
//! (`crate::tc::talk`), so the threads read and write no tc text. All
//! commanders of one datapath take one lock while they queue, so such a
//! command sees no other change land between its reads and its writes.

use std::io;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use nix::sys::eventfd::{EfdFlags, EventFd};

use crate::control::set::{Change, Effective, SetError, SetPlan};
use crate::dir::Dir;
use crate::link::{LinkParams, LinkShape, ShapeError};
use crate::qdisc::dump::QdiscDump;
use crate::qdisc::request::Request as TreeRequest;
use crate::qdisc::tree::{DevSpec, FilterListing};
use crate::refusal::Refusal;
use crate::tc::device::{Answer, Device};
use crate::tc::{Object, TcCommand, TcError, Verb};

use super::error::DatapathError;

/// Depth of each direction's command queue.
pub(super) const COMMAND_QUEUE: usize = 16;

/// How long a command about both directions waits for each thread's part.
const BOTH_TIMEOUT: Duration = Duration::from_secs(2);

/// Requests to the running datapath, applied by the thread of the
/// direction they concern at the top of a loop iteration, at the current
/// time.
#[derive(Debug)]
pub enum Command {
    /// Publish a final snapshot and return (both threads).
    Shutdown,
    /// Change the link parameters of one direction (rate, delay, ring, BQL,
    /// coalescing...): `change` edits the parameters the path runs with
    /// now, on that direction's thread, so no caller works from a stale
    /// copy; frames in flight keep their schedule where the link allows it
    /// (see `Path::set_params`). The reply is the parameters now in force.
    SetLink {
        /// The direction whose parameters change.
        dir: Dir,
        /// The change, applied to the parameters in force on the direction's
        /// thread.
        change: LinkChange,
        /// Where the parameters in force afterwards are sent.
        reply: SyncSender<LinkParams>,
    },
    /// `set` arguments (`left.rate=10mbit`, ethtool lines, shape keys
    /// such as `left.loss=1%`; see `control::set`), parsed, applied to the
    /// current parameters and shapes of both directions, all or nothing;
    /// the reply is the effective configuration or the error naming the
    /// argument. `Commander::send` waits for both threads (at most 2 s
    /// each) before it returns.
    EditLink {
        /// The parsed and checked `set` arguments of both directions.
        plan: SetPlan,
        /// Where the effective configuration, or the error naming the argument,
        /// is sent.
        reply: SyncSender<Result<Effective, EditError>>,
    },
    /// One tc command line (`tc qdisc|class|filter ... dev left|right ...`)
    /// for the qdisc tree of the direction its device names; the reply is
    /// its output (`show`, or a change's warnings) or its error.
    /// `Commander::send` reads the line, sends the direction's thread the
    /// typed requests it makes and prints the typed answers, waiting for
    /// them (at most 2 s each) before it returns; `tc qdisc show` without
    /// a device asks both threads.
    Tc {
        /// The tc command line, as typed (`tc qdisc add dev left root
        /// fq_codel`).
        line: String,
        /// Where its output (`show`) or its error is sent.
        reply: SyncSender<Result<String, TcFailure>>,
    },
}

/// A direction's thread the commander could not reach: its queue refused
/// the request, or no answer came in time.
#[derive(Debug, thiserror::Error)]
pub enum Unreached {
    /// The queue was full or the thread gone.
    #[error(transparent)]
    Queue(#[from] DatapathError),
    /// No answer within this long.
    #[error("the datapath did not answer within {0:?}")]
    Timeout(Duration),
}

/// Why a `set` plan (`Command::EditLink`) was not put in force; nothing
/// changed then.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The plan's outcome was refused (the error names the argument;
    /// boxed, being large).
    #[error(transparent)]
    Set(Box<SetError>),
    /// A direction's thread could not be reached.
    #[error(transparent)]
    Unreached(#[from] Unreached),
    /// A direction refused its part.
    #[error("dev {}: {refused}", dir.dev())]
    Refused {
        /// The direction.
        dir: Dir,
        /// Why.
        refused: Refused,
    },
}

impl From<SetError> for EditError {
    fn from(e: SetError) -> EditError {
        EditError::Set(Box::new(e))
    }
}

/// Why a tc line (`Command::Tc`) failed.
#[derive(Debug, thiserror::Error)]
pub enum TcFailure {
    /// tc's error, as tc prints it.
    #[error(transparent)]
    Tc(#[from] TcError),
    /// A direction's thread could not be reached.
    #[error(transparent)]
    Unreached(#[from] Unreached),
    /// A line that names no device, other than `tc qdisc show`.
    #[error("{0:?}: name a device: dev left or dev right")]
    NoDevice(String),
}

/// An edit of one direction's link parameters, run by its thread.
pub struct LinkChange(pub Box<dyn FnOnce(&mut LinkParams) + Send>);

impl std::fmt::Debug for LinkChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkChange(..)")
    }
}

/// What one direction's thread is asked to do.
pub(super) enum Request {
    Shutdown,
    SetLink {
        change: LinkChange,
        reply: SyncSender<LinkParams>,
    },
    /// The parameters and shape in force.
    Read {
        reply: SyncSender<(LinkParams, LinkShape)>,
    },
    /// Put a `set`'s part for this direction in force (validated).
    Install {
        change: Box<Change>,
        reply: SyncSender<Result<(), Refused>>,
    },
    /// The device below the qdisc tree.
    Device {
        reply: SyncSender<DevSpec>,
    },
    /// A typed tc request for the qdisc tree, carried out between frames.
    Apply {
        request: TreeRequest,
        reply: SyncSender<Result<Vec<String>, Refusal>>,
    },
    /// The qdisc tree's dump, for a show naming `dev`.
    Dump {
        dev: Option<Dir>,
        reply: SyncSender<Result<QdiscDump, Refusal>>,
    },
    /// The qdisc a `tc filter show` request names, and its filters.
    Filters {
        request: TreeRequest,
        reply: SyncSender<Result<FilterListing, Refusal>>,
    },
}

/// Why a direction refused a change of its link (`Request::Install`),
/// typed: it reads (in the `set` reply) as the queue count's refusal as tc
/// prints it, or the shape's error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The tree refused the TX queue count (an mq root of another count).
    #[error("{}", TcError::from(.0.clone()))]
    Queues(Refusal),
    /// The shape was refused.
    #[error(transparent)]
    Shape(ShapeError),
}

/// A direction run on the caller's thread instead of its own
/// (`Datapath::stepped`): what a thread would do when its doorbell rings.
pub(super) trait Stepper: Send {
    /// Carries out the queued requests, advances the direction to now and
    /// publishes its snapshot.
    fn step(&mut self);
}

/// A direction's stepper, shared by its queue and the `Datapath` handle.
pub(super) type SharedStepper = Arc<Mutex<dyn Stepper>>;

/// A direction's queue and the doorbell its thread's epoll watches.
struct Queue {
    requests: SyncSender<Request>,
    wake: Arc<EventFd>,
    /// Set for a stepped datapath: the direction is stepped as soon as a
    /// request is queued, so the request is answered before `send`
    /// returns.
    stepper: OnceLock<SharedStepper>,
}

impl Queue {
    fn send(&self, req: Request) -> Result<(), DatapathError> {
        match self.requests.try_send(req) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(DatapathError::QueueFull),
            Err(TrySendError::Disconnected(_)) => return Err(DatapathError::Stopped),
        }
        self.wake.write(1).map_err(io::Error::from)?;
        if let Some(stepper) = self.stepper.get() {
            stepper.lock().unwrap_or_else(|p| p.into_inner()).step();
        }
        Ok(())
    }

    /// Sends the request `make` builds around a reply channel and waits
    /// for the reply.
    fn ask<T>(&self, make: impl FnOnce(SyncSender<T>) -> Request) -> Result<T, Unreached> {
        let (tx, rx) = sync_channel(1);
        self.send(make(tx))?;
        rx.recv_timeout(BOTH_TIMEOUT)
            .map_err(|_| Unreached::Timeout(BOTH_TIMEOUT))
    }
}

/// The receiving end of a direction's queue, for its thread.
pub(super) struct Inbox {
    pub(super) requests: Receiver<Request>,
    pub(super) wake: Arc<EventFd>,
}

/// A cloneable way to queue commands for the datapath (for threads other
/// than the one holding the `Datapath`, e.g. the TUI).
#[derive(Clone)]
pub struct Commander {
    queues: Arc<[Queue; 2]>,
    /// Held while a command is queued (and, for a command about both
    /// directions, carried out).
    order: Arc<Mutex<()>>,
}

impl Commander {
    /// A commander and, by `Dir::index()`, the inbox of each direction's
    /// thread.
    pub(super) fn new() -> io::Result<(Commander, [Inbox; 2])> {
        let queue = || -> io::Result<(Queue, Inbox)> {
            let (tx, rx) = sync_channel(COMMAND_QUEUE);
            let wake = Arc::new(
                EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)
                    .map_err(io::Error::from)?,
            );
            let inbox = Inbox {
                requests: rx,
                wake: wake.clone(),
            };
            let queue = Queue {
                requests: tx,
                wake,
                stepper: OnceLock::new(),
            };
            Ok((queue, inbox))
        };
        let (q0, i0) = queue()?;
        let (q1, i1) = queue()?;
        let commander = Commander {
            queues: Arc::new([q0, q1]),
            order: Arc::new(Mutex::new(())),
        };
        Ok((commander, [i0, i1]))
    }

    /// Makes the datapath stepped: each direction's requests are carried
    /// out by `steppers[dir.index()]` on the thread that queues them.
    pub(super) fn step_with(&self, steppers: [SharedStepper; 2]) {
        for (queue, stepper) in self.queues.iter().zip(steppers) {
            let _ = queue.stepper.set(stepper);
        }
    }

    /// Queues a command: without blocking for a command about one
    /// direction; a command about both is carried out before this returns
    /// (see `Command`), its result in its reply channel.
    pub fn send(&self, cmd: Command) -> Result<(), DatapathError> {
        let _order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        match cmd {
            Command::Shutdown => self.shutdown(),
            Command::SetLink { dir, change, reply } => {
                self.queue(dir).send(Request::SetLink { change, reply })
            }
            Command::EditLink { plan, reply } => {
                let _ = reply.try_send(self.edit_link(&plan));
                Ok(())
            }
            Command::Tc { line, reply } => {
                let _ = reply.try_send(self.tc(&line));
                Ok(())
            }
        }
    }

    /// Asks both threads to stop; fine if one already has.
    pub(super) fn shutdown(&self) -> Result<(), DatapathError> {
        let sent = self.queues.each_ref().map(|q| q.send(Request::Shutdown));
        match sent {
            [Err(e), Err(_)] => Err(e),
            _ => Ok(()),
        }
    }

    fn queue(&self, dir: Dir) -> &Queue {
        &self.queues[dir.index()]
    }

    /// A `set` plan over both directions: reads what each runs with,
    /// works out the plan's outcome (all or nothing), and installs in each
    /// what changed.
    fn edit_link(&self, plan: &SetPlan) -> Result<Effective, EditError> {
        let mut params = [LinkParams::default(); 2];
        let mut shapes = [LinkShape::default(), LinkShape::default()];
        for dir in Dir::ALL {
            (params[dir.index()], shapes[dir.index()]) =
                self.queue(dir).ask(|reply| Request::Read { reply })?;
        }
        let outcome = plan.outcome(params, shapes.clone())?;
        let mut installed = Vec::new();
        for (dir, change) in Dir::ALL.into_iter().zip(outcome.changes) {
            if change == Change::default() {
                continue;
            }
            let i = dir.index();
            // What puts this direction back as it was.
            let back = Change {
                params: change.params.map(|_| params[i]),
                shape: change.shape.as_ref().map(|_| shapes[i].clone()),
            };
            let done = self.queue(dir).ask(|reply| Request::Install {
                change: Box::new(change),
                reply,
            })?;
            if let Err(refused) = done {
                // All or nothing: what the other direction took is undone.
                for (d, back) in installed {
                    let _ = self.queue(d).ask(|reply| Request::Install {
                        change: Box::new(back),
                        reply,
                    });
                }
                return Err(EditError::Refused { dir, refused });
            }
            installed.push((dir, back));
        }
        Ok(outcome.effective)
    }

    /// A tc line: read here, carried out by the typed requests it makes
    /// to the direction its device names (`tc qdisc show` without a
    /// device: to both, listed as one), and its answer printed here: tc's
    /// output or its error.
    fn tc(&self, line: &str) -> Result<String, TcFailure> {
        let cmd = TcCommand::parse(line)?;
        match cmd.dev {
            Some(dir) => {
                Ok(crate::tc::talk(&mut Remote(self.queue(dir)), &cmd)??.unwrap_or_default())
            }
            None if cmd.verb == Verb::Show && cmd.object == Object::Qdisc => {
                let mut both = Dir::ALL.map(|dir| Remote(self.queue(dir)));
                Ok(crate::tc::show_devices(&mut both, &cmd)??)
            }
            None => Err(TcFailure::NoDevice(line.to_string())),
        }
    }
}

/// One direction's qdisc tree as tc reaches it from the caller's thread:
/// each typed request is queued for the direction's thread, which carries
/// it out between frames, and its typed answer awaited (at most 2 s).
struct Remote<'q>(&'q Queue);

impl Device for Remote<'_> {
    /// The queue was full or its thread gone, or no answer came in time.
    type Unreached = Unreached;

    fn spec(&mut self) -> Result<DevSpec, Unreached> {
        self.0.ask(|reply| Request::Device { reply })
    }

    fn apply(&mut self, request: TreeRequest) -> Answer<Vec<String>, Unreached> {
        self.0.ask(|reply| Request::Apply { request, reply })
    }

    fn dump(&mut self, dev: Option<Dir>) -> Answer<QdiscDump, Unreached> {
        self.0.ask(|reply| Request::Dump { dev, reply })
    }

    fn filters(&mut self, request: TreeRequest) -> Answer<FilterListing, Unreached> {
        self.0.ask(|reply| Request::Filters { request, reply })
    }
}
