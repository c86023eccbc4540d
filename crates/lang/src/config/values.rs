//! Typed leaf values of the configuration that parse at deserialization
//! time, so that a bad value is reported with its exact position: tc-style
//! quantities (rates, sizes, times, keeping the text as written) and
//! interface addresses with a prefix length. The command line's duration
//! flags parse with the same rule as a delay (`DurationFlag`), so that a
//! text means the same in the file, in `set` and on the command line.

use crate::units::{parse_rate, parse_size, parse_time, parse_time_ns, UnitError};
use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};
use std::fmt;
use std::marker::PhantomData;
use std::net::IpAddr;

/// How one kind of quantity is parsed and explained.
pub trait UnitKind {
    /// Parses the text into the core unit (bytes/s, bytes, µs or ns).
    fn parse(text: &str) -> Result<u64, UnitError>;
    /// Whether a bare TOML integer is accepted (as the text of that number).
    const BARE_INTEGERS: bool;
    /// "invalid rate; expected ...; fix: ..." without the key.
    const HELP: &'static str;
}

/// A quantity as written (`"100mbit"`) together with its value in core units.
pub struct Quantity<K> {
    text: String,
    value: u64,
    kind: PhantomData<K>,
}

/// A quantity that did not parse: why the unit parser refused it, shown as
/// the full help message of its kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{help}")]
pub struct QuantityError {
    /// The unit parser's refusal: the text as given and what it allows.
    pub unit: UnitError,
    /// The kind's help (`UnitKind::HELP`).
    pub help: &'static str,
}

impl<K: UnitKind> Quantity<K> {
    /// Parses `text`; the error reads as the full help message for that kind.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        match K::parse(text.trim()) {
            Ok(value) => Ok(Quantity {
                text: text.trim().to_string(),
                value,
                kind: PhantomData,
            }),
            Err(unit) => Err(QuantityError {
                unit,
                help: K::HELP,
            }),
        }
    }

    /// The value in core units (see the kind's alias).
    pub fn value(&self) -> u64 {
        self.value
    }

    /// The text as written in the file, handed unchanged to tc.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl<K> Clone for Quantity<K> {
    fn clone(&self) -> Self {
        Quantity {
            text: self.text.clone(),
            value: self.value,
            kind: PhantomData,
        }
    }
}

impl<K> PartialEq for Quantity<K> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value && self.text == other.text
    }
}

impl<K> Eq for Quantity<K> {}

impl<K> fmt::Debug for Quantity<K> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{:?}={}", self.text, self.value)
    }
}

impl<K> fmt::Display for Quantity<K> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<K> Serialize for Quantity<K> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de, K: UnitKind> Deserialize<'de> for Quantity<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<K>(PhantomData<K>);
        impl<K: UnitKind> Visitor<'_> for V<K> {
            type Value = Quantity<K>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string with a unit")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Quantity::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                if K::BARE_INTEGERS || v == 0 {
                    Quantity::parse(&v.to_string()).map_err(E::custom)
                } else {
                    Err(E::custom(format!(
                        "a bare number has no unit; a TOML number {v} is not taken here (tc would \
                         read \"{v}\" in bit/s or µs, rarely what is meant): write the value \
                         with its unit in quotes; {}",
                        K::HELP
                    )))
                }
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A line rate: tc rate units, plus `0` or `unlimited` (no rate limit).
pub struct LinkRateUnit;
impl UnitKind for LinkRateUnit {
    fn parse(text: &str) -> Result<u64, UnitError> {
        if text.eq_ignore_ascii_case("unlimited") {
            Ok(0)
        } else {
            parse_rate(text)
        }
    }
    const BARE_INTEGERS: bool = false;
    const HELP: &'static str = "invalid rate; expected a number with a unit such as 100mbit, 1gbit, 500kbit (tc units; kbps means kilobytes/s), or \"0\"/\"unlimited\"; fix: write a rate such as \"100mbit\"";
}

/// A tc rate argument (`rate`, `ceil`, `peakrate`).
pub struct TcRateUnit;
impl UnitKind for TcRateUnit {
    fn parse(text: &str) -> Result<u64, UnitError> {
        parse_rate(text)
    }
    const BARE_INTEGERS: bool = false;
    const HELP: &'static str = "invalid rate; expected a number with a unit such as 100mbit, 1gbit, 500kbit (tc units; kbps means kilobytes/s); fix: write a rate such as \"100mbit\"";
}

/// A tc size argument (`burst`, `limit` of bfifo...); a bare integer is bytes.
pub struct SizeUnit;
impl UnitKind for SizeUnit {
    fn parse(text: &str) -> Result<u64, UnitError> {
        parse_size(text)
    }
    const BARE_INTEGERS: bool = true;
    const HELP: &'static str = "invalid size; expected a number of bytes with an optional unit: b, k/kb (1024), m/mb, g/gb, kbit, mbit; fix: write a size such as \"20280b\" or 1514";
}

/// A tc time argument (`target`, `interval`, `latency`); bare text is µs as in tc.
pub struct TcTimeUnit;
impl UnitKind for TcTimeUnit {
    fn parse(text: &str) -> Result<u64, UnitError> {
        parse_time(text)
    }
    const BARE_INTEGERS: bool = false;
    const HELP: &'static str = "invalid time; expected a number with a unit: us, ms, s (in quotes, a number without a unit is µs, as in tc); fix: write a time such as \"5ms\"";
}

/// A propagation delay in ns: tc time units plus `ns`.
pub struct DelayUnit;
impl UnitKind for DelayUnit {
    fn parse(text: &str) -> Result<u64, UnitError> {
        parse_time_ns(text)
    }
    const BARE_INTEGERS: bool = false;
    const HELP: &'static str = "invalid time; expected a number with a unit: ns, us, ms, s (a bare number is µs, as in tc); fix: write a time such as \"5ms\" or \"30s\"";
}

/// Link rate in bytes/s (0 = unlimited).
pub type LinkRate = Quantity<LinkRateUnit>;
/// tc rate in bytes/s.
pub type TcRate = Quantity<TcRateUnit>;
/// tc size in bytes.
pub type Size = Quantity<SizeUnit>;
/// tc time in µs.
pub type TcTime = Quantity<TcTimeUnit>;
/// Delay in ns.
pub type Delay = Quantity<DelayUnit>;

/// An interface address with its prefix length: `10.77.0.1/24`, `fd00:77::1/64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IfAddr {
    /// The address.
    pub addr: IpAddr,
    /// The prefix length: 0..=32 for IPv4, 0..=128 for IPv6.
    pub prefix: u8,
}

/// An interface address that did not parse; each says what is expected and
/// how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IfAddrError {
    /// No `/PREFIX`, or the address before it is not an IP address.
    #[error("invalid address; expected an address with a prefix length such as 10.77.0.1/24 or fd00:77::1/64; fix: write the address as ADDRESS/PREFIX")]
    Address {
        /// The text as given.
        text: String,
    },
    /// The prefix length is not a number in `0..=max`.
    #[error(
        "invalid prefix length \"{prefix}\"; expected 0..={max}; fix: write e.g. {addr}/{}",
        if addr.is_ipv4() { 24 } else { 64 }
    )]
    Prefix {
        /// The address, which parsed.
        addr: IpAddr,
        /// The prefix length as given.
        prefix: String,
        /// The longest prefix of the address's family.
        max: u8,
    },
}

impl IfAddr {
    /// Parses `ADDRESS/PREFIX`; the error says what is expected and how to fix
    /// it.
    pub fn parse(text: &str) -> Result<IfAddr, IfAddrError> {
        let malformed = || IfAddrError::Address {
            text: text.to_string(),
        };
        let (addr, prefix) = text.trim().split_once('/').ok_or_else(malformed)?;
        let addr: IpAddr = addr.parse().map_err(|_| malformed())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        match prefix.parse::<u8>() {
            Ok(prefix) if prefix <= max => Ok(IfAddr { addr, prefix }),
            _ => Err(IfAddrError::Prefix {
                addr,
                prefix: prefix.to_string(),
                max,
            }),
        }
    }

    /// The network part as a big-endian integer (IPv4 addresses widened).
    pub fn network(&self) -> u128 {
        let (bits, width) = match self.addr {
            IpAddr::V4(a) => (u32::from(a) as u128, 32),
            IpAddr::V6(a) => (u128::from(a), 128),
        };
        let host_bits = width - self.prefix as u32;
        if host_bits >= 128 {
            0
        } else {
            bits >> host_bits << host_bits
        }
    }
}

impl fmt::Display for IfAddr {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Serialize for IfAddr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for IfAddr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        IfAddr::parse(&text).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_keep_text_and_value() {
        let r = LinkRate::parse("100mbit").unwrap();
        assert_eq!((r.text(), r.value()), ("100mbit", 12_500_000));
        assert_eq!(LinkRate::parse("unlimited").unwrap().value(), 0);
        assert_eq!(LinkRate::parse("0").unwrap().value(), 0);
        assert!(TcRate::parse("unlimited").is_err());
        assert_eq!(Delay::parse("250ns").unwrap().value(), 250);
        assert_eq!(Delay::parse("5ms").unwrap().value(), 5_000_000);
        assert_eq!(TcTime::parse("499us").unwrap().value(), 499);
        assert_eq!(Size::parse("20280b").unwrap().value(), 20280);
        let e = LinkRate::parse("100mbps/s").unwrap_err();
        assert_eq!(e.unit.value, "100mbps/s");
        assert!(e
            .to_string()
            .starts_with("invalid rate; expected a number with a unit such as 100mbit"));
    }

    #[test]
    fn bare_integers_only_where_unambiguous() {
        #[derive(serde::Deserialize)]
        struct T {
            size: Size,
            rate: LinkRate,
        }
        let t: T = toml::from_str("size = 1514\nrate = 0").unwrap();
        assert_eq!((t.size.value(), t.rate.value()), (1514, 0));
        let e = toml::from_str::<T>("size = 1\nrate = 100").err().unwrap();
        assert!(e.message().contains("a bare number has no unit"), "{e}");
    }

    #[test]
    fn addresses_parse_and_compare_networks() {
        let a = IfAddr::parse("10.77.0.1/24").unwrap();
        let b = IfAddr::parse("10.77.0.200/24").unwrap();
        let c = IfAddr::parse("10.77.1.2/24").unwrap();
        assert_eq!(a.network(), b.network());
        assert_ne!(a.network(), c.network());
        assert_eq!(a.to_string(), "10.77.0.1/24");
        let v6 = IfAddr::parse("fd00:77::1/64").unwrap();
        assert_eq!(
            v6.network(),
            IfAddr::parse("fd00:77::2/64").unwrap().network()
        );
        assert_eq!(IfAddr::parse("0.0.0.1/0").unwrap().network(), 0);
        assert!(IfAddr::parse("10.77.0.1").is_err());
        let e = IfAddr::parse("10.77.0.1/33").unwrap_err();
        assert!(matches!(e, IfAddrError::Prefix { max: 32, .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "invalid prefix length \"33\"; expected 0..=32; fix: write e.g. 10.77.0.1/24"
        );
        assert!(IfAddr::parse("10.77.0.256/24").is_err());
    }
}
