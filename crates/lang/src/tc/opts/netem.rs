//! The tc syntax of the netem qdisc (iproute2 tc/q_netem.c
//! `netem_parse_opt`, `netem_print_opt`): `limit`, `delay TIME [JITTER
//! [CORRELATION]]` (64-bit times, a bare number is nanoseconds as
//! `get_time64` reads it), `distribution NAME` (a table read from
//! `$TC_LIB_DIR` or /usr/lib/tc, `<NAME>.dist`, as `get_distribution`
//! does; where no such file exists the named `normal`, `pareto` and
//! `paretonormal` are built by `model::build_table` instead of refused),
//! `loss [random] PERCENT [CORRELATION]`, `loss state P13 [P31 [P32 [P23
//! [P14]]]]`, `loss gemodel P [R [1-H [1-K]]]`, `ecn`, `duplicate`,
//! `corrupt`, `reorder PERCENT [CORRELATION]`, `gap N`, `rate RATE
//! [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]`, `slot MIN [MAX] | slot
//! distribution NAME DELAY JITTER` with `packets N` and `bytes SIZE`, and
//! `seed N`; percentages as tc scales them (`rint(p × (2^32 - 1))`), its
//! defaults, its refusals after the loop, and the dump printed back as
//! `tc [-d] [-j]` prints it. This is the qdisc's language; the wire
//! stage's (`crate::tc::netem`, `set left.netem=...`) is another grammar
//! with its own messages and stays apart.

use super::pie::unknown;
use super::red::illegal;
use super::tbf::matches;
use crate::dir::Dir;
use crate::qdisc::netem::model::{self, NamedDist};
use crate::qdisc::netem::{
    NetemCorr, NetemLossModel, NetemOptions, NetemProb, NetemRate, NetemSlot,
};
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{replace_root, Bench, JsonObj, Printed, Sample, Syntax};
use crate::tc::tokens::{c_number, incomplete, Tokens};
use crate::tc::TcError;
use crate::units::{
    get_time64, parse_rate, parse_size, print_g, print_rate, sprint_time64, strtod,
};
use serde_json::json;
use std::fmt::Write;

/// q_netem.c `explain`.
const USAGE: &str = "Usage: ... netem [ limit PACKETS ]\n\
\x20                [ delay TIME [ JITTER [ CORRELATION ] ] ]\n\
\x20                [ distribution {uniform|normal|pareto|paretonormal} ]\n\
\x20                [ corrupt PERCENT [ CORRELATION ] ]\n\
\x20                [ duplicate PERCENT [ CORRELATION ] ]\n\
\x20                [ loss random PERCENT [ CORRELATION ] ]\n\
\x20                [ loss state P13 [ P31 [ P32 [ P23 [ P14 ] ] ] ] ]\n\
\x20                [ loss gemodel PERCENT [ R [ 1-H [ 1-K ] ] ] ]\n\
\x20                [ seed SEED ]\n\
\x20                [ ecn ]\n\
\x20                [ reorder PERCENT [ CORRELATION ] [ gap DISTANCE ] ]\n\
\x20                [ rate RATE [ PACKETOVERHEAD ] [ CELLSIZE ] [ CELLOVERHEAD ] ]\n\
\x20                [ slot MIN_DELAY [ MAX_DELAY ] [ packets MAX_PACKETS ] [ bytes MAX_BYTES ] ]\n\
\x20                [ slot distribution {uniform|normal|pareto|paretonormal|custom}\n\
\x20                  DELAY JITTER [ packets MAX_PACKETS ] [ bytes MAX_BYTES ] ]";

/// netem's syntax: iproute2's tc/q_netem.c for `NetemOptions`.
pub static SYNTAX: Syntax = Syntax {
    kind: "netem",
    qdisc: |t| Ok(QdiscOptions::Netem(Box::new(parse(t)?))),
    class: None,
    print: |o| match o {
        QdiscOptions::Netem(o) => Some(print(o)),
        _ => None,
    },
    print_class: |_| None,
    example: Some(example),
    // Only ` ecn ` ends with a space, and the printer writes it.
    trailing_space: false,
    xstats: None,
    table: Some(&TABLE),
    benches: &[Bench::new(
        "netem",
        &["tc qdisc add dev D root netem limit 20000 delay 1ms"],
    )],
    // Each with netem at the root; no jitter or reorder (the property
    // tests check per-flow order) and no duplicate (conservation).
    samples: &[
        Sample::new(
            "netem delay",
            &["tc qdisc add dev D root netem limit 40 delay 5ms"],
        ),
        Sample::new(
            "netem loss rate",
            &["tc qdisc add dev D root netem limit 30 delay 2ms loss 5% rate 10mbit seed 3"],
        ),
        Sample::new(
            "netem gemodel slot",
            &["tc qdisc add dev D root netem limit 30 loss gemodel 5% 30% 50% 1% slot 1ms 2ms packets 4 seed 8"],
        ),
    ],
};

/// The keys of a `netem` table in the configuration: each the tc word and
/// the words after it as written (`delay = "20ms 5ms 25%"`, `loss =
/// "gemodel 1% 10%"`, `rate = "5kbit 20 100 5"`).
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::opt("limit", Value::Count),
    Key::opt("delay", Value::Words),
    Key::opt("distribution", Value::Words),
    Key::opt("loss", Value::Words),
    Key::opt(
        "ecn",
        Value::Flag {
            on: "ecn",
            off: None,
        },
    ),
    Key::opt("duplicate", Value::Words),
    Key::opt("corrupt", Value::Words),
    Key::opt("reorder", Value::Words),
    Key::opt("gap", Value::Count),
    Key::opt("rate", Value::Words),
    Key::opt("slot", Value::Words),
    Key::opt("seed", Value::Words),
]);

/// The qdisc menu's netem: 20 ms of delay, tc's default limit.
fn example(dir: Dir, _rate_bytes_ps: u64) -> Vec<String> {
    vec![format!("{} netem limit 1000 delay 20ms", replace_root(dir))]
}

/// `NEXT_ARG()` after keyword `tok`.
fn next_value<'a>(t: &mut Tokens<'a>, tok: &str) -> Result<&'a str, TcError> {
    t.value(|| incomplete(tok))
}

/// `NEXT_IS_NUMBER()`: the next word begins with a digit.
fn next_is_number(t: &Tokens) -> bool {
    t.peek()
        .is_some_and(|w| w.as_bytes().first().is_some_and(u8::is_ascii_digit))
}

/// `NEXT_IS_SIGNED_NUMBER()`: a digit or a minus sign first.
fn next_is_signed_number(t: &Tokens) -> bool {
    t.peek()
        .is_some_and(|w| matches!(w.as_bytes().first(), Some(b'0'..=b'9' | b'-')))
}

/// `set_percent`: a fraction as the kernel's u32 (`rint(p × UINT32_MAX)`).
fn set_percent(fraction: f64) -> u32 {
    (fraction * f64::from(u32::MAX)).round_ties_even() as u32
}

/// `parse_percent` (tc/tc_util.c): a float (`strtod`) divided by 100, in
/// 0..=1, followed by nothing or `%`.
pub(super) fn parse_percent(word: &str) -> Option<f64> {
    let (v, rest) = strtod(word)?;
    let v = v / 100.0;
    ((0.0..=1.0).contains(&v) && (rest.is_empty() || rest == "%")).then_some(v)
}

/// `get_percent`: `parse_percent` then `set_percent`; `name` is what
/// `explain1` names.
fn get_percent(word: &str, name: &str) -> Result<u32, TcError> {
    parse_percent(word)
        .map(set_percent)
        .ok_or_else(|| illegal(name, word, "a percentage in 0..=100 like 1% or 0.5"))
}

/// `get_time64` or `explain1(name)`.
fn time64(word: &str, name: &str) -> Result<i64, TcError> {
    get_time64(word).ok_or_else(|| illegal(name, word, "a time like 10ms, 1.5s or 250us"))
}

/// `get_s32(.., 0)`: a C number, possibly negative, into 32 bits.
pub(super) fn get_s32(word: &str) -> Option<i32> {
    match word.strip_prefix('-') {
        Some(m) => c_number(m)
            .and_then(|n| i64::try_from(n).ok())
            .and_then(|n| i32::try_from(-n).ok()),
        None => c_number(word).and_then(|n| i32::try_from(n).ok()),
    }
}

/// `get_u32(.., 0)`.
fn get_u32(word: &str) -> Option<u32> {
    c_number(word).and_then(|n| u32::try_from(n).ok())
}

/// A refusal after the loop: tc's line, then its usage.
fn with_usage(line: &str) -> TcError {
    TcError::new(format!("{line}\n{USAGE}"))
}

/// The directory tc reads `.dist` files from (`get_tc_lib`).
fn tc_lib() -> String {
    std::env::var("TC_LIB_DIR").unwrap_or_else(|_| "/usr/lib/tc/".to_string())
}

/// `get_distribution`: the table `<lib>/<name>.dist`. Where the file does
/// not exist and `name` is one of netem's named distributions, its table
/// is built (bloatbox ships no .dist files).
fn distribution(name: &str) -> Result<Vec<i16>, TcError> {
    let path = format!("{}/{name}.dist", tc_lib());
    let table = match std::fs::read_to_string(&path) {
        Ok(text) => {
            model::read_dist_file(&text).map_err(|e| TcError::new(format!("{path}: {e}")))?
        }
        Err(e) => match NamedDist::by_name(name) {
            Some(d) if e.kind() == std::io::ErrorKind::NotFound => model::build_table(d),
            _ => {
                return Err(TcError::new(format!(
                    "No distribution data for {name} ({path}: {})",
                    strerror(&e)
                )))
            }
        },
    };
    if table.is_empty() {
        return Err(TcError::new(format!(
            "{path}: no values (tc stops without a message)"
        )));
    }
    Ok(table)
}

/// C's `strerror` text of an I/O error.
fn strerror(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "No such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "Permission denied".into(),
        _ => e.to_string(),
    }
}

/// What `netem_parse_opt` gathers besides the options themselves.
#[derive(Default)]
struct Present {
    latency: bool,
    jitter: bool,
    corr: bool,
    reorder: bool,
    corrupt: bool,
    ecn: bool,
    rate: bool,
    slot: bool,
    seed: bool,
}

/// `netem_parse_opt`.
fn parse(t: &mut Tokens) -> Result<NetemOptions, TcError> {
    let mut o = NetemOptions {
        limit: 1000,
        ..NetemOptions::default()
    };
    let mut present = Present::default();
    let (mut latency, mut jitter, mut seed) = (0i64, 0i64, 0u64);
    let mut cor = NetemCorr::default();
    let (mut reorder, mut corrupt) = (NetemProb::default(), NetemProb::default());
    let mut rate = NetemRate::default();
    let mut slot = NetemSlot::default();
    while let Some(tok) = t.next() {
        if matches(tok, "limit") {
            let v = next_value(t, tok)?;
            o.limit = parse_size(v)
                .ok()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| illegal("limit", v, "a number of packets"))?;
        } else if matches(tok, "latency") || matches(tok, "delay") {
            present.latency = true;
            latency = time64(next_value(t, tok)?, "latency")?;
            if next_is_number(t) {
                present.jitter = true;
                jitter = time64(next_value(t, tok)?, "latency")?;
                if next_is_number(t) {
                    present.corr = true;
                    cor.delay = get_percent(next_value(t, tok)?, "latency")?;
                }
            }
        } else if matches(tok, "loss") || matches(tok, "drop") {
            if o.loss > 0 || o.loss_model.is_some() {
                return Err(TcError::new("Illegal \"duplicate loss argument\n\""));
            }
            let model = next_value(t, tok)?;
            if model.as_bytes().first().is_some_and(u8::is_ascii_digit) || model == "random" {
                let v = if model == "random" {
                    next_value(t, tok)?
                } else {
                    model
                };
                o.loss = get_percent(v, "loss percent")?;
                if next_is_number(t) {
                    present.corr = true;
                    cor.loss = get_percent(next_value(t, tok)?, "loss correlation")?;
                }
            } else if model == "state" {
                o.loss_model = Some(loss_state(t, tok)?);
            } else if model == "gemodel" {
                o.loss_model = Some(loss_gemodel(t, tok)?);
            } else {
                return Err(TcError::new(format!("Unknown loss parameter: {model}")));
            }
        } else if matches(tok, "seed") {
            present.seed = true;
            let v = next_value(t, tok)?;
            seed = v
                .parse()
                .ok()
                .filter(|_| v.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| illegal("seed", v, "an integer 0..=18446744073709551615"))?;
        } else if matches(tok, "ecn") {
            present.ecn = true;
        } else if matches(tok, "reorder") {
            present.reorder = true;
            reorder.probability = get_percent(next_value(t, tok)?, "reorder")?;
            if next_is_number(t) {
                present.corr = true;
                reorder.correlation = get_percent(next_value(t, tok)?, "reorder")?;
            }
        } else if matches(tok, "corrupt") {
            present.corrupt = true;
            corrupt.probability = get_percent(next_value(t, tok)?, "corrupt")?;
            if next_is_number(t) {
                present.corr = true;
                corrupt.correlation = get_percent(next_value(t, tok)?, "corrupt")?;
            }
        } else if matches(tok, "gap") {
            let v = next_value(t, tok)?;
            o.gap = get_u32(v).ok_or_else(|| illegal("gap", v, "a number of packets"))?;
        } else if matches(tok, "duplicate") {
            o.duplicate = get_percent(next_value(t, tok)?, "duplicate")?;
            // tc sends the duplication's correlation only with another
            // correlation (it does not mark TCA_NETEM_CORR present).
            if next_is_number(t) {
                cor.dup = get_percent(next_value(t, tok)?, "duplicate")?;
            }
        } else if matches(tok, "distribution") {
            o.delay_dist = Some(distribution(next_value(t, tok)?)?);
        } else if matches(tok, "rate") {
            present.rate = true;
            rate_words(t, tok, &mut rate)?;
        } else if matches(tok, "slot") {
            slot_words(t, tok, &mut slot, &mut o.slot_dist)?;
            present.slot = true;
        } else {
            return Err(unknown(tok, USAGE));
        }
    }
    if reorder.probability != 0 {
        if latency == 0 {
            return Err(with_usage(
                "reordering not possible without specifying some delay",
            ));
        }
        if o.gap == 0 {
            o.gap = 1;
        }
    } else if o.gap > 0 {
        return Err(with_usage("gap specified without reorder probability"));
    }
    if present.ecn && o.loss == 0 && o.loss_model.is_none() {
        return Err(with_usage("ecn requested without loss model"));
    }
    if o.delay_dist.is_some() && (latency == 0 || jitter == 0) {
        return Err(with_usage(
            "distribution specified but no latency and jitter values",
        ));
    }
    o.latency = present.latency.then_some(latency);
    o.jitter = present.jitter.then_some(jitter);
    o.corr = present.corr.then_some(cor);
    o.reorder = present.reorder.then_some(reorder);
    o.ecn = present.ecn.then_some(1);
    o.corrupt = present.corrupt.then_some(corrupt);
    o.slot = present.slot.then_some(slot);
    o.rate = present.rate.then_some(rate);
    o.seed = present.seed.then_some(seed);
    Ok(o)
}

/// `loss state P13 [P31 [P32 [P23 [P14]]]]` with tc's defaults: p31 =
/// 1 - p13, p32 = 0, p23 = 100%, p14 = 0.
fn loss_state(t: &mut Tokens, tok: &str) -> Result<NetemLossModel, TcError> {
    let v = t.value(|| incomplete(tok))?;
    let p13 = parse_percent(v).ok_or_else(|| illegal("loss p13", v, "a percentage in 0..=100"))?;
    let mut p = [
        set_percent(p13),
        set_percent(1.0 - p13),
        0,
        set_percent(1.0),
        0,
    ];
    for (slot, name) in p
        .iter_mut()
        .skip(1)
        .zip(["loss p31", "loss p32", "loss p23", "loss p14"])
    {
        if !next_is_number(t) {
            break;
        }
        *slot = get_percent(t.value(|| incomplete(tok))?, name)?;
    }
    Ok(NetemLossModel::FourState {
        p13: p[0],
        p31: p[1],
        p32: p[2],
        p23: p[3],
        p14: p[4],
    })
}

/// `loss gemodel P [R [1-H [1-K]]]` with tc's defaults: r = 1 - p, 1-h =
/// 100% (h = 0), 1-k = 0; a `1-h` given is sent as h = 2^32 - 1 - it.
fn loss_gemodel(t: &mut Tokens, tok: &str) -> Result<NetemLossModel, TcError> {
    let v = t.value(|| incomplete(tok))?;
    let p =
        parse_percent(v).ok_or_else(|| illegal("loss gemodel p", v, "a percentage in 0..=100"))?;
    let mut r = set_percent(1.0 - p);
    let (mut h, mut k1) = (0, 0);
    if next_is_number(t) {
        r = get_percent(t.value(|| incomplete(tok))?, "loss gemodel r")?;
        if next_is_number(t) {
            h = u32::MAX - get_percent(t.value(|| incomplete(tok))?, "loss gemodel h")?;
            if next_is_number(t) {
                k1 = get_percent(t.value(|| incomplete(tok))?, "loss gemodel k")?;
            }
        }
    }
    Ok(NetemLossModel::GilbertElliott {
        p: set_percent(p),
        r,
        h,
        k1,
    })
}

/// `rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]`.
fn rate_words(t: &mut Tokens, tok: &str, rate: &mut NetemRate) -> Result<(), TcError> {
    let v = t.value(|| incomplete(tok))?;
    if v.contains('%') {
        return Err(illegal(
            "rate",
            v,
            "a rate like 10mbit: bloatbox's devices have no speed to take a percentage of",
        ));
    }
    rate.rate = parse_rate(v).map_err(|_| illegal("rate", v, "a rate like 10mbit"))?;
    let bad = |v: &str| illegal("rate", v, "RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]");
    if next_is_signed_number(t) {
        let v = t.value(|| incomplete(tok))?;
        rate.packet_overhead = get_s32(v).ok_or_else(|| bad(v))?;
    }
    if next_is_number(t) {
        let v = t.value(|| incomplete(tok))?;
        rate.cell_size = get_u32(v).ok_or_else(|| bad(v))?;
    }
    if next_is_signed_number(t) {
        let v = t.value(|| incomplete(tok))?;
        rate.cell_overhead = get_s32(v).ok_or_else(|| bad(v))?;
    }
    Ok(())
}

/// `slot MIN [MAX]` or `slot distribution NAME DELAY JITTER`, then
/// `packets N` and `bytes SIZE`.
fn slot_words(
    t: &mut Tokens,
    tok: &str,
    slot: &mut NetemSlot,
    slot_dist: &mut Option<Vec<i16>>,
) -> Result<(), TcError> {
    if next_is_number(t) {
        slot.min_delay = time64(t.value(|| incomplete(tok))?, "slot min_delay")?;
        if next_is_number(t) {
            let v = t.value(|| incomplete(tok))?;
            slot.max_delay = get_time64(v)
                .filter(|m| *m >= slot.min_delay)
                .ok_or_else(|| illegal("slot max_delay", v, "a time not below the minimum"))?;
        } else {
            slot.max_delay = slot.min_delay;
        }
    } else {
        let v = t.value(|| incomplete(tok))?;
        if v != "distribution" {
            return Err(TcError::new(format!("Unknown slot parameter: {v}")));
        }
        *slot_dist = Some(distribution(t.value(|| incomplete(v))?)?);
        slot.dist_delay = time64(t.value(|| incomplete(v))?, "slot delay")?;
        slot.dist_jitter = time64(t.value(|| incomplete(v))?, "slot jitter")?;
        if slot.dist_jitter <= 0 {
            return Err(TcError::new("Non-positive jitter"));
        }
    }
    if t.peek().is_some_and(|w| matches(w, "packets")) {
        t.next();
        let v = t.peek().unwrap_or("");
        slot.max_packets =
            get_s32(v).ok_or_else(|| illegal("slot packets", v, "a number of packets"))?;
        t.next();
    }
    if t.peek().is_some_and(|w| matches(w, "bytes")) {
        t.next();
        let v = t.peek().unwrap_or("");
        slot.max_bytes = parse_size(v)
            .ok()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| illegal("slot bytes", v, "a size like 1500 or 64kb"))?
            as i32;
        t.next();
    }
    Ok(())
}

/// `__print_percent`'s text: `(100 × per) / UINT32_MAX` with `%g`.
fn pct(per: u32) -> String {
    print_g(100.0 * f64::from(per) / f64::from(u32::MAX))
}

/// A float as iproute2's JSON writer prints it (`%g`: `0`, `0.25`).
fn json_g(v: f64) -> serde_json::Value {
    let g = print_g(v);
    match g.parse::<i64>() {
        Ok(i) => json!(i),
        Err(_) => json!(g.parse::<f64>().unwrap_or(v)),
    }
}

/// `__print_percent`'s JSON: the fraction.
fn json_pct(per: u32) -> serde_json::Value {
    json_g(f64::from(per) / f64::from(u32::MAX))
}

/// `print_corr`: the text when `present`, always the JSON.
fn corr(text: &mut String, j: &mut JsonObj, present: bool, value: u32) {
    if present {
        let _ = write!(text, " {}%", pct(value));
    }
    j.insert("correlation", json_pct(value));
}

/// `netem_print_opt`: the same text with and without `-d`, and the `-j`
/// object.
fn print(o: &NetemOptions) -> Printed {
    let mut s = format!("limit {}", o.limit);
    let mut j = JsonObj::new();
    j.insert("limit", json!(o.limit));
    let cor = o.corr;
    let latency = o.latency.unwrap_or(0);
    let jitter = o.jitter.unwrap_or(0);
    if latency != 0 {
        let mut d = JsonObj::new();
        let _ = write!(s, " delay {}", sprint_time64(latency));
        if jitter != 0 {
            let _ = write!(s, "  {}", sprint_time64(jitter));
        }
        d.insert("delay", json_g(latency as f64 / 1e9));
        d.insert("jitter", json_g(jitter as f64 / 1e9));
        let c = cor.map_or(0, |c| c.delay);
        corr(&mut s, &mut d, jitter != 0 && c != 0, c);
        j.insert_obj("delay", d);
    }
    if o.loss != 0 {
        let mut d = JsonObj::new();
        let _ = write!(s, " loss {}%", pct(o.loss));
        d.insert("loss", json_pct(o.loss));
        let c = cor.map_or(0, |c| c.loss);
        corr(&mut s, &mut d, c != 0, c);
        j.insert_obj("loss-random", d);
    }
    match o.loss_model {
        Some(NetemLossModel::FourState {
            p13,
            p31,
            p32,
            p23,
            p14,
        }) => {
            let _ = write!(
                s,
                " loss state p13 {}% p31 {}% p32 {}% p23 {}% p14 {}%",
                pct(p13),
                pct(p31),
                pct(p32),
                pct(p23),
                pct(p14)
            );
            let mut d = JsonObj::new();
            for (k, v) in [
                ("p13", p13),
                ("p31", p31),
                ("p32", p32),
                ("p23", p23),
                ("p14", p14),
            ] {
                d.insert(k, json_pct(v));
            }
            j.insert_obj("loss-state", d);
        }
        Some(NetemLossModel::GilbertElliott { p, r, h, k1 }) => {
            let one_minus_h = u32::MAX - h;
            let _ = write!(
                s,
                " loss gemodel p {}% r {}% 1-h {}% 1-k {}%",
                pct(p),
                pct(r),
                pct(one_minus_h),
                pct(k1)
            );
            let mut d = JsonObj::new();
            for (k, v) in [("p", p), ("r", r), ("1-h", one_minus_h), ("1-k", k1)] {
                d.insert(k, json_pct(v));
            }
            j.insert_obj("loss-gemodel", d);
        }
        None => {}
    }
    if o.duplicate != 0 {
        let mut d = JsonObj::new();
        let _ = write!(s, " duplicate {}%", pct(o.duplicate));
        d.insert("duplicate", json_pct(o.duplicate));
        let c = cor.map_or(0, |c| c.dup);
        corr(&mut s, &mut d, c != 0, c);
        j.insert_obj("duplicate", d);
    }
    for (name, prob) in [("reorder", o.reorder), ("corrupt", o.corrupt)] {
        if let Some(p) = prob.filter(|p| p.probability != 0) {
            let mut d = JsonObj::new();
            let _ = write!(s, " {name} {}%", pct(p.probability));
            d.insert(name, json_pct(p.probability));
            corr(&mut s, &mut d, p.correlation != 0, p.correlation);
            j.insert_obj(name, d);
        }
    }
    if let Some(r) = o.rate.filter(|r| r.rate != 0) {
        let mut d = JsonObj::new();
        let _ = write!(s, " rate {}", print_rate(r.rate));
        d.insert("rate", json!(r.rate));
        if r.packet_overhead != 0 {
            let _ = write!(s, " packetoverhead {}", r.packet_overhead);
        }
        d.insert("packetoverhead", json!(r.packet_overhead));
        d.insert("cellsize", json!(r.cell_size));
        if r.cell_size != 0 {
            let _ = write!(s, " cellsize {}", r.cell_size);
        }
        if r.cell_overhead != 0 {
            let _ = write!(s, " celloverhead {}", r.cell_overhead);
        }
        d.insert("celloverhead", json!(r.cell_overhead));
        j.insert_obj("rate", d);
    }
    if let Some(sl) = o.slot {
        let mut d = JsonObj::new();
        let secs = |ns: i64| json_g(ns as f64 / 1e9);
        if sl.dist_jitter > 0 {
            let _ = write!(
                s,
                " slot distribution {} {}",
                sprint_time64(sl.dist_delay),
                sprint_time64(sl.dist_jitter)
            );
            d.insert("distribution", secs(sl.dist_delay));
            d.insert("jitter", secs(sl.dist_jitter));
        } else {
            let _ = write!(
                s,
                " slot {} {}",
                sprint_time64(sl.min_delay),
                sprint_time64(sl.max_delay)
            );
            d.insert("min-delay", secs(sl.min_delay));
            d.insert("max-delay", secs(sl.max_delay));
        }
        if sl.max_packets != 0 {
            let _ = write!(s, " packets {}", sl.max_packets);
        }
        d.insert("packets", json!(sl.max_packets));
        if sl.max_bytes != 0 {
            let _ = write!(s, " bytes {}", sl.max_bytes);
        }
        d.insert("bytes", json!(sl.max_bytes));
        j.insert_obj("slot", d);
    }
    if let Some(seed) = o.seed {
        let _ = write!(s, " seed {seed}");
        j.insert("seed", json!(seed));
    }
    j.insert("ecn", json!(o.ecn.is_some()));
    if o.ecn.is_some() {
        s.push_str(" ecn ");
    }
    j.insert("gap", json!(o.gap));
    if o.gap != 0 {
        let _ = write!(s, " gap {}", o.gap);
    }
    Printed::same(s, j)
}

#[cfg(test)]
#[path = "netem_tests.rs"]
mod tests;
