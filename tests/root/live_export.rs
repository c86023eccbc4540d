//! Root-only live tests of issue 7's plumbing: the pcapng capture of
//! `bloatbox run --pcap` (frames in, out and dropped, with their times and
//! drop comments), and, over the control socket of a running link, `set`
//! of link shape keys (all or nothing) and the `metrics` text against the
//! raw snapshot.
//!
//! Root only (`#[ignore = "needs root"]`: a plain `cargo test` reports them
//! as ignored; run without root they fail). Skipped, with the reason
//! printed, where `ip`, `ping` or `bash` is missing. Every link has names
//! unique to this process (the harness's generated names, `common::Names`)
//! and is removed on every exit path: `bloatbox run` tears its link down
//! itself, and `harness::Link` and `common::Daemon` do on drop.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bloatbox::control::{Client, DaemonRefusal, Request};
use bloatbox::harness::{Link, Side};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption;
use pcap_file::pcapng::{Block, PcapNgReader};

use crate::common;
use crate::turn;
use common::{Daemon, Names};

/// One packet of a capture: interface, time (ns), bytes, comment.
struct Pkt {
    interface: u32,
    ns: u64,
    data: Vec<u8>,
    comment: Option<String>,
}

fn read_pcapng(path: &Path) -> Vec<Pkt> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = PcapNgReader::new(file).unwrap();
    let mut pkts = Vec::new();
    while let Some(block) = r.next_block() {
        if let Block::EnhancedPacket(p) = block.unwrap() {
            pkts.push(Pkt {
                interface: p.interface_id,
                ns: p.timestamp.as_nanos() as u64,
                data: p.data.to_vec(),
                comment: p.options.iter().find_map(|o| match o {
                    EnhancedPacketOption::Comment(c) => Some(c.to_string()),
                    _ => None,
                }),
            });
        }
    }
    assert_eq!(r.interfaces().len(), 3, "in, out and dropped");
    pkts
}

/// ICMP echo request (type 8) in an untagged IPv4 Ethernet frame.
fn is_echo_request(f: &[u8]) -> bool {
    f.len() > 34
        && f[12..14] == [0x08, 0x00]
        && f[23] == 1
        && f[14 + 4 * (f[14] as usize & 0xf)] == 8
}

/// `bloatbox run` with these arguments; panics with its stderr on failure.
fn run(args: &[&str]) {
    let out = common::bloatbox().arg("run").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "bloatbox run {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "needs root"]
fn live_capture_has_ingress_egress_and_ns_times() {
    require!("ping", "bash");
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("cap");
    run(&[
        "--set",
        "link.delay=10ms",
        "--pcap",
        pcap.to_str().unwrap(),
        "--left",
        "ping -n -q -c 20 -i 0.02 -W 1 $BLOATBOX_PEER_V4",
    ]);
    let pkts = read_pcapng(&pcap.join("left_to_right.pcapng"));
    let requests = |iface: u32| -> Vec<&Pkt> {
        pkts.iter()
            .filter(|p| p.interface == iface && is_echo_request(&p.data))
            .collect()
    };
    let (ins, outs) = (requests(0), requests(1));
    assert_eq!((ins.len(), outs.len()), (20, 20));
    for i in &ins {
        let o = outs
            .iter()
            .find(|o| o.data == i.data)
            .expect("every request leaves as it came");
        let transit = o.ns - i.ns;
        assert!(
            transit >= 10_000_000,
            "egress − ingress = {transit} ns < 10 ms delay"
        );
    }
    // Frames in = out + dropped (+ any still held at the end).
    let count = |iface: u32| pkts.iter().filter(|p| p.interface == iface).count();
    assert!(count(1) + count(2) <= count(0));
    // The replies travel right→left.
    let back = read_pcapng(&pcap.join("right_to_left.pcapng"));
    let replies = back
        .iter()
        .filter(|p| p.interface == 1 && p.data.len() > 34 && p.data[23] == 1 && p.data[34] == 0)
        .count();
    assert_eq!(replies, 20);
    // Where Wireshark's reader is installed, it reads the files too.
    let tshark = Command::new("tshark")
        .args(["-r"])
        .arg(pcap.join("left_to_right.pcapng"))
        .args(["-T", "fields", "-e", "frame.interface_id"])
        .output();
    match tshark {
        Ok(out) if out.status.success() => {
            let ids = String::from_utf8_lossy(&out.stdout);
            assert_eq!(ids.lines().count(), pkts.len(), "tshark sees every packet");
        }
        _ => eprintln!("tshark not installed: checked with pcap-file only"),
    }
}

#[test]
#[ignore = "needs root"]
fn live_capture_shows_qdisc_drops_with_their_reason() {
    require!("ping", "bash");
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let (pcap, report) = (dir.path().join("l.pcapng"), dir.path().join("r.json"));
    // A 1 Mbit/s link, one TX descriptor and a 3-packet pfifo: a burst of
    // 40 UDP datagrams of 1000 bytes (bash's /dev/udp) overflows it. One
    // ping first resolves the peer's address, so the burst does not wait
    // in the neighbour table for ARP, and the command outlives the burst
    // by a moment, so the link is not torn down before reading it (both
    // were races on a loaded machine).
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        "[link.left_to_right]\nrate = \"1mbit\"\ntx_ring = 1\nbql = false\n\
         tc = [\"tc qdisc add dev left root pfifo limit 3\"]\n",
    )
    .unwrap();
    run(&[
        "-c",
        config.to_str().unwrap(),
        "--pcap-left",
        pcap.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--",
        "bash",
        "-c",
        "ping -n -q -c 1 -W 2 $BLOATBOX_PEER_V4 >/dev/null; s=$(printf %1000s); \
         for i in $(seq 40); do printf %s \"$s\" > /dev/udp/$BLOATBOX_PEER_V4/9; done; sleep 0.3",
    ]);
    let pkts = read_pcapng(&pcap);
    let dropped: Vec<&Pkt> = pkts.iter().filter(|p| p.interface == 2).collect();
    assert!(!dropped.is_empty(), "the burst overflowed the pfifo");
    for p in &dropped {
        assert_eq!(p.comment.as_deref(), Some("dropped: queue_full"));
    }
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let path = &report["link"]["snapshot"]["bridge"]["paths"][0];
    assert_eq!(
        path["drops_by_reason"]["queue_full"].as_u64(),
        Some(dropped.len() as u64),
        "{path}"
    );
    let capture = &report["link"]["snapshot"]["bridge"]["capture"][0];
    assert_eq!(capture["dropped"].as_u64(), Some(0), "{capture}");
}

fn call(link: &Link, req: &Request) -> Result<serde_json::Value, DaemonRefusal> {
    Client::connect(link.control_socket())
        .unwrap()
        .call(req)
        .unwrap()
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Echo replies received of `count` pings left → right.
fn ping(link: &Link, count: u32) -> u32 {
    let peer = link.endpoint(Side::Right).ipv4.addr.to_string();
    let out = link
        .command(Side::Left, "ping")
        .args([
            "-n",
            "-q",
            "-c",
            &count.to_string(),
            "-i",
            "0.01",
            "-W",
            "1",
            &peer,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("received"))
        .unwrap_or_else(|| panic!("{text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.starts_with("received"))
        .unwrap();
    words[at - 1].parse().unwrap()
}

#[test]
#[ignore = "needs root"]
fn live_set_shape_and_metrics_over_the_control_socket() {
    require!("ping", "bash");
    let _turn = turn();
    let link = Link::builder().set("link.delay=1ms").up().unwrap();
    assert_eq!(ping(&link, 10), 10);

    // A bad value anywhere: refused, and nothing changes.
    let e = call(
        &link,
        &Request::Set {
            args: args(&["left.loss=100%", "left.jitter=soon"]),
        },
    )
    .unwrap_err();
    assert!(e.message.contains("left.jitter=soon"), "{e}");
    assert_eq!(ping(&link, 10), 10, "the loss was not applied");

    // All of it: every request lost on the wire; the reply shows the shape.
    let eff = call(
        &link,
        &Request::Set {
            args: args(&["left.loss=100%", "left.seed=5"]),
        },
    )
    .unwrap();
    let netem = eff["shape"]["left"]["netem"].as_str().unwrap();
    assert!(
        netem.contains("loss 100%") && netem.contains("seed 5"),
        "{eff}"
    );
    assert_eq!(ping(&link, 5), 0);
    let snap = call(&link, &Request::Snapshot).unwrap();
    assert_eq!(snap["bridge"]["paths"][0]["seed"].as_u64(), Some(5));
    call(
        &link,
        &Request::Set {
            args: args(&["left.loss=none"]),
        },
    )
    .unwrap();
    assert_eq!(ping(&link, 5), 5);

    // The metrics text and the raw snapshot, taken from the same snapshot.
    let (text, snap) = (0..50)
        .find_map(|_| {
            let text = call(&link, &Request::Metrics).unwrap();
            let snap = call(&link, &Request::Snapshot).unwrap();
            let text = text.as_str().unwrap().to_string();
            let samples = bloatbox::metrics::parse_samples(&text).unwrap();
            let at = samples
                .iter()
                .find(|(n, _)| n == "bloatbox_snapshot_time_seconds")?
                .1;
            let same = (at - snap["at"].as_f64()? / 1e9).abs() < 1e-6;
            if !same {
                std::thread::sleep(Duration::from_millis(20));
            }
            same.then_some((samples, snap))
        })
        .expect("two requests within one snapshot period");
    let value = |series: &str| text.iter().find(|(n, _)| n == series).map(|s| s.1);
    for (i, dir) in ["left_to_right", "right_to_left"].iter().enumerate() {
        let c = &snap["bridge"]["paths"][i]["counters"];
        let l = format!("{{direction=\"{dir}\"}}");
        assert_eq!(
            value(&format!("bloatbox_frames_in_total{l}")),
            c["frames_in"].as_f64(),
            "{dir}"
        );
        assert_eq!(
            value(&format!("bloatbox_frames_out_total{l}")),
            c["frames_out"].as_f64(),
            "{dir}"
        );
        let wire = format!("bloatbox_drops_total{{direction=\"{dir}\",reason=\"wire_loss\"}}");
        let reasons = snap["bridge"]["paths"][i]["drops_by_reason"]["wire_loss"]
            .as_f64()
            .unwrap_or(0.0);
        assert_eq!(value(&wire), Some(reasons), "{dir}");
    }
    assert!(
        value("bloatbox_drops_total{direction=\"left_to_right\",reason=\"wire_loss\"}").unwrap()
            >= 5.0
    );
    link.shutdown().unwrap();
}

#[test]
#[ignore = "needs root"]
fn live_up_serves_metrics_writes_the_file_and_captures() {
    require!("ping", "bash");
    let _turn = turn();
    let files = tempfile::tempdir().unwrap();
    let (prom, cap) = (files.path().join("m.prom"), files.path().join("cap"));
    let (prom_arg, cap_arg) = (prom.to_str().unwrap(), cap.to_str().unwrap());
    let mut up = Daemon::start_with(
        Names::unique(),
        "",
        &[
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-period",
            "100ms",
            "--metrics-file",
            prom_arg,
            "--pcap",
            cap_arg,
        ],
    );
    // The bound port is in the log.
    let t0 = std::time::Instant::now();
    let addr = loop {
        let text = up.log_text();
        if let Some(rest) = text.split("metrics at http://").nth(1) {
            break rest.split('/').next().unwrap().to_string();
        }
        assert!(up.running(), "daemon exited: {text}");
        assert!(t0.elapsed() < Duration::from_secs(15), "not up: {text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let peer = up.names.v4[1].clone();
    let out = up.exec(
        common::Side::Left,
        &["ping", "-n", "-q", "-c", "5", "-i", "0.05", &peer],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let get = |request: &str| {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        reply
    };
    let reply = get("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    let body = reply.split_once("\r\n\r\n").unwrap().1;
    let samples = bloatbox::metrics::parse_samples(body).unwrap();
    let frames_in = |s: &[(String, f64)]| {
        s.iter()
            .find(|(n, _)| n == "bloatbox_frames_in_total{direction=\"left_to_right\"}")
            .unwrap()
            .1
    };
    assert!(frames_in(&samples) >= 5.0);
    let capture = samples
        .iter()
        .find(|(n, _)| n == "bloatbox_capture_records_total{direction=\"left_to_right\"}")
        .unwrap()
        .1;
    assert!(capture >= 10.0, "5 requests in and out at least: {capture}");
    // `bloatbox metrics` prints the same kind of text.
    let out = up.cli(&["metrics"]);
    assert!(out.status.success());
    let cli = bloatbox::metrics::parse_samples(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert!(frames_in(&cli) >= frames_in(&samples));
    // The file is rewritten every 100 ms: a rewrite soon counts the pings.
    let read_file =
        || bloatbox::metrics::parse_samples(&std::fs::read_to_string(&prom).unwrap()).unwrap();
    common::wait_until(Duration::from_secs(5), || frames_in(&read_file()) >= 5.0);
    assert!(frames_in(&read_file()) >= 5.0);

    up.stop();
    assert!(
        up.log_text().contains("capture of left→right written: ")
            && up.log_text().contains(" lost to write errors"),
        "{}",
        up.log_text()
    );
    let pkts = read_pcapng(&cap.join("left_to_right.pcapng"));
    let echo = |iface: u32| {
        pkts.iter()
            .filter(|p| p.interface == iface && is_echo_request(&p.data))
            .count()
    };
    assert_eq!((echo(0), echo(1)), (5, 5));
}
