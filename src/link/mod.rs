//! The emulated link below the qdisc, one direction at a time: the driver TX
//! ring with BQL (`ring`), TX completion and RX interrupt coalescing
//! (`coalesce`), the line-rate serializer (`serializer`), the propagation
//! delay line (`delay`), and `Path`, which composes them behind a qdisc.
//! Every stage is a pure state machine driven with explicit times.

pub mod coalesce;
pub mod delay;
pub mod path;
pub mod ring;
pub mod serializer;

pub use path::{Path, PathCounters, PathSnapshot};

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
    /// Byte queue limits on the TX queue.
    pub bql: bool,
    /// TX completion coalescing (ethtool -C tx-usecs / tx-frames).
    pub tx_usecs: u32,
    pub tx_frames: u32,
    /// RX interrupt coalescing (ethtool -C rx-usecs / rx-frames).
    pub rx_usecs: u32,
    pub rx_frames: u32,
    /// Qdisc bulk dequeue (try_bulk_dequeue_skb) on or off.
    pub bulk_dequeue: bool,
    /// Device MTU (frames up to MTU + 14 bytes pass; larger are dropped).
    pub mtu: u32,
    /// Device txqueuelen (default limits of pfifo_fast and friends).
    pub txqueuelen: u32,
}

impl Default for LinkParams {
    fn default() -> Self {
        LinkParams {
            rate_bytes_ps: 12_500_000,
            overhead: 0,
            delay_ns: 0,
            tx_ring: 256,
            bql: true,
            tx_usecs: 0,
            tx_frames: 1,
            rx_usecs: 0,
            rx_frames: 1,
            bulk_dequeue: true,
            mtu: 1500,
            txqueuelen: 1000,
        }
    }
}
