//! fq's tc syntax checked against q_fq.c: the man page's lines shown as
//! tc prints them (text, `-d`, `-j`, `-s`), the words' attributes, tc's
//! and the kernel's refusals, the xstats' optional fields.

use super::*;
use crate::dir::Dir;
use crate::qdisc::kinds::BUILTIN;
use crate::tc::syntax::parse_qdisc;

use super::super::run_on_left as run;

fn parsed(args: &str) -> Result<FqOptions, String> {
    let words: Vec<&str> = args.split_whitespace().collect();
    match parse_qdisc(BUILTIN, "fq", &words).map_err(|e| e.0)? {
        QdiscOptions::Fq(o) => Ok(*o),
        other => panic!("fq parsed {other:?}"),
    }
}

fn shown(lines: &[&str]) -> String {
    run(lines).unwrap().unwrap()
}

const DEFAULTS: &str = "limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 weights 589824 196608 65536 quantum 3028b initial_quantum 15140b low_rate_threshold 550Kbit refill_delay 40ms timer_slack 10us horizon 10s horizon_drop offload_horizon 0us";

#[test]
fn the_defaults_show_as_tc_prints_them() {
    assert_eq!(
        shown(&["tc qdisc add dev left root fq", "tc -s qdisc show dev left"]),
        format!(
            "qdisc fq 8001: root refcnt 2 {DEFAULTS} \n \
             Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
             backlog 0b 0p requeues 0\n  \
             flows 0 (inactive 0 throttled 0) band0_pkts 0 band1_pkts 0 band2_pkts 0 next_packet_delay 10us\n  \
             gc 0 highprio 0 throttled 0\n"
        )
    );
    assert_eq!(
        shown(&["tc qdisc add dev left root fq", "tc -d qdisc show dev left"]),
        format!("qdisc fq 8001: root refcnt 2 {DEFAULTS} \n")
    );
}

#[test]
fn the_man_pages_options_parse_print_and_dump_as_json() {
    let add = "tc qdisc add dev left root fq limit 2000 flow_limit 50 quantum 1514 initial_quantum 3028 maxrate 5mbit buckets 1000 nopacing refill_delay 10ms low_rate_threshold 1mbit orphan_mask 255 timer_slack 50us ce_threshold 4ms horizon 2s horizon_cap";
    assert_eq!(
        shown(&[add, "tc qdisc show dev left"]),
        "qdisc fq 8001: root refcnt 2 limit 2000p flow_limit 50p buckets 1024 orphan_mask 255 nopacing bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 weights 589824 196608 65536 quantum 1514b initial_quantum 3028b maxrate 5Mbit low_rate_threshold 1Mbit refill_delay 12ms ce_threshold 4ms timer_slack 50us horizon 2s horizon_cap offload_horizon 0us \n"
    );
    assert_eq!(
        shown(&[add, "tc -j qdisc show dev left"]),
        "[{\"kind\":\"fq\",\"handle\":\"8001:\",\"root\":true,\"refcnt\":2,\"options\":{\"limit\":2000,\
         \"flow_limit\":50,\"buckets\":1024,\"orphan_mask\":255,\"pacing\":false,\"bands\":3,\
         \"priomap \":[1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1],\"weights \":[589824,196608,65536],\
         \"quantum\":1514,\"initial_quantum\":3028,\"maxrate\":625000,\"low_rate_threshold\":125000,\
         \"refill_delay\":12000,\"ce_threshold\":4000,\"timer_slack\":50000,\"horizon\":2000000,\
         \"horizon_cap\":null,\"offload_horizon\":0}}]\n"
    );
    let o = parsed("bands 3 priomap 0 0 0 0 1 1 1 1 2 2 2 2 2 2 2 2 weights 20000 20000 16384 buckets 3 defrate 1mbit pacing horizon_drop").unwrap();
    assert_eq!(o.priomap.unwrap().priomap[4..9], [1, 1, 1, 1, 2]);
    assert_eq!(o.weights, Some([20000, 20000, 16384]));
    // ilog2 rounds up; buckets 0 is not sent.
    assert_eq!(o.buckets_log, Some(2));
    assert_eq!(parsed("buckets 0").unwrap().buckets_log, None);
    assert_eq!(
        (o.defrate, o.pacing, o.horizon_drop),
        (Some(125_000), Some(1), Some(1))
    );
    assert_eq!(parsed("timer_slack 1500").unwrap().timer_slack, Some(1500));
}

#[test]
fn tc_and_the_kernel_refuse_as_they_do() {
    for (words, expected) in [
        ("bands 4 priomap", "\"bands\" must be 3"),
        ("bands 3 weights", "\"priomap\" expected"),
        ("bands 3 priomap 0 1", "Not enough elements in priomap"),
        (
            "bands 3 priomap 0 x",
            "Illegal \"priomap\" element, number in [0..2] expected",
        ),
        ("bands 3 priomap 0 3", "\"priomap\" element 3 too big"),
        ("weights 20000 20000", "Not enough elements in weights"),
        (
            "weights 20000 x 1",
            "Illegal \"weights\" element, positive number expected",
        ),
        (
            "weights 20000 16383 20000",
            "\"weight\" element 16383 too small",
        ),
        ("weights 20000 20000 20000 weights", "Duplicate \"weights\""),
        ("timer_slack 5s", "Illegal (out of range) \"timer_slack\""),
        ("help", USAGE),
    ] {
        assert_eq!(parsed(words).unwrap_err(), expected, "{words}");
    }
    let dup = format!("bands 3 priomap{} bands", " 1".repeat(16));
    assert_eq!(parsed(&dup).unwrap_err(), "Duplicate \"bands\"");
    assert!(parsed("drop_batch 3")
        .unwrap_err()
        .starts_with("What is \"drop_batch\"?\nUsage: ... fq\t[ limit"));
    // tc/q_fq.c names initial_quantum for a bad orphan_mask.
    assert!(parsed("orphan_mask x")
        .unwrap_err()
        .starts_with("Illegal \"initial_quantum\""));
    assert!(parsed("maxrate 10%")
        .unwrap_err()
        .starts_with("Illegal \"maxrate\""));
    assert!(parsed("maxrate 40gbit")
        .unwrap_err()
        .starts_with("Illegal \"maxrate\""));
    assert!(parsed("limit")
        .unwrap_err()
        .starts_with("Command line is not complete"));
    for (line, expected) in [
        ("fq buckets 1", "RTNETLINK answers: Invalid argument"),
        ("fq buckets 1000000", "RTNETLINK answers: Invalid argument"),
        (
            "fq initial_quantum 2000000",
            "RTNETLINK answers: Invalid argument",
        ),
        (
            "fq offload_horizon 1ms",
            "Error: sch_fq: invalid offload_horizon",
        ),
    ] {
        let e = run(&[&format!("tc qdisc add dev left root {line}")]).unwrap_err();
        assert!(e.0.starts_with(expected), "{line}: {}", e.0);
    }
}

#[test]
fn the_xstats_print_their_optional_fields_as_tc_does() {
    let s = FqXstats {
        flows: 12,
        inactive_flows: 9,
        throttled_flows: 2,
        band_pkt_count: [0, 40, 3],
        time_next_delayed_flow: 1_250_000,
        gc_flows: 4,
        fastpath_packets: 77,
        throttled: 31,
        unthrottle_latency_ns: 19_400,
        ce_mark: 5,
        flows_plimit: 6,
        horizon_caps: 2,
        band_drops: [0, 8, 0],
        ..FqXstats::default()
    };
    let mut out = String::new();
    fq_text(&mut out, &s);
    assert_eq!(
        out,
        "  flows 12 (inactive 9 throttled 2) band0_pkts 0 band1_pkts 40 band2_pkts 3 next_packet_delay 1.25ms\n  \
         gc 4 highprio 0 fastpath 77 throttled 31 latency 19.4us ce_mark 5 flows_plimit 6\n  \
         horizon_caps 2 band1_drops 8\n"
    );
    let j = serde_json::to_string(&fq_json(&s)).unwrap();
    assert_eq!(
        j,
        "{\"flows\":12,\"inactive\":9,\"throttled\":2,\"band0_pkts\":0,\"band1_pkts\":40,\"band2_pkts\":3,\
         \"next_packet_delay\":1250000,\"gc\":4,\"highprio\":0,\"fastpath\":77,\"throttled\":31,\
         \"latency\":19400,\"ce_mark\":5,\"flows_plimit\":6,\"horizon_caps\":2,\"band1_drops\":8}"
    );
}

#[test]
fn the_menu_line_samples_and_benches_build() {
    let line = &(SYNTAX.example.unwrap())(Dir::LeftToRight, 0)[0];
    assert_eq!(line, "tc qdisc replace dev left root fq");
    let lines = SYNTAX.samples.iter().flat_map(|s| s.lines);
    for l in lines.chain(SYNTAX.benches.iter().flat_map(|b| b.lines)) {
        let l = l.replace(" D ", " left ");
        assert!(run(&[&l]).is_ok(), "{l}");
    }
}
