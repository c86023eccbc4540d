//! Whole TUI screens through ratatui's TestBackend at 80×24 and 160×48,
//! compared with committed insta snapshots (tests/tui/snapshots/), from
//! snapshots made by driving the real core. Also the 10,000-flow screen:
//! bounded to what fits plus one aggregate row.

use bloatbox::dir::Dir;
use bloatbox::qdisc::fq_codel::{FqCodel, FqCodelOptions};
use bloatbox::qdisc::FlowListing;
use bloatbox::time::NS_PER_MS;
use bloatbox::tui::fixtures::{app_after, link_params, root_ctx, Scenario};
use bloatbox::tui::render::{MIN_HEIGHT, MIN_WIDTH};
use bloatbox::tui::state::Mode;
use bloatbox::tui::{text_capture, App};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

const STEP: u64 = 100 * NS_PER_MS;

fn loaded(mut s: Scenario) -> App {
    app_after(&mut s, 30, STEP)
}

fn both_sizes(name: &str, app: &App) {
    for (w, h) in [(80, 24), (160, 48)] {
        let text = text_capture(app, w, h);
        assert_eq!(text.lines().count(), h as usize);
        assert!(text.lines().all(|l| l.chars().count() <= w as usize));
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), text);
    }
}

#[test]
fn pfifo_fast_under_load() {
    let app = loaded(Scenario::pfifo_fast_under_load());
    let text = text_capture(&app, 80, 24);
    assert!(text.contains("root pfifo_fast"));
    // Its flows are listed by band though it keeps no per-flow state (the
    // queue column of an 80-column screen reads `band 1` for `root band 1`).
    assert!(text.contains("… band 1 "), "{text}");
    both_sizes("pfifo_fast", &app);
}

#[test]
fn fq_codel_under_load() {
    let app = loaded(Scenario::fq_codel_under_load());
    let text = text_capture(&app, 160, 48);
    assert!(text.contains("10.77.0.1:33000→10.77.0.2:7 udp"), "{text}");
    both_sizes("fq_codel", &app);
}

#[test]
fn qfq_class_tree_with_the_class_selected() {
    let mut app = loaded(Scenario::qfq_under_load());
    app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    let text = text_capture(&app, 160, 48);
    assert!(text.contains("class qfq 1:1 root weight 3"), "{text}");
    assert!(text.contains("qdisc fq_codel 10: parent 1:1"), "{text}");
    both_sizes("qfq_tree", &app);
}

#[test]
fn right_to_left_direction() {
    let mut app = loaded(Scenario::fq_codel_under_load());
    app.on_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::NONE));
    let text = text_capture(&app, 80, 24);
    assert!(text.contains(" link R→L "));
    assert!(text.contains("[R→L]"));
    insta::assert_snapshot!("fq_codel_r2l_80x24", text);
}

#[test]
fn overlays_and_prompt() {
    let mut app = loaded(Scenario::fq_codel_under_load());
    app.mode = Mode::Help;
    let help = text_capture(&app, 80, 24);
    assert!(help.contains("toggle BQL"));
    insta::assert_snapshot!("help_80x24", help);

    app.mode = Mode::Presets { selected: 5 };
    let presets = text_capture(&app, 80, 24);
    assert!(presets.contains("htb default 10"), "{presets}");
    insta::assert_snapshot!("presets_80x24", presets);

    app.mode = Mode::Set {
        input: "rate 50mbit".into(),
    };
    let prompt = text_capture(&app, 80, 24);
    assert!(prompt
        .lines()
        .last()
        .unwrap()
        .starts_with("set L→R> rate 50mbit█"));

    app.mode = Mode::Normal;
    app.paused = true;
    app.skipped = 7;
    assert!(text_capture(&app, 80, 24).contains("PAUSED (7 skipped)"));
}

#[test]
fn before_the_first_snapshot() {
    let app = App::new();
    let text = text_capture(&app, 80, 24);
    assert!(text.contains("waiting for the first snapshot"));
    insta::assert_snapshot!("empty_80x24", text);
}

#[test]
fn too_small_a_terminal_says_so() {
    let app = loaded(Scenario::fq_codel_under_load());
    for (w, h) in [
        (MIN_WIDTH - 1, MIN_HEIGHT),
        (MIN_WIDTH, MIN_HEIGHT - 1),
        (20, 5),
    ] {
        let text = text_capture(&app, w, h);
        assert!(text.starts_with("bloatbox: the"), "{w}x{h}: {text}");
        assert!(text.contains("80×24"), "{w}x{h}: {text}");
    }
    assert_eq!(text_capture(&app, 1, 1), "b\n");
    // Sizes between the two tested ones lay out too.
    for (w, h) in [(80, 30), (100, 40), (200, 60), (120, 24)] {
        let text = text_capture(&app, w, h);
        assert!(text.contains(" flows L→R (6)"), "{w}x{h}");
    }
}

/// fq_codel with 65536 buckets holding one frame from each of 10,000 UDP
/// flows (hash collisions merge a few into shared buckets).
fn ten_thousand_flows() -> (Scenario, App) {
    let q = FqCodel::with_options(
        root_ctx(0x8001),
        &FqCodelOptions {
            flows: Some(65536),
            limit: Some(20000),
            ..FqCodelOptions::default()
        },
    )
    .unwrap();
    let mut s = Scenario::new(
        Box::new(q),
        Box::new(FqCodel::new(root_ctx(0x8002))),
        link_params(),
    );
    let mut app = App::new();
    app.on_snapshot(s.snapshot());
    s.burst_of_flows(Dir::LeftToRight, 10_000, 200);
    app.on_snapshot(s.snapshots(1, NS_PER_MS).remove(0));
    (s, app)
}

#[test]
fn ten_thousand_flows_fit_in_one_screen_with_an_aggregate_row() {
    let (_, app) = ten_thousand_flows();
    let view = &app.dirs[0];
    // The snapshot is bounded like the live datapath's: the top flows by
    // backlog, the rest summed up.
    let listed = bloatbox::datapath::DEFAULT_SNAPSHOT_FLOWS;
    let flow_queues = view.flows.iter().filter(|r| r.queue.is_none()).count();
    assert_eq!(flow_queues, listed);
    // Rows: the flow queues, and the flows in the TX ring and on the wire.
    let (rows, total) = (
        view.flows.len(),
        view.flows.len() as u64 + view.unlisted.flows,
    );
    assert!(total > 9_000, "{total} flows");
    let min_listed = view
        .flows
        .iter()
        .filter(|r| r.queue.is_none())
        .map(|r| r.backlog)
        .min()
        .unwrap();
    assert!(
        view.unlisted.backlog <= min_listed * view.unlisted.flows,
        "the listed flows hold the most backlog"
    );
    for (w, h) in [(80u16, 24u16), (160, 48)] {
        let text = text_capture(&app, w, h);
        assert_eq!(text.lines().count(), h as usize);
        assert!(
            text.contains(&format!("({total}, top {rows} by backlog)")),
            "{text}"
        );
        let agg = text
            .lines()
            .find(|l| l.starts_with("+ "))
            .unwrap_or_else(|| panic!("no aggregate row:\n{text}"));
        // Rows shown + the aggregate = every flow.
        let shown = text.lines().filter(|l| l.starts_with("10.77.0.")).count();
        let others = total - shown as u64;
        let others_text = agg.split_whitespace().nth(1).unwrap();
        assert_eq!(
            others_text,
            bloatbox::tui::widgets::fmt_count(others),
            "{agg}"
        );
        assert!(shown >= 4, "{shown} rows at {w}x{h}");
        insta::assert_snapshot!(format!("flows_10000_{w}x{h}"), text);
    }
}

#[test]
fn ten_thousand_flows_cost_reported() {
    // Not a pass/fail timing: prints the per-snapshot and per-frame cost.
    let (mut s, mut app) = ten_thousand_flows();
    let now = s.now();
    let mean = |f: &mut dyn FnMut()| {
        let t = std::time::Instant::now();
        for _ in 0..10 {
            f();
        }
        t.elapsed() / 10
    };
    let bridge = s.bridge_mut();
    let full = mean(&mut || drop(bridge.snapshot_listing(now, FlowListing::All)));
    let top = bloatbox::datapath::DEFAULT_SNAPSHOT_FLOWS;
    let bounded = mean(&mut || drop(bridge.snapshot_listing(now, FlowListing::Top(top))));
    let snaps = s.snapshots(10, NS_PER_MS);
    let t0 = std::time::Instant::now();
    for snap in snaps {
        app.on_snapshot(snap);
    }
    let per_snapshot = t0.elapsed() / 10;
    let t1 = std::time::Instant::now();
    for _ in 0..10 {
        text_capture(&app, 160, 48);
    }
    let per_frame = t1.elapsed() / 10;
    println!(
        "10,000 flows: core snapshot made and dropped: every flow listed {full:?}, \
         top {top} {bounded:?}; on_snapshot {per_snapshot:?} (includes dropping the \
         previous one), draw 160x48 {per_frame:?}"
    );
}
