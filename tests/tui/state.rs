//! What the TUI derives from successive snapshots of the real core: rates,
//! per-flow throughput, bounded history, the flattened qdisc tree, and the
//! event log (configuration changes, CoDel entering and leaving its
//! dropping state, overflow drops, command replies).

use bloatbox::datapath::TcFailure;
use bloatbox::dir::Dir;
use bloatbox::link::LinkParams;
use bloatbox::qdisc::fifo::{Fifo, FifoKind};
use bloatbox::qdisc::fq_codel::FqCodel;
use bloatbox::qdisc::pfifo_fast::PfifoFast;
use bloatbox::qdisc::tree::QdiscTree;
use bloatbox::qdisc::{tc_h_make, QdiscCtx};
use bloatbox::tc::TcError;
use bloatbox::time::NS_PER_MS;
use bloatbox::tui::fixtures::{app_after, link_params, root_ctx, Scenario};
use bloatbox::tui::state::{EventKind, Focus, EVENTS_LEN, HISTORY_LEN};
use bloatbox::tui::{Action, App, ControlError};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

const STEP: u64 = 100 * NS_PER_MS;

fn texts(app: &App, kind: EventKind) -> Vec<String> {
    app.events
        .iter()
        .filter(|e| e.kind == kind)
        .map(|e| e.text.clone())
        .collect()
}

#[test]
fn achieved_rate_and_flow_throughput_follow_the_line_rate() {
    let mut s = Scenario::fq_codel_under_load();
    let app = app_after(&mut s, 20, STEP);
    let v = &app.dirs[Dir::LeftToRight.index()];
    let line = link_params().rate_bytes_ps * 8;
    // Offered 1.25× the line rate: the link runs full.
    assert!(
        v.achieved_bps.abs_diff(line) < line / 20,
        "{} vs {line}",
        v.achieved_bps
    );
    let sum: u64 = v.flows.iter().map(|f| f.throughput_bps).sum();
    assert!(sum.abs_diff(line) < line / 10, "flows {sum} vs {line}");
    // The sparse ping flow gets what it offers (1000 B/s), no more.
    let ping = v
        .flows
        .iter()
        .find(|f| f.flow.is_some_and(|k| k.dst_port == 7))
        .unwrap();
    assert!(ping.throughput_bps <= 16_000, "{}", ping.throughput_bps);
    // Right→left carries only ACK-sized frames, far under the line rate.
    let r2l = &app.dirs[Dir::RightToLeft.index()];
    assert!(
        r2l.achieved_bps.abs_diff(480_000) < 48_000,
        "{}",
        r2l.achieved_bps
    );
    assert!(v.latency_from_flows);
}

/// A full link reads as its line rate, steadily: each 100 ms interval holds
/// 82 or 83 frames (a frame is 1.2 % of the rate), the shown rate averages
/// the last second.
#[test]
fn achieved_rate_is_steady_on_a_full_link() {
    let mut s = Scenario::fq_codel_under_load();
    let line = link_params().rate_bytes_ps * 8;
    let mut app = App::new();
    for (i, snap) in s.snapshots(40, STEP).into_iter().enumerate() {
        app.on_snapshot(snap);
        let got = app.dirs[Dir::LeftToRight.index()].achieved_bps;
        if i >= 20 {
            assert!(
                got.abs_diff(line) <= line / 250,
                "step {i}: {got} vs {line}"
            );
        }
    }
}

#[test]
fn pfifo_fast_latency_is_the_backlog_at_line_rate() {
    let mut s = Scenario::pfifo_fast_under_load();
    let app = app_after(&mut s, 20, STEP);
    let v = &app.dirs[0];
    // pfifo_fast has no flow queues: its flows are listed by band (issue
    // 17), and the latency is still the backlog drained at the line rate.
    assert!(!v.flows.is_empty() && v.flows.iter().all(|f| f.queue.is_some()));
    assert!(!v.latency_from_flows);
    let last = v.history.back().unwrap();
    let p = app.latest.as_ref().unwrap().bridge.path(Dir::LeftToRight);
    let expect = (p.qdisc.stats.backlog + p.ring_bytes) * 1_000_000 / p.params.rate_bytes_ps;
    assert_eq!(last.latency_us, expect);
    assert!(
        last.latency_us > 300_000,
        "bufferbloat: {}us",
        last.latency_us
    );
    assert_eq!(last.qlen, p.qdisc.stats.qlen as u64 + p.ring_used as u64);
    // Samples keep growing while the queue fills.
    let lat: Vec<u64> = v.history.iter().map(|s| s.latency_us).collect();
    assert!(lat.windows(2).all(|w| w[0] <= w[1]), "{lat:?}");
}

#[test]
fn history_is_a_bounded_ring() {
    let mut s = Scenario::fq_codel_under_load();
    let app = app_after(&mut s, HISTORY_LEN + 15, NS_PER_MS);
    for d in &app.dirs {
        assert_eq!(d.history.len(), HISTORY_LEN);
        // The oldest samples went first: the newest is the last snapshot.
        assert_eq!(d.history.back().unwrap().at, s.now());
    }
}

#[test]
fn first_snapshot_has_no_rates_and_no_sample() {
    let mut s = Scenario::fq_codel_under_load();
    let app = app_after(&mut s, 1, STEP);
    assert_eq!(app.dirs[0].achieved_bps, 0);
    assert!(app.dirs[0].history.is_empty());
    assert!(app.events.is_empty());
}

#[test]
fn link_changes_and_qdisc_switches_are_logged() {
    let mut s = Scenario::pfifo_fast_under_load();
    let mut app = app_after(&mut s, 2, STEP);
    let now = s.now();
    let path = s.bridge_mut().path_mut(Dir::RightToLeft);
    let p = LinkParams {
        rate_bytes_ps: 625_000,
        bql: false,
        rx_usecs: 20,
        ..*path.params()
    };
    path.set_params(p, now);
    let path = s.bridge_mut().path_mut(Dir::LeftToRight);
    let root = Box::new(FqCodel::new(root_ctx(0x8001)));
    path.replace_qdisc(QdiscTree::with_root(path.qdisc().dev().clone(), root), now);
    for snap in s.snapshots(1, STEP) {
        app.on_snapshot(snap);
    }
    let config: Vec<(Option<Dir>, String)> = app
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Config)
        .map(|e| (e.dir, e.text.clone()))
        .collect();
    assert!(
        config.contains(&(Some(Dir::RightToLeft), "rate 10Mbit → 5Mbit".into())),
        "{config:?}"
    );
    assert!(config.contains(&(Some(Dir::RightToLeft), "bql on → off".into())));
    assert!(config.contains(&(Some(Dir::RightToLeft), "rx-usecs 0 → 20".into())));
    let switched = config.iter().find(|(d, t)| {
        *d == Some(Dir::LeftToRight) && t.starts_with("qdisc now fq_codel 8001: limit 10240p")
    });
    assert!(switched.is_some(), "{config:?}");
    assert_eq!(config.len(), 4, "{config:?}");
    // Nothing changed in the next interval: no more config events.
    app.on_snapshot(s.snapshots(1, STEP).remove(0));
    assert_eq!(texts(&app, EventKind::Config).len(), 4);
}

#[test]
fn overflow_drops_are_logged_by_reason() {
    let ctx = QdiscCtx {
        txqueuelen: 20,
        ..root_ctx(0)
    };
    let mut s = Scenario::new(
        Box::new(Fifo::new(FifoKind::Pfifo, ctx)),
        Box::new(PfifoFast::new(root_ctx(0))),
        link_params(),
    );
    let mut app = App::new();
    app.on_snapshot(s.snapshot());
    s.burst_of_flows(Dir::LeftToRight, 60, 1000);
    app.on_snapshot(s.snapshots(1, NS_PER_MS).remove(0));
    let over = texts(&app, EventKind::Overflow);
    // 60 frames: the ring takes some (BQL limit), the FIFO 20, the rest drop.
    let p = app.latest.as_ref().unwrap().bridge.path(Dir::LeftToRight);
    let dropped = p.drops_by_reason["queue_full"];
    assert!(dropped > 0);
    assert_eq!(over, vec![format!("dropped {dropped} queue_full")]);
}

#[test]
fn codel_entering_and_leaving_dropping_is_derived_from_snapshots() {
    let mut s = Scenario::fq_codel_under_load();
    let mut app = app_after(&mut s, 10, STEP);
    let entered = texts(&app, EventKind::Codel);
    assert!(
        entered.iter().any(|t| t.contains("entered dropping")),
        "{entered:?}"
    );
    let dropping_now = app.dirs[0].flows.iter().filter(|f| f.dropping).count();
    assert!(dropping_now > 0);
    // Stop the load: the queues drain and CoDel leaves the dropping state.
    s.clear_loads();
    for snap in s.snapshots(30, STEP) {
        app.on_snapshot(snap);
    }
    let all = texts(&app, EventKind::Codel);
    // One event per queue ("... left dropping") or a summary ("..., N left").
    let left: usize = all
        .iter()
        .map(|t| match t.strip_suffix(" left") {
            Some(summary) => summary.rsplit(' ').next().unwrap().parse().unwrap(),
            None => usize::from(t.ends_with("left dropping")),
        })
        .sum();
    assert!(left > 0, "{all:?}");
    assert!(app.dirs[0].flows.iter().all(|f| !f.dropping));
}

#[test]
fn single_codel_changes_name_the_flow() {
    let mut s = Scenario::fq_codel_under_load();
    let app = app_after(&mut s, 40, STEP);
    let named = texts(&app, EventKind::Codel)
        .into_iter()
        .filter(|t| t.starts_with("flow 10.77.0.1:"))
        .count();
    assert!(named > 0, "{:?}", texts(&app, EventKind::Codel));
}

#[test]
fn the_event_log_is_bounded_and_replies_are_logged() {
    let mut app = App::new();
    for i in 0..EVENTS_LEN + 10 {
        app.on_reply(&Action::Tc(format!("tc qdisc show {i}")), Ok(String::new()));
    }
    assert_eq!(app.events.len(), EVENTS_LEN);
    assert_eq!(app.events.front().unwrap().text, "tc qdisc show 10");
    app.on_reply(&Action::Quit, Ok("bye\n".into()));
    assert_eq!(app.events.back().unwrap().text, "quit: bye");
    app.on_reply(
        &Action::Tc("tc qdisc frob".into()),
        Err(ControlError::Tc(TcFailure::Tc(TcError::new(
            "Unknown qdisc \"frob\"",
        )))),
    );
    let last = app.events.back().unwrap();
    assert_eq!(last.kind, EventKind::Error);
    assert_eq!(last.text, "tc qdisc frob failed: Unknown qdisc \"frob\"");
    assert_eq!(app.status.as_deref(), Some("error: Unknown qdisc \"frob\""));
}

#[test]
fn a_class_tree_is_flattened_in_tc_order_with_flows_of_the_child() {
    let mut s = Scenario::qfq_under_load();
    let mut app = app_after(&mut s, 10, STEP);
    let tree: Vec<(usize, bool, String, String)> = app.dirs[0]
        .tree
        .iter()
        .map(|n| (n.depth, n.is_class, n.kind.clone(), n.id.clone()))
        .collect();
    assert_eq!(tree[0], (0, false, "qfq".into(), "1:".into()));
    assert_eq!(tree[1], (1, true, "qfq".into(), "1:1".into()));
    assert_eq!(tree[2], (2, false, "fq_codel".into(), "10:".into()));
    assert_eq!(tree[3], (1, true, "qfq".into(), "1:2".into()));
    assert_eq!(tree.len(), 5, "{tree:?}");
    assert_eq!(tree[4].0, 2, "the default child of 1:2");
    // The fq_codel child's flows are in the table, tagged with its handle.
    let all = &app.dirs[0].flows;
    let flows: Vec<_> = all.iter().filter(|f| f.queue.is_none()).collect();
    assert!(!flows.is_empty());
    assert!(flows.iter().all(|f| f.qdisc == tc_h_make(0x10, 0)));
    // 1:2's default pfifo keeps no flow queues: its flows are listed by
    // the FIFO they stand in.
    assert!(all
        .iter()
        .filter(|f| f.flow.unwrap().dst_port == 5202)
        .all(|f| f.queue.is_some() && f.qdisc != tc_h_make(0x10, 0)));
    assert!(
        flows.iter().all(|f| f.flow.unwrap().dst_port != 5202),
        "5202 goes to 1:2"
    );
    // Selecting classes walks the nodes.
    app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    assert_eq!(app.focus, Focus::Tree);
    for _ in 0..3 {
        app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    }
    assert_eq!(app.tree_sel, 3);
    assert_eq!(app.dirs[0].tree[app.tree_sel].id, "1:2");
}

#[test]
fn the_selected_flow_shows_its_queue_xstats() {
    let mut s = Scenario::fq_codel_under_load();
    let app = app_after(&mut s, 10, STEP);
    let row = &app.dirs[0].flows[0];
    let x = app.flow_xstats(row).unwrap();
    assert!(
        x.starts_with(&format!(
            "deficit {} count {}",
            row.deficit, row.codel_count
        )),
        "{x}"
    );
    assert!(x.contains("lastcount") && x.contains("ldelay"), "{x}");
    assert_eq!(x.contains("dropping drop_next"), row.dropping, "{x}");
    // A row of a qdisc not in the snapshot has none.
    let mut other = row.clone();
    other.qdisc = tc_h_make(0x99, 0);
    assert_eq!(app.flow_xstats(&other), None);
}

#[test]
fn a_codel_root_entering_dropping_is_logged_by_handle() {
    use bloatbox::qdisc::codel::CodelQdisc;
    let mut s = Scenario::new(
        Box::new(CodelQdisc::new(root_ctx(0x8001))),
        Box::new(PfifoFast::new(root_ctx(0))),
        link_params(),
    );
    s.add_standard_loads();
    let mut app = app_after(&mut s, 20, STEP);
    let codel = texts(&app, EventKind::Codel);
    assert!(
        codel.contains(&"codel 8001: entered dropping".to_string()),
        "{codel:?}"
    );
    s.clear_loads();
    for snap in s.snapshots(30, STEP) {
        app.on_snapshot(snap);
    }
    let codel = texts(&app, EventKind::Codel);
    assert_eq!(
        codel.last().unwrap(),
        "codel 8001: left dropping",
        "{codel:?}"
    );
}

#[test]
fn htb_classes_show_their_mode_derived_from_tokens() {
    use bloatbox::qdisc::dump::Xstats;
    use bloatbox::qdisc::htb::HtbXstats;
    use bloatbox::qdisc::{ClassDump, QdiscDump, QdiscStats};
    let class = |minor: u16, parent: u32, tokens: i32, ctokens: i32| ClassDump {
        kind: "htb".into(),
        classid: tc_h_make(1, minor),
        parent,
        options: bloatbox::tc::syntax::parse_class(
            bloatbox::qdisc::kinds::BUILTIN,
            "htb",
            &[
                "rate", "5mbit", "ceil", "10mbit", "burst", "1600", "cburst", "1600",
            ],
        )
        .unwrap(),
        stats: Some(QdiscStats::default()),
        xstats: Some(Xstats::HtbClass(HtbXstats {
            lends: 3,
            borrows: 1,
            giants: 0,
            tokens,
            ctokens,
        })),
        ..ClassDump::default()
    };
    let mut s = Scenario::fq_codel_under_load();
    let mut snap = s.snapshots(1, STEP).remove(0);
    snap.bridge.paths[0].qdisc = QdiscDump {
        kind: "htb".into(),
        handle: tc_h_make(1, 0),
        parent: u32::MAX,
        classes: vec![
            class(1, u32::MAX, 100, 100),
            class(0x10, tc_h_make(1, 1), -5, 7),
            class(0x20, tc_h_make(1, 1), -5, -1),
        ],
        ..QdiscDump::default()
    };
    let mut app = bloatbox::tui::App::new();
    app.on_snapshot(snap);
    let tree = &app.dirs[0].tree;
    let ids: Vec<(&str, usize)> = tree.iter().map(|n| (n.id.as_str(), n.depth)).collect();
    assert_eq!(ids, vec![("1:", 0), ("1:1", 1), ("1:10", 2), ("1:20", 2)]);
    let modes: Vec<&str> = tree[1..]
        .iter()
        .map(|n| n.xstats.last().unwrap().as_str())
        .collect();
    assert_eq!(
        modes,
        vec!["mode can_send", "mode may_borrow", "mode cant_send"]
    );
    assert_eq!(tree[2].xstats[0], "lended: 3 borrowed: 1 giants: 0");
    assert_eq!(tree[2].parent, "parent 1:1");
}

#[test]
fn the_root_node_lists_qdisc_drops_by_reason() {
    let mut s = Scenario::fq_codel_under_load();
    let app = app_after(&mut s, 10, STEP);
    let p = app.latest.as_ref().unwrap().bridge.path(Dir::LeftToRight);
    let codel = p.drops_by_reason["codel"];
    assert_eq!(
        app.dirs[0].tree[0].xstats[0],
        format!("dropped by reason: codel {codel}")
    );
    // Ingress rejects are the link's, not the qdisc's.
    let mut s = Scenario::pfifo_fast_under_load();
    let mut app = app_after(&mut s, 1, STEP);
    let now = s.now();
    s.bridge_mut().ingress(Dir::LeftToRight, vec![0u8; 10], now);
    app.on_snapshot(s.snapshots(1, STEP).remove(0));
    assert!(
        app.dirs[0].tree[0].xstats.is_empty(),
        "{:?}",
        app.dirs[0].tree[0].xstats
    );
    let p = app.latest.as_ref().unwrap().bridge.path(Dir::LeftToRight);
    assert_eq!(p.drops_by_reason["runt"], 1);
}

#[test]
fn a_dropping_flow_out_of_a_bounded_listing_is_not_said_to_leave() {
    let mut s = Scenario::fq_codel_under_load();
    let mut app = app_after(&mut s, 10, STEP);
    let base = s.snapshots(1, STEP).remove(0);
    app.on_snapshot(base.clone());
    let flows = &base.bridge.path(Dir::LeftToRight).qdisc.flows;
    let dropping = flows
        .iter()
        .find(|f| f.codel_dropping)
        .expect("a flow in the dropping state")
        .clone();
    let events_before = app.events.len();
    // The next snapshot lists every flow but that one, summed up instead.
    let later = |mut snap: bloatbox::tui::Snapshot, ms: u64, keep: bool, still: bool| {
        snap.bridge.at += ms * NS_PER_MS;
        let path = &mut snap.bridge.paths[Dir::LeftToRight.index()];
        path.at += ms * NS_PER_MS;
        let q = &mut path.qdisc;
        q.flows.retain(|f| keep || f.bucket != dropping.bucket);
        for f in q.flows.iter_mut().filter(|f| f.bucket == dropping.bucket) {
            f.codel_dropping = still;
        }
        if !keep {
            q.other_flows.add(&dropping);
        }
        snap
    };
    app.on_snapshot(later(base.clone(), 100, false, true));
    let new: Vec<String> = app
        .events
        .iter()
        .skip(events_before)
        .map(|e| e.text.clone())
        .collect();
    assert!(
        !new.iter().any(|t| t.contains("left dropping")),
        "unlisted is not 'left': {new:?}"
    );
    assert_eq!(app.dirs[0].unlisted.flows, 1);
    // Listed again, no longer dropping: now it left, and is named.
    app.on_snapshot(later(base, 200, true, false));
    let label = bloatbox::tui::state::flow_label(&dropping.flow.unwrap());
    assert!(
        texts(&app, EventKind::Codel)
            .iter()
            .any(|t| *t == format!("flow {label} left dropping")),
        "{:?}",
        texts(&app, EventKind::Codel)
    );
}

/// A CAKE snapshot: every flow on a rotation has a row (the same set as
/// the classes `tc class show` lists), the sort keys order CAKE's rows as
/// any others', each row's detail finds its class's xstats, and the tins
/// are summed up in tc's order.
#[test]
fn a_cake_snapshot_gives_rows_sort_keys_xstats_and_tins() {
    use bloatbox::qdisc::dump::Xstats;
    use bloatbox::tui::state::SortKey;
    let mut s = Scenario::cake_under_load();
    let mut app = app_after(&mut s, 20, STEP);
    let q = &app
        .latest
        .as_ref()
        .unwrap()
        .bridge
        .path(Dir::LeftToRight)
        .qdisc;
    assert_eq!(q.kind, "cake");
    let Some(Xstats::Cake(x)) = &q.xstats else {
        panic!("cake xstats");
    };
    let classes: Vec<u32> = q.classes.iter().map(|c| c.classid).collect();
    let mut rows: Vec<u32> = app.dirs[0]
        .flows
        .iter()
        .filter(|r| r.cake.is_some() && r.gone_since.is_none())
        .map(|r| r.qdisc | (r.bucket + 1))
        .collect();
    rows.sort_unstable();
    assert_eq!(rows, classes);
    assert!(rows.len() >= 5, "{rows:?}");
    for r in app.dirs[0].flows.iter().filter(|r| r.cake.is_some()) {
        let xs = app.flow_xstats(r).expect("the class's xstats");
        assert!(xs.starts_with("deficit "), "{xs}");
    }
    let tins: Vec<(String, u32)> = app.dirs[0]
        .tins
        .iter()
        .map(|t| (t.name.clone(), t.stats.dropped_packets))
        .collect();
    let want: Vec<(String, u32)> = ["Bulk", "Best Effort", "Video", "Voice"]
        .iter()
        .zip(&x.tins)
        .map(|(n, t)| (n.to_string(), t.dropped_packets))
        .collect();
    assert_eq!(tins, want);
    for _ in 0..SortKey::ALL.len() {
        app.on_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE));
        let value = |r: &bloatbox::tui::state::FlowRow| match app.sort {
            SortKey::Backlog => r.backlog,
            SortKey::Packets => u64::from(r.qlen),
            SortKey::Sojourn => r.sojourn_ns,
            SortKey::Drops => r.drops,
            SortKey::Marks => r.ecn_marks,
            SortKey::Throughput => r.throughput_bps,
            SortKey::Flow => u64::from(r.bucket),
        };
        let cake: Vec<u64> = app.dirs[0]
            .flows
            .iter()
            .filter(|r| r.cake.is_some())
            .map(value)
            .collect();
        let mut sorted = cake.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        if app.sort_desc {
            assert_eq!(cake, sorted, "{:?}", app.sort);
        } else {
            sorted.reverse();
            assert_eq!(cake, sorted, "{:?}", app.sort);
        }
    }
}

/// The tree of `lines` on the left device, under the standard loads.
fn tc_scenario(lines: &[&str]) -> Scenario {
    let dev =
        bloatbox::qdisc::tree::DevSpec::new(Dir::LeftToRight, bloatbox::qdisc::kinds::BUILTIN);
    let tree = bloatbox::tc::build_tree(dev, lines).unwrap_or_else(|e| panic!("{e}"));
    let mut s = Scenario::new(
        Box::new(tree),
        Box::new(PfifoFast::new(root_ctx(0))),
        link_params(),
    );
    s.add_standard_loads();
    s
}

/// DRR's and ETS's classes show as any kind's do: each class with its
/// options, counters and xstats (DRR's deficit), its child below it.
#[test]
fn drr_and_ets_classes_are_flattened_with_their_options_and_deficits() {
    let mut s = tc_scenario(&[
        "tc qdisc add dev left root handle 1: drr",
        "tc class add dev left parent 1: classid 1:1 drr quantum 3000",
        "tc class add dev left parent 1: classid 1:2 drr",
        "tc qdisc add dev left parent 1:1 handle 10: fq_codel",
        "tc filter add dev left parent 1: protocol all prio 1 u32 match ip dport 5202 0xffff flowid 1:2",
        "tc filter add dev left parent 1: protocol all prio 2 matchall flowid 1:1",
    ]);
    let app = app_after(&mut s, 10, STEP);
    let tree = &app.dirs[0].tree;
    let shape: Vec<(usize, bool, &str, &str)> = tree
        .iter()
        .map(|n| (n.depth, n.is_class, n.kind.as_str(), n.id.as_str()))
        .collect();
    assert_eq!(
        shape,
        [
            (0, false, "drr", "1:"),
            (1, true, "drr", "1:1"),
            (2, false, "fq_codel", "10:"),
            (1, true, "drr", "1:2"),
            (2, false, "pfifo", "0:"),
        ]
    );
    assert_eq!(tree[1].options, "quantum 3000b");
    assert_eq!(tree[3].options, "quantum 1514b");
    assert!(tree[1].stats.packets > 0 && tree[3].stats.packets > 0);
    assert!(
        tree[1].xstats.len() == 1 && tree[1].xstats[0].starts_with("deficit "),
        "{:?}",
        tree[1].xstats
    );

    let mut s = tc_scenario(&[
        "tc qdisc add dev left root handle 1: ets bands 3 strict 1 quanta 3000",
        "tc filter add dev left parent 1: protocol all prio 1 u32 match ip dport 5202 0xffff flowid 1:2",
    ]);
    let app = app_after(&mut s, 10, STEP);
    let tree = &app.dirs[0].tree;
    let shape: Vec<(usize, bool, &str)> = tree
        .iter()
        .map(|n| (n.depth, n.is_class, n.id.as_str()))
        .collect();
    assert_eq!(
        shape,
        [
            (0, false, "1:"),
            (1, true, "1:1"),
            (2, false, "0:"),
            (1, true, "1:2"),
            (2, false, "0:"),
            (1, true, "1:3"),
            (2, false, "0:"),
        ]
    );
    assert_eq!(
        tree[0].options,
        "bands 3 strict 1 quanta 3000 1514 priomap 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2"
    );
    assert_eq!(
        (tree[1].options.as_str(), tree[3].options.as_str()),
        ("", "quantum 3000")
    );
    // The default priomap sends everything but 5202 to the last band.
    assert!(tree[3].stats.packets > 0 && tree[5].stats.packets > 0);
    assert_eq!(tree[1].stats.packets, 0);
}

/// prio's bands under load: each band is a class row whose counters line
/// carries the band's backlog (its child's, `prio_dump_class_stats`), so
/// the tree shows where the standing queue is.
#[test]
fn prio_band_rows_show_each_bands_backlog() {
    let mut s = tc_scenario(&[
        "tc qdisc add dev left root handle 1: prio",
        "tc filter add dev left parent 1: protocol all prio 1 u32 match ip dport 5202 0xffff flowid 1:3",
    ]);
    let app = app_after(&mut s, 10, STEP);
    let tree = &app.dirs[0].tree;
    let bands: Vec<(&str, u64, u32)> = tree
        .iter()
        .filter(|n| n.is_class)
        .map(|n| (n.id.as_str(), n.stats.backlog, n.stats.qlen))
        .collect();
    assert_eq!(bands.len(), 3, "{bands:?}");
    // Priority 0 goes to band 1 (1:2), where the TCP flows build a queue;
    // 5202 to band 2 (1:3), behind it; band 0 (1:1) stays empty.
    assert_eq!((bands[0].1, bands[0].2), (0, 0), "{bands:?}");
    assert!(bands[1].1 > 0 && bands[1].2 > 0, "{bands:?}");
    let root = &tree[0].stats;
    let sum: u64 = bands.iter().map(|b| b.1).sum();
    assert_eq!(root.backlog, sum, "{bands:?}");
}

/// DualPI2's node adds a line with both queues' probability and delay
/// (from its xstats' p' and the coupling factor: p_L = k·p', p_C = p'^2).
#[test]
fn a_dualpi2_root_shows_both_queues_probability_and_delay() {
    use bloatbox::qdisc::dualpi2::Dualpi2;
    use bloatbox::qdisc::dump::Xstats;
    use bloatbox::qdisc::QdiscOptions;
    let mut s = Scenario::new(
        Box::new(Dualpi2::build(root_ctx(0x8001), &QdiscOptions::None).unwrap()),
        Box::new(PfifoFast::new(root_ctx(0))),
        link_params(),
    );
    s.add_standard_loads();
    let app = app_after(&mut s, 10, STEP);
    let q = &app
        .latest
        .as_ref()
        .unwrap()
        .bridge
        .path(Dir::LeftToRight)
        .qdisc;
    let Some(Xstats::Dualpi2(x)) = &q.xstats else {
        panic!("dualpi2 xstats");
    };
    let p = f64::from(x.prob) / f64::from(u32::MAX);
    let root = &app.dirs[0].tree[0];
    assert_eq!(root.kind, "dualpi2");
    let line = root
        .xstats
        .iter()
        .find(|l| l.starts_with("L-queue p_L "))
        .unwrap_or_else(|| panic!("{:?}", root.xstats));
    assert_eq!(
        *line,
        format!(
            "L-queue p_L {:.4} delay {}  C-queue p_C {:.4} delay {}",
            (2.0 * p).min(1.0),
            bloatbox::units::sprint_time(x.delay_l.into()),
            p * p,
            bloatbox::units::sprint_time(x.delay_c.into())
        )
    );
    assert!(root.xstats.iter().any(|l| l.starts_with("prob ")));
}

/// choke's xstats (`choke_print_xstats`) reach the TUI's qdisc line: the
/// fixtures' loads (1.25× the line rate, five flows) keep the average
/// above min, so arrivals meet frames of their own flow and are matched.
#[test]
fn choke_shows_its_options_and_matches() {
    let tree = |dir: Dir| {
        let dev = bloatbox::qdisc::tree::DevSpec::new(dir, bloatbox::qdisc::kinds::BUILTIN);
        let line = format!(
            "tc qdisc add dev {} root choke limit 100 min 5 max 50 bandwidth 10mbit",
            dir.dev()
        );
        Box::new(bloatbox::tc::build_tree(dev, &[line.as_str()]).expect("a valid tree"))
    };
    let mut s = Scenario::new(
        tree(Dir::LeftToRight),
        tree(Dir::RightToLeft),
        link_params(),
    );
    s.add_standard_loads();
    let app = app_after(&mut s, 20, STEP);
    let root = &app.view().tree[0];
    assert_eq!(root.kind, "choke");
    assert!(
        root.options.starts_with("limit 100p min 5p max 50p "),
        "{}",
        root.options
    );
    let line = root
        .xstats
        .iter()
        .find(|l| l.starts_with("marked "))
        .unwrap_or_else(|| panic!("no choke xstats in {:?}", root.xstats));
    let matched: u64 = line
        .rsplit_once("matched ")
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(matched > 0, "{line}");
}
