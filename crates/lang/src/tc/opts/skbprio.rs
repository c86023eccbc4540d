//! The `skbprio` qdisc's tc syntax (iproute2 v6.18.0 tc/q_skbprio.c):
//! `skbprio_parse_opt` reads `limit` (a size, as tc reads it) into
//! `tc_skbprio_qopt`, sent only when given; `skbprio_print_opt` prints
//! `limit N`. Its 64 classes take no options.

use crate::dir::Dir;
use crate::qdisc::skbprio::SkbprioOptions;
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{example_rate, replace_root, Bench, JsonObj, Printed, Sample, Syntax};
use crate::tc::tokens::{incomplete, Tokens};
use crate::tc::TcError;
use crate::units::parse_size;
use serde_json::json;

/// q_skbprio.c `explain`.
const USAGE: &str = "Usage: ... <skbprio> [ limit NUMBER ]";

/// `skbprio_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = None;
    while let Some(word) = t.next() {
        match word {
            "limit" => {
                let v = t.value(|| incomplete("limit"))?;
                let limit = parse_size(v)
                    .ok()
                    .and_then(|b| u32::try_from(b).ok())
                    .ok_or_else(|| {
                        TcError::new(format!("skbprio: Illegal \"limit\" value:\"{v}\""))
                    })?;
                o = Some(SkbprioOptions { limit });
            }
            "help" => return Err(TcError::new(USAGE)),
            other => {
                return Err(TcError::new(format!(
                    "skbprio: unknown parameter \"{other}\"\n{USAGE}"
                )))
            }
        }
    }
    Ok(o.map_or(QdiscOptions::None, QdiscOptions::Skbprio))
}

/// `skbprio_print_opt`.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Skbprio(o) = options else {
        return None;
    };
    let mut json = JsonObj::new();
    json.insert("limit", json!(o.limit));
    Some(Printed::same(format!("limit {}", o.limit), json))
}

/// The qdisc menu's skbprio: a limit of 100 ms of the link (1gbit when
/// unlimited) in full frames of 1514 bytes, at least the kernel's default
/// 64.
fn example(dir: Dir, rate_bytes_ps: u64) -> Vec<String> {
    let limit = (example_rate(rate_bytes_ps) / 10 / 1514).clamp(64, u64::from(u32::MAX));
    vec![format!("{} skbprio limit {limit}", replace_root(dir))]
}

/// skbprio's tc syntax.
pub static SYNTAX: Syntax = Syntax {
    kind: "skbprio",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(example),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: None,
    benches: &[Bench::new(
        "skbprio",
        &["tc qdisc add dev D root skbprio limit 100000"],
    )],
    samples: &[Sample::new(
        "skbprio",
        &["tc qdisc add dev D root skbprio limit 20"],
    )],
};

/// The keys of an `skbprio` table in the configuration.
static TABLE: KeyTable = KeyTable::qdisc(&[Key::opt("limit", Value::Count)]);

#[cfg(test)]
mod tests {
    use super::super::run_on_left as run;
    use super::*;
    use crate::qdisc::kinds::BUILTIN;
    use crate::tc::syntax::parse_qdisc;

    fn parsed(words: &str) -> Result<QdiscOptions, String> {
        let words: Vec<&str> = words.split_whitespace().collect();
        parse_qdisc(BUILTIN, "skbprio", &words).map_err(|e| e.0)
    }

    #[test]
    fn words_print_and_refusals_are_tcs() {
        assert_eq!(parsed(""), Ok(QdiscOptions::None));
        assert_eq!(
            parsed("limit 1k"),
            Ok(QdiscOptions::Skbprio(SkbprioOptions { limit: 1024 }))
        );
        assert_eq!(
            parsed("limit x").unwrap_err(),
            "skbprio: Illegal \"limit\" value:\"x\""
        );
        assert_eq!(
            parsed("flows 3").unwrap_err(),
            format!("skbprio: unknown parameter \"flows\"\n{USAGE}")
        );
        assert_eq!(parsed("help").unwrap_err(), USAGE);
        let show = |lines: &[&str]| run(lines).unwrap().unwrap();
        assert_eq!(
            show(&[
                "tc qdisc add dev left root skbprio",
                "tc qdisc show dev left"
            ]),
            "qdisc skbprio 8001: root refcnt 2 limit 64 \n"
        );
        let j = show(&[
            "tc qdisc add dev left root skbprio limit 20",
            "tc -j qdisc show dev left",
        ]);
        assert!(j.contains("\"options\":{\"limit\":20}"), "{j}");
        let classes = show(&[
            "tc qdisc add dev left root skbprio",
            "tc class show dev left",
        ]);
        assert_eq!(classes.lines().count(), 64, "{classes}");
        assert!(
            classes.starts_with("class skbprio 8001:1 parent 8001: \n"),
            "{classes}"
        );
        for s in SYNTAX.samples.iter().flat_map(|s| s.lines) {
            assert!(run(&[&s.replace(" D ", " left ")]).is_ok(), "{s}");
        }
    }
}
