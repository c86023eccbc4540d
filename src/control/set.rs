//! `set` arguments: `left.rate=10mbit`, `right.delay=20ms`, `left.bql=off`,
//! `left.tx_ring=64`, `right.rx-usecs=20`... (device `left` is the
//! left→right direction), or whole `ethtool -C|-G left|right ...` lines.
//! Applied to a copy of both directions' parameters: all or nothing.

use crate::bridge::Dir;
use crate::link::LinkParams;
use crate::tui::LinkField;

const USAGE: &str =
    "expected DEV.FIELD=VALUE with DEV left or right and FIELD one of rate, delay, \
tx_ring, bql, tx_usecs, tx_frames, rx_usecs, rx_frames (e.g. left.rate=10mbit), or an \
ethtool -C/-G line";

fn dir_of(dev: &str) -> Option<Dir> {
    match dev {
        "left" => Some(Dir::LeftToRight),
        "right" => Some(Dir::RightToLeft),
        _ => None,
    }
}

fn field_of(name: &str) -> Option<LinkField> {
    let name = name.replace('_', "-");
    let name = if name == "tx-ring" { "ring" } else { &name };
    LinkField::ALL.into_iter().find(|f| f.name() == name)
}

/// Applies every argument to `params` (indexed by `Dir::index`); on error
/// `params` is unchanged and the message names the argument.
pub fn apply_set(args: &[String], params: &mut [LinkParams; 2]) -> Result<(), String> {
    if args.is_empty() {
        return Err(format!("nothing to set: {USAGE}"));
    }
    let mut next = *params;
    for arg in args {
        if arg.trim_start().starts_with("ethtool") {
            let cmd = crate::config::parse_ethtool(arg).map_err(|e| e.to_string())?;
            let dir = match cmd.direction {
                crate::config::Direction::LeftToRight => Dir::LeftToRight,
                crate::config::Direction::RightToLeft => Dir::RightToLeft,
            };
            cmd.apply(&mut next[dir.index()])
                .map_err(|e| e.to_string())?;
            continue;
        }
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| format!("\"{arg}\": {USAGE}"))?;
        let (dev, name) = key
            .split_once('.')
            .ok_or_else(|| format!("\"{arg}\": {USAGE}"))?;
        let dir = dir_of(dev)
            .ok_or_else(|| format!("\"{arg}\": device \"{dev}\" is unknown; {USAGE}"))?;
        let field = field_of(name)
            .ok_or_else(|| format!("\"{arg}\": field \"{name}\" is unknown; {USAGE}"))?;
        let v = field.parse(value).map_err(|e| format!("\"{arg}\": {e}"))?;
        field
            .apply(&mut next[dir.index()], v)
            .map_err(|e| format!("\"{arg}\": {e}"))?;
    }
    *params = next;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sets_fields_and_ethtool_lines_per_direction() {
        let mut p = [LinkParams::default(); 2];
        apply_set(
            &args(&[
                "left.rate=10mbit",
                "right.delay=20ms",
                "left.tx_ring=64",
                "right.bql=off",
                "ethtool -C left rx-usecs 20",
                "ethtool -G right tx 32",
            ]),
            &mut p,
        )
        .unwrap();
        assert_eq!(p[0].rate_bytes_ps, 1_250_000);
        assert_eq!(p[1].delay_ns, 20_000_000);
        assert_eq!(p[0].tx_ring, 64);
        assert!(!p[1].bql);
        assert_eq!(p[0].rx_usecs, 20);
        assert_eq!(p[1].tx_ring, 32);
        assert_eq!(p[1].rate_bytes_ps, LinkParams::default().rate_bytes_ps);
    }

    #[test]
    fn errors_name_the_argument_and_change_nothing() {
        let mut p = [LinkParams::default(); 2];
        for bad in [
            "left.rate",
            "middle.rate=1mbit",
            "left.colour=red",
            "left.rate=fast",
            "ethtool -C middle rx-usecs 1",
        ] {
            let e = apply_set(&args(&["right.delay=5ms", bad]), &mut p).unwrap_err();
            assert!(
                e.contains("expected") || e.contains("unknown"),
                "{bad}: {e}"
            );
            assert_eq!(p, [LinkParams::default(); 2], "{bad}");
        }
        assert!(apply_set(&[], &mut p).is_err());
    }
}
