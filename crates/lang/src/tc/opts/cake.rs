//! The `cake` qdisc's tc syntax (iproute2 tc/q_cake.c): `cake_parse_opt`
//! reads the words after the kind into the `TCA_CAKE_*` attributes
//! (`crate::qdisc::cake::CakeOptions`), the rtt presets, the framing
//! keywords that add up an overhead and choose ATM or PTM, and its
//! messages; `cake_print_opt` prints what `cake_dump` sends back and
//! `cake_print_xstats` the memory, capacity and length lines and the table
//! of tins.

use crate::dir::Dir;
use crate::qdisc::cake::{ack_mode, atm_mode, diffserv};
use crate::qdisc::cake::{CakeClassXstats, CakeOptions, CakeTinXstats, CakeXstats};
use crate::qdisc::{QdiscOptions, Xstats};
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::XstatsPrinter;
use crate::tc::syntax::{
    c_hex, example_rate, replace_root, Bench, JsonObj, Printed, Sample, Syntax,
};
use crate::tc::tokens::{c_number, incomplete, Tokens};
use crate::tc::TcError;
use crate::units::{parse_rate, parse_size, parse_time, print_rate, sprint_size, sprint_time};
use serde_json::json;
use std::fmt::Write;

const USAGE: &str = "Usage: ... cake [ bandwidth RATE | unlimited* | autorate-ingress ]
                [ rtt TIME | datacentre | lan | metro | regional |
                  internet* | oceanic | satellite | interplanetary ]
                [ besteffort | diffserv8 | diffserv4 | diffserv3* ]
                [ flowblind | srchost | dsthost | hosts | flows |
                  dual-srchost | dual-dsthost | triple-isolate* ]
                [ nat | nonat* ]
                [ wash | nowash* ]
                [ split-gso* | no-split-gso ]
                [ ack-filter | ack-filter-aggressive | no-ack-filter* ]
                [ memlimit LIMIT ]
                [ fwmark MASK ]
                [ ptm | atm | noatm* ] [ overhead N | conservative | raw* ]
                [ mpu N ] [ ingress | egress* ]
                (* marks defaults)";

/// The rtt presets: (name, target µs, interval µs).
const PRESETS: [(&str, u32, u32); 8] = [
    ("datacentre", 5, 100),
    ("lan", 50, 1000),
    ("metro", 500, 10000),
    ("regional", 1500, 30000),
    ("internet", 5000, 100000),
    ("oceanic", 15000, 300000),
    ("satellite", 50000, 1000000),
    ("interplanetary", 50000000, 1000000000),
];

/// `diffserv_names[]`, by `CAKE_DIFFSERV_*`.
const DIFFSERV_NAMES: [&str; 5] = [
    "diffserv3",
    "diffserv4",
    "diffserv8",
    "besteffort",
    "precedence",
];

/// `flowmode_names[]`, by `CAKE_FLOW_*`.
const FLOWMODE_NAMES: [&str; 8] = [
    "flowblind",
    "srchost",
    "dsthost",
    "hosts",
    "flows",
    "dual-srchost",
    "dual-dsthost",
    "triple-isolate",
];

/// The name tc gives the tin at place `i` of `tins` (`cake_print_xstats`
/// heads its table with them): Bulk, Best Effort, (Video,) Voice for
/// diffserv3 and diffserv4, else `Tin i`.
pub fn tin_name(tins: usize, i: usize) -> String {
    const DIFFSERV3: [&str; 3] = ["Bulk", "Best Effort", "Voice"];
    const DIFFSERV4: [&str; 4] = ["Bulk", "Best Effort", "Video", "Voice"];
    let named = match tins {
        3 => DIFFSERV3.get(i),
        4 => DIFFSERV4.get(i),
        _ => None,
    };
    named.map_or_else(|| format!("Tin {i}"), |n| (*n).to_string())
}

/// The isolation mode's keyword (`flowmode_names[]`), `None` for a value
/// tc has no name for.
pub fn flow_mode_name(mode: u8) -> Option<&'static str> {
    FLOWMODE_NAMES.get(usize::from(mode)).copied()
}

/// The framing keywords that add to the overhead: (word, ATM mode set,
/// bytes added, mpu set). `conservative`, `raw`, `ethernet` and `docsis`
/// are read apart (they set rather than add, or set the mpu).
const FRAMINGS: [(&str, Option<u32>, i32); 11] = [
    ("ipoa-vcmux", Some(atm_mode::ATM), 8),
    ("ipoa-llcsnap", Some(atm_mode::ATM), 16),
    ("bridged-vcmux", Some(atm_mode::ATM), 24),
    ("bridged-llcsnap", Some(atm_mode::ATM), 32),
    ("pppoa-vcmux", Some(atm_mode::ATM), 10),
    ("pppoa-llc", Some(atm_mode::ATM), 14),
    ("pppoe-vcmux", Some(atm_mode::ATM), 32),
    ("pppoe-llcsnap", Some(atm_mode::ATM), 40),
    ("pppoe-ptm", Some(atm_mode::PTM), 30),
    ("bridged-ptm", Some(atm_mode::PTM), 22),
    ("ether-vlan", None, 4),
];

/// What `cake_parse_opt` collects before it writes the attributes.
#[derive(Default)]
struct Args {
    bandwidth: u64,
    unlimited: bool,
    autorate: Option<u32>,
    interval: u32,
    target: u32,
    preset: Option<&'static str>,
    diffserv: Option<u32>,
    flowmode: Option<u32>,
    nat: Option<u32>,
    wash: Option<u32>,
    split_gso: Option<u32>,
    atm: Option<u32>,
    overhead: i32,
    overhead_set: bool,
    overhead_override: bool,
    mpu: u32,
    ingress: Option<u32>,
    ack_filter: Option<u32>,
    memlimit: u32,
    fwmark: u32,
}

impl Args {
    /// The attributes as `cake_parse_opt` adds them.
    fn options(&self) -> CakeOptions {
        CakeOptions {
            base_rate: (self.bandwidth != 0 || self.unlimited).then_some(self.bandwidth),
            diffserv_mode: self.diffserv,
            atm: self.atm,
            flow_mode: self.flowmode,
            overhead: self.overhead_set.then_some(self.overhead),
            raw: self.overhead_override.then_some(0),
            mpu: (self.mpu > 0).then_some(self.mpu),
            rtt: (self.interval != 0).then_some(self.interval),
            target: (self.target != 0).then_some(self.target),
            autorate: self.autorate,
            memory: (self.memlimit != 0).then_some(self.memlimit),
            fwmark: (self.fwmark != 0).then_some(self.fwmark),
            nat: self.nat,
            wash: self.wash,
            split_gso: self.split_gso,
            ingress: self.ingress,
            ack_filter: self.ack_filter,
        }
    }
}

/// `strtol(.., 10)` of a whole word within `lo..=hi`.
fn ranged(word: &str, lo: i64, hi: i64) -> Option<i64> {
    word.parse::<i64>().ok().filter(|v| (lo..=hi).contains(v))
}

/// The word after `key` (`NEXT_ARG`).
fn value<'a>(t: &mut Tokens<'a>, key: &str) -> Result<&'a str, TcError> {
    t.value(|| incomplete(key))
}

/// `cake_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut a = Args::default();
    while let Some(word) = t.next() {
        if let Some(&(name, target, interval)) = PRESETS.iter().find(|p| p.0 == word) {
            if let Some(before) = a.preset {
                return Err(crate::tc::command::duparg(word, before));
            }
            a.preset = Some(name);
            a.target = target;
            a.interval = interval;
            continue;
        }
        if let Some(&(_, atm, add)) = FRAMINGS.iter().find(|f| f.0 == word) {
            if atm.is_some() {
                a.atm = atm;
            }
            a.overhead = a.overhead.saturating_add(add);
            a.overhead_set = true;
            continue;
        }
        if let Some(mode) = FLOWMODE_NAMES.iter().position(|n| *n == word) {
            a.flowmode = Some(mode as u32);
            continue;
        }
        match word {
            "bandwidth" => {
                let v = value(t, word)?;
                a.bandwidth = parse_rate(v).map_err(|_| TcError::new("Illegal \"bandwidth\""))?;
                a.unlimited = false;
                a.autorate = Some(0);
            }
            "unlimited" => {
                a.bandwidth = 0;
                a.unlimited = true;
                a.autorate = Some(0);
            }
            "autorate-ingress" => a.autorate = Some(1),
            "rtt" => {
                let v = value(t, word)?;
                a.interval = parse_time(v)
                    .ok()
                    .and_then(|us| u32::try_from(us).ok())
                    .ok_or_else(|| TcError::new("Illegal \"rtt\""))?;
                a.target = (a.interval / 20).max(1);
            }
            "besteffort" => a.diffserv = Some(diffserv::BESTEFFORT),
            "precedence" => a.diffserv = Some(diffserv::PRECEDENCE),
            "diffserv8" => a.diffserv = Some(diffserv::DIFFSERV8),
            "diffserv4" | "diffserv" => a.diffserv = Some(diffserv::DIFFSERV4),
            "diffserv3" => a.diffserv = Some(diffserv::DIFFSERV3),
            "nowash" => a.wash = Some(0),
            "wash" => a.wash = Some(1),
            "split-gso" => a.split_gso = Some(1),
            "no-split-gso" => a.split_gso = Some(0),
            "nat" => a.nat = Some(1),
            "nonat" => a.nat = Some(0),
            "ptm" => a.atm = Some(atm_mode::PTM),
            "atm" => a.atm = Some(atm_mode::ATM),
            "noatm" => a.atm = Some(atm_mode::NONE),
            "raw" => {
                a.atm = Some(atm_mode::NONE);
                a.overhead = 0;
                a.overhead_set = true;
                a.overhead_override = true;
            }
            "conservative" => {
                a.atm = Some(atm_mode::ATM);
                a.overhead = 48;
                a.overhead_set = true;
            }
            // No longer needed, and ignored (q_cake.c keeps the word).
            "via-ethernet" => {}
            "ethernet" => {
                a.overhead = a.overhead.saturating_add(38);
                a.overhead_set = true;
                a.mpu = 84;
            }
            "docsis" => {
                a.atm = Some(atm_mode::NONE);
                a.overhead = a.overhead.saturating_add(18);
                a.overhead_set = true;
                a.mpu = 64;
            }
            "overhead" => {
                let v = value(t, word)?;
                a.overhead = ranged(v, -64, 256).ok_or_else(|| {
                    TcError::new("Illegal \"overhead\", valid range is -64 to 256\\n")
                })? as i32;
                a.overhead_set = true;
            }
            "mpu" => {
                let v = value(t, word)?;
                a.mpu = ranged(v, 0, 256)
                    .ok_or_else(|| TcError::new("Illegal \"mpu\", valid range is 0 to 256\\n"))?
                    as u32;
            }
            "ingress" => a.ingress = Some(1),
            "egress" => a.ingress = Some(0),
            "no-ack-filter" => a.ack_filter = Some(ack_mode::NONE),
            "ack-filter" => a.ack_filter = Some(ack_mode::FILTER),
            "ack-filter-aggressive" => a.ack_filter = Some(ack_mode::AGGRESSIVE),
            "memlimit" => {
                let v = value(t, word)?;
                a.memlimit = parse_size(v)
                    .ok()
                    .and_then(|b| u32::try_from(b).ok())
                    .ok_or_else(|| {
                        TcError::new(format!("Illegal value for \"memlimit\": \"{v}\""))
                    })?;
            }
            "fwmark" => {
                let v = value(t, word)?;
                a.fwmark = c_number(v)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        TcError::new(format!("Illegal value for \"fwmark\": \"{v}\""))
                    })?;
            }
            "help" => return Err(TcError::new(USAGE)),
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{USAGE}"))),
        }
    }
    Ok(QdiscOptions::Cake(a.options()))
}

/// `cake_print_mode`: the mode's name, or `(?key?)` (no space) and
/// "unknown" in JSON.
fn print_mode(text: &mut String, json: &mut JsonObj, value: u32, key: &str, names: &[&str]) {
    match names.get(value as usize) {
        Some(name) => {
            let _ = write!(text, "{name} ");
            json.insert(key, json!(name));
        }
        None => {
            json.insert(key, json!("unknown"));
            let _ = write!(text, "(?{key}?)");
        }
    }
}

/// `cake_print_opt`: the same text with and without `-d`.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Cake(o) = options else {
        return None;
    };
    let mut t = String::new();
    let mut j = JsonObj::new();
    if let Some(bw) = o.base_rate {
        if bw != 0 {
            let _ = write!(t, "bandwidth {} ", print_rate(bw));
            j.insert("bandwidth", json!(bw));
        } else {
            t.push_str("bandwidth unlimited ");
            j.insert("bandwidth", json!("unlimited"));
        }
    }
    match o.autorate.unwrap_or(0) {
        0 => {}
        1 => {
            t.push_str("autorate-ingress ");
            j.insert("autorate", json!("autorate-ingress"));
        }
        _ => {
            t.push_str("(?autorate?) ");
            j.insert("autorate", json!("unknown"));
        }
    }
    if let Some(m) = o.diffserv_mode {
        print_mode(&mut t, &mut j, m, "diffserv", &DIFFSERV_NAMES);
    }
    if let Some(m) = o.flow_mode {
        print_mode(&mut t, &mut j, m, "flowmode", &FLOWMODE_NAMES);
    }
    let on = |v: Option<u32>| v.unwrap_or(0) != 0;
    let nat = on(o.nat);
    t.push_str(if nat { "nat " } else { "nonat " });
    j.insert("nat", json!(nat));
    let wash = on(o.wash);
    t.push_str(if wash { "wash " } else { "nowash " });
    j.insert("wash", json!(wash));
    let ingress = on(o.ingress);
    if ingress {
        t.push_str("ingress ");
    }
    j.insert("ingress", json!(ingress));
    let (word, value) = match o.ack_filter.unwrap_or(0) {
        ack_mode::AGGRESSIVE => ("ack-filter-aggressive ", "aggressive"),
        ack_mode::FILTER => ("ack-filter ", "enabled"),
        _ => ("no-ack-filter ", "disabled"),
    };
    t.push_str(word);
    j.insert("ack-filter", json!(value));
    let split_gso = on(o.split_gso);
    t.push_str(if split_gso {
        "split-gso "
    } else {
        "no-split-gso "
    });
    j.insert("split_gso", json!(split_gso));
    let interval = o.rtt.unwrap_or(0);
    if interval != 0 {
        let _ = write!(t, "rtt {} ", sprint_time(interval.into()));
    }
    j.insert("rtt", json!(interval));
    let raw = o.raw.is_some();
    if raw {
        t.push_str("raw ");
    }
    j.insert("raw", json!(raw));
    let atm = match o.atm.unwrap_or(0) {
        atm_mode::ATM => Some("atm"),
        atm_mode::PTM => Some("ptm"),
        _ if !raw => Some("noatm"),
        _ => None,
    };
    if let Some(atm) = atm {
        let _ = write!(t, "{atm} ");
        j.insert("atm", json!(atm));
    }
    let overhead = o.overhead.unwrap_or(0);
    let _ = write!(t, "overhead {overhead} ");
    j.insert("overhead", json!(overhead));
    let mpu = o.mpu.unwrap_or(0);
    if mpu != 0 {
        let _ = write!(t, "mpu {mpu} ");
        j.insert("mpu", json!(mpu));
    }
    let memlimit = o.memory.unwrap_or(0);
    if memlimit != 0 {
        let _ = write!(t, "memlimit {} ", sprint_size(memlimit.into()));
        j.insert("memlimit", json!(memlimit));
    }
    let fwmark = o.fwmark.unwrap_or(0);
    if fwmark != 0 {
        let _ = write!(t, "fwmark {fwmark:#x} ");
    }
    j.insert("fwmark", json!(c_hex(fwmark)));
    Some(Printed::same(t, j))
}

/// `cake_print_xstats`: the qdisc's lines, then its tins as a table (or
/// `tins` in JSON).
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| {
        match x {
            Xstats::Cake(s) => xstats_text(out, s),
            Xstats::CakeClass(s) => class_text(out, s),
            _ => return None,
        }
        Some(())
    },
    json: |x| {
        let s = match x {
            Xstats::Cake(s) => s,
            Xstats::CakeClass(s) => return Some(class_json(s)),
            _ => return None,
        };
        let mut j = JsonObj::new();
        j.insert("memory_used", json!(s.memory_used));
        j.insert("memory_limit", json!(s.memory_limit));
        j.insert("capacity_estimate", json!(s.capacity_estimate));
        j.insert("min_network_size", json!(s.min_netlen));
        j.insert("max_network_size", json!(s.max_netlen));
        j.insert("min_adj_size", json!(s.min_adjlen));
        j.insert("max_adj_size", json!(s.max_adjlen));
        j.insert("avg_hdr_offset", json!(s.avg_netoff));
        if !s.tins.is_empty() {
            j.insert_objs("tins", s.tins.iter().map(tin_json).collect());
        }
        Some(j)
    },
};

/// A signed µs count as `cake_print_xstats` prints `drop_next` (negative:
/// a minus and the magnitude) and `blue_timer` (negative: a minus and
/// `sprint_time` of the value itself, taken as unsigned, as q_cake.c
/// passes it).
fn signed_time(us: i32, magnitude: bool) -> String {
    if us >= 0 {
        sprint_time(us as u64)
    } else if magnitude {
        format!("-{}", sprint_time(u64::from(us.unsigned_abs())))
    } else {
        format!("-{}", sprint_time(u64::from(us as u32)))
    }
}

/// A flow's line (`cake_print_xstats` for `cake_dump_class_stats`).
fn class_text(out: &mut String, s: &CakeClassXstats) {
    let _ = write!(out, "  deficit {} count {}", s.deficit, s.count);
    if s.dropping {
        out.push_str(" dropping");
        if let Some(d) = s.drop_next_us {
            let _ = write!(out, " drop_next {}", signed_time(d, true));
        }
    }
    let _ = write!(out, " blue_prob {}", s.p_drop);
    if let Some(b) = s.blue_timer_us {
        let _ = write!(out, " blue_timer {}", signed_time(b, false));
    }
    out.push('\n');
}

/// A flow's JSON (`cake_print_xstats`: `drop_next` and `blue_timer` only
/// when not negative).
fn class_json(s: &CakeClassXstats) -> JsonObj {
    let mut j = JsonObj::new();
    j.insert("deficit", json!(s.deficit));
    j.insert("count", json!(s.count));
    if s.dropping {
        j.insert("dropping", json!(true));
        if let Some(d) = s.drop_next_us.filter(|d| *d >= 0) {
            j.insert("drop_next", json!(d));
        }
    }
    j.insert("blue_prob", json!(s.p_drop));
    if let Some(b) = s.blue_timer_us.filter(|b| *b >= 0) {
        j.insert("blue_timer", json!(b));
    }
    j
}

/// `cake_print_json_tin`.
fn tin_json(t: &CakeTinXstats) -> JsonObj {
    let mut j = JsonObj::new();
    j.insert("threshold_rate", json!(t.threshold_rate));
    j.insert("sent_bytes", json!(t.sent_bytes));
    j.insert("backlog_bytes", json!(t.backlog_bytes));
    j.insert("target_us", json!(t.target_us));
    j.insert("interval_us", json!(t.interval_us));
    j.insert("peak_delay_us", json!(t.peak_delay_us));
    j.insert("avg_delay_us", json!(t.avg_delay_us));
    j.insert("base_delay_us", json!(t.base_delay_us));
    j.insert("sent_packets", json!(t.sent_packets));
    j.insert("way_indirect_hits", json!(t.way_indirect_hits));
    j.insert("way_misses", json!(t.way_misses));
    j.insert("way_collisions", json!(t.way_collisions));
    j.insert("drops", json!(t.dropped_packets));
    j.insert("ecn_mark", json!(t.ecn_marked_packets));
    j.insert("ack_drops", json!(t.acks_dropped_packets));
    j.insert("sparse_flows", json!(t.sparse_flows));
    j.insert("bulk_flows", json!(t.bulk_flows));
    j.insert("unresponsive_flows", json!(t.unresponsive_flows));
    j.insert("max_pkt_len", json!(t.max_skblen));
    j.insert("flow_quantum", json!(t.flow_quantum));
    j
}

fn xstats_text(out: &mut String, s: &CakeXstats) {
    let _ = writeln!(
        out,
        " memory used: {} of {}",
        sprint_size(s.memory_used.into()),
        sprint_size(s.memory_limit.into())
    );
    let _ = writeln!(
        out,
        " capacity estimate: {}",
        print_rate(s.capacity_estimate)
    );
    let _ = writeln!(
        out,
        " min/max network layer size: {:>12} /{:>8}",
        s.min_netlen, s.max_netlen
    );
    let _ = writeln!(
        out,
        " min/max overhead-adjusted size: {:>8} /{:>8}",
        s.min_adjlen, s.max_adjlen
    );
    let _ = writeln!(out, " average network hdr offset: {:>12}\n", s.avg_netoff);
    if s.tins.is_empty() {
        return;
    }
    out.push_str("          ");
    for i in 0..s.tins.len() {
        let _ = write!(out, " {:>12}", tin_name(s.tins.len(), i));
    }
    out.push('\n');
    let row = |out: &mut String, name: &str, cell: &dyn Fn(&CakeTinXstats) -> String| {
        out.push_str(name);
        for t in &s.tins {
            let _ = write!(out, " {:>12}", cell(t));
        }
        out.push('\n');
    };
    let time = |us: u32| sprint_time(us.into());
    row(out, "  thresh  ", &|t| print_rate(t.threshold_rate));
    row(out, "  target  ", &|t| time(t.target_us));
    row(out, "  interval", &|t| time(t.interval_us));
    row(out, "  pk_delay", &|t| time(t.peak_delay_us));
    row(out, "  av_delay", &|t| time(t.avg_delay_us));
    row(out, "  sp_delay", &|t| time(t.base_delay_us));
    row(out, "  backlog ", &|t| sprint_size(t.backlog_bytes.into()));
    row(out, "  pkts    ", &|t| t.sent_packets.to_string());
    row(out, "  bytes   ", &|t| t.sent_bytes.to_string());
    row(out, "  way_inds", &|t| t.way_indirect_hits.to_string());
    row(out, "  way_miss", &|t| t.way_misses.to_string());
    row(out, "  way_cols", &|t| t.way_collisions.to_string());
    row(out, "  drops   ", &|t| t.dropped_packets.to_string());
    row(out, "  marks   ", &|t| t.ecn_marked_packets.to_string());
    row(out, "  ack_drop", &|t| t.acks_dropped_packets.to_string());
    row(out, "  sp_flows", &|t| t.sparse_flows.to_string());
    row(out, "  bk_flows", &|t| t.bulk_flows.to_string());
    row(out, "  un_flows", &|t| t.unresponsive_flows.to_string());
    row(out, "  max_len ", &|t| t.max_skblen.to_string());
    row(out, "  quantum ", &|t| t.flow_quantum.to_string());
}

/// The qdisc menu's CAKE: shaping to the link's rate (1gbit when
/// unlimited), triple-isolate and diffserv3 by default.
fn example(dir: Dir, rate_bytes_ps: u64) -> Vec<String> {
    vec![format!(
        "{} cake bandwidth {}",
        replace_root(dir),
        print_rate(example_rate(rate_bytes_ps))
    )]
}

/// cake's tc syntax.
pub static SYNTAX: Syntax = Syntax {
    kind: "cake",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(example),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[
        Bench::new(
            "cake",
            &["tc qdisc add dev D root cake besteffort flows memlimit 64mb"],
        ),
        // Filters on the per-packet path: every frame matched, its flow
        // and tin overridden (cake_classify).
        Bench::new(
            "cake filters",
            &[
                "tc qdisc add dev D root handle 1: cake diffserv4 memlimit 64mb",
                "tc filter add dev D parent 1: protocol all prio 1 matchall flowid 1:3 action skbedit priority 1:2",
            ],
        ),
    ],
    // No shaping bound: CAKE's deficit-mode shaper advances its schedule
    // from where it was, so a dequeue that comes late sends what the rate
    // allowed since (cake_dequeue has no burst limit), as the kernel's
    // would without its watchdog.
    samples: &[
        Sample::new(
            "cake",
            &["tc qdisc add dev D root cake bandwidth 10mbit memlimit 40000"],
        ),
        Sample::new(
            "cake unlimited diffserv4",
            &["tc qdisc add dev D root cake unlimited diffserv4 dual-srchost memlimit 30000 rtt 5ms"],
        ),
        Sample::new(
            "cake ack-filter",
            &["tc qdisc add dev D root cake bandwidth 2mbit besteffort ack-filter-aggressive ingress memlimit 20000 docsis"],
        ),
    ],
};

/// The keys of a `cake` table in the configuration, in the order their
/// words are written (a later word overrides an earlier one, as in tc).
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::opt("bandwidth", Value::Rate),
    Key::opt(
        "autorate_ingress",
        Value::Flag {
            on: "autorate-ingress",
            off: None,
        },
    ),
    Key::opt("rtt", Value::Time),
    Key::opt(
        "diffserv",
        Value::Word {
            words: &DIFFSERV_WORDS,
        },
    ),
    Key::opt(
        "flowmode",
        Value::Word {
            words: &FLOWMODE_NAMES,
        },
    ),
    Key::opt(
        "nat",
        Value::Flag {
            on: "nat",
            off: Some("nonat"),
        },
    ),
    Key::opt(
        "wash",
        Value::Flag {
            on: "wash",
            off: Some("nowash"),
        },
    ),
    Key::opt(
        "split_gso",
        Value::Flag {
            on: "split-gso",
            off: Some("no-split-gso"),
        },
    ),
    Key::opt(
        "ack_filter",
        Value::Word {
            words: &["no-ack-filter", "ack-filter", "ack-filter-aggressive"],
        },
    ),
    Key::opt("memlimit", Value::Size32 { plain: false }),
    Key::opt(
        "framing",
        Value::Word {
            words: &FRAMING_WORDS,
        },
    ),
    Key::opt(
        "atm",
        Value::Word {
            words: &["noatm", "atm", "ptm"],
        },
    ),
    Key::opt(
        "overhead",
        Value::Bounded {
            max: 256,
            unit: "bytes (negative ones in the string form)",
            example: "18",
        },
    ),
    Key::opt(
        "mpu",
        Value::Bounded {
            max: 256,
            unit: "bytes",
            example: "64",
        },
    ),
    Key::opt(
        "ingress",
        Value::Flag {
            on: "ingress",
            off: Some("egress"),
        },
    ),
]);

/// The `diffserv` key's words.
const DIFFSERV_WORDS: [&str; 5] = [
    "besteffort",
    "diffserv3",
    "diffserv4",
    "diffserv8",
    "precedence",
];

/// The `framing` key's words: the keywords that set the overhead, ATM
/// mode and mpu of a link layer.
const FRAMING_WORDS: [&str; 15] = [
    "raw",
    "conservative",
    "ethernet",
    "docsis",
    "ether-vlan",
    "ipoa-vcmux",
    "ipoa-llcsnap",
    "bridged-vcmux",
    "bridged-llcsnap",
    "pppoa-vcmux",
    "pppoa-llc",
    "pppoe-vcmux",
    "pppoe-llcsnap",
    "pppoe-ptm",
    "bridged-ptm",
];

#[cfg(test)]
#[path = "cake_tests.rs"]
mod tests;
