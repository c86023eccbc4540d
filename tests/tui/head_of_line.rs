//! The head-of-line view (issue 17): frames of known flows placed in the
//! queues of real qdiscs (fq_codel, SFQ leaves of an HTB tree, pfifo_fast)
//! without running the link, so what stands before each flow's newest frame
//! can be worked out by hand from the rules of each scheduler; the numbers
//! the TUI rows carry are checked against that, and the table is kept as
//! insta snapshots. Also: every frame the link holds is in some queue's
//! flows (the requeue slot and RX coalescing included), and the queue
//! column fits an 80-column screen.

use crate::flows::table;
use bloatbox::dir::Dir;
use bloatbox::link::{LinkParams, PathSnapshot};
use bloatbox::packet::{Drops, Packet};
use bloatbox::qdisc::dump::{Ahead, DrrTurn, QdiscDump, QueueId};
use bloatbox::qdisc::fq_codel::FqCodel;
use bloatbox::qdisc::pfifo_fast::PfifoFast;
use bloatbox::qdisc::Qdisc;
use bloatbox::time::{Instant, NS_PER_MS};
use bloatbox::tui::fixtures::{frame, link_params, root_ctx, Load, Proto, Scenario};
use bloatbox::tui::state::FlowRow;
use bloatbox::tui::App;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Bulk flows A, B, C (TCP to 5201), the ECN-less flow E (TCP to 5202),
/// the ping P (UDP to 7) and an interactive flow I (TCP to 22, TOS 0x10:
/// pfifo_fast's band 0).
const A: u16 = 40000;
const B: u16 = 40001;
const C: u16 = 40002;
const E: u16 = 40100;
const P: u16 = 33000;
const I: u16 = 40200;

/// A frame of flow `src` (see the constants) of `len` bytes, classified as
/// the bridge does at admission.
fn pkt(src: u16, len: usize) -> Packet {
    let (proto, dst) = match src {
        P => (Proto::Udp, 7),
        E => (Proto::Tcp, 5202),
        I => (Proto::Tcp, 22),
        _ => (Proto::Tcp, 5201),
    };
    let mut f = frame(Dir::LeftToRight, proto, src, dst, len, false);
    if src == I {
        f[15] = 0x10; // IPTOS_LOWDELAY: priority interactive, band 0
    }
    Packet::from_frame(f, Instant::ZERO)
}

fn place(q: &mut dyn Qdisc, flows: &[u16], len: usize) {
    let mut d = Drops::new();
    for &f in flows {
        // The interactive flow's frames are small.
        let len = if f == I { 200 } else { len };
        q.enqueue(pkt(f, len), Instant::ZERO, &mut d);
    }
    assert!(d.is_empty());
}

/// The TUI after one snapshot of a link whose left→right qdisc is `q` as
/// placed (the link has not run: the ring is empty, and the rate for the
/// delay is the line rate, 10 Mbit/s).
fn app_of(q: Box<dyn Qdisc>) -> App {
    let s = Scenario::new(q, Box::new(PfifoFast::new(root_ctx(0))), link_params());
    let mut app = App::new();
    app.on_snapshot(s.snapshot());
    app
}

/// The row of flow `src` (there is one per flow here).
fn row(app: &App, src: u16) -> &FlowRow {
    let rows: Vec<&FlowRow> = app
        .view()
        .flows
        .iter()
        .filter(|r| r.flow.is_some_and(|k| k.src_port == src))
        .collect();
    assert_eq!(rows.len(), 1, "{:#?}", app.view().flows);
    rows[0]
}

/// (packets, bytes, own packets, own bytes) of a row's `ahead`.
fn counts(a: &Ahead) -> (u32, u64, u32, u64) {
    (a.packets, a.bytes, a.own_packets, a.own_bytes)
}

fn turn(r: &FlowRow) -> DrrTurn {
    r.ahead.as_ref().and_then(|a| a.drr).expect("a flow queue")
}

/// Selects the row of flow `src`.
fn select(app: &mut App, src: u16) {
    let at = app
        .view()
        .flows
        .iter()
        .position(|r| r.flow.is_some_and(|k| k.src_port == src))
        .expect("the flow has a row");
    app.flow_sel = at;
}

/// ns to drain `bytes` at the fixtures' 10 Mbit/s (1.25 MB/s).
fn at_line_rate(bytes: u64) -> u64 {
    bytes * 1_000_000_000 / 1_250_000
}

/// fq_codel, quantum 1514: A, B, C queue four 1514-byte frames each
/// (interleaved); three dequeues serve A1, B1, C1, which moves A and B to
/// the old list with a fresh quantum and leaves C at the head of the new
/// list with none; then the ping arrives, a new flow.
#[test]
fn fq_codel_ping_is_served_next_and_bulk_flows_wait_a_quantum_per_round() {
    let mut q = FqCodel::new(root_ctx(0x8001));
    place(&mut q, &[A, B, C, A, B, C, A, B, C, A, B, C], 1514);
    let mut d = Drops::new();
    for _ in 0..3 {
        q.dequeue(Instant::ZERO, &mut d).expect("a frame");
    }
    place(&mut q, &[P], 100);
    let mut app = app_of(Box::new(q));

    // The round from here: C, out of credit, gets a quantum and goes to
    // the back of the old list; the ping is sent; then A2 B2 C2, A3 B3
    // C3, A4 (newest), B4, C4, one 1514-byte frame per queue per round.
    let ping = row(&app, P);
    assert_eq!(counts(ping.ahead.as_ref().unwrap()), (0, 0, 0, 0));
    assert_eq!(
        turn(ping),
        DrrTurn {
            new_flow: true,
            queues: 0,
            rounds: 0,
            quantum: 1514
        }
    );
    assert_eq!(ping.ahead_delay_ns, 0, "nothing ahead, the ring empty");
    let fr = 1514u64;
    let a = row(&app, A);
    assert_eq!(
        counts(a.ahead.as_ref().unwrap()),
        (7, 100 + 6 * fr, 2, 2 * fr)
    );
    assert_eq!(
        (turn(a).queues, turn(a).rounds, turn(a).new_flow),
        (3, 2, false)
    );
    assert_eq!(a.ahead_delay_ns, at_line_rate(100 + 6 * fr));
    let b = row(&app, B);
    assert_eq!(
        counts(b.ahead.as_ref().unwrap()),
        (8, 100 + 7 * fr, 2, 2 * fr)
    );
    assert_eq!((turn(b).queues, turn(b).rounds), (3, 2));
    // C's refill at the head of the new list is one round more.
    let c = row(&app, C);
    assert_eq!(
        counts(c.ahead.as_ref().unwrap()),
        (9, 100 + 8 * fr, 2, 2 * fr)
    );
    assert_eq!((turn(c).queues, turn(c).rounds), (3, 3));

    select(&mut app, P);
    let ping_view = table(&app, 160, 10);
    assert!(
        ping_view.contains("head of line: new flow: served next, after 0p 0B ≈0us"),
        "{ping_view}"
    );
    select(&mut app, A);
    let a_view = table(&app, 160, 10);
    assert!(
        a_view.contains("newest after 7p 9.0KB ≈7.3ms (own 2p, 3 queues, 2 rounds)"),
        "{a_view}"
    );
    insta::assert_snapshot!("head_of_line_fq_codel_160", a_view);
    insta::assert_snapshot!("head_of_line_fq_codel_ping_160", ping_view);
}

/// fq_codel with 5000 frames of A and then a ping, both new flows: the
/// ping's turn is worked out exactly (after A's first frame), A's newest
/// frame is further back than the replay's 4096 turns (each 1514-byte
/// frame of A costs a refill and a send), so its figures are a lower
/// bound, and the screen says so.
#[test]
fn a_queue_beyond_the_replay_reads_as_a_lower_bound() {
    let mut q = FqCodel::new(root_ctx(0x8001));
    place(&mut q, &[A; 5000], 1514);
    place(&mut q, &[P], 100);
    let mut app = app_of(Box::new(q));
    let fr = 1514u64;
    let ping = row(&app, P);
    let pa = ping.ahead.as_ref().unwrap();
    assert!(!pa.at_least);
    assert_eq!(counts(pa), (1, fr, 0, 0));
    let a = row(&app, A);
    let aa = a.ahead.clone().unwrap();
    assert!(aa.at_least, "{aa:?}");
    // 4096 turns: A's first frame, the ping, then a refill and a send per
    // frame of A.
    let sent = 1 + (4096 - 2) / 2;
    assert_eq!(
        counts(&aa),
        (
            sent + 1,
            u64::from(sent) * fr + 100,
            sent,
            u64::from(sent) * fr
        )
    );
    assert_eq!(a.ahead_delay_ns, at_line_rate(aa.bytes));
    select(&mut app, A);
    let text = table(&app, 160, 10);
    let want = format!("newest after over {}p ", sent + 1);
    assert!(text.contains(&want), "{text}");
    assert!(text.contains("(the replay stops at 4096 turns)"), "{text}");
}

/// HTB with SFQ leaves (the fixtures' tree: 5201 to 1:20, 5202 and the
/// ping to 1:10), quantum 1514. SFQ 20: A, B, C with three 1514-byte
/// frames each; SFQ 10: E with two, then the ping. SFQ has no new list:
/// a new slot joins the end of the round, so the ping waits for E's
/// quantum.
#[test]
fn sfq_leaves_serve_each_slot_a_quantum_per_round() {
    let lines = [
        "tc qdisc add dev left root handle 1: htb default 20",
        "tc class add dev left parent 1: classid 1:1 htb rate 10mbit",
        "tc class add dev left parent 1:1 classid 1:10 htb rate 6mbit ceil 10mbit",
        "tc class add dev left parent 1:1 classid 1:20 htb rate 4mbit ceil 10mbit",
        "tc qdisc add dev left parent 1:10 handle 10: sfq",
        "tc qdisc add dev left parent 1:20 handle 20: sfq",
        "tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 5202 0xffff flowid 1:10",
        "tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 7 0xffff flowid 1:10",
    ];
    let dev =
        bloatbox::qdisc::tree::DevSpec::new(Dir::LeftToRight, bloatbox::qdisc::kinds::BUILTIN);
    let mut tree = bloatbox::tc::build_tree(dev, &lines).expect("a valid tree");
    place(&mut tree, &[A, B, C, A, B, C, A, B, C], 1514);
    place(&mut tree, &[E, E], 1514);
    place(&mut tree, &[P], 100);
    let mut app = app_of(Box::new(tree));
    let fr = 1514u64;

    // SFQ 20: A1 B1 C1 A2 B2 C2 A3 B3 C3.
    let a = row(&app, A);
    assert!(a.queue_label.starts_with("20:"), "{a:?}");
    assert_eq!(counts(a.ahead.as_ref().unwrap()), (6, 6 * fr, 2, 2 * fr));
    assert_eq!((turn(a).queues, turn(a).rounds), (2, 2));
    let c = row(&app, C);
    assert_eq!(counts(c.ahead.as_ref().unwrap()), (8, 8 * fr, 2, 2 * fr));
    // SFQ 10: E1, the ping, E2.
    let ping = row(&app, P);
    assert!(ping.queue_label.starts_with("10:"), "{ping:?}");
    assert_eq!(counts(ping.ahead.as_ref().unwrap()), (1, fr, 0, 0));
    assert_eq!(
        turn(ping),
        DrrTurn {
            new_flow: false,
            queues: 1,
            rounds: 0,
            quantum: 1514
        }
    );
    assert_eq!(ping.ahead_delay_ns, at_line_rate(fr));
    let e = row(&app, E);
    assert_eq!(counts(e.ahead.as_ref().unwrap()), (2, fr + 100, 1, fr));
    assert_eq!((turn(e).queues, turn(e).rounds), (1, 1));

    select(&mut app, P);
    let text = table(&app, 160, 12);
    assert!(
        text.contains("newest after 1p 1.5KB ≈1.2ms (own 0p, 1 queue, 0 rounds)"),
        "{text}"
    );
    insta::assert_snapshot!("head_of_line_htb_sfq_160", text);
}

/// pfifo_fast: I's two 200-byte frames in band 0; A, B (three 1514-byte
/// frames each, interleaved) and then the ping in band 1. Band 1 is served
/// only once band 0 is empty: I's frames stand before every band-1 frame.
#[test]
fn pfifo_fast_band_one_waits_for_band_zero() {
    let mut q = PfifoFast::new(root_ctx(0));
    place(&mut q, &[A, B, I, A, B, I, A, B], 1514);
    place(&mut q, &[P], 100);
    let mut app = app_of(Box::new(q));
    let fr = 1514u64;

    let i = row(&app, I);
    assert_eq!(i.queue, Some(QueueId::Band(0)));
    assert_eq!(counts(i.ahead.as_ref().unwrap()), (1, 200, 1, 200));
    let a = row(&app, A);
    assert_eq!(a.queue, Some(QueueId::Band(1)));
    assert_eq!(
        counts(a.ahead.as_ref().unwrap()),
        (2 + 4, 400 + 4 * fr, 2, 2 * fr)
    );
    let ping = row(&app, P);
    let ahead = ping.ahead.as_ref().unwrap();
    assert_eq!(counts(ahead), (2 + 6, 400 + 6 * fr, 0, 0));
    assert_eq!(ahead.drr, None);
    let named: Vec<(u16, u32)> = ahead
        .flows
        .iter()
        .map(|f| (f.flow.src_port, f.packets))
        .collect();
    assert_eq!(named.len(), 3);
    assert!(
        named.contains(&(A, 3)) && named.contains(&(B, 3)),
        "{named:?}"
    );
    assert_eq!(named[2], (I, 2), "fewest bytes last");
    assert_eq!(ping.ahead_delay_ns, at_line_rate(400 + 6 * fr));

    select(&mut app, P);
    let text = table(&app, 160, 10);
    assert!(text.contains("newest behind 8p 9.3KB ≈7.6ms"), "{text}");
    insta::assert_snapshot!("head_of_line_pfifo_fast_160", text);
}

/// Frames in the qdisc tree (its own queues and flow queues, listed or
/// summed up) and in the link's queues.
fn frames_in_queues(p: &PathSnapshot) -> u64 {
    fn tree(q: &QdiscDump) -> u64 {
        let flows: u64 = q.flows.iter().map(|f| u64::from(f.qlen)).sum();
        let own: u64 = q.occupancy.iter().map(|o| u64::from(o.packets)).sum();
        flows + q.other_flows.qlen + own + q.children.iter().map(tree).sum::<u64>()
    }
    tree(&p.qdisc)
        + p.link_queues()
            .iter()
            .map(|o| u64::from(o.packets))
            .sum::<u64>()
}

/// A link with every stage holding frames at once: a 4-slot ring, BQL
/// held at 10 000 bytes and bulk dequeue (a batch of up to 6 frames, more
/// than the free slots, is partly requeued), TX completions coalesced
/// (slots free in bursts), 5 ms of
/// propagation and RX coalescing of 2 ms; bulk flows at 1.5× the line
/// rate and a ping. Every frame the direction holds is in some queue's
/// flows, and the table's rows say where.
#[test]
fn every_frame_the_link_holds_is_in_some_queues_flows() {
    let params = LinkParams {
        tx_ring: 4,
        bulk_dequeue: true,
        tx_usecs: 1000,
        tx_frames: 0,
        rx_usecs: 2000,
        rx_frames: 0,
        delay_ns: 5 * NS_PER_MS,
        ..link_params()
    };
    let mut s = Scenario::new(
        Box::new(FqCodel::new(root_ctx(0x8001))),
        Box::new(PfifoFast::new(root_ctx(0))),
        params,
    );
    let path = s.bridge_mut().path_mut(Dir::LeftToRight);
    assert!(path.set_bql_bounds(10_000, 10_000));
    s.add_load(Load {
        dir: Dir::LeftToRight,
        proto: Proto::Tcp,
        flows: 3,
        first_port: A,
        dst_port: 5201,
        frame_len: 1514,
        bytes_per_sec: params.rate_bytes_ps * 3 / 2,
        ecn: false,
    });
    s.add_load(Load {
        dir: Dir::LeftToRight,
        proto: Proto::Udp,
        flows: 1,
        first_port: P,
        dst_port: 7,
        frame_len: 100,
        bytes_per_sec: 20_000,
        ecn: false,
    });
    let mut app = App::new();
    let mut every_stage = 0;
    // 200 ms in 0.1 ms steps: long enough for the stages to fill and for
    // their frames to come and go.
    for _ in 0..2000 {
        s.run_until(s.now() + NS_PER_MS / 10);
        let snap = s.snapshot();
        let p = snap.bridge.path(Dir::LeftToRight).clone();
        assert_eq!(frames_in_queues(&p), p.held, "at {:?}", p.at);
        let past_qdisc = u64::from(p.requeued + p.on_wire + p.in_flight + p.rx_held);
        let stages = [
            p.held.saturating_sub(past_qdisc) as u32,
            p.requeued,
            p.on_wire,
            p.in_flight,
            p.rx_held,
        ];
        if stages.iter().all(|n| *n > 0) {
            every_stage += 1;
        }
        // The table: each flow has one row here (its flow queue, or else
        // the first of the link's queues it is in), which counts its frames
        // in the link's queues; the rows add up to what the link holds.
        app.on_snapshot(snap);
        let rows = &app.view().flows;
        let on_rows: u64 = rows
            .iter()
            .map(|r| u64::from(r.qlen + r.ring + r.wire + r.requeued + r.rx_held))
            .sum();
        assert_eq!(on_rows, p.held, "{rows:#?}");
        let in_stage = |q: QueueId, count: fn(&FlowRow) -> u32| -> u32 {
            let own_rows = rows.iter().filter(|r| r.queue == Some(q)).map(|r| r.qlen);
            own_rows.sum::<u32>() + rows.iter().map(count).sum::<u32>()
        };
        assert_eq!(in_stage(QueueId::Requeued, |r| r.requeued), p.requeued);
        assert_eq!(in_stage(QueueId::RxHeld, |r| r.rx_held), p.rx_held);
    }
    assert!(
        every_stage > 10,
        "every stage held frames in {every_stage} snapshots"
    );
}

/// An HTB tree whose queues have long names (class 1:10 with pfifo_fast
/// `30:`, whose bands read `30: band 1`; class 1:20 with its hidden
/// default FIFO, `leaf 1:20`; HTB's parked frame, `1: parked`) under the
/// fixtures' load: on an 80-column screen the queue column (8 wide) shows
/// each queue's short name whole (`30:b1`, `1:20`, `1:parked`), not cut.
#[test]
fn queue_column_fits_80_columns() {
    let lines = [
        "tc qdisc add dev left root handle 1: htb default 20",
        "tc class add dev left parent 1: classid 1:1 htb rate 10mbit",
        "tc class add dev left parent 1:1 classid 1:10 htb rate 6mbit ceil 10mbit",
        "tc class add dev left parent 1:1 classid 1:20 htb rate 4mbit ceil 10mbit",
        "tc qdisc add dev left parent 1:10 handle 30: pfifo_fast",
        "tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 5202 0xffff flowid 1:10",
        "tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 7 0xffff flowid 1:10",
    ];
    let dev =
        bloatbox::qdisc::tree::DevSpec::new(Dir::LeftToRight, bloatbox::qdisc::kinds::BUILTIN);
    let tree = bloatbox::tc::build_tree(dev, &lines).expect("a valid tree");
    let mut s = Scenario::new(
        Box::new(tree),
        Box::new(PfifoFast::new(root_ctx(0))),
        link_params(),
    );
    s.add_standard_loads();
    let mut app = bloatbox::tui::fixtures::app_after(&mut s, 20, 100 * NS_PER_MS);
    let labels: Vec<(&str, &str)> = app
        .view()
        .flows
        .iter()
        .map(|r| (r.queue_label.as_str(), r.queue_short.as_str()))
        .collect();
    assert!(labels.contains(&("30: band 1", "30:b1")), "{labels:?}");
    assert!(labels.contains(&("leaf 1:20", "1:20")), "{labels:?}");
    // Largest backlog first (the default leaf's flows), then smallest
    // first (band 1 of 30:, the ring, the wire).
    for name in ["queue_labels_80x24", "queue_labels_ascending_80x24"] {
        let text = bloatbox::tui::text_capture(&app, 80, 24);
        let rows: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("flow "))
            .skip(1)
            .take_while(|l| !l.starts_with('+') && !l.starts_with('#'))
            .collect();
        assert!(rows.len() >= 4, "{text}");
        for r in &rows {
            let queue: String = r.chars().skip(18).take(8).collect();
            assert!(!queue.contains('…'), "cut queue label {queue:?} in\n{text}");
        }
        insta::assert_snapshot!(name, text);
        app.on_key(KeyEvent::new(KeyCode::Char('S'), KeyModifiers::NONE));
    }
}
