//! The two directions of the emulated link, left→right and right→left, and
//! the ingress checks in front of them: frames shorter than an Ethernet
//! header (runts) and frames longer than the MTU allows (14 bytes of header
//! plus 4 per VLAN tag) are dropped and counted in their direction; the rest
//! are classified once and handed to that direction's `Path`.

use crate::link::path::PathSnapshot;
use crate::link::Path;
use crate::packet::{DropReason, Packet};
use crate::time::{earliest, Instant};

/// Ethernet header without FCS.
const ETH_HLEN: usize = 14;
const VLAN_HLEN: usize = 4;
/// 802.1Q and 802.1ad (QinQ) tag protocol identifiers.
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88A8;

/// A direction through the bridge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Dir {
    LeftToRight,
    RightToLeft,
}

impl Dir {
    pub const ALL: [Dir; 2] = [Dir::LeftToRight, Dir::RightToLeft];

    pub fn index(self) -> usize {
        match self {
            Dir::LeftToRight => 0,
            Dir::RightToLeft => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dir::LeftToRight => "left_to_right",
            Dir::RightToLeft => "right_to_left",
        }
    }

    pub fn reverse(self) -> Dir {
        match self {
            Dir::LeftToRight => Dir::RightToLeft,
            Dir::RightToLeft => Dir::LeftToRight,
        }
    }
}

/// Both directions at one instant, indexed by `Dir::index()`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BridgeSnapshot {
    pub at: Instant,
    pub paths: [PathSnapshot; 2],
}

impl BridgeSnapshot {
    pub fn path(&self, dir: Dir) -> &PathSnapshot {
        &self.paths[dir.index()]
    }
}

pub struct Bridge {
    paths: [Path; 2],
    /// Per-direction sequence numbers given to frames at ingress.
    next_id: [u64; 2],
    /// Buffers of frames refused at ingress, returned by the next `poll`.
    rejected: Vec<Vec<u8>>,
    /// Scratch lists reused by `poll`.
    out_scratch: Vec<Packet>,
    freed_scratch: Vec<Packet>,
    now: Instant,
}

/// Bytes of VLAN tags after the MAC addresses (nested tags allowed).
fn vlan_tag_bytes(frame: &[u8]) -> usize {
    let mut off = 12;
    while let Some(tpid) = frame.get(off..off + 2) {
        let tpid = u16::from_be_bytes([tpid[0], tpid[1]]);
        if tpid != ETH_P_8021Q && tpid != ETH_P_8021AD {
            break;
        }
        off += VLAN_HLEN;
    }
    off - 12
}

impl Bridge {
    pub fn new(l2r: Path, r2l: Path) -> Bridge {
        Bridge {
            paths: [l2r, r2l],
            next_id: [0; 2],
            rejected: Vec::new(),
            out_scratch: Vec::new(),
            freed_scratch: Vec::new(),
            now: Instant::ZERO,
        }
    }

    pub fn path(&self, dir: Dir) -> &Path {
        &self.paths[dir.index()]
    }

    pub fn path_mut(&mut self, dir: Dir) -> &mut Path {
        &mut self.paths[dir.index()]
    }

    /// A frame read from the `dir` sending side at `now`.
    pub fn ingress(&mut self, dir: Dir, frame: Vec<u8>, now: Instant) {
        self.now = self.now.max(now);
        let path = &mut self.paths[dir.index()];
        let len = frame.len();
        let max_len = path.params().mtu as usize + ETH_HLEN + vlan_tag_bytes(&frame);
        let reject = if len < ETH_HLEN {
            Some(DropReason::Runt)
        } else if len > max_len {
            Some(DropReason::Oversize)
        } else {
            None
        };
        if let Some(reason) = reject {
            path.count_rejected(len.min(u32::MAX as usize) as u32, reason);
            self.rejected.push(frame);
            return;
        }
        let mut pkt = Packet::from_frame(frame, now);
        let id = &mut self.next_id[dir.index()];
        pkt.meta.id = *id;
        *id += 1;
        path.ingress(pkt, now);
    }

    /// Advances both directions to `now`: frames to write to the receiving
    /// side go to `out` with their direction, buffers to recycle to `freed`.
    pub fn poll(&mut self, now: Instant, out: &mut Vec<(Dir, Packet)>, freed: &mut Vec<Vec<u8>>) {
        self.now = self.now.max(now);
        freed.append(&mut self.rejected);
        for dir in Dir::ALL {
            self.paths[dir.index()].poll(now, &mut self.out_scratch, &mut self.freed_scratch);
            out.extend(self.out_scratch.drain(..).map(|p| (dir, p)));
            freed.extend(self.freed_scratch.drain(..).map(|p| p.data));
        }
    }

    /// The next time `poll` has something to do.
    pub fn poll_at(&self) -> Option<Instant> {
        let pending = (!self.rejected.is_empty()).then_some(self.now);
        self.paths.iter().map(Path::poll_at).fold(pending, earliest)
    }

    pub fn snapshot(&self, now: Instant) -> BridgeSnapshot {
        BridgeSnapshot {
            at: now,
            paths: [self.paths[0].snapshot(now), self.paths[1].snapshot(now)],
        }
    }
}
