//! One link setting at a time, as `set` names them (`left.rate=10mbit`,
//! `right.rx-usecs=20`) and the TUI edits them: `LinkField` parses a value
//! as people type it into core units, shows it back and applies it to
//! `LinkParams` within the ranges a configuration file allows; `set_arg`
//! turns a field's value back into the `set` argument that carries it, so
//! the TUI's changes over the control socket take the same path as
//! `bloatbox set` (inside the daemon they go typed: `SetPlan::field`).

use crate::config::values::{DelayUnit, LinkRateUnit, UnitKind};
use crate::dir::Dir;
use crate::units::UnitError;

/// A link field's value refused: the field, the value and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    /// A value in core units outside the field's range.
    #[error("{} {value}: expected {min}..={max} {unit}", field.name())]
    OutOfRange {
        /// The field.
        field: LinkField,
        /// The value refused.
        value: u64,
        /// The smallest value allowed.
        min: u64,
        /// The largest value allowed.
        max: u64,
        /// The unit of the range.
        unit: &'static str,
    },
    /// A rate above the fastest link allowed (bytes/s).
    #[error("rate {}: above the maximum; expected at most 100gbit (or 0 for unlimited)", crate::units::print_rate(*.0))]
    RateTooHigh(u64),
    /// A delay above the longest allowed (ns).
    #[error("delay {}: too long; expected at most 60s", crate::units::sprint_time(.0 / 1_000))]
    DelayTooLong(u64),
    /// A rate or delay that does not parse as the configuration reads it.
    #[error(transparent)]
    Unit(#[from] UnitError),
    /// Text that is not a whole number up to `max`.
    #[error("{} \"{text}\": expected a whole number 0..={max}", field.name())]
    NotANumber {
        /// The field.
        field: LinkField,
        /// The text as typed.
        text: String,
        /// The largest value allowed.
        max: u64,
    },
    /// Text that is not a whole number 1..=`max`, for a field that needs at
    /// least one (ring, TX queues).
    #[error("{} \"{text}\": expected 1..={max} {unit}", field.name())]
    NotACount {
        /// The field.
        field: LinkField,
        /// The text as typed.
        text: String,
        /// The largest value allowed.
        max: u64,
        /// The unit of the range.
        unit: &'static str,
    },
    /// BQL set to something other than on or off.
    #[error("bql \"{0}\": expected on or off")]
    NotOnOff(String),
}

/// A link setting that `set` and the TUI change one at a time, in core units.
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
    /// `tx-frames`: TX completions per interrupt (ethtool -C).
    TxFrames,
    /// `rx-usecs`: RX interrupt delay, µs (ethtool -C).
    RxUsecs,
    /// `rx-frames`: received frames per interrupt (ethtool -C).
    RxFrames,
    /// TX queues of the device (`ethtool -L DEV tx N`; more than one: mq).
    TxQueues,
    /// The driver stops its TX queue with fewer free descriptors than this
    /// (virtio_net's 2 + MAX_SKB_FRAGS = 19; 0: only when full).
    TxStopThreshold,
    /// What posting one frame to the ring costs the driver, ns (the
    /// `xmit_more` doorbell).
    TxPostNs,
}

impl LinkField {
    /// Sets this field of `p` to `value` (core units, as `LinkField::parse`
    /// gives them), within the ranges a configuration file allows.
    pub fn apply(self, p: &mut crate::link::LinkParams, value: u64) -> Result<(), FieldError> {
        use crate::config::{MAX_FRAMES, MAX_RATE_BYTES_PS, MAX_USECS, TX_RING};
        use crate::link::MAX_DELAY_NS;
        let within = |min: u64, max: u64, unit: &'static str| {
            if (min..=max).contains(&value) {
                Ok(value as u32)
            } else {
                Err(FieldError::OutOfRange {
                    field: self,
                    value,
                    min,
                    max,
                    unit,
                })
            }
        };
        match self {
            LinkField::Rate if value > MAX_RATE_BYTES_PS => {
                return Err(FieldError::RateTooHigh(value))
            }
            LinkField::Rate => p.rate_bytes_ps = value,
            LinkField::Delay if value > MAX_DELAY_NS => {
                return Err(FieldError::DelayTooLong(value))
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
            LinkField::TxQueues => {
                p.tx_queues = within(1, u64::from(crate::qdisc::mq::MAX_QUEUES), "queues")? as u16
            }
            LinkField::TxStopThreshold => {
                p.tx_stop_threshold = within(0, *TX_RING.end() as u64, "descriptors")?
            }
            LinkField::TxPostNs => {
                p.tx_post_ns = u64::from(within(0, u64::from(crate::config::MAX_POST_NS), "ns")?)
            }
        }
        Ok(())
    }

    /// This field of `p`, in core units (what `apply` sets).
    pub fn get(self, p: &crate::link::LinkParams) -> u64 {
        match self {
            LinkField::Rate => p.rate_bytes_ps,
            LinkField::Delay => p.delay_ns,
            LinkField::TxRing => u64::from(p.tx_ring),
            LinkField::Bql => u64::from(p.bql),
            LinkField::TxUsecs => u64::from(p.tx_usecs),
            LinkField::TxFrames => u64::from(p.tx_frames),
            LinkField::RxUsecs => u64::from(p.rx_usecs),
            LinkField::RxFrames => u64::from(p.rx_frames),
            LinkField::TxQueues => u64::from(p.tx_queues),
            LinkField::TxStopThreshold => u64::from(p.tx_stop_threshold),
            LinkField::TxPostNs => p.tx_post_ns,
        }
    }

    /// Every field, in the order the docs and the help list them.
    pub const ALL: [LinkField; 11] = [
        LinkField::Rate,
        LinkField::Delay,
        LinkField::TxRing,
        LinkField::Bql,
        LinkField::TxUsecs,
        LinkField::TxFrames,
        LinkField::RxUsecs,
        LinkField::RxFrames,
        LinkField::TxQueues,
        LinkField::TxStopThreshold,
        LinkField::TxPostNs,
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
            LinkField::TxQueues => "tx-queues",
            LinkField::TxStopThreshold => "tx-stop-threshold",
            LinkField::TxPostNs => "tx-post-ns",
        }
    }

    /// A warning for a value that is taken as written but is probably a
    /// typo (a bare or tiny rate, a rate in bytes, a delay without a unit;
    /// `crate::tc::hint`).
    pub fn hint(self, text: &str) -> Option<String> {
        match self {
            LinkField::Rate => crate::tc::hint::rate(text),
            LinkField::Delay => crate::tc::hint::time(text),
            _ => None,
        }
    }

    /// Parses the value as people type it (tc units for rate and delay,
    /// on/off for BQL, plain numbers otherwise) into core units.
    pub fn parse(self, text: &str) -> Result<u64, FieldError> {
        let number = |max: u64| {
            text.parse::<u64>()
                .ok()
                .filter(|v| *v <= max)
                .ok_or_else(|| FieldError::NotANumber {
                    field: self,
                    text: text.to_string(),
                    max,
                })
        };
        let at_least_one = |max: u64, unit: &'static str| {
            text.parse::<u64>()
                .ok()
                .filter(|v| (1..=max).contains(v))
                .ok_or_else(|| FieldError::NotACount {
                    field: self,
                    text: text.to_string(),
                    max,
                    unit,
                })
        };
        match self {
            // The configuration's rules for `rate` and `delay`, so that a
            // value means the same in both (`unlimited` included).
            LinkField::Rate => Ok(LinkRateUnit::parse(text)?),
            LinkField::Delay => Ok(DelayUnit::parse(text)?),
            LinkField::TxRing => at_least_one(4096, "descriptors"),
            LinkField::Bql => match text {
                "on" | "1" | "true" => Ok(1),
                "off" | "0" | "false" => Ok(0),
                _ => Err(FieldError::NotOnOff(text.to_string())),
            },
            LinkField::TxUsecs | LinkField::RxUsecs => number(1_000_000),
            LinkField::TxFrames | LinkField::RxFrames => number(4096),
            LinkField::TxStopThreshold => number(4096),
            LinkField::TxPostNs => number(u64::from(crate::config::MAX_POST_NS)),
            LinkField::TxQueues => at_least_one(u64::from(crate::qdisc::mq::MAX_QUEUES), "queues"),
        }
    }

    /// The value in the units people read.
    pub fn show(self, value: u64) -> String {
        match self {
            LinkField::Rate if value == 0 => "unlimited".into(),
            LinkField::Rate => crate::units::print_rate(value),
            LinkField::Delay => crate::units::sprint_time(value / crate::time::NS_PER_US),
            LinkField::Bql => if value != 0 { "on" } else { "off" }.into(),
            LinkField::TxPostNs => format!("{value}ns"),
            _ => value.to_string(),
        }
    }
}

/// A `set` argument that `LinkField::parse` reads back as exactly `value`
/// (core units: bytes/s, ns). `bloatbox top` sends its link changes over
/// the control socket as these, so they go through the same field edit as
/// `bloatbox set`; a typed field edit (`SetPlan::field`) is named by it in
/// an error.
pub fn set_arg(dir: Dir, field: LinkField, value: u64) -> String {
    let dev = dir.dev();
    let text = match field {
        LinkField::Rate => format!("{value}bps"),
        LinkField::Delay => format!("{value}ns"),
        _ => value.to_string(),
    };
    format!("{dev}.{}={text}", field.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkParams;

    #[test]
    fn link_fields_set_their_parameter_and_refuse_overflow() {
        let mut p = LinkParams::default();
        LinkField::Rate.apply(&mut p, 1_000).unwrap();
        LinkField::Bql.apply(&mut p, 0).unwrap();
        LinkField::RxUsecs.apply(&mut p, 50).unwrap();
        assert_eq!((p.rate_bytes_ps, p.bql, p.rx_usecs), (1_000, false, 50));
        let err = LinkField::TxRing.apply(&mut p, u64::MAX).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("ring {}: expected 1..=4096 descriptors", u64::MAX)
        );
    }

    #[test]
    fn a_field_that_needs_one_offers_its_own_range() {
        for text in ["0", "ring", "4097"] {
            assert_eq!(
                LinkField::TxRing.parse(text).unwrap_err().to_string(),
                format!("ring \"{text}\": expected 1..=4096 descriptors")
            );
        }
        assert_eq!(LinkField::TxRing.parse("1"), Ok(1));
    }

    #[test]
    fn rate_and_delay_follow_the_configuration_s_rules() {
        assert_eq!(LinkField::Rate.parse("unlimited"), Ok(0));
        assert_eq!(LinkField::Rate.parse("0"), Ok(0));
        assert_eq!(LinkField::Rate.parse("100mbit"), Ok(12_500_000));
        assert_eq!(LinkField::Delay.parse("250ns"), Ok(250));
        assert!(LinkField::Rate.parse("fast").is_err());
    }

    #[test]
    fn tui_values_round_trip_through_set_arguments() {
        for (field, value) in [
            (LinkField::Rate, 1_250_000),
            (LinkField::Rate, 0),
            (LinkField::Delay, 20_000_123),
            (LinkField::TxRing, 64),
            (LinkField::Bql, 0),
            (LinkField::RxUsecs, 20),
            (LinkField::TxQueues, 4),
            (LinkField::TxStopThreshold, 19),
            (LinkField::TxPostNs, 2_500),
        ] {
            let mut p = [LinkParams::default(); 2];
            let arg = set_arg(Dir::RightToLeft, field, value);
            super::super::set::apply_set(std::slice::from_ref(&arg), &mut p).unwrap();
            assert_eq!(field.get(&p[1]), value, "{arg}");
            assert_eq!(p[0], LinkParams::default(), "{arg} changed left");
        }
    }
}
