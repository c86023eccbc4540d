//! The tc syntax of RED (iproute2 tc/q_red.c `red_parse_opt`,
//! `red_print_opt`, `red_print_xstats`, with the arithmetic of tc/tc_red.c):
//! the words `limit BYTES [min BYTES] [max BYTES] avpkt BYTES [burst
//! PACKETS] [adaptive] [probability P] [bandwidth RATE] [ecn] [harddrop]
//! [nodrop]` with iproute2's defaults (max = limit / 4 or 3 × min, min =
//! max / 3, burst = (2 min + max) / (3 avpkt), bandwidth 10Mbit) and what
//! it computes before sending: Wlog from the burst (`tc_red_eval_ewma`),
//! Plog from the probability (`tc_red_eval_P`), Scell_log and the 256-byte
//! idle table from avpkt and the bandwidth (`tc_red_eval_idle_damping`),
//! max_P = probability × 2^32, the flags in TCA_RED_FLAGS. `qevent` lines
//! are read as iproute2 reads them and refused: bloatbox has no shared
//! filter blocks. The dump is printed back as `tc [-d] [-j]` prints it.

use crate::dir::Dir;
use crate::qdisc::red::{
    Bitfield32, RedOptions, RedXstats, TC_RED_ADAPTATIVE, TC_RED_ECN, TC_RED_HARDDROP,
    TC_RED_NODROP, TC_RED_SUPPORTED_FLAGS,
};
use crate::qdisc::{QdiscOptions, Xstats};
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::XstatsPrinter;
use crate::tc::syntax::{example_rate, replace_root, Bench, JsonObj, Printed, Sample, Syntax};
use crate::tc::tokens::{c_number, incomplete, Tokens};
use crate::tc::TcError;
use crate::units::{parse_rate, parse_size, print_g, print_rate, sprint_size, tc_calc_xmittime};
use serde_json::json;
use std::fmt::Write;

/// q_red.c `explain`.
const USAGE: &str =
    "Usage: ... red\tlimit BYTES [min BYTES] [max BYTES] avpkt BYTES [burst PACKETS]\n\
     \t\t[adaptive] [probability PROBABILITY] [bandwidth KBPS]\n\
     \t\t[ecn] [harddrop] [nodrop]\n\
     \t\t[qevent early_drop block IDX] [qevent mark block IDX]";

/// The bandwidth tc assumes when none is given (`get_rate(&rate,
/// "10Mbit")`), bytes/s.
pub const DEFAULT_BANDWIDTH: u32 = 1_250_000;

/// RED's syntax: iproute2's tc/q_red.c for `RedOptions`.
pub static SYNTAX: Syntax = Syntax {
    kind: "red",
    qdisc: |t| {
        let a = parse(t)?;
        options(&a, &mut |n| t.notice(n)).map(QdiscOptions::Red)
    },
    class: None,
    print: |o| match o {
        QdiscOptions::Red(o) => Some(print(o)),
        _ => None,
    },
    // RED's one class has no options.
    print_class: |_| Some(Printed::default()),
    example: Some(example),
    // The plain text ends with its own space (after the last size or
    // flag), the `-d` text with `Scell_log N` and none (`red_print_opt`).
    trailing_space: false,
    xstats: Some(&XSTATS),
    table: Some(&TABLE),
    benches: &[Bench::new(
        "red",
        &["tc qdisc add dev D root red limit 64mb min 16mb max 32mb avpkt 256kb burst 65 bandwidth 10gbit"],
    )],
    samples: &[
        Sample::new(
            "red",
            &["tc qdisc add dev D root red limit 30000 min 3000 max 9000 avpkt 1000 burst 4 probability 0.2 bandwidth 10mbit"],
        ),
        Sample::new(
            "red ecn harddrop",
            &["tc qdisc add dev D root red limit 20000 min 2000 max 6000 avpkt 1000 burst 3 probability 0.5 bandwidth 5mbit ecn harddrop"],
        ),
        Sample::new(
            "red ecn nodrop pfifo child",
            &[
                "tc qdisc add dev D root handle 1: red limit 20000 min 2000 max 6000 avpkt 1000 burst 3 ecn nodrop",
                "tc qdisc add dev D parent 1:1 handle 10: pfifo limit 12",
            ],
        ),
    ],
};

/// The keys of a `red` table in the configuration (tc-red(8)).
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::required("limit", Value::Size),
    Key::opt("min", Value::Size),
    Key::opt("max", Value::Size),
    Key::required("avpkt", Value::Size),
    Key::opt("burst", Value::Count),
    Key::opt("probability", Value::Decimal),
    Key::opt("bandwidth", Value::Rate),
    Key::opt(
        "ecn",
        Value::Flag {
            on: "ecn",
            off: None,
        },
    ),
    Key::opt(
        "harddrop",
        Value::Flag {
            on: "harddrop",
            off: None,
        },
    ),
    Key::opt(
        "adaptive",
        Value::Flag {
            on: "adaptive",
            off: None,
        },
    ),
    Key::opt(
        "nodrop",
        Value::Flag {
            on: "nodrop",
            off: None,
        },
    ),
]);

/// The qdisc menu's RED: on the link's rate (1gbit when unlimited), the
/// band from 5 ms to 15 ms of queue (at least 3 and 9 frames of 1000
/// bytes), a hard limit of 8 × max, ECN marking.
fn example(dir: Dir, rate_bytes_ps: u64) -> Vec<String> {
    let rate = example_rate(rate_bytes_ps);
    let min = (rate / 200).clamp(3000, u64::from(u32::MAX) / 24);
    vec![format!(
        "{} red limit {} min {min} max {} avpkt 1000 bandwidth {} ecn",
        replace_root(dir),
        8 * 3 * min,
        3 * min,
        print_rate(rate)
    )]
}

/// RED's parameters as `red_parse_opt` holds them after reading the words
/// (0: not given; the flags as TCA_RED_FLAGS's value). The configuration's
/// structured form fills the same fields.
#[derive(Clone, Debug, PartialEq)]
pub struct RedArgs {
    /// `limit`: the child bfifo's bytes (required).
    pub limit: u32,
    /// `min`: the band's lower threshold, bytes.
    pub min: u32,
    /// `max`: the band's upper threshold, bytes.
    pub max: u32,
    /// `avpkt`: the average packet size, bytes (required).
    pub avpkt: u32,
    /// `burst`: packets the average lets through in a burst.
    pub burst: u32,
    /// `probability`: max_P (0.02 unless given).
    pub probability: f64,
    /// `bandwidth`: bytes/s, for the idle decay (10Mbit unless given).
    pub bandwidth: u32,
    /// TC_RED_* flags: `ecn`, `harddrop`, `adaptive`, `nodrop`.
    pub flags: u32,
}

impl Default for RedArgs {
    fn default() -> Self {
        RedArgs {
            limit: 0,
            min: 0,
            max: 0,
            avpkt: 0,
            burst: 0,
            probability: 0.02,
            bandwidth: 0,
            flags: 0,
        }
    }
}

/// tc's refusal of a value it cannot read, then what bloatbox expected.
pub(crate) fn illegal(name: &str, value: &str, allowed: &str) -> TcError {
    TcError::new(format!(
        "Illegal \"{name}\"\n(\"{value}\": expected {allowed})"
    ))
}

/// `get_size` into 32 bits.
fn size(name: &str, v: &str) -> Result<u32, TcError> {
    parse_size(v)
        .ok()
        .and_then(|b| u32::try_from(b).ok())
        .ok_or_else(|| {
            illegal(
                name,
                v,
                "a size of at most 4294967295 bytes, like 30000 or 30kb",
            )
        })
}

/// C's `sscanf(word, "%lg")`: the longest prefix that reads as a decimal
/// or hexadecimal (`0x1p-4`) float, or `inf`, `infinity`, `nan`, after
/// leading white space; `None` when there is none.
pub(crate) fn scan_double(word: &str) -> Option<f64> {
    let s = word.trim_start();
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if let Some(v) = scan_hex_double(&b[i..]) {
        return Some(if b[0] == b'-' { -v } else { v });
    }
    let lower = s[i..].to_ascii_lowercase();
    for special in ["infinity", "inf", "nan"] {
        if lower.starts_with(special) {
            return s[..i + special.len()]
                .to_ascii_lowercase()
                .replace("infinity", "inf")
                .parse()
                .ok();
        }
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut n = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        n += digits(&mut i);
    }
    if n == 0 {
        return None;
    }
    let mantissa = i;
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1 + usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        if digits(&mut j) > 0 {
            i = j;
        }
    }
    let end = if i > mantissa { i } else { mantissa };
    s[..end].parse().ok()
}

/// The hexadecimal form of C's `strtod` (C99 7.20.1.3) after the sign:
/// `0x`, hex digits with an optional point (at least one digit), an
/// optional binary exponent `p[+-]N`; `None` when `b` does not start so
/// (a bare `0x` is then read as the decimal 0 by the caller).
fn scan_hex_double(b: &[u8]) -> Option<f64> {
    let b = b.strip_prefix(b"0x").or_else(|| b.strip_prefix(b"0X"))?;
    let mut mantissa = 0f64;
    let mut scale = 0i32;
    let mut digits = 0;
    let mut i = 0;
    let mut point = false;
    while let Some(&c) = b.get(i) {
        if c == b'.' && !point {
            point = true;
        } else if let Some(d) = char::from(c).to_digit(16) {
            mantissa = mantissa * 16.0 + f64::from(d);
            scale -= 4 * i32::from(point);
            digits += 1;
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'p' | b'P')) {
        let mut j = i + 1;
        let negative = b.get(j) == Some(&b'-');
        j += usize::from(matches!(b.get(j), Some(b'+' | b'-')));
        let start = j;
        let mut exp = 0i32;
        while let Some(d) = b.get(j).filter(|c| c.is_ascii_digit()) {
            exp = exp.saturating_mul(10).saturating_add(i32::from(d - b'0'));
            j += 1;
        }
        if j > start {
            scale = scale.saturating_add(if negative { -exp } else { exp });
        }
    }
    Some(mantissa * 2f64.powi(scale))
}

/// `bandwidth RATE` as q_red.c and q_choke.c read it: `get_rate` into 32
/// bits, or `get_percent_rate` of the device's speed, which bloatbox's
/// devices do not have.
pub(crate) fn bandwidth(v: &str) -> Result<u32, TcError> {
    if v.contains('%') {
        return Err(illegal(
            "bandwidth",
            v,
            "a rate like 10mbit: bloatbox's devices have no speed to take a percentage of",
        ));
    }
    parse_rate(v)
        .ok()
        .and_then(|r| u32::try_from(r).ok())
        .ok_or_else(|| illegal("bandwidth", v, "a rate of at most 34.3gbit"))
}

/// iproute2's `qevent` words: `qevent early_drop|mark block IDX`, read as
/// `qevent_parse` reads them, then refused.
fn qevent(t: &mut Tokens) -> Result<(), TcError> {
    let name = t.value(|| incomplete("qevent"))?;
    if name != "early_drop" && name != "mark" {
        return Err(TcError::new(format!(
            "Unknown qevent `{name}'\n(RED's qevents are early_drop and mark)"
        )));
    }
    let word = t.value(|| incomplete(name))?;
    if word != "block" {
        return Err(TcError::new(format!("What is \"{word}\"?\n{USAGE}")));
    }
    let idx = t.value(|| incomplete("block"))?;
    if !c_number(idx).is_some_and(|n| (1..=u64::from(u32::MAX)).contains(&n)) {
        return Err(TcError::new("Illegal qevent block index"));
    }
    Err(TcError::new(format!(
        "Error: qevent blocks are not supported by bloatbox (\"qevent {name} block {idx}\": \
         bloatbox has no shared filter blocks to run at a RED event)"
    )))
}

/// `red_parse_opt`'s reading of the words.
fn parse(t: &mut Tokens) -> Result<RedArgs, TcError> {
    let mut o = RedArgs::default();
    while let Some(tok) = t.next() {
        let mut value = || t.value(|| incomplete(tok));
        match tok {
            "limit" => o.limit = size("limit", value()?)?,
            "min" => o.min = size("min", value()?)?,
            "max" => o.max = size("max", value()?)?,
            "avpkt" => o.avpkt = size("avpkt", value()?)?,
            "burst" => {
                let v = value()?;
                o.burst = c_number(v)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| illegal("burst", v, "a number of packets"))?;
            }
            "probability" => {
                let v = value()?;
                o.probability = scan_double(v)
                    .ok_or_else(|| illegal("probability", v, "a number like 0.02"))?;
            }
            "bandwidth" => o.bandwidth = bandwidth(value()?)?,
            "ecn" => o.flags |= TC_RED_ECN,
            "harddrop" => o.flags |= TC_RED_HARDDROP,
            "nodrop" => o.flags |= TC_RED_NODROP,
            "adaptative" | "adaptive" => o.flags |= TC_RED_ADAPTATIVE,
            q if crate::tc::opts::tbf::matches(q, "qevent") => qevent(t)?,
            "help" => return Err(TcError::new(USAGE)),
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{USAGE}"))),
        }
    }
    Ok(o)
}

/// Why `tc_red_eval_ewma` found no Wlog; its `Display` is the line tc
/// prints before "RED: failed to calculate EWMA constant." (none when no
/// Wlog below 32 fits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EwmaRefusal {
    /// The burst is below what a queue at min takes.
    BurstTooSmall { burst: u32, try_burst: u32 },
    /// No Wlog in 1..32 lets the burst through.
    NoWlog,
}

impl std::fmt::Display for EwmaRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            EwmaRefusal::BurstTooSmall { burst, try_burst } => writeln!(
                f,
                "tc_red_eval_ewma() burst {burst} is too small ? Try burst {try_burst}"
            ),
            EwmaRefusal::NoWlog => Ok(()),
        }
    }
}

/// `tc_red_eval_ewma`: the smallest Wlog in 1..32 whose weight W = 2^-Wlog
/// lets a burst of `burst` packets of `avpkt` bytes through from an empty
/// queue: burst + 1 - min/avpkt ≤ (1 - (1 - W)^burst) / W.
pub(crate) fn tc_red_eval_ewma(qmin: u32, burst: u32, avpkt: u32) -> Result<u8, EwmaRefusal> {
    let a = f64::from(burst) + 1.0 - f64::from(qmin) / f64::from(avpkt);
    if a < 1.0 {
        return Err(EwmaRefusal::BurstTooSmall {
            burst,
            try_burst: qmin.checked_div(avpkt).unwrap_or(0).wrapping_add(1),
        });
    }
    let mut w = 0.5f64;
    for wlog in 1..32u8 {
        if a <= (1.0 - (1.0 - w).powf(f64::from(burst))) / w {
            return Ok(wlog);
        }
        w /= 2.0;
    }
    Err(EwmaRefusal::NoWlog)
}

/// `tc_red_eval_P`: Plog such that prob / (max - min) × 2^Plog is just
/// above 1 (0 when min = max; `None` when max < min or the span is
/// beyond 2^31, or no Plog below 32 fits).
pub(crate) fn tc_red_eval_p(qmin: u32, qmax: u32, prob: f64) -> Option<u8> {
    // `int i = qmax - qmin`.
    let span = qmax.wrapping_sub(qmin) as i32;
    if span == 0 {
        return Some(0);
    }
    if span < 0 {
        return None;
    }
    let mut prob = prob / f64::from(span);
    for plog in 0..32u8 {
        if prob > 1.0 {
            return Some(plog);
        }
        prob *= 2.0;
    }
    None
}

/// A double stored into a `__u8` (or through an `int`) as x86-64 does it:
/// truncated towards zero into 32 bits (`cvttsd2si`, which gives
/// 0x80000000 for NaN, infinities and values out of range), then its low
/// byte.
fn c_to_u8(v: f64) -> u8 {
    if v.is_finite() && v > -2_147_483_649.0 && v < 2_147_483_648.0 {
        v as i32 as u8
    } else {
        0
    }
}

/// `tc_red_eval_idle_damping`: the idle table and Scell_log for Wlog, the
/// average packet and the bandwidth. lW = -ln(1 - 2^-Wlog) / xmit, xmit
/// the ticks one avpkt takes (`tc_calc_xmittime`); Scell_log is the
/// smallest with 31 / lW / 2^Scell_log < 512; `Stab[i] = (i << Scell_log) ×
/// lW`, at most 31 (`Stab[0] = 0`, `Stab[255] = 31`). `None` when no Scell_log
/// below 32 fits.
pub(crate) fn tc_red_eval_idle_damping(wlog: u8, avpkt: u32, bps: u32) -> Option<(u8, Vec<u8>)> {
    let xmit_time = tc_calc_xmittime(u64::from(bps), u64::from(avpkt)) as u32 as f64;
    let one = f64::from(1i32.wrapping_shl(u32::from(wlog)));
    let lw = -(1.0 - 1.0 / one).ln() / xmit_time;
    let maxtime = 31.0 / lw;
    let clog = (0..32u32).find(|&c| maxtime / f64::from(1i32.wrapping_shl(c)) < 512.0)?;
    let mut stab = vec![0u8; 256];
    for (i, s) in stab.iter_mut().enumerate().take(255).skip(1) {
        let v = c_to_u8(f64::from((i as i32).wrapping_shl(clog)) * lw);
        *s = v.min(31);
    }
    stab[255] = 31;
    Some((clog as u8, stab))
}

/// `probability × pow(2, 32)` stored into a `__u32` as x86-64 does it:
/// truncated into 64 bits (0x8000000000000000 when out of range or NaN),
/// then its low 32 bits; so a probability of 1 sends 0 (max_P then comes
/// from Plog).
pub(crate) fn max_p(probability: f64) -> u32 {
    let v = probability * 4_294_967_296.0;
    let two_63 = 2f64.powi(63);
    if v.is_finite() && v >= -two_63 && v < two_63 {
        v as i64 as u32
    } else {
        0
    }
}

/// tc's refusal after a failed computation (stderr lines of tc_red.c
/// first, if any), as q_red.c (`who` "RED") and q_choke.c ("CHOKE")
/// word it.
pub(crate) fn failed(who: &str, before: &str, what: &str) -> TcError {
    TcError::new(format!("{before}{who}: failed to calculate {what}."))
}

/// The rest of `red_parse_opt`: the required words, the defaults and the
/// client-side arithmetic, into what it sends (`tc_red_qopt` with flags 0,
/// the Stab table, max_P, the flags in TCA_RED_FLAGS), handing `notice`
/// the two lines tc prints on standard error for a line it accepts: "RED:
/// set bandwidth to 10Mbit" when no bandwidth is given, and "RED: WARNING.
/// Burst N seems to be too large." for a Wlog of 10 or more.
pub fn options(a: &RedArgs, notice: &mut dyn FnMut(String)) -> Result<RedOptions, TcError> {
    if a.limit == 0 || a.avpkt == 0 {
        return Err(TcError::new(format!(
            "RED: Required parameter (limit, avpkt) is missing\n(e.g. red limit 400000 min \
             30000 max 90000 avpkt 1000{})",
            if a.limit == 0 { "" } else { "; limit is given" }
        )));
    }
    let mut qth_max = a.max;
    let mut qth_min = a.min;
    if qth_max == 0 {
        qth_max = if qth_min != 0 {
            qth_min.wrapping_mul(3)
        } else {
            a.limit / 4
        };
    }
    if qth_min == 0 {
        qth_min = qth_max / 3;
    }
    let burst = if a.burst != 0 {
        a.burst
    } else {
        qth_min
            .wrapping_mul(2)
            .wrapping_add(qth_max)
            .checked_div(a.avpkt.wrapping_mul(3))
            .unwrap_or(0)
    };
    let bandwidth = if a.bandwidth != 0 {
        a.bandwidth
    } else {
        notice("RED: set bandwidth to 10Mbit".to_string());
        DEFAULT_BANDWIDTH
    };
    let wlog = tc_red_eval_ewma(qth_min, burst, a.avpkt)
        .map_err(|e| failed("RED", &e.to_string(), "EWMA constant"))?;
    if wlog >= 10 {
        notice(format!(
            "RED: WARNING. Burst {burst} seems to be too large."
        ));
    }
    let plog = tc_red_eval_p(qth_min, qth_max, a.probability)
        .ok_or_else(|| failed("RED", "", "probability"))?;
    let (scell_log, stab) = tc_red_eval_idle_damping(wlog, a.avpkt, bandwidth)
        .ok_or_else(|| failed("RED", "", "idle damping table"))?;
    Ok(RedOptions {
        limit: a.limit,
        qth_min,
        qth_max,
        wlog,
        plog,
        scell_log,
        flags: 0,
        stab: Some(stab),
        max_p: Some(max_p(a.probability)),
        flags_attr: Some(Bitfield32 {
            value: a.flags,
            selector: TC_RED_SUPPORTED_FLAGS,
        }),
    })
}

/// `red_print_opt`: the plain and the `-d` text, and the `-j` object (the
/// plain text's fields). The flags printed are TCA_RED_FLAGS's value when
/// the dump has it (it replaces `tc_red_qopt.flags`).
fn print(o: &RedOptions) -> Printed {
    let flags = o.flags_attr.map_or(u32::from(o.flags), |bf| bf.value);
    let mut plain = format!(
        "limit {} min {} max {} ",
        sprint_size(o.limit.into()),
        sprint_size(o.qth_min.into()),
        sprint_size(o.qth_max.into())
    );
    let mut json = JsonObj::new();
    json.insert("limit", json!(o.limit));
    json.insert("min", json!(o.qth_min));
    json.insert("max", json!(o.qth_max));
    print_flags(flags, &mut plain, &mut json);
    with_details(plain, json, o.wlog, o.max_p, o.plog, o.scell_log)
}

/// The `show_details` tail of `red_print_opt` and `choke_print_opt` after
/// the plain text and object: `ewma W`, `probability P` (max_P given and
/// not 0) or `Plog L`, `Scell_log S`.
pub(crate) fn with_details(
    plain: String,
    json: JsonObj,
    wlog: u8,
    max_p: Option<u32>,
    plog: u8,
    scell_log: u8,
) -> Printed {
    let mut detail = format!("{plain}ewma {wlog} ");
    let mut detail_json = json.clone();
    detail_json.insert("ewma", json!(wlog));
    match max_p.filter(|p| *p != 0) {
        Some(p) => {
            let p = f64::from(p) / 4_294_967_296.0;
            let _ = write!(detail, "probability {} ", print_g(p));
            // jsonw_float writes "%g": the number that text reads as.
            let g: f64 = print_g(p).parse().unwrap_or(p);
            detail_json.insert("probability", json!(g));
        }
        None => {
            let _ = write!(detail, "Plog {plog} ");
            detail_json.insert("Plog", json!(plog));
        }
    }
    let _ = write!(detail, "Scell_log {scell_log}");
    detail_json.insert("Scell_log", json!(scell_log));
    Printed {
        plain,
        detail,
        json,
        detail_json: Some(detail_json),
        ..Printed::default()
    }
}

/// `tc_red_print_flags` (tc/tc_red.c), shared with sfq's RED: a word for
/// each flag set, every flag in -j.
pub(crate) fn print_flags(flags: u32, plain: &mut String, json: &mut JsonObj) {
    for (bit, name) in [
        (TC_RED_ECN, "ecn"),
        (TC_RED_HARDDROP, "harddrop"),
        (TC_RED_ADAPTATIVE, "adaptive"),
        (TC_RED_NODROP, "nodrop"),
    ] {
        let set = flags & bit != 0;
        if set {
            let _ = write!(plain, "{name} ");
        }
        json.insert(name, json!(set));
    }
}

/// `red_print_xstats`: `tc_red_xstats`.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| {
        let Xstats::Red(s) = x else { return None };
        xstats_text(out, s);
        Some(())
    },
    json: |x| {
        let Xstats::Red(s) = x else { return None };
        let mut j = JsonObj::new();
        j.insert("marked", json!(s.marked));
        j.insert("early", json!(s.early));
        j.insert("pdrop", json!(s.pdrop));
        j.insert("other", json!(s.other));
        Some(j)
    },
};

fn xstats_text(out: &mut String, s: &RedXstats) {
    let _ = writeln!(
        out,
        "  marked {} early {} pdrop {} other {} ",
        s.marked, s.early, s.pdrop, s.other
    );
}

#[cfg(test)]
#[path = "red_tests.rs"]
mod tests;
