//! `bloatbox stats`: the running daemon's counters, as the control socket's
//! `stats` reply carries them (a `LiveSnapshot`), plus what only the kernel
//! knows (the TAPs' own queue drops). `--json` prints the reply as it came;
//! the text form reads it as a typed `LiveSnapshot`, so a reply missing a
//! field is an error instead of a silent zero.

use super::target::Target;
use crate::control::{decode, request_stats, restore_drops_by_reason};
use crate::datapath::LiveSnapshot;
use crate::live::setup;
use crate::netns::SideSpec;

/// `bloatbox stats`.
pub fn stats(target: &Target, json: bool) -> anyhow::Result<()> {
    let (cfg, socket) = target.resolve()?;
    let setup = setup(&cfg)?;
    let mut snap = request_stats(&socket)?;
    // Frames the TAPs' own queues dropped before the datapath read them are
    // invisible to the daemon; the kernel counts them.
    let side_drops = |s: &SideSpec| crate::netns::tap_tx_dropped(&s.netns, &s.tap.name);
    let tap_tx_dropped = [
        side_drops(&setup.topology.left),
        side_drops(&setup.topology.right),
    ];
    if json {
        snap["tap_tx_dropped"] = serde_json::json!({
            "left": tap_tx_dropped[0],
            "right": tap_tx_dropped[1],
        });
        crate::outln!("{snap}")?;
    } else {
        let mut live: LiveSnapshot = decode(snap)?;
        restore_drops_by_reason(&mut live.bridge);
        crate::out!("{}", render_stats(&live, tap_tx_dropped))?;
    }
    Ok(())
}

/// The stats snapshot as text: one block per direction, then the datapath's
/// own figures, then the TAPs' queue drops (left, right; `None` where the
/// kernel's count could not be read).
fn render_stats(snap: &LiveSnapshot, tap_tx_dropped: [Option<u64>; 2]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for (i, (name, p)) in ["left -> right", "right -> left"]
        .iter()
        .zip(&snap.bridge.paths)
        .enumerate()
    {
        let c = &p.counters;
        let (fin, fout, held) = (c.frames_in, c.frames_out, p.held);
        // netem duplication adds frames to the path.
        let dup = c.duplicated;
        let drops = c.total_drops();
        let _ = writeln!(out, "{name}");
        if let Some(wait) = p.stall_ns() {
            let _ = writeln!(
                out,
                "  STALLED: the frame on the wire leaves in {} at rate {}; everything behind it waits (a new rate applies to that frame at once: bloatbox set {}.rate=...)",
                crate::units::sprint_time(wait / 1000),
                crate::units::print_rate(p.params.rate_bytes_ps),
                crate::dir::Dir::ALL[i].dev()
            );
        }
        let _ = writeln!(
            out,
            "  frames in {fin}  out {fout}  held {held}  dropped {drops}  (bytes in {}  out {})",
            c.bytes_in, c.bytes_out
        );
        let by_reason = p
            .drops_by_reason
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            out,
            "  drops by reason: {}",
            if by_reason.is_empty() {
                "none"
            } else {
                &by_reason
            }
        );
        let _ = writeln!(
            out,
            "  impairments seed {}  duplicated {dup}  corrupted {}",
            p.seed, c.corrupted
        );
        // BQL's limit and in-flight bytes are both set or both unset.
        let bql = match p.bql_limit.zip(p.bql_inflight) {
            Some((limit, inflight)) => format!("limit {limit} B, in flight {inflight} B"),
            None => "off".to_string(),
        };
        let _ = writeln!(
            out,
            "  ring {}/{} descriptors ({} B)  BQL {bql}",
            p.ring_used, p.ring_size, p.ring_bytes
        );
        // Under mq each TX queue has its own ring and BQL (the line above
        // sums them).
        if p.tx_queues.len() > 1 {
            for (q, s) in p.tx_queues.iter().enumerate() {
                let bql = match s.bql_limit.zip(s.bql_inflight) {
                    Some((limit, inflight)) => format!("limit {limit} B, in flight {inflight} B"),
                    None => "off".to_string(),
                };
                let _ = writeln!(
                    out,
                    "    tx-{q}: ring {}/{} descriptors ({} B)  BQL {bql}",
                    s.ring_used, s.ring_size, s.ring_bytes
                );
            }
        }
        if let Some(cap) = snap.bridge.capture.as_ref().map(|c| c[i]) {
            let _ = writeln!(
                out,
                "  capture: {} records written, {} dropped (writer behind), {} write errors",
                cap.captured, cap.dropped, cap.write_errors
            );
        }
        let t = &p.transit;
        if t.count > 0 {
            let ms = |ns: u64| ns as f64 / 1e6;
            let _ = writeln!(
                out,
                "  transit (in to out) min {:.3} ms  p50 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3} ms",
                ms(t.min_ns),
                ms(t.p50_ns),
                ms(t.p99_ns),
                ms(t.p999_ns),
                ms(t.max_ns)
            );
        }
        let ok = fin + dup == fout + drops + held;
        let dup_term = if dup > 0 {
            format!(" + duplicated {dup}")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  conservation: in {fin}{dup_term} = out {fout} + dropped {drops} + held {held}: {}",
            if ok { "ok" } else { "VIOLATED" }
        );
    }
    let w = &snap.wakeups;
    let _ = writeln!(out, "datapath");
    for (l, what, unit) in [
        (&snap.lateness, "wake-up lateness", "samples"),
        (&snap.release_lateness, "frames written late by", "frames"),
    ] {
        let _ = writeln!(
            out,
            "  {what} p50 {:.1} us  p99 {:.1} us  p99.9 {:.1} us  max {:.1} us ({} {unit})",
            l.p50_ns as f64 / 1e3,
            l.p99_ns as f64 / 1e3,
            l.p999_ns as f64 / 1e3,
            l.max_ns as f64 / 1e3,
            l.samples
        );
    }
    render_stages(&mut out, &snap.stages);
    let _ = writeln!(
        out,
        "  wake-ups {} (timer {}, I/O {}), deadlines spun to without the timer {}, busy polls {}",
        w.total, w.timer, w.io, w.spun, w.polls
    );
    let _ = writeln!(
        out,
        "  frame buffers in use {}, requests refused at the cap {}",
        snap.pool.in_use, snap.pool.refused
    );
    if snap.gro.super_frames > 0 {
        let _ = writeln!(
            out,
            "  GRO: {} TCP segments written as {} super-frames",
            snap.gro.segments, snap.gro.super_frames
        );
    }
    for (name, pc) in [("left", &snap.left_port), ("right", &snap.right_port)] {
        let _ = writeln!(
            out,
            "  {name} port: rx {} tx {} frames, full-device drops {}, full receive ring drops {}, \
             errors rx {} tx {}",
            pc.rx_frames,
            pc.tx_frames,
            pc.tx_full_drops,
            pc.rx_ring_drops,
            pc.rx_errors,
            pc.tx_errors
        );
    }
    let show = |v: Option<u64>| v.map_or("?".to_string(), |n| n.to_string());
    let _ = writeln!(
        out,
        "  dropped by the TAPs' own queues before the datapath read them: left {}, right {}",
        show(tap_tx_dropped[0]),
        show(tap_tx_dropped[1])
    );
    out
}

/// Where each direction's frames spend their time: p50/p99 per stage, in
/// the order a frame goes through them, the emulated stages in brackets;
/// nothing for a direction that has carried no frame.
fn render_stages(out: &mut String, stages: &[crate::datapath::StageBreakdown; 2]) {
    use std::fmt::Write;
    for (name, b) in ["left -> right", "right -> left"].iter().zip(stages) {
        if b.late.samples == 0 && b.read.samples == 0 {
            continue;
        }
        let _ = write!(out, "  stages {name}, p50/p99 us (emulated in brackets):");
        let mut inside = false;
        for (stage, l, emulated) in b.stages() {
            let open = if emulated && !inside { "[" } else { "" };
            let close = if !emulated && inside { "]" } else { "" };
            inside = emulated;
            let _ = write!(
                out,
                "{close} {open}{stage} {:.1}/{:.1}",
                l.p50_ns as f64 / 1e3,
                l.p99_ns as f64 / 1e3
            );
        }
        let _ = writeln!(
            out,
            " ({} frames read, {} written, {} not followed)",
            b.read.samples, b.late.samples, b.untracked
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::CaptureCounters;
    use crate::datapath::{LatenessSummary, PoolCounters, Wakeups};
    use crate::link::transit::TransitSummary;
    use crate::link::PathCounters;
    use crate::packet::{DropCounts, DropReason};
    use crate::port::PortCounters;

    /// A snapshot of an idle link on pfifo_fast, every counter zero.
    fn idle() -> LiveSnapshot {
        let scenario = crate::tui::fixtures::Scenario::pfifo_fast_under_load();
        LiveSnapshot {
            at: scenario.now(),
            bridge: scenario.snapshot().bridge,
            lateness: LatenessSummary::default(),
            release_lateness: LatenessSummary::default(),
            wakeups: Wakeups::default(),
            left_port: PortCounters::default(),
            right_port: PortCounters::default(),
            pool: PoolCounters::default(),
            gro: Default::default(),
            stages: Default::default(),
        }
    }

    /// `snap` as `bloatbox stats` reads it: through the socket's JSON.
    fn over_the_socket(snap: &LiveSnapshot) -> LiveSnapshot {
        let mut back: LiveSnapshot = decode(serde_json::to_value(snap).unwrap()).unwrap();
        restore_drops_by_reason(&mut back.bridge);
        back
    }

    /// Each direction that carried frames prints its stages, p50/p99 in
    /// µs in a frame's order with the emulated ones in brackets, through
    /// the socket's JSON; an idle direction prints none.
    #[test]
    fn stats_text_shows_where_each_directions_time_goes() {
        let mut snap = idle();
        assert!(!render_stats(&snap, [None, None]).contains("stages"));
        let us = |p50: u64, p99: u64| LatenessSummary {
            samples: 7,
            p50_ns: p50 * 1000,
            p99_ns: p99 * 1000,
            p999_ns: p99 * 1000,
            max_ns: p99 * 1000,
        };
        let b = &mut snap.stages[1];
        (b.read, b.classify, b.qdisc, b.ring) = (us(2, 5), us(1, 2), us(0, 0), us(0, 3));
        (b.serializer, b.delay_line, b.coalescing) = (us(17, 17), us(5000, 5000), us(0, 0));
        (b.release, b.write, b.late, b.untracked) = (us(1, 4), us(9, 30), us(40, 120), 2);
        let text = render_stats(&over_the_socket(&snap), [None, None]);
        let lines: Vec<_> = text.lines().filter(|l| l.contains("stages")).collect();
        assert_eq!(
            lines,
            ["  stages right -> left, p50/p99 us (emulated in brackets): read 2.0/5.0 classify 1.0/2.0 \
              [qdisc 0.0/0.0 ring 0.0/3.0 serializer 17.0/17.0 delay line 5000.0/5000.0 coalescing 0.0/0.0] \
              release 1.0/4.0 write 9.0/30.0 late 40.0/120.0 (7 frames read, 7 written, 2 not followed)"],
            "{text}"
        );
    }

    /// A frame on the wire for minutes (a rate typo) is said, with the fix;
    /// through the socket's JSON, as `bloatbox stats` reads it.
    #[test]
    fn a_stalled_link_says_why() {
        let mut snap = idle();
        let p = &mut snap.bridge.paths[1];
        p.params.rate_bytes_ps = 12;
        p.wire_departs = Some(p.at + 126 * crate::time::NS_PER_SEC);
        let text = render_stats(&over_the_socket(&snap), [None, None]);
        let line = text
            .lines()
            .find(|l| l.contains("STALLED"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            line.contains("leaves in 126s at rate 96bit") && line.contains("set right.rate="),
            "{line}"
        );
        assert_eq!(text.matches("STALLED").count(), 1, "{text}");
        assert!(!render_stats(&idle(), [None, None]).contains("STALLED"));
    }

    #[test]
    fn stats_text_shows_counters_and_flags_a_conservation_violation() {
        let mut snap = idle();
        let mut drops = [0; DropReason::ALL.len()];
        drops[DropReason::QueueFull.index()] = 1;
        let p = &mut snap.bridge.paths[0];
        p.counters = PathCounters {
            frames_in: 10,
            frames_out: 7,
            drops: DropCounts(drops),
            bytes_in: 1000,
            bytes_out: 700,
            ..PathCounters::default()
        };
        p.held = 2;
        p.transit = TransitSummary {
            count: 7,
            min_ns: 5_012_000,
            p50_ns: 5_100_000,
            p99_ns: 9_000_000,
            p999_ns: 9_000_000,
            max_ns: 9_000_000,
            ..TransitSummary::default()
        };
        (p.ring_used, p.ring_size, p.ring_bytes) = (1, 256, 100);
        (p.bql_limit, p.bql_inflight) = (Some(3028), Some(100));
        let p = &mut snap.bridge.paths[1];
        p.counters = PathCounters {
            frames_in: 5,
            frames_out: 3,
            ..PathCounters::default()
        };
        p.held = 1;
        p.transit = TransitSummary::default();
        (p.bql_limit, p.bql_inflight) = (None, None);
        snap.lateness = LatenessSummary {
            p50_ns: 4000,
            p99_ns: 12000,
            p999_ns: 30000,
            max_ns: 90000,
            samples: 9,
        };
        snap.wakeups = Wakeups {
            total: 20,
            timer: 9,
            io: 11,
            ..Wakeups::default()
        };
        snap.left_port.rx_frames = 10;
        snap.right_port.rx_ring_drops = 4;
        let snap = over_the_socket(&snap);
        let text = render_stats(&snap, [Some(3), None]);
        assert!(
            text.contains(
                "right port: rx 0 tx 0 frames, full-device drops 0, full receive ring drops 4,"
            ),
            "{text}"
        );
        assert!(
            text.contains("frames in 10  out 7  held 2  dropped 1"),
            "{text}"
        );
        assert!(text.contains("drops by reason: queue_full 1"), "{text}");
        assert!(text.contains("BQL limit 3028 B"), "{text}");
        assert!(
            text.contains("transit (in to out) min 5.012 ms  p50 5.100  p99 9.000"),
            "{text}"
        );
        assert_eq!(text.matches("transit").count(), 1, "none without frames");
        assert!(
            text.contains("in 10 = out 7 + dropped 1 + held 2: ok"),
            "{text}"
        );
        assert!(text.contains("BQL off"), "{text}");
        assert!(text.contains("held 1: VIOLATED"), "{text}");
        // netem duplication: the duplicates count on the left of the identity.
        let mut dup = snap.clone();
        let p = &mut dup.bridge.paths[1];
        let mut drops = [0; DropReason::ALL.len()];
        drops[DropReason::QueueFull.index()] = 1;
        p.counters = PathCounters {
            frames_in: 5,
            frames_out: 6,
            drops: DropCounts(drops),
            duplicated: 2,
            corrupted: 1,
            ..PathCounters::default()
        };
        p.held = 0;
        p.seed = 42;
        let dup = over_the_socket(&dup);
        let text = render_stats(&dup, [Some(3), None]);
        assert!(
            text.contains("in 5 + duplicated 2 = out 6 + dropped 1 + held 0: ok"),
            "{text}"
        );
        assert!(
            text.contains("impairments seed 42  duplicated 2  corrupted 1"),
            "{text}"
        );
        assert!(text.contains("p99 12.0 us"), "{text}");
        assert!(text.contains("read them: left 3, right ?"), "{text}");
    }

    #[test]
    fn stats_text_shows_capture_counters_only_while_capturing() {
        let mut snap = idle();
        assert!(!render_stats(&snap, [None, None]).contains("capture"));
        snap.bridge.capture = Some([
            CaptureCounters {
                captured: 40,
                dropped: 2,
                write_errors: 0,
            },
            CaptureCounters {
                captured: 7,
                dropped: 0,
                write_errors: 1,
            },
        ]);
        let text = render_stats(&over_the_socket(&snap), [None, None]);
        assert!(
            text.contains("capture: 40 records written, 2 dropped (writer behind), 0 write errors"),
            "{text}"
        );
        assert!(
            text.contains("capture: 7 records written, 0 dropped"),
            "{text}"
        );
    }

    #[test]
    fn a_stats_reply_missing_a_field_is_an_error_not_a_zero() {
        let mut reply = serde_json::to_value(idle()).unwrap();
        assert!(decode::<LiveSnapshot>(reply.clone()).is_ok());
        let removed = reply["wakeups"].as_object_mut().unwrap().remove("total");
        assert!(removed.is_some());
        let err = decode::<LiveSnapshot>(reply).unwrap_err().to_string();
        assert!(err.contains("total"), "{err}");
    }
}
