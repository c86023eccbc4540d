//! The extended statistics of `tc -s [-j] qdisc|class show`: the typed
//! values a discipline dumps (`crate::qdisc::dump::Xstats`, the kernel's
//! `TCA_STATS_APP` structs) printed by their kind's printer
//! (`crate::tc::syntax::Syntax::xstats`, iproute2's `print_xstats` of each
//! `tc/q_<kind>.c`), as text lines and as the keys `-j` adds to the
//! qdisc's or class's object. `crate::tc::show` places them; the TUI
//! shows the same lines.

use crate::qdisc::dump::Xstats;
use crate::tc::syntax::{syntax, JsonObj};

/// Appends the lines `tc -s` prints for `x`, xstats of a `kind` qdisc or
/// class, each with its leading spaces and a newline (nothing for a kind
/// without an xstats printer). HTB's end with an empty line:
/// `htb_print_xstats` prints its own newline before `print_class` adds
/// one.
pub fn write_text(out: &mut String, kind: &str, x: &Xstats) {
    if let Some(p) = syntax(kind).and_then(|s| s.xstats) {
        let _ = (p.text)(out, x);
    }
}

/// The lines of `write_text`, trimmed, without the empty ones (what the
/// TUI lists).
pub fn trimmed_lines(kind: &str, x: &Xstats) -> Vec<String> {
    let mut text = String::new();
    write_text(&mut text, kind, x);
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// The keys `tc -s -j` prints for `x`, xstats of a `kind` qdisc or class,
/// at the level of the qdisc's or class's counters.
pub fn json(kind: &str, x: &Xstats) -> JsonObj {
    syntax(kind)
        .and_then(|s| s.xstats)
        .and_then(|p| (p.json)(x))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::codel::CodelXstats;
    use crate::qdisc::fq_codel::{FqCodelClassXstats, FqCodelXstats};
    use crate::qdisc::htb::HtbXstats;
    use crate::qdisc::sfq::SfqXstats;
    use serde_json::json;

    /// The kind whose printer prints `x`.
    fn kind(x: &Xstats) -> &'static str {
        match x {
            Xstats::FqCodel(_) | Xstats::FqCodelClass(_) => "fq_codel",
            Xstats::Codel(_) => "codel",
            Xstats::SfqClass(_) => "sfq",
            Xstats::HtbClass(_) => "htb",
            Xstats::HfscClass(_) => "hfsc",
            Xstats::DrrClass(_) => "drr",
            Xstats::Red(_) => "red",
            Xstats::Choke(_) => "choke",
            Xstats::Sfb(_) => "sfb",
            Xstats::Pie(_) => "pie",
            Xstats::FqPie(_) => "fq_pie",
            Xstats::Fq(_) => "fq",
            Xstats::Dualpi2(_) => "dualpi2",
            Xstats::Hhf(_) => "hhf",
            Xstats::Cake(_) | Xstats::CakeClass(_) => "cake",
            Xstats::Other(_) => panic!("no built-in kind prints {x:?}"),
        }
    }

    fn text(x: Xstats) -> String {
        let mut out = String::new();
        write_text(&mut out, kind(&x), &x);
        out
    }

    #[test]
    fn fq_codel_prints_optional_counters_only_when_set() {
        let mut s = FqCodelXstats::default();
        assert_eq!(
            text(Xstats::FqCodel(s)),
            "  maxpacket 0 drop_overlimit 0 new_flow_count 0 ecn_mark 0\n  new_flows_len 0 old_flows_len 0\n"
        );
        s.memory_usage = 1514;
        s.old_flows_len = 2;
        assert_eq!(
            text(Xstats::FqCodel(s)),
            "  maxpacket 0 drop_overlimit 0 new_flow_count 0 ecn_mark 0 memory_used 1514\n  new_flows_len 0 old_flows_len 2\n"
        );
        let j = json(kind(&Xstats::FqCodel(s)), &Xstats::FqCodel(s));
        assert_eq!(j["memory_used"], json!(1514));
        assert!(j.get("ce_mark").is_none());
    }

    #[test]
    fn codel_and_fq_codel_flows_print_drop_next_as_iproute2() {
        let c = CodelXstats {
            count: 1,
            lastcount: 1,
            ldelay_us: 19_000,
            drop_next_us: 21_000,
            dropping: true,
            ..CodelXstats::default()
        };
        assert_eq!(
            text(Xstats::Codel(c)),
            "  count 1 lastcount 1 ldelay 19ms dropping drop_next 21ms\n  maxpacket 0 ecn_mark 0 drop_overlimit 0\n"
        );
        let f = FqCodelClassXstats {
            deficit: -12,
            ldelay_us: 2,
            drop_next_us: -3,
            ..FqCodelClassXstats::default()
        };
        assert_eq!(
            trimmed_lines(kind(&Xstats::FqCodelClass(f)), &Xstats::FqCodelClass(f)),
            vec!["deficit -12 count 0 lastcount 0 ldelay 2us"]
        );
        assert!(
            json(kind(&Xstats::FqCodelClass(f)), &Xstats::FqCodelClass(f))
                .get("drop_next")
                .is_none()
        );
        let f = FqCodelClassXstats {
            dropping: true,
            ..f
        };
        assert!(text(Xstats::FqCodelClass(f)).ends_with(" dropping drop_next -3us\n"));
    }

    #[test]
    fn drr_classes_print_the_deficit_as_a_size_in_text_only() {
        // tc/q_drr.c drr_print_xstats: print_size(PRINT_FP, ..., " deficit %s ").
        let x = Xstats::DrrClass(crate::qdisc::drr::DrrXstats { deficit: 3072 });
        assert_eq!(text(x.clone()), " deficit 3Kb \n");
        assert!(json("drr", &x).keys().next().is_none());
    }

    #[test]
    fn sfq_and_htb_classes() {
        assert_eq!(
            text(Xstats::SfqClass(SfqXstats { allot: 1414 })),
            "  allot 1414\n"
        );
        let h = HtbXstats {
            lends: 3,
            borrows: 1,
            tokens: -5,
            ctokens: 7,
            ..HtbXstats::default()
        };
        assert_eq!(
            text(Xstats::HtbClass(h)),
            " lended: 3 borrowed: 1 giants: 0\n tokens: -5 ctokens: 7\n\n"
        );
        assert_eq!(
            trimmed_lines(kind(&Xstats::HtbClass(h)), &Xstats::HtbClass(h)).len(),
            2
        );
        assert_eq!(
            json(kind(&Xstats::HtbClass(h)), &Xstats::HtbClass(h))["tokens"],
            json!(-5)
        );
    }
}
