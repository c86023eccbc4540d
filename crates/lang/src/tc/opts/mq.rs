//! The tc syntax of mq: iproute2's mq takes no options and prints none;
//! bloatbox adds `queues N` (the emulated device's TX queue count, 2..64),
//! checked here as tc checks its arguments.

use crate::qdisc::mq::{MqOptions, MAX_QUEUES};
use crate::qdisc::QdiscOptions;
use crate::tc::syntax::{Bench, Printed, Sample, Syntax};
use crate::tc::tokens::Tokens;
use crate::tc::TcError;

/// mq's syntax: iproute2's tc/q_mq.c (no options there); `queues N` is
/// bloatbox's extension (`MqOptions`).
pub static SYNTAX: Syntax = Syntax {
    kind: "mq",
    qdisc: parse,
    class: None,
    // mq_dump sends no TCA_OPTIONS, its classes none either.
    print: |_| Some(Printed::default()),
    print_class: |_| Some(Printed::default()),
    example: None,
    table: None,
    trailing_space: true,
    xstats: None,
    benches: &[Bench {
        tx_queues: 4,
        ..Bench::new(
            "mq_4_fq_codel",
            &[
                "tc qdisc add dev D root handle 1: mq",
                "tc qdisc add dev D parent 1:1 fq_codel",
                "tc qdisc add dev D parent 1:2 fq_codel",
                "tc qdisc add dev D parent 1:3 fq_codel",
                "tc qdisc add dev D parent 1:4 fq_codel",
            ],
        )
    }],
    samples: &[Sample {
        tx_queues: 2,
        ..Sample::new(
            "mq+fq_codel",
            &[
                "tc qdisc add dev D root handle 1: mq",
                "tc qdisc add dev D parent 1:1 fq_codel limit 30 ecn",
                "tc qdisc add dev D parent 1:2 fq_codel limit 30 memory_limit 64kb",
            ],
        )
    }],
};

/// `[ queues N ]`, and nothing else.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    match t.rest() {
        [] => Ok(QdiscOptions::None),
        ["queues", v] => {
            let queues = v
                .parse::<u16>()
                .ok()
                .filter(|n| (2..=MAX_QUEUES).contains(n))
                .ok_or_else(|| {
                    TcError::new(format!(
                        "Error: argument \"{v}\" is wrong: \"queues\" must be 2..{MAX_QUEUES}"
                    ))
                })?;
            Ok(QdiscOptions::Mq(MqOptions { queues }))
        }
        [first, ..] => Err(TcError::new(format!(
            "What is \"{first}\"?\nUsage: ... mq [ queues N ]"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::mq::MqOptions;
    use crate::qdisc::QdiscOptions;
    use crate::tc::syntax::parse_qdisc;

    #[test]
    fn parses_queues_only() {
        let parse = |words: &[&str]| parse_qdisc(BUILTIN, "mq", words).map_err(|e| e.0);
        assert_eq!(parse(&[]), Ok(QdiscOptions::None));
        assert_eq!(
            parse(&["queues", "8"]),
            Ok(QdiscOptions::Mq(MqOptions { queues: 8 }))
        );
        assert_eq!(
            parse(&["queues", "1"]),
            Err("Error: argument \"1\" is wrong: \"queues\" must be 2..64".into())
        );
        // Past the emulated device's limit (each child is a whole qdisc).
        assert!(parse(&["queues", "4096"]).is_err());
        assert_eq!(
            parse(&["bogus"]),
            Err("What is \"bogus\"?\nUsage: ... mq [ queues N ]".into())
        );
        assert!(parse(&["queues"]).is_err());
        assert!(parse(&["queues", "8", "x"]).is_err());
    }
}
