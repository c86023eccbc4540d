//! The extended statistics of `tc -s [-j] qdisc|class show`: the typed
//! values a discipline dumps (`crate::qdisc::dump::Xstats`, the kernel's
//! `TCA_STATS_APP` structs) printed as iproute2 prints them, as text lines
//! (tc/q_fq_codel.c `fq_codel_print_xstats`, tc/q_codel.c
//! `codel_print_xstats`, tc/q_sfq.c `sfq_print_xstats`, tc/q_htb.c
//! `htb_print_xstats`) and as the keys `-j` adds to the qdisc's or class's
//! object. `crate::tc::show` places them; the TUI shows the same lines.

use crate::qdisc::dump::{CodelXstats, FqCodelClassXstats, FqCodelXstats, HtbXstats, Xstats};
use crate::units::{sprint_time, sprint_time_signed};
use serde_json::json;
use std::fmt::Write;

/// Appends the lines `tc -s` prints for `x`, each with its leading spaces
/// and a newline. HTB's end with an empty line: `htb_print_xstats` prints
/// its own newline before `print_class` adds one.
pub fn write_text(out: &mut String, x: &Xstats) {
    match x {
        Xstats::FqCodel(s) => fq_codel_text(out, s),
        Xstats::FqCodelClass(s) => fq_codel_class_text(out, s),
        Xstats::Codel(s) => codel_text(out, s),
        Xstats::SfqClass(s) => {
            let _ = writeln!(out, "  allot {}", s.allot);
        }
        Xstats::HtbClass(s) => htb_text(out, s),
    }
}

/// The lines of `write_text`, trimmed, without the empty ones (what the
/// TUI lists).
pub fn trimmed_lines(x: &Xstats) -> Vec<String> {
    let mut text = String::new();
    write_text(&mut text, x);
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// The keys `tc -s -j` prints for `x` at the level of the qdisc's or
/// class's counters.
pub fn json(x: &Xstats) -> crate::tc::kinds::JsonObj {
    let mut xj = crate::tc::kinds::JsonObj::new();
    match x {
        Xstats::FqCodel(s) => {
            xj.insert("maxpacket", json!(s.maxpacket));
            xj.insert("drop_overlimit", json!(s.drop_overlimit));
            xj.insert("new_flow_count", json!(s.new_flow_count));
            xj.insert("ecn_mark", json!(s.ecn_mark));
            for (name, v) in fq_codel_optional(s) {
                if v != 0 {
                    xj.insert(name, json!(v));
                }
            }
            xj.insert("new_flows_len", json!(s.new_flows_len));
            xj.insert("old_flows_len", json!(s.old_flows_len));
        }
        Xstats::FqCodelClass(s) => {
            xj.insert("deficit", json!(s.deficit));
            xj.insert("count", json!(s.count));
            xj.insert("lastcount", json!(s.lastcount));
            xj.insert("ldelay", json!(s.ldelay_us));
            if s.dropping {
                xj.insert("dropping", json!(true));
                xj.insert("drop_next", json!(s.drop_next_us));
            }
        }
        Xstats::Codel(s) => {
            xj.insert("count", json!(s.count));
            xj.insert("lastcount", json!(s.lastcount));
            xj.insert("ldelay", json!(s.ldelay_us));
            if s.dropping {
                xj.insert("dropping", json!(true));
            }
            xj.insert("drop_next", json!(s.drop_next_us));
            xj.insert("maxpacket", json!(s.maxpacket));
            xj.insert("ecn_mark", json!(s.ecn_mark));
            xj.insert("drop_overlimit", json!(s.drop_overlimit));
            if s.ce_mark != 0 {
                xj.insert("ce_mark", json!(s.ce_mark));
            }
        }
        Xstats::SfqClass(s) => {
            xj.insert("allot", json!(s.allot));
        }
        Xstats::HtbClass(s) => {
            xj.insert("lended", json!(s.lends));
            xj.insert("borrowed", json!(s.borrows));
            xj.insert("giants", json!(s.giants));
            xj.insert("tokens", json!(s.tokens));
            xj.insert("ctokens", json!(s.ctokens));
        }
    }
    xj
}

/// The counters `fq_codel_print_xstats` prints only when non-zero, by the
/// names it prints them under.
fn fq_codel_optional(s: &FqCodelXstats) -> [(&'static str, u64); 3] {
    [
        ("ce_mark", s.ce_mark),
        ("memory_used", s.memory_usage),
        ("drop_overmemory", s.drop_overmemory),
    ]
}

fn fq_codel_text(out: &mut String, s: &FqCodelXstats) {
    let _ = write!(
        out,
        "  maxpacket {} drop_overlimit {} new_flow_count {} ecn_mark {}",
        s.maxpacket, s.drop_overlimit, s.new_flow_count, s.ecn_mark
    );
    for (name, v) in fq_codel_optional(s) {
        if v != 0 {
            let _ = write!(out, " {name} {v}");
        }
    }
    let _ = writeln!(
        out,
        "\n  new_flows_len {} old_flows_len {}",
        s.new_flows_len, s.old_flows_len
    );
}

fn fq_codel_class_text(out: &mut String, s: &FqCodelClassXstats) {
    let _ = write!(
        out,
        "  deficit {} count {} lastcount {} ldelay {}",
        s.deficit,
        s.count,
        s.lastcount,
        sprint_time(s.ldelay_us)
    );
    if s.dropping {
        let _ = write!(
            out,
            " dropping drop_next {}",
            sprint_time_signed(s.drop_next_us)
        );
    }
    out.push('\n');
}

fn codel_text(out: &mut String, s: &CodelXstats) {
    let _ = write!(
        out,
        "  count {} lastcount {} ldelay {}",
        s.count,
        s.lastcount,
        sprint_time(s.ldelay_us)
    );
    if s.dropping {
        out.push_str(" dropping");
    }
    let _ = write!(
        out,
        " drop_next {}\n  maxpacket {} ecn_mark {} drop_overlimit {}",
        sprint_time_signed(s.drop_next_us),
        s.maxpacket,
        s.ecn_mark,
        s.drop_overlimit
    );
    if s.ce_mark != 0 {
        let _ = write!(out, " ce_mark {}", s.ce_mark);
    }
    out.push('\n');
}

fn htb_text(out: &mut String, s: &HtbXstats) {
    let _ = writeln!(
        out,
        " lended: {} borrowed: {} giants: {}",
        s.lends, s.borrows, s.giants
    );
    let _ = writeln!(out, " tokens: {} ctokens: {}", s.tokens, s.ctokens);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::dump::SfqXstats;

    fn text(x: Xstats) -> String {
        let mut out = String::new();
        write_text(&mut out, &x);
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
        let j = json(&Xstats::FqCodel(s));
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
            trimmed_lines(&Xstats::FqCodelClass(f)),
            vec!["deficit -12 count 0 lastcount 0 ldelay 2us"]
        );
        assert!(json(&Xstats::FqCodelClass(f)).get("drop_next").is_none());
        let f = FqCodelClassXstats {
            dropping: true,
            ..f
        };
        assert!(text(Xstats::FqCodelClass(f)).ends_with(" dropping drop_next -3us\n"));
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
        assert_eq!(trimmed_lines(&Xstats::HtbClass(h)).len(), 2);
        assert_eq!(json(&Xstats::HtbClass(h))["tokens"], json!(-5));
    }
}
