//! Rate estimators on a live link (root only): a distribution-style HTB
//! script that sets `EST="est 1sec 4sec"` on every qdisc and class it adds
//! (tests/fixtures/tc/lartc-htb-est.sh) runs as pasted with `bloatbox tc`
//! as its `tc` against the running daemon; with an iperf3 flow steered to
//! class 1:20, `tc -s class show` prints a `rate ...bit ...pps` line for
//! every class, and 1:20's estimate agrees with the throughput its own
//! byte counter shows over the same seconds, and with iperf3's. tc's and
//! the kernel's refusals of estimators come back through the daemon as
//! tc prints them.

use crate::common;
use crate::turn;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{text, Daemon, Side};

/// The script, from the repository root.
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/tc/lartc-htb-est.sh"
);

/// The shaped rate the script gets (`RATE`), bit/s.
const SHAPED: f64 = 10e6;

/// Class `classid`'s object in `tc -s -j class show`.
fn class<'a>(classes: &'a serde_json::Value, classid: &str) -> &'a serde_json::Value {
    classes
        .as_array()
        .and_then(|a| a.iter().find(|c| c["handle"] == classid))
        .unwrap_or_else(|| panic!("no class {classid} in {classes}"))
}

/// `tc -s -j class show dev left`, and when it answered.
fn classes(d: &Daemon) -> (serde_json::Value, Instant) {
    let out = d.cli(&["tc", "-s", "-j", "class", "show", "dev", "left"]);
    let at = Instant::now();
    assert!(out.status.success(), "{}", text(&out));
    (serde_json::from_slice(&out.stdout).unwrap(), at)
}

/// The bits per second of a rate as tc prints it (`9985Kbit`).
fn bits(word: &str) -> f64 {
    let number = word.trim_end_matches("bit");
    let (digits, scale) = match number.chars().last() {
        Some('K') => (&number[..number.len() - 1], 1e3),
        Some('M') => (&number[..number.len() - 1], 1e6),
        Some('G') => (&number[..number.len() - 1], 1e9),
        _ => (number, 1.0),
    };
    digits
        .parse::<f64>()
        .unwrap_or_else(|_| panic!("rate {word}"))
        * scale
}

#[test]
#[ignore = "needs root"]
fn a_lartc_script_with_est_on_every_qdisc_and_class_prints_plausible_rates() {
    require!("iperf3", "sh");
    let _turn = turn();
    let mut d = Daemon::start("rate = \"100mbit\"\ndelay = \"2ms\"");

    // The script as pasted, bloatbox's tc in tc's place.
    let tc = format!("{} tc -c {}", d.bin.display(), d.config.display());
    let out = Command::new("sh")
        .arg(SCRIPT)
        .env("TC", &tc)
        .env("DEV", "left")
        .env("RATE", "10mbit")
        .output()
        .unwrap();
    assert!(out.status.success(), "the script failed: {}", text(&out));

    // Before any traffic every estimator reads zero.
    let shown = text(&d.cli(&["tc", "-s", "class", "show", "dev", "left"]));
    assert_eq!(
        shown.matches(" rate 0bit 0pps backlog").count(),
        4,
        "{shown}"
    );

    // One bulk flow to iperf3's port, which the script steers to 1:20
    // (rate 6mbit, ceil 10mbit: alone, it borrows up to the ceil).
    d.start_iperf3_server();
    let server = d.names.v4[1].clone();
    let client = d.spawn_in(
        Side::Left,
        &["iperf3", "-c", &server, "-t", "16", "-C", "cubic", "-J"],
    );

    // `est 1sec 4sec` weighs each second by 1/4: after 10 s at a steady
    // rate the estimate is within (3/4)^10 = 6 % of it.
    std::thread::sleep(Duration::from_secs(10));
    let (before, t0) = classes(&d);
    std::thread::sleep(Duration::from_secs(4));
    let (after, t1) = classes(&d);
    let shown = text(&d.cli(&["tc", "-s", "class", "show", "dev", "left"]));
    let iperf = client.wait_with_output().unwrap();

    let sent = |v: &serde_json::Value| class(v, "1:20")["bytes"].as_u64().unwrap();
    let measured = (sent(&after) - sent(&before)) as f64 * 8.0 / (t1 - t0).as_secs_f64();
    let est = class(&after, "1:20");
    let est_bits = est["rate"].as_u64().expect("1:20 has a rate") as f64 * 8.0;
    let est_pps = est["pps"].as_u64().expect("1:20 has pps") as f64;
    let json: serde_json::Value = serde_json::from_slice(&iperf.stdout).unwrap_or_default();
    let iperf_bits = json["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or(0.0);
    eprintln!(
        "1:20 over {:.2} s: counter {:.2} Mbit/s, estimator {:.2} Mbit/s {est_pps} pps \
         ({:.0} B a frame), iperf3 {:.2} Mbit/s\n{shown}",
        (t1 - t0).as_secs_f64(),
        measured / 1e6,
        est_bits / 1e6,
        est_bits / 8.0 / est_pps.max(1.0),
        iperf_bits / 1e6
    );

    // The flow fills the shaped rate, and the estimate follows it.
    assert!(
        (0.6 * SHAPED..=1.05 * SHAPED).contains(&measured),
        "1:20 sent {measured} bit/s"
    );
    assert!(
        (est_bits - measured).abs() <= 0.15 * measured,
        "estimator {est_bits} bit/s, counter {measured} bit/s"
    );
    assert!(
        (est_bits - iperf_bits).abs() <= 0.2 * iperf_bits,
        "estimator {est_bits} bit/s, iperf3 {iperf_bits} bit/s"
    );
    // Full-sized frames: bytes per packet of the estimates near the MTU.
    let per_frame = est_bits / 8.0 / est_pps;
    assert!((1000.0..=1600.0).contains(&per_frame), "{per_frame} B");
    // The parent carries the same traffic; the idle leaves next to nothing.
    let parent = class(&after, "1:1")["rate"].as_u64().unwrap() as f64 * 8.0;
    assert!(
        (parent - est_bits).abs() <= 0.1 * est_bits,
        "1:1 {parent} bit/s"
    );
    assert!(class(&after, "1:30")["rate"].as_u64().unwrap() * 8 < 100_000);

    // The text form: every class has its rate line, 1:20's as -j says.
    let lines: Vec<&str> = shown.lines().collect();
    let rate_lines: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with(" rate ") && l.contains("pps backlog "))
        .collect();
    assert_eq!(rate_lines.len(), 4, "{shown}");
    let at = lines
        .iter()
        .position(|l| l.starts_with("class htb 1:20 "))
        .expect("class 1:20 listed");
    let words: Vec<&str> = lines[at + 2].split_whitespace().collect();
    assert_eq!(words[0], "rate", "{shown}");
    let text_bits = bits(words[1]);
    assert!(
        (text_bits - est_bits).abs() <= 0.1 * est_bits,
        "{} vs {est_bits}",
        words[1]
    );
    assert!(words[2].ends_with("pps"), "{shown}");

    // The qdiscs carry theirs too (the root's, and the leaf of 1:20).
    let qdiscs = text(&d.cli(&["tc", "-s", "qdisc", "show", "dev", "left"]));
    assert_eq!(qdiscs.matches("pps backlog ").count(), 4, "{qdiscs}");

    // tc's own refusals (an interval above 8 s, a time that does not
    // parse), on the right device, which the script left alone: nothing
    // is added.
    let out = d.cli(&[
        "tc", "qdisc", "add", "dev", "right", "root", "est", "16sec", "64sec", "pfifo",
    ]);
    assert_eq!(out.status.code(), Some(255), "{}", text(&out));
    assert!(
        text(&out).contains("Error: estimator parameters are out of range."),
        "{}",
        text(&out)
    );
    let out = d.cli(&[
        "tc",
        "qdisc",
        "add",
        "dev",
        "right",
        "root",
        "estimator",
        "fast",
        "4sec",
        "pfifo",
    ]);
    assert_eq!(out.status.code(), Some(255), "{}", text(&out));
    assert!(
        text(&out).contains("Error: argument \"invalid estimator interval\" is wrong: estimator"),
        "{}",
        text(&out)
    );
    let right = text(&d.cli(&["tc", "qdisc", "show", "dev", "right"]));
    assert!(
        !right.contains("qdisc pfifo "),
        "nothing was added: {right}"
    );

    assert!(d.stop().success(), "{}", d.log_text());
    assert_eq!(d.leftovers(), Vec::<String>::new());
}
