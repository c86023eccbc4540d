//! Root-only: the TAP offload mode end to end, with real TAPs in fresh,
//! uniquely named namespaces and the datapath thread between them (no
//! daemon). A TCP bulk transfer over an unlimited link crosses as GSO
//! super-frames (the link counts frames far above the MTU); over a
//! 100 Mbit/s link the same super-frames are read from the TAP but the link
//! sees per-MTU segments only. Conservation holds and no frame is a
//! `bad_offload` drop. With GRO on, segments the link releases together
//! reach the receiving kernel as super-frames it takes whole. Skipped, with the reason printed, where not root or
//! where `iperf3` is missing; the namespaces are removed on every exit path
//! (the topology guard).

use std::net::IpAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use bloatbox::bridge::Bridge;
use bloatbox::datapath::{Datapath, DatapathConfig, LiveSnapshot};
use bloatbox::dir::Dir;
use bloatbox::link::{LinkParams, Path};
use bloatbox::netns::{SideSpec, Topology};
use bloatbox::port::TapSpec;
use bloatbox::qdisc::pfifo_fast::PfifoFast;
use bloatbox::qdisc::tree::{DevSpec, QdiscTree};
use bloatbox::qdisc::QdiscCtx;

use crate::common;
use crate::serial;
use common::{tcp_listening, wait_until};

/// A 2 s single-flow iperf3 transfer left → right through a link of
/// `rate_bytes_ps` (0 = unlimited) with TAP offload on, the device's
/// features changed by `ethtool` (a line for `apply_ethtool`, or "") and
/// GRO at the receiving TAPs as `gro` says. Returns the final snapshot, the
/// received goodput in bit/s, and the receiving TAP's own counters (rx
/// packets, rx dropped) as its kernel saw them.
fn transfer(
    tag: u32,
    rate_bytes_ps: u64,
    ethtool: &str,
    gro: bool,
) -> (LiveSnapshot, f64, [u64; 2]) {
    let pid = std::process::id();
    let octet = 100 + (pid * 3 + tag) % 150;
    let side = |s: &str, host: u8, mac: u8| SideSpec {
        netns: format!("bbgso-{pid}-{tag}-{s}"),
        tap: TapSpec {
            name: format!("bg{}t{tag}{s}", pid % 100_000),
            mtu: 1500,
            mac: [2, 0x62, 0x67, 0, tag as u8, mac],
            txqueuelen: 16,
            offload: true,
        },
        addrs: vec![(
            format!("10.84.{octet}.{host}").parse::<IpAddr>().unwrap(),
            24,
        )],
    };
    let topo = Topology {
        left: side("l", 1, 1),
        right: side("r", 2, 2),
    };
    let (_guard, left, right) = topo.up().expect("namespaces and TAPs");
    let mut params = LinkParams {
        rate_bytes_ps,
        delay_ns: 0,
        ..LinkParams::default()
    };
    if !ethtool.is_empty() {
        bloatbox::config::apply_ethtool(ethtool, &mut params).unwrap();
    }
    let path = |dir| {
        let root = Box::new(PfifoFast::new(QdiscCtx::default()));
        let dev = DevSpec::new(dir, bloatbox::qdisc::kinds::BUILTIN);
        Path::new(params, QdiscTree::with_root(dev, root))
    };
    let dp = Datapath::spawn(
        Bridge::new(path(Dir::LeftToRight), path(Dir::RightToLeft)),
        Box::new(left),
        Box::new(right),
        DatapathConfig {
            gro,
            ..DatapathConfig::default()
        },
    )
    .unwrap();
    let dst = format!("10.84.{octet}.2");
    let in_ns = |ns: &str, args: &[&str]| {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]).args(args);
        c
    };
    let mut server = in_ns(&topo.right.netns, &["iperf3", "-s", "-1", "-B", &dst])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || tcp_listening(
            &topo.right.netns,
            5201
        )),
        "the iperf3 server never listened"
    );
    let out = in_ns(
        &topo.left.netns,
        &["iperf3", "-c", &dst, "-t", "2", "-C", "cubic", "-J"],
    )
    .output()
    .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    // The TAPs go with the datapath's descriptors: read the receiving one's
    // counters first.
    let stat = |name: &str| -> u64 {
        let path = format!("/sys/class/net/{}/statistics/{name}", topo.right.tap.name);
        let out = in_ns(&topo.right.netns, &["cat", &path]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    let tap = [stat("rx_packets"), stat("rx_dropped")];
    let snap = dp.shutdown().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let bps = json["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or(0.0);
    (snap, bps, tap)
}

fn check_conserved_without_bad_offload(s: &LiveSnapshot) {
    for dir in Dir::ALL {
        let p = s.bridge.path(dir);
        let c = &p.counters;
        assert_eq!(
            c.frames_in + c.duplicated,
            c.frames_out + c.total_drops() + p.held,
            "{dir:?}: {c:?}"
        );
        assert_eq!(p.drops_by_reason.get("bad_offload"), None, "{dir:?}");
    }
}

#[test]
#[ignore = "needs root"]
fn live_super_frames_pass_an_unlimited_link_whole_and_a_slow_one_segmented() {
    require!("iperf3");
    let _serial = serial();

    let (fast, fast_bps, _) = transfer(1, 0, "", false);
    let c = &fast.bridge.path(Dir::LeftToRight).counters;
    let per_frame = c.bytes_in as f64 / c.frames_in.max(1) as f64;
    eprintln!(
        "unlimited: {:.2} Gbit/s, {} frames in, {per_frame:.0} bytes per frame",
        fast_bps / 1e9,
        c.frames_in
    );
    assert!(fast_bps > 0.0, "the transfer ran");
    assert!(
        per_frame > 3.0 * 1514.0,
        "super-frames cross whole: {per_frame:.0} bytes per frame"
    );
    check_conserved_without_bad_offload(&fast);

    let (slow, slow_bps, _) = transfer(2, 12_500_000, "", false);
    let c = &slow.bridge.path(Dir::LeftToRight).counters;
    let per_frame = c.bytes_in as f64 / c.frames_in.max(1) as f64;
    let read = slow.left_port.rx_bytes as f64 / slow.left_port.rx_frames.max(1) as f64;
    eprintln!(
        "100 Mbit/s: {:.1} Mbit/s, {per_frame:.0} bytes per frame in the link, {read:.0} per TAP read",
        slow_bps / 1e6
    );
    assert!(slow_bps > 50e6 && slow_bps <= 100e6, "{slow_bps}");
    assert!(per_frame <= 1514.0, "per-MTU frames: {per_frame:.0}");
    assert!(read > 1514.0, "the TAP handed over super-frames: {read:.0}");
    check_conserved_without_bad_offload(&slow);
}

#[test]
#[ignore = "needs root"]
fn live_gro_hands_the_receiving_kernel_super_frames_it_takes() {
    require!("iperf3");
    let _serial = serial();
    // TSO and GSO off on the device: the link segments every super-frame
    // the left TAP hands over and releases its segments together.
    let (s, bps, [rx_packets, rx_dropped]) =
        transfer(3, 0, "ethtool -K left tso off gso off", true);
    let c = &s.bridge.path(Dir::LeftToRight).counters;
    eprintln!(
        "GRO: {:.2} Gbit/s, {} segments out of the link, {} super-frames of {} segments, {} writes",
        bps / 1e9,
        c.frames_out,
        s.gro.super_frames,
        s.gro.segments,
        s.right_port.tx_frames
    );
    assert!(bps > 0.0, "the transfer ran");
    assert!(c.bytes_out as f64 / c.frames_out.max(1) as f64 <= 1514.0);
    assert!(s.gro.super_frames > 0 && s.gro.segments > 2 * s.gro.super_frames);
    check_conserved_without_bad_offload(&s);
    // Every frame the link let out was written, alone or in a super-frame;
    // the receiving kernel refused none of the writes.
    let p = &s.right_port;
    assert_eq!(p.tx_errors, 0);
    let out_l2r = c.frames_out;
    let out_r2l = s.bridge.path(Dir::RightToLeft).counters.frames_out;
    let merged_away = s.gro.segments - s.gro.super_frames;
    assert_eq!(
        out_l2r + out_r2l,
        p.tx_frames
            + p.tx_full_drops
            + s.left_port.tx_frames
            + s.left_port.tx_full_drops
            + merged_away
    );
    assert!(rx_packets >= p.tx_frames, "{rx_packets} < {}", p.tx_frames);
    assert_eq!(rx_dropped, 0);
}
