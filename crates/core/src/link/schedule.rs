//! Time-varying links: rate/delay schedules and delivery traces, and the
//! `Timeline` the serializer asks when a frame's last bit leaves.
//!
//! Formats:
//! - mahimahi traces, as they are: one delivery opportunity per line, a
//!   millisecond timestamp; each opportunity carries up to 1504 bytes of
//!   queued packets (a packet may span opportunities, several small ones
//!   may share one; what a drained queue leaves unused is lost); the trace
//!   repeats with a period equal to its last timestamp. mahimahi counts the
//!   bytes it reads from its TUN device: the IP packet plus a 4-byte packet
//!   information header; a frame here is counted the same way (`len - 14 +
//!   4`), so a 1514-byte Ethernet frame fills one opportunity. Link-layer
//!   framing does not apply to traces.
//! - the native format: lines `<time> [<rate>|unlimited|down] [delay
//!   <time>]` with tc units (`0us 100mbit`, `1500ms 10mbit delay 20ms`),
//!   times from the start of the schedule (bare = µs as in tc), the first
//!   at 0, then increasing; a step without a rate keeps the previous one, a
//!   step without delay keeps the previous delay (none given: the link's);
//!   `repeat <period>` makes the schedule start over every period; `#`
//!   starts a comment. Rate `down` (or 0) sends nothing until the next
//!   step.
//!
//! A schedule starts when it is installed. Departures are exact: inside a
//! step the frame time is an exact rational (ns plus a remainder in units
//! of 1/rate ns), a frame crossing a step is sent at each rate for the
//! part of it inside that step, and step and trace times are computed from
//! the start, so nothing drifts however long the run.

use super::ShapeError;
use crate::time::{Instant, NS_PER_MS, NS_PER_SEC};
use crate::units::{parse_rate, parse_time_ns};

/// Bytes one mahimahi delivery opportunity carries (its TUN MTU).
pub const MAHIMAHI_MTU: u64 = 1504;

/// The bytes mahimahi would count for an Ethernet frame of `len`: the IP
/// packet (frame minus the 14-byte header) plus the TUN packet
/// information header (4 bytes), at least 1.
fn tun_bytes(len: u32) -> u64 {
    (len as u64 + 4).saturating_sub(14).max(1)
}

/// The rate of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepRate {
    /// Bytes per second; 0 = link down.
    BytesPerSec(u64),
    /// No serialization delay.
    Unlimited,
}

/// From `at_ns` after the start (of each period), the link runs at `rate`
/// with propagation delay `delay_ns` (None: `LinkParams::delay_ns`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Step {
    /// When the step starts, ns from the start of the schedule (of each period
    /// when it repeats); the first step is at 0.
    pub at_ns: u64,
    /// The line rate from `at_ns` on.
    pub rate: StepRate,
    /// The propagation delay from `at_ns` on, ns; None keeps the link's
    /// `LinkParams::delay_ns`.
    pub delay_ns: Option<u64>,
}

/// A time-varying link: rate/delay steps, or a mahimahi delivery trace,
/// replacing the link's line rate while it is set.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Schedule {
    /// Scripted or native-format rate/delay steps.
    Steps {
        /// The steps in increasing `at_ns`, the first at 0.
        steps: Vec<Step>,
        /// The period after which the steps start over, ns (`repeat` in the
        /// native format); None: the last step holds for ever.
        repeat_ns: Option<u64>,
    },
    /// A mahimahi trace: delivery opportunities in ms.
    Trace {
        /// The opportunities' times, ms from the start of the trace, in
        /// increasing order; the last one is the trace's period.
        opportunities_ms: Vec<u64>,
    },
}

impl Schedule {
    /// Parses the native format (see the module doc).
    pub fn parse_native(text: &str) -> Result<Schedule, ShapeError> {
        let mut steps: Vec<Step> = Vec::new();
        let mut repeat_ns = None;
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("");
            let toks: Vec<&str> = line.split_whitespace().collect();
            let field = |what: &str| format!("schedule line {} {what}", n + 1);
            let time = |tok: &str, what: &str| {
                parse_time_ns(tok).map_err(|_| {
                    ShapeError::new(&field(what), tok, "a time such as 0us, 1500ms or 2s")
                })
            };
            match toks.as_slice() {
                [] => continue,
                ["repeat", period] => {
                    repeat_ns = Some(time(period, "repeat")?);
                    continue;
                }
                _ => {}
            }
            let at_ns = time(toks[0], "time")?;
            let prev = steps.last();
            let mut step = Step {
                at_ns,
                rate: prev.map_or(StepRate::BytesPerSec(0), |s| s.rate),
                delay_ns: prev.and_then(|s| s.delay_ns),
            };
            let mut rate_given = false;
            let mut rest = toks[1..].iter();
            while let Some(&tok) = rest.next() {
                match tok {
                    "delay" => {
                        let v = rest.next().ok_or_else(|| {
                            ShapeError::new(&field("delay"), "nothing", "a time such as 20ms")
                        })?;
                        step.delay_ns = Some(time(v, "delay")?);
                    }
                    "unlimited" => {
                        step.rate = StepRate::Unlimited;
                        rate_given = true;
                    }
                    "down" => {
                        step.rate = StepRate::BytesPerSec(0);
                        rate_given = true;
                    }
                    r => {
                        let bps = parse_rate(r).map_err(|_| {
                            ShapeError::new(
                                &field("rate"),
                                r,
                                "a tc rate such as 100mbit, 0 (down), unlimited, or delay TIME",
                            )
                        })?;
                        step.rate = StepRate::BytesPerSec(bps);
                        rate_given = true;
                    }
                }
            }
            if steps.is_empty() && !rate_given {
                return Err(ShapeError::new(
                    &field("rate"),
                    line.trim(),
                    "a rate on the first step",
                ));
            }
            steps.push(step);
        }
        let s = Schedule::Steps { steps, repeat_ns };
        s.validate()?;
        Ok(s)
    }

    /// Parses a mahimahi trace file.
    pub fn parse_mahimahi(text: &str) -> Result<Schedule, ShapeError> {
        let mut opportunities_ms = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let ms = line.parse::<u64>().map_err(|_| {
                ShapeError::new(
                    &format!("trace line {}", n + 1),
                    line,
                    "a delivery time in whole milliseconds",
                )
            })?;
            opportunities_ms.push(ms);
        }
        let s = Schedule::Trace { opportunities_ms };
        s.validate()?;
        Ok(s)
    }

    /// The trace as a mahimahi trace file (one delivery time in ms a
    /// line), which `parse_mahimahi` reads back equal; None for a schedule
    /// of rate steps.
    pub fn to_mahimahi(&self) -> Option<String> {
        match self {
            Schedule::Trace { opportunities_ms } => Some(
                opportunities_ms
                    .iter()
                    .map(|ms| format!("{ms}\n"))
                    .collect(),
            ),
            Schedule::Steps { .. } => None,
        }
    }

    /// Checks what `parse_native` and the trace reader also check: a first step
    /// at 0, increasing step times, a period after the last step, a non-empty
    /// trace with increasing times.
    pub fn validate(&self) -> Result<(), ShapeError> {
        match self {
            Schedule::Steps { steps, repeat_ns } => {
                let first = steps
                    .first()
                    .ok_or_else(|| ShapeError::new("schedule", "no steps", "at least one step"))?;
                if first.at_ns != 0 {
                    return Err(ShapeError::new(
                        "schedule first step",
                        format!("{} ns", first.at_ns),
                        "a first step at time 0",
                    ));
                }
                for w in steps.windows(2) {
                    if w[1].at_ns <= w[0].at_ns {
                        return Err(ShapeError::new(
                            "schedule step time",
                            format!("{} ns after {} ns", w[1].at_ns, w[0].at_ns),
                            "strictly increasing step times",
                        ));
                    }
                }
                let last = steps[steps.len() - 1];
                match repeat_ns {
                    Some(p) if *p <= last.at_ns => Err(ShapeError::new(
                        "schedule repeat",
                        format!("{p} ns"),
                        format!("a period longer than the last step time ({} ns)", last.at_ns),
                    )),
                    Some(_) if steps.iter().all(|s| s.rate == StepRate::BytesPerSec(0)) => {
                        Err(ShapeError::new(
                            "schedule rate",
                            "down in every step",
                            "at least one step with a rate",
                        ))
                    }
                    None if last.rate == StepRate::BytesPerSec(0) => Err(ShapeError::new(
                        "schedule last step rate",
                        "down",
                        "a rate on the last step of a schedule that does not repeat (it lasts forever)",
                    )),
                    _ => Ok(()),
                }
            }
            Schedule::Trace { opportunities_ms } => {
                if opportunities_ms.windows(2).any(|w| w[1] < w[0]) {
                    return Err(ShapeError::new(
                        "trace",
                        "a decreasing timestamp",
                        "non-decreasing millisecond timestamps",
                    ));
                }
                match opportunities_ms.last() {
                    Some(&last) if last > 0 && last <= u64::MAX / NS_PER_MS / 2 => Ok(()),
                    last => Err(ShapeError::new(
                        "trace last timestamp",
                        last.map_or("none (the trace is empty)".to_string(), |l| {
                            format!("{l} ms")
                        }),
                        "a non-empty trace ending after 0 ms (its period)",
                    )),
                }
            }
        }
    }
}

/// A schedule running since `origin`, plus the trace cursor.
#[derive(Clone, Debug)]
pub struct Timeline {
    schedule: Schedule,
    origin: Instant,
    cursor: TraceCursor,
}

/// Trace: the last opportunity used (global index over the repetitions)
/// and the bytes it has left.
#[derive(Clone, Copy, Debug, Default)]
struct TraceCursor {
    last: Option<u64>,
    leftover: u64,
}

/// Where `t` falls in a step schedule: the step and when it ends.
struct Segment {
    step: Step,
    end: Option<Instant>,
}

impl Timeline {
    /// `schedule` must be valid.
    pub fn new(schedule: Schedule, origin: Instant) -> Timeline {
        Timeline {
            schedule,
            origin,
            cursor: TraceCursor::default(),
        }
    }

    /// The schedule this timeline follows.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The propagation delay the schedule sets at `t`, if any.
    pub fn delay_at(&self, t: Instant) -> Option<u64> {
        match &self.schedule {
            Schedule::Steps { steps, repeat_ns } => {
                self.segment(steps, *repeat_ns, t).step.delay_ns
            }
            Schedule::Trace { .. } => None,
        }
    }

    fn segment(&self, steps: &[Step], repeat_ns: Option<u64>, t: Instant) -> Segment {
        let off = t.saturating_since(self.origin);
        let (base, o) = match repeat_ns {
            Some(p) => (self.origin + off / p * p, off % p),
            None => (self.origin, off),
        };
        let i = steps.partition_point(|s| s.at_ns <= o).saturating_sub(1);
        let end = match steps.get(i + 1) {
            Some(next) => Some(base + next.at_ns),
            None => repeat_ns.map(|p| base + p),
        };
        Segment {
            step: steps[i],
            end,
        }
    }

    /// A frame of `len` bytes, `wire_bytes` with framing, starts on the
    /// wire at `start`, `rem` (in units of 1/rate ns of the step in force)
    /// past it; returns when its last bit leaves and the new remainder.
    pub fn finish(
        &mut self,
        start: Instant,
        rem: u64,
        len: u32,
        wire_bytes: u64,
    ) -> (Instant, u64) {
        let start = start.max(self.origin);
        match &self.schedule {
            Schedule::Steps { steps, repeat_ns } => {
                self.finish_steps(steps, *repeat_ns, start, rem, wire_bytes)
            }
            Schedule::Trace { opportunities_ms } => {
                let bytes = tun_bytes(len);
                let t = finish_trace(
                    self.origin,
                    opportunities_ms,
                    &mut self.cursor,
                    start,
                    bytes,
                );
                (t, 0)
            }
        }
    }

    fn finish_steps(
        &self,
        steps: &[Step],
        repeat_ns: Option<u64>,
        start: Instant,
        rem: u64,
        bytes: u64,
    ) -> (Instant, u64) {
        // Work in units of byte·ns/s: a step of d ns at r B/s carries d·r.
        let mut work = bytes as u128 * NS_PER_SEC as u128;
        let mut rem = rem as u128;
        let mut t = start;
        let per_period = repeat_ns.and_then(|p| period_capacity(steps, p));
        loop {
            if let (Some(p), Some(cap)) = (repeat_ns, per_period) {
                // Skip whole periods a large frame fills, from a period start.
                if t.saturating_since(self.origin).is_multiple_of(p) && work > cap {
                    let k = (work - 1) / cap;
                    t += (k as u64).saturating_mul(p);
                    work -= k * cap;
                }
            }
            let seg = self.segment(steps, repeat_ns, t);
            match (seg.step.rate, seg.end) {
                (StepRate::Unlimited, _) => return (t, 0),
                (StepRate::BytesPerSec(0), Some(end)) => {
                    t = end;
                    rem = 0;
                }
                (StepRate::BytesPerSec(0), None) => return (Instant::MAX, 0),
                (StepRate::BytesPerSec(r), end) => {
                    let r = r as u128;
                    let total = rem + work;
                    let cap = end.map(|e| e.saturating_since(t) as u128 * r);
                    match cap {
                        Some(cap) if total > cap => {
                            work = total - cap;
                            rem = 0;
                            t = end.unwrap_or(Instant::MAX);
                        }
                        _ => {
                            let ns = (total / r).min(u64::MAX as u128) as u64;
                            return (t + ns, (total % r) as u64);
                        }
                    }
                }
            }
            if t == Instant::MAX {
                return (t, 0);
            }
        }
    }
}

/// The time of global opportunity `g` (repetition `g / len`).
fn opportunity(origin: Instant, ops: &[u64], g: u64) -> Instant {
    let len = ops.len() as u64;
    let period = ops[ops.len() - 1] * NS_PER_MS;
    origin + (g / len).saturating_mul(period) + ops[(g % len) as usize] * NS_PER_MS
}

/// When a frame of `bytes` starting at `start` has had enough delivery
/// opportunities; advances the cursor.
fn finish_trace(
    origin: Instant,
    ops: &[u64],
    cursor: &mut TraceCursor,
    start: Instant,
    bytes: u64,
) -> Instant {
    let mut left = bytes;
    if let Some(last) = cursor.last {
        // Frames waiting when the previous one left share its opportunity.
        if cursor.leftover > 0 && opportunity(origin, ops, last) >= start {
            let used = left.min(cursor.leftover);
            cursor.leftover -= used;
            left -= used;
            if left == 0 {
                return opportunity(origin, ops, last);
            }
        }
    }
    let len = ops.len() as u64;
    let period = ops[ops.len() - 1] * NS_PER_MS;
    let off = start.saturating_since(origin);
    let within = off % period;
    let first_at = (off / period)
        .saturating_mul(len)
        .saturating_add(ops.partition_point(|&ms| ms * NS_PER_MS < within) as u64);
    let first = cursor.last.map_or(first_at, |l| first_at.max(l + 1));
    let n = left.div_ceil(MAHIMAHI_MTU);
    let g = first + n - 1;
    cursor.last = Some(g);
    cursor.leftover = n * MAHIMAHI_MTU - left;
    opportunity(origin, ops, g)
}

/// Work one period carries, or None when a step is unlimited.
fn period_capacity(steps: &[Step], period: u64) -> Option<u128> {
    let mut cap = 0u128;
    for (i, s) in steps.iter().enumerate() {
        let end = steps.get(i + 1).map_or(period, |n| n.at_ns);
        match s.rate {
            StepRate::Unlimited => return None,
            StepRate::BytesPerSec(r) => cap += (end - s.at_ns) as u128 * r as u128,
        }
    }
    Some(cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::serializer::Serializer;
    use crate::qdisc::testutil::pkt;

    /// A serializer on `schedule` from `origin`, frames of `lens` posted at
    /// `posted`; returns the departures in ns.
    fn departures(schedule: Schedule, origin: Instant, frames: &[(u32, Instant)]) -> Vec<u64> {
        let mut s = Serializer::new(12_500_000, 0);
        s.set_schedule(Some(schedule), origin);
        let mut out = Vec::new();
        for (i, &(len, at)) in frames.iter().enumerate() {
            while let Some((_, t)) = s.pop(at) {
                out.push(t.nanos());
            }
            s.post(pkt(i as u64, len), at);
        }
        while let Some((_, t)) = s.pop(Instant::MAX) {
            out.push(t.nanos());
        }
        out
    }

    fn at_zero(lens: &[u32]) -> Vec<(u32, Instant)> {
        lens.iter().map(|&l| (l, Instant::ZERO)).collect()
    }

    const MS: u64 = NS_PER_MS;

    #[test]
    fn mahimahi_trace_delivery_times_and_average_rate() {
        // 10 opportunities in 10 ms, repeating: 1504 B/ms = 12.032 Mbit/s.
        let trace = Schedule::parse_mahimahi("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n").unwrap();
        let d = departures(trace.clone(), Instant::ZERO, &at_zero(&[1514; 25]));
        let expected: Vec<u64> = (1..=25).map(|i| i * MS).collect();
        assert_eq!(d, expected);
        let rate = 25.0 * 1504.0 / (d[24] as f64 / 1e9);
        assert!((rate - 1_504_000.0).abs() < 1.0, "{rate} B/s");

        // Small frames share an opportunity; a frame larger than 1504 B
        // spans two; what an opportunity has left after the queue drained
        // is lost.
        // (A 510-byte frame counts 500 B: 496 B of IP and the 4-byte
        // TUN header.)
        let frames = [
            (510, Instant::ZERO),
            (510, Instant::ZERO),
            (510, Instant::ZERO),
            (510, Instant::ZERO),
            (3010, Instant::ZERO),
            (110, Instant::from_micros(5_500)),
        ];
        let d = departures(trace.clone(), Instant::ZERO, &frames);
        // 1500 B in opportunity 1; 4 B + 496 B in 2; 3000 = 1008 (2) +
        // 1504 (3) + 488 (4); the late frame waits for the 6 ms one.
        assert_eq!(d, vec![MS, MS, MS, 2 * MS, 4 * MS, 6 * MS]);

        // The trace starts when installed, and an idle link skips the
        // opportunities it did not use.
        let d = departures(
            trace,
            Instant::from_millis(100),
            &[
                (1514, Instant::from_micros(103_500)),
                (1514, Instant::from_micros(103_500)),
            ],
        );
        assert_eq!(d, vec![104 * MS, 105 * MS]);
    }

    #[test]
    fn mahimahi_repeated_timestamps_and_parse_errors() {
        // Two opportunities at 3 ms, one at 7 ms; period 7 ms.
        let trace = Schedule::parse_mahimahi("3\n3\n7\n").unwrap();
        let d = departures(trace, Instant::ZERO, &at_zero(&[1514; 6]));
        assert_eq!(d, vec![3 * MS, 3 * MS, 7 * MS, 10 * MS, 10 * MS, 14 * MS]);
        // A VLAN-tagged full frame (1518 B, 1508 B in mahimahi's count)
        // needs 4 B of a second opportunity; a 1500-byte frame fits in the
        // 1500 B left, a full one more needs 4 B of the third.
        let trace = Schedule::parse_mahimahi("1\n2\n3\n").unwrap();
        let d = departures(trace.clone(), Instant::ZERO, &at_zero(&[1518, 1500]));
        assert_eq!(d, vec![2 * MS, 2 * MS]);
        let d = departures(trace, Instant::ZERO, &at_zero(&[1518, 1514]));
        assert_eq!(d, vec![2 * MS, 3 * MS]);
        let e = Schedule::parse_mahimahi("1\n2\nx\n").unwrap_err();
        assert_eq!((e.field.as_str(), e.value.as_str()), ("trace line 3", "x"));
        assert!(Schedule::parse_mahimahi("5\n4\n").is_err());
        assert!(Schedule::parse_mahimahi("0\n0\n").is_err());
        assert!(Schedule::parse_mahimahi("").is_err());
    }

    #[test]
    fn a_trace_prints_as_the_file_it_was_read_from() {
        let text = "3\n3\n7\n";
        let trace = Schedule::parse_mahimahi(" 3\n\n3 \n7").unwrap();
        assert_eq!(trace.to_mahimahi().as_deref(), Some(text));
        assert_eq!(Schedule::parse_mahimahi(text).unwrap(), trace);
        let steps = Schedule::parse_native("0us 1mbit\n").unwrap();
        assert_eq!(steps.to_mahimahi(), None);
    }

    #[test]
    fn native_rate_steps_take_effect_at_the_right_time() {
        // 1 Mbit/s = 125000 B/s: 1250 B = 10 ms; 0.1 Mbit/s from 15 ms.
        let s = Schedule::parse_native("0us 1mbit\n15ms 100kbit # slower\n").unwrap();
        let d = departures(s, Instant::ZERO, &at_zero(&[1250, 1250, 1250]));
        // The second frame sends 625 B before the step and 625 B after it
        // at 12500 B/s (50 ms): it leaves at 65 ms; the third 100 ms later.
        assert_eq!(d, vec![10 * MS, 65 * MS, 165 * MS]);

        // Outage and repeat: 1 Mbit/s for 10 ms, down for 10 ms, again.
        let s = Schedule::parse_native("0 1mbit\n10ms down\nrepeat 20ms\n").unwrap();
        let d = departures(s, Instant::ZERO, &at_zero(&[625, 1250, 1250]));
        assert_eq!(d, vec![5 * MS, 25 * MS, 45 * MS]);

        // Unlimited steps send at once.
        let s = Schedule::parse_native("0 unlimited\n1ms 1mbit").unwrap();
        let d = departures(s, Instant::ZERO, &at_zero(&[1000, 1000]));
        assert_eq!(d, vec![0, 0]);
    }

    /// A schedule that repeats the same rate every 1 ms departs exactly as
    /// the constant-rate serializer (no drift at step boundaries), even for
    /// frames that span many periods.
    #[test]
    fn repeating_steps_add_no_drift() {
        let s = Schedule::parse_native("0 12mbit\n300us 12mbit\nrepeat 1ms").unwrap();
        let mut constant = Serializer::new(1_500_000, 0);
        let mut lens = Vec::new();
        for i in 0..400u32 {
            let len = 60 + (i * 7919) % 9000;
            constant.post(pkt(i as u64, len), Instant::ZERO);
            lens.push(len);
        }
        let expected: Vec<u64> = std::iter::from_fn(|| constant.pop(Instant::MAX))
            .map(|(_, t)| t.nanos())
            .collect();
        assert_eq!(departures(s, Instant::ZERO, &at_zero(&lens)), expected);
        assert_eq!(expected[0], 40_000, "60 B at 1.5 MB/s");
    }

    #[test]
    fn scheduled_delay_follows_departure_time() {
        let s = Schedule::parse_native("0 1mbit delay 5ms\n20ms\n40ms delay 1ms\n").unwrap();
        let tl = Timeline::new(s, Instant::from_millis(10));
        assert_eq!(tl.delay_at(Instant::from_millis(10)), Some(5 * MS));
        assert_eq!(tl.delay_at(Instant::from_millis(35)), Some(5 * MS));
        assert_eq!(tl.delay_at(Instant::from_millis(50)), Some(MS));
        let s = Schedule::parse_native("0 1mbit\n1s 2mbit delay 3ms").unwrap();
        let tl = Timeline::new(s, Instant::ZERO);
        assert_eq!(
            tl.delay_at(Instant::from_millis(999)),
            None,
            "the link's delay"
        );
        assert_eq!(tl.delay_at(Instant::from_millis(1000)), Some(3 * MS));
        assert_eq!(
            Timeline::new(Schedule::parse_mahimahi("1").unwrap(), Instant::ZERO)
                .delay_at(Instant::ZERO),
            None
        );
    }

    #[test]
    fn native_parse_errors_name_line_and_value() {
        let err = |t: &str| Schedule::parse_native(t).unwrap_err();
        let e = err("0 1mbit\n5ms fast\n");
        assert_eq!(
            (e.field.as_str(), e.value.as_str()),
            ("schedule line 2 rate", "fast")
        );
        assert_eq!(err("0 delay 5ms").field, "schedule line 1 rate");
        assert_eq!(err("1ms 1mbit").field, "schedule first step");
        assert_eq!(
            err("0 1mbit\n5ms 2mbit\n5ms 3mbit").field,
            "schedule step time"
        );
        assert_eq!(
            err("0 1mbit\n5ms 2mbit\nrepeat 5ms").field,
            "schedule repeat"
        );
        assert_eq!(err("0 1mbit\n5ms down").field, "schedule last step rate");
        assert_eq!(err("0 down\nrepeat 1s").field, "schedule rate");
        assert_eq!(err("0 1mbit delay").field, "schedule line 1 delay");
        assert_eq!(err("").field, "schedule");
        assert_eq!(err("soon 1mbit").field, "schedule line 1 time");
        let ok = Schedule::parse_native("# comment\n\n0us 100mbit\n1500ms 10mbit\n").unwrap();
        assert_eq!(
            ok,
            Schedule::Steps {
                steps: vec![
                    Step {
                        at_ns: 0,
                        rate: StepRate::BytesPerSec(12_500_000),
                        delay_ns: None
                    },
                    Step {
                        at_ns: 1_500 * MS,
                        rate: StepRate::BytesPerSec(1_250_000),
                        delay_ns: None
                    },
                ],
                repeat_ns: None
            }
        );
        let json = serde_json::to_string(&ok).unwrap();
        assert_eq!(serde_json::from_str::<Schedule>(&json).unwrap(), ok);
    }
}
