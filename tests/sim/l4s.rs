//! L4S traffic in the simulator: a Prague-like scalable flow beside a CUBIC
//! one at 20 Mbit/s, 10 ms each way, through fq_codel (with and without the
//! ECT(1) CE threshold), through DualPI2 (its L and C delays, the split
//! and the coupling, from the qdisc's xstats; the split against the step's
//! depth) and through a FIFO; and Heist and Morton's rate step from 50 to
//! 1 Mbit/s under fq_codel. The figures are in
//! docs/benchmarking.md ("L4S").

use super::load;
use bloatbox::qdisc::dualpi2::Dualpi2Xstats;
use bloatbox::qdisc::Xstats;
use bloatbox::sim::report::FlowReport;
use bloatbox::sim::scenario::CcAlgo;
use bloatbox::sim::{self, Scenario, SimReport};

/// `tests/scenarios/NAME` with its qdisc line replaced by `tc`: the only
/// line the L4S scenarios differ in.
fn with_qdisc(name: &str, tc: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name);
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("tc = "))
        .expect("one tc line");
    Scenario::from_toml(&text.replace(line, &format!("tc = [\"{tc}\"]"))).unwrap()
}

/// A flow's mean queueing delay: its mean one-way delay less the 10 ms wire
/// delay, ms.
fn queue_ms(f: &FlowReport) -> f64 {
    f.owd_mean_ns.unwrap() / 1e6 - 10.0
}

/// Throughput of the Prague and CUBIC flows, bit/s.
fn split(r: &SimReport) -> (f64, f64) {
    let p = r.flow("prague").unwrap().throughput_bps;
    let c = r.flow("cubic").unwrap().throughput_bps;
    (p, c)
}

#[test]
fn prague_and_cubic_share_fq_codel_evenly_and_prague_queues_more() {
    let r = sim::run(&load("l4s_fq_codel.toml")).unwrap();
    println!("{}", r.table());
    let (p, c) = split(&r);
    assert!(p + c > 19e6, "{p} + {c}");
    // Per-flow fair queueing: each about half of the 20 Mbit/s.
    assert!((0.45..0.55).contains(&(p / (p + c))), "{p} vs {c}");
    let prague = r.flow("prague").unwrap();
    let cubic = r.flow("cubic").unwrap();
    let ptcp = prague.tcp.unwrap();
    // Marks, never drops: CoDel marks ECT(1) as it marks ECT(0).
    assert_eq!(ptcp.stats.retransmits, 0);
    assert!(
        prague.forward.ce_marks > 1000,
        "{}",
        prague.forward.ce_marks
    );
    // The receiver's count reached the sender, all but the marks whose ACK
    // was still in flight at the end.
    let unreported = prague.forward.ce_marks - ptcp.stats.ce_reported;
    assert!(unreported <= 2, "{unreported}");
    assert!(ptcp.stats.ecn_reductions > 100, "{:?}", ptcp.stats);
    // CoDel's classic marking rate is too low for a scalable sender's
    // small reductions: Prague's queue stands well above the 5 ms target
    // (13.8 ms), CUBIC's near it (6.5 ms).
    assert!(
        (10.0..18.0).contains(&queue_ms(prague)),
        "{}",
        queue_ms(prague)
    );
    assert!((4.0..9.0).contains(&queue_ms(cubic)), "{}", queue_ms(cubic));
    assert!(cubic.forward.ce_marks < 200, "{}", cubic.forward.ce_marks);
}

#[test]
fn fq_codel_ce_threshold_on_ect1_gives_prague_a_shallow_queue() {
    // fq_codel's immediate marking of ECT(1) above 2 ms (Linux 5.19's
    // ce_threshold_selector): only the scalable flow's packets match, which
    // shows the frames carry ECT(1) through the qdisc.
    let r = sim::run(&with_qdisc(
        "l4s_fq_codel.toml",
        "tc qdisc add dev left root fq_codel ce_threshold 2ms ce_threshold_selector 0x01/0x03",
    ))
    .unwrap();
    println!("{}", r.table());
    let (p, c) = split(&r);
    assert!((0.45..0.55).contains(&(p / (p + c))), "{p} vs {c}");
    let prague = r.flow("prague").unwrap();
    let cubic = r.flow("cubic").unwrap();
    assert!(
        prague.forward.ce_marks > 3000,
        "{}",
        prague.forward.ce_marks
    );
    assert!(cubic.forward.ce_marks < 200, "{}", cubic.forward.ce_marks);
    assert!(queue_ms(prague) < 4.0, "{}", queue_ms(prague));
    assert!(r.directions[0].tc.contains("ce_threshold_selector 0x1/0x3"));
}

#[test]
fn through_a_fifo_prague_is_reno() {
    let r = sim::run(&load("l4s_pfifo.toml")).unwrap();
    println!("{}", r.table());
    let (p, c) = split(&r);
    assert!(p + c > 19e6, "{p} + {c}");
    assert_eq!(r.directions[0].ce_marks, 0);
    let prague = r.flow("prague").unwrap();
    let cubic = r.flow("cubic").unwrap();
    assert!(prague.tcp.unwrap().stats.fast_recoveries > 0);
    // One shared 1000-packet queue: both flows wait behind it (~0.4 s).
    for f in [prague, cubic] {
        assert!(queue_ms(f) > 300.0, "{}: {}", f.name, queue_ms(f));
    }
    assert!((queue_ms(prague) - queue_ms(cubic)).abs() < 50.0);
    // Without marks the scalable sender is Reno, packet for packet: the
    // same scenario with an ECN Reno flow (ECT(0), which pfifo ignores as
    // it ignores ECT(1)) runs identically.
    let mut reno = load("l4s_pfifo.toml");
    let spec = reno.tcp[0].get_mut();
    spec.cc = CcAlgo::Reno;
    spec.ecn = true;
    let q = sim::run(&reno).unwrap();
    let (a, b) = (prague.tcp.unwrap(), q.flow("prague").unwrap().tcp.unwrap());
    assert_eq!(a.stats.segments_sent, b.stats.segments_sent);
    assert_eq!(a.acked_bytes, b.acked_bytes);
    assert_eq!(a.cwnd, b.cwnd);
}

#[test]
fn rate_step_50_to_1_mbit_under_fq_codel_inflates_prague_rtt_to_seconds() {
    let r = sim::run(&load("l4s_step_fq_codel.toml")).unwrap();
    println!("{}", r.table());
    let prague = r.flow("prague").unwrap();
    // The largest RTT a segment saw: its one-way delay plus 40 ms back.
    let max_rtt_ms = prague.owd_max_ns as f64 / 1e6 + 40.0;
    // Heist and Morton measured 4346 ms; the simulator gives 4339 ms.
    assert!((3500.0..5000.0).contains(&max_rtt_ms), "{max_rtt_ms}");
    let tcp = prague.tcp.unwrap();
    assert_eq!(tcp.stats.retransmits, 0, "CoDel marks, never drops it");
    // 30 s after the step the flow's smoothed RTT is still above a second.
    assert!(tcp.srtt_ns.unwrap() > 1_000_000_000, "{:?}", tcp.srtt_ns);
}

/// `tests/scenarios/NAME` with a `[[snapshot]]` every 100 ms from 5 s to
/// the end of its 20 s, and DualPI2's xstats at each.
fn dualpi2_snapshots(name: &str) -> (SimReport, Vec<Dualpi2Xstats>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name);
    let mut text = std::fs::read_to_string(path).unwrap();
    for ms in (5_000..=20_000).step_by(100) {
        text.push_str(&format!("\n[[snapshot]]\nat = \"{ms}ms\"\n"));
    }
    let r = sim::run(&Scenario::from_toml(&text).unwrap()).unwrap();
    let xs = r
        .snapshots
        .iter()
        .map(|s| match &s.directions[0].qdisc.xstats {
            Some(Xstats::Dualpi2(x)) => *x,
            other => panic!("{other:?}"),
        })
        .collect();
    (r, xs)
}

/// The `q`-quantile (0..=1) of `v`.
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn prague_and_cubic_through_dualpi2_l_near_1ms_c_near_15ms_coupled() {
    let (r, xs) = dualpi2_snapshots("l4s_dualpi2.toml");
    println!("{}", r.table());
    println!("{}", r.directions[0].tc);
    let (p, c) = split(&r);
    let prague = r.flow("prague").unwrap();
    let cubic = r.flow("cubic").unwrap();
    let dl: Vec<f64> = xs.iter().map(|x| x.delay_l as f64 / 1e3).collect();
    let dc: Vec<f64> = xs.iter().map(|x| x.delay_c as f64 / 1e3).collect();
    let prob: Vec<f64> = xs.iter().map(|x| x.prob as f64 / u32::MAX as f64).collect();
    println!(
        "split {:.3} ({p:.0} / {c:.0}); queue prague {:.2} cubic {:.2} ms; delay_l p50 {:.3} p99 {:.3}; delay_c p50 {:.2} p99 {:.2}; prob p50 {:.4}",
        p / (p + c),
        queue_ms(prague),
        queue_ms(cubic),
        quantile(dl.clone(), 0.5),
        quantile(dl, 0.99),
        quantile(dc.clone(), 0.5),
        quantile(dc, 0.99),
        quantile(prob, 0.5),
    );
    let n = xs.len() as f64;
    let mean_p = xs
        .iter()
        .map(|x| x.prob as f64 / u32::MAX as f64)
        .sum::<f64>()
        / n;
    let mean_p2 = xs
        .iter()
        .map(|x| (x.prob as f64 / u32::MAX as f64).powi(2))
        .sum::<f64>()
        / n;
    let x = r.directions[0].qdisc.xstats.clone();
    let Some(Xstats::Dualpi2(end)) = x else {
        panic!("{x:?}")
    };
    // Coupled marks in the L-queue over its frames: `ecn_mark` less the
    // step's and CUBIC's. As in the kernel (`dualpi2_mark` counts
    // whenever `INET_ECN_set_ce` succeeds, and it does on a CE frame), a
    // frame the coupling marked and the step then found over 1 ms counts
    // twice: 146 coupled marks where Prague saw 109 that were not the
    // step's.
    let step = end.step_marks as u64;
    let coupled = u64::from(end.ecn_mark) - step - cubic.forward.ce_marks;
    let coupled_l = coupled as f64 / f64::from(end.packets_in_l);
    let p_c = cubic.forward.ce_marks as f64 / cubic.forward.sent_pkts as f64;
    println!(
        "mean p' {mean_p:.4} mean p'^2 {mean_p2:.6}; L coupled fraction {coupled_l:.4} (k p' {:.4}); C mark fraction {p_c:.6} ((p_L/k)^2 {:.6})",
        2.0 * mean_p,
        (coupled_l / 2.0).powi(2)
    );
    // Classification: every ECT(1) frame went to L, every ECT(0) one to C.
    assert_eq!(end.packets_in_l as u64, prague.forward.sent_pkts);
    assert_eq!(end.packets_in_c as u64, cubic.forward.sent_pkts);
    assert_eq!(prague.tcp.unwrap().stats.retransmits, 0);
    assert_eq!(cubic.tcp.unwrap().stats.retransmits, 0);
    // The L-queue's head delay stays about the 1 ms step (p99 1.06 ms),
    // the C-queue's near the 15 ms target (p50 13.8 ms; CUBIC's mean
    // queueing 15.1 ms, Prague's 2.6 ms counting the wait behind a C frame
    // on the wire).
    let dl99 = quantile(xs.iter().map(|x| x.delay_l as f64 / 1e3).collect(), 0.99);
    let dc50 = quantile(xs.iter().map(|x| x.delay_c as f64 / 1e3).collect(), 0.5);
    assert!((0.5..2.0).contains(&dl99), "{dl99}");
    assert!((10.0..18.0).contains(&dc50), "{dc50}");
    assert!(queue_ms(prague) < 4.0, "{}", queue_ms(prague));
    assert!(
        (12.0..18.0).contains(&queue_ms(cubic)),
        "{}",
        queue_ms(cubic)
    );
    // The split goes CUBIC's way (13% to Prague): the step makes 92% of
    // Prague's marks. At 20 Mbit/s 1 ms is 1.65 full frames, and the
    // simulator's Prague sends unpaced ACK-clocked bursts, so the second
    // frame of a burst behind a C frame on the wire crosses the step.
    assert!(p + c > 19e6, "{p} + {c}");
    assert!((0.08..0.2).contains(&(p / (p + c))), "{p} vs {c}");
    assert!(
        step as f64 > 0.85 * prague.forward.ce_marks as f64,
        "{end:?}"
    );
    // The coupling over the run: the L-queue's coupled marking is k p'
    // (0.034 against 0.031 from the snapshots' mean p'), the C-queue's
    // p'^2 (7.3e-4 against a mean p'^2 of 4.8e-4), so p_C = (p_L / k)^2
    // (7.3e-4 against 2.9e-4: the square of a mean is below the mean of
    // the square while p' varies), within the sampling of 100 ms
    // snapshots and of 21 C marks.
    assert!(
        (0.67..1.5).contains(&(coupled_l / (2.0 * mean_p))),
        "{coupled_l} {mean_p}"
    );
    assert!((0.5..2.0).contains(&(p_c / mean_p2)), "{p_c} {mean_p2}");
    let coupled_c = (coupled_l / 2.0).powi(2);
    assert!(
        (0.33..3.0).contains(&(p_c / coupled_c)),
        "{p_c} {coupled_c}"
    );
}

#[test]
fn a_deeper_dualpi2_step_gives_prague_more() {
    // The same flows with the L-queue's step at 3 and 5 ms (5 and 8 full
    // frames at 20 Mbit/s instead of 1.65): an unpaced burst no longer
    // crosses it, Prague's marks come from the coupling, and the split
    // turns to Prague's favour, 1.8:1 and 2.1:1, near the 2:1 Heist and
    // Morton measured. Prague's queueing stays under 3 ms (its frames go
    // first; the step is a ceiling it seldom reaches).
    for step in ["3ms", "5ms"] {
        let r = sim::run(&with_qdisc(
            "l4s_dualpi2.toml",
            &format!("tc qdisc add dev left root dualpi2 step_thresh {step}"),
        ))
        .unwrap();
        let (p, c) = split(&r);
        let prague = r.flow("prague").unwrap();
        println!(
            "step {step}: split {:.3}; queue prague {:.2} cubic {:.2} ms; prague ce {}",
            p / (p + c),
            queue_ms(prague),
            queue_ms(r.flow("cubic").unwrap()),
            prague.forward.ce_marks
        );
        assert!((0.58..0.75).contains(&(p / (p + c))), "{p} vs {c}");
        assert!(queue_ms(prague) < 4.0, "{}", queue_ms(prague));
        assert_eq!(prague.tcp.unwrap().stats.retransmits, 0);
    }
}
