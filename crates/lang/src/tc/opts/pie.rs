//! The `pie` qdisc's tc syntax (iproute2 tc/q_pie.c): `pie_parse_opt` reads
//! `limit`, `target`, `tupdate`, `alpha`, `beta` (0..32, in 1/16: tc
//! refuses more, the kernel scales them) and the flags `[no]ecn`,
//! `[no]bytemode`, `[no_]dq_rate_estimator` into the `TCA_PIE_*` attributes
//! (`crate::qdisc::pie::PieOptions`), sending no number given as zero;
//! `pie_print_opt` prints what `pie_dump` sends back and `pie_print_xstats`
//! its `tc_pie_xstats`. The pieces `fq_pie` shares (tc/q_fq_pie.c reads and
//! prints the same words) are public to its module.

use super::codel::{nonzero, print_time, time, unsigned};
use crate::qdisc::dump::Xstats;
use crate::qdisc::pie::{PieOptions, PieXstats};
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{replace_root, Bench, JsonObj, Printed, Sample, Syntax, XstatsPrinter};
use crate::tc::tokens::Tokens;
use crate::tc::TcError;
use crate::units::{print_g, sprint_time};
use serde_json::json;
use std::fmt::Write;

/// q_pie.c `explain`.
const USAGE: &str = "Usage: ... pie [ limit PACKETS ] [ target TIME ]\n               [ tupdate TIME ] [ alpha ALPHA ] [ beta BETA ]\n               [ bytemode | nobytemode ] [ ecn | noecn ]\n               [ dq_rate_estimator | no_dq_rate_estimator ]";

/// `ALPHA_MAX`, `BETA_MAX`: tc's bound on the gains.
pub const GAIN_MAX: u32 = 32;

/// `alpha` or `beta` (`get_unsigned`, at most 32).
fn gain(name: &str, t: &mut Tokens) -> Result<u32, TcError> {
    let v = unsigned(name, t)?;
    if v > GAIN_MAX {
        return Err(TcError::new(format!(
            "Illegal \"{name}\" (\"{v}\": expected at most {GAIN_MAX})"
        )));
    }
    Ok(v)
}

/// Reads `word` (and its value) if it is one of the words `pie_parse_opt`
/// and `fq_pie_parse_opt` share; false if it is not.
pub fn parse_shared(word: &str, t: &mut Tokens, o: &mut PieOptions) -> Result<bool, TcError> {
    match word {
        "limit" => o.limit = Some(unsigned("limit", t)?),
        "target" => o.target = Some(time("target", t)?),
        "tupdate" => o.tupdate = Some(time("tupdate", t)?),
        "alpha" => o.alpha = Some(gain("alpha", t)?),
        "beta" => o.beta = Some(gain("beta", t)?),
        "ecn" => o.ecn = Some(true),
        "noecn" => o.ecn = Some(false),
        "bytemode" => o.bytemode = Some(true),
        "nobytemode" => o.bytemode = Some(false),
        "dq_rate_estimator" => o.dq_rate_estimator = Some(true),
        "no_dq_rate_estimator" => o.dq_rate_estimator = Some(false),
        _ => return Ok(false),
    }
    Ok(true)
}

/// tc's answer to a word it does not take (`help`: the usage alone).
pub fn unknown(word: &str, usage: &str) -> TcError {
    if word == "help" {
        TcError::new(usage)
    } else {
        TcError::new(format!("What is \"{word}\"?\n{usage}"))
    }
}

/// `pie_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = PieOptions::default();
    while let Some(word) = t.next() {
        if !parse_shared(word, t, &mut o)? {
            return Err(unknown(word, USAGE));
        }
    }
    Ok(QdiscOptions::Pie(options(o)))
}

/// What `pie_parse_opt` sends for the values given (the words', or the
/// configuration's structured form's): no number given as zero.
pub fn options(o: PieOptions) -> PieOptions {
    PieOptions {
        limit: o.limit.and_then(nonzero),
        target: o.target.and_then(nonzero),
        tupdate: o.tupdate.and_then(nonzero),
        alpha: o.alpha.and_then(nonzero),
        beta: o.beta.and_then(nonzero),
        ..o
    }
}

/// The printed words and the `-j` object being built.
pub struct Out {
    /// The words, joined by spaces at the end.
    pub text: Vec<String>,
    /// The `options` object.
    pub json: JsonObj,
}

impl Out {
    /// Nothing printed yet.
    pub fn new() -> Self {
        Out {
            text: Vec::new(),
            json: JsonObj::new(),
        }
    }

    /// `print_uint(PRINT_ANY, name, fmt, v)` where the text is `word`.
    pub fn uint(&mut self, name: &'static str, word: String, v: u32) {
        self.text.push(word);
        self.json.insert(name, json!(v));
    }

    /// `print_bool(PRINT_ANY, name, "name ", true)` when `on`.
    pub fn flag(&mut self, name: &'static str, on: Option<bool>) {
        if on == Some(true) {
            self.text.push(name.to_string());
            self.json.insert(name, json!(true));
        }
    }

    /// The same text with and without `-d`.
    pub fn printed(self) -> Printed {
        Printed::same(self.text.join(" "), self.json)
    }
}

impl Default for Out {
    fn default() -> Self {
        Out::new()
    }
}

/// `target`, `tupdate`, `alpha`, `beta` as both printers print them.
pub fn print_gains(o: &PieOptions, out: &mut Out) {
    if let Some(v) = o.target {
        out.uint("target", format!("target {}", print_time(v)), v);
    }
    if let Some(v) = o.tupdate {
        out.uint("tupdate", format!("tupdate {}", print_time(v)), v);
    }
    if let Some(v) = o.alpha {
        out.uint("alpha", format!("alpha {v}"), v);
    }
    if let Some(v) = o.beta {
        out.uint("beta", format!("beta {v}"), v);
    }
}

/// The three flags as both printers print them (only those on).
pub fn print_flags(o: &PieOptions, out: &mut Out) {
    out.flag("ecn", o.ecn);
    out.flag("bytemode", o.bytemode);
    out.flag("dq_rate_estimator", o.dq_rate_estimator);
}

/// `pie_print_opt`.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Pie(o) = options else {
        return None;
    };
    let mut out = Out::new();
    if let Some(limit) = o.limit {
        out.uint("limit", format!("limit {limit}p"), limit);
    }
    print_gains(o, &mut out);
    print_flags(o, &mut out);
    Some(out.printed())
}

/// PIE's tc syntax (it has no classes).
pub static SYNTAX: Syntax = Syntax {
    kind: "pie",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(|dir, _| vec![format!("{} pie", replace_root(dir))]),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[Bench::new(
        "pie",
        &["tc qdisc add dev D root pie limit 100000"],
    )],
    samples: &[
        Sample::new(
            "pie",
            &["tc qdisc add dev D root pie limit 20 target 1ms tupdate 2ms"],
        ),
        Sample::new(
            "pie ecn bytemode dq_rate_estimator",
            &["tc qdisc add dev D root pie limit 50 target 2ms tupdate 4ms alpha 8 beta 32 ecn bytemode dq_rate_estimator"],
        ),
    ],
};

/// The keys of a `pie` table in the configuration (tc-pie(8)).
static TABLE: KeyTable = KeyTable::qdisc(&[
    KEY_LIMIT,
    KEY_TARGET,
    KEY_TUPDATE,
    KEY_ALPHA,
    KEY_BETA,
    KEY_ECN,
    KEY_BYTEMODE,
    KEY_DQ_RATE_ESTIMATOR,
]);

/// `limit`, a key `pie` and `fq_pie` tables share.
pub const KEY_LIMIT: Key = Key::opt("limit", Value::Count);
/// `target`, shared.
pub const KEY_TARGET: Key = Key::opt("target", Value::Time);
/// `tupdate`, shared.
pub const KEY_TUPDATE: Key = Key::opt("tupdate", Value::Time);
/// `alpha`, shared.
pub const KEY_ALPHA: Key = Key::opt("alpha", Value::Count);
/// `beta`, shared.
pub const KEY_BETA: Key = Key::opt("beta", Value::Count);
/// `ecn` / `noecn`, shared.
pub const KEY_ECN: Key = Key::opt(
    "ecn",
    Value::Flag {
        on: "ecn",
        off: Some("noecn"),
    },
);
/// `bytemode` / `nobytemode`, shared.
pub const KEY_BYTEMODE: Key = Key::opt(
    "bytemode",
    Value::Flag {
        on: "bytemode",
        off: Some("nobytemode"),
    },
);
/// `dq_rate_estimator` / `no_dq_rate_estimator`, shared.
pub const KEY_DQ_RATE_ESTIMATOR: Key = Key::opt(
    "dq_rate_estimator",
    Value::Flag {
        on: "dq_rate_estimator",
        off: Some("no_dq_rate_estimator"),
    },
);

/// `pie_print_xstats`: `tc_pie_xstats`.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| match x {
        Xstats::Pie(s) => {
            pie_text(out, s);
            Some(())
        }
        _ => None,
    },
    json: |x| {
        let Xstats::Pie(s) = x else { return None };
        let mut xj = JsonObj::new();
        xj.insert("prob", json_g(probability(s.prob)));
        xj.insert("delay", json!(s.delay));
        if s.dq_rate_estimating {
            xj.insert("avg_dq_rate", json!(s.avg_dq_rate));
        }
        xj.insert("pkts_in", json!(s.packets_in));
        xj.insert("overlimit", json!(s.overlimit));
        xj.insert("dropped", json!(s.dropped));
        xj.insert("maxq", json!(s.maxq));
        xj.insert("ecn_mark", json!(s.ecn_mark));
        Some(xj)
    },
};

/// `print_float`'s JSON number (`%g`): the six significant digits tc
/// prints, an integer where they are one (serde_json writes an exponent
/// as `e-8` where C's `%g` writes `e-08`).
pub(super) fn json_g(v: f64) -> serde_json::Value {
    let g: f64 = print_g(v).parse().unwrap_or(v);
    if g.fract() == 0.0 && g.abs() < 1e15 {
        json!(g as i64)
    } else {
        json!(g)
    }
}

/// The probability as tc prints it: `(double)prob / (double)UINT64_MAX`.
fn probability(prob: u64) -> f64 {
    prob as f64 / u64::MAX as f64
}

fn pie_text(out: &mut String, s: &PieXstats) {
    let _ = write!(
        out,
        "  prob {} delay {}",
        print_g(probability(s.prob)),
        sprint_time(s.delay.into())
    );
    if s.dq_rate_estimating {
        let _ = write!(out, " avg_dq_rate {}", s.avg_dq_rate);
    }
    let _ = writeln!(
        out,
        "\n  pkts_in {} overlimit {} dropped {} maxq {} ecn_mark {}",
        s.packets_in, s.overlimit, s.dropped, s.maxq, s.ecn_mark
    );
}

#[cfg(test)]
#[path = "pie_tests.rs"]
mod tests;
