//! hhf through the real path (net/sched/sch_hhf.c): one CUBIC bulk flow is
//! classified a heavy hitter and queues in the heavy-hitter bucket up to
//! the limit, while a sparse ping, never heavy, is served from the
//! non-heavy bucket ahead of it and keeps the base RTT. Prints the figures.

use super::load;
use bloatbox::sim;

/// The number after `word` in `text`.
fn after(text: &str, word: &str) -> u64 {
    text.split_whitespace()
        .skip_while(|w| *w != word)
        .nth(1)
        .and_then(|n| n.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| panic!("no {word} in {text}"))
}

#[test]
fn hhf_keeps_the_mice_fast_while_the_elephant_is_heavy() {
    let sc = load("hhf_mice.toml");
    let r = sim::run(&sc).unwrap();
    let l2r = &r.directions[0];
    println!("{}\n{}", r.table(), l2r.tc);
    // The bulk flow was admitted to the table (once: it never idles for
    // evict_timeout) and is still there; no flow was turned away.
    assert_eq!(after(&l2r.tc, "tot_hh"), 1, "{}", l2r.tc);
    assert_eq!(after(&l2r.tc, "cur_hh"), 1, "{}", l2r.tc);
    assert_eq!(after(&l2r.tc, "hh_overlimit"), 0, "{}", l2r.tc);
    // CUBIC fills the heavy bucket to the limit: hhf drops from it.
    assert!(after(&l2r.tc, "drop_overlimit") > 0, "{}", l2r.tc);
    let hhf_drops = after(&l2r.tc, "(dropped");
    assert_eq!(after(&l2r.tc, "drop_overlimit"), hhf_drops);
    let bulk = r.flow("bulk").unwrap();
    assert!(bulk.throughput_bps > 85e6, "{}", bulk.throughput_bps);
    // The bulk flow's frames wait in the heavy bucket; the ping's go
    // first: its one-way delay is the link's 5 ms plus a frame or two.
    let ping = r.flow("ping").unwrap();
    let (bulk_owd, ping_owd) = (bulk.owd_mean_ns.unwrap(), ping.owd_mean_ns.unwrap());
    println!("owd mean: bulk {bulk_owd} ns, ping {ping_owd} ns");
    assert!(ping_owd < 5_500_000.0, "ping owd {ping_owd} ns");
    assert!(bulk_owd > ping_owd + 3_000_000.0, "bulk owd {bulk_owd} ns");
    assert_eq!(ping.forward.dropped_pkts, 0);
    let rtt = ping.rtt.unwrap();
    assert!(rtt.p99 < 11_000_000, "ping rtt p99 {} ns", rtt.p99);
    assert_eq!(sim::run(&sc).unwrap().trace_hash, r.trace_hash);
}

/// The TUI's qdisc line and the control socket's snapshot carry hhf's
/// options and xstats: the standard loads (a bulk flow among them) through
/// hhf both ways.
#[test]
fn the_tui_and_the_control_socket_show_hhf_xstats() {
    use bloatbox::dir::Dir;
    use bloatbox::qdisc::kinds::BUILTIN;
    use bloatbox::qdisc::tree::DevSpec;
    use bloatbox::tui::fixtures::{link_params, Scenario as TuiScenario};
    let tree = |dir: Dir| {
        let line = format!(
            "tc qdisc add dev {} root hhf limit 200 admit_bytes 3000",
            dir.dev()
        );
        bloatbox::tc::build_tree(DevSpec::new(dir, BUILTIN), &[line]).unwrap()
    };
    let mut sc = TuiScenario::new(
        Box::new(tree(Dir::LeftToRight)),
        Box::new(tree(Dir::RightToLeft)),
        link_params(),
    );
    sc.add_standard_loads();
    let snaps = sc.snapshots(100, 1_000_000);
    let json = serde_json::to_string(snaps.last().unwrap()).unwrap();
    assert!(json.contains("\"hh_tot_count\":"), "{json}");
    let mut app = bloatbox::tui::App::new();
    for snap in snaps {
        app.on_snapshot(snap);
    }
    let root = &app.view().tree[0];
    assert_eq!(root.kind, "hhf");
    assert_eq!(
        root.options,
        "limit 200p quantum 1514b hh_limit 2048 reset_timeout 40ms admit_bytes 3000b evict_timeout 1s non_hh_weight 2"
    );
    let line = root
        .xstats
        .iter()
        .find(|l| l.starts_with("drop_overlimit "))
        .unwrap_or_else(|| panic!("no hhf xstats in {:?}", root.xstats));
    println!("{line}");
    assert!(after(line, "tot_hh") >= 1, "{line}");
}
