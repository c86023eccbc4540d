//! The datapath thread with offload ports (socketpairs whose messages carry a
//! virtio_net_hdr, as a TAP with IFF_VNET_HDR does; no root needed): GSO
//! super-frames cross an unlimited link whole, in one write with their
//! header; a slow link segments them into checksummed per-MTU frames; a
//! rate change at runtime switches between the two, and so do the device's
//! features (`ethtool -K left tso off gso off`) and a lack of free 64 KB
//! buffers; malformed offload frames are counted as
//! `bad_offload`; conservation holds in segment units. With GRO on, the
//! segments a link releases together are written as one super-frame again;
//! with forward GRO a TBF sees the super-frames its bucket holds whole.

use std::time::{Duration, Instant as StdInstant};

use bloatbox::bridge::Bridge;
use bloatbox::datapath::{Command, Datapath, DatapathConfig, GroCounters, LiveSnapshot};
use bloatbox::dir::Dir;
use bloatbox::link::{LinkParams, Path};
use bloatbox::packet::gso::{Segmenter, VnetHdr, F_NEEDS_CSUM, GSO_TCPV4, GSO_TCPV6};
use bloatbox::port::{FramePort, SocketPairPort};
use etherparse::{NetSlice, PacketBuilder, SlicedPacket, TransportSlice};

use super::datapath::pfifo_fast;
use crate::common;

fn bridge(rate_bytes_ps: u64) -> Bridge {
    let params = LinkParams {
        rate_bytes_ps,
        delay_ns: 0,
        ..LinkParams::default()
    };
    Bridge::new(
        pfifo_fast(params, Dir::LeftToRight),
        pfifo_fast(params, Dir::RightToLeft),
    )
}

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// A TCP super-frame as a sending kernel hands it over (its checksum field
/// is left as the builder wrote it: the segments get fresh ones anyway).
fn super_frame(v6: bool, data: &[u8], gso_size: u16) -> (Vec<u8>, VnetHdr) {
    let eth = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let mut f = Vec::new();
    let l4 = if v6 {
        eth.ipv6([1; 16], [2; 16], 64)
            .tcp(40000, 5201, 1000, 512)
            .ack(1)
            .psh()
            .write(&mut f, data)
            .unwrap();
        54
    } else {
        eth.ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 5201, 1000, 512)
            .ack(1)
            .psh()
            .write(&mut f, data)
            .unwrap();
        34
    };
    let hdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if v6 { GSO_TCPV6 } else { GSO_TCPV4 },
        hdr_len: (l4 + 20) as u16,
        gso_size,
        csum_start: l4 as u16,
        csum_offset: 16,
    };
    (f, hdr)
}

fn offload_datapath(
    rate_bytes_ps: u64,
    cfg: DatapathConfig,
) -> (Datapath, SocketPairPort, SocketPairPort) {
    offload_datapath_over(bridge(rate_bytes_ps), cfg)
}

fn offload_datapath_over(
    bridge: Bridge,
    cfg: DatapathConfig,
) -> (Datapath, SocketPairPort, SocketPairPort) {
    let (dp_left, host_left) = SocketPairPort::pair_offload().unwrap();
    let (dp_right, host_right) = SocketPairPort::pair_offload().unwrap();
    let dp = Datapath::spawn(bridge, Box::new(dp_left), Box::new(dp_right), cfg).unwrap();
    (dp, host_left, host_right)
}

/// Receives until `want` frames came or 5 s passed: (header, frame).
fn receive(port: &mut SocketPairPort, want: usize) -> Vec<(VnetHdr, Vec<u8>)> {
    let mut buf = vec![0u8; 70_000];
    let mut got = Vec::new();
    let t0 = StdInstant::now();
    while got.len() < want && t0.elapsed() < Duration::from_secs(5) {
        match port.recv_offload(&mut buf).unwrap() {
            Some((n, hdr)) => got.push((hdr, buf[..n].to_vec())),
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    got
}

/// TCP payload of a received segment, with its IP and TCP checksums checked.
fn verified_payload(frame: &[u8]) -> Vec<u8> {
    let p = SlicedPacket::from_ethernet(frame).unwrap();
    let Some(TransportSlice::Tcp(tcp)) = &p.transport else {
        panic!("not TCP")
    };
    match &p.net {
        Some(NetSlice::Ipv4(v4)) => {
            let h = v4.header().to_header();
            assert_eq!(h.header_checksum, h.calc_header_checksum());
            let want = tcp
                .calc_checksum_ipv4(v4.header().source(), v4.header().destination())
                .unwrap();
            assert_eq!(tcp.checksum(), want, "TCP checksum");
        }
        Some(NetSlice::Ipv6(v6)) => {
            let want = tcp
                .calc_checksum_ipv6(v6.header().source(), v6.header().destination())
                .unwrap();
            assert_eq!(tcp.checksum(), want, "TCP checksum");
        }
        _ => panic!("not IP"),
    }
    tcp.payload().to_vec()
}

fn assert_conserved(s: &LiveSnapshot, dir: Dir) {
    let p = s.bridge.path(dir);
    let c = &p.counters;
    assert_eq!(
        c.frames_in + c.duplicated,
        c.frames_out + c.total_drops() + p.held,
        "{dir:?}: {c:?} held {}",
        p.held
    );
}

#[test]
fn super_frames_cross_an_unlimited_link_whole_in_one_write() {
    let (dp, mut left, mut right) = offload_datapath(0, DatapathConfig::default());
    let (frame, hdr) = super_frame(false, &payload(20_000), 1448);
    left.send_offload(&frame, &hdr).unwrap();
    let got = receive(&mut right, 1);
    let snap = dp.shutdown().unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, hdr, "written with the header it was read with");
    assert_eq!(got[0].1, frame);
    let c = &snap.bridge.path(Dir::LeftToRight).counters;
    assert_eq!((c.frames_in, c.frames_out), (1, 1));
    // 14 segments: 13 more copies of the 54 bytes of headers.
    assert_eq!(c.bytes_in, frame.len() as u64 + 13 * 54);
    assert_conserved(&snap, Dir::LeftToRight);
    assert_eq!(snap.right_port.tx_frames, 1);
}

#[test]
fn a_slow_link_segments_super_frames_into_checksummed_mtu_frames() {
    // 100 Mbit/s is below the default gso_min_rate of 1 Gbit/s.
    let (dp, mut left, mut right) = offload_datapath(12_500_000, DatapathConfig::default());
    let data = payload(30_000);
    for v6 in [false, true] {
        let (frame, hdr) = super_frame(v6, &data, 1400);
        left.send_offload(&frame, &hdr).unwrap();
    }
    let want = 2 * 30_000usize.div_ceil(1400);
    let got = receive(&mut right, want);
    let snap = dp.shutdown().unwrap();
    assert_eq!(got.len(), want);
    assert!(got
        .iter()
        .all(|(h, f)| *h == VnetHdr::default() && f.len() <= 1514));
    let (v4, v6) = got.split_at(want / 2);
    for half in [v4, v6] {
        let joined: Vec<u8> = half.iter().flat_map(|(_, f)| verified_payload(f)).collect();
        assert_eq!(joined, data);
    }
    let c = &snap.bridge.path(Dir::LeftToRight).counters;
    assert_eq!((c.frames_in, c.frames_out), (want as u64, want as u64));
    assert_conserved(&snap, Dir::LeftToRight);
}

#[test]
fn a_rate_change_at_runtime_switches_between_whole_and_segmented() {
    let (dp, mut left, mut right) = offload_datapath(0, DatapathConfig::default());
    let (frame, hdr) = super_frame(false, &payload(5000), 1448);
    left.send_offload(&frame, &hdr).unwrap();
    assert_eq!(receive(&mut right, 1).len(), 1);
    let slow = LinkParams {
        rate_bytes_ps: 1_250_000,
        delay_ns: 0,
        ..LinkParams::default()
    };
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    dp.command(Command::SetLink {
        dir: Dir::LeftToRight,
        change: bloatbox::datapath::LinkChange(Box::new(move |p| *p = slow)),
        reply,
    })
    .unwrap();
    // The thread redoes its GSO decision before it reads again.
    assert_eq!(answer.recv_timeout(Duration::from_secs(5)).unwrap(), slow);
    left.send_offload(&frame, &hdr).unwrap();
    let got = receive(&mut right, 4);
    let snap = dp.shutdown().unwrap();
    assert_eq!(got.len(), 4, "5000 bytes at 1448 per segment");
    assert!(got.iter().all(|(h, _)| !h.is_gso()));
    assert_eq!(snap.bridge.path(Dir::LeftToRight).counters.frames_in, 5);
    assert_conserved(&snap, Dir::LeftToRight);
}

/// Applies an ethtool line to the left→right device, as `bloatbox ethtool`
/// does through the daemon.
fn ethtool(dp: &Datapath, line: &'static str) -> LinkParams {
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    dp.command(Command::SetLink {
        dir: Dir::LeftToRight,
        change: bloatbox::datapath::LinkChange(Box::new(move |p| {
            bloatbox::config::apply_ethtool(line, p).unwrap()
        })),
        reply,
    })
    .unwrap();
    answer.recv_timeout(Duration::from_secs(5)).unwrap()
}

#[test]
fn tso_and_gso_off_on_the_device_segment_super_frames_on_an_unlimited_link() {
    let (dp, mut left, mut right) = offload_datapath(0, DatapathConfig::default());
    let (frame, hdr) = super_frame(false, &payload(5000), 1448);
    let mut sizes = Vec::new();
    for line in [
        "ethtool -K left tso off",
        "ethtool -K left tso off gso off",
        "ethtool -K left gso on",
    ] {
        let p = ethtool(&dp, line);
        left.send_offload(&frame, &hdr).unwrap();
        let want = if p.features.passes_super_frames() {
            1
        } else {
            4
        };
        let got = receive(&mut right, want);
        assert!(got.iter().all(|(h, _)| h.is_gso() == (want == 1)), "{line}");
        sizes.push(got.len());
    }
    // TSO off alone: GSO still builds super-packets (the qdisc sees them
    // whole); both off: per-MTU segments; GSO back on: whole again.
    assert_eq!(sizes, [1, 4, 1]);
    let snap = dp.shutdown().unwrap();
    assert_eq!(snap.bridge.path(Dir::LeftToRight).counters.frames_in, 6);
    assert_conserved(&snap, Dir::LeftToRight);
}

#[test]
fn malformed_offload_frames_are_counted_and_plain_partial_checksums_completed() {
    let (dp, mut left, mut right) = offload_datapath(0, DatapathConfig::default());
    let (frame, hdr) = super_frame(false, &payload(3000), 1448);
    left.send_offload(&frame, &VnetHdr { gso_size: 0, ..hdr })
        .unwrap();
    left.send_offload(&frame[..40], &hdr).unwrap();
    left.send_offload(&frame, &VnetHdr { gso_type: 3, ..hdr })
        .unwrap();
    // A plain frame whose checksum the sender left to the "NIC": the seed
    // is the pseudo-header sum; here the field is zeroed and the whole
    // checksum computed by the datapath must verify.
    let (mut small, _) = super_frame(false, &payload(100), 1448);
    let seed = pseudo_v4(&small).to_ne_bytes();
    small[34 + 16..34 + 18].copy_from_slice(&seed);
    let plain = VnetHdr {
        flags: F_NEEDS_CSUM,
        csum_start: 34,
        csum_offset: 16,
        ..VnetHdr::default()
    };
    left.send_offload(&small, &plain).unwrap();
    let got = receive(&mut right, 1);
    let snap = dp.shutdown().unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, VnetHdr::default());
    assert_eq!(verified_payload(&got[0].1), payload(100));
    let p = snap.bridge.path(Dir::LeftToRight);
    assert_eq!(p.drops_by_reason.get("bad_offload"), Some(&3));
    assert_conserved(&snap, Dir::LeftToRight);
}

/// The pseudo-header sum (not complemented) a sender leaves in the TCP
/// checksum field of an IPv4 frame with `F_NEEDS_CSUM`.
fn pseudo_v4(f: &[u8]) -> u16 {
    let tcp_len = (f.len() - 34) as u16;
    let sum = etherparse::checksum::Sum16BitWords::new()
        .add_slice(&f[26..34])
        .add_2bytes([0, 6])
        .add_2bytes(tcp_len.to_be_bytes());
    !sum.ones_complement()
}

#[test]
fn segments_without_buffers_are_pool_exhausted_drops() {
    let cfg = DatapathConfig {
        pool_buffers: 4,
        ..DatapathConfig::default()
    };
    // 10 Mbit/s: the link holds the segments, so the pool runs dry.
    let (dp, mut left, mut right) = offload_datapath(1_250_000, cfg);
    let (frame, hdr) = super_frame(false, &payload(20 * 1000), 1000);
    left.send_offload(&frame, &hdr).unwrap();
    let got = receive(&mut right, 4);
    // Every segment counted in before the datapath stops.
    let reader = dp.snapshots();
    common::wait_until(Duration::from_secs(5), || {
        reader
            .latest()
            .is_some_and(|s| s.bridge.path(Dir::LeftToRight).counters.frames_in == 20)
    });
    let snap = dp.shutdown().unwrap();
    assert_eq!(got.len(), 4);
    let p = snap.bridge.path(Dir::LeftToRight);
    assert_eq!(p.counters.frames_in, 20, "counted in segments");
    assert_eq!(p.drops_by_reason.get("pool_exhausted"), Some(&16));
    assert_conserved(&snap, Dir::LeftToRight);
}

#[test]
fn without_a_free_64k_buffer_super_frames_are_segmented_instead() {
    // The only 64 KB buffer is the read buffer: nothing can pass whole.
    let cfg = DatapathConfig {
        gso_buffers: 1,
        ..DatapathConfig::default()
    };
    let (dp, mut left, mut right) = offload_datapath(0, cfg);
    let data = payload(4000);
    let (frame, hdr) = super_frame(false, &data, 1448);
    left.send_offload(&frame, &hdr).unwrap();
    let got = receive(&mut right, 3);
    let snap = dp.shutdown().unwrap();
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|(h, _)| *h == VnetHdr::default()));
    let joined: Vec<u8> = got.iter().flat_map(|(_, f)| verified_payload(f)).collect();
    assert_eq!(joined, data);
    assert_eq!(snap.pool.refused, 1, "the refused 64 KB buffer");
    assert_conserved(&snap, Dir::LeftToRight);
}

#[test]
fn with_gro_segments_released_together_are_written_as_one_super_frame() {
    let cfg = DatapathConfig {
        gro: true,
        ..DatapathConfig::default()
    };
    let (dp, mut left, mut right) = offload_datapath(0, cfg);
    // The device segments (TSO and GSO off); the unlimited link releases
    // all of a super-frame's segments at once.
    ethtool(&dp, "ethtool -K left tso off gso off");
    let data = payload(30_000);
    for v6 in [false, true] {
        let (frame, hdr) = super_frame(v6, &data, 1400);
        left.send_offload(&frame, &hdr).unwrap();
        let got = receive(&mut right, 1);
        assert_eq!(got.len(), 1, "v6 {v6}: one write");
        let (h, f) = &got[0];
        assert_eq!(
            (h.gso_type, h.gso_size, h.needs_csum()),
            (hdr.gso_type, 1400, true),
            "v6 {v6}"
        );
        // What the receiving kernel would make of it: the 22 checksummed
        // per-MTU segments carrying the data in order.
        let mut seg = Segmenter::new(f, h).unwrap();
        assert_eq!(seg.segments(), 22);
        let mut out = Vec::new();
        let mut joined = Vec::new();
        while seg.next_into(&mut out) {
            assert!(out.len() <= 1514);
            joined.extend(verified_payload(&out));
        }
        assert_eq!(joined, data, "v6 {v6}");
    }
    let snap = dp.shutdown().unwrap();
    assert_eq!(
        snap.gro,
        GroCounters {
            super_frames: 2,
            segments: 44
        }
    );
    let c = &snap.bridge.path(Dir::LeftToRight).counters;
    assert_eq!((c.frames_in, c.frames_out), (44, 44));
    // The port counts each super-frame as one write.
    assert_eq!(snap.right_port.tx_frames, 2);
    assert_conserved(&snap, Dir::LeftToRight);
}

/// An unlimited link whose left→right device has `tbf rate 10gbit burst
/// 30000 latency 10ms` at its root.
fn tbf_bridge() -> Bridge {
    let params = LinkParams {
        rate_bytes_ps: 0,
        ..LinkParams::default()
    };
    let tree = bloatbox::tc::build_tree(
        params.dev_spec(Dir::LeftToRight, bloatbox::qdisc::kinds::BUILTIN),
        &["tc qdisc add dev left root tbf rate 10gbit burst 30000 latency 10ms"],
    )
    .unwrap();
    Bridge::new(
        Path::new(params, tree),
        pfifo_fast(params, Dir::RightToLeft),
    )
}

#[test]
fn forward_gro_lets_a_tbf_see_the_super_frames_its_bucket_holds() {
    let small = super_frame(false, &payload(20_000), 1448);
    let large = super_frame(false, &payload(40_000), 1448);
    // 20,054 bytes + 13 more headers of 54 = 20,756 fit the 30,000-byte
    // bucket; 40,054 + 27 × 54 do not (tbf_segment cuts them).
    let mut writes = Vec::new();
    for forward_gro in [false, true] {
        let cfg = DatapathConfig {
            gso: bloatbox::link::offload::GsoPolicy {
                forward_gro,
                ..Default::default()
            },
            ..DatapathConfig::default()
        };
        let (dp, mut left, mut right) = offload_datapath_over(tbf_bridge(), cfg);
        let mut got = Vec::new();
        for (frame, hdr, want) in [
            (&small.0, &small.1, if forward_gro { 1 } else { 14 }),
            (&large.0, &large.1, 28),
        ] {
            left.send_offload(frame, hdr).unwrap();
            let r = receive(&mut right, want);
            assert_eq!(r.len(), want, "forward_gro {forward_gro}");
            got.push(r);
        }
        let snap = dp.shutdown().unwrap();
        let c = &snap.bridge.path(Dir::LeftToRight).counters;
        if forward_gro {
            assert!(
                got[0][0] == (small.1, small.0.clone()),
                "whole, with its header"
            );
            assert_eq!(c.frames_in, 1 + 28);
            assert_eq!(c.bytes_in, 20_756 + 40_000 + 28 * 54);
        } else {
            assert_eq!(c.frames_in, 14 + 28);
        }
        assert!(got[1]
            .iter()
            .all(|(h, f)| *h == VnetHdr::default() && f.len() <= 1514));
        assert_conserved(&snap, Dir::LeftToRight);
        writes.push(snap.right_port.tx_frames);
    }
    assert_eq!(writes, [42, 29]);
}
