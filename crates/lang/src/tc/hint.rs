//! Likely typos in the values of the tc languages, which tc takes as
//! written and bloatbox warns about: a bare number as a rate (tc reads
//! bit/s), a rate below 10 kbit/s, a rate in bytes per second (`mbps` is
//! megabytes/s in tc, `mbit` megabits), and a time without a unit (tc reads
//! µs). Each hint says what was understood and what was probably meant.
//! The config, `set`, `tc` and the TUI's prompts all ask here, so a value
//! means the same and warns the same wherever it is typed.

use crate::units::{parse_rate, parse_time_ns, print_rate, sprint_time};

/// Below this a rate is probably a typo: a 1514-byte frame takes 1.2 s.
const SLOW_BITS_PS: u64 = 10_000;

/// The tc keywords whose value is a rate, and those whose value is a time.
const RATE_WORDS: [&str; 3] = ["rate", "ceil", "peakrate"];
const TIME_WORDS: [&str; 5] = ["latency", "target", "interval", "ce_threshold", "delay"];
/// The kinds whose `target` is a frame count, not a time (tc-sfb(8)'s
/// bin target).
const FRAME_TARGET_KINDS: [&str; 1] = ["sfb"];

/// `text` as number and unit, when it starts with a number.
fn number_and_unit(text: &str) -> Option<(&str, &str)> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    (end > 0).then(|| text.split_at(end))
}

/// The hint for a rate as typed, if it is a likely typo.
pub fn rate(text: &str) -> Option<String> {
    let bytes = parse_rate(text).ok()?;
    let (n, unit) = number_and_unit(text)?;
    let lower = unit.to_ascii_lowercase();
    if let Some(prefix) = lower.strip_suffix("bps") {
        return Some(format!(
            "rate \"{text}\" is {}: tc's \"{unit}\" counts bytes per second; for bits per second write \"{n}{prefix}bit\"",
            print_rate(bytes)
        ));
    }
    if bytes == 0 {
        return None;
    }
    let frame_ns = 1514 * 1_000_000_000 / bytes;
    if unit.is_empty() || bytes < SLOW_BITS_PS / 8 {
        let why = if unit.is_empty() {
            "a bare number is bit/s in tc"
        } else {
            "below 10kbit"
        };
        return Some(format!(
            "rate \"{text}\" is {} ({why}): a 1514-byte frame takes {} on the wire; did you mean \"{n}mbit\"?",
            print_rate(bytes),
            sprint_time(frame_ns / 1000)
        ));
    }
    None
}

/// The hint for a time as typed, if it has no unit.
pub fn time(text: &str) -> Option<String> {
    let (n, unit) = number_and_unit(text)?;
    if !unit.is_empty() || parse_time_ns(text).ok()? == 0 {
        return None;
    }
    Some(format!(
        "time \"{text}\" has no unit: tc reads it as {n}us; did you mean \"{n}ms\" or \"{n}s\"?"
    ))
}

/// Where bloatbox has what a kernel qdisc it lacks does, for the kinds
/// netdev threads paste most.
pub fn missing_kind(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "gred" => "bloatbox has no gred; the nearest AQM here: red, choke, sfb or pie, or fq_codel and fq_pie per flow",
        "cbq" => "bloatbox has no cbq; htb and hfsc shape classes, qfq, drr and ets schedule them by weight or quantum",
        "ingress" | "clsact" => "bloatbox has no ingress hook: each direction's egress qdisc is the bottleneck (dev left for left→right, dev right for right→left)",
        _ => return None,
    })
}

/// How to give a single-queue device the TX queues mq needs, at run time
/// or in the configuration.
pub fn single_queue(dev: crate::dir::Dir) -> String {
    let d = dev.dev();
    format!(
        "dev {d} has one TX queue: give it more first with `bloatbox set {d}.tx_queues=4` \
         (or `bloatbox ethtool -L {d} tx 4`; tx_queues = 4 in the configuration), then add mq \
         again; or write \"mq queues 4\""
    )
}

/// The hints for the values in tc words (`rate 100 burst 10kb ...`).
pub fn words(words: &[&str]) -> Vec<String> {
    let frame_target = words.iter().any(|w| FRAME_TARGET_KINDS.contains(w));
    words
        .windows(2)
        .filter_map(|w| {
            if RATE_WORDS.contains(&w[0]) {
                rate(w[1])
            } else if TIME_WORDS.contains(&w[0]) && !(frame_target && w[0] == "target") {
                time(w[1])
            } else {
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_that_are_probably_typos() {
        let h = rate("100").unwrap();
        assert!(
            h.starts_with("rate \"100\" is 96bit (a bare number is bit/s in tc)"),
            "{h}"
        );
        assert!(h.contains("did you mean \"100mbit\"?"), "{h}");
        assert!(h.contains("takes 126s on the wire"), "{h}");
        let h = rate("5kbit").unwrap();
        assert!(h.contains("below 10kbit"), "{h}");
        let h = rate("100mbps").unwrap();
        assert!(
            h.starts_with("rate \"100mbps\" is 800Mbit: tc's \"mbps\" counts bytes"),
            "{h}"
        );
        assert!(h.ends_with("write \"100mbit\""), "{h}");
        assert!(rate("12KBps").unwrap().contains("\"12kbit\""));
        // A rate near u64::MAX bytes/s is fine, not an overflow (found by
        // the tc fuzz target: `bytes * 8` overflowed).
        assert_eq!(rate("90001512873769mbit"), None);
        assert!(
            rate("73786976294838206460").is_some(),
            "a bare number still warns"
        );
        for fine in [
            "100mbit",
            "10kbit",
            "1gbit",
            "0",
            "unlimited",
            "garbage",
            "1.5gibit",
        ] {
            assert_eq!(rate(fine), None, "{fine}");
        }
    }

    #[test]
    fn times_without_a_unit() {
        let h = time("20").unwrap();
        assert_eq!(
            h,
            "time \"20\" has no unit: tc reads it as 20us; did you mean \"20ms\" or \"20s\"?"
        );
        for fine in ["20ms", "0", "5us", "1s", "x", ""] {
            assert_eq!(time(fine), None, "{fine}");
        }
    }

    #[test]
    fn kernel_kinds_bloatbox_lacks_point_to_what_it_has() {
        assert_eq!(missing_kind("netem"), None, "bloatbox has netem");
        assert_eq!(missing_kind("cake"), None, "bloatbox has cake");
        assert_eq!(missing_kind("fq"), None, "bloatbox has fq");
        assert_eq!(missing_kind("hhf"), None, "bloatbox has hhf");
        assert_eq!(missing_kind("prio"), None, "bloatbox has prio");
        assert!(missing_kind("cbq").unwrap().contains("htb"));
        assert_eq!(missing_kind("pie"), None, "bloatbox has pie");
        assert!(missing_kind("gred").unwrap().contains("red"));
        assert_eq!(missing_kind("sfb"), None, "bloatbox has sfb");
        assert_eq!(missing_kind("fq_codel"), None);
    }

    #[test]
    fn tc_words_hint_rates_and_times_only() {
        let w = [
            "rate", "100", "burst", "10", "latency", "50", "peakrate", "1mbps",
        ];
        let hints = words(&w);
        assert_eq!(hints.len(), 3, "{hints:?}");
        assert!(hints[0].contains("\"100\"") && hints[1].contains("\"50\""));
        assert!(words(&["rate", "100mbit", "burst", "10", "latency", "50ms"]).is_empty());
        // sfb's target counts frames; codel's is a time.
        assert!(words(&["sfb", "limit", "200", "target", "10"]).is_empty());
        assert_eq!(words(&["codel", "target", "10"]).len(), 1);
    }
}
