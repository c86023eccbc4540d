//! The framing language, the front end's half of link-layer framing: the
//! words of tc's size table (`stab`, iproute2's `tc/tc_stab.c`
//! `parse_size_table`: `overhead`, `mpu`, `linklayer`) and the named
//! per-encapsulation presets of tc-cake(8), read over the one tokenizer
//! `crate::tc::tokens::Tokens` into the typed `crate::link::Framing` the
//! serializer takes.

use crate::link::{Framing, ShapeError};
use crate::tc::tokens::Tokens;
use crate::units::LinkLayer;

/// Named framings. `pppoe` is PPPoE over Ethernet (6-byte PPPoE header and
/// 2-byte PPP protocol field); the ATM ones are the per-encapsulation
/// overheads tc-cake(8) documents for ADSL (RFC 2684 bridging/routing,
/// RFC 2364 PPPoA, RFC 2516 PPPoE), with ATM cells.
pub const FRAMING_PRESETS: [(&str, i32, LinkLayer); 9] = [
    ("pppoe", 8, LinkLayer::Ethernet),
    ("ipoa-vcmux", 8, LinkLayer::Atm),
    ("ipoa-llcsnap", 16, LinkLayer::Atm),
    ("bridged-vcmux", 24, LinkLayer::Atm),
    ("bridged-llcsnap", 32, LinkLayer::Atm),
    ("pppoa-vcmux", 10, LinkLayer::Atm),
    ("pppoa-llc", 14, LinkLayer::Atm),
    ("pppoe-vcmux", 32, LinkLayer::Atm),
    ("pppoe-llcsnap", 40, LinkLayer::Atm),
];

/// `v` as a `T` that `ok` accepts, or an error naming `field`, `v` and
/// what is `allowed`.
fn parse_within<T: std::str::FromStr>(
    field: &str,
    v: &str,
    allowed: &str,
    ok: impl Fn(&T) -> bool,
) -> Result<T, ShapeError> {
    v.parse()
        .ok()
        .filter(|x| ok(x))
        .ok_or_else(|| ShapeError::new(field, v, allowed))
}

/// Sets `f`'s overhead and link layer to the preset `name`; false when
/// there is no such preset.
fn preset(f: &mut Framing, name: &str) -> bool {
    FRAMING_PRESETS
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|(_, o, l)| {
            f.overhead = *o;
            f.linklayer = *l;
        })
        .is_some()
}

/// Parses stab-style options: `overhead N`, `mpu N`, `linklayer
/// ethernet|atm|adsl|ppp|pppoe`, or one of `FRAMING_PRESETS` by name
/// (which sets overhead and link layer; a later `overhead` overrides).
/// `linklayer ppp`/`pppoe` is `pppoe`.
pub fn parse_framing(args: &[&str]) -> Result<Framing, ShapeError> {
    let mut f = Framing::default();
    let mut it = Tokens::new(args);
    while let Some(tok) = it.next() {
        let missing = |allowed: &str| {
            let allowed = allowed.to_string();
            move || ShapeError::new(tok, "nothing", allowed)
        };
        match tok {
            "overhead" => {
                const ALLOWED: &str = "an integer -1000..=1000";
                f.overhead = parse_within(tok, it.value(missing(ALLOWED))?, ALLOWED, |o: &i32| {
                    (-1000..=1000).contains(o)
                })?;
            }
            "mpu" => {
                const ALLOWED: &str = "a size in bytes 0..=65535";
                f.mpu = parse_within(tok, it.value(missing(ALLOWED))?, ALLOWED, |m: &u32| {
                    *m <= 65535
                })?;
            }
            "linklayer" => {
                const ALLOWED: &str = "ethernet, atm, adsl, ppp or pppoe";
                let v = it.value(missing(ALLOWED))?;
                match v {
                    "ethernet" => f.linklayer = LinkLayer::Ethernet,
                    "atm" | "adsl" => f.linklayer = LinkLayer::Atm,
                    "ppp" | "pppoe" => {
                        preset(&mut f, "pppoe");
                    }
                    _ => return Err(ShapeError::new("linklayer", v, ALLOWED)),
                }
            }
            name if preset(&mut f, name) => {}
            other => {
                return Err(ShapeError::new(
                    "framing option",
                    other,
                    "overhead N, mpu N, linklayer ethernet|atm|adsl|ppp|pppoe, or a preset: pppoe ipoa-vcmux ipoa-llcsnap bridged-vcmux bridged-llcsnap pppoa-vcmux pppoa-llc pppoe-vcmux pppoe-llcsnap",
                ))
            }
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_mpu_and_negative_overhead() {
        let framing = |overhead, mpu, linklayer| Framing {
            overhead,
            mpu,
            linklayer,
        };
        // pppoe-llcsnap: +40 B on ATM.
        assert_eq!(
            parse_framing(&["pppoe-llcsnap"]).unwrap(),
            framing(40, 0, LinkLayer::Atm)
        );
        assert_eq!(
            parse_framing(&["mpu", "100", "linklayer", "ethernet"]).unwrap(),
            framing(0, 100, LinkLayer::Ethernet)
        );
        assert_eq!(
            parse_framing(&["overhead", "-1000"]).unwrap(),
            framing(-1000, 0, LinkLayer::Ethernet)
        );
        // linklayer pppoe: Ethernet framing with 8 bytes more.
        let f = parse_framing(&["linklayer", "pppoe", "mpu", "64"]).unwrap();
        assert_eq!((f.overhead, f.mpu), (8, 64));
    }

    #[test]
    fn framing_parse_errors_name_field_and_range() {
        let e = parse_framing(&["overhead", "5000"]).unwrap_err();
        assert_eq!((e.field.as_str(), e.value.as_str()), ("overhead", "5000"));
        assert!(e.allowed.contains("-1000..=1000"));
        assert_eq!(parse_framing(&["mpu"]).unwrap_err().field, "mpu");
        assert_eq!(
            parse_framing(&["linklayer", "token-ring"])
                .unwrap_err()
                .value,
            "token-ring"
        );
        assert_eq!(parse_framing(&["cells"]).unwrap_err().value, "cells");
    }
}
