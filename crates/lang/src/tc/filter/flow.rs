//! The `flow` classifier's words (iproute2 tc/f_flow.c): `hash keys
//! KEY[,KEY...]` or `map key KEY [and|or|xor|rshift|addend N]`, `divisor`,
//! `baseclass`, an skbedit action; parsed into the core's
//! `crate::packet::filter::FlowClassifier` and printed back as `tc filter
//! show` does (`flow_print_opt`).

use super::{arg, parse_classid};
use crate::handle::tc_h_minor;
use crate::packet::filter::{FlowClassifier, FlowMode, EMULATED_KEYS, FLOW_KEYS};
use crate::tc::tokens::c_number;
use crate::tc::tokens::Tokens;
use crate::tc::TcError;

/// tc's key names, in the kernel's bit order (`FLOW_KEY_*`).
const KEY_NAMES: [&str; FLOW_KEYS] = [
    "src",
    "dst",
    "proto",
    "proto-src",
    "proto-dst",
    "iif",
    "priority",
    "mark",
    "nfct",
    "nfct-src",
    "nfct-dst",
    "nfct-proto-src",
    "nfct-proto-dst",
    "rt-classid",
    "sk-uid",
    "sk-gid",
    "vlan-tag",
    "rxhash",
];

/// `flow_parse_opt`: the options after `flow` (all of them: none are
/// shared with other kinds but `action`), and the skbedit priority of an
/// action among them.
pub(super) fn parse(t: &mut Tokens<'_>) -> Result<(FlowClassifier, Option<u32>), TcError> {
    let (mut keys, mut divisor, mut baseclass) = (0, 0, 0);
    let mut hash = false;
    let (mut mask, mut xor, mut rshift, mut addend) = (!0u32, 0u32, 0u32, 0u32);
    let mut skbedit = None;
    let number = |t: &mut Tokens<'_>, what: &str| -> Result<u32, TcError> {
        let v = arg(t, what)?;
        c_number(v)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| TcError::new(format!("Illegal \"{what}\": \"{v}\"")))
    };
    while let Some(tok) = t.next() {
        match tok {
            "hash" => hash = true,
            "map" => hash = false,
            "keys" | "key" => keys = parse_keys(arg(t, tok)?)?,
            // iproute2's transfer_bitop: each operation folds into one
            // mask and one xor.
            "and" => {
                let m = number(t, "mask")?;
                xor &= m;
                mask &= m;
            }
            "or" => {
                let o = number(t, "or")?;
                xor = o ^ (xor & !o);
                mask &= !o;
            }
            "xor" => xor ^= number(t, "xor")?,
            "rshift" => rshift = number(t, "rshift")?,
            "addend" => addend = number(t, "addend")?,
            "divisor" => divisor = number(t, "divisor")?,
            "baseclass" => {
                let v = arg(t, "baseclass")?;
                baseclass = parse_classid(v)
                    .ok()
                    .filter(|&c| tc_h_minor(c) != 0)
                    .ok_or_else(|| TcError::new(format!("Illegal \"baseclass\": \"{v}\"")))?;
            }
            "action" | "actions" => skbedit = Some(super::parse_action(t)?),
            "perturb" | "match" | "police" => {
                return Err(TcError::new(format!(
                    "Error: flow \"{tok}\" is not emulated by bloatbox; leave it out."
                )))
            }
            other => {
                return Err(TcError::new(format!(
                    "What is \"{other}\"? (flow options: hash, map, keys, and, or, xor, \
                     rshift, addend, divisor, baseclass, action)"
                )))
            }
        }
    }
    let nkeys = keys.count_ones();
    if nkeys == 0 {
        return Err(TcError::new(
            "RTNETLINK answers: Invalid argument\n(the flow classifier needs \"keys KEY[,KEY...]\")",
        ));
    }
    if !hash && nkeys > 1 {
        return Err(TcError::new("Invalid mode \"map\" for multiple keys"));
    }
    let mode = if hash {
        FlowMode::Hash
    } else {
        FlowMode::Map {
            mask,
            xor,
            rshift,
            addend,
        }
    };
    Ok((FlowClassifier::new(mode, keys, divisor, baseclass), skbedit))
}

/// The options as `tc filter show` prints them (`flow_print_opt`).
pub(super) fn print(flow: &FlowClassifier) -> String {
    let mut out = String::new();
    out += match flow.mode {
        FlowMode::Hash => "hash ",
        FlowMode::Map { .. } => "map ",
    };
    let names: Vec<&str> = (0..KEY_NAMES.len())
        .filter(|i| flow.keys & (1 << i) != 0)
        .map(|i| KEY_NAMES[i])
        .collect();
    out += &format!("keys {} ", names.join(","));
    if let FlowMode::Map {
        mask,
        xor: val,
        rshift,
        addend,
    } = flow.mode
    {
        if mask != !0 || val != 0 {
            let (or, xor) = ((mask & val) ^ val, mask & val);
            if mask != !0 {
                out += &format!("and 0x{mask:08x} ");
            }
            if xor != 0 {
                out += &format!("xor 0x{xor:08x} ");
            }
            if or != 0 {
                out += &format!("or 0x{or:08x} ");
            }
        }
        if rshift != 0 {
            out += &format!("rshift {rshift} ");
        }
        if addend != 0 {
            out += &format!("addend 0x{addend:x} ");
        }
    }
    if flow.divisor != 0 {
        out += &format!("divisor {} ", flow.divisor);
    }
    out += &format!("baseclass {} ", super::classid_str(flow.baseclass));
    out
}

/// `flow_parse_keys`: a comma list of key names (tc's abbreviations
/// allowed) to the kernel's key mask.
fn parse_keys(list: &str) -> Result<u32, TcError> {
    let mut keys = 0;
    for name in list.split(',') {
        let i = KEY_NAMES
            .iter()
            .position(|k| !name.is_empty() && k.starts_with(name))
            .ok_or_else(|| TcError::new(format!("Unknown flow key \"{name}\"")))?;
        if EMULATED_KEYS & (1 << i) == 0 {
            return Err(TcError::new(format!(
                "Error: flow key \"{}\" is not emulated by bloatbox (use src, dst, proto, \
                 proto-src, proto-dst or priority).",
                KEY_NAMES[i]
            )));
        }
        keys |= 1 << i;
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::print;
    use crate::packet::filter::{Filter, FilterChain, FilterKind};
    use crate::packet::{FlowKey, PacketMeta, L3};

    const QDISC: u32 = 0x1_0000;

    fn filter(line: &str) -> Result<Filter, crate::tc::TcError> {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let mut f = super::super::parse(&toks)?;
        f.bind(QDISC);
        Ok(f)
    }

    /// The options as `tc filter show` prints them.
    fn shown(f: &Filter) -> String {
        match &f.kind {
            FilterKind::Flow(flow) => print(flow),
            other => panic!("not a flow filter: {other:?}"),
        }
    }

    fn v4(dst: [u8; 4], sport: u16) -> PacketMeta {
        let mut d = [0u8; 16];
        d[10..12].copy_from_slice(&[0xff, 0xff]);
        d[12..].copy_from_slice(&dst);
        let mut s = d;
        s[15] = 1;
        PacketMeta {
            l3: L3::Ipv4 { offset: 14 },
            flow: FlowKey {
                src: s,
                dst: d,
                src_port: sport,
                dst_port: 5201,
                proto: 6,
            },
            ..PacketMeta::default()
        }
    }

    #[test]
    fn hash_keys_dst_groups_by_host() {
        let f = filter("protocol all handle 1 flow hash keys dst divisor 1024").unwrap();
        let a: Vec<u32> = (0..20)
            .map(|p| f.classid(&v4([10, 0, 0, 2], 40_000 + p)))
            .collect();
        assert!(a.iter().all(|&c| c == a[0]), "one host, one class: {a:x?}");
        let hosts: std::collections::HashSet<u32> = (0..200)
            .map(|h| f.classid(&v4([10, 0, 1, h as u8], 1)))
            .collect();
        assert!(hosts.len() > 150, "hosts spread: {}", hosts.len());
        // Baseclass 1:1 (the qdisc's major), divisor 1024: minors 1..=1024.
        assert!(hosts
            .iter()
            .all(|c| c >> 16 == 1 && (1..=1024).contains(&(c & 0xffff))));
        // Per flow with the ports in the key.
        let f = filter("protocol all handle 2 flow hash keys dst,proto-src divisor 64").unwrap();
        let flows: std::collections::HashSet<u32> = (0..50)
            .map(|p| f.classid(&v4([10, 0, 0, 2], 40_000 + p)))
            .collect();
        assert!(flows.len() > 20, "{}", flows.len());
    }

    #[test]
    fn map_mode_computes_the_class_from_the_key() {
        // The last octet of the destination, from baseclass 1:10.
        let f = filter("protocol ip handle 1 flow map key dst and 0xff baseclass 1:10").unwrap();
        assert_eq!(f.classid(&v4([10, 0, 0, 7], 1)), 0x1_0017);
        let f = filter("protocol ip handle 1 flow map key proto-src rshift 8 addend 2 divisor 16")
            .unwrap();
        // (0x1234 >> 8) + 2 = 0x14, mod 16 = 4, + baseclass 1:1.
        assert_eq!(f.classid(&v4([10, 0, 0, 7], 0x1234)), 0x1_0005);
        // Not IP: no ports, the key reads 0; (0 >> 8) + 2 from 1:1.
        let other = PacketMeta::default();
        assert_eq!(f.classid(&other), 0x1_0001 + 2);
    }

    #[test]
    fn shown_like_iproute2() {
        let f = filter("protocol all handle 0x5 flow hash keys dst,src divisor 1024").unwrap();
        assert_eq!(shown(&f), "hash keys src,dst divisor 1024 baseclass 1:1 ");
        // transfer_bitop: "or 0xf0" then "xor 0x3" fold into one mask/xor.
        let f = filter("protocol ip handle 1 flow map key dst and 0xff or 0xf0 xor 0x3").unwrap();
        assert_eq!(
            shown(&f),
            "map keys dst and 0x0000000f xor 0x00000003 or 0x000000f0 baseclass 1:1 "
        );
        let mut chain = FilterChain::new();
        chain
            .add(
                filter("parent 1: protocol all prio 3 handle 1 flow hash keys dst divisor 8")
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(
            super::super::print(QDISC, chain.filters(), true),
            "filter parent 1: protocol all pref 3 flow chain 0 \n\
             filter parent 1: protocol all pref 3 flow chain 0 handle 0x1 hash keys dst divisor 8 baseclass 1:1 \n"
        );
        let dup = filter("parent 1: protocol all prio 3 handle 1 flow hash keys src").unwrap();
        assert!(crate::tc::TcError::from(chain.add(dup).unwrap_err())
            .0
            .contains("File exists"));
        chain
            .add(filter("parent 1: protocol all prio 3 handle 2 flow hash keys src").unwrap())
            .unwrap();
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        for (line, needle) in [
            ("protocol all flow hash keys dst", "needs \"handle N\""),
            ("protocol all handle 1 flow hash divisor 8", "needs \"keys"),
            (
                "protocol all handle 1 flow map keys src,dst",
                "Invalid mode \"map\"",
            ),
            (
                "protocol all handle 1 flow hash keys dest",
                "Unknown flow key \"dest\"",
            ),
            (
                "protocol all handle 1 flow hash keys mark",
                "\"mark\" is not emulated",
            ),
            (
                "protocol all handle 1 flow hash keys dst perturb 10",
                "\"perturb\" is not emulated",
            ),
            (
                "protocol all handle 1 flow hash keys dst baseclass 1:0",
                "Illegal \"baseclass\"",
            ),
            (
                "protocol all handle 1 flow hash keys dst divisor x",
                "Illegal \"divisor\"",
            ),
            (
                "protocol all handle 1 flow hash keys dst flowid 1:1",
                "What is \"flowid\"",
            ),
            (
                "protocol all handle 0 flow hash keys dst",
                "Illegal \"handle\"",
            ),
        ] {
            let e = filter(line).unwrap_err().0;
            assert!(e.contains(needle), "{line}: {e}");
        }
        // tc's abbreviations of key names.
        filter("protocol all handle 1 flow hash keys ds,proto-d").unwrap();
    }
}
