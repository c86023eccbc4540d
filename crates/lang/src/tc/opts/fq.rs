//! The `fq` qdisc's tc syntax (iproute2 v6.18.0 tc/q_fq.c): `fq_parse_opt`
//! reads its words into the `TCA_FQ_*` attributes
//! (`crate::qdisc::fq::FqOptions`), `buckets` as its log rounded up and
//! not sent when 0, rates 32-bit (`get_rate`), `timer_slack` in ns
//! (`get_time64`), the other times in µs (`get_time`); `bands 3 priomap
//! ...` and `weights` checked as tc checks them; `fq_print_opt` prints
//! what `fq_dump` sends back and `fq_print_xstats` its `tc_fq_qd_stats`.

use crate::qdisc::dump::Xstats;
use crate::qdisc::fq::{FqOptions, FqXstats, FQ_BANDS, FQ_MIN_WEIGHT, UNLIMITED};
use crate::qdisc::pfifo_fast::PfifoFastOptions;
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{replace_root, Bench, JsonObj, Printed, Sample, Syntax, XstatsPrinter};
use crate::tc::tokens::{c_number, incomplete, Tokens};
use crate::tc::TcError;
use crate::units::sprint_time64;
use crate::units::{get_time64, parse_rate, parse_time, print_rate, sprint_size, sprint_time};
use serde_json::json;
use std::fmt::Write;

/// q_fq.c `explain`.
const USAGE: &str = "Usage: ... fq\t[ limit PACKETS ] [ flow_limit PACKETS ]\n\t\t[ quantum BYTES ] [ initial_quantum BYTES ]\n\t\t[ maxrate RATE ] [ buckets NUMBER ]\n\t\t[ [no]pacing ] [ refill_delay TIME ]\n\t\t[ bands 3 priomap P0 P1 ... P14 P15 ]\n\t\t[ weights W1 W2 W3 ]\n\t\t[ low_rate_threshold RATE ]\n\t\t[ orphan_mask MASK]\n\t\t[ timer_slack TIME]\n\t\t[ ce_threshold TIME ]\n\t\t[ horizon TIME ]\n\t\t[ horizon_{cap|drop} ]\n\t\t[ offload_horizon TIME ]";

/// tc's `Illegal "name"` for the value `v` of `name`, with why.
fn illegal(label: &str, v: &str, why: &str) -> TcError {
    TcError::new(format!("Illegal \"{label}\" (\"{v}\": {why})"))
}

/// `get_unsigned` of the word after `name`; `label` names it in the
/// message (tc says `initial_quantum` for a bad `orphan_mask`).
fn unsigned(name: &str, label: &str, t: &mut Tokens) -> Result<u32, TcError> {
    let v = t.value(|| incomplete(name))?;
    c_number(v)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| illegal(label, v, "expected an unsigned 32-bit number"))
}

/// `get_time`: µs.
fn time(name: &str, t: &mut Tokens) -> Result<u32, TcError> {
    let v = t.value(|| incomplete(name))?;
    parse_time(v)
        .map(|us| us as u32)
        .map_err(|e| TcError::new(format!("Illegal \"{name}\" ({e})")))
}

/// `get_rate`: bytes/s in 32 bits; a percentage of the device's speed
/// (`get_percent_rate`) is refused, bloatbox's devices having none.
fn rate(name: &str, t: &mut Tokens) -> Result<u32, TcError> {
    let v = t.value(|| incomplete(name))?;
    if v.contains('%') {
        return Err(illegal(
            name,
            v,
            "the device reports no speed to take a percentage of",
        ));
    }
    let bytes = parse_rate(v).map_err(|e| TcError::new(format!("Illegal \"{name}\" ({e})")))?;
    u32::try_from(bytes).map_err(|_| illegal(name, v, "more than 2^32 - 1 bytes/s"))
}

/// `bands 3 priomap P0 ... P15`, after `bands`.
fn priomap(t: &mut Tokens) -> Result<PfifoFastOptions, TcError> {
    let v = t.value(|| incomplete("bands"))?;
    let bands: i32 = v
        .parse()
        .map_err(|_| illegal("bands", v, "expected an integer"))?;
    if bands != 3 {
        return Err(TcError::new("\"bands\" must be 3"));
    }
    if t.value(|| incomplete("bands"))? != "priomap" {
        return Err(TcError::new("\"priomap\" expected"));
    }
    let mut map = PfifoFastOptions {
        bands: 3,
        priomap: [0; 16],
    };
    for slot in &mut map.priomap {
        let w = t
            .next()
            .ok_or_else(|| TcError::new("Not enough elements in priomap"))?;
        let band: u32 = w
            .parse()
            .map_err(|_| TcError::new("Illegal \"priomap\" element, number in [0..2] expected"))?;
        if band >= 3 {
            return Err(TcError::new(format!("\"priomap\" element {band} too big")));
        }
        *slot = band as u8;
    }
    Ok(map)
}

/// `weights W1 W2 W3`, after `weights`.
fn weights(t: &mut Tokens) -> Result<[i32; FQ_BANDS], TcError> {
    let mut w = [0i32; FQ_BANDS];
    for slot in &mut w {
        let v = t
            .next()
            .ok_or_else(|| TcError::new("Not enough elements in weights"))?;
        let n: i32 = v
            .parse()
            .map_err(|_| TcError::new("Illegal \"weights\" element, positive number expected"))?;
        if n < FQ_MIN_WEIGHT {
            return Err(TcError::new(format!("\"weight\" element {n} too small")));
        }
        *slot = n;
    }
    Ok(w)
}

/// q_fq.c's `ilog2`: the log of `val` rounded up.
fn ilog2(val: u32) -> u32 {
    let mut v = val.wrapping_sub(1);
    let mut res = 0;
    while v != 0 {
        res += 1;
        v >>= 1;
    }
    res
}

/// `fq_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = FqOptions::default();
    let mut buckets = 0;
    while let Some(word) = t.next() {
        match word {
            "limit" => o.limit = Some(unsigned(word, word, t)?),
            "flow_limit" => o.flow_limit = Some(unsigned(word, word, t)?),
            "buckets" => buckets = unsigned(word, word, t)?,
            "maxrate" => o.maxrate = Some(rate(word, t)?),
            "low_rate_threshold" => o.low_rate_threshold = Some(rate(word, t)?),
            "defrate" => o.defrate = Some(rate(word, t)?),
            "ce_threshold" => o.ce_threshold = Some(time(word, t)?),
            "timer_slack" => {
                let v = t.value(|| incomplete(word))?;
                let ns = get_time64(v).ok_or_else(|| illegal(word, v, "expected a time"))?;
                o.timer_slack = Some(
                    u32::try_from(ns)
                        .map_err(|_| TcError::new("Illegal (out of range) \"timer_slack\""))?,
                );
            }
            "horizon_drop" => o.horizon_drop = Some(1),
            "horizon_cap" => o.horizon_drop = Some(0),
            "horizon" => o.horizon = Some(time(word, t)?),
            "offload_horizon" => o.offload_horizon = Some(time(word, t)?),
            "quantum" => o.quantum = Some(unsigned(word, word, t)?),
            "initial_quantum" => o.initial_quantum = Some(unsigned(word, word, t)?),
            "orphan_mask" => o.orphan_mask = Some(unsigned(word, "initial_quantum", t)?),
            "refill_delay" => o.refill_delay = Some(time(word, t)?),
            "pacing" => o.pacing = Some(1),
            "nopacing" => o.pacing = Some(0),
            "bands" => {
                if o.priomap.is_some() {
                    return Err(TcError::new("Duplicate \"bands\""));
                }
                o.priomap = Some(priomap(t)?);
            }
            "weights" => {
                if o.weights.is_some() {
                    return Err(TcError::new("Duplicate \"weights\""));
                }
                o.weights = Some(weights(t)?);
            }
            "help" => return Err(TcError::new(USAGE)),
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{USAGE}"))),
        }
    }
    if buckets != 0 {
        o.buckets_log = Some(ilog2(buckets));
    }
    Ok(QdiscOptions::Fq(Box::new(o)))
}

/// The words and the `-j` object `fq_print_opt` writes.
struct Out {
    text: String,
    json: JsonObj,
}

impl Out {
    fn put(&mut self, key: &str, word: String, v: serde_json::Value) {
        let _ = write!(self.text, "{word} ");
        self.json.insert(key, v);
    }
}

/// `fq_print_opt` (its text ends with a space, trimmed by the caller).
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Fq(o) = options else {
        return None;
    };
    let mut out = Out {
        text: String::new(),
        json: JsonObj::new(),
    };
    if let Some(v) = o.limit {
        out.put("limit", format!("limit {v}p"), json!(v));
    }
    if let Some(v) = o.flow_limit {
        out.put("flow_limit", format!("flow_limit {v}p"), json!(v));
    }
    if let Some(v) = o.buckets_log {
        let b = 1u32.wrapping_shl(v);
        out.put("buckets", format!("buckets {b}"), json!(b));
    }
    if let Some(v) = o.orphan_mask {
        out.put("orphan_mask", format!("orphan_mask {v}"), json!(v));
    }
    if o.pacing == Some(0) {
        out.put("pacing", "nopacing".into(), json!(false));
    }
    if let Some(p) = &o.priomap {
        out.put("bands", format!("bands {}", p.bands), json!(p.bands));
        let map: Vec<String> = p.priomap.iter().map(|b| b.to_string()).collect();
        // open_json_array(PRINT_ANY, "priomap "): the key keeps its space.
        out.put(
            "priomap ",
            format!("priomap {}", map.join(" ")),
            json!(p.priomap),
        );
    }
    if let Some(w) = &o.weights {
        let words: Vec<String> = w.iter().map(|b| b.to_string()).collect();
        out.put("weights ", format!("weights {}", words.join(" ")), json!(w));
    }
    if let Some(v) = o.quantum {
        out.put(
            "quantum",
            format!("quantum {}", sprint_size(v.into())),
            json!(v),
        );
    }
    if let Some(v) = o.initial_quantum {
        let word = format!("initial_quantum {}", sprint_size(v.into()));
        out.put("initial_quantum", word, json!(v));
    }
    if let Some(v) = o.maxrate.filter(|v| *v != UNLIMITED) {
        out.put(
            "maxrate",
            format!("maxrate {}", print_rate(v.into())),
            json!(v),
        );
    }
    if let Some(v) = o.defrate.filter(|v| *v != 0) {
        out.put(
            "defrate",
            format!("defrate {}", print_rate(v.into())),
            json!(v),
        );
    }
    if let Some(v) = o.low_rate_threshold.filter(|v| *v != 0) {
        let word = format!("low_rate_threshold {}", print_rate(v.into()));
        out.put("low_rate_threshold", word, json!(v));
    }
    if let Some(v) = o.refill_delay {
        let word = format!("refill_delay {}", sprint_time(v.into()));
        out.put("refill_delay", word, json!(v));
    }
    if let Some(v) = o.ce_threshold.filter(|v| *v != u32::MAX) {
        let word = format!("ce_threshold {}", sprint_time(v.into()));
        out.put("ce_threshold", word, json!(v));
    }
    if let Some(v) = o.timer_slack {
        let word = format!("timer_slack {}", sprint_time64(v.into()));
        out.put("timer_slack", word, json!(v));
    }
    if let Some(v) = o.horizon {
        out.put(
            "horizon",
            format!("horizon {}", sprint_time(v.into())),
            json!(v),
        );
    }
    match o.horizon_drop {
        Some(0) => out.put("horizon_cap", "horizon_cap".into(), json!(null)),
        Some(_) => out.put("horizon_drop", "horizon_drop".into(), json!(null)),
        None => {}
    }
    if let Some(v) = o.offload_horizon {
        let word = format!("offload_horizon {}", sprint_time(v.into()));
        out.put("offload_horizon", word, json!(v));
    }
    Some(Printed::same(out.text.trim_end().to_string(), out.json))
}

/// fq's tc syntax (it has no classes).
pub static SYNTAX: Syntax = Syntax {
    kind: "fq",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(|dir, _| vec![format!("{} fq", replace_root(dir))]),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[
        Bench::new("fq", &["tc qdisc add dev D root fq"]),
        Bench::new(
            "fq_maxrate",
            &["tc qdisc add dev D root fq maxrate 10gbit flow_limit 10000"],
        ),
    ],
    samples: &[
        Sample::new("fq", &["tc qdisc add dev D root fq limit 40 flow_limit 8"]),
        Sample::new(
            "fq_maxrate",
            &["tc qdisc add dev D root fq maxrate 5mbit quantum 1514 initial_quantum 3028 ce_threshold 2ms flow_limit 20"],
        ),
        Sample::new(
            "fq_bands",
            &["tc qdisc add dev D root fq bands 3 priomap 2 2 1 1 0 0 0 0 1 1 1 1 1 1 1 1 weights 30000 20000 16384 orphan_mask 15 buckets 4"],
        ),
    ],
};

/// The keys of an `fq` table in the configuration (tc-fq(8)): `bands`
/// and `priomap` follow each other as `fq_parse_opt` reads them (`bands 3
/// priomap P0 ... P15`).
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::opt("limit", Value::Count),
    Key::opt("flow_limit", Value::Count),
    Key::opt("quantum", Value::Count),
    Key::opt("initial_quantum", Value::Count),
    Key::opt("maxrate", Value::Rate),
    Key::opt("defrate", Value::Rate),
    Key::opt("buckets", Value::Count),
    Key::opt(
        "pacing",
        Value::Flag {
            on: "pacing",
            off: Some("nopacing"),
        },
    ),
    Key::opt("refill_delay", Value::Time),
    Key::opt("bands", Value::Count),
    Key::opt("priomap", Value::Words),
    Key::opt("weights", Value::Words),
    Key::opt("low_rate_threshold", Value::Rate),
    Key::opt("orphan_mask", Value::Count),
    Key::opt("timer_slack", Value::Time),
    Key::opt("ce_threshold", Value::Time),
    Key::opt("horizon", Value::Time),
    Key::opt("offload_horizon", Value::Time),
    Key::opt(
        "horizon_drop",
        Value::Flag {
            on: "horizon_drop",
            off: Some("horizon_cap"),
        },
    ),
]);

/// `fq_print_xstats`: `tc_fq_qd_stats`.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| match x {
        Xstats::Fq(s) => {
            fq_text(out, s);
            Some(())
        }
        _ => None,
    },
    json: |x| {
        let Xstats::Fq(s) = x else { return None };
        Some(fq_json(s))
    },
};

/// The counters of the third line, each printed when not zero.
fn rare(s: &FqXstats) -> [(&'static str, &'static str, u64); 7] {
    [
        ("pkts_too_long", " pkts_too_long", s.pkts_too_long),
        ("alloc_errors", " alloc_errors", s.allocation_errors),
        ("horizon_drops", " horizon_drops", s.horizon_drops),
        ("horizon_caps", "  horizon_caps", s.horizon_caps),
        ("band0_drops", " band0_drops", s.band_drops[0]),
        ("band1_drops", " band1_drops", s.band_drops[1]),
        ("band2_drops", " band2_drops", s.band_drops[2]),
    ]
}

/// The counters of the second line after `throttled`, each printed when
/// not zero.
fn notable(s: &FqXstats) -> [(&'static str, u64); 2] {
    [("ce_mark", s.ce_mark), ("flows_plimit", s.flows_plimit)]
}

fn fq_text(out: &mut String, s: &FqXstats) {
    let _ = write!(
        out,
        "  flows {} (inactive {} throttled {})",
        s.flows, s.inactive_flows, s.throttled_flows
    );
    for (i, n) in s.band_pkt_count.iter().enumerate() {
        let _ = write!(out, " band{i}_pkts {n}");
    }
    if s.time_next_delayed_flow > 0 {
        let _ = write!(
            out,
            " next_packet_delay {}",
            sprint_time64(s.time_next_delayed_flow)
        );
    }
    let _ = write!(out, "\n  gc {} highprio {}", s.gc_flows, s.highprio_packets);
    if s.fastpath_packets != 0 {
        let _ = write!(out, " fastpath {}", s.fastpath_packets);
    }
    if s.tcp_retrans != 0 {
        let _ = write!(out, " retrans {}", s.tcp_retrans);
    }
    let _ = write!(out, " throttled {}", s.throttled);
    if s.unthrottle_latency_ns != 0 {
        let _ = write!(
            out,
            " latency {}",
            sprint_time64(s.unthrottle_latency_ns.into())
        );
    }
    for (name, v) in notable(s).into_iter().filter(|(_, v)| *v != 0) {
        let _ = write!(out, " {name} {v}");
    }
    let rare = rare(s);
    if rare.iter().any(|(_, _, v)| *v != 0) {
        out.push('\n');
        for (_, word, v) in rare.into_iter().filter(|(_, _, v)| *v != 0) {
            let _ = write!(out, "{word} {v}");
        }
    }
    out.push('\n');
}

fn fq_json(s: &FqXstats) -> JsonObj {
    let mut j = JsonObj::new();
    j.insert("flows", json!(s.flows));
    j.insert("inactive", json!(s.inactive_flows));
    j.insert("throttled", json!(s.throttled_flows));
    for (i, n) in s.band_pkt_count.iter().enumerate() {
        j.insert(format!("band{i}_pkts"), json!(n));
    }
    if s.time_next_delayed_flow > 0 {
        j.insert("next_packet_delay", json!(s.time_next_delayed_flow));
    }
    j.insert("gc", json!(s.gc_flows));
    j.insert("highprio", json!(s.highprio_packets));
    if s.fastpath_packets != 0 {
        j.insert("fastpath", json!(s.fastpath_packets));
    }
    if s.tcp_retrans != 0 {
        j.insert("retrans", json!(s.tcp_retrans));
    }
    // iproute2's writer repeats the key.
    j.push("throttled", json!(s.throttled));
    if s.unthrottle_latency_ns != 0 {
        j.insert("latency", json!(s.unthrottle_latency_ns));
    }
    for (name, v) in notable(s).into_iter().filter(|(_, v)| *v != 0) {
        j.insert(name, json!(v));
    }
    for (name, _, v) in rare(s).into_iter().filter(|(_, _, v)| *v != 0) {
        j.insert(name, json!(v));
    }
    j
}

#[cfg(test)]
#[path = "fq_tests.rs"]
mod tests;
