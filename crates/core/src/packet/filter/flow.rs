//! The `flow` classifier (Linux `cls_flow`): the class comes from the
//! frame's own fields, not from a fixed `flowid`. In hash mode (`flow hash
//! keys dst divisor 1024`) the chosen keys are hashed; in map mode (`flow
//! map key dst and 0xff`) one key's value is masked, shifted and offset.
//! Either way the result, modulo `divisor` where one is given, is added to
//! `baseclass` (default `<qdisc major>:1`). On SFQ and fq_codel that picks
//! the flow bucket: `keys dst` gives per-host instead of per-flow fairness.
//!
//! Key values follow the kernel's `flow_get_*`: `src`/`dst` are the IPv4
//! address, or the XOR of an IPv6 address's four words; `proto` the IP
//! protocol; `proto-src`/`proto-dst` the ports; `priority` `skb->priority`.
//! Where the kernel falls back to a socket or route pointer (no IP, no
//! ports) the value here is 0. The hash is keyed per filter, so buckets
//! differ from a kernel's (whose key is random too); which frames share a
//! bucket does not. Not emulated: `perturb`, ematches, `police`, and the
//! keys that need a socket, conntrack or route (`iif`, `mark`, `nfct*`,
//! `rt-classid`, `sk-uid`, `sk-gid`, `rxhash`, `vlan-tag`).

use crate::handle::{tc_h_major, tc_h_make, tc_h_minor, Handle};
use crate::packet::keyed_flow_hash;
use crate::packet::{PacketMeta, L3};

/// The number of keys (`FLOW_KEY_MAX + 1`): bit i of a key mask is key i
/// of `enum flow_keys` (include/uapi/linux/pkt_cls.h: src, dst, proto,
/// proto-src, proto-dst, iif, priority, mark, nfct, nfct-src, nfct-dst,
/// nfct-proto-src, nfct-proto-dst, rt-classid, sk-uid, sk-gid, vlan-tag,
/// rxhash).
pub const FLOW_KEYS: usize = 18;
/// The keys emulated here (`FLOW_KEY_*` bit numbers).
const SRC: usize = 0;
const DST: usize = 1;
const PROTO: usize = 2;
const PROTO_SRC: usize = 3;
const PROTO_DST: usize = 4;
const PRIORITY: usize = 6;
/// The mask of the keys emulated here: the others need a socket,
/// conntrack or a route.
pub const EMULATED_KEYS: u32 =
    1 << SRC | 1 << DST | 1 << PROTO | 1 << PROTO_SRC | 1 << PROTO_DST | 1 << PRIORITY;

/// Hash or map mode, with map mode's operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowMode {
    /// `flow hash` (`FLOW_MODE_HASH`): the chosen keys hashed together.
    Hash,
    /// `((value & mask) ^ xor) >> rshift) + addend`.
    Map {
        /// `and MASK` (`TCA_FLOW_MASK`), applied first.
        mask: u32,
        /// `xor VALUE` (`TCA_FLOW_XOR`).
        xor: u32,
        /// `rshift N` (`TCA_FLOW_RSHIFT`), bits.
        rshift: u32,
        /// `addend VALUE` (`TCA_FLOW_ADDEND`), added last.
        addend: u32,
    },
}

/// One `flow` filter's options (`TCA_FLOW_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowClassifier {
    /// Hash or map (`TCA_FLOW_MODE`).
    pub mode: FlowMode,
    /// `TCA_FLOW_KEYS`: bit i set, key i (`FLOW_KEYS`).
    pub keys: u32,
    /// 0: no modulo.
    pub divisor: u32,
    /// As given (0: `<qdisc major>:1`, fixed by `bind`).
    pub baseclass: Handle,
    hash_key: u32,
}

impl FlowClassifier {
    /// A filter's options as `tc filter add` sends them (unbound: no hash
    /// key, the baseclass as given).
    pub fn new(mode: FlowMode, keys: u32, divisor: u32, baseclass: Handle) -> Self {
        FlowClassifier {
            mode,
            keys,
            divisor,
            baseclass,
            hash_key: 0,
        }
    }

    /// Completes the defaults the kernel fills in when the filter is
    /// created under `qdisc` (`flow_change`), and keys the hash by the
    /// filter's handle.
    pub(super) fn bind(&mut self, qdisc: Handle, handle: u32) {
        let mut base = self.baseclass;
        if tc_h_major(base) == 0 {
            base = tc_h_make(tc_h_major(qdisc), tc_h_minor(base));
        }
        if tc_h_minor(base) == 0 {
            base = tc_h_make(tc_h_major(base), 1);
        }
        self.baseclass = base;
        self.hash_key = keyed_flow_hash(handle, qdisc);
    }

    /// The class of a frame (`flow_classify`): `TC_H_MAKE(baseclass,
    /// baseclass + value)`, the value reduced modulo `divisor`.
    pub fn classid(&self, meta: &PacketMeta) -> Handle {
        let mut keys = (0..FLOW_KEYS)
            .filter(|i| self.keys & (1 << i) != 0)
            .map(|i| key_value(i, meta));
        let mut v = match self.mode {
            FlowMode::Hash => keys.fold(self.hash_key, keyed_flow_hash),
            FlowMode::Map {
                mask,
                xor,
                rshift,
                addend,
            } => {
                // Map mode has one key.
                let v = keys.next().unwrap_or(0);
                ((v & mask) ^ xor).wrapping_shr(rshift).wrapping_add(addend)
            }
        };
        if self.divisor != 0 {
            v %= self.divisor;
        }
        let minor = self.baseclass.wrapping_add(v) & 0xffff;
        (self.baseclass & 0xffff_0000) | minor
    }
}

/// The value of key `i` (`FLOW_KEYS` order) for a frame.
fn key_value(i: usize, meta: &PacketMeta) -> u32 {
    let addr = |a: &[u8; 16]| match meta.l3 {
        L3::Ipv4 { .. } => u32::from_be_bytes([a[12], a[13], a[14], a[15]]),
        L3::Ipv6 { .. } => a
            .chunks(4)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
            .fold(0, |x, w| x ^ w),
        _ => 0,
    };
    match i {
        SRC => addr(&meta.flow.src),
        DST => addr(&meta.flow.dst),
        PROTO if matches!(meta.l3, L3::Ipv4 { .. } | L3::Ipv6 { .. }) => meta.flow.proto as u32,
        PROTO_SRC => meta.flow.src_port as u32,
        PROTO_DST => meta.flow.dst_port as u32,
        PRIORITY => meta.priority,
        _ => 0,
    }
}
