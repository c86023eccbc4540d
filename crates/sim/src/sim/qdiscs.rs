//! The qdisc side of a simulated direction, through the tc front end: the
//! direction's tc steps (from the scenario's `[link]` section, resolved by
//! `crate::config`) build a `QdiscTree` exactly as the daemon would, and at
//! the end `tc -s -d qdisc show` / `class show` print its statistics.

use super::SimError;
use crate::dir::Dir;
use crate::link::LinkParams;
use crate::qdisc::kinds::KindEntry;
use crate::qdisc::tree::{AutoHandles, DevSpec, QdiscTree};
use crate::qdisc::QdiscDump;
use crate::tc::show::{render, DevDump};
use crate::tc::{Step, TcCommand};

/// The qdisc tree `steps` build on `dir`'s device from the kind table
/// `kinds`; `seed` feeds hash perturbation; `autohandles` is the link's
/// automatic handle counter, shared by both devices. No steps: the device
/// default (pfifo_fast).
pub fn build_qdisc(
    dir: Dir,
    steps: &[Step],
    params: &LinkParams,
    tx_queues: u32,
    seed: u64,
    kinds: &'static [KindEntry],
    autohandles: &AutoHandles,
) -> Result<QdiscTree, SimError> {
    let dev = DevSpec {
        tx_queues: tx_queues.clamp(1, u16::MAX as u32) as u16,
        seed,
        autohandles: autohandles.clone(),
        ..params.dev_spec(dir, kinds)
    };
    crate::tc::build_tree_of(dev, steps).map_err(|e| SimError::Qdisc {
        dir: dir.name().to_string(),
        msg: e.to_string(),
    })
}

/// `tc -s -d qdisc show dev D` followed by `tc -s -d class show dev D`, as
/// iproute2 prints them, from the final dump of `dir`'s tree.
pub fn tc_show(dir: Dir, root: &QdiscDump, tx_queues: u32) -> String {
    let devs = [DevDump {
        dev: dir,
        root,
        tx_queues: tx_queues.clamp(1, u16::MAX as u32) as u16,
    }];
    ["qdisc", "class"]
        .iter()
        .map(|object| {
            let line = format!("tc -s -d {object} show dev {}", dir.dev());
            TcCommand::parse(&line)
                .and_then(|cmd| render(&cmd, &devs))
                .unwrap_or_else(|e| format!("{line}: {e}\n"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::Qdisc;
    use crate::time::Instant;

    fn build(dir: Dir, lines: &[&str]) -> Result<QdiscTree, SimError> {
        let steps: Vec<Step> = lines.iter().map(|s| Step::Line(s.to_string())).collect();
        build_qdisc(
            dir,
            &steps,
            &LinkParams::default(),
            1,
            1,
            crate::qdisc::kinds::BUILTIN,
            &AutoHandles::default(),
        )
    }

    fn build_err(lines: &[&str]) -> String {
        match build(Dir::LeftToRight, lines) {
            Ok(q) => panic!("built {}", q.kind()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn default_is_pfifo_fast() {
        let q = build(Dir::RightToLeft, &[]).unwrap();
        assert_eq!(q.kind(), "pfifo_fast");
        let text = tc_show(Dir::RightToLeft, &q.dump(Instant::ZERO), 1);
        assert!(
            text.starts_with("qdisc pfifo_fast 0: root refcnt 2 bands 3 priomap"),
            "{text}"
        );
        assert!(
            text.contains(" Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)"),
            "{text}"
        );
    }

    #[test]
    fn htb_tree_from_several_lines_prints_classes() {
        let q = build(
            Dir::LeftToRight,
            &[
                "tc qdisc add dev left root handle 1: htb default 10",
                "tc class add dev left parent 1: classid 1:10 htb rate 10mbit",
                "tc qdisc add dev left parent 1:10 fq_codel",
            ],
        )
        .unwrap();
        assert_eq!(q.kind(), "htb");
        let text = tc_show(Dir::LeftToRight, &q.dump(Instant::ZERO), 1);
        assert!(text.contains("qdisc htb 1: root"), "{text}");
        assert!(text.contains("qdisc fq_codel"), "{text}");
        assert!(text.contains("class htb 1:10 root"), "{text}");
    }

    #[test]
    fn errors_name_direction_and_line() {
        let e = build_err(&["tc qdisc add dev left root pfifo limit x"]);
        assert!(e.contains("left_to_right") && e.contains("limit x"), "{e}");
        let e = build_err(&[
            "tc qdisc add dev left root handle 1: htb",
            "tc class add dev left parent 7: classid 7:1 htb rate 1mbit",
        ]);
        assert!(e.contains("parent 7:"), "{e}");
    }
}
