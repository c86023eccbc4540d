//! plug (Linux net/sched/sch_plug.c): a FIFO of `limit` bytes that holds
//! its frames until told to let them go, by `tc qdisc change ... plug`
//! commands (`struct tc_plug_qopt`'s action): `block` (TCQ_PLUG_BUFFER)
//! puts a plug after the frames queued so far, `release`
//! (TCQ_PLUG_RELEASE_ONE) lets out the frames before the oldest plug,
//! `release_indefinite` lets everything out and passes frames through
//! until the next `block`, `limit` sets the byte limit. It starts plugged;
//! its limit is txqueuelen × psched_mtu bytes without options, else the
//! `limit` of the options (0 when tc sends an action alone). Frames over
//! the limit are dropped. The kernel's plug has no dump: tc shows nothing
//! after its head, and its only statistics are the generic ones.

use super::dump::{QueueId, QueueOccupancy};
use super::{Errno, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats};
use super::{Refusal, Verdict};
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `tc_plug_qopt.action` (`TCQ_PLUG_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlugAction {
    /// `TCQ_PLUG_BUFFER` (0): tc's `block`.
    #[default]
    Buffer,
    /// `TCQ_PLUG_RELEASE_ONE` (1): tc's `release`.
    ReleaseOne,
    /// `TCQ_PLUG_RELEASE_INDEFINITE` (2): tc's `release_indefinite`.
    ReleaseIndefinite,
    /// `TCQ_PLUG_LIMIT` (3): tc's `limit`.
    Limit,
    /// Any other action number, which `plug_change` refuses.
    Other(i32),
}

/// `struct tc_plug_qopt`: an action and a byte limit (read by `plug_init`
/// whatever the action, and by `plug_change` for `TCQ_PLUG_LIMIT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlugOptions {
    /// What to do.
    pub action: PlugAction,
    /// Bytes.
    pub limit: u32,
}

/// The `plug` qdisc (`struct plug_sched_data`).
pub struct Plug {
    handle: Handle,
    parent: Handle,
    unplug_indefinite: bool,
    limit: u32,
    pkts_current_epoch: u32,
    pkts_last_epoch: u32,
    pkts_to_release: u32,
    throttled: bool,
    queue: VecDeque<Packet>,
    backlog: u64,
    stats: QdiscStats,
}

impl Plug {
    /// `plug_init` with `options` (`QdiscOptions::None`: no options).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let limit = match options {
            QdiscOptions::None => ctx.txqueuelen.wrapping_mul(ctx.psched_mtu),
            QdiscOptions::Plug(o) => o.limit,
            _ => return Err(super::options::foreign("plug")),
        };
        Ok(Plug {
            handle: ctx.handle,
            parent: ctx.parent,
            unplug_indefinite: false,
            limit,
            pkts_current_epoch: 0,
            pkts_last_epoch: 0,
            pkts_to_release: 0,
            throttled: true,
            queue: VecDeque::new(),
            backlog: 0,
            stats: QdiscStats::default(),
        })
    }

    /// The byte limit.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Frames the next `release` would let out after those already
    /// released, and the frames released and not yet sent.
    pub fn epochs(&self) -> (u32, u32, u32) {
        (
            self.pkts_current_epoch,
            self.pkts_last_epoch,
            self.pkts_to_release,
        )
    }
}

impl Qdisc for Plug {
    fn kind(&self) -> &'static str {
        "plug"
    }

    /// `plug_enqueue`: `skb->len` against the byte limit.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        if self.backlog + u64::from(pkt.len) <= u64::from(self.limit) {
            if !self.unplug_indefinite {
                self.pkts_current_epoch = self.pkts_current_epoch.wrapping_add(1);
            }
            pkt.meta.enqueue_time = now;
            self.backlog += u64::from(pkt.len);
            self.queue.push_back(pkt);
            return Verdict::Queued;
        }
        self.stats.reject(pkt, DropReason::QueueFull, drops)
    }

    /// `plug_dequeue`.
    fn dequeue(&mut self, _now: Instant, _drops: &mut Drops) -> Option<Packet> {
        if self.throttled {
            return None;
        }
        if !self.unplug_indefinite {
            if self.pkts_to_release == 0 {
                self.throttled = true;
                return None;
            }
            self.pkts_to_release -= 1;
        }
        let p = self.queue.pop_front()?;
        self.backlog -= u64::from(p.len);
        self.stats.count_sent(&p);
        Some(p)
    }

    /// `qdisc_peek_head`: the head frame, plugged or not.
    fn peek(&mut self, _now: Instant, _drops: &mut Drops) -> Option<&Packet> {
        self.queue.front()
    }

    fn qlen(&self) -> u32 {
        self.queue.len() as u32
    }

    fn backlog(&self) -> u64 {
        self.backlog
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `qdisc_reset_queue` (plug has no reset of its own: the epochs and
    /// the plug stay).
    fn reset(&mut self, drops: &mut Drops) {
        for p in self.drain_all() {
            drops.push(p, DropReason::QdiscReset);
        }
    }

    /// `plug_change`: one action.
    fn change(
        &mut self,
        options: &QdiscOptions,
        _now: Instant,
        _drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let o = match options {
            QdiscOptions::None => return Err(Refusal::bare(Errno::EINVAL)),
            QdiscOptions::Plug(o) => o,
            _ => return Err(super::options::foreign("plug")),
        };
        match o.action {
            PlugAction::Buffer => {
                self.pkts_last_epoch = self.pkts_current_epoch;
                self.pkts_current_epoch = 0;
                if self.unplug_indefinite {
                    self.throttled = true;
                }
                self.unplug_indefinite = false;
            }
            PlugAction::ReleaseOne => {
                self.pkts_to_release = self.pkts_to_release.wrapping_add(self.pkts_last_epoch);
                self.pkts_last_epoch = 0;
                self.throttled = false;
            }
            PlugAction::ReleaseIndefinite => {
                self.unplug_indefinite = true;
                self.pkts_to_release = 0;
                self.pkts_last_epoch = 0;
                self.pkts_current_epoch = 0;
                self.throttled = false;
            }
            PlugAction::Limit => self.limit = o.limit,
            PlugAction::Other(n) => {
                return Err(Refusal::bare(Errno::EINVAL).beside(format!("plug action {n}")))
            }
        }
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        QdiscDump {
            kind: "plug".into(),
            handle: self.handle,
            parent: self.parent,
            // plug has no dump op: no TCA_OPTIONS.
            options: QdiscOptions::None,
            stats: self.stats(),
            xstats: None,
            classes: Vec::new(),
            children: Vec::new(),
            flows: Vec::new(),
            other_flows: Default::default(),
            occupancy: vec![QueueOccupancy::of_qdisc(
                QueueId::Fifo,
                self.queue.iter(),
                now,
            )],
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        self.backlog = 0;
        self.queue.drain(..).collect()
    }
}

#[cfg(test)]
mod tests;
