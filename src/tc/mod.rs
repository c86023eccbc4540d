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

use crate::dir::Dir;
use crate::qdisc::tree::DevSpec;
use crate::qdisc::{tc_h_make, TC_H_ROOT};

/// Checks one tc line on its own (the config's `TcCheck`): it must parse,
/// and a qdisc it creates or changes must accept its options. Whatever
/// depends on earlier lines (parents, classes, handles) is checked when the
/// lines are applied (`QdiscTree::build`).
pub fn check_line(line: &str) -> Result<(), String> {
    let cmd = TcCommand::parse(line).map_err(|e| e.0)?;
    if cmd.object != Object::Qdisc || !matches!(cmd.verb, Verb::Add | Verb::Replace | Verb::Change)
    {
        return Ok(());
    }
    let Some(kind) = cmd.kind.as_deref() else {
        return Ok(());
    };
    // A scratch multi-queue device, so that only the options are judged.
    let dev = DevSpec {
        tx_queues: 2,
        ..DevSpec::new(cmd.dev.unwrap_or(Dir::LeftToRight))
    };
    let ctx = dev.ctx(
        cmd.handle.unwrap_or(tc_h_make(0x8001, 0)),
        cmd.parent.unwrap_or(TC_H_ROOT),
    );
    new_qdisc(kind, ctx, &dev, &cmd.arg_strs())
        .map(drop)
        .map_err(|e| e.0)
}

#[cfg(test)]
mod session_tests;

#[cfg(test)]
mod tests {
    use super::check_line;

    #[test]
    fn check_line_judges_syntax_and_qdisc_options() {
        assert!(check_line("tc qdisc add dev left root fq_codel limit 100").is_ok());
        assert!(check_line("tc qdisc add dev left root handle 1: mq").is_ok());
        assert!(check_line("tc class add dev left parent 1: classid 1:1 qfq weight 3").is_ok());
        let e = check_line("tc qdisc add dev left root fq_codel limit lots").unwrap_err();
        assert!(e.contains("lots"), "{e}");
        assert!(check_line("tc qdisc add dev left parent 1:1 mq")
            .unwrap_err()
            .contains("root"));
        assert!(check_line("tc qdisc add dev eth0 root pfifo")
            .unwrap_err()
            .contains("eth0"));
        assert!(check_line("tc qdisc add dev left root cake")
            .unwrap_err()
            .contains("unknown"));
    }
}
