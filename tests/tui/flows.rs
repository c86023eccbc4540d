//! The flow table under every kind of queue (issue 17): a FIFO's flows
//! under pfifo_fast, SFQ leaves of an HTB tree, fq_codel's flow queues, each
//! made by driving the real core with flows of known ports (pure state, no
//! sleeps), checked against the qdiscs' own counters and kept as insta
//! snapshots of the table. Also the table's bookkeeping: rows of emptied
//! queues kept dimmed a few seconds, drop reasons counted from the root
//! qdisc's switch, the header's time since the link came up.

use bloatbox::dir::Dir;
use bloatbox::link::PathSnapshot;
use bloatbox::packet::DropReason;
use bloatbox::qdisc::dump::{QueueId, Xstats};
use bloatbox::qdisc::pfifo_fast::PfifoFast;
use bloatbox::qdisc::tree::QdiscTree;
use bloatbox::qdisc::QdiscDump;
use bloatbox::time::{Instant, NS_PER_MS};
use bloatbox::tui::fixtures::{app_after, root_ctx, Scenario};
use bloatbox::tui::state::{FlowRow, GONE_KEEP_NS};
use bloatbox::tui::widgets::FlowTable;
use bloatbox::tui::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

const STEP: u64 = 100 * NS_PER_MS;

/// The flow table of `app`'s selected direction in `w`×`h`, as text (the
/// head-of-line tests' too).
pub(crate) fn table(app: &App, w: u16, h: u16) -> String {
    let v = app.view();
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    FlowTable {
        rows: &v.flows,
        unlisted: v.unlisted,
        unlisted_tput_bps: v.unlisted_tput_bps,
        selected: app.flow_sel,
        focused: true,
        sort: app.sort,
        sort_desc: app.sort_desc,
        selected_xstats: v.flows.get(app.flow_sel).and_then(|r| app.flow_xstats(r)),
        tins: &v.tins,
    }
    .render(area, &mut buf);
    (0..h)
        .map(|y| {
            let line: String = (0..w).map(|x| buf[(x, y)].symbol()).collect();
            line.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn l2r(app: &App) -> &PathSnapshot {
    app.latest.as_ref().unwrap().bridge.path(Dir::LeftToRight)
}

/// The rows of the bulk flows' band.
fn band_rows(app: &App) -> Vec<&FlowRow> {
    rows_to(app, 5201)
        .into_iter()
        .filter(|r| r.queue == Some(QueueId::Band(1)))
        .collect()
}

fn rows_to(app: &App, dst_port: u16) -> Vec<&FlowRow> {
    app.view()
        .flows
        .iter()
        .filter(|r| r.flow.is_some_and(|k| k.dst_port == dst_port))
        .collect()
}

/// The qdisc of handle `h` in the tree under `q`.
fn find(q: &QdiscDump, h: u32) -> Option<&QdiscDump> {
    if q.handle == h {
        return Some(q);
    }
    q.children.iter().find_map(|c| find(c, h))
}

#[test]
fn pfifo_fast_lists_each_flow_in_its_band_with_its_backlog() {
    let mut s = Scenario::pfifo_fast_under_load();
    let app = app_after(&mut s, 30, STEP);
    let p = l2r(&app);
    // The four bulk flows and the ECN one stand in band 1 (priority 0).
    let bulk = rows_to(&app, 5201);
    assert_eq!(bulk.len(), 4, "{:#?}", app.view().flows);
    for r in &bulk {
        assert_eq!(r.queue, Some(QueueId::Band(1)));
        assert_eq!(r.queue_label, "root band 1");
        assert!(r.backlog > 0 && r.qlen > 0, "{r:?}");
        assert!(r.sojourn_ns > 100 * NS_PER_MS, "a standing queue: {r:?}");
        assert!(r.throughput_bps > 1_000_000, "{r:?}");
    }
    // The rows add up to the qdisc's backlog: nothing invented or lost.
    let in_qdisc: u64 = app
        .view()
        .flows
        .iter()
        .filter(|r| matches!(r.queue, Some(QueueId::Band(_))))
        .map(|r| r.backlog)
        .sum();
    assert_eq!(
        in_qdisc + app.view().unlisted.backlog,
        p.qdisc.stats.backlog
    );
    // Shares of one band add up to (nearly) the whole band.
    let shares: u32 = app
        .view()
        .flows
        .iter()
        .filter(|r| r.queue == Some(QueueId::Band(1)))
        .map(|r| r.share_permille)
        .sum();
    assert!((990..=1000).contains(&shares), "{shares}");
    // The ring and the wire hold frames of the bulk flows too.
    assert!(bulk.iter().any(|r| r.ring > 0), "{bulk:?}");
    assert!(bulk.iter().any(|r| r.wire > 0), "{bulk:?}");
    let text = table(&app, 160, 14);
    assert!(
        text.contains("10.77.0.1:40000→10.77.0.2:5201 tcp"),
        "{text}"
    );
    insta::assert_snapshot!("flows_pfifo_fast_160", text);
}

#[test]
fn sfq_leaves_of_htb_show_throughput_and_drops_from_the_qdiscs_own_counters() {
    let mut s = Scenario::htb_sfq_under_load();
    let mut app = app_after(&mut s, 30, STEP);
    let before = l2r(&app).clone();
    for snap in s.snapshots(10, STEP) {
        app.on_snapshot(snap);
    }
    let after = l2r(&app).clone();
    let (sfq10, sfq20) = (
        find(&after.qdisc, 0x0010_0000).expect("sfq 10:"),
        find(&after.qdisc, 0x0020_0000).expect("sfq 20:"),
    );
    assert!(sfq20.stats.drops > 0, "limit 64 under 1.25× load drops");
    // Drops: every path drop happened in an SFQ (queue_full or
    // sfq_overflow), and the rows' drops are the meter's.
    let meter_drops = |ports: &[u16]| -> u64 {
        after
            .flows
            .iter()
            .filter(|t| ports.contains(&t.flow.dst_port))
            .map(|t| t.total_drops())
            .sum()
    };
    assert_eq!(after.other_flows.total_drops(), 0);
    assert_eq!(meter_drops(&[5202, 7]), sfq10.stats.drops);
    assert_eq!(meter_drops(&[5201]), sfq20.stats.drops);
    for r in app.view().flows.iter().filter(|r| r.queue.is_none()) {
        let t = r.traffic.as_ref().expect("the meter counts every flow");
        assert_eq!(r.drops, t.total_drops());
        assert_eq!(r.throughput_bps, t.rate_bps);
    }
    // Throughput: the rows of SFQ 20:'s flows add up to what the qdisc
    // sent over the last second (its Sent bytes), less what is still in
    // the ring and on the wire.
    let sent_bps = (sfq20.stats.bytes - find(&before.qdisc, 0x0020_0000).unwrap().stats.bytes) * 8;
    let rows: Vec<&FlowRow> = app
        .view()
        .flows
        .iter()
        .filter(|r| r.qdisc == 0x0020_0000)
        .collect();
    assert_eq!(rows.len(), 4, "{rows:#?}");
    let tput: u64 = rows.iter().map(|r| r.throughput_bps).sum();
    assert!(
        tput.abs_diff(sent_bps) < sent_bps / 10,
        "rows {tput} vs sfq 20: sent {sent_bps} bit/s"
    );
    for r in &rows {
        assert!(r.throughput_bps > 1_000_000, "not 0bit: {r:?}");
        assert!(r.drops > 0, "not 0 drops: {r:?}");
        assert!(r.queue_label.starts_with("20:"), "{r:?}");
    }
    let text = table(&app, 160, 16);
    insta::assert_snapshot!("flows_htb_sfq_160", text);
}

#[test]
fn fq_codel_flow_queues_carry_the_meters_counts() {
    let mut s = Scenario::fq_codel_under_load();
    let app = app_after(&mut s, 30, STEP);
    let ping = rows_to(&app, 7);
    assert_eq!(ping.len(), 1, "{:#?}", app.view().flows);
    let codel_drops: u64 = l2r(&app).counters.drops[DropReason::Codel.index()];
    let row_drops: u64 = app
        .view()
        .flows
        .iter()
        .filter(|r| r.queue.is_none())
        .map(|r| r.drops)
        .sum();
    assert!(row_drops <= codel_drops && codel_drops > 0);
    let Some(Xstats::FqCodel(x)) = l2r(&app).qdisc.xstats else {
        panic!("fq_codel xstats");
    };
    // The meter counts a mark when the frame is delivered: the marked
    // frames still in the ring or on the wire are not in yet.
    let row_marks: u64 = app.view().flows.iter().map(|r| r.ecn_marks).sum();
    let p = l2r(&app);
    let in_link = u64::from(p.ring_used + p.in_flight + p.rx_held);
    assert!(
        row_marks <= x.ecn_mark && x.ecn_mark - row_marks <= in_link,
        "rows {row_marks}, fq_codel {}, frames past the qdisc {in_link}",
        x.ecn_mark
    );
    assert!(row_marks > 0);
    insta::assert_snapshot!("flows_fq_codel_160", table(&app, 160, 14));
}

/// CAKE's flow queues get rows as fq_codel's do, each named by its class
/// and tin (the ping in Voice, where a filter's skbedit priority sends it;
/// the bulk flows in Best Effort), with the tins' delays and drops on a
/// line of their own; the rows add up to the tins' backlogs and drops.
#[test]
fn cake_flow_queues_show_their_tin_and_the_tins_line() {
    use bloatbox::qdisc::cake::CakeFlowSet;
    let mut s = Scenario::cake_under_load();
    let app = app_after(&mut s, 30, STEP);
    let ping = rows_to(&app, 7);
    assert_eq!(ping.len(), 1, "{:#?}", app.view().flows);
    assert!(ping[0].queue.is_none(), "a flow queue, not a FIFO");
    assert!(
        ping[0].queue_label.ends_with(" Voice"),
        "{}",
        ping[0].queue_label
    );
    assert_eq!(ping[0].cake.unwrap().tin, 3);
    let bulk: Vec<_> = rows_to(&app, 5201)
        .into_iter()
        .filter(|r| r.queue.is_none())
        .collect();
    assert_eq!(bulk.len(), 4, "{bulk:#?}");
    assert!(bulk
        .iter()
        .all(|r| r.queue_label.ends_with(" Best Effort") && r.cake.unwrap().tin == 1));
    assert!(bulk
        .iter()
        .any(|r| r.cake.unwrap().set == CakeFlowSet::Bulk));
    let Some(Xstats::Cake(x)) = &l2r(&app).qdisc.xstats else {
        panic!("cake xstats");
    };
    let v = app.view();
    assert_eq!(v.tins.len(), 4);
    let names: Vec<&str> = v.tins.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["Bulk", "Best Effort", "Video", "Voice"]);
    let rows: Vec<_> = v.flows.iter().filter(|r| r.cake.is_some()).collect();
    let row_backlog: u64 = rows.iter().map(|r| r.backlog).sum();
    let tin_backlog: u64 = x.tins.iter().map(|t| u64::from(t.backlog_bytes)).sum();
    assert_eq!(row_backlog, tin_backlog);
    assert!(tin_backlog > 0);
    // The flow detail keeps the class's xstats and adds tin and hosts.
    let ping_at = v
        .flows
        .iter()
        .position(|r| r.flow.is_some_and(|k| k.dst_port == 7));
    let x = app.flow_xstats(ping[0]).unwrap();
    assert!(x.starts_with("deficit ") && x.contains("count "), "{x}");
    let mut app = app;
    app.flow_sel = ping_at.unwrap();
    let text = table(&app, 160, 14);
    assert!(
        text.lines().nth(1).unwrap().starts_with("cake 1: Bulk "),
        "{text}"
    );
    assert!(
        text.contains("Voice, sparse, triple-isolate src "),
        "{text}"
    );
    insta::assert_snapshot!("flows_cake_160", text);
}

#[test]
fn a_flow_whose_queue_empties_stays_dimmed_for_a_while() {
    let mut s = Scenario::pfifo_fast_under_load();
    let mut app = app_after(&mut s, 20, STEP);
    let bulk_before = band_rows(&app).len();
    assert_eq!(bulk_before, 4);
    s.clear_loads();
    // The queue drains (≈ 0.5 s of backlog at the line rate).
    let mut gone_at = None;
    for snap in s.snapshots(60, STEP) {
        app.on_snapshot(snap);
        let at = app.latest.as_ref().unwrap().bridge.at;
        let rows = band_rows(&app);
        if gone_at.is_none() && rows.iter().all(|r| r.gone_since.is_some()) {
            gone_at = Some(at);
            assert_eq!(rows.len(), bulk_before, "kept, not dropped at once");
            assert!(rows.iter().all(|r| r.backlog == 0 && r.qlen == 0));
        }
        if let Some(g) = gone_at {
            let kept = !band_rows(&app).is_empty();
            assert_eq!(kept, at.saturating_since(g) < GONE_KEEP_NS, "at {at:?}");
        }
    }
    assert!(gone_at.is_some(), "the queue emptied");
    assert!(band_rows(&app).is_empty(), "gone after {GONE_KEEP_NS} ns");
}

#[test]
fn drop_reasons_count_from_the_root_qdiscs_switch() {
    let mut s = Scenario::fq_codel_under_load();
    let mut app = app_after(&mut s, 20, STEP);
    assert!(app.dirs[0].tree[0].xstats[0].starts_with("dropped by reason: codel"));
    let now = s.now();
    let path = s.bridge_mut().path_mut(Dir::LeftToRight);
    let root = Box::new(PfifoFast::new(root_ctx(0)));
    path.replace_qdisc(QdiscTree::with_root(path.qdisc().dev().clone(), root), now);
    for snap in s.snapshots(3, STEP) {
        app.on_snapshot(snap);
    }
    let root = &app.dirs[0].tree[0];
    assert_eq!(root.kind, "pfifo_fast");
    assert!(
        root.xstats.iter().all(|x| !x.contains("codel")),
        "fq_codel's drops are not pfifo_fast's: {:?}",
        root.xstats
    );
}

#[test]
fn the_header_time_is_since_the_link_came_up() {
    let mut s = Scenario::pfifo_fast_under_load();
    s.clear_loads();
    // Nothing runs the link before 7 s: it comes up then.
    s.run_until(Instant::from_millis(7000));
    let app = app_after(&mut s, 10, STEP);
    assert_eq!(
        app.latest.as_ref().unwrap().bridge.at,
        Instant::from_millis(8000)
    );
    let text = bloatbox::tui::text_capture(&app, 80, 24);
    let header = text.lines().next().unwrap();
    assert!(header.contains("t 1.000s"), "{header}");
}

/// SFB's xstats reach the tree's root node as `tc -s` prints them (the
/// kind's printer: the drop counters, then the bins' maximum length and
/// probabilities), under the standard load (a bulk flow's bins at the
/// target, so BLUE raises their probability).
#[test]
fn sfb_xstats_show_on_the_root_node() {
    use bloatbox::qdisc::sfb::Sfb;
    use bloatbox::qdisc::QdiscOptions;
    let sfb = Box::new(Sfb::build(root_ctx(0x8001), &QdiscOptions::None).unwrap());
    let mut s = Scenario::new(
        sfb,
        Box::new(PfifoFast::new(root_ctx(0))),
        bloatbox::tui::fixtures::link_params(),
    );
    s.add_standard_loads();
    let app = app_after(&mut s, 20, STEP);
    let root = &app.dirs[0].tree[0];
    assert_eq!(root.kind, "sfb");
    let Some(Xstats::Sfb(x)) = l2r(&app).qdisc.xstats else {
        panic!("sfb xstats");
    };
    let want = format!(
        "earlydrop {} penaltydrop {} bucketdrop {} queuedrop {} childdrop {} marked {}",
        x.earlydrop, x.penaltydrop, x.bucketdrop, x.queuedrop, x.childdrop, x.marked
    );
    assert!(root.xstats.contains(&want), "{:?}", root.xstats);
    assert!(
        root.xstats.iter().any(|l| l.starts_with("maxqlen ")),
        "{:?}",
        root.xstats
    );
    assert!(x.maxprob > 0, "{x:?}");
}
