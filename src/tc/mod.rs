//! The tc command front end: what a user types after `tc` (with or without the
//! leading `tc`, global flags `-s -d -j -p`) becomes a `TcCommand`
//! (`command`), the kind named in it becomes a qdisc through the `registry`,
//! `crate::qdisc::tree::QdiscTree::apply` carries the command out with the
//! kernel's rules, and `show` prints `tc [-s] [-d] [-j] qdisc|class show`
//! exactly as iproute2 does (LINUX-TC.md 0.3–0.5, 1.5, 13).
//!
//! The emulated link has two devices: `left` is the egress of the left→right
//! direction, `right` its mirror. Errors read like tc's and name the bad token.

pub mod command;
pub mod registry;
pub mod show;

pub use command::{parse_dev, Flags, Object, TcCommand, Verb};
pub use registry::new_qdisc;

use crate::qdisc::tree::{DevSpec, QdiscTree};

/// Checks one direction's tc lines as they will run (the config's
/// `TcCheck`): applied in order to a fresh tree of device `dev`, each must
/// parse and succeed given the lines before it (options, parents, classes,
/// handles). The error is the failing line's index (none: the device) and
/// tc's message; the warnings tc would print are logged.
pub fn check_lines(dev: DevSpec, lines: &[&str]) -> Result<(), (Option<usize>, String)> {
    QdiscTree::build_reporting(dev, lines, &mut |line, warning| {
        tracing::warn!("{line}: {warning}")
    })
    .map(drop)
    .map_err(|(i, e)| (i, e.0))
}

#[cfg(test)]
mod session_tests;

#[cfg(test)]
mod tests {
    use super::check_lines;
    use crate::dir::Dir;
    use crate::qdisc::tree::DevSpec;

    fn check(lines: &[&str]) -> Result<(), (Option<usize>, String)> {
        check_lines(DevSpec::new(Dir::LeftToRight), lines)
    }

    #[test]
    fn check_lines_judges_each_line_given_those_before_it() {
        assert!(check(&["tc qdisc add dev left root fq_codel limit 100"]).is_ok());
        assert!(check(&[
            "tc qdisc add dev left root handle 1: qfq",
            "tc class add dev left parent 1: classid 1:1 qfq weight 3",
        ])
        .is_ok());
        let (i, e) = check(&["tc qdisc add dev left root fq_codel limit lots"]).unwrap_err();
        assert!(i == Some(0) && e.contains("lots"), "{e}");
        // A class under a qdisc that the lines never made: line 1 fails.
        let (i, e) = check(&[
            "tc qdisc add dev left root handle 1: htb",
            "tc class add dev left parent 2: classid 2:1 htb rate 1mbit",
        ])
        .unwrap_err();
        assert_eq!(i, Some(1), "{e}");
        // mq needs the device's TX queues, which this one does not have.
        assert!(check(&["tc qdisc add dev left root handle 1: mq"]).is_err());
        let (i, e) = check(&["tc qdisc add dev eth0 root pfifo"]).unwrap_err();
        assert!(i == Some(0) && e.contains("eth0"), "{e}");
        assert!(check(&["tc qdisc add dev left root cake"])
            .unwrap_err()
            .1
            .contains("unknown"));
    }
}
