//! `estimator INTERVAL TIME_CONSTANT` (`est` for short) on `tc qdisc` and
//! `tc class` add/change/replace, as iproute2 reads it (tc/tc_estimator.c
//! `parse_estimator`, `tc_setup_estimator`): two times in tc's units, the
//! interval rounded up to the kernel's 250ms << n (n 0..5, so at most 8s)
//! and the time constant turned into the EWMA's `ewma_log`, the largest
//! that keeps `INTERVAL / -ln(1 - 2^-ewma_log)` at or below it (1..30).
//! What comes out is the kernel's `struct tc_estimator` (`TCA_RATE`,
//! `crate::qdisc::estimator::EstimatorSpec`); errors read as tc's.

use super::tokens::{incomplete, Tokens};
use super::TcError;
use crate::qdisc::estimator::EstimatorSpec;
use crate::units::parse_time;

/// iproute2's `est_help`.
const HELP: &str = "Usage: ... estimator INTERVAL TIME-CONST\n  INTERVAL is interval between \
                    measurements\n  TIME-CONST is averaging time constant\nExample: ... est 1sec 8sec";

/// `tc_setup_estimator(A, time_const)`, both in µs: `None` where tc says
/// the parameters are out of range (an interval above 8s, or a time
/// constant that gives `ewma_log` 0 or 31).
pub fn setup(interval_us: u64, time_const_us: u64) -> Option<EstimatorSpec> {
    let n = (0..=5u32).find(|n| interval_us <= (1u64 << n) * 250_000)?;
    let a = interval_us as f64;
    // tc computes `1 << ewma_log` in an int: at 31 it turns negative, the
    // quotient with it, and the loop never stops there.
    let stop = (1..31u32).find(|&e| {
        let w = 1.0 - 1.0 / f64::from(1u32 << e);
        a / -w.ln() > time_const_us as f64
    });
    let ewma_log = stop.unwrap_or(32) - 1;
    if ewma_log == 0 || ewma_log >= 31 {
        return None;
    }
    Some(EstimatorSpec {
        interval: n as i8 - 2,
        ewma_log: ewma_log as u8,
    })
}

/// `parse_estimator`: the two words after `estimator`, into `est` (a
/// second `estimator` is tc's duplicate).
pub fn parse(t: &mut Tokens<'_>, est: &mut Option<EstimatorSpec>) -> Result<(), TcError> {
    let interval = t.value(|| incomplete("estimator"))?;
    if est.is_some() {
        return Err(super::command::duparg("estimator", interval));
    }
    let a = time(interval, "invalid estimator interval")?;
    let time_const = t.value(|| incomplete("estimator"))?;
    let tc = time(time_const, "invalid estimator time constant")?;
    *est = Some(setup(a, tc).ok_or_else(|| {
        TcError::new(format!(
            "Error: estimator parameters are out of range.\n(the interval \"{interval}\" may be \
             250ms to 8sec, the time constant \"{time_const}\" from about 1.5 to 2^30 \
             intervals)"
        ))
        .exit(TcError::ARGS)
    })?);
    Ok(())
}

/// `get_time`, failing with tc's `invarg("estimator", what)`, whose
/// arguments iproute2 passes the other way round; `help` prints the usage
/// first.
fn time(word: &str, what: &str) -> Result<u64, TcError> {
    parse_time(word).map_err(|_| {
        let usage = if "help".starts_with(word) && !word.is_empty() {
            format!("{HELP}\n")
        } else {
            String::new()
        };
        TcError::new(format!(
            "{usage}Error: argument \"{what}\" is wrong: estimator\n(\"{word}\": a time \
             such as 250ms, 1sec, 4sec)"
        ))
        .exit(TcError::ARGS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(interval: i8, ewma_log: u8) -> Option<EstimatorSpec> {
        Some(EstimatorSpec { interval, ewma_log })
    }

    #[test]
    fn tc_setup_estimator_picks_the_interval_and_weight() {
        const S: u64 = 1_000_000;
        // 1sec/4sec: A/-ln(1-2^-e) is 1.44, 3.48, 7.49 s for e = 1, 2, 3.
        assert_eq!(setup(S, 4 * S), spec(0, 2));
        assert_eq!(setup(S, 8 * S), spec(0, 3));
        assert_eq!(setup(250_000, S), spec(-2, 2));
        assert_eq!(setup(S / 2, 2 * S), spec(-1, 2));
        assert_eq!(setup(2 * S, 8 * S), spec(1, 2));
        assert_eq!(setup(8 * S, 64 * S), spec(3, 3));
        // Rounded up to the next period.
        assert_eq!(setup(300_000, 2 * S), spec(-1, 2));
    }

    #[test]
    fn out_of_range_is_none() {
        const S: u64 = 1_000_000;
        assert_eq!(setup(8 * S + 1, 64 * S), None);
        // A time constant below 1.44 intervals gives ewma_log 0.
        assert_eq!(setup(S, S), None);
        assert_eq!(setup(0, S), None);
        assert_eq!(setup(S, 0), None);
    }

    fn parsed(words: &[&str]) -> Result<Option<EstimatorSpec>, TcError> {
        let mut t = Tokens::new(words);
        let mut est = None;
        parse(&mut t, &mut est).map(|()| est)
    }

    #[test]
    fn errors_read_as_tc_prints_them() {
        let e = parsed(&["1sec", "1sec"]).unwrap_err();
        assert!(
            e.0.starts_with("Error: estimator parameters are out of range."),
            "{}",
            e.0
        );
        assert_eq!(e.code(), TcError::ARGS);
        let e = parsed(&["fast", "4sec"]).unwrap_err();
        assert!(
            e.0.starts_with("Error: argument \"invalid estimator interval\" is wrong: estimator"),
            "{}",
            e.0
        );
        let e = parsed(&["1sec", "slow"]).unwrap_err();
        assert!(
            e.0.contains("\"invalid estimator time constant\""),
            "{}",
            e.0
        );
        let e = parsed(&["1sec"]).unwrap_err();
        assert!(e.0.starts_with("Command line is not complete"), "{}", e.0);
        let e = parsed(&["help"]).unwrap_err();
        assert!(
            e.0.starts_with("Usage: ... estimator INTERVAL TIME-CONST"),
            "{}",
            e.0
        );
    }

    #[test]
    fn a_second_estimator_is_a_duplicate() {
        let mut t = Tokens::new(&["1sec", "4sec", "2sec"]);
        let mut est = None;
        parse(&mut t, &mut est).unwrap();
        let e = parse(&mut t, &mut est).unwrap_err();
        assert!(
            e.0.starts_with("Error: duplicate \"estimator\": \"2sec\" is the second value."),
            "{}",
            e.0
        );
    }
}
