//! The tc syntax of pfifo_fast: it takes no options (iproute2 has no
//! parser for it) and prints its bands and priomap as tc/q_prio.c
//! `prio_print_opt` does (`bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1`).

use crate::qdisc::pfifo_fast::PfifoFastOptions;
use crate::qdisc::QdiscOptions;
use crate::tc::keys::KeyTable;
use crate::tc::syntax::{replace_root, Bench, Printed, Sample, Syntax};
use crate::tc::tokens::Tokens;
use crate::tc::TcError;
use serde_json::json;

/// pfifo_fast's syntax: no options (iproute2's tc/q_prio.c prints its bands and
/// priomap).
pub static SYNTAX: Syntax = Syntax {
    kind: "pfifo_fast",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(|dir, _| vec![format!("{} pfifo_fast", replace_root(dir))]),
    table: Some(&KeyTable::qdisc(&[])),
    trailing_space: false,
    xstats: None,
    benches: &[Bench::new(
        "pfifo_fast",
        &["tc qdisc add dev D root pfifo_fast"],
    )],
    samples: &[Sample::new(
        "pfifo_fast",
        &["tc qdisc add dev D root pfifo_fast"],
    )],
};

fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    match t.next() {
        // iproute2 has no parser for it: tc_qdisc_modify says so and
        // returns -1 (exit 255).
        Some(tok) => Err(TcError::new(format!(
            "qdisc 'pfifo_fast' does not support option parsing\n(pfifo_fast takes no options; got \"{tok}\")"
        ))
        .exit(TcError::ARGS)),
        None => Ok(QdiscOptions::None),
    }
}

fn print(o: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::PfifoFast(o) = o else {
        return None;
    };
    Some(print_prio_qopt(o))
}

/// `prio_print_opt`: a `tc_prio_qopt` (pfifo_fast's and prio's).
pub fn print_prio_qopt(o: &PfifoFastOptions) -> Printed {
    let map: Vec<String> = o.priomap.iter().map(|b| b.to_string()).collect();
    let text = format!("bands {} priomap {}", o.bands, map.join(" "));
    let mut json = crate::tc::syntax::JsonObj::new();
    json.insert("bands", json!(o.bands));
    json.insert("priomap", json!(o.priomap));
    // tc/q_prio.c prio_print_opt: "multiqueue" is false in JSON when the
    // dump has no TCA_PRIO_MQ (pfifo_fast's never has, nor has prio's:
    // prio_dump puts the struct alone).
    json.insert("multiqueue", json!(false));
    Printed::same(text, json)
}

#[cfg(test)]
mod tests {
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::pfifo_fast::PfifoFast;
    use crate::qdisc::{Qdisc, QdiscCtx, QdiscOptions};
    use crate::tc::show::qdisc_options;
    use crate::tc::syntax::parse_qdisc;
    use crate::time::Instant;

    #[test]
    fn prints_like_tc() {
        let q = PfifoFast::new(QdiscCtx::default());
        let p = qdisc_options(&q.dump(Instant::ZERO));
        assert_eq!(p.plain, "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1");
        assert_eq!(p.detail, p.plain);
        assert_eq!(p.json["bands"], serde_json::json!(3));
        assert_eq!(
            p.json["priomap"],
            serde_json::json!([1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1])
        );
    }

    #[test]
    fn takes_no_options() {
        assert_eq!(
            parse_qdisc(BUILTIN, "pfifo_fast", &[]),
            Ok(QdiscOptions::None)
        );
        assert_eq!(
            parse_qdisc(BUILTIN, "pfifo_fast", &["limit", "5"])
                .unwrap_err()
                .0,
            "qdisc 'pfifo_fast' does not support option parsing\n(pfifo_fast takes no options; got \"limit\")"
        );
    }
}
