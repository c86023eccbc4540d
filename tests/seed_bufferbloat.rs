//! Seed experiment 1 (root only): a 100 Mbit/s link loaded by 8 cubic TCP
//! flows while ping runs. Under fq_codel and under HTB+SFQ ping stays within
//! a few ms of the idle RTT; under pfifo_fast behind a 1024-descriptor ring
//! without BQL it grows by tens of ms. (QFQ, the seed's third discipline,
//! is not run here: a live QFQ run once moved no traffic at all; see
//! RELIABILITY.md.) Fewer flows (8, one direction) and
//! shorter runs (6 s, 2 s warm-up) than the netdev experiments, to stay
//! inside the test time budget on two cores. Assertions are orderings and
//! ratios within this one run.

use std::time::Duration;

use bloatbox::experiment::{run_one, skip_reason, ConfigResult, TestOptions};

mod seed;
use seed::{candidate, idle_options};

fn p50_ms(r: &ConfigResult) -> f64 {
    r.summary.ping.as_ref().expect("ping ran").latency.p50_ms
}

#[test]
fn ping_stays_near_idle_under_fq_codel_and_sfq_but_not_behind_a_deep_ring() {
    if let Some(why) = skip_reason() {
        eprintln!("{why}");
        return;
    }
    let loaded = TestOptions {
        flows: 8,
        bidirectional: false,
        duration: Duration::from_secs(6),
        warmup: Duration::from_secs(2),
        ping_interval: Some(Duration::from_millis(50)),
        udp_rr: false,
        realtime: Some(50),
        ..TestOptions::default()
    };
    let idle_opts = idle_options(&loaded);
    let tag = 100;
    let run = |name: &str, tag: usize, opts: &TestOptions| {
        run_one(&candidate(name), tag, opts, &mut |_, _| true).unwrap()
    };
    let fq = run("fq-codel", tag, &loaded);
    let idle = run("fq-codel", tag + 1, &idle_opts);
    let sfq = run("htb-sfq-100mbit", tag + 2, &loaded);
    let deep = run("pfifo-fast-deep-ring", tag + 3, &loaded);
    let base = p50_ms(&idle);
    let rise = |r: &ConfigResult| p50_ms(r) - base;
    eprintln!(
        "ping p50: idle {base:.2} ms, fq_codel +{:.2}, htb+sfq +{:.2}, pfifo_fast deep ring +{:.2} ms; \
         goodput {:.1} / {:.1} / {:.1} Mbit/s",
        rise(&fq),
        rise(&sfq),
        rise(&deep),
        fq.summary.up_mbit,
        sfq.summary.up_mbit,
        deep.summary.up_mbit
    );
    for (r, kind) in [(&fq, "fq_codel"), (&sfq, "htb"), (&deep, "pfifo_fast")] {
        assert_eq!(r.paths[0].qdisc, kind, "{}", r.name);
    }
    // The link is actually loaded in all three runs.
    for r in [&fq, &sfq, &deep] {
        assert!(
            r.summary.up_mbit > 50.0,
            "{}: {:.1} Mbit/s",
            r.name,
            r.summary.up_mbit
        );
    }
    assert!(
        rise(&fq) < 5.0,
        "fq_codel adds {:.2} ms; link state at the end: {:?}",
        rise(&fq),
        fq.paths
    );
    assert!(rise(&sfq) < 5.0, "htb+sfq adds {:.2} ms", rise(&sfq));
    assert!(
        rise(&deep) > 20.0,
        "deep ring adds only {:.2} ms",
        rise(&deep)
    );
    assert!(rise(&deep) > 4.0 * rise(&fq).max(1.0));
}
