//! tc filters that steer frames to classes (HTB, QFQ) or flow buckets (SFQ,
//! fq_codel: `qdisc::flow_bucket`), as the kernel holds them once `tc
//! filter add` has sent them (cls_u32, cls_matchall, cls_flow, act_skbedit):
//! a `Filter` is one classifier instance with its u32 selectors (typed
//! `Match`es on addresses, ports, protocol and TOS, plus the raw `U32Key`s
//! the kernel stores), `flowid` and skbedit priority. A `FilterChain` holds a
//! qdisc's filters in the kernel's order (prio, then insertion), numbers
//! them as the kernel does (u32 handles, automatic prio) and classifies a
//! frame with no allocation. The words of `tc filter` are parsed and the
//! chain printed by the tc front end (`crate::tc::filter`).
//!
//! Matching is on the fields the classifier parsed (`PacketMeta`), not on raw
//! offsets: `match ip sport` therefore also matches IPv4 packets with options,
//! and `match ip6 dport` IPv6 packets with extension headers, where the
//! kernel's fixed u32 offsets would not. An `ip` key only matches IPv4
//! frames and an `ip6` key only IPv6 frames. `protocol ip|ipv6` looks at the
//! IP layer inside VLAN tags (like a kernel with VLAN offload). Raw
//! `match u32|u16|u8 V M` keys are supported with mask 0 (the "match
//! everything" idiom) only.

mod flow;

pub use flow::{FlowClassifier, FlowMode, EMULATED_KEYS, FLOW_KEYS};

use super::{PacketMeta, L3};
use crate::handle::Handle;
use crate::refusal::{Errno, Refusal};

/// The `protocol` a filter applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterProtocol {
    /// `all` (ETH_P_ALL): every frame.
    All,
    /// `ip` (ETH_P_IP).
    Ip,
    /// `ipv6` (ETH_P_IPV6).
    Ipv6,
}

impl FilterProtocol {
    /// The word tc prints after `protocol`: `all`, `ip` or `ipv6`.
    pub fn name(self) -> &'static str {
        match self {
            FilterProtocol::All => "all",
            FilterProtocol::Ip => "ip",
            FilterProtocol::Ipv6 => "ipv6",
        }
    }

    fn admits(self, l3: L3) -> bool {
        match self {
            FilterProtocol::All => true,
            FilterProtocol::Ip => matches!(l3, L3::Ipv4 { .. }),
            FilterProtocol::Ipv6 => matches!(l3, L3::Ipv6 { .. }),
        }
    }
}

/// The classifier: u32 and matchall send a match to `Filter::flowid`;
/// `flow` computes the class from the frame with its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterKind {
    /// `u32` (net/sched/cls_u32.c): selectors on header fields.
    U32,
    /// `matchall` (net/sched/cls_matchall.c): every frame of the protocol.
    Matchall,
    /// `flow` (net/sched/cls_flow.c): the class computed from the frame's keys.
    Flow(FlowClassifier),
}

impl FilterKind {
    /// The classifier's name as tc prints it: `u32`, `matchall` or `flow`.
    pub fn name(&self) -> &'static str {
        match self {
            FilterKind::U32 => "u32",
            FilterKind::Matchall => "matchall",
            FilterKind::Flow(_) => "flow",
        }
    }
}

/// The address family a selector reads (`match ip` or `match ip6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `match ip`: IPv4 frames only.
    V4,
    /// `match ip6`: IPv6 frames only.
    V6,
}

/// The packet field a selector compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// The source address (`src ADDR/LEN`).
    Src,
    /// The destination address (`dst ADDR/LEN`).
    Dst,
    /// The TCP/UDP source port (`sport N MASK`).
    Sport,
    /// The TCP/UDP destination port (`dport N MASK`).
    Dport,
    /// IPv4 protocol / IPv6 final next header.
    Protocol,
    /// The TOS byte / IPv6 traffic class (`tos`, `dsfield`, `ip6 priority`).
    Dsfield,
}

/// One selector: a frame of `family` matches when
/// `field & mask == value` (`value` is stored already masked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Match {
    /// The address family the selector applies to; frames of the other family
    /// never match.
    pub family: Family,
    /// The field compared.
    pub field: Field,
    /// The value the masked field must equal, already masked; addresses in host
    /// order (an IPv4 address in the low 32 bits).
    pub value: u128,
    /// The mask applied to the field (an address prefix of /24 is 0xFFFF_FF00
    /// for IPv4).
    pub mask: u128,
}

impl Match {
    /// A selector, its value masked.
    pub fn new(family: Family, field: Field, value: u128, mask: u128) -> Self {
        Match {
            family,
            field,
            value: value & mask,
            mask,
        }
    }

    /// Whether the frame's parsed fields satisfy the selector (false for a
    /// frame of another family or not IP).
    pub fn matches(&self, meta: &PacketMeta) -> bool {
        let family_ok = matches!(
            (self.family, meta.l3),
            (Family::V4, L3::Ipv4 { .. }) | (Family::V6, L3::Ipv6 { .. })
        );
        if !family_ok {
            return false;
        }
        let address = |a: &[u8; 16]| match self.family {
            Family::V4 => u32::from_be_bytes([a[12], a[13], a[14], a[15]]) as u128,
            Family::V6 => u128::from_be_bytes(*a),
        };
        let field = match self.field {
            Field::Src => address(&meta.flow.src),
            Field::Dst => address(&meta.flow.dst),
            Field::Sport => meta.flow.src_port as u128,
            Field::Dport => meta.flow.dst_port as u128,
            Field::Protocol => meta.flow.proto as u128,
            Field::Dsfield => meta.dsfield as u128,
        };
        field & self.mask == self.value
    }
}

/// One `tc filter`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// `parent X:` / `root` as given (`None`: not given; tc then means root).
    pub parent: Option<Handle>,
    /// Which frames the filter looks at (`protocol all|ip|ipv6`).
    pub protocol: FilterProtocol,
    /// `prio`/`pref`; 0 until a `FilterChain` assigns the kernel's automatic
    /// one (49152, then one less than the first filter's).
    pub prio: u16,
    /// The classifier and, for `flow`, its options.
    pub kind: FilterKind,
    /// All must match (an empty list matches every frame of `protocol`).
    pub matches: Vec<Match>,
    /// The same selectors as the kernel's u32 classifier stores them
    /// (merged per offset), for `tc filter show`.
    pub keys: Vec<U32Key>,
    /// `flowid`/`classid`; 0 when only an action was given, or for `flow`,
    /// which computes the class per frame.
    pub flowid: Handle,
    /// `action skbedit priority X`: the new `skb->priority`.
    pub skbedit_priority: Option<u32>,
    /// The kernel handle: given (`flow`, which needs one) or given by the
    /// `FilterChain` (u32 `800::800`, matchall 1; 0 until added).
    pub handle: u32,
    /// The skbedit action's index (given by the chain; 0 without action).
    pub action_index: u32,
}

/// One key of the kernel's u32 selector: the 32-bit word at `off` from the
/// network header, masked, must equal `val` (both in host order here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct U32Key {
    /// The value of the masked word (`struct tc_u32_key` `val`,
    /// include/uapi/linux/pkt_cls.h).
    pub val: u32,
    /// The mask (`tc_u32_key` `mask`).
    pub mask: u32,
    /// Offset of the 32-bit word from the network header, bytes (`tc_u32_key`
    /// `off`).
    pub off: i32,
}

impl Filter {
    /// A `kind` filter of `protocol` sending what matches `matches` to
    /// `flowid`: no parent (the qdisc's own block), no prio, handle or
    /// action yet (a chain numbers them on `add`), no u32 keys for `tc
    /// filter show` (the front end's parser fills those).
    pub fn new(
        protocol: FilterProtocol,
        kind: FilterKind,
        matches: Vec<Match>,
        flowid: Handle,
    ) -> Filter {
        Filter {
            parent: None,
            protocol,
            prio: 0,
            kind,
            matches,
            keys: Vec::new(),
            flowid,
            skbedit_priority: None,
            handle: 0,
            action_index: 0,
        }
    }

    /// Whether the frame is of the filter's protocol and every key matches.
    pub fn matches(&self, meta: &PacketMeta) -> bool {
        self.protocol.admits(meta.l3) && self.matches.iter().all(|m| m.matches(meta))
    }

    /// The class a matching frame goes to: `flowid`, or what the `flow`
    /// classifier computes from the frame.
    pub fn classid(&self, meta: &PacketMeta) -> Handle {
        match &self.kind {
            FilterKind::Flow(flow) => flow.classid(meta),
            _ => self.flowid,
        }
    }

    /// Fills in what depends on the qdisc the filter is added to (the
    /// `flow` classifier's default `baseclass`, `<major>:1`).
    pub fn bind(&mut self, qdisc: Handle) {
        if let FilterKind::Flow(flow) = &mut self.kind {
            flow.bind(qdisc, self.handle);
        }
    }
}

/// The filters of one qdisc, in classification order.
#[derive(Clone, Debug, Default)]
pub struct FilterChain {
    filters: Vec<Filter>,
    /// Hash-table ids handed to u32 prio groups after the first (the
    /// kernel's cyclic `gen_new_htid`: 801, 802, ...).
    next_ht: u32,
    /// skbedit action indexes handed out so far.
    actions: u32,
}

/// The kernel's first automatic priority (`TC_H_MAJ(0xC0000000)`).
const AUTO_PRIO_FIRST: u16 = 0xC000;
/// The u32 root hash table of the first group, and the first node id.
const U32_ROOT_HT: u32 = 0x800;
const U32_FIRST_NODE: u32 = 0x800;

impl FilterChain {
    /// An empty chain.
    pub fn new() -> Self {
        FilterChain::default()
    }

    /// Adds a filter after those of lower or equal prio. A filter without a
    /// prio gets the kernel's automatic one: 49152 on an empty chain, else
    /// one less than the first filter's. Filters sharing a prio must share
    /// protocol and kind, and a matchall prio holds one filter (as in the
    /// kernel, where a prio is one classifier instance).
    pub fn add(&mut self, mut filter: Filter) -> Result<(), Refusal> {
        if filter.prio == 0 {
            filter.prio = match self.filters.first() {
                None => AUTO_PRIO_FIRST,
                Some(first) if first.prio > 1 => first.prio - 1,
                Some(_) => {
                    return Err(Refusal::new(
                        Errno::EINVAL,
                        "no automatic priority is left below 1: give \"prio N\".",
                    ))
                }
            };
        }
        let group: Vec<&Filter> = self
            .filters
            .iter()
            .filter(|f| f.prio == filter.prio)
            .collect();
        if let Some(g) = group.first() {
            if g.protocol != filter.protocol || g.kind.name() != filter.kind.name() {
                return Err(Refusal::new(
                    Errno::EINVAL,
                    format!(
                        "prio {} already holds {} {} filters: use another prio for {} {}.",
                        filter.prio,
                        g.protocol.name(),
                        g.kind.name(),
                        filter.protocol.name(),
                        filter.kind.name()
                    ),
                ));
            }
            if g.kind == FilterKind::Matchall {
                return Err(Refusal::new(
                    Errno::EEXIST,
                    format!(
                        "prio {} already holds a matchall filter (one per prio).",
                        filter.prio
                    ),
                ));
            }
        }
        filter.handle = match filter.kind {
            FilterKind::Flow(_) if group.iter().any(|f| f.handle == filter.handle) => {
                return Err(Refusal::bare(Errno::EEXIST).below(format!(
                    "prio {} already has a flow filter with handle 0x{:x}",
                    filter.prio, filter.handle
                )))
            }
            FilterKind::Flow(_) => filter.handle,
            FilterKind::Matchall => 1,
            FilterKind::U32 => {
                let ht = match group.first() {
                    Some(g) => g.handle >> 20,
                    None if self.filters.iter().all(|f| f.kind != FilterKind::U32) => {
                        self.next_ht = 0;
                        U32_ROOT_HT
                    }
                    None => {
                        self.next_ht = self.next_ht % 0x7fe + 1;
                        U32_ROOT_HT | self.next_ht
                    }
                };
                let node = (U32_FIRST_NODE..)
                    .find(|n| group.iter().all(|f| f.handle & 0xfff != *n))
                    .unwrap_or(U32_FIRST_NODE);
                (ht << 20) | node
            }
        };
        if filter.skbedit_priority.is_some() {
            self.actions += 1;
            filter.action_index = self.actions;
        }
        let at = self.filters.partition_point(|f| f.prio <= filter.prio);
        self.filters.insert(at, filter);
        Ok(())
    }

    /// `tc filter del ... [prio N]`: removes the filters of that prio (all
    /// with `None`), returning how many were removed.
    pub fn delete(&mut self, prio: Option<u16>) -> usize {
        let before = self.filters.len();
        self.filters.retain(|f| prio.is_some_and(|p| f.prio != p));
        before - self.filters.len()
    }

    /// The filters in classification order (prio, then insertion).
    pub fn filters(&self) -> &[Filter] {
        &self.filters
    }

    /// Whether the chain holds no filter.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// Whether a filter sends frames to `classid` (the kernel's "class in
    /// use").
    pub fn targets(&self, classid: Handle) -> bool {
        self.filters.iter().any(|f| f.flowid == classid)
    }

    /// The first matching filter's `(flowid, skbedit priority)`.
    pub fn classify(&self, meta: &PacketMeta) -> Option<(Handle, Option<u32>)> {
        self.filters
            .iter()
            .find(|f| f.matches(meta))
            .map(|f| (f.classid(meta), f.skbedit_priority))
    }
}

#[cfg(test)]
mod tests {
    //! The chain and the matching on typed filters (the words and `tc
    //! filter show`: `crate::tc::filter`).
    use super::*;
    use crate::packet::FlowKey;

    fn u32_filter(
        protocol: FilterProtocol,
        prio: u16,
        matches: Vec<Match>,
        flowid: Handle,
    ) -> Filter {
        Filter {
            prio,
            ..Filter::new(protocol, FilterKind::U32, matches, flowid)
        }
    }

    fn dport(port: u16) -> Match {
        Match::new(Family::V4, Field::Dport, port as u128, 0xffff)
    }

    fn v4(dport: u16) -> PacketMeta {
        PacketMeta {
            l3: L3::Ipv4 { offset: 14 },
            flow: FlowKey {
                dst: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 7],
                dst_port: dport,
                proto: 6,
                ..FlowKey::default()
            },
            ..PacketMeta::default()
        }
    }

    #[test]
    fn matches_and_protocols() {
        let f = u32_filter(FilterProtocol::Ip, 1, vec![dport(80)], 0x1_0001);
        assert!(f.matches(&v4(80)));
        assert!(!f.matches(&v4(81)));
        assert!(!f.matches(&PacketMeta::default()), "not IP");
        let all = u32_filter(FilterProtocol::All, 1, Vec::new(), 0x1_0001);
        assert!(all.matches(&PacketMeta::default()));
        // The value is stored masked.
        assert_eq!(
            Match::new(Family::V4, Field::Dsfield, 0xb9, 0xfc).value,
            0xb8
        );
    }

    #[test]
    fn chain_numbers_orders_and_classifies_like_the_kernel() {
        let mut c = FilterChain::new();
        c.add(u32_filter(FilterProtocol::Ip, 5, vec![dport(80)], 0x1_0005))
            .unwrap();
        c.add(u32_filter(FilterProtocol::Ip, 1, vec![dport(1)], 0x1_0001))
            .unwrap();
        c.add(u32_filter(FilterProtocol::Ip, 5, Vec::new(), 0x1_0006))
            .unwrap();
        let handles: Vec<u32> = c.filters().iter().map(|f| f.handle).collect();
        assert_eq!(handles, [0x8010_0800, 0x8000_0800, 0x8000_0801]);
        assert_eq!(c.classify(&v4(80)), Some((0x1_0005, None)));
        assert_eq!(c.classify(&v4(1)), Some((0x1_0001, None)));
        assert_eq!(c.classify(&v4(2)), Some((0x1_0006, None)));
        assert!(c.targets(0x1_0006) && !c.targets(0x1_0007));
        let e = c.add(u32_filter(FilterProtocol::Ipv6, 5, Vec::new(), 0x1_0001));
        assert!(e.unwrap_err().says("prio 5 already holds ip u32"));
        assert_eq!(c.delete(Some(5)), 2);
        assert_eq!(c.delete(None), 1);
        assert!(c.is_empty());
        // Automatic prios count down from 49152.
        c.add(u32_filter(FilterProtocol::Ip, 0, Vec::new(), 0x1_0001))
            .unwrap();
        c.add(u32_filter(FilterProtocol::Ip, 0, Vec::new(), 0x1_0002))
            .unwrap();
        let prios: Vec<u16> = c.filters().iter().map(|f| f.prio).collect();
        assert_eq!(prios, [49151, 49152]);
    }

    #[test]
    fn flow_maps_a_key_from_its_baseclass() {
        let map = FlowMode::Map {
            mask: 0xff,
            xor: 0,
            rshift: 0,
            addend: 0,
        };
        let mut f = Filter {
            kind: FilterKind::Flow(FlowClassifier::new(map, 1 << 1, 0, 0x1_0010)),
            handle: 1,
            ..u32_filter(FilterProtocol::Ip, 1, Vec::new(), 0)
        };
        f.bind(0x1_0000);
        // The last octet of dst 10.0.0.7 from baseclass 1:10.
        assert_eq!(f.classid(&v4(80)), 0x1_0017);
    }
}
