//! The live terminal UI of both directions of the link (ratatui + crossterm):
//! link figures, the qdisc tree with live counters, a per-flow table, time
//! series and an event log, plus keys that change the link and switch the
//! root qdisc between presets.
//!
//! Split into a pure core and a thin driver, like the rest of the crate:
//! - `state`: `App`, everything the screen shows, fed with `on_snapshot` and
//!   `on_key` (which returns the `Action` to send to the daemon);
//! - `render` and `widgets`: `draw(frame, &app)`, reading only `App`;
//! - `run`: the terminal driver (raw mode, alternate screen, restore on exit
//!   and on panic) and `run_with_backend`, the same loop over any ratatui
//!   backend and a scripted event source for tests;
//! - `fixtures`: realistic snapshots made by driving the real core, for
//!   tests and the README screenshot.
//!
//! The daemon is reached through `Control`: the control-socket client
//! implements it, tests use a fake.

pub mod fixtures;
pub mod render;
pub mod run;
pub mod state;
pub mod widgets;

pub use render::{draw, text_capture};
pub use run::{run, run_with_backend, EventSource};
pub use state::App;

use crate::bridge::BridgeSnapshot;
use crate::dir::Dir;
use crate::time::Instant;

/// What the TUI receives from the daemon at each refresh: the bridge and
/// the datapath's own health.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Snapshot {
    pub bridge: BridgeSnapshot,
    /// The datapath's timer wake-up lateness, p50, p99 and p99.9, µs.
    pub lateness_us: [u64; 3],
    /// Datapath wake-ups since start.
    pub wakeups: u64,
    /// When the daemon took the snapshot (CLOCK_MONOTONIC).
    pub taken_at: Instant,
}

/// A link setting the TUI can change, in core units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkField {
    /// Line rate, bytes/s (0 = unlimited).
    Rate,
    /// Propagation delay, ns.
    Delay,
    /// TX ring depth, descriptors.
    TxRing,
    /// BQL on (1) or off (0).
    Bql,
    /// ethtool -C tx-usecs / tx-frames / rx-usecs / rx-frames.
    TxUsecs,
    TxFrames,
    RxUsecs,
    RxFrames,
}

impl LinkField {
    /// Sets this field of `p` to `value` (core units, as `LinkField::parse`
    /// gives them), within the ranges a configuration file allows.
    pub fn apply(self, p: &mut crate::link::LinkParams, value: u64) -> Result<(), String> {
        use crate::config::{MAX_FRAMES, MAX_RATE_BYTES_PS, MAX_USECS, TX_RING};
        use crate::link::MAX_DELAY_NS;
        let name = self.name();
        let within = |min: u64, max: u64, unit: &str| {
            if (min..=max).contains(&value) {
                Ok(value as u32)
            } else {
                Err(format!("{name} {value}: expected {min}..={max} {unit}"))
            }
        };
        match self {
            LinkField::Rate if value > MAX_RATE_BYTES_PS => {
                return Err(format!(
                    "rate {}: above the maximum; expected at most 100gbit (or 0 for unlimited)",
                    crate::units::print_rate(value)
                ))
            }
            LinkField::Rate => p.rate_bytes_ps = value,
            LinkField::Delay if value > MAX_DELAY_NS => {
                return Err(format!(
                    "delay {}: too long; expected at most 60s",
                    crate::units::sprint_time(value / 1_000)
                ))
            }
            LinkField::Delay => p.delay_ns = value,
            LinkField::TxRing => {
                p.tx_ring = within(
                    *TX_RING.start() as u64,
                    *TX_RING.end() as u64,
                    "descriptors",
                )?
            }
            LinkField::Bql => p.bql = value != 0,
            LinkField::TxUsecs => p.tx_usecs = within(0, MAX_USECS as u64, "µs")?,
            LinkField::TxFrames => p.tx_frames = within(0, MAX_FRAMES as u64, "frames")?,
            LinkField::RxUsecs => p.rx_usecs = within(0, MAX_USECS as u64, "µs")?,
            LinkField::RxFrames => p.rx_frames = within(0, MAX_FRAMES as u64, "frames")?,
        }
        Ok(())
    }

    pub const ALL: [LinkField; 8] = [
        LinkField::Rate,
        LinkField::Delay,
        LinkField::TxRing,
        LinkField::Bql,
        LinkField::TxUsecs,
        LinkField::TxFrames,
        LinkField::RxUsecs,
        LinkField::RxFrames,
    ];

    /// The word the set prompt accepts (`rate 50mbit`, `rx-usecs 20`).
    pub fn name(self) -> &'static str {
        match self {
            LinkField::Rate => "rate",
            LinkField::Delay => "delay",
            LinkField::TxRing => "ring",
            LinkField::Bql => "bql",
            LinkField::TxUsecs => "tx-usecs",
            LinkField::TxFrames => "tx-frames",
            LinkField::RxUsecs => "rx-usecs",
            LinkField::RxFrames => "rx-frames",
        }
    }

    /// Parses the value as people type it (tc units for rate and delay,
    /// on/off for BQL, plain numbers otherwise) into core units.
    pub fn parse(self, text: &str) -> Result<u64, String> {
        let number = |max: u64| {
            text.parse::<u64>()
                .ok()
                .filter(|v| *v <= max)
                .ok_or_else(|| {
                    format!(
                        "{} \"{text}\": expected a whole number 0..={max}",
                        self.name()
                    )
                })
        };
        match self {
            LinkField::Rate => crate::units::parse_rate(text).map_err(|e| e.to_string()),
            LinkField::Delay => crate::units::parse_time_ns(text).map_err(|e| e.to_string()),
            LinkField::TxRing => number(4096).and_then(|v| {
                if v == 0 {
                    Err(format!("ring \"{text}\": expected 1..=4096 descriptors"))
                } else {
                    Ok(v)
                }
            }),
            LinkField::Bql => match text {
                "on" | "1" | "true" => Ok(1),
                "off" | "0" | "false" => Ok(0),
                _ => Err(format!("bql \"{text}\": expected on or off")),
            },
            LinkField::TxUsecs | LinkField::RxUsecs => number(1_000_000),
            LinkField::TxFrames | LinkField::RxFrames => number(4096),
        }
    }

    /// The value in the units people read.
    pub fn show(self, value: u64) -> String {
        match self {
            LinkField::Rate if value == 0 => "unlimited".into(),
            LinkField::Rate => crate::units::print_rate(value),
            LinkField::Delay => crate::units::sprint_time(value / crate::time::NS_PER_US),
            LinkField::Bql => if value != 0 { "on" } else { "off" }.into(),
            _ => value.to_string(),
        }
    }
}

/// A root qdisc the TUI can switch a direction to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    PfifoFast,
    FqCodel,
    Sfq,
    HtbSfq,
    Tbf,
}

impl Preset {
    pub const ALL: [Preset; 5] = [
        Preset::PfifoFast,
        Preset::FqCodel,
        Preset::Sfq,
        Preset::HtbSfq,
        Preset::Tbf,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::PfifoFast => "pfifo_fast",
            Preset::FqCodel => "fq_codel",
            Preset::Sfq => "sfq",
            Preset::HtbSfq => "htb + sfq",
            Preset::Tbf => "tbf",
        }
    }

    /// The tc command lines that install this preset as the root qdisc of
    /// `dir` (device `left` is the left→right egress). HTB and TBF shape to
    /// `rate_bytes_ps` (the link rate; 1gbit when the link is unlimited).
    pub fn tc_lines(self, dir: Dir, rate_bytes_ps: u64) -> Vec<String> {
        let dev = dir.dev();
        let rate_bytes_ps = if rate_bytes_ps == 0 {
            125_000_000
        } else {
            rate_bytes_ps
        };
        let rate = crate::units::print_rate(rate_bytes_ps);
        let root = format!("tc qdisc replace dev {dev} root");
        match self {
            Preset::PfifoFast => vec![format!("{root} pfifo_fast")],
            Preset::FqCodel => vec![format!("{root} fq_codel")],
            Preset::Sfq => vec![format!("{root} sfq perturb 10")],
            Preset::HtbSfq => vec![
                format!("{root} handle 1: htb default 10"),
                format!(
                    "tc class add dev {dev} parent 1: classid 1:10 htb rate {rate} ceil {rate}"
                ),
                format!("tc qdisc add dev {dev} parent 1:10 handle 10: sfq perturb 10"),
            ],
            Preset::Tbf => {
                // 4 ms worth of bytes, at least two full frames.
                let burst = (rate_bytes_ps / 250).max(3028);
                vec![format!(
                    "{root} tbf rate {rate} burst {burst}b latency 50ms"
                )]
            }
        }
    }
}

/// What a key asks the daemon to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Change one link setting of one direction (value in core units, see
    /// `LinkField`).
    SetLink {
        dir: Dir,
        field: LinkField,
        value: u64,
    },
    /// tc command lines, one per line, applied in order.
    Tc(String),
    /// Leave the TUI (the daemon keeps running).
    Quit,
}

impl Action {
    /// The direction the action changes: a link setting's, or the device a
    /// tc line names (`dev left` is left→right).
    pub fn dir(&self) -> Option<Dir> {
        match self {
            Action::SetLink { dir, .. } => Some(*dir),
            Action::Tc(lines) => {
                let dev = lines.split_whitespace().skip_while(|w| *w != "dev").nth(1);
                match dev {
                    Some("left") => Some(Dir::LeftToRight),
                    Some("right") => Some(Dir::RightToLeft),
                    _ => None,
                }
            }
            Action::Quit => None,
        }
    }

    /// One line for the event log.
    pub fn describe(&self) -> String {
        match self {
            Action::SetLink { field, value, .. } => {
                format!("set {} {}", field.name(), field.show(*value))
            }
            Action::Tc(lines) => lines.lines().collect::<Vec<_>>().join("; "),
            Action::Quit => "quit".into(),
        }
    }
}

/// The daemon as the TUI sees it.
pub trait Control {
    /// Applies an action; `Ok` carries the daemon's reply text, `Err` its
    /// error message (shown in the event log).
    fn send(&mut self, action: &Action) -> Result<String, String>;
    /// The newest snapshot, or `None` when there is nothing new.
    fn snapshot(&mut self) -> Option<Snapshot>;
}

/// `L→R` / `R→L`.
pub fn dir_label(dir: Dir) -> &'static str {
    match dir {
        Dir::LeftToRight => "L→R",
        Dir::RightToLeft => "R→L",
    }
}

#[cfg(test)]
mod tests {
    use super::LinkField;
    use crate::link::LinkParams;

    #[test]
    fn link_fields_set_their_parameter_and_refuse_overflow() {
        let mut p = LinkParams::default();
        LinkField::Rate.apply(&mut p, 1_000).unwrap();
        LinkField::Bql.apply(&mut p, 0).unwrap();
        LinkField::RxUsecs.apply(&mut p, 50).unwrap();
        assert_eq!((p.rate_bytes_ps, p.bql, p.rx_usecs), (1_000, false, 50));
        let err = LinkField::TxRing.apply(&mut p, u64::MAX).unwrap_err();
        assert!(err.contains("ring"), "{err}");
    }
}
