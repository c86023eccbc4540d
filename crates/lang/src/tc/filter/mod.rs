//! The `tc filter` language (iproute2's tc/tc_filter.c, f_u32.c,
//! f_matchall.c, f_flow.c, m_skbedit.c): the words of `tc filter add dev X
//! <these words>` parsed into the typed `crate::packet::filter::Filter` the
//! core classifies with (u32 selectors `match ip|ip6 src|dst|sport|dport|
//! protocol|tos|...` packed into the kernel's keys as iproute2 packs them,
//! `matchall`, `flow`, `flowid`, `action skbedit priority`), with tc's number
//! rules and errors, over the one tokenizer `crate::tc::tokens::Tokens`;
//! the `prio` selector of `tc filter del`; and `tc filter show`, printed
//! from the filters a qdisc's chain holds (u32 handles, raw keys).

mod flow;

use crate::handle::{Handle, TC_H_ROOT};
use crate::packet::filter::{Family, Field, Filter, FilterKind, FilterProtocol, Match, U32Key};
use crate::tc::syntax::JsonObj;
use crate::tc::tokens::{c_number, incomplete, Tokens};
use crate::tc::TcError;
use serde_json::json;
use std::net::{Ipv4Addr, Ipv6Addr};

/// `NEXT_ARG()`: the word after `key`, or tc's error for a missing one.
fn arg<'a>(t: &mut Tokens<'a>, key: &str) -> Result<&'a str, TcError> {
    t.value(|| incomplete(key))
}

/// The `prio`/`pref`/`priority` of a `tc filter del` command, if given (the
/// other words are not read).
pub fn parse_prio(words: &[&str]) -> Result<Option<u16>, TcError> {
    let Some(i) = words
        .iter()
        .position(|a| matches!(*a, "prio" | "pref" | "priority"))
    else {
        return Ok(None);
    };
    let v = words.get(i + 1).copied().unwrap_or("");
    v.parse::<u16>()
        .ok()
        .filter(|&p| p > 0)
        .map(Some)
        .ok_or_else(|| TcError::new(format!("Illegal \"priority\": \"{v}\" (allowed 1..65535)")))
}

/// `ll_proto_a2n`: a name or an ethertype number.
fn parse_protocol(tok: &str) -> Result<FilterProtocol, TcError> {
    let by_number = c_number(tok).and_then(|n| match n {
        0x0003 => Some(FilterProtocol::All),
        0x0800 => Some(FilterProtocol::Ip),
        0x86dd => Some(FilterProtocol::Ipv6),
        _ => None,
    });
    match tok.to_ascii_lowercase().as_str() {
        "all" => Ok(FilterProtocol::All),
        "ip" => Ok(FilterProtocol::Ip),
        "ipv6" => Ok(FilterProtocol::Ipv6),
        _ => by_number.ok_or_else(|| {
            TcError::new(format!(
                "Error: argument \"{tok}\" is wrong: invalid protocol\n(bloatbox filters \
                 take ip, ipv6 or all)"
            ))
        }),
    }
}

const USAGE: &str = "Usage: ... filter add dev DEV parent CLASSID protocol {ip|ipv6|all} prio N \
u32 match {ip|ip6} {src|dst} ADDR[/LEN] | {sport|dport} PORT MASK | protocol N MASK | \
{tos|dsfield|priority} VALUE MASK [match ...] flowid CLASSID [action skbedit priority PRIO]\n\
  or: ... matchall flowid CLASSID [action ...]\n\
  or: ... handle N flow {hash keys KEY[,KEY...] | map key KEY [and|or|xor|rshift|addend N]} \
[divisor N] [baseclass CLASSID] [action ...]";

/// The filter the words after `tc filter add|replace dev X` describe
/// (iproute2's `tc_filter_modify` and the kind's `parse_fopt`).
pub fn parse(words: &[&str]) -> Result<Filter, TcError> {
    let mut t = Tokens::new(words);
    let mut parent = None;
    let mut protocol = None;
    let mut prio = 0u16;
    let mut handle = None;
    let kind_name = loop {
        let Some(tok) = t.next() else {
            return Err(TcError::new(format!(
                "Error: a filter kind (u32, matchall or flow) is required.\n{USAGE}"
            )));
        };
        match tok {
            "parent" => parent = Some(parse_classid(arg(&mut t, "parent")?)?),
            "root" => parent = Some(TC_H_ROOT),
            "protocol" => protocol = Some(parse_protocol(arg(&mut t, "protocol")?)?),
            "prio" | "pref" | "priority" | "preference" => {
                let v = arg(&mut t, tok)?;
                prio = c_number(v)
                    .and_then(|n| u16::try_from(n).ok())
                    .filter(|&n| n > 0)
                    .ok_or_else(|| {
                        TcError::new(format!("Illegal \"priority\": \"{v}\" (allowed 1..65535)"))
                    })?;
            }
            "chain" => {
                let v = arg(&mut t, "chain")?;
                if c_number(v) != Some(0) {
                    return Err(TcError::new(format!(
                        "Error: chain \"{v}\" is not supported: only chain 0 exists."
                    )));
                }
            }
            "handle" => handle = Some(arg(&mut t, "handle")?),
            "estimator" => {
                return Err(TcError::new(
                    "Error: \"estimator\": filters have no rate estimator; leave it out.",
                ))
            }
            "u32" | "matchall" | "flow" => break tok,
            // iproute2 finds no f_<kind>: with options it cannot parse
            // them, without it sends the kind and the kernel has none.
            other => {
                return Err(match t.peek() {
                    Some(first) => TcError::new(format!(
                        "Unknown filter \"{other}\", hence option \"{first}\" is unparsable\n\
                         (supported kinds: u32, matchall, flow)"
                    )),
                    None => TcError::new(
                        "Error: TC classifier not found.\n(supported kinds: u32, matchall, flow)",
                    ),
                })
            }
        }
    };
    let protocol = protocol.ok_or_else(|| {
        TcError::new(
            "Error: Filter kind and protocol must be specified (add \"protocol ip|ipv6|all\").",
        )
    })?;
    let handle =
        match (kind_name, handle) {
            ("flow", Some(v)) => c_number(v)
                .and_then(|n| u32::try_from(n).ok())
                .filter(|&n| n != 0)
                .ok_or_else(|| TcError::new(format!("Illegal \"handle\": \"{v}\"")))?,
            ("flow", None) => return Err(TcError::new(
                "RTNETLINK answers: Invalid argument\n(the flow classifier needs \"handle N\", \
                 e.g. tc filter add dev left parent 1: handle 1 protocol all flow hash keys dst \
                 divisor 1024)",
            )),
            (_, Some(_)) => {
                return Err(TcError::new(format!(
                    "Error: \"handle\" is not supported for {kind_name}: its filters are \
                 numbered automatically; leave it out."
                )))
            }
            (_, None) => 0,
        };
    let (kind, skbedit_priority) = match kind_name {
        "flow" => {
            let (flow, skbedit) = flow::parse(&mut t)?;
            (FilterKind::Flow(flow), skbedit)
        }
        "matchall" => (FilterKind::Matchall, None),
        _ => (FilterKind::U32, None),
    };
    let mut filter = Filter {
        parent,
        protocol,
        prio,
        kind,
        matches: Vec::new(),
        keys: Vec::new(),
        flowid: 0,
        skbedit_priority,
        handle,
        action_index: 0,
    };
    if let FilterKind::Flow(_) = filter.kind {
        // Its options are parsed: the class comes from the frame.
        return Ok(filter);
    }
    parse_options(&mut filter, &mut t)?;
    if filter.kind == FilterKind::U32 && filter.matches.is_empty() && filter.keys.is_empty() {
        // u32_change refuses a knode without TCA_U32_SEL.
        return Err(TcError::new("Error: cls_u32: Selector not specified."));
    }
    if filter.flowid == 0 && filter.skbedit_priority.is_none() {
        return Err(TcError::new(
            "Error: the filter needs \"flowid CLASSID\" (or an action) to have an effect.",
        ));
    }
    Ok(filter)
}

/// The options after the kind.
fn parse_options(f: &mut Filter, t: &mut Tokens<'_>) -> Result<(), TcError> {
    while let Some(tok) = t.next() {
        match tok {
            // f_u32.c's messages, then what bloatbox found on a line of
            // its own.
            "match" if f.kind == FilterKind::U32 => {
                parse_selector(f, t).map_err(|e| match e.0.strip_prefix("Illegal \"match\": ") {
                    Some(why) => TcError::new(format!("Illegal \"match\"\n({why})")),
                    None => e,
                })?
            }
            "flowid" | "classid" => {
                f.flowid = parse_classid(arg(t, tok)?).map_err(|e| {
                    TcError::new(format!(
                        "Illegal \"classid\"\n({})",
                        e.0.trim_start_matches("Error: ")
                    ))
                })?
            }
            "action" | "actions" => f.skbedit_priority = Some(parse_action(t)?),
            "skip_hw" => {}
            other => {
                return Err(TcError::new(format!(
                    "What is \"{other}\"? ({} options: {})",
                    f.kind.name(),
                    match f.kind {
                        FilterKind::U32 => "match, flowid, classid, action, skip_hw",
                        _ => "flowid, classid, action, skip_hw",
                    }
                )))
            }
        }
    }
    Ok(())
}

/// `match ip|ip6|u32|u16|u8 ...`: adds the selector to `f.matches` (raw
/// keys with mask 0 match everything and only go to `f.keys`).
fn parse_selector(f: &mut Filter, t: &mut Tokens<'_>) -> Result<(), TcError> {
    let sel = arg(t, "match")?;
    let family = match sel {
        "ip" => Family::V4,
        "ip6" => Family::V6,
        "u32" | "u16" | "u8" => {
            let bits = match sel {
                "u32" => 32,
                "u16" => 16,
                _ => 8,
            };
            let (value, mask) = value_and_mask(t, sel, bits)?;
            let mut off = 0;
            if t.peek() == Some("at") {
                t.next();
                let v = arg(t, "at")?;
                off = c_number(v)
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| {
                        TcError::new(format!(
                            "Illegal \"match\": offset \"at {v}\" is not a number (nexthdr+ is not supported)"
                        ))
                    })?;
            }
            if mask != 0 {
                return Err(TcError::new(format!(
                    "Illegal \"match\": raw \"{sel} {value:#x} {mask:#x}\" keys are not supported \
                     (only mask 0, match everything); use match ip/ip6 src|dst|sport|dport|protocol|tos"
                )));
            }
            return pack(f, sel, 0, 0, off, bits);
        }
        other => {
            return Err(TcError::new(format!(
                "Illegal \"match\": selector \"{other}\" is not supported (use ip, ip6, or u32 0 0)"
            )))
        }
    };
    let field_tok = arg(t, sel)?;
    let m = match (family, field_tok) {
        (_, "src") => prefix(t, family, Field::Src)?,
        (_, "dst") => prefix(t, family, Field::Dst)?,
        (_, "sport") | (_, "dport") => {
            let field = if field_tok == "sport" {
                Field::Sport
            } else {
                Field::Dport
            };
            let (v, m) = value_and_mask(t, &format!("{sel} {field_tok}"), 16)?;
            Match::new(family, field, v as u128, m as u128)
        }
        (_, "protocol") => {
            let (v, m) = value_and_mask(t, &format!("{sel} protocol"), 8)?;
            Match::new(family, Field::Protocol, v as u128, m as u128)
        }
        (Family::V4, "tos" | "dsfield") | (Family::V6, "priority") => {
            let (v, m) = value_and_mask(t, &format!("{sel} {field_tok}"), 8)?;
            Match::new(family, Field::Dsfield, v as u128, m as u128)
        }
        (_, other) => {
            let fields = match family {
                Family::V4 => "src, dst, sport, dport, protocol, tos, dsfield",
                Family::V6 => "src, dst, sport, dport, protocol, priority",
            };
            return Err(TcError::new(format!(
                "Illegal \"match\": \"{sel} {other}\" is not supported (fields: {fields})"
            )));
        }
    };
    let mut ok = true;
    for_each_key(&m, |v, mask, off, bits| {
        ok &= pack_key(&mut f.keys, v, mask, off, bits)
    });
    if !ok {
        return Err(TcError::new(format!(
            "Illegal \"match\": \"{sel} {field_tok}\" contradicts an earlier match on the same field"
        )));
    }
    f.matches.push(m);
    Ok(())
}

/// Packs a raw key, refusing an unaligned offset.
fn pack(
    f: &mut Filter,
    what: &str,
    val: u32,
    mask: u32,
    off: i32,
    bits: u32,
) -> Result<(), TcError> {
    if pack_key(&mut f.keys, val, mask, off, bits) {
        Ok(())
    } else {
        Err(TcError::new(format!(
            "Illegal \"match\": \"{what}\" at offset {off}: u32 keys need an offset that is a multiple of 4"
        )))
    }
}

/// `ADDR[/LEN]` for `src`/`dst`.
fn prefix(t: &mut Tokens<'_>, family: Family, field: Field) -> Result<Match, TcError> {
    let what = if field == Field::Src { "src" } else { "dst" };
    let tok = arg(t, what)?;
    let (addr, len) = match tok.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (tok, None),
    };
    let (value, bits) = match family {
        Family::V4 => (
            addr.parse::<Ipv4Addr>().map(|a| u32::from(a) as u128).ok(),
            32,
        ),
        Family::V6 => (addr.parse::<Ipv6Addr>().map(u128::from).ok(), 128),
    };
    let bad = || {
        TcError::new(format!(
            "Illegal \"match\": \"{tok}\" is not an {} address or prefix (e.g. {})",
            if family == Family::V4 { "IPv4" } else { "IPv6" },
            if family == Family::V4 {
                "10.0.0.0/8"
            } else {
                "2001:db8::/32"
            },
        ))
    };
    let value = value.ok_or_else(bad)?;
    let len = match len {
        Some(l) => l
            .parse::<u32>()
            .ok()
            .filter(|&l| l <= bits)
            .ok_or_else(bad)?,
        None => bits,
    };
    let full: u128 = if bits == 32 {
        u32::MAX as u128
    } else {
        u128::MAX
    };
    let mask = if len == 0 {
        0
    } else {
        full & !((1u128 << (bits - len)) - 1)
    };
    Ok(Match::new(family, field, value, mask))
}

/// `VALUE MASK` as tc's parse_u8/u16/u32: the value in C notation (decimal,
/// 0x hex, 0 octal), the mask in hex.
fn value_and_mask(t: &mut Tokens<'_>, what: &str, bits: u32) -> Result<(u32, u32), TcError> {
    let max = if bits == 32 {
        u32::MAX as u64
    } else {
        (1u64 << bits) - 1
    };
    let example = match bits {
        32 => "0 0",
        16 => "80 0xffff",
        _ => "6 0xff",
    };
    let err = |tok: &str| {
        TcError::new(format!(
            "Illegal \"match\": \"{what}\" needs a value and a hex mask of at most {max:#x} \
             (got \"{tok}\"), e.g. \"match {what} {example}\""
        ))
    };
    let v = t.next().ok_or_else(|| err(""))?;
    let value = c_number(v).filter(|&n| n <= max).ok_or_else(|| err(v))?;
    let m = t.next().ok_or_else(|| err(""))?;
    let hex = m
        .strip_prefix("0x")
        .or_else(|| m.strip_prefix("0X"))
        .unwrap_or(m);
    let mask = u64::from_str_radix(hex, 16)
        .ok()
        .filter(|&n| n <= max)
        .ok_or_else(|| err(m))?;
    Ok((value as u32, mask as u32))
}

/// `action skbedit priority X [pipe|pass|ok|continue]`, returning X.
fn parse_action(t: &mut Tokens<'_>) -> Result<u32, TcError> {
    let kind = arg(t, "action")?;
    if kind != "skbedit" {
        return Err(TcError::new(format!(
            "Error: action \"{kind}\" is not supported (only \"skbedit priority X\")."
        )));
    }
    let opt = arg(t, "skbedit")?;
    if opt != "priority" {
        return Err(TcError::new(format!(
            "Error: skbedit option \"{opt}\" is not supported (only \"priority X\")."
        )));
    }
    let priority = parse_classid(arg(t, "priority")?)?;
    if matches!(t.peek(), Some("pipe" | "pass" | "ok" | "continue")) {
        t.next();
    }
    Ok(priority)
}

/// iproute2's `get_tc_classid`: `root`, `none`, `M:m`, `M:` or a bare hex
/// number (all hex).
pub fn parse_classid(tok: &str) -> Result<Handle, TcError> {
    let bad = || {
        TcError::new(format!(
            "Error: invalid class ID \"{tok}\": expected MAJOR:MINOR in hex (e.g. 1:10), \"root\" or \"none\"."
        ))
    };
    let hex16 = |s: &str| -> Result<u32, TcError> {
        if s.is_empty() {
            return Ok(0);
        }
        u32::from_str_radix(s, 16)
            .ok()
            .filter(|&n| n <= 0xffff)
            .ok_or_else(bad)
    };
    match tok {
        "root" => Ok(TC_H_ROOT),
        "none" => Ok(0),
        _ => match tok.split_once(':') {
            Some((maj, min)) => Ok((hex16(maj)? << 16) | hex16(min)?),
            None => u32::from_str_radix(tok, 16).map_err(|_| bad()),
        },
    }
}

/// The kernel keys iproute2 packs selector `sel` into.
fn for_each_key(sel: &Match, mut pack: impl FnMut(u32, u32, i32, u32)) {
    let (v, m) = (sel.value, sel.mask);
    match (sel.family, sel.field) {
        (Family::V4, Field::Src) => pack(v as u32, m as u32, 12, 32),
        (Family::V4, Field::Dst) => pack(v as u32, m as u32, 16, 32),
        (Family::V4, Field::Sport) => pack(v as u32, m as u32, 20, 16),
        (Family::V4, Field::Dport) => pack(v as u32, m as u32, 22, 16),
        (Family::V4, Field::Protocol) => pack(v as u32, m as u32, 9, 8),
        (Family::V4, Field::Dsfield) => pack(v as u32, m as u32, 1, 8),
        (Family::V6, Field::Src | Field::Dst) => {
            let base = if sel.field == Field::Src { 8 } else { 24 };
            for word in 0..4i32 {
                let shift = 96 - 32 * word;
                let wm = (m >> shift) as u32;
                if wm != 0 {
                    pack((v >> shift) as u32, wm, base + 4 * word, 32);
                }
            }
        }
        (Family::V6, Field::Sport) => pack(v as u32, m as u32, 40, 16),
        (Family::V6, Field::Dport) => pack(v as u32, m as u32, 42, 16),
        (Family::V6, Field::Protocol) => pack(v as u32, m as u32, 6, 8),
        (Family::V6, Field::Dsfield) => pack((v as u32) << 20, (m as u32) << 20, 0, 32),
    }
}

/// iproute2's pack_key8/16/32: places a `bits`-wide value at byte offset
/// `off` into its aligned 32-bit word and merges it with a key already on
/// that word; `false` when the two contradict or the offset is unaligned.
fn pack_key(keys: &mut Vec<U32Key>, val: u32, mask: u32, off: i32, bits: u32) -> bool {
    let shift = match bits {
        32 => 0,
        16 if off & 3 == 0 => 16,
        16 => 0,
        _ => 8 * (3 - (off & 3) as u32),
    };
    let (val, mask) = ((val << shift) & (mask << shift), mask << shift);
    let off = if bits == 32 { off } else { off & !3 };
    if let Some(k) = keys.iter_mut().find(|k| k.off == off) {
        if (k.val ^ val) & (k.mask & mask) != 0 {
            return false;
        }
        k.val |= val;
        k.mask |= mask;
        return true;
    }
    if off % 4 != 0 || keys.len() >= 128 {
        return false;
    }
    keys.push(U32Key { val, mask, off });
    true
}

/// What `tc filter show dev X [parent <qdisc>]` prints of the qdisc's
/// `filters` (in chain order): per prio the classifier line, for u32 its
/// hash table, then one entry per filter with its raw keys (tc without
/// `-p`), as iproute2's tc/tc_filter.c `print_filter` and tc/f_u32.c
/// `u32_print_opt` do. `parent 1:` is printed unless the show named that
/// parent (`filter_parent`). A u32 filter's flowid is `*flowid`: tc adds
/// it without `TC_U32_TERMINAL`. The action block follows iproute2's
/// skbedit layout **[unverified against a real run]**.
pub fn print(qdisc: Handle, filters: &[Filter], show_parent: bool) -> String {
    let mut out = String::new();
    let parent = if show_parent {
        format!("parent {} ", classid_str(qdisc))
    } else {
        String::new()
    };
    for (i, f) in filters.iter().enumerate() {
        let head = format!(
            "filter {parent}protocol {} pref {} {} chain 0 ",
            f.protocol.name(),
            f.prio,
            f.kind.name()
        );
        let first_of_prio = i == 0 || filters[i - 1].prio != f.prio;
        if first_of_prio {
            out += &format!("{head}\n");
        }
        match f.kind {
            FilterKind::U32 => {
                let ht = f.handle >> 20;
                if first_of_prio {
                    out += &format!("{head}fh {ht:x}: ht divisor 1 \n");
                }
                let node = f.handle & 0xfff;
                out += &format!("{head}fh {ht:x}::{node:x} order {node} key ht {ht:x} bkt 0 ");
                if f.flowid != 0 {
                    out += &format!("*flowid {} ", classid_str(f.flowid));
                } else {
                    out += "terminal flowid ";
                }
                out += "not_in_hw ";
                for k in &f.keys {
                    out += &format!("\n  match {:08x}/{:08x} at {}", k.val, k.mask, k.off);
                }
            }
            FilterKind::Matchall => {
                out += &format!("{head}handle 0x{:x} ", f.handle);
                if f.flowid != 0 {
                    out += &format!("flowid {} ", classid_str(f.flowid));
                }
                out += "\n  not_in_hw";
            }
            FilterKind::Flow(flow) => {
                out += &format!("{head}handle 0x{:x} {}", f.handle, flow::print(&flow));
            }
        }
        if let Some(p) = f.skbedit_priority {
            out += &format!(
                "\n\taction order 1: skbedit  priority {} pipe\n\t index {} ref 1 bind 1\n",
                classid_str(p),
                f.action_index
            );
        }
        out += "\n";
    }
    out
}

/// The objects of `tc -j filter show` for the same lines as `print`: the
/// head (`parent`, `protocol`, `pref`, `kind`, `chain`) and, for u32, the
/// `options` iproute2's `u32_print_opt` writes (its `match` key once per
/// key, as iproute2's writer repeats it). Checked for u32 against Linux
/// 6.18 with iproute2 6.1; matchall's and flow's options are bloatbox's
/// reading of f_matchall.c and f_flow.c.
pub fn print_json(qdisc: Handle, filters: &[Filter], show_parent: bool) -> Vec<JsonObj> {
    let mut out = Vec::new();
    for (i, f) in filters.iter().enumerate() {
        let head = || {
            let mut o = JsonObj::new();
            if show_parent {
                o.insert("parent", json!(classid_str(qdisc)));
            }
            o.insert("protocol", json!(f.protocol.name()));
            o.insert("pref", json!(f.prio));
            o.insert("kind", json!(f.kind.name()));
            o.insert("chain", json!(0));
            o
        };
        let first_of_prio = i == 0 || filters[i - 1].prio != f.prio;
        if first_of_prio {
            out.push(head());
        }
        let mut opts = JsonObj::new();
        match f.kind {
            FilterKind::U32 => {
                let ht = f.handle >> 20;
                if first_of_prio {
                    let mut table = JsonObj::new();
                    table.insert("fh", json!(format!("{ht:x}:")));
                    table.insert("ht_divisor", json!(1));
                    let mut o = head();
                    o.insert_obj("options", table);
                    out.push(o);
                }
                let node = f.handle & 0xfff;
                opts.insert("fh", json!(format!("{ht:x}::{node:x}")));
                opts.insert("order", json!(node));
                opts.insert("key_ht", json!(format!("{ht:x}")));
                opts.insert("bkt", json!("0"));
                if f.flowid != 0 {
                    opts.insert("flowid", json!(classid_str(f.flowid)));
                }
                opts.insert("not_in_hw", json!(true));
                for k in &f.keys {
                    let mut m = JsonObj::new();
                    m.insert("value", json!(format!("{:x}", k.val)));
                    m.insert("mask", json!(format!("{:x}", k.mask)));
                    m.insert("offmask", json!(""));
                    m.insert("off", json!(k.off));
                    opts.push_obj("match", m);
                }
            }
            FilterKind::Matchall => {
                opts.insert("handle", json!(format!("0x{:x}", f.handle)));
                if f.flowid != 0 {
                    opts.insert("flowid", json!(classid_str(f.flowid)));
                }
                opts.insert("not_in_hw", json!(true));
            }
            FilterKind::Flow(_) => {
                opts.insert("handle", json!(format!("0x{:x}", f.handle)));
            }
        }
        let mut o = head();
        o.insert_obj("options", opts);
        out.push(o);
    }
    out
}

/// iproute2's `sprint_tc_classid`.
fn classid_str(h: Handle) -> String {
    let (major, minor) = (h >> 16, h & 0xffff);
    match h {
        TC_H_ROOT => "root".into(),
        0 => "none".into(),
        _ if major == 0 => format!("{minor:x}"),
        _ if minor == 0 => format!("{major:x}:"),
        _ => format!("{major:x}:{minor:x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::filter::FilterChain;
    use crate::packet::{FlowKey, PacketMeta, L3};

    fn parse(line: &str) -> Result<Filter, TcError> {
        let toks: Vec<&str> = line.split_whitespace().collect();
        super::parse(&toks)
    }

    /// Whether a u32 filter of `protocol` with the one selector `sel`
    /// matches `m`.
    fn u32_matches(protocol: &str, sel: &str, m: &PacketMeta) -> bool {
        let line = format!("protocol {protocol} prio 2 u32 {sel} flowid 1:2");
        parse(&line).unwrap().matches(m)
    }

    fn v4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, proto: u8, tos: u8) -> PacketMeta {
        let map = |a: [u8; 4]| {
            let mut o = [0u8; 16];
            o[10] = 0xff;
            o[11] = 0xff;
            o[12..].copy_from_slice(&a);
            o
        };
        PacketMeta {
            l3: L3::Ipv4 { offset: 14 },
            flow: FlowKey {
                src: map(src),
                dst: map(dst),
                src_port: sport,
                dst_port: dport,
                proto,
            },
            dsfield: tos,
            ..PacketMeta::default()
        }
    }

    fn v6(src: &str, dst: &str, sport: u16, dport: u16, tclass: u8) -> PacketMeta {
        PacketMeta {
            l3: L3::Ipv6 { offset: 14 },
            flow: FlowKey {
                src: src.parse::<Ipv6Addr>().unwrap().octets(),
                dst: dst.parse::<Ipv6Addr>().unwrap().octets(),
                src_port: sport,
                dst_port: dport,
                proto: 17,
            },
            dsfield: tclass,
            ..PacketMeta::default()
        }
    }

    #[test]
    fn parses_the_classic_u32_line() {
        let f = parse(
            "parent 1: protocol ip prio 1 u32 match ip src 10.0.0.0/8 match ip dport 80 0xffff flowid 1:10",
        )
        .unwrap();
        assert_eq!(f.parent, Some(0x0001_0000));
        assert_eq!(
            (f.protocol, f.prio, f.kind),
            (FilterProtocol::Ip, 1, FilterKind::U32)
        );
        assert_eq!(f.flowid, 0x0001_0010);
        assert_eq!(f.matches.len(), 2);
        assert_eq!(f.matches[0].mask, 0xff00_0000);
        assert_eq!(f.matches[0].value, 0x0a00_0000);
        assert!(f.matches(&v4([10, 9, 8, 7], [1, 1, 1, 1], 1000, 80, 6, 0)));
        assert!(!f.matches(&v4([11, 9, 8, 7], [1, 1, 1, 1], 1000, 80, 6, 0)));
        assert!(!f.matches(&v4([10, 9, 8, 7], [1, 1, 1, 1], 1000, 81, 6, 0)));
        assert!(!f.matches(&v6("::1", "::2", 1000, 80, 0)), "protocol ip");
    }

    #[test]
    fn ip_fields() {
        let m = v4([192, 168, 1, 5], [8, 8, 8, 8], 5000, 53, 17, 0xb8);
        let yes = [
            "match ip dst 8.8.8.8",
            "match ip dst 8.8.0.0/16",
            "match ip src 0.0.0.0/0",
            "match ip sport 5000 0xffff",
            "match ip sport 0x1388 ffff",
            "match ip protocol 17 0xff",
            "match ip tos 0xb8 0xfc",
            "match ip dsfield 0xb8 0xff",
            "match ip tos 0xb9 0xfc",
            "match ip dport 0 0",
            "match u32 0 0",
            "match u32 0 0 at 0",
        ];
        for sel in yes {
            assert!(u32_matches("ip", sel, &m), "{sel}");
        }
        let no = [
            "match ip dst 8.8.8.9",
            "match ip src 192.168.2.0/24",
            "match ip sport 5001 0xffff",
            "match ip protocol 6 0xff",
            "match ip tos 0x10 0xff",
        ];
        for sel in no {
            assert!(!u32_matches("ip", sel, &m), "{sel}");
        }
    }

    #[test]
    fn ip6_fields() {
        let m = v6("2001:db8::1", "2001:db8:1::2", 40000, 443, 0x28);
        let yes = [
            "match ip6 src 2001:db8::/32",
            "match ip6 dst 2001:db8:1::2/128",
            "match ip6 dst 2001:db8:1::2",
            "match ip6 dport 443 0xffff",
            "match ip6 sport 40000 0xffff",
            "match ip6 protocol 17 0xff",
            "match ip6 priority 0x28 0xff",
        ];
        for sel in yes {
            assert!(u32_matches("ipv6", sel, &m), "{sel}");
        }
        assert!(!u32_matches("ipv6", "match ip6 src 2001:db9::/32", &m));
        // An ip key never matches IPv6, even under protocol all.
        assert!(!u32_matches("all", "match ip dport 443 0xffff", &m));
    }

    #[test]
    fn matchall_and_protocols() {
        let f = parse("parent 1: protocol all prio 9 matchall classid 1:3").unwrap();
        assert_eq!(f.kind, FilterKind::Matchall);
        assert!(
            f.matches(&PacketMeta::default()),
            "ARP matches protocol all"
        );
        assert!(f.matches(&v6("::1", "::2", 1, 2, 0)));
        let f = parse("protocol 0x0800 matchall flowid 1:3").unwrap();
        assert_eq!(f.protocol, FilterProtocol::Ip);
        assert!(!f.matches(&PacketMeta::default()));
        let f = parse("protocol ip u32 match u32 0 0 flowid 1:1").unwrap();
        assert!(f.matches(&v4([1, 1, 1, 1], [2, 2, 2, 2], 0, 0, 1, 0)));
        assert!(!f.matches(&v6("::1", "::2", 1, 2, 0)));
    }

    #[test]
    fn skbedit_and_classids() {
        let f = parse(
            "parent 1: protocol ip prio 3 u32 match ip tos 0x10 0xff action skbedit priority 1:20",
        )
        .unwrap();
        assert_eq!((f.flowid, f.skbedit_priority), (0, Some(0x0001_0020)));
        let f = parse("protocol ip u32 match u32 0 0 flowid 1:1 action skbedit priority 10 pipe")
            .unwrap();
        assert_eq!(
            f.skbedit_priority,
            Some(0x10),
            "skbedit priority is hex like a classid"
        );
        assert_eq!(parse_classid("ffff:ffff").unwrap(), 0xffff_ffff);
        assert_eq!(parse_classid("root").unwrap(), TC_H_ROOT);
        assert_eq!(parse_classid(":5").unwrap(), 5);
        assert_eq!(parse_classid("2:").unwrap(), 0x2_0000);
        assert!(parse_classid("1:10000").is_err());
        assert!(parse_classid("x:1").is_err());
        assert!(parse_classid("1:2:3").is_err());
    }

    #[test]
    fn numbers_follow_tc() {
        // Values in C notation, masks in hex.
        let f = parse("protocol ip u32 match ip dport 010 ff flowid 1:1").unwrap();
        assert_eq!(f.matches[0].value, 8, "leading 0 is octal");
        assert_eq!(f.matches[0].mask, 0xff);
        assert!(
            parse("protocol ip u32 match ip protocol 6 255 flowid 1:1").is_err(),
            "mask 0x255 > 0xff"
        );
        assert!(parse("protocol ip u32 match ip sport 70000 0xffff flowid 1:1").is_err());
        assert!(parse("protocol ip u32 match ip sport 80 flowid 1:1").is_err());
    }

    #[test]
    fn errors_name_the_token() {
        let cases = [
            (
                "protocol ip u32 match ip src 10.0.0.300/8 flowid 1:1",
                "10.0.0.300/8",
            ),
            (
                "protocol ip u32 match ip src 10.0.0.0/33 flowid 1:1",
                "10.0.0.0/33",
            ),
            ("protocol ip u32 match ip ttl 1 0xff flowid 1:1", "ip ttl"),
            ("protocol ip u32 match ip6 tos 1 0xff flowid 1:1", "ip6 tos"),
            ("protocol ip u32 match tcp dst 80 0xffff flowid 1:1", "tcp"),
            (
                "protocol ip u32 match u32 1 0xff flowid 1:1",
                "u32 0x1 0xff",
            ),
            (
                "protocol ip u32 match ip dport 80 0xffff flowid 1:1 bogus",
                "bogus",
            ),
            ("protocol ip fw flowid 1:1", "fw"),
            ("protocol arp u32 match u32 0 0 flowid 1:1", "arp"),
            ("protocol ip prio 0 u32 flowid 1:1", "\"0\""),
            ("protocol ip prio 70000 u32 flowid 1:1", "70000"),
            ("protocol ip u32 flowid 1:x", "1:x"),
            ("protocol ip u32 flowid 1:1 action mirred egress", "mirred"),
            ("protocol ip u32 flowid 1:1 action skbedit mark 5", "mark"),
            ("protocol ip u32 flowid", "flowid"),
            ("protocol ip chain 2 u32 flowid 1:1", "chain \"2\""),
            ("parent 1: u32 match u32 0 0 flowid 1:1", "protocol"),
            ("protocol ip u32 match ip src 1.2.3.4", "flowid"),
            ("protocol ip", "kind"),
            (
                "protocol ip handle 800::1 u32 flowid 1:1",
                "\"handle\" is not supported",
            ),
        ];
        for (line, needle) in cases {
            let e = parse(line).unwrap_err().0;
            assert!(e.contains(needle), "{line}: {e}");
        }
    }

    #[test]
    fn chain_orders_by_prio_then_insertion() {
        let mut c = FilterChain::new();
        c.add(parse("protocol ip prio 5 u32 match ip dport 80 0xffff flowid 1:5").unwrap())
            .unwrap();
        c.add(parse("protocol ip prio 1 u32 match ip sport 1 0xffff flowid 1:1").unwrap())
            .unwrap();
        c.add(parse("protocol ip prio 5 u32 match u32 0 0 flowid 1:6").unwrap())
            .unwrap();
        c.add(parse("protocol ip prio 1 u32 match u32 0 0 flowid 1:7").unwrap())
            .unwrap();
        let order: Vec<Handle> = c.filters().iter().map(|f| f.flowid & 0xffff).collect();
        assert_eq!(order, vec![1, 7, 5, 6]);
        let m = v4([1, 1, 1, 1], [2, 2, 2, 2], 1, 80, 6, 0);
        assert_eq!(c.classify(&m), Some((0x1_0001, None)));
        let m = v4([1, 1, 1, 1], [2, 2, 2, 2], 2, 80, 6, 0);
        assert_eq!(c.classify(&m), Some((0x1_0007, None)));
        assert_eq!(c.delete(Some(1)), 2);
        assert_eq!(c.classify(&m), Some((0x1_0005, None)));
        let m = v4([1, 1, 1, 1], [2, 2, 2, 2], 2, 81, 6, 0);
        assert_eq!(c.classify(&m), Some((0x1_0006, None)));
        assert_eq!(c.classify(&PacketMeta::default()), None);
        assert_eq!(c.delete(None), 2);
        assert!(c.is_empty());
    }

    #[test]
    fn automatic_prio_like_the_kernel() {
        let mut c = FilterChain::new();
        c.add(parse("protocol ip u32 match ip dport 1 0xffff flowid 1:1").unwrap())
            .unwrap();
        c.add(parse("protocol ip u32 match u32 0 0 flowid 1:2").unwrap())
            .unwrap();
        let prios: Vec<u16> = c.filters().iter().map(|f| f.prio).collect();
        assert_eq!(prios, vec![49151, 49152]);
        // The later automatic filter is consulted first.
        let m = v4([1, 1, 1, 1], [2, 2, 2, 2], 9, 1, 6, 0);
        assert_eq!(c.classify(&m).unwrap().0, 0x1_0002);
        let mut c = FilterChain::new();
        c.add(parse("protocol ip prio 1 matchall flowid 1:1").unwrap())
            .unwrap();
        assert!(c
            .add(parse("protocol ip matchall flowid 1:1").unwrap())
            .is_err());
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(toks in proptest::collection::vec(
            proptest::sample::select(vec![
                "parent", "1:", "protocol", "ip", "ipv6", "all", "prio", "5", "u32", "matchall",
                "match", "ip", "ip6", "src", "dst", "sport", "dport", "80", "0xffff", "tos",
                "10.0.0.0/8", "::1/64", "flowid", "1:10", "action", "skbedit", "priority", "u8",
                "at", "0", "x", "/", ":", "0x", "-1", "",
            ]), 0..14)) {
            let _ = super::parse(&toks);
        }
    }

    fn keys(line: &str) -> Vec<String> {
        parse(line)
            .unwrap()
            .keys
            .iter()
            .map(|k| format!("{:08x}/{:08x} at {}", k.val, k.mask, k.off))
            .collect()
    }

    #[test]
    fn keys_are_packed_like_iproute2() {
        assert_eq!(
            keys("protocol ip u32 match ip src 10.0.0.0/8 match ip dport 80 0xffff flowid 1:1"),
            ["0a000000/ff000000 at 12", "00000050/0000ffff at 20"]
        );
        assert_eq!(
            keys("protocol ip u32 match ip sport 80 0xffff match ip dport 443 0xffff flowid 1:1"),
            ["005001bb/ffffffff at 20"]
        );
        assert_eq!(
            keys("protocol ip u32 match ip tos 0x10 0xff match ip protocol 6 0xff flowid 1:1"),
            ["00100000/00ff0000 at 0", "00060000/00ff0000 at 8"]
        );
        assert_eq!(
            keys("protocol ipv6 u32 match ip6 dst 2001:db8::/32 match ip6 priority 0x28 0xff flowid 1:1"),
            ["20010db8/ffffffff at 24", "02800000/0ff00000 at 0"]
        );
        assert_eq!(
            keys("protocol ipv6 u32 match ip6 src ::1/128 flowid 1:1"),
            [
                "00000000/ffffffff at 8",
                "00000000/ffffffff at 12",
                "00000000/ffffffff at 16",
                "00000001/ffffffff at 20"
            ]
        );
        assert_eq!(
            keys("protocol ipv6 u32 match ip6 protocol 17 0xff match ip6 dport 443 0xffff flowid 1:1"),
            ["00001100/0000ff00 at 4", "000001bb/0000ffff at 40"]
        );
        assert_eq!(
            keys("protocol all u32 match u32 0 0 flowid 1:1"),
            ["00000000/00000000 at 0"]
        );
        assert_eq!(
            keys("protocol all u32 match u8 0 0 at 13 flowid 1:1"),
            ["00000000/00000000 at 12"]
        );
        let e =
            parse("protocol ip u32 match ip sport 80 0xffff match ip sport 81 0xffff flowid 1:1");
        assert!(e.unwrap_err().0.contains("contradicts"));
        let e = parse("protocol all u32 match u32 0 0 at 2 flowid 1:1");
        assert!(e.unwrap_err().0.contains("multiple of 4"));
        // Same word, compatible: merged.
        assert_eq!(
            keys("protocol ip u32 match ip sport 80 0xffff match ip sport 80 0xff00 flowid 1:1"),
            ["00500000/ffff0000 at 20"]
        );
    }

    #[test]
    fn prio_groups_follow_the_kernel() {
        let mut c = FilterChain::new();
        c.add(parse("protocol ip prio 1 u32 match u32 0 0 flowid 1:1").unwrap())
            .unwrap();
        let e = c.add(parse("protocol ipv6 prio 1 u32 match u32 0 0 flowid 1:1").unwrap());
        assert!(TcError::from(e.unwrap_err())
            .0
            .contains("prio 1 already holds ip u32"));
        let e = c.add(parse("protocol ip prio 1 matchall flowid 1:1").unwrap());
        assert!(e.is_err());
        c.add(parse("protocol all prio 2 matchall flowid 1:1").unwrap())
            .unwrap();
        let e = c.add(parse("protocol all prio 2 matchall flowid 1:2").unwrap());
        assert!(TcError::from(e.unwrap_err()).0.contains("one per prio"));
    }

    #[test]
    fn show_prints_like_tc() {
        let mut c = FilterChain::new();
        c.add(parse("parent 1: protocol ip prio 1 u32 match ip src 10.0.0.0/8 match ip dport 80 0xffff flowid 1:10").unwrap())
            .unwrap();
        c.add(
            parse("parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff flowid 1:20")
                .unwrap(),
        )
        .unwrap();
        c.add(
            parse("parent 1: protocol ipv6 prio 3 u32 match ip6 dport 53 0xffff flowid 1:30")
                .unwrap(),
        )
        .unwrap();
        c.add(parse("parent 1: protocol all prio 9 matchall classid 1:a").unwrap())
            .unwrap();
        let expected = "\
filter parent 1: protocol ip pref 1 u32 chain 0 
filter parent 1: protocol ip pref 1 u32 chain 0 fh 800: ht divisor 1 
filter parent 1: protocol ip pref 1 u32 chain 0 fh 800::800 order 2048 key ht 800 bkt 0 *flowid 1:10 not_in_hw 
  match 0a000000/ff000000 at 12
  match 00000050/0000ffff at 20
filter parent 1: protocol ip pref 1 u32 chain 0 fh 800::801 order 2049 key ht 800 bkt 0 *flowid 1:20 not_in_hw 
  match 00110000/00ff0000 at 8
filter parent 1: protocol ipv6 pref 3 u32 chain 0 
filter parent 1: protocol ipv6 pref 3 u32 chain 0 fh 801: ht divisor 1 
filter parent 1: protocol ipv6 pref 3 u32 chain 0 fh 801::800 order 2048 key ht 801 bkt 0 *flowid 1:30 not_in_hw 
  match 00000035/0000ffff at 40
filter parent 1: protocol all pref 9 matchall chain 0 
filter parent 1: protocol all pref 9 matchall chain 0 handle 0x1 flowid 1:a 
  not_in_hw
";
        assert_eq!(print(0x1_0000, c.filters(), true), expected);
        // Deleting every u32 filter gives the next group table 800 again.
        c.delete(Some(1));
        c.delete(Some(3));
        c.add(
            parse("protocol ip prio 4 u32 match u32 0 0 flowid 1:1 action skbedit priority 1:5")
                .unwrap(),
        )
        .unwrap();
        let out = print(0x1_0000, c.filters(), true);
        assert!(out.contains("fh 800::800 order 2048 key ht 800 bkt 0 *flowid 1:1 not_in_hw \n  match 00000000/00000000 at 0\n\taction order 1: skbedit  priority 1:5 pipe\n\t index 1 ref 1 bind 1\n"), "{out}");
        assert_eq!(classid_str(TC_H_ROOT), "root");
        assert_eq!(classid_str(0), "none");
        assert_eq!(classid_str(0x12), "12");
    }
}
