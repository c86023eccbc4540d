//! The tc syntax of TBF (iproute2 tc/q_tbf.c `tbf_parse_opt`,
//! `tbf_print_opt`): the words `rate R burst B (limit L | latency T)
//! [peakrate P mtu M] [mpu N] [overhead N] [linklayer L]` with iproute2's
//! checks and the values it computes before sending (the limit from a
//! latency, the buckets' ticks), and the dump printed back (burst, minburst
//! and latency recomputed from the dumped ticks). Also the tc helpers HTB
//! shares (`matches`, sizes with `/cell`, linklayer names).

use crate::dir::Dir;
use crate::qdisc::options::RateSpec;
use crate::qdisc::tbf::TbfOptions;
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{example_rate, replace_root, Bench, Printed, Sample, Syntax};
use crate::tc::tokens::{incomplete, Tokens};
use crate::tc::TcError;
use crate::units::{
    parse_rate, parse_size, parse_time, print_rate, sprint_size, sprint_time, tc_calc_xmitsize,
    tc_calc_xmittime, tc_core_tick2time, LinkLayer,
};
use serde_json::json;

/// tbf's syntax: iproute2's tc/q_tbf.c (`tbf_parse_opt`, `tbf_print_opt`) for
/// `TbfOptions`.
pub static SYNTAX: Syntax = Syntax {
    kind: "tbf",
    qdisc: |t| Ok(QdiscOptions::Tbf(options(&parse(t)?)?)),
    class: None,
    print: |o| match o {
        QdiscOptions::Tbf(o) => Some(print(o)),
        _ => None,
    },
    // TBF's one class has no options.
    print_class: |_| Some(Printed::default()),
    example: Some(example),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: None,
    benches: &[Bench::new(
        "tbf",
        &["tc qdisc add dev D root tbf rate 10gbit burst 1mb limit 200mb"],
    )],
    samples: &[
        Sample {
            shaping: Some((1_000_000, 3000)),
            ..Sample::new(
                "tbf",
                &["tc qdisc add dev D root tbf rate 8mbit burst 3000 limit 30000"],
            )
        },
        Sample {
            shaping: Some((500_000, 6000)),
            ..Sample::new(
                "tbf_peakrate",
                &["tc qdisc add dev D root tbf rate 4mbit burst 6000 latency 20ms peakrate 16mbit mtu 1600"],
            )
        },
        Sample {
            shaping: Some((625_000, 3072)),
            ..Sample::new(
                "tbf 5mbit",
                &["tc qdisc add dev D root tbf rate 5mbit burst 3kb limit 20kb"],
            )
        },
    ],
};

/// The keys of a `tbf` table in the configuration.
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::required("rate", Value::Rate),
    Key::required("burst", Value::Size),
    Key::opt("latency", Value::Time),
    Key::opt("limit", Value::Size),
    Key::opt("peakrate", Value::Rate),
    Key::opt("mtu", Value::Size),
]);

/// The qdisc menu's TBF: the link rate (1gbit when unlimited), a burst of
/// 4 ms worth of bytes but at least two full frames, 50 ms of queue.
fn example(dir: Dir, rate_bytes_ps: u64) -> Vec<String> {
    let rate = example_rate(rate_bytes_ps);
    let burst = (rate / 250).max(3028);
    vec![format!(
        "{} tbf rate {} burst {burst}b latency 50ms",
        replace_root(dir),
        print_rate(rate)
    )]
}

/// iproute2's `matches(arg, keyword)`: `arg` is a non-empty prefix of
/// `keyword` (so `lat` selects `latency`).
pub(crate) fn matches(arg: &str, keyword: &str) -> bool {
    !arg.is_empty() && keyword.starts_with(arg)
}

/// A size with an optional legacy rate-table cell (`get_size_and_cell`):
/// `10kb/8` is 10240 bytes (cell 8). The cell must be a power of two; it
/// only sizes tc's legacy rate table, which the kernel ignores and never
/// dumps (see `DUMPED_CELL`), so only the bytes are kept.
pub(crate) fn parse_size_and_cell(s: &str) -> Option<u64> {
    let (size, cell) = match s.split_once('/') {
        Some((size, cell)) => (size, Some(cell)),
        None => (s, None),
    };
    let bytes = parse_size(size).ok()?;
    if let Some(c) = cell {
        let c: u64 = c.parse().ok()?;
        if !c.is_power_of_two() || c >= 1 << 32 {
            return None;
        }
    }
    Some(bytes)
}

/// The cell `tc -d` prints after a burst or mtu (`burst 10Kb/1 mpu 0b`):
/// the kernel fills the dumped `tc_ratespec` with `psched_ratecfg_getrate`,
/// which zeroes it first and sets only rate, overhead, mpu and linklayer, so
/// `cell_log` is 0 and tc prints `1 << 0`, whatever `/CELL` was given.
/// Checked on this machine (kernel 6.18, iproute2 6.1): `tbf rate 1mbit burst
/// 10kb/64 latency 50ms` shows `burst 10Kb/1 mpu 0b`. (Older write-ups show
/// `/8`, the cell tc computed in `tc_calc_rtable` but the kernel drops.)
pub(crate) const DUMPED_CELL: u32 = 1;

/// `get_linklayer`: `ethernet`, `atm` or its alias `adsl`.
pub(crate) fn parse_linklayer(s: &str) -> Option<LinkLayer> {
    match s {
        "ethernet" => Some(LinkLayer::Ethernet),
        "atm" | "adsl" => Some(LinkLayer::Atm),
        _ => None,
    }
}

pub(crate) fn linklayer_name(l: LinkLayer) -> &'static str {
    match l {
        LinkLayer::Ethernet => "ethernet",
        LinkLayer::Atm => "atm",
    }
}

pub(crate) const LINKLAYER_ALLOWED: &str = "ethernet, atm or adsl";
pub(crate) const U16_ALLOWED: &str = "an integer 0..65535";

/// q_tbf.c `explain1`.
const TBF_USAGE: &str =
    "Usage: ... tbf limit BYTES burst BYTES[/BYTES] rate KBPS [ mtu BYTES[/BYTES] ]\n\
     \t[ peakrate KBPS ] [ latency TIME ] [ overhead BYTES ] [ linklayer TYPE ]";

fn tbf_err(msg: String) -> TcError {
    TcError::new(format!("{msg}\n{TBF_USAGE}"))
}

/// tc's message for a value it cannot read (no usage follows), then what
/// bloatbox expected on a line of its own.
fn illegal(param: &str, value: &str, allowed: &str) -> TcError {
    TcError::new(format!(
        "tbf: illegal value for \"{param}\": \"{value}\"\n(expected {allowed})"
    ))
}

fn duplicate(what: &str) -> TcError {
    TcError::new(format!("tbf: duplicate \"{what}\" specification"))
}

/// tc's refusal of a `limit` and a `latency` together.
pub fn limit_or_latency() -> TcError {
    TcError::new("tbf: specifying both \"latency\" and \"limit\" is not allowed")
}

/// TBF's parameters as `tbf_parse_opt` holds them after reading the words
/// (0: not given): rates in bytes/s, sizes in bytes, the latency in µs.
/// The configuration's structured form fills the same fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TbfArgs {
    /// `rate`, bytes/s (required).
    pub rate: u64,
    /// `burst`/`buffer`/`maxburst`: the bucket, bytes (required).
    pub burst: u64,
    /// `limit`: bytes that may queue (this or `latency` is required).
    pub limit: u64,
    /// `latency`: how long a packet may wait, µs (this or `limit` is required).
    pub latency_us: u64,
    /// `peakrate`, bytes/s (optional; needs `mtu`).
    pub peakrate: u64,
    /// `mtu`/`minburst`: the peak bucket, bytes.
    pub mtu: u64,
    /// `mpu`: minimum accounted packet size, bytes.
    pub mpu: u64,
    /// `overhead`: bytes added to each packet's length.
    pub overhead: u64,
    /// `linklayer ethernet|atm|adsl`.
    pub linklayer: LinkLayer,
}

/// `tbf_parse_opt`'s reading of the words, with its checks of each word
/// (values, duplicates, `limit` against `latency`).
fn parse(t: &mut Tokens) -> Result<TbfArgs, TcError> {
    let mut o = TbfArgs::default();
    while let Some(tok) = t.next() {
        let mut value = || t.value(|| incomplete(tok));
        if matches(tok, "limit") {
            let v = value()?;
            if o.limit != 0 {
                return Err(duplicate("limit"));
            }
            if o.latency_us != 0 {
                return Err(limit_or_latency());
            }
            o.limit = parse_size(v).map_err(|e| illegal("limit", v, e.allowed))?;
        } else if matches(tok, "latency") {
            let v = value()?;
            if o.latency_us != 0 {
                return Err(duplicate("latency"));
            }
            if o.limit != 0 {
                return Err(limit_or_latency());
            }
            o.latency_us = parse_time(v).map_err(|e| illegal("latency", v, e.allowed))?;
        } else if matches(tok, "burst") || tok == "buffer" || tok == "maxburst" {
            let v = value()?;
            if o.burst != 0 {
                return Err(duplicate("buffer/burst/maxburst"));
            }
            o.burst = parse_size_and_cell(v).ok_or_else(|| {
                illegal(
                    tok,
                    v,
                    "a size like 10kb, optionally /CELL with CELL a power of two",
                )
            })?;
        } else if tok == "mtu" || tok == "minburst" {
            let v = value()?;
            if o.mtu != 0 {
                return Err(duplicate("mtu/minburst"));
            }
            o.mtu = parse_size_and_cell(v).ok_or_else(|| {
                illegal(
                    tok,
                    v,
                    "a size like 1514, optionally /CELL with CELL a power of two",
                )
            })?;
        } else if tok == "mpu" {
            let v = value()?;
            if o.mpu != 0 {
                return Err(duplicate("mpu"));
            }
            o.mpu = parse_size(v)
                .ok()
                .filter(|m| *m <= u16::MAX as u64)
                .ok_or_else(|| illegal("mpu", v, "a size of 0..65535 bytes"))?;
        } else if tok == "rate" {
            let v = value()?;
            if o.rate != 0 {
                return Err(duplicate("rate"));
            }
            o.rate = parse_rate(v).map_err(|e| illegal("rate", v, e.allowed))?;
        } else if matches(tok, "peakrate") {
            let v = value()?;
            if o.peakrate != 0 {
                return Err(duplicate("peakrate"));
            }
            o.peakrate = parse_rate(v).map_err(|e| illegal("peakrate", v, e.allowed))?;
        } else if matches(tok, "overhead") {
            let v = value()?;
            if o.overhead != 0 {
                return Err(duplicate("overhead"));
            }
            o.overhead = v
                .parse::<u16>()
                .map_err(|_| illegal("overhead", v, U16_ALLOWED))? as u64;
        } else if matches(tok, "linklayer") {
            let v = value()?;
            o.linklayer =
                parse_linklayer(v).ok_or_else(|| illegal("linklayer", v, LINKLAYER_ALLOWED))?;
        } else {
            return Err(tbf_err(format!("tbf: unknown parameter \"{tok}\"")));
        }
    }
    Ok(o)
}

/// The rest of `tbf_parse_opt`: the checks of the whole (mandatory
/// parameters, `limit` or `latency`) and what it sends: the limit (from
/// the latency if one is given), the rate specs, the buckets in ticks
/// (`tc_calc_xmittime`) and in bytes (TCA_TBF_BURST, TCA_TBF_PBURST).
pub fn options(o: &TbfArgs) -> Result<TbfOptions, TcError> {
    // tc's message for each, its usage, then an example of each on a
    // line of bloatbox's own.
    let mut missing = Vec::new();
    if o.rate == 0 {
        missing.push(("tbf: the \"rate\" parameter is mandatory.", "rate 1mbit"));
    }
    if o.burst == 0 {
        missing.push(("tbf: the \"burst\" parameter is mandatory.", "burst 10kb"));
    }
    if o.peakrate != 0 && o.mtu == 0 {
        missing.push((
            "tbf: when \"peakrate\" is specified, \"mtu\" must also be specified.",
            "mtu 1514",
        ));
    }
    if o.limit == 0 && o.latency_us == 0 {
        missing.push((
            "tbf: either \"limit\" or \"latency\" is required.",
            "latency 50ms or limit 30kb",
        ));
    }
    if !missing.is_empty() {
        let said: Vec<&str> = missing.iter().map(|m| m.0).collect();
        let examples: Vec<&str> = missing.iter().map(|m| m.1).collect();
        return Err(TcError::new(format!(
            "{}\n{TBF_USAGE}\n(e.g. {})",
            said.join("\n"),
            examples.join(", ")
        )));
    }
    let mut limit = o.limit;
    if o.latency_us != 0 {
        // tc: rate * latency + burst, or the peakrate bound if smaller;
        // the double is truncated into the u32 netlink field.
        let mut lim = o.rate as f64 * o.latency_us as f64 / 1e6 + o.burst as f64;
        if o.peakrate != 0 {
            let lim2 = o.peakrate as f64 * o.latency_us as f64 / 1e6 + o.mtu as f64;
            lim = lim.min(lim2);
        }
        limit = lim.min(u32::MAX as f64) as u64;
    }
    let limit = u32::try_from(limit)
        .map_err(|_| illegal("limit", &limit.to_string(), "at most 4294967295 bytes"))?;
    let spec = |rate| RateSpec {
        rate,
        overhead: o.overhead as u16,
        mpu: o.mpu as u16,
        linklayer: o.linklayer,
    };
    let burst = o.burst.min(u32::MAX as u64);
    let peak = o.peakrate != 0;
    Ok(TbfOptions {
        rate: spec(o.rate),
        peakrate: peak.then(|| spec(o.peakrate)),
        limit,
        buffer: tc_calc_xmittime(o.rate, o.burst),
        mtu: if peak {
            tc_calc_xmittime(o.peakrate, o.mtu)
        } else {
            0
        },
        burst: Some(burst as u32),
        pburst: peak.then_some(o.mtu.min(u32::MAX as u64) as u32),
    })
}

/// `tbf_print_opt`: the plain and the `-d` text, and the `-j` object of
/// each.
fn print(o: &TbfOptions) -> Printed {
    let (plain, json) = print_text(o, false);
    let (detail, detail_json) = print_text(o, true);
    Printed {
        plain,
        detail,
        json,
        detail_json: Some(detail_json),
        ..Printed::default()
    }
}

fn print_text(o: &TbfOptions, detail: bool) -> (String, crate::tc::syntax::JsonObj) {
    let rate = o.rate.rate;
    let mpu = o.rate.mpu as u64;
    let mut s = Vec::new();
    let mut j = crate::tc::syntax::JsonObj::new();
    s.push(format!("rate {}", print_rate(rate)));
    j.insert("rate", json!(rate));
    let burst = tc_calc_xmitsize(rate, o.buffer);
    if detail {
        s.push(format!(
            "burst {}/{} mpu {}",
            sprint_size(burst),
            DUMPED_CELL,
            sprint_size(mpu)
        ));
        j.insert(
            "burst",
            json!(format!("{}/{}", sprint_size(burst), DUMPED_CELL)),
        );
        j.insert("mpu", json!(mpu));
    } else {
        s.push(format!("burst {}", sprint_size(burst)));
        j.insert("burst", json!(burst));
    }
    let peakrate = o.peakrate.map_or(0, |p| p.rate);
    if let Some(peak) = &o.peakrate {
        let pmpu = peak.mpu as u64;
        // Text only: iproute2's tbf_print_opt prints it with PRINT_FP.
        s.push(format!("peakrate {}", print_rate(peak.rate)));
        if o.mtu != 0 || pmpu != 0 {
            let mtu = tc_calc_xmitsize(peak.rate, o.mtu);
            if detail {
                s.push(format!(
                    "mtu {}/{} mpu {}",
                    sprint_size(mtu),
                    DUMPED_CELL,
                    sprint_size(pmpu)
                ));
                j.insert(
                    "mtu",
                    json!(format!("{}/{}", sprint_size(mtu), DUMPED_CELL)),
                );
                // A second "mpu" key, as iproute2's writer prints it.
                j.push("mpu", json!(pmpu));
            } else {
                s.push(format!("minburst {}", sprint_size(mtu)));
                j.insert("minburst", json!(mtu));
            }
        }
    }
    let limit = o.limit as u64;
    let mut latency = 1e6 * (limit as f64 / rate as f64) - tc_core_tick2time(o.buffer) as f64;
    if peakrate != 0 {
        let lat2 = 1e6 * (limit as f64 / peakrate as f64) - tc_core_tick2time(o.mtu) as f64;
        latency = latency.max(lat2);
    }
    if latency >= 0.0 {
        let us = latency.min(u32::MAX as f64) as u64;
        s.push(format!("lat {}", sprint_time(us)));
        j.insert("lat", json!(us));
    } else {
        s.push(format!("limit {}", sprint_size(limit)));
        j.insert("limit", json!(limit));
    }
    if o.rate.overhead != 0 {
        s.push(format!("overhead {}", o.rate.overhead));
        j.insert("overhead", json!(o.rate.overhead));
    }
    if o.rate.linklayer != LinkLayer::Ethernet || detail {
        let name = linklayer_name(o.rate.linklayer);
        s.push(format!("linklayer {name}"));
        j.insert("linklayer", json!(name));
    }
    (s.join(" "), j)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Drops;
    use crate::qdisc::fifo::FifoOptions;
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::tbf::Tbf;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::{Qdisc, QdiscCtx};
    use crate::tc::show::qdisc_options;
    use crate::tc::syntax::parse_qdisc;
    use crate::time::Instant;

    /// The options tc sends for `args`.
    fn parsed(args: &str) -> Result<TbfOptions, TcError> {
        let words: Vec<&str> = args.split_whitespace().collect();
        match parse_qdisc(BUILTIN, "tbf", &words)? {
            QdiscOptions::Tbf(o) => Ok(o),
            other => panic!("tbf parsed {other:?}"),
        }
    }

    fn build(args: &str) -> Result<Tbf, TcError> {
        let o = parsed(args)?;
        Ok(Tbf::build(QdiscCtx::default(), &QdiscOptions::Tbf(o))?)
    }

    fn tbf(args: &str) -> Tbf {
        build(args).unwrap()
    }

    fn err(args: &str) -> String {
        build(args).err().unwrap().0
    }

    fn printed(q: &Tbf) -> Printed {
        qdisc_options(&q.dump(Instant::ZERO))
    }

    /// `tc -d qdisc show` of a tree whose burst and mtu are not whole
    /// microseconds of the rate, as this machine's kernel (6.18) and
    /// iproute2 (6.1) print it: the dumped ticks are cut to whole µs before
    /// they become bytes again (5000 B → 4999b, 1514 B → 1513b) and the cell
    /// is always `/1`, even when one is given.
    #[test]
    fn print_matches_the_kernel_for_uneven_bursts() {
        let q = tbf("rate 3mbit burst 5000/8 latency 7ms peakrate 4mbit mtu 1514");
        assert_eq!(
            printed(&q).detail,
            "rate 3Mbit burst 4999b/1 mpu 0b peakrate 4Mbit mtu 1513b/1 mpu 0b lat 7ms linklayer ethernet"
        );
        // -d -j: tbf_print_opt's PRINT_ANY fields under show_details, in
        // order, "mpu" twice as iproute2's writer repeats it; the peak
        // rate is text only (PRINT_FP).
        assert_eq!(
            serde_json::to_string(&printed(&q).json_for(true)).unwrap(),
            "{\"rate\":375000,\"burst\":\"4999b/1\",\"mpu\":0,\"mtu\":\"1513b/1\",\"mpu\":0,\
             \"lat\":7001,\"linklayer\":\"ethernet\"}"
        );
        assert_eq!(
            serde_json::to_string(&printed(&q).json).unwrap(),
            "{\"rate\":375000,\"burst\":4999,\"minburst\":1513,\"lat\":7001}"
        );
    }

    #[test]
    fn vector_t1_derived_values_and_print() {
        let o = parsed("rate 1mbit burst 10kb latency 50ms").unwrap();
        assert_eq!(o.limit, 16490);
        assert_eq!(
            (o.burst, o.pburst, o.buffer),
            (Some(10240), None, 1_280_000)
        );
        let q = tbf("rate 1mbit burst 10kb latency 50ms");
        assert_eq!(q.tokens_ns(), 81_920_000, "a full bucket");
        assert_eq!(q.max_size(), 10240);
        let p = printed(&q);
        assert_eq!(p.plain, "rate 1Mbit burst 10Kb lat 50ms");
        assert_eq!(
            p.detail,
            "rate 1Mbit burst 10Kb/1 mpu 0b lat 50ms linklayer ethernet"
        );
        assert_eq!(p.json["rate"], json!(125000));
        // The default child is an invisible bfifo holding the limit.
        let child = QdiscOptions::Fifo(FifoOptions { limit: 16490 });
        assert_eq!(
            (crate::tc::opts::fifo::BFIFO.print)(&child).unwrap().plain,
            "limit 16490b"
        );
        assert!(q.warnings().is_empty());
    }

    #[test]
    fn latency_converts_to_byte_limit_with_peakrate_bound() {
        // rate bound 125000*0.05+10240 = 16490; peak bound 250000*0.05+1514 = 14014.
        let args = "rate 1mbit burst 10kb latency 50ms peakrate 2mbit mtu 1514";
        let o = parsed(args).unwrap();
        assert_eq!(o.limit, 14014);
        assert_eq!(o.pburst, Some(1514));
        let q = tbf(args);
        assert_eq!(q.max_size(), 1514);
        let p = printed(&q);
        assert_eq!(
            p.plain,
            "rate 1Mbit burst 10Kb peakrate 2Mbit minburst 1514b lat 50ms"
        );
        assert_eq!(
            p.detail,
            "rate 1Mbit burst 10Kb/1 mpu 0b peakrate 2Mbit mtu 1514b/1 mpu 0b lat 50ms linklayer ethernet"
        );
    }

    #[test]
    fn negative_latency_prints_limit_and_framing_options() {
        let q = tbf("rate 1mbit burst 10kb limit 5000 overhead 24 linklayer atm mpu 64");
        let p = printed(&q);
        // burst is printed from the kernel's buffer (computed with framing).
        assert!(p.plain.contains("limit 5000b"), "{}", p.plain);
        assert!(
            p.plain.ends_with("overhead 24 linklayer atm"),
            "{}",
            p.plain
        );
        assert!(p.detail.contains("mpu 64b"), "{}", p.detail);
    }

    #[test]
    fn validation_names_the_bad_token() {
        assert!(err("burst 10kb latency 50ms").contains("\"rate\" parameter is mandatory"));
        assert!(err("rate 1mbit latency 50ms").contains("\"burst\" parameter is mandatory"));
        assert!(err("rate 1mbit burst 10kb").contains("either \"limit\" or \"latency\""));
        assert!(err("rate 1mbit burst 10kb limit 1000 latency 5ms")
            .contains("specifying both \"latency\" and \"limit\" is not allowed"));
        assert!(err("rate 1mbit burst 10kb limit 1000 peakrate 2mbit")
            .contains("\"mtu\" must also be specified"));
        assert!(
            err("rate 1mbit burst 10kb limit 1000 peakrate 1mbit mtu 1514")
                .contains("peakrate 1Mbit is lower than or equals to rate 1Mbit")
        );
        let e = err("rate fast burst 10kb limit 1000");
        assert!(e.contains("illegal value for \"rate\": \"fast\""), "{e}");
        assert!(e.contains("mbit"), "{e}");
        assert!(err("rate 1mbit burst 10kb/7 limit 1000").contains("\"burst\": \"10kb/7\""));
        assert!(
            err("rate 1mbit burst 10kb limit 1000 bogus").contains("unknown parameter \"bogus\"")
        );
        assert!(err("rate 1mbit burst 10kb limit").contains("\"limit\" needs a value"));
        assert!(err("rate 1mbit rate 2mbit burst 1 limit 1").contains("duplicate \"rate\""));
        assert!(err("rate 1mbit burst 1 limit 1 linklayer token").contains("\"linklayer\""));
        assert!(err("rate 1mbit burst 1 limit 1 overhead -4").contains("\"overhead\""));
        // A change needs the whole set too.
        assert!(parsed("rate 2mbit").is_err());
        // Abbreviations tc accepts.
        // A given cell is accepted, but the kernel dumps cell_log 0.
        let q = tbf("rate 1mbit bu 10kb/16 lat 50ms");
        assert!(printed(&q).detail.contains("burst 10Kb/1 mpu 0b"));
        assert_eq!(tbf("rate 1mbit buffer 3000 limit 5000").max_size(), 3000);
        assert_eq!(tbf("rate 1mbit maxburst 3000 limit 5000").max_size(), 3000);
    }

    #[test]
    fn change_prints_the_new_rate_and_burst() {
        let mut q = tbf("rate 1mbit burst 10kb limit 100000");
        let o = parse_qdisc(
            BUILTIN,
            "tbf",
            &["rate", "2mbit", "burst", "4000", "limit", "5000"],
        );
        q.change(&o.unwrap(), Instant::ZERO, &mut Drops::new())
            .unwrap();
        assert!(printed(&q).plain.starts_with("rate 2Mbit burst 4000b"));
    }

    #[test]
    fn extreme_configs_do_not_overflow() {
        for args in [
            "rate 8bit burst 4294967295 limit 4294967295 linklayer atm overhead 65535 mpu 65535",
            "rate 8bit burst 4294967295 limit 1 peakrate 16bit mtu 4294967295",
            "rate 100tbit burst 1 limit 1",
        ] {
            let mut q = tbf(args);
            let mut d = Drops::new();
            q.enqueue(pkt(1, 1), Instant::ZERO, &mut d);
            q.enqueue(pkt(2, 1), Instant::ZERO, &mut d);
            for t in [0, 1, u64::MAX / 2, u64::MAX] {
                let t = Instant::from_nanos(t);
                q.dequeue(t, &mut d);
                assert!(q.next_wakeup(t).is_none_or(|w| w >= t));
            }
            let _ = qdisc_options(&q.dump(Instant::MAX));
        }
    }

    #[test]
    fn size_and_cell() {
        assert_eq!(parse_size_and_cell("10kb/8"), Some(10240));
        assert_eq!(parse_size_and_cell("10kb/7"), None);
        assert!(matches("lat", "latency") && !matches("", "latency"));
    }
}
