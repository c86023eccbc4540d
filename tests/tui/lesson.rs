//! The lesson screen of `demo --tui` through ratatui's TestBackend, at the
//! end of each of the demo's three phases (and once in a warm-up), at
//! 80×24 and 160×48, compared with committed insta snapshots
//! (tests/tui/snapshots/). The link's side is recorded snapshots of the real
//! core under load (`tui::fixtures::Scenario`: pfifo_fast, fq_codel, SFQ on
//! the fixtures' 10 Mbit/s, 10 ms link) taken every 100 ms as the live
//! driver takes them; the probes' samples are modelled on it: a ping waits
//! behind both directions' FIFO queues under pfifo_fast, and jumps them
//! (a sparse flow) under fq_codel and SFQ. Each phase's row is rendered by
//! the comparison table's own code from a result holding the very samples
//! the screen was fed, so the on-screen percentiles and the row agree.

use bloatbox::dir::Dir;
use bloatbox::experiment::{
    table, Candidate, ConfigResult, DatapathTotals, PathTotals, Report, TestOptions,
};
use bloatbox::load::feed::Probe;
use bloatbox::load::icmp::PingRaw;
use bloatbox::load::rrul::{Received, RrulRaw, ThroughputSample};
use bloatbox::load::stats::{LatencyStats, Sample};
use bloatbox::load::udp_rr::UdpRrRaw;
use bloatbox::qdisc::sfq::{Sfq, SfqOptions};
use bloatbox::time::NS_PER_MS;
use bloatbox::tui::fixtures::{link_params, root_ctx, Scenario};
use bloatbox::tui::lesson::{Lesson, Phase, Stage};
use bloatbox::tui::lesson_screen::draw_lesson;
use bloatbox::tui::probe_panel::ms as fmt_ms;
use bloatbox::tui::render::capture;
use std::time::Duration;

/// The driver's tick, and the phases' length and warm-up.
const STEP_NS: u64 = 100 * NS_PER_MS;
const DURATION: Duration = Duration::from_secs(6);
const WARMUP: Duration = Duration::from_secs(1);
/// UDP_RR transactions per tick (one every 20 ms).
const RR_PER_TICK: usize = 5;

fn options() -> TestOptions {
    TestOptions {
        duration: DURATION,
        warmup: WARMUP,
        ..TestOptions::default()
    }
}

/// The demo's phases, each with the scenario that stands in for its link.
fn phases() -> Vec<(Candidate, Scenario)> {
    let sfq = || {
        let perturb = SfqOptions {
            perturb_period: 10,
            ..SfqOptions::default()
        };
        Box::new(Sfq::with_options(root_ctx(0x10), &perturb).unwrap())
    };
    let mut sfq_link = Scenario::new(sfq(), sfq(), link_params());
    sfq_link.add_standard_loads();
    let scenarios = [
        Scenario::pfifo_fast_under_load(),
        Scenario::fq_codel_under_load(),
        sfq_link,
    ];
    Candidate::demo()
        .unwrap()
        .into_iter()
        .zip(scenarios)
        .collect()
}

fn lesson(cands: &[(Candidate, Scenario)]) -> Lesson {
    let phases = cands
        .iter()
        .map(|(c, _)| Phase {
            name: c.name.clone(),
            caption: c.config.lesson.caption.clone().unwrap(),
        })
        .collect();
    Lesson::new(phases, DURATION.as_secs_f64(), WARMUP.as_secs_f64())
}

fn screen(lesson: &Lesson, w: u16, h: u16) -> String {
    let text = capture(w, h, |f| draw_lesson(f, lesson));
    assert_eq!(text.lines().count(), h as usize);
    assert!(text.lines().all(|l| l.chars().count() <= w as usize));
    text
}

/// What `rrul` records before the load starts.
fn empty_raw() -> RrulRaw {
    RrulRaw {
        ping: Some(PingRaw::default()),
        udp_rr: Some(UdpRrRaw::default()),
        throughput: Vec::new(),
        t0: None,
        ..RrulRaw::default()
    }
}

/// Runs the phase's ticks `ticks` as the driver does: the link's snapshot,
/// then the probes' samples of that tick, recorded in `raw` as `rrul`
/// records them (with the receivers' counters).
fn run_ticks(
    lesson: &mut Lesson,
    s: &mut Scenario,
    fifo: bool,
    ticks: std::ops::RangeInclusive<usize>,
    raw: &mut RrulRaw,
) {
    for i in ticks {
        let t = i as f64 * STEP_NS as f64 / 1e9;
        s.run_until(s.now() + STEP_NS);
        let snap = s.snapshot();
        let delivered = Dir::ALL.map(|d| snap.bridge.path(d).counters.bytes_out);
        lesson.on_tick(t, Some(snap), Vec::new());
        let q = *lesson.probes.queue.last().unwrap();
        let predicted = lesson.link_rtt_ms(&q).unwrap();
        let idle = predicted - q.delay_ms[0] - q.delay_ms[1];
        // A FIFO makes the ping wait behind both queues; flow queueing
        // serves it ahead of them, a frame time or so above the idle RTT.
        let base = if fifo { predicted } else { idle + 1.2 };
        let jitter = |k: usize| ((i * 7 + k * 3) % 11) as f64 * 0.09;
        let mut samples = vec![(Probe::Ping, Sample::rtt(t - 0.05, (base + jitter(0)) * 1e3))];
        // Each UDP_RR request waits behind the left→right queue (under a
        // FIFO) and its response behind the right→left one; the server
        // takes 0.1 ms.
        let way = |d: usize| idle / 2.0 + if fifo { q.delay_ms[d] } else { 0.6 };
        for k in 0..RR_PER_TICK {
            let there = way(0) + jitter(k + 1);
            let back = way(1);
            samples.push((
                Probe::UdpRr,
                Sample {
                    t: t - 0.1 + k as f64 * 0.02,
                    rtt_us: (there + back + 0.1) * 1e3,
                    one_way_us: Some([there * 1e3, back * 1e3]),
                },
            ));
        }
        for (p, s) in &samples {
            match p {
                Probe::Ping => {
                    let ping = raw.ping.as_mut().unwrap();
                    ping.sent.push(s.t);
                    ping.samples.push(*s);
                }
                Probe::UdpRr => raw.udp_rr.as_mut().unwrap().samples.push(*s),
                // The fixture runs no L4S probes.
                Probe::PingL4s | Probe::UdpRrL4s => {}
            }
        }
        lesson.on_tick(t, None, samples);
        let r = |b: u64| Received {
            read: b,
            arrived: b,
        };
        raw.throughput.push(ThroughputSample {
            t,
            up: r(delivered[0]),
            down: r(delivered[1]),
            ..ThroughputSample::default()
        });
    }
}

/// The phase's result as `run_one` makes it, from what it measured.
fn result(cand: &Candidate, s: &Scenario, raw: RrulRaw) -> ConfigResult {
    let snap = s.snapshot();
    let paths = Dir::ALL.map(|d| {
        let p = snap.bridge.path(d);
        PathTotals {
            qdisc: p.qdisc.kind.clone(),
            drops: p.counters.total_drops(),
            frames: p.counters.frames_in,
            ..PathTotals::default()
        }
    });
    ConfigResult {
        name: cand.name.clone(),
        config: cand.config.clone(),
        config_file: None,
        summary: raw.summary(WARMUP.as_secs_f64()),
        paths,
        datapath: DatapathTotals::default(),
        final_qdiscs: Default::default(),
        raw,
    }
}

fn table_lines(results: &[ConfigResult], width: u16) -> Vec<String> {
    let report = Report {
        options: options(),
        results: results.to_vec(),
        started: std::time::SystemTime::UNIX_EPOCH,
        kernel_release: String::new(),
    };
    table::lines_at(&report, width)
}

/// The row of `name` in a screen's table, split into cells.
fn row<'a>(screen: &'a str, name: &str) -> Vec<&'a str> {
    screen
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row {name} in\n{screen}"))
        .split_whitespace()
        .collect()
}

#[test]
fn each_phase_shows_its_caption_the_measured_rtt_and_its_row_when_it_ends() {
    let mut cands = phases();
    let mut lesson = lesson(&cands);
    let ticks = (DURATION.as_nanos() as u64 / STEP_NS) as usize;
    let mut results = Vec::new();
    let n = cands.len();
    for (i, (cand, scenario)) in cands.iter_mut().enumerate() {
        lesson.start_phase(i);
        let starting = screen(&lesson, 80, 24);
        assert!(starting.contains("bringing the link up"), "{starting}");
        let fifo = i == 0;
        let mut raw = empty_raw();
        run_ticks(&mut lesson, scenario, fifo, 1..=5, &mut raw);
        if i == 0 {
            // In the warm-up: percentiles over everything so far.
            let warm = screen(&lesson, 80, 24);
            assert!(warm.contains("t 0.5/6 s warm-up"), "{warm}");
            assert!(warm.contains("measured (so far)"), "{warm}");
            insta::assert_snapshot!("lesson_warmup_80x24", warm);
        }
        run_ticks(&mut lesson, scenario, fifo, 6..=ticks, &mut raw);
        let r = result(cand, scenario, raw);
        // The live percentiles are the table's: the same samples through
        // the same summary.
        let ping = r.summary.ping.as_ref().unwrap();
        let probes = &lesson.probes;
        assert_eq!(
            probes.stats[Probe::Ping as usize].p50_ms,
            ping.latency.p50_ms
        );
        let rr = r.summary.udp_rr.as_ref().unwrap();
        assert_eq!(
            probes.stats[Probe::UdpRr as usize].p99_ms,
            rr.latency.p99_ms
        );
        // The one-way percentiles: each direction's delays of the same
        // samples, after the warm-up.
        let rr_samples = &r.raw.udp_rr.as_ref().unwrap().samples;
        for d in Dir::ALL {
            let ow = LatencyStats::one_way(rr_samples, WARMUP.as_secs_f64(), d.index());
            assert_eq!(probes.one_way[d.index()], ow);
            assert!(ow.samples > 0);
        }
        // Under the FIFO each direction's one-way delay carries its own
        // queue: the upload's (left→right) p50 above the propagation delay
        // by at least the fq_codel phase's whole round trip.
        if fifo {
            let prop_ms = lesson
                .app
                .latest
                .as_ref()
                .unwrap()
                .bridge
                .path(Dir::LeftToRight)
                .params
                .delay_ns as f64
                / 1e6;
            assert!(
                probes.one_way[0].p50_ms > prop_ms + 5.0,
                "{:?}",
                probes.one_way
            );
        }
        results.push(r);
        assert!(!lesson.end_phase(), "not paused: no hold");
        for (w, h) in [(80, 24), (160, 48)] {
            lesson.table = table_lines(&results, w);
            let text = screen(&lesson, w, h);
            // The caption (its first words: it wraps at 80 columns).
            let caption = &lesson.phases[i].caption;
            let head: String = caption.chars().take(30).collect();
            assert!(text.contains(&head), "no caption {head:?} in\n{text}");
            assert!(
                text.contains(&format!("phase {}/{n} {}", i + 1, cand.name)),
                "{text}"
            );
            // Every row so far, with the ping's p50 as the table prints it.
            for done in &results {
                let cells = row(&text, &done.name);
                let p50 = done.summary.ping.as_ref().unwrap().latency.p50_ms;
                assert!(
                    cells.contains(&format!("{p50:.2}").as_str()),
                    "{cells:?}\n{text}"
                );
            }
            assert!(text.contains("link queue / udp_rr one-way:"), "{text}");
            let ow = &lesson.probes.one_way[0];
            assert!(
                text.contains(&format!("1-way p50/95/99 {}/", fmt_ms(ow.p50_ms))),
                "{text}"
            );
            insta::assert_snapshot!(format!("lesson_phase{}_{w}x{h}", i + 1), text);
        }
    }
    assert_eq!(lesson.stage, Stage::Over);
    let last = screen(&lesson, 80, 24);
    assert!(last.contains("lesson over"), "{last}");
    assert!(last.contains("q quit and print the table"), "{last}");
    // The FIFO's ping waits behind the queue: many times fq_codel's.
    let p50 = |r: &ConfigResult| r.summary.ping.as_ref().unwrap().latency.p50_ms;
    assert!(p50(&results[0]) > 5.0 * p50(&results[1]));
}

#[test]
fn a_screen_smaller_than_80x24_says_so() {
    let cands = phases();
    let lesson = lesson(&cands);
    let text = capture(79, 24, |f| draw_lesson(f, &lesson));
    assert!(text.contains("needs at least 80×24"), "{text}");
}
