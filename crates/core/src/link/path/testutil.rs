//! What the path's tests share: a device tree around a bare root, a pfifo
//! path, draining a path with its conservation checked at every poll,
//! frames of a given TX queue and an mq root over two pfifos.

use super::Path;
use crate::dir::Dir;
use crate::link::LinkParams;
use crate::packet::Packet;
use crate::qdisc::fifo::{Fifo, FifoKind};
use crate::qdisc::testutil::pkt;
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::qdisc::{Qdisc, QdiscCtx};
use crate::time::Instant;

/// A device tree whose root is `root`.
pub(super) fn tree(root: Box<dyn Qdisc>) -> QdiscTree {
    QdiscTree::with_root(DevSpec::new(Dir::LeftToRight, &[]), root)
}

pub(super) fn fifo(limit: u64) -> QdiscTree {
    tree(Box::new(Fifo::with_limit(
        FifoKind::Pfifo,
        QdiscCtx::default(),
        limit,
    )))
}

pub(super) fn path(params: LinkParams) -> Path {
    Path::new(params, fifo(1000))
}

pub(super) fn assert_conserved(p: &Path) {
    if let Err(e) = p.check_conservation() {
        panic!("{e}: {:?}", p.counters());
    }
}

/// Polls at every `poll_at` until nothing is left, returning (id, time).
pub(super) fn drain(p: &mut Path) -> Vec<(u64, Instant)> {
    let (mut out, mut freed, mut got) = (Vec::new(), Vec::new(), Vec::new());
    while let Some(t) = p.poll_at() {
        p.poll(t, &mut out, &mut freed);
        got.extend(out.drain(..).map(|pk: Packet| (pk.meta.id, t)));
        assert_conserved(p);
    }
    got
}

/// mq over two pfifo children (limit `limit`), each run on its own TX
/// queue.
pub(super) fn mq2(limit: u64) -> QdiscTree {
    let mq = crate::qdisc::mq::Mq::new(QdiscCtx::default(), 2, &mut |c| {
        Box::new(Fifo::with_limit(FifoKind::Pfifo, c, limit)) as Box<dyn Qdisc>
    });
    tree(Box::new(mq.unwrap()))
}

/// A frame of TX queue `queue`.
pub(super) fn on_queue(id: u64, len: u32, queue: u16) -> Packet {
    let mut p = pkt(id, len);
    p.meta.queue_mapping = queue;
    p
}
