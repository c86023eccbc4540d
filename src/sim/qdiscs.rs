//! Builds the qdisc of one simulated direction from the scenario's tc
//! lines (`tc qdisc add dev X root [handle H:] KIND [options]`). No lines
//! means the device default, pfifo_fast.

use super::SimError;
use crate::link::LinkParams;
use crate::qdisc::codel_qdisc::CodelQdisc;
use crate::qdisc::fifo::{Fifo, FifoKind};
use crate::qdisc::fq_codel::FqCodel;
use crate::qdisc::htb::Htb;
use crate::qdisc::pfifo_fast::PfifoFast;
use crate::qdisc::qfq::Qfq;
use crate::qdisc::sfq::Sfq;
use crate::qdisc::tbf::Tbf;
use crate::qdisc::{tc_h_make, Qdisc, QdiscCtx, TcError, TC_H_ROOT};

/// The qdisc described by `lines` for a device with `params`; `seed` feeds
/// hash perturbation. `dir` names the direction in errors.
pub fn build_qdisc(
    dir: &str,
    lines: &[String],
    params: &LinkParams,
    seed: u64,
) -> Result<Box<dyn Qdisc>, SimError> {
    let mut ctx = QdiscCtx {
        handle: 0,
        parent: TC_H_ROOT,
        txqueuelen: params.txqueuelen,
        psched_mtu: params.mtu + 14,
        seed,
    };
    let err = |line: &str, msg: String| SimError::Qdisc {
        dir: dir.to_string(),
        line: line.to_string(),
        msg,
    };
    match lines {
        [] => Ok(Box::new(PfifoFast::new(ctx))),
        [line] => {
            let toks: Vec<&str> = line.split_whitespace().collect();
            let rest = match toks.as_slice() {
                ["tc", "qdisc", "add" | "replace", "dev", _, "root", rest @ ..] => rest,
                _ => {
                    return Err(err(
                        line,
                        "expected \"tc qdisc add dev DEV root [handle H:] KIND [options]\"".into(),
                    ))
                }
            };
            let rest = match rest {
                ["handle", h, rest @ ..] => {
                    let major = h
                        .strip_suffix(':')
                        .and_then(|m| u16::from_str_radix(m, 16).ok())
                        .ok_or_else(|| {
                            err(
                                line,
                                format!("invalid handle \"{h}\": expected hex major, e.g. 1:"),
                            )
                        })?;
                    ctx.handle = tc_h_make(major, 0);
                    rest
                }
                _ => {
                    ctx.handle = tc_h_make(0x8001, 0);
                    rest
                }
            };
            let [kind, args @ ..] = rest else {
                return Err(err(line, "missing qdisc kind".into()));
            };
            let built: Result<Box<dyn Qdisc>, TcError> = match *kind {
                "pfifo_fast" => PfifoFast::from_args(ctx, args).map(|q| Box::new(q) as _),
                "pfifo" => Fifo::from_args(FifoKind::Pfifo, ctx, args).map(|q| Box::new(q) as _),
                "bfifo" => Fifo::from_args(FifoKind::Bfifo, ctx, args).map(|q| Box::new(q) as _),
                "pfifo_head_drop" => {
                    Fifo::from_args(FifoKind::PfifoHeadDrop, ctx, args).map(|q| Box::new(q) as _)
                }
                "fq_codel" => FqCodel::from_args(ctx, args).map(|q| Box::new(q) as _),
                "codel" => CodelQdisc::from_args(ctx, args).map(|q| Box::new(q) as _),
                "sfq" => Sfq::from_args(ctx, args).map(|q| Box::new(q) as _),
                "tbf" => Tbf::from_args(ctx, args).map(|q| Box::new(q) as _),
                "htb" => Htb::from_args(ctx, args).map(|q| Box::new(q) as _),
                "qfq" => Qfq::from_args(ctx, args).map(|q| Box::new(q) as _),
                other => Err(TcError::new(format!(
                    "qdisc \"{other}\" is not available: use pfifo_fast, pfifo, bfifo, pfifo_head_drop, fq_codel, codel, sfq, tbf, htb or qfq"
                ))),
            };
            built.map_err(|e| err(line, e.to_string()))
        }
        [_, second, ..] => Err(err(
            second,
            "only one root qdisc line is supported by this build".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(lines: &[&str]) -> Result<Box<dyn Qdisc>, SimError> {
        let lines: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        build_qdisc("left_to_right", &lines, &LinkParams::default(), 1)
    }

    fn build_err(lines: &[&str]) -> String {
        match build(lines) {
            Ok(q) => panic!("built {}", q.kind()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn default_is_pfifo_fast() {
        assert_eq!(build(&[]).unwrap().kind(), "pfifo_fast");
    }

    #[test]
    fn fifo_with_limit_and_handle() {
        let q = build(&["tc qdisc add dev left root handle 1: pfifo limit 50"]).unwrap();
        assert_eq!(q.kind(), "pfifo");
        let d = q.dump(crate::time::Instant::ZERO);
        assert_eq!(d.handle, tc_h_make(1, 0));
        assert!(d.options.contains("limit 50p"), "{}", d.options);
    }

    #[test]
    fn errors_name_the_line() {
        let e = build_err(&["tc qdisc add dev left root pfifo limit x"]);
        assert!(e.contains("left_to_right") && e.contains("limit x"), "{e}");
        let e = build_err(&["qdisc add"]);
        assert!(e.contains("expected"), "{e}");
        let e = build_err(&["tc qdisc add dev left root handle zz: pfifo"]);
        assert!(e.contains("zz:"), "{e}");
        let e = build_err(&["tc qdisc add dev left root"]);
        assert!(e.contains("missing qdisc kind"), "{e}");
    }
}
