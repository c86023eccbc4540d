//! The `hhf` qdisc's tc syntax (iproute2 v6.18.0 tc/q_hhf.c):
//! `hhf_parse_opt` reads `limit`, `quantum`, `hh_limit`, `admit_bytes`,
//! `non_hh_weight` (`get_unsigned`) and `reset_timeout`, `evict_timeout`
//! (`get_time`, µs) into the TCA_HHF_* attributes, sending none given as
//! zero; `hhf_print_opt` prints what `hhf_dump` sends back (the times
//! rounded to the kernel's jiffies), `hhf_print_xstats` its
//! `tc_hhf_xstats`. iproute2 has no tc-hhf(8): its usage text is the
//! reference for the words.

use super::codel::{nonzero, print_time, time, unsigned};
use crate::dir::Dir;
use crate::qdisc::hhf::{HhfOptions, HhfXstats};
use crate::qdisc::{QdiscOptions, Xstats};
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::XstatsPrinter;
use crate::tc::syntax::{example_rate, replace_root, Bench, JsonObj, Printed, Sample, Syntax};
use crate::tc::tokens::Tokens;
use crate::tc::TcError;
use crate::units::sprint_size;
use serde_json::json;
use std::fmt::Write;

/// q_hhf.c `explain`.
const USAGE: &str = "Usage: ... hhf\t[ limit PACKETS ] [ quantum BYTES]\n\
                     \t\t[ hh_limit NUMBER ]\n\
                     \t\t[ reset_timeout TIME ]\n\
                     \t\t[ admit_bytes BYTES ]\n\
                     \t\t[ evict_timeout TIME ]\n\
                     \t\t[ non_hh_weight NUMBER ]";

/// `hhf_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = HhfOptions::default();
    while let Some(word) = t.next() {
        match word {
            "limit" => o.limit = Some(unsigned("limit", t)?),
            "quantum" => o.quantum = Some(unsigned("quantum", t)?),
            "hh_limit" => o.hh_limit = Some(unsigned("hh_limit", t)?),
            "reset_timeout" => o.reset_timeout = Some(time("reset_timeout", t)?),
            "admit_bytes" => o.admit_bytes = Some(unsigned("admit_bytes", t)?),
            "evict_timeout" => o.evict_timeout = Some(time("evict_timeout", t)?),
            "non_hh_weight" => o.non_hh_weight = Some(unsigned("non_hh_weight", t)?),
            "help" => return Err(TcError::new(USAGE)),
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{USAGE}"))),
        }
    }
    Ok(options(o))
}

/// What `hhf_parse_opt` sends for the values given: none of those given as
/// zero (an empty TCA_OPTIONS nest when nothing is left, which `hhf_init`
/// and `hhf_change` take as no change).
pub fn options(o: HhfOptions) -> QdiscOptions {
    QdiscOptions::Hhf(HhfOptions {
        limit: o.limit.and_then(nonzero),
        quantum: o.quantum.and_then(nonzero),
        hh_limit: o.hh_limit.and_then(nonzero),
        reset_timeout: o.reset_timeout.and_then(nonzero),
        admit_bytes: o.admit_bytes.and_then(nonzero),
        evict_timeout: o.evict_timeout.and_then(nonzero),
        non_hh_weight: o.non_hh_weight.and_then(nonzero),
    })
}

/// `hhf_print_opt`: the same text with and without `-d`; the times in µs
/// in `-j`, the sizes as numbers.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Hhf(o) = options else {
        return None;
    };
    let mut text = Vec::new();
    let mut json = JsonObj::new();
    let mut put = |name: &'static str, v: Option<u32>, shown: fn(u32) -> String| {
        if let Some(v) = v {
            text.push(format!("{name} {}", shown(v)));
            json.insert(name, json!(v));
        }
    };
    put("limit", o.limit, |v| format!("{v}p"));
    put("quantum", o.quantum, |v| sprint_size(v.into()));
    put("hh_limit", o.hh_limit, |v| v.to_string());
    put("reset_timeout", o.reset_timeout, print_time);
    put("admit_bytes", o.admit_bytes, |v| sprint_size(v.into()));
    put("evict_timeout", o.evict_timeout, print_time);
    put("non_hh_weight", o.non_hh_weight, |v| v.to_string());
    Some(Printed::same(text.join(" "), json))
}

/// The qdisc menu's hhf: a flow is a heavy hitter above a quarter of the
/// link's rate (1gbit when unlimited): `admit_bytes` is what it sends in
/// the 40 ms between two resets of the filter (the kernel's default,
/// 128 KB, stands for 25 Mbit/s).
fn example(dir: Dir, rate_bytes_ps: u64) -> Vec<String> {
    let admit = (example_rate(rate_bytes_ps) / 100).clamp(3000, u64::from(u32::MAX));
    vec![format!("{} hhf admit_bytes {admit}", replace_root(dir))]
}

/// hhf's tc syntax (no classes).
pub static SYNTAX: Syntax = Syntax {
    kind: "hhf",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(example),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[Bench::new(
        "hhf",
        &["tc qdisc add dev D root hhf admit_bytes 65536"],
    )],
    samples: &[
        Sample::new("hhf", &["tc qdisc add dev D root hhf"]),
        Sample::new(
            "hhf tuned",
            &["tc qdisc add dev D root hhf limit 500 quantum 3000 hh_limit 64 reset_timeout 20ms admit_bytes 20000 evict_timeout 500ms non_hh_weight 4"],
        ),
    ],
};

/// The keys of an `hhf` table in the configuration (q_hhf.c's words).
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::opt("limit", Value::Count),
    // Plain numbers (`get_unsigned`), not sizes.
    Key::opt("quantum", Value::Size32 { plain: true }),
    Key::opt("hh_limit", Value::Count),
    Key::opt("reset_timeout", Value::Time),
    Key::opt("admit_bytes", Value::Size32 { plain: true }),
    Key::opt("evict_timeout", Value::Time),
    Key::opt("non_hh_weight", Value::Count),
]);

/// `hhf_print_xstats`: `tc_hhf_xstats`.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| {
        let Xstats::Hhf(s) = x else { return None };
        xstats_text(out, s);
        Some(())
    },
    json: |x| {
        let Xstats::Hhf(s) = x else { return None };
        let mut j = JsonObj::new();
        j.insert("drop_overlimit", json!(s.drop_overlimit));
        j.insert("hh_overlimit", json!(s.hh_overlimit));
        j.insert("tot_hh", json!(s.hh_tot_count));
        j.insert("cur_hh", json!(s.hh_cur_count));
        Some(j)
    },
};

fn xstats_text(out: &mut String, s: &HhfXstats) {
    let _ = writeln!(
        out,
        "  drop_overlimit {} hh_overlimit {} tot_hh {} cur_hh {}",
        s.drop_overlimit, s.hh_overlimit, s.hh_tot_count, s.hh_cur_count
    );
}

#[cfg(test)]
#[path = "hhf_tests.rs"]
mod tests;
