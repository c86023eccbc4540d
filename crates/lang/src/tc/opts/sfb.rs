//! The `sfb` qdisc's tc syntax (iproute2 v6.18.0 tc/q_sfb.c):
//! `sfb_parse_opt` reads `rehash MS`, `db MS`, `limit`, `max`, `target`
//! (frames, `get_u32` in any C base), `increment` and `decrement`
//! (probabilities 0..1 scaled to Q0.16, `get_prob`), `penalty_rate` and
//! `penalty_burst` over tc's own defaults (which are not the kernel's:
//! increment 33 and decrement 3 of 65535), derives `max` from `target` or
//! `target` from `max` when one is 0, and always sends `TCA_SFB_PARMS`;
//! `sfb_print_opt` and `sfb_print_xstats` print the dump back.

use crate::dir::Dir;
use crate::qdisc::sfb::{SfbOptions, SfbXstats, SFB_MAX_PROB};
use crate::qdisc::{QdiscOptions, Xstats};
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{
    example_rate, replace_root, Bench, JsonObj, Printed, Sample, Syntax, XstatsPrinter,
};
use crate::tc::tokens::{c_number, incomplete, Tokens};
use crate::tc::TcError;
use crate::units::{print_g, sprint_time};
use serde_json::json;
use std::fmt::Write;

use super::pie::json_g;
use super::red::scan_double;

/// q_sfb.c `explain`.
const USAGE: &str = "Usage: ... sfb [ rehash SECS ] [ db SECS ]\n\
     \t    [ limit PACKETS ] [ max PACKETS ] [ target PACKETS ]\n\
     \t    [ increment FLOAT ] [ decrement FLOAT ]\n\
     \t    [ penalty_rate PPS ] [ penalty_burst PACKETS ]";

/// `get_u32(.., 0)`.
fn get_u32(word: &str) -> Option<u32> {
    c_number(word).and_then(|n| u32::try_from(n).ok())
}

/// q_sfb.c `get_prob`: a `strtod` number in 0..=1 (what follows the
/// number is not looked at), `d * SFB_MAX_PROB + 0.5` truncated.
fn get_prob(word: &str) -> Option<u32> {
    let d = scan_double(word)?;
    if !(0.0..=1.0).contains(&d) {
        return None;
    }
    Some((d * f64::from(SFB_MAX_PROB) + 0.5) as u32)
}

/// `sfb_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = SfbOptions {
        rehash_interval: 600 * 1000,
        warmup_time: 60 * 1000,
        penalty_rate: 10,
        penalty_burst: 20,
        increment: (SFB_MAX_PROB + 1000) / 2000,
        decrement: (SFB_MAX_PROB + 10000) / 20000,
        limit: 0,
        max: 0,
        bin_size: 0,
    };
    while let Some(word) = t.next() {
        let field = match word {
            "rehash" => &mut o.rehash_interval,
            "db" => &mut o.warmup_time,
            "limit" => &mut o.limit,
            "max" => &mut o.max,
            "target" => &mut o.bin_size,
            "increment" => &mut o.increment,
            "decrement" => &mut o.decrement,
            "penalty_rate" => &mut o.penalty_rate,
            "penalty_burst" => &mut o.penalty_burst,
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{USAGE}"))),
        };
        let v = t.value(|| incomplete(word))?;
        let prob = matches!(word, "increment" | "decrement");
        let read = if prob { get_prob(v) } else { get_u32(v) };
        *field = read.ok_or_else(|| TcError::new(format!("Illegal \"{word}\"")))?;
    }
    if o.max == 0 {
        o.max = if o.bin_size >= 1 {
            o.bin_size.wrapping_mul(5).wrapping_add(1) / 4
        } else {
            25
        };
    }
    if o.bin_size == 0 {
        o.bin_size = o.max.wrapping_mul(4).wrapping_add(3) / 5;
    }
    Ok(QdiscOptions::Sfb(o))
}

/// A Q0.16 probability as `%lg` prints it, and the number `-j` writes
/// (`jsonw_float`: "%g").
fn prob(v: u32) -> (String, serde_json::Value) {
    let p = f64::from(v) / f64::from(SFB_MAX_PROB);
    (print_g(p), json_g(p))
}

/// `sfb_print_opt`.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Sfb(o) = options else {
        return None;
    };
    let mut json = JsonObj::new();
    let mut text = String::new();
    // `qopt->rehash_interval * 1000` is an unsigned int.
    let rehash = o.rehash_interval.wrapping_mul(1000);
    let db = o.warmup_time.wrapping_mul(1000);
    json.insert("rehash", json!(rehash));
    let _ = write!(text, "rehash {} ", sprint_time(u64::from(rehash)));
    json.insert("db", json!(db));
    let _ = write!(text, "db {} ", sprint_time(u64::from(db)));
    let _ = write!(
        text,
        "limit {}p max {}p target {}p ",
        o.limit, o.max, o.bin_size
    );
    json.insert("limit", json!(o.limit));
    json.insert("max", json!(o.max));
    json.insert("target", json!(o.bin_size));
    for (name, v) in [("increment", o.increment), ("decrement", o.decrement)] {
        let (t, g) = prob(v);
        let _ = write!(text, "{name} {t} ");
        json.insert(name, g);
    }
    let _ = write!(
        text,
        "penalty_rate {}pps penalty_burst {}p",
        o.penalty_rate, o.penalty_burst
    );
    json.insert("penalty_rate", json!(o.penalty_rate));
    json.insert("penalty_burst", json!(o.penalty_burst));
    Some(Printed::same(text, json))
}

/// `sfb_print_xstats`: `tc_sfb_xstats`.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| {
        let Xstats::Sfb(s) = x else { return None };
        xstats_text(out, s);
        Some(())
    },
    json: |x| {
        let Xstats::Sfb(s) = x else { return None };
        let mut j = JsonObj::new();
        j.insert("earlydrop", json!(s.earlydrop));
        j.insert("penaltydrop", json!(s.penaltydrop));
        j.insert("bucketdrop", json!(s.bucketdrop));
        j.insert("queuedrop", json!(s.queuedrop));
        j.insert("childdrop", json!(s.childdrop));
        j.insert("marked", json!(s.marked));
        j.insert("maxqlen", json!(s.maxqlen));
        j.insert("maxprob", prob(s.maxprob).1);
        j.insert("avgprob", prob(s.avgprob).1);
        Some(j)
    },
};

/// The two lines of `sfb_print_xstats` (tc ends the second).
fn xstats_text(out: &mut String, s: &SfbXstats) {
    let _ = writeln!(
        out,
        "  earlydrop {} penaltydrop {} bucketdrop {} queuedrop {} childdrop {} marked {}",
        s.earlydrop, s.penaltydrop, s.bucketdrop, s.queuedrop, s.childdrop, s.marked
    );
    let _ = writeln!(
        out,
        "  maxqlen {} maxprob {} avgprob {}",
        s.maxqlen,
        prob(s.maxprob).0,
        prob(s.avgprob).0
    );
}

/// The qdisc menu's SFB: a limit of 100 ms of 1514-byte frames at the
/// link's rate (1gbit when unlimited), 50 to 10000 frames; the bins'
/// `max` and `target` and the penalty box as tc's defaults.
fn example(dir: Dir, rate_bytes_ps: u64) -> Vec<String> {
    let limit = (example_rate(rate_bytes_ps) / 10 / 1514).clamp(50, 10_000);
    vec![format!("{} sfb limit {limit}", replace_root(dir))]
}

/// SFB's tc syntax.
pub static SYNTAX: Syntax = Syntax {
    kind: "sfb",
    qdisc: parse,
    class: None,
    print,
    // `sfb_dump_class` answers ENOSYS: no class is printed.
    print_class: |_| None,
    example: Some(example),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[Bench::new(
        "sfb",
        &["tc qdisc add dev D root sfb limit 100000 max 100000 target 100000"],
    )],
    samples: &[
        Sample::new("sfb", &["tc qdisc add dev D root handle 1: sfb"]),
        Sample::new(
            "sfb small bins, penalty box",
            &["tc qdisc add dev D root sfb limit 40 max 8 target 4 increment 0.05 decrement 0.01 penalty_rate 100 penalty_burst 5 rehash 2000 db 500"],
        ),
        Sample::new(
            "sfb bfifo child",
            &[
                "tc qdisc add dev D root handle 1: sfb limit 50 target 10",
                "tc qdisc add dev D parent 1:1 handle 10: bfifo limit 30000",
            ],
        ),
    ],
};

/// The keys of an `sfb` table in the configuration (tc-sfb(8)).
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::opt("rehash", Value::Count),
    Key::opt("db", Value::Count),
    Key::opt("limit", Value::Count),
    Key::opt("max", Value::Count),
    Key::opt("target", Value::Count),
    Key::opt("increment", Value::Decimal),
    Key::opt("decrement", Value::Decimal),
    Key::opt("penalty_rate", Value::Count),
    Key::opt("penalty_burst", Value::Count),
]);

#[cfg(test)]
#[path = "sfb_tests.rs"]
mod tests;
