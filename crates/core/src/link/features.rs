//! The emulated device's netdev features, as `ethtool -k` lists them and
//! `ethtool -K` changes them. The table is the kernel's feature strings
//! (`netdev_features_strings`, net/ethtool/common.c) in the kernel's bit
//! order (include/linux/netdev_features.h), with the state of a TAP that
//! bloatbox opens with its offloads (`TUNSETOFFLOAD` with checksum, TSO4,
//! TSO6 and TSO-ECN; drivers/net/tun.c): which features can change, which
//! are on, and which the device can never turn on. A request changes the
//! *wanted* set; the *active* set follows from it by the kernel's rules in
//! `netdev_fix_features` (net/core/dev.c): TSO needs scatter-gather and a
//! checksum offload, GSO needs scatter-gather, TSO-ECN and IPv4 ID mangling
//! need IPv4 TSO. Of these, the segmentation offloads act on the link: with
//! TSO and GSO both off the sending stack builds MTU-sized packets, so the
//! direction's qdisc sees per-MTU segments (`passes_super_frames`).

use std::fmt;

/// The `ethtool -K` short name and `ethtool -k` long name of a group of
/// features (ethtool's `off_flag_def`), in ethtool's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// ethtool's `rx` / `rx-checksumming`.
    RxChecksum,
    /// ethtool's `tx` / `tx-checksumming`.
    TxChecksum,
    /// ethtool's `sg` / `scatter-gather`.
    ScatterGather,
    /// ethtool's `tso` / `tcp-segmentation-offload`.
    Tso,
    /// ethtool's `gso` / `generic-segmentation-offload`.
    Gso,
    /// ethtool's `gro` / `generic-receive-offload`.
    Gro,
    /// ethtool's `lro` / `large-receive-offload`.
    Lro,
    /// ethtool's `rxvlan` / `rx-vlan-offload`.
    RxVlan,
    /// ethtool's `txvlan` / `tx-vlan-offload`.
    TxVlan,
    /// ethtool's `ntuple` / `ntuple-filters`.
    Ntuple,
    /// ethtool's `rxhash` / `receive-hashing`.
    RxHash,
}

impl Group {
    /// Every group, in ethtool's order (`off_flag_def` of ethtool's common.c).
    pub const ALL: [Group; 11] = [
        Group::RxChecksum,
        Group::TxChecksum,
        Group::ScatterGather,
        Group::Tso,
        Group::Gso,
        Group::Gro,
        Group::Lro,
        Group::RxVlan,
        Group::TxVlan,
        Group::Ntuple,
        Group::RxHash,
    ];

    /// ethtool's short name (`ethtool -K dev tso off`).
    pub fn short_name(self) -> &'static str {
        match self {
            Group::RxChecksum => "rx",
            Group::TxChecksum => "tx",
            Group::ScatterGather => "sg",
            Group::Tso => "tso",
            Group::Gso => "gso",
            Group::Gro => "gro",
            Group::Lro => "lro",
            Group::RxVlan => "rxvlan",
            Group::TxVlan => "txvlan",
            Group::Ntuple => "ntuple",
            Group::RxHash => "rxhash",
        }
    }

    /// ethtool's long name (`ethtool -k`'s group lines).
    pub fn long_name(self) -> &'static str {
        match self {
            Group::RxChecksum => "rx-checksumming",
            Group::TxChecksum => "tx-checksumming",
            Group::ScatterGather => "scatter-gather",
            Group::Tso => "tcp-segmentation-offload",
            Group::Gso => "generic-segmentation-offload",
            Group::Gro => "generic-receive-offload",
            Group::Lro => "large-receive-offload",
            Group::RxVlan => "rx-vlan-offload",
            Group::TxVlan => "tx-vlan-offload",
            Group::Ntuple => "ntuple-filters",
            Group::RxHash => "receive-hashing",
        }
    }

    /// The group a short or long name names.
    pub fn by_name(name: &str) -> Option<Group> {
        Group::ALL
            .into_iter()
            .find(|g| g.short_name() == name || g.long_name() == name)
    }

    /// The indices (into `FEATURES`) of the group's features.
    pub fn members(self) -> impl Iterator<Item = usize> {
        FEATURES
            .iter()
            .enumerate()
            .filter(move |(_, f)| f.group == Some(self))
            .map(|(i, _)| i)
    }
}

/// How a feature of the emulated device behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Not in the device's `hw_features`: always in this state (`[fixed]`).
    Fixed(bool),
    /// Changeable, on or off at first.
    Changeable(bool),
    /// Listed as changeable, but the device never turns it on (a TAP that
    /// was not told the reader handles it): a request for on stays
    /// `off [requested on]`.
    NeverOn,
}

/// One netdev feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureDef {
    /// The kernel's name (`netdev_features_strings`).
    pub name: &'static str,
    /// The `ethtool -K` group the feature belongs to, if it has one.
    pub group: Option<Group>,
    /// How the emulated device treats the feature: fixed, changeable, or never
    /// on.
    pub kind: Kind,
}

const fn f(name: &'static str, group: Option<Group>, kind: Kind) -> FeatureDef {
    FeatureDef { name, group, kind }
}

use Group as G;
use Kind::{Changeable as C, Fixed as X, NeverOn};

/// The features, in the kernel's bit order.
pub const FEATURES: [FeatureDef; 60] = [
    f("tx-scatter-gather", Some(G::ScatterGather), C(true)),
    f("tx-checksum-ipv4", Some(G::TxChecksum), X(false)),
    f("tx-checksum-ip-generic", Some(G::TxChecksum), C(true)),
    f("tx-checksum-ipv6", Some(G::TxChecksum), X(false)),
    f("highdma", None, X(false)),
    f(
        "tx-scatter-gather-fraglist",
        Some(G::ScatterGather),
        C(true),
    ),
    f("tx-vlan-hw-insert", Some(G::TxVlan), C(true)),
    f("rx-vlan-hw-parse", Some(G::RxVlan), X(false)),
    f("rx-vlan-filter", None, X(false)),
    f("vlan-challenged", None, X(false)),
    f("tx-generic-segmentation", Some(G::Gso), C(true)),
    f("rx-gro", Some(G::Gro), C(true)),
    f("rx-lro", Some(G::Lro), X(false)),
    f("tx-tcp-segmentation", Some(G::Tso), C(true)),
    f("tx-gso-robust", None, X(false)),
    f("tx-tcp-ecn-segmentation", Some(G::Tso), C(true)),
    f("tx-tcp-mangleid-segmentation", Some(G::Tso), C(false)),
    f("tx-tcp6-segmentation", Some(G::Tso), C(true)),
    f("tx-fcoe-segmentation", None, X(false)),
    f("tx-gre-segmentation", None, X(false)),
    f("tx-gre-csum-segmentation", None, X(false)),
    f("tx-ipxip4-segmentation", None, X(false)),
    f("tx-ipxip6-segmentation", None, X(false)),
    f("tx-udp_tnl-segmentation", None, NeverOn),
    f("tx-udp_tnl-csum-segmentation", None, NeverOn),
    f("tx-gso-partial", None, X(false)),
    f("tx-tunnel-remcsum-segmentation", None, X(false)),
    f("tx-sctp-segmentation", None, X(false)),
    f("tx-esp-segmentation", None, X(false)),
    f("tx-udp-segmentation", None, NeverOn),
    f("tx-gso-list", None, X(false)),
    f("tx-tcp-accecn-segmentation", Some(G::Tso), X(false)),
    f("tx-checksum-fcoe-crc", Some(G::TxChecksum), X(false)),
    f("tx-checksum-sctp", Some(G::TxChecksum), X(false)),
    f("rx-ntuple-filter", Some(G::Ntuple), X(false)),
    f("rx-hashing", Some(G::RxHash), X(false)),
    f("rx-checksum", Some(G::RxChecksum), X(false)),
    f("tx-nocache-copy", None, C(false)),
    f("loopback", None, X(false)),
    f("rx-fcs", None, X(false)),
    f("rx-all", None, X(false)),
    f("tx-vlan-stag-hw-insert", None, C(true)),
    f("rx-vlan-stag-hw-parse", None, X(false)),
    f("rx-vlan-stag-filter", None, X(false)),
    f("l2-fwd-offload", None, X(false)),
    f("hw-tc-offload", None, X(false)),
    f("esp-hw-offload", None, X(false)),
    f("esp-tx-csum-hw-offload", None, X(false)),
    f("rx-udp_tunnel-port-offload", None, X(false)),
    f("tls-hw-tx-offload", None, X(false)),
    f("tls-hw-rx-offload", None, X(false)),
    f("rx-gro-hw", None, X(false)),
    f("tls-hw-record", None, X(false)),
    f("rx-gro-list", None, C(false)),
    f("macsec-hw-offload", None, X(false)),
    f("rx-udp-gro-forwarding", None, C(false)),
    f("hsr-tag-ins-offload", None, X(false)),
    f("hsr-tag-rm-offload", None, X(false)),
    f("hsr-fwd-offload", None, X(false)),
    f("hsr-dup-offload", None, X(false)),
];

/// The index of the feature named `name` (the kernel's name).
pub fn index(name: &str) -> Option<usize> {
    FEATURES.iter().position(|f| f.name == name)
}

fn bit(name: &str) -> u64 {
    match index(name) {
        Some(i) => 1 << i,
        None => 0,
    }
}

/// A set of features, one bit per `FEATURES` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FeatureSet(pub u64);

impl FeatureSet {
    /// Whether feature `i` (an index into `FEATURES`) is in the set.
    pub fn contains(self, i: usize) -> bool {
        self.0 & (1 << i) != 0
    }

    fn with(self, i: usize, on: bool) -> FeatureSet {
        if on {
            FeatureSet(self.0 | (1 << i))
        } else {
            FeatureSet(self.0 & !(1 << i))
        }
    }

    fn any(self, names: &[&str]) -> bool {
        names.iter().any(|n| self.0 & bit(n) != 0)
    }

    fn without(self, names: &[&str]) -> FeatureSet {
        FeatureSet(names.iter().fold(self.0, |s, n| s & !bit(n)))
    }
}

/// The TSO features (`NETIF_F_ALL_TSO`).
const ALL_TSO: [&str; 5] = [
    "tx-tcp-segmentation",
    "tx-tcp-ecn-segmentation",
    "tx-tcp-mangleid-segmentation",
    "tx-tcp6-segmentation",
    "tx-tcp-accecn-segmentation",
];

/// The device's features: what was asked for (`wanted`, as the kernel's
/// `dev->wanted_features`); the active set follows (`active`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Features {
    wanted: FeatureSet,
}

impl Default for Features {
    /// A TAP opened with bloatbox's offloads.
    fn default() -> Features {
        let wanted = FEATURES
            .iter()
            .enumerate()
            .filter(|(_, f)| matches!(f.kind, Kind::Changeable(true)))
            .fold(0, |s, (i, _)| s | 1 << i);
        Features {
            wanted: FeatureSet(wanted),
        }
    }
}

/// A feature the device cannot change (`ethtool -k` marks it `[fixed]`).
pub fn is_fixed(i: usize) -> bool {
    matches!(FEATURES[i].kind, Kind::Fixed(_))
}

impl Features {
    /// What was asked for (changeable features only).
    pub fn wanted(&self) -> FeatureSet {
        self.wanted
    }

    /// Whether feature `i` was asked for: the fixed state for a feature
    /// that cannot change, else the request.
    pub fn requested(&self, i: usize) -> bool {
        match FEATURES[i].kind {
            Kind::Fixed(on) => on,
            _ => self.wanted.contains(i),
        }
    }

    /// The active features: the wanted ones the device can have, less what
    /// the kernel's `netdev_fix_features` drops.
    pub fn active(&self) -> FeatureSet {
        let mut s = FeatureSet(0);
        for (i, f) in FEATURES.iter().enumerate() {
            let on = match f.kind {
                Kind::Fixed(on) => on,
                Kind::Changeable(_) => self.wanted.contains(i),
                Kind::NeverOn => false,
            };
            s = s.with(i, on);
        }
        // "Dropping TSO features since no SG feature."
        if !s.any(&["tx-scatter-gather"]) {
            s = s.without(&ALL_TSO);
        }
        // "Dropping TSO features since no CSUM feature."
        let csum4 = s.any(&["tx-checksum-ip-generic", "tx-checksum-ipv4"]);
        let csum6 = s.any(&["tx-checksum-ip-generic", "tx-checksum-ipv6"]);
        if !csum4 {
            s = s.without(&["tx-tcp-segmentation", "tx-tcp-ecn-segmentation"]);
        }
        if !csum6 {
            s = s.without(&["tx-tcp6-segmentation"]);
        }
        // "Dropping TSO with IPv4 ID mangling since no TSO."
        if !s.any(&["tx-tcp-segmentation"]) {
            s = s.without(&["tx-tcp-mangleid-segmentation"]);
        }
        // "Dropping TSO_ECN since no TSO" (ECN alone of all TSO features).
        if !s.any(&[
            "tx-tcp-segmentation",
            "tx-tcp-mangleid-segmentation",
            "tx-tcp6-segmentation",
        ]) {
            s = s.without(&["tx-tcp-ecn-segmentation"]);
        }
        // "Dropping NETIF_F_GSO since no SG feature."
        if !s.any(&["tx-scatter-gather"]) {
            s = s.without(&["tx-generic-segmentation"]);
        }
        s
    }

    /// Asks for each `(index, on)` in turn; features that cannot change
    /// keep their state (the kernel masks a request by `hw_features`).
    pub fn request(&self, changes: &[(usize, bool)]) -> Features {
        let wanted = changes
            .iter()
            .filter(|(i, _)| !is_fixed(*i))
            .fold(self.wanted, |s, &(i, on)| s.with(i, on));
        Features { wanted }
    }

    /// Whether the sending stack may hand this device GSO super-packets:
    /// some TSO feature or software GSO is active. With both off, TCP
    /// builds MTU-sized packets (`sk_can_gso`, include/net/sock.h), so
    /// the qdisc sees per-MTU segments.
    pub fn passes_super_frames(&self) -> bool {
        let s = self.active();
        s.any(&ALL_TSO) || s.any(&["tx-generic-segmentation"])
    }
}

/// Serialized as the changeable features' wanted states, by name.
impl serde::Serialize for Features {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let changeable: Vec<usize> = (0..FEATURES.len()).filter(|&i| !is_fixed(i)).collect();
        let mut map = ser.serialize_map(Some(changeable.len()))?;
        for i in changeable {
            map.serialize_entry(FEATURES[i].name, &self.wanted.contains(i))?;
        }
        map.end()
    }
}

impl<'de> serde::Deserialize<'de> for Features {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Features, D::Error> {
        let map = std::collections::BTreeMap::<String, bool>::deserialize(de)?;
        let mut changes = Vec::new();
        for (name, on) in map {
            let i = index(&name).ok_or_else(|| {
                serde::de::Error::custom(format!("unknown netdev feature \"{name}\""))
            })?;
            changes.push((i, on));
        }
        Ok(Features::default().request(&changes))
    }
}

impl fmt::Display for Features {
    /// The changeable features that differ from the default, as `-K`
    /// words (`tx-tcp-segmentation off ...`); empty when none do.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let default = Features::default().wanted;
        let mut first = true;
        for (i, def) in FEATURES.iter().enumerate() {
            if self.wanted.contains(i) != default.contains(i) {
                let on = if self.wanted.contains(i) { "on" } else { "off" };
                write!(f, "{}{} {on}", if first { "" } else { " " }, def.name)?;
                first = false;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(g: Group, on: bool) -> Vec<(usize, bool)> {
        g.members().map(|i| (i, on)).collect()
    }

    fn names(s: FeatureSet) -> Vec<&'static str> {
        (0..FEATURES.len())
            .filter(|&i| s.contains(i))
            .map(|i| FEATURES[i].name)
            .collect()
    }

    #[test]
    fn default_is_a_tap_with_bloatbox_offloads() {
        let d = Features::default();
        assert!(d.passes_super_frames());
        let on = names(d.active());
        for n in [
            "tx-scatter-gather",
            "tx-checksum-ip-generic",
            "tx-tcp-segmentation",
            "tx-tcp-ecn-segmentation",
            "tx-tcp6-segmentation",
            "tx-generic-segmentation",
            "rx-gro",
        ] {
            assert!(on.contains(&n), "{n} off in {on:?}");
        }
        for n in [
            "tx-tcp-mangleid-segmentation",
            "rx-lro",
            "tx-udp-segmentation",
        ] {
            assert!(!on.contains(&n), "{n} on");
        }
    }

    #[test]
    fn tso_and_gso_off_make_the_sender_segment() {
        let d = Features::default();
        let tso_off = d.request(&group(Group::Tso, false));
        assert!(
            tso_off.passes_super_frames(),
            "GSO still builds super-packets"
        );
        let both = tso_off.request(&group(Group::Gso, false));
        assert!(!both.passes_super_frames());
        // Back on: GSO alone is enough.
        assert!(both.request(&group(Group::Gso, true)).passes_super_frames());
    }

    #[test]
    fn the_kernel_s_dependencies_drop_features_without_changing_the_request() {
        let d = Features::default();
        // No checksum offload: TSO goes (tx off), GSO stays.
        let no_csum = d.request(&group(Group::TxChecksum, false));
        let on = names(no_csum.active());
        assert!(!on.iter().any(|n| n.starts_with("tx-tcp")), "{on:?}");
        assert!(on.contains(&"tx-generic-segmentation"));
        assert!(no_csum.requested(index("tx-tcp-segmentation").unwrap()));
        // And comes back with it.
        let back = no_csum.request(&group(Group::TxChecksum, true));
        assert_eq!(back.active(), d.active());
        // No scatter-gather: TSO and GSO go, so frames are segmented.
        let no_sg = d.request(&group(Group::ScatterGather, false));
        assert!(!no_sg.passes_super_frames());
        // Fixed features keep their state whatever is asked.
        let lro = index("rx-lro").unwrap();
        assert_eq!(d.request(&[(lro, true)]), d);
        // NeverOn: asked for, never active.
        let uso = index("tx-udp-segmentation").unwrap();
        let asked = d.request(&[(uso, true)]);
        assert!(asked.requested(uso) && !asked.active().contains(uso));
        // ECN TSO alone is dropped; mangleid needs IPv4 TSO.
        let ecn_only = d.request(&[
            (index("tx-tcp-segmentation").unwrap(), false),
            (index("tx-tcp6-segmentation").unwrap(), false),
        ]);
        assert!(!ecn_only
            .active()
            .contains(index("tx-tcp-ecn-segmentation").unwrap()));
    }

    #[test]
    fn serde_round_trips_and_names_unknown_features() {
        let f = Features::default().request(&group(Group::Tso, false));
        let json = serde_json::to_string(&f).unwrap();
        assert!(json.contains("\"tx-tcp-segmentation\":false"), "{json}");
        let back: Features = serde_json::from_str(&json).unwrap();
        assert_eq!(back, f);
        let e = serde_json::from_str::<Features>("{\"tso-typo\":false}").unwrap_err();
        assert!(e.to_string().contains("tso-typo"), "{e}");
        assert_eq!(Features::default().to_string(), "");
        assert!(f.to_string().contains("tx-tcp-segmentation off"), "{f}");
    }
}
