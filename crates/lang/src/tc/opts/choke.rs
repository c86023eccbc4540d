//! The tc syntax of choke (iproute2 v6.18.0 tc/q_choke.c
//! `choke_parse_opt`, `choke_print_opt`, `choke_print_xstats`, with RED's
//! arithmetic of tc/tc_red.c shared with `red`): the words `limit
//! PACKETS bandwidth RATE [ecn] [min PACKETS] [max PACKETS] [burst
//! PACKETS] [avpkt BYTES] [probability P]`, with q_choke.c's defaults (max
//! = limit / 4, min = max / 3, burst = (2 min + max) / 3, avpkt 1000,
//! probability 0.02; no default bandwidth: it is required) and what it
//! computes before sending: Wlog from the burst and min × avpkt bytes,
//! Plog from the probability over min × avpkt .. max × avpkt, Scell_log
//! and the idle table from avpkt and the bandwidth, max_P = probability ×
//! 2^32; `ecn` sets TC_RED_ECN in `tc_red_qopt.flags` (tc has no word for
//! the kernel's `harddrop` here). The dump is printed back as `tc [-d]
//! [-j]` prints it, thresholds in packets.

use super::red::{
    bandwidth, failed, illegal, max_p, print_flags, scan_double, tc_red_eval_ewma,
    tc_red_eval_idle_damping, tc_red_eval_p, with_details,
};
use crate::dir::Dir;
use crate::qdisc::choke::{ChokeOptions, ChokeXstats, CHOKE_MAX_QUEUE};
use crate::qdisc::red::TC_RED_ECN;
use crate::qdisc::{QdiscOptions, Xstats};
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::XstatsPrinter;
use crate::tc::syntax::{example_rate, replace_root, Bench, JsonObj, Printed, Sample, Syntax};
use crate::tc::tokens::{c_number, incomplete, Tokens};
use crate::tc::TcError;
use crate::units::{parse_size, print_rate};
use serde_json::json;
use std::fmt::Write;

/// q_choke.c `explain`.
const USAGE: &str = "Usage: ... choke limit PACKETS bandwidth KBPS [ecn]\n\
                     \t\t [ min PACKETS ] [ max PACKETS ] [ burst PACKETS ]";

/// choke's syntax: iproute2's tc/q_choke.c for `ChokeOptions`.
pub static SYNTAX: Syntax = Syntax {
    kind: "choke",
    qdisc: |t| {
        let a = parse(t)?;
        options(&a, &mut |n| t.notice(n)).map(QdiscOptions::Choke)
    },
    class: None,
    print: |o| match o {
        QdiscOptions::Choke(o) => Some(print(o)),
        _ => None,
    },
    print_class: |_| None,
    example: Some(example),
    // As RED's: the plain text ends with a space, the `-d` text with
    // `Scell_log N`.
    trailing_space: false,
    xstats: Some(&XSTATS),
    table: Some(&TABLE),
    benches: &[Bench::new(
        "choke",
        &["tc qdisc add dev D root choke limit 30000 min 20 max 25000 burst 100 bandwidth 10gbit"],
    )],
    samples: &[
        Sample::new(
            "choke",
            &["tc qdisc add dev D root choke limit 100 bandwidth 10mbit"],
        ),
        Sample::new(
            "choke ecn",
            &["tc qdisc add dev D root choke limit 50 min 5 max 15 avpkt 1000 burst 8 probability 0.1 bandwidth 5mbit ecn"],
        ),
    ],
};

/// The keys of a `choke` table in the configuration (tc-choke(8)).
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::required("limit", Value::Count),
    Key::required("bandwidth", Value::Rate),
    Key::opt("min", Value::Count),
    Key::opt("max", Value::Count),
    Key::opt("burst", Value::Count),
    Key::opt("avpkt", Value::Size),
    Key::opt("probability", Value::Decimal),
    Key::opt(
        "ecn",
        Value::Flag {
            on: "ecn",
            off: None,
        },
    ),
]);

/// The qdisc menu's choke: RED's entry in packets of 1000 bytes on the
/// link's rate (1gbit when unlimited): the band from 5 ms to 15 ms of
/// queue (at least 3 and 9 frames), a limit of 8 × max, ECN marking.
fn example(dir: Dir, rate_bytes_ps: u64) -> Vec<String> {
    let rate = example_rate(rate_bytes_ps);
    let min = (rate / 200_000).clamp(3, u64::from(CHOKE_MAX_QUEUE) / 24);
    vec![format!(
        "{} choke limit {} min {min} max {} avpkt 1000 bandwidth {} ecn",
        replace_root(dir),
        24 * min,
        3 * min,
        print_rate(rate)
    )]
}

/// choke's parameters as `choke_parse_opt` holds them after reading the
/// words (0: not given, but avpkt and probability start at their
/// defaults). The configuration's structured form fills the same fields.
#[derive(Clone, Debug, PartialEq)]
pub struct ChokeArgs {
    /// `limit`: packets (required).
    pub limit: u32,
    /// `min`: the band's lower threshold, packets.
    pub min: u32,
    /// `max`: the band's upper threshold, packets.
    pub max: u32,
    /// `avpkt`: the average packet size, bytes (1000 unless given).
    pub avpkt: u32,
    /// `burst`: packets the average lets through in a burst.
    pub burst: u32,
    /// `probability`: max_P (0.02 unless given).
    pub probability: f64,
    /// `bandwidth`: bytes/s, for the idle decay (required).
    pub bandwidth: u32,
    /// `ecn`.
    pub ecn: bool,
}

impl Default for ChokeArgs {
    fn default() -> Self {
        ChokeArgs {
            limit: 0,
            min: 0,
            max: 0,
            avpkt: 1000,
            burst: 0,
            probability: 0.02,
            bandwidth: 0,
            ecn: false,
        }
    }
}

/// `get_unsigned(&x, word, 0)`.
fn unsigned(name: &str, v: &str) -> Result<u32, TcError> {
    c_number(v)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| illegal(name, v, "a number of packets up to 4294967295"))
}

/// `choke_parse_opt`'s reading of the words.
fn parse(t: &mut Tokens) -> Result<ChokeArgs, TcError> {
    let mut o = ChokeArgs::default();
    while let Some(tok) = t.next() {
        let mut value = || t.value(|| incomplete(tok));
        match tok {
            "limit" => o.limit = unsigned("limit", value()?)?,
            "bandwidth" => o.bandwidth = bandwidth(value()?)?,
            "ecn" => o.ecn = true,
            "min" => o.min = unsigned("min", value()?)?,
            "max" => o.max = unsigned("max", value()?)?,
            "burst" => o.burst = unsigned("burst", value()?)?,
            "avpkt" => {
                let v = value()?;
                o.avpkt = parse_size(v)
                    .ok()
                    .and_then(|b| u32::try_from(b).ok())
                    .ok_or_else(|| {
                        illegal("avpkt", v, "a size of at most 4294967295 bytes, like 1000")
                    })?;
            }
            "probability" => {
                let v = value()?;
                o.probability = scan_double(v)
                    .ok_or_else(|| illegal("probability", v, "a number like 0.02"))?;
            }
            "help" => return Err(TcError::new(USAGE)),
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{USAGE}"))),
        }
    }
    Ok(o)
}

/// The rest of `choke_parse_opt`: the required words, the defaults, the
/// checks and the client-side arithmetic, into what it sends; `notice`
/// gets the line tc prints on standard error for a Wlog of 10 or more.
pub fn options(a: &ChokeArgs, notice: &mut dyn FnMut(String)) -> Result<ChokeOptions, TcError> {
    if a.bandwidth == 0 || a.limit == 0 {
        return Err(TcError::new(format!(
            "Required parameter (bandwidth, limit) is missing\n(e.g. choke limit 1000 \
             bandwidth 10mbit{})",
            match (a.limit, a.bandwidth) {
                (0, 0) => "",
                (0, _) => "; bandwidth is given",
                _ => "; limit is given",
            }
        )));
    }
    let qth_max = if a.max == 0 { a.limit / 4 } else { a.max };
    let qth_min = if a.min == 0 { qth_max / 3 } else { a.min };
    let burst = if a.burst == 0 {
        qth_min.wrapping_mul(2).wrapping_add(qth_max) / 3
    } else {
        a.burst
    };
    if qth_max > a.limit {
        return Err(TcError::new("\"max\" is larger than \"limit\""));
    }
    if qth_min >= qth_max {
        return Err(TcError::new("\"min\" is not smaller than \"max\""));
    }
    // `opt.qth_min*avpkt`: unsigned int arithmetic.
    let (min_bytes, max_bytes) = (qth_min.wrapping_mul(a.avpkt), qth_max.wrapping_mul(a.avpkt));
    let wlog = tc_red_eval_ewma(min_bytes, burst, a.avpkt)
        .map_err(|e| failed("CHOKE", &e.to_string(), "EWMA constant"))?;
    if wlog >= 10 {
        // `%d` of the unsigned burst.
        notice(format!(
            "CHOKE: WARNING. Burst {} seems to be too large.",
            burst as i32
        ));
    }
    let plog = tc_red_eval_p(min_bytes, max_bytes, a.probability)
        .ok_or_else(|| failed("CHOKE", "", "probability"))?;
    let (scell_log, stab) = tc_red_eval_idle_damping(wlog, a.avpkt, a.bandwidth)
        .ok_or_else(|| failed("CHOKE", "", "idle damping table"))?;
    Ok(ChokeOptions {
        limit: a.limit,
        qth_min,
        qth_max,
        wlog,
        plog,
        scell_log,
        flags: if a.ecn { TC_RED_ECN as u8 } else { 0 },
        stab: Some(stab),
        max_p: Some(max_p(a.probability)),
    })
}

/// `choke_print_opt`: the plain and the `-d` text, and the `-j` object.
fn print(o: &ChokeOptions) -> Printed {
    let mut plain = format!("limit {}p min {}p max {}p ", o.limit, o.qth_min, o.qth_max);
    let mut json = JsonObj::new();
    json.insert("limit", json!(o.limit));
    json.insert("min", json!(o.qth_min));
    json.insert("max", json!(o.qth_max));
    print_flags(u32::from(o.flags), &mut plain, &mut json);
    with_details(plain, json, o.wlog, o.max_p, o.plog, o.scell_log)
}

/// `choke_print_xstats`: `tc_choke_xstats`.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| {
        let Xstats::Choke(s) = x else { return None };
        xstats_text(out, s);
        Some(())
    },
    json: |x| {
        let Xstats::Choke(s) = x else { return None };
        let mut j = JsonObj::new();
        j.insert("marked", json!(s.marked));
        j.insert("early", json!(s.early));
        j.insert("pdrop", json!(s.pdrop));
        j.insert("other", json!(s.other));
        j.insert("matched", json!(s.matched));
        Some(j)
    },
};

fn xstats_text(out: &mut String, s: &ChokeXstats) {
    let _ = writeln!(
        out,
        "  marked {} early {} pdrop {} other {} matched {}",
        s.marked, s.early, s.pdrop, s.other, s.matched
    );
}

#[cfg(test)]
#[path = "choke_tests.rs"]
mod tests;
