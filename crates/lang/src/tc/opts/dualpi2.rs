//! The `dualpi2` qdisc's tc syntax (iproute2 v6.18 tc/q_dualpi2.c):
//! `dualpi2_parse_opt` reads `limit`, `memlimit`, `target`, `tupdate`,
//! `alpha`, `beta` (Hz, sent in 1/256), `coupling_factor`, `step_thresh`
//! (a time, or packets with a `p`/`pkt(s)`/`packet(s)` suffix),
//! `min_qlen_step`, `classic_protection`, `max_rtt`/`typical_rtt` (from
//! which tc derives target, tupdate, alpha and beta) and the flags
//! `l4s_ect`/`any_ect`, `drop_on_overload`/`overflow`,
//! `drop_enqueue`/`drop_dequeue`, `split_gso`/`no_split_gso` into the
//! `TCA_DUALPI2_*` attributes (`crate::qdisc::dualpi2::Dualpi2Options`);
//! `dualpi2_print_opt` prints what `dualpi2_dump` sends back and
//! `dualpi2_print_xstats` its `tc_dualpi2_xstats`.

use super::netem::{get_s32, parse_percent};
use super::pie::{json_g, unknown};
use crate::qdisc::dualpi2::{
    Dualpi2Options, Dualpi2Xstats, StepThresh, ECN_MASK_ANY_ECT, ECN_MASK_L4S_ECT,
};
use crate::qdisc::dump::Xstats;
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{replace_root, Bench, JsonObj, Printed, Sample, Syntax, XstatsPrinter};
use crate::tc::tokens::{incomplete, Tokens};
use crate::tc::TcError;
use crate::units::{parse_time, sprint_time};
use serde_json::json;
use std::fmt::Write;

/// q_dualpi2.c `explain`.
const USAGE: &str = "Usage: ... dualpi2
               [limit PACKETS]
               [memlimit BYTES]
               [coupling_factor NUMBER]
               [step_thresh TIME|PACKETS]
               [min_qlen_step PACKETS]
               [drop_on_overload|overflow]
               [drop_enqueue|drop_dequeue]
               [classic_protection PERCENTAGE]
               [max_rtt TIME [typical_rtt TIME]]
               [target TIME] [tupdate TIME]
               [alpha ALPHA] [beta BETA]
               [split_gso|no_split_gso]";

/// tc's `ALPHA_BETA_MAX`, `(2 << 23) - 1` (Hz).
const ALPHA_BETA_MAX: f32 = ((2u32 << 23) - 1) as f32;
/// `ALPHA_BETA_SCALE`: alpha and beta are sent in 1/256 Hz.
const ALPHA_BETA_SCALE: u32 = 1 << 8;
/// `RTT_TYP_TO_MAX`.
const RTT_TYP_TO_MAX: u32 = 6;

/// `fprintf(stderr, "Illegal \"%s\"\n", name)`, with what was written.
fn illegal(name: &str, word: &str, expected: &str) -> TcError {
    TcError::new(format!(
        "Illegal \"{name}\" (\"{word}\": expected {expected})"
    ))
}

/// The word after `key` (`NEXT_ARG`).
fn value<'a>(t: &mut Tokens<'a>, key: &str) -> Result<&'a str, TcError> {
    t.value(|| incomplete(key))
}

/// `get_u32(.., 10)`.
fn u32_of(t: &mut Tokens, key: &str) -> Result<u32, TcError> {
    let w = value(t, key)?;
    w.parse()
        .map_err(|_| illegal(key, w, "an unsigned 32-bit decimal number"))
}

/// `get_time`, in µs.
fn time_of(t: &mut Tokens, key: &str) -> Result<u32, TcError> {
    let w = value(t, key)?;
    parse_time(w)
        .map(|us| us as u32)
        .map_err(|_| illegal(key, w, "a time like 15ms or 100us"))
}

/// `get_packets`: a number with a `p`, `pkt`, `pkts`, `packet` or
/// `packets` suffix.
fn packets(word: &str) -> Option<u32> {
    let at = word
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(word.len());
    let (n, suffix) = word.split_at(at);
    if n.is_empty() || !["p", "pkt", "pkts", "packet", "packets"].contains(&suffix) {
        return None;
    }
    n.parse().ok()
}

/// `parse_alpha_beta`: Hz in 0..=16777215, sent as `(u32)(f × 256)`; a
/// value below 1/256 is warned of (it becomes 0, which the kernel
/// refuses).
fn alpha_beta(t: &mut Tokens, name: &str) -> Result<u32, TcError> {
    let w = value(t, name)?;
    let f: f32 = w
        .parse()
        .ok()
        .filter(|f| (0.0..=ALPHA_BETA_MAX).contains(f))
        .ok_or_else(|| illegal(name, w, "a number of Hz in 0..=16777215"))?;
    if f < 1.0 / ALPHA_BETA_SCALE as f32 {
        t.notice(format!(
            "Warning: \"{name}\" is too small and will be rounded to zero."
        ));
    }
    Ok((f * ALPHA_BETA_SCALE as f32) as u32)
}

/// What the loop of `dualpi2_parse_opt` collects before its auto-config.
#[derive(Default)]
struct Args {
    o: Dualpi2Options,
    rtt_max: u32,
    rtt_typ: u32,
}

/// `dualpi2_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut a = Args::default();
    while let Some(word) = t.next() {
        let o = &mut a.o;
        match word {
            "limit" => o.limit = Some(u32_of(t, word)?),
            "memlimit" => o.memory_limit = Some(u32_of(t, word)?),
            "target" => o.target = Some(time_of(t, word)?),
            "tupdate" => o.tupdate = Some(time_of(t, word)?),
            "alpha" => o.alpha = Some(alpha_beta(t, word)?),
            "beta" => o.beta = Some(alpha_beta(t, word)?),
            "coupling_factor" => {
                let w = value(t, word)?;
                let k = get_s32(w)
                    .and_then(|k| u8::try_from(k).ok())
                    .ok_or_else(|| illegal(word, w, "a number in 0..=255"))?;
                o.coupling = Some(k);
            }
            "l4s_ect" => o.ecn_mask = Some(ECN_MASK_L4S_ECT),
            "any_ect" => o.ecn_mask = Some(ECN_MASK_ANY_ECT),
            "step_thresh" => {
                let w = value(t, word)?;
                o.step_thresh =
                    Some(match parse_time(w) {
                        Ok(us) => StepThresh::Micros(us as u32),
                        Err(_) => StepThresh::Packets(packets(w).ok_or_else(|| {
                            illegal(word, w, "a time like 1ms, or packets like 5p")
                        })?),
                    });
            }
            "min_qlen_step" => o.min_qlen_step = Some(u32_of(t, word)?),
            "overflow" => o.drop_overload = Some(false),
            "drop_on_overload" => o.drop_overload = Some(true),
            "drop_enqueue" => o.drop_early = Some(true),
            "drop_dequeue" => o.drop_early = Some(false),
            "split_gso" => o.split_gso = Some(true),
            "no_split_gso" => o.split_gso = Some(false),
            "classic_protection" => {
                let w = value(t, word)?;
                // `try_get_percent`: `rint(per × 100)`.
                let pct = parse_percent(w)
                    .map(|f| (f * 100.0).round_ties_even() as u8)
                    .ok_or_else(|| illegal(word, w, "a percentage in 0..=100"))?;
                o.c_protection = Some(pct);
            }
            "max_rtt" => a.rtt_max = time_of(t, word)?,
            "typical_rtt" => a.rtt_typ = time_of(t, word)?,
            other => return Err(unknown(other, USAGE)),
        }
    }
    auto_config(&mut a, t)?;
    Ok(QdiscOptions::Dualpi2(options(a.o)))
}

/// What `dualpi2_parse_opt` sends for the values given (the words', or
/// the configuration's structured form's): no limit, memlimit, target,
/// tupdate or step threshold given as zero.
pub fn options(o: Dualpi2Options) -> Dualpi2Options {
    let nonzero = |v: Option<u32>| v.filter(|v| *v != 0);
    Dualpi2Options {
        limit: nonzero(o.limit),
        memory_limit: nonzero(o.memory_limit),
        target: nonzero(o.target),
        tupdate: nonzero(o.tupdate),
        step_thresh: o
            .step_thresh
            .filter(|s| !matches!(s, StepThresh::Packets(0) | StepThresh::Micros(0))),
        ..o
    }
}

/// The `max_rtt`/`typical_rtt` auto-config of `dualpi2_parse_opt`: target
/// is the typical RTT, tupdate the smaller of it and a third of the
/// maximum, alpha = 0.1 × tupdate / max_rtt², beta = 0.3 / max_rtt (in
/// the C's double arithmetic with its float constants).
fn auto_config(a: &mut Args, t: &mut Tokens) -> Result<(), TcError> {
    if a.rtt_max == 0 && a.rtt_typ == 0 {
        return Ok(());
    }
    if a.rtt_typ == 0 {
        a.rtt_typ = (a.rtt_max / RTT_TYP_TO_MAX).max(1);
    } else if a.rtt_max == 0 {
        a.rtt_max = a.rtt_typ.wrapping_mul(RTT_TYP_TO_MAX);
    } else if a.rtt_typ > a.rtt_max {
        return Err(TcError::new("typical_rtt must be <= max_rtt!"));
    }
    let o = &mut a.o;
    if o.alpha.is_some() || o.beta.is_some() || o.tupdate.is_some() || o.target.is_some() {
        t.notice("rtt_max is specified, ignore alpha/beta/tupdate/target");
    }
    let (max, typ) = (f64::from(a.rtt_max), f64::from(a.rtt_typ));
    let target = a.rtt_typ;
    let third = max / 3.0;
    let tupdate = (if typ < third { typ } else { third } as u32).max(1);
    let alpha_f = f64::from(tupdate) / max / max * 1e6 * f64::from(0.1f32);
    let beta_f = f64::from(0.3f32) / max * 1e6;
    if beta_f > f64::from(ALPHA_BETA_MAX) {
        return Err(TcError::new(format!(
            "max_rtt={} is too low and cause beta to overflow!",
            sprint_time(a.rtt_max.into())
        )));
    }
    let least = 1.0 / f64::from(ALPHA_BETA_SCALE);
    if alpha_f < least || beta_f < least {
        return Err(TcError::new(format!(
            "Large max_rtt={} rounds down alpha={alpha_f:.6} and/or beta={beta_f:.6}!",
            sprint_time(a.rtt_max.into())
        )));
    }
    t.notice(format!(
        "Auto-config [max_rtt: {}, typical_rtt: {}]: target={} tupdate={} alpha={alpha_f:.6} beta={beta_f:.6}",
        sprint_time(a.rtt_max.into()),
        sprint_time(a.rtt_typ.into()),
        sprint_time(target.into()),
        sprint_time(tupdate.into()),
    ));
    o.target = Some(target);
    o.tupdate = Some(tupdate);
    o.alpha = Some((alpha_f * f64::from(ALPHA_BETA_SCALE)) as u32);
    o.beta = Some((beta_f * f64::from(ALPHA_BETA_SCALE)) as u32);
    Ok(())
}

/// `get_scaled_alpha_beta`: the float tc prints, `(float)v / 256`.
fn scaled(v: u32) -> f64 {
    f64::from(v as f32 / ALPHA_BETA_SCALE as f32)
}

/// `get_ecn_type` and `get_ecn_type_json` (the classic-only mask prints
/// as any_ect, as tc prints it).
fn ecn_type(mask: u8) -> (&'static str, &'static str) {
    match mask & ECN_MASK_ANY_ECT {
        ECN_MASK_L4S_ECT => ("l4s_ect", "l4s-ect"),
        0 => ("", ""),
        _ => ("any_ect", "any-ect"),
    }
}

/// `dualpi2_print_opt`.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Dualpi2(o) = options else {
        return None;
    };
    let mut text: Vec<String> = Vec::new();
    let mut j = JsonObj::new();
    if let Some(v) = o.limit {
        text.push(format!("limit {v}p"));
        j.insert("limit", json!(v));
    }
    if let Some(v) = o.memory_limit {
        text.push(format!("memlimit {v}B"));
        j.insert("memory-limit", json!(v));
    }
    for (name, v) in [("target", o.target), ("tupdate", o.tupdate)] {
        if let Some(v) = v {
            text.push(format!("{name} {}", sprint_time(v.into())));
            j.insert(name, json!(v));
        }
    }
    for (name, v) in [("alpha", o.alpha), ("beta", o.beta)] {
        if let Some(v) = v {
            text.push(format!("{name} {:.6}", scaled(v)));
            j.insert(name, json_g(scaled(v)));
        }
    }
    match o.step_thresh {
        Some(StepThresh::Packets(v)) => {
            text.push(format!("step_thresh {v}p"));
            j.insert("step-thresh-pkts", json!(v));
        }
        Some(StepThresh::Micros(v)) => {
            text.push(format!("step_thresh {}", sprint_time(v.into())));
            j.insert("step-thresh-us", json!(v));
        }
        None => {}
    }
    if let Some(v) = o.min_qlen_step {
        text.push(format!("min_qlen_step {v}p"));
        j.insert("min-qlen-step", json!(v));
    }
    if let Some(v) = o.coupling {
        text.push(format!("coupling_factor {v}"));
        j.insert("coupling", json!(v));
    }
    if let Some(v) = o.drop_overload {
        text.push(if v { "drop_on_overload" } else { "overflow" }.into());
        j.insert("drop-overload", json!(if v { "drop" } else { "overflow" }));
    }
    if let Some(v) = o.drop_early {
        text.push(if v { "drop_enqueue" } else { "drop_dequeue" }.into());
        j.insert(
            "drop-early",
            json!(if v { "drop-enqueue" } else { "drop-dequeue" }),
        );
    }
    if let Some(v) = o.c_protection {
        text.push(format!("classic_protection {v}%"));
        j.insert("c-protection", json!(v));
    }
    if let Some(v) = o.ecn_mask {
        let (word, json_word) = ecn_type(v);
        text.push(word.into());
        j.insert("ecn-mask", json!(json_word));
    }
    if let Some(v) = o.split_gso {
        text.push(format!("{}split_gso", if v { "" } else { "no_" }));
        if v {
            j.insert("split-gso", serde_json::Value::Null);
        }
    }
    Some(Printed::same(text.join(" "), j))
}

/// DualPI2's tc syntax (its two classes take no options).
pub static SYNTAX: Syntax = Syntax {
    kind: "dualpi2",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(|dir, _| vec![format!("{} dualpi2", replace_root(dir))]),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[Bench::new("dualpi2", &["tc qdisc add dev D root dualpi2"])],
    samples: &[
        Sample::new("dualpi2", &["tc qdisc add dev D root dualpi2"]),
        Sample::new(
            "dualpi2 any_ect step 5p",
            &["tc qdisc add dev D root dualpi2 limit 500 any_ect step_thresh 5p classic_protection 30 overflow"],
        ),
    ],
};

/// The keys of a `dualpi2` table in the configuration (tc-dualpi2(8)).
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::opt("limit", Value::Count),
    Key::opt("memlimit", Value::Count),
    Key::opt("target", Value::Time),
    Key::opt("tupdate", Value::Time),
    Key::opt("alpha", Value::Decimal),
    Key::opt("beta", Value::Decimal),
    Key::opt("max_rtt", Value::Time),
    Key::opt("typical_rtt", Value::Time),
    Key::opt("coupling_factor", Value::Count),
    Key::opt("step_thresh", Value::Words),
    Key::opt("min_qlen_step", Value::Count),
    Key::opt("classic_protection", Value::Words),
    Key::opt(
        "ecn",
        Value::Word {
            words: &["l4s_ect", "any_ect"],
        },
    ),
    Key::opt(
        "drop_on_overload",
        Value::Flag {
            on: "drop_on_overload",
            off: Some("overflow"),
        },
    ),
    Key::opt(
        "drop_enqueue",
        Value::Flag {
            on: "drop_enqueue",
            off: Some("drop_dequeue"),
        },
    ),
    Key::opt(
        "split_gso",
        Value::Flag {
            on: "split_gso",
            off: Some("no_split_gso"),
        },
    ),
]);

/// The probability as tc prints it: `(double)prob / (double)MAX_PROB`.
fn probability(prob: u32) -> f64 {
    f64::from(prob) / f64::from(u32::MAX)
}

/// `get_credit_queue`.
fn credit_queue(credit: i32) -> &'static str {
    if credit > 0 {
        "C-queue"
    } else {
        "L-queue"
    }
}

fn dualpi2_text(out: &mut String, s: &Dualpi2Xstats) {
    let _ = write!(
        out,
        "prob {:.6} delay_c {}us delay_l {}us\n\
         pkts_in_c {} pkts_in_l {} maxq {}\n\
         ecn_mark {} step_mark {}\n\
         credit {} ({})\n\
         memory_used {} (max {}) of memory limit {}\n\n",
        probability(s.prob),
        s.delay_c,
        s.delay_l,
        s.packets_in_c,
        s.packets_in_l,
        s.maxq,
        s.ecn_mark,
        s.step_marks,
        s.credit,
        credit_queue(s.credit),
        s.memory_used,
        s.max_memory_used,
        s.memory_limit
    );
}

/// `dualpi2_print_xstats`: `tc_dualpi2_xstats` (tc_qdisc.c's own newline
/// after it leaves an empty line).
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| match x {
        Xstats::Dualpi2(s) => {
            dualpi2_text(out, s);
            Some(())
        }
        _ => None,
    },
    json: |x| {
        let Xstats::Dualpi2(s) = x else { return None };
        let mut j = JsonObj::new();
        j.insert("prob", json_g(probability(s.prob)));
        j.insert("delay-c", json!(s.delay_c));
        j.insert("delay-l", json!(s.delay_l));
        j.insert("pkts-in-c", json!(s.packets_in_c));
        j.insert("pkts-in-l", json!(s.packets_in_l));
        j.insert("maxq", json!(s.maxq));
        j.insert("ecn-mark", json!(s.ecn_mark));
        j.insert("step-mark", json!(s.step_marks));
        j.insert("credit", json!(s.credit));
        j.insert("memory-used", json!(s.memory_used));
        j.insert("max-memory-used", json!(s.max_memory_used));
        j.insert("memory-limit", json!(s.memory_limit));
        Some(j)
    },
};

#[cfg(test)]
#[path = "dualpi2_tests.rs"]
mod tests;
