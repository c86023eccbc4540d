//! The emulated link below the qdisc, one direction at a time: the driver TX
//! ring with BQL (`ring`), TX completion and RX interrupt coalescing
//! (`coalesce`), the line-rate serializer (`serializer`), the propagation
//! delay line (`delay`), wire impairments (`impair`), the per-flow meter
//! (`meter`), the device's netdev
//! features (`features`), rate/delay schedules
//! and traces (`schedule`), whether super-frames pass whole (`offload`), `Path`,
//! which composes them behind a qdisc, and the transit-time
//! histogram it keeps (`transit`).
//! Every stage is a pure state machine driven with explicit times.
//!
//! `LinkParams` (Copy) are the plain link settings; `LinkShape` holds what
//! goes beyond them: impairments, a schedule and link-layer framing.

pub mod coalesce;
pub mod delay;
pub mod dim;
pub mod features;
pub mod impair;
pub mod meter;
pub mod offload;
pub mod path;
pub mod ring;
pub mod schedule;
pub mod serializer;
pub mod transit;

pub use impair::Impairments;
pub use path::{ConservationError, Path, PathCounters, PathSnapshot};
pub use schedule::Schedule;

use crate::dir::Dir;
use crate::qdisc::kinds::KindEntry;
use crate::qdisc::tree::DevSpec;
use crate::units::LinkLayer;
use std::fmt;

/// A rejected link setting: the field, its value and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ShapeError {
    /// The setting that was refused, as the config or the request names it
    /// (e.g. "loss.percent").
    pub field: String,
    /// The refused value, as given.
    pub value: String,
    /// What is allowed instead, e.g. "a percentage in 0..=100".
    pub allowed: String,
}

impl ShapeError {
    /// An error naming `field`, its `value` and what is `allowed`.
    pub fn new(field: &str, value: impl fmt::Display, allowed: impl Into<String>) -> Self {
        ShapeError {
            field: field.to_string(),
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} \"{}\": expected {}",
            self.field, self.value, self.allowed
        )
    }
}

/// Link-layer framing like tc's size table (`stab`): the serializer sends
/// `max(len + LinkParams::overhead + overhead, mpu)` bytes, in 53-byte
/// cells per 48 bytes on ATM. The arithmetic is `PschedRate::wire_len`;
/// the front end's `crate::tc::framing` reads it from stab-style words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Framing {
    /// Added to every frame (may be negative, like stab's `overhead`).
    pub overhead: i32,
    /// Minimum accounted size.
    pub mpu: u32,
    /// How lengths are framed: ATM adds the 53-byte cell per 48 bytes.
    pub linklayer: LinkLayer,
}

/// What a link does beyond `LinkParams`: wire impairments, a time-varying
/// rate/delay, and link-layer framing. Held by `Path`, settable at runtime.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LinkShape {
    /// Loss, duplication, corruption, jitter and reordering on the wire
    /// (netem's).
    pub impairments: Impairments,
    /// While set, the schedule's rate (and delay, where it gives one)
    /// replaces `LinkParams::rate_bytes_ps` (and `delay_ns`).
    pub schedule: Option<Schedule>,
    /// Overhead, mpu and link layer applied to every frame's length on the
    /// wire.
    pub framing: Framing,
}

impl LinkShape {
    /// Checks every part: percentages within 0..=100, a schedule that starts at
    /// 0 and increases, a trace with opportunities.
    pub fn validate(&self) -> Result<(), ShapeError> {
        self.impairments.validate()?;
        if let Some(s) = &self.schedule {
            s.validate()?;
        }
        Ok(())
    }
}

/// The longest propagation delay a link, or netem on it, may add (60 s).
pub const MAX_DELAY_NS: u64 = 60_000_000_000;

/// Parameters of one direction of the link, in core units (bytes/s, ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LinkParams {
    /// Line rate in bytes per second; 0 means unlimited (no serialization delay).
    pub rate_bytes_ps: u64,
    /// Extra bytes per frame on the wire (preamble, FCS, inter-frame gap: 24).
    pub overhead: u32,
    /// Propagation delay, ns.
    pub delay_ns: u64,
    /// TX ring depth in descriptors (one per frame).
    pub tx_ring: u32,
    /// The driver's early queue stop, in descriptors: after posting a
    /// frame the driver stops the queue when fewer than this many
    /// descriptors are free, and wakes it when completions free that many
    /// (drivers/net/virtio_net.c `check_sq_full_and_disable`: `num_free <
    /// 2 + MAX_SKB_FRAGS`, 19 with include/linux/skbuff.h's
    /// `MAX_SKB_FRAGS` 17; `virtnet_poll_tx` wakes it at `>=`). 0 (and 1)
    /// stops only on a full ring. At most `tx_ring`; a ring made smaller at
    /// run time stops at its size.
    #[serde(default)]
    pub tx_stop_threshold: u32,
    /// The driver's cost of posting one frame to the ring, ns: the NIC
    /// starts on a batch only at its doorbell, rung after the batch's last
    /// frame is posted (`skb->xmit_more` / `netdev_xmit_more()`, the
    /// driver's kick in drivers/net/virtio_net.c `start_xmit`), so the
    /// first frame of a batch of k waits k × this. Posts to one TX queue
    /// follow each other (`HARD_TX_LOCK`). 0: the NIC sees each frame as
    /// it is posted.
    #[serde(default)]
    pub tx_post_ns: u64,
    /// Byte queue limits on the TX queue.
    pub bql: bool,
    /// TX completion coalescing (ethtool -C tx-usecs / tx-frames).
    pub tx_usecs: u32,
    /// TX completion coalescing: the most frames per completion interrupt
    /// (ethtool -C `tx-frames`, `struct ethtool_coalesce`
    /// `tx_max_coalesced_frames`); 0 with `tx_usecs` 0 means one interrupt per
    /// frame.
    pub tx_frames: u32,
    /// RX interrupt coalescing (ethtool -C rx-usecs / rx-frames).
    pub rx_usecs: u32,
    /// RX coalescing: the most frames per receive interrupt (ethtool -C
    /// `rx-frames`, `struct ethtool_coalesce` `rx_max_coalesced_frames`); 0
    /// with `rx_usecs` 0 means one interrupt per frame.
    pub rx_frames: u32,
    /// RX coalescing in CQE mode (ethtool -C `cqe-mode-rx on`,
    /// `ETHTOOL_A_COALESCE_USE_CQE_MODE_RX`): the `rx_usecs` timer restarts
    /// at every completion, so the interrupt fires `rx_usecs` after the
    /// latest frame rather than the first (EQE mode, off).
    #[serde(default)]
    pub rx_cqe: bool,
    /// TX completion coalescing in CQE mode (ethtool -C `cqe-mode-tx on`),
    /// as `rx_cqe` for `tx_usecs`.
    #[serde(default)]
    pub tx_cqe: bool,
    /// Adaptive RX moderation (ethtool -C `adaptive-rx on`): the kernel's
    /// net_dim picks `rx_usecs`/`rx_frames` from its profiles by the
    /// traffic (`link::dim`); the fixed values then wait unused.
    #[serde(default)]
    pub rx_adaptive: bool,
    /// Adaptive TX completion moderation (ethtool -C `adaptive-tx on`).
    #[serde(default)]
    pub tx_adaptive: bool,
    /// Qdisc bulk dequeue (try_bulk_dequeue_skb) on or off.
    pub bulk_dequeue: bool,
    /// Device MTU (frames up to MTU + 14 bytes pass; larger are dropped).
    pub mtu: u32,
    /// Device txqueuelen (default limits of pfifo_fast and friends).
    pub txqueuelen: u32,
    /// TX queues of the device (`ethtool -L DEV tx N`): more than one gives
    /// an mq root by default. Changed at run time by `Path::set_tx_queues`.
    #[serde(default = "one_queue")]
    pub tx_queues: u16,
    /// The device's netdev features (`ethtool -K`).
    #[serde(default)]
    pub features: features::Features,
}

impl LinkParams {
    /// The RX coalescer's settings.
    pub fn rx_coalescing(&self) -> coalesce::CoalesceSettings {
        coalesce::CoalesceSettings {
            usecs: self.rx_usecs,
            max_frames: self.rx_frames,
            cqe: self.rx_cqe,
            adaptive: self.rx_adaptive.then_some(dim::DimSide::Rx),
        }
    }

    /// The TX completion coalescer's settings.
    pub fn tx_coalescing(&self) -> coalesce::CoalesceSettings {
        coalesce::CoalesceSettings {
            usecs: self.tx_usecs,
            max_frames: self.tx_frames,
            cqe: self.tx_cqe,
            adaptive: self.tx_adaptive.then_some(dim::DimSide::Tx),
        }
    }

    /// The device below `dir`'s qdisc tree these parameters describe:
    /// its txqueuelen, MTU and TX queues (default qdisc pfifo_fast), with
    /// the qdisc kinds of `kinds`.
    pub fn dev_spec(&self, dir: Dir, kinds: &'static [KindEntry]) -> DevSpec {
        DevSpec {
            txqueuelen: self.txqueuelen,
            mtu: self.mtu,
            tx_queues: self.tx_queues,
            ..DevSpec::new(dir, kinds)
        }
    }
}

fn one_queue() -> u16 {
    1
}

impl Default for LinkParams {
    fn default() -> Self {
        LinkParams {
            rate_bytes_ps: 12_500_000,
            overhead: 0,
            delay_ns: 0,
            tx_ring: 256,
            tx_stop_threshold: 0,
            tx_post_ns: 0,
            bql: true,
            tx_usecs: 0,
            tx_frames: 1,
            rx_usecs: 0,
            rx_frames: 1,
            rx_cqe: false,
            tx_cqe: false,
            rx_adaptive: false,
            tx_adaptive: false,
            bulk_dequeue: true,
            mtu: 1500,
            txqueuelen: 1000,
            tx_queues: 1,
            features: features::Features::default(),
        }
    }
}
