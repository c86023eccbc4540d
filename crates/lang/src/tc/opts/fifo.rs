//! The tc syntax of pfifo, bfifo and pfifo_head_drop (iproute2
//! tc/q_fifo.c `fifo_parse_opt`, `fifo_print_opt`): `[ limit NUMBER ]`, a
//! packet count, or for bfifo a size; printed `limit 1000p` or
//! `limit 10Kb`. No limit sends no options (the kernel's default).

use crate::qdisc::fifo::FifoOptions;
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{Bench, Printed, Sample, Syntax};
use crate::tc::tokens::{incomplete, Tokens};
use crate::tc::TcError;
use crate::units::{parse_size, sprint_size};
use serde_json::json;

/// pfifo: a limit in packets.
pub static PFIFO: Syntax = Syntax {
    kind: "pfifo",
    qdisc: |t| parse(t, "pfifo"),
    class: None,
    print: |o| print(o, false),
    print_class: |_| None,
    example: None,
    table: Some(&KeyTable::qdisc(&[Key::opt("limit", Value::Count)])),
    trailing_space: false,
    xstats: None,
    benches: &[Bench::new(
        "pfifo",
        &["tc qdisc add dev D root pfifo limit 100000"],
    )],
    samples: &[Sample::new("pfifo", &["tc qdisc add dev D root pfifo"])],
};

/// bfifo: a limit in bytes.
pub static BFIFO: Syntax = Syntax {
    kind: "bfifo",
    qdisc: |t| parse(t, "bfifo"),
    class: None,
    print: |o| print(o, true),
    print_class: |_| None,
    example: None,
    table: Some(&KeyTable::qdisc(&[Key::opt("limit", Value::Size)])),
    trailing_space: false,
    xstats: None,
    benches: &[Bench::new(
        "bfifo",
        &["tc qdisc add dev D root bfifo limit 200mb"],
    )],
    samples: &[Sample::new(
        "bfifo",
        &["tc qdisc add dev D root bfifo limit 20000"],
    )],
};

/// pfifo_head_drop: a limit in packets.
pub static PFIFO_HEAD_DROP: Syntax = Syntax {
    kind: "pfifo_head_drop",
    qdisc: |t| parse(t, "pfifo_head_drop"),
    benches: &[Bench::new(
        "pfifo_head_drop",
        &["tc qdisc add dev D root pfifo_head_drop limit 100000"],
    )],
    samples: &[Sample::new(
        "pfifo_head_drop",
        &["tc qdisc add dev D root pfifo_head_drop limit 8"],
    )],
    ..PFIFO
};

/// `fifo_parse_opt` for `kind` (bfifo's limit is a size), with its
/// messages.
fn parse(t: &mut Tokens, kind: &str) -> Result<QdiscOptions, TcError> {
    let mut limit = None;
    while let Some(tok) = t.next() {
        match tok {
            "limit" => {
                let v = t.value(|| incomplete("limit"))?;
                let parsed = if kind == "bfifo" {
                    parse_size(v).ok()
                } else {
                    v.parse::<u32>().ok().map(u64::from)
                };
                limit = Some(parsed.ok_or_else(|| {
                    TcError::new(format!("{kind}: Illegal value for \"limit\": \"{v}\""))
                })?);
            }
            other => {
                return Err(TcError::new(format!(
                    "{kind}: unknown parameter \"{other}\"\n\
                     Usage: ... <[p|b]fifo | pfifo_head_drop> [ limit NUMBER ]"
                )))
            }
        }
    }
    Ok(options(limit))
}

/// What `fifo_parse_opt` sends: `struct tc_fifo_qopt` when a limit is
/// given (packets, or bytes for bfifo), nothing otherwise.
pub fn options(limit: Option<u64>) -> QdiscOptions {
    limit.map_or(QdiscOptions::None, |limit| {
        QdiscOptions::Fifo(FifoOptions { limit })
    })
}

/// `fifo_print_opt`.
fn print(o: &QdiscOptions, bytes: bool) -> Option<Printed> {
    let QdiscOptions::Fifo(o) = o else {
        return None;
    };
    let limit = if bytes {
        format!("limit {}", sprint_size(o.limit))
    } else {
        format!("limit {}p", o.limit)
    };
    let mut json = crate::tc::syntax::JsonObj::new();
    json.insert("limit", json!(o.limit));
    Some(Printed::same(limit, json))
}

#[cfg(test)]
mod tests {
    use crate::qdisc::fifo::{Fifo, FifoKind, FifoOptions};
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::{Qdisc, QdiscCtx, QdiscOptions};
    use crate::tc::show::qdisc_options;
    use crate::tc::syntax::parse_qdisc;
    use crate::time::Instant;

    fn fifo(kind: FifoKind, words: &[&str]) -> Result<Fifo, crate::tc::TcError> {
        let o = parse_qdisc(BUILTIN, kind.name(), words)?;
        Ok(Fifo::build(kind, QdiscCtx::default(), &o)?)
    }

    fn plain(q: &Fifo) -> String {
        qdisc_options(&q.dump(Instant::ZERO)).plain
    }

    #[test]
    fn defaults_and_printing() {
        let q = Fifo::new(FifoKind::Pfifo, QdiscCtx::default());
        assert_eq!(plain(&q), "limit 1000p");
        let b = fifo(FifoKind::Bfifo, &["limit", "10kb"]).unwrap();
        assert_eq!(plain(&b), "limit 10Kb");
        assert!(fifo(FifoKind::Pfifo, &["limit", "x"]).is_err());
        assert!(fifo(FifoKind::Pfifo, &["bogus"]).is_err());
    }

    #[test]
    fn parses_like_tc() {
        let parse = |kind, words: &[&str]| parse_qdisc(BUILTIN, kind, words);
        assert_eq!(parse("pfifo", &[]), Ok(QdiscOptions::None));
        assert_eq!(
            parse("pfifo_head_drop", &["limit", "7"]),
            Ok(QdiscOptions::Fifo(FifoOptions { limit: 7 }))
        );
        assert_eq!(
            parse("bfifo", &["limit", "2kb"]),
            Ok(QdiscOptions::Fifo(FifoOptions { limit: 2048 }))
        );
        assert_eq!(
            parse("pfifo", &["limit"]).unwrap_err().0,
            "Command line is not complete. Try option \"help\"\n(\"limit\" needs a value)"
        );
        assert_eq!(
            parse("pfifo", &["limit", "1kb"]).unwrap_err().0,
            "pfifo: Illegal value for \"limit\": \"1kb\""
        );
        assert_eq!(
            parse("bfifo", &["bogus"]).unwrap_err().0,
            "bfifo: unknown parameter \"bogus\"\nUsage: ... <[p|b]fifo | pfifo_head_drop> [ limit NUMBER ]"
        );
        let p = qdisc_options(
            &Fifo::with_limit(FifoKind::PfifoHeadDrop, QdiscCtx::default(), 5).dump(Instant::ZERO),
        );
        assert_eq!(
            (p.plain.as_str(), p.detail.as_str()),
            ("limit 5p", "limit 5p")
        );
        assert_eq!(p.json["limit"], serde_json::json!(5));
    }
}
