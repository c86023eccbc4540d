//! The netem language of tc-netem(8), the front end's half of the wire
//! impairments (as iproute2's `tc/q_netem.c` `netem_parse_opt` and
//! `netem_print_opt` are to the kernel's `net/sched/sch_netem.c`):
//! `parse_netem` reads the words after `netem`, over the one tokenizer
//! `crate::tc::tokens::Tokens`, into the typed
//! `crate::link::impair::Impairments` the link stage takes, and
//! `format_netem` prints them back as netem options for dumps and reports.
//! The checks of the settings themselves (`Impairments::validate`) stay
//! with the stage.

use crate::link::impair::{Distribution, Impairments, Loss, Reorder, GEMODEL_LABELS, STATE_LABELS};
use crate::link::ShapeError;
use crate::tc::tokens::Tokens;
use crate::units::{parse_time_ns, sprint_time, UnitError};

/// Why netem options were refused: the word at fault and what is expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NetemError {
    /// A percentage that is not a number in 0..=100.
    #[error("invalid {field} \"{value}\": expected a percentage in 0..=100 such as 1% or 0.5")]
    Percent {
        /// What the percentage is (`loss`, `delay correlation`, `gemodel r`).
        field: String,
        /// The word as given.
        value: String,
    },
    /// A keyword that ends the list without its value.
    #[error("netem: \"{0}\" needs a value")]
    NeedsValue(String),
    /// A label (`gemodel r`) that ends the list without its percentage.
    #[error("netem: \"{0}\" needs a percentage")]
    NeedsPercent(String),
    /// A time that does not parse.
    #[error(transparent)]
    Time(#[from] UnitError),
    /// A distribution netem does not have.
    #[error("netem: unknown distribution \"{0}\": expected uniform, normal, pareto or paretonormal (a custom .dist table is set through the config)")]
    Distribution(String),
    /// A reorder gap that is not a frame count.
    #[error("invalid reorder gap \"{0}\": expected a frame count 0..=4294967295")]
    Gap(String),
    /// A seed that is not an unsigned 64-bit integer.
    #[error("invalid seed \"{0}\": expected an integer 0..=18446744073709551615")]
    Seed(String),
    /// A netem option that is not an impairment of the wire here.
    #[error("netem: \"{0}\" is not a wire impairment: set the link rate in the link parameters and the queue limit on the qdisc")]
    NotImpairment(String),
    /// A word that is no netem option.
    #[error("netem: unknown option \"{0}\": expected delay, distribution, loss, duplicate, corrupt, reorder or seed")]
    Unknown(String),
    /// A distribution without a jitter to shape.
    #[error("netem: a distribution needs a jitter: delay TIME JITTER distribution NAME")]
    DistributionWithoutJitter,
    /// `loss gemodel` without its `p`.
    #[error("netem: \"loss gemodel\" needs at least p")]
    GemodelWithoutP,
    /// `loss state` without its `p13`.
    #[error("netem: \"loss state\" needs at least p13")]
    StateWithoutP13,
    /// `loss [random]` without its percentage.
    #[error("netem: \"loss\" needs a percentage: loss [random] PERCENT [CORRELATION]")]
    LossWithoutPercent,
    /// Settings the link stage refuses (`Impairments::validate`).
    #[error(transparent)]
    Shape(#[from] ShapeError),
}

/// Reads a percentage as tc does: `1%`, `1` or `0.5%`.
fn parse_percent(tok: &str, field: &str) -> Result<f64, NetemError> {
    let num = tok.strip_suffix('%').unwrap_or(tok);
    match num.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(NetemError::Percent {
            field: field.to_string(),
            value: tok.to_string(),
        }),
    }
}

/// The error of a keyword `what` that ends the list without its value.
fn needs_value(what: &str) -> impl FnOnce() -> NetemError + '_ {
    move || NetemError::NeedsValue(what.to_string())
}

/// Up to `labels.len()` optional percentages of `what`, each possibly
/// preceded by its label (tc prints `gemodel p 1% r 10% ...`).
fn percents(it: &mut Tokens, what: &str, labels: &[&str]) -> Result<Vec<f64>, NetemError> {
    let mut v = Vec::new();
    for label in labels {
        let name = if label.is_empty() {
            what.to_string()
        } else {
            format!("{what} {label}")
        };
        let labelled = !label.is_empty() && it.peek() == Some(*label);
        if labelled {
            it.next();
        }
        match it.number() {
            Some(t) => v.push(parse_percent(t, &name)?),
            None if labelled => return Err(NetemError::NeedsPercent(name)),
            None => break,
        }
    }
    Ok(v)
}

/// Parses the netem options of tc-netem(8) (the tokens after `netem`):
/// `delay TIME [JITTER [CORRELATION]]`, `distribution
/// uniform|normal|pareto|paretonormal`, `loss [random] PERCENT
/// [CORRELATION]`, `loss gemodel p [r [1-h [1-k]]]`, `loss state p13 [p31
/// [p32 [p23 [p14]]]]`, `duplicate PERCENT [CORRELATION]`, `corrupt PERCENT
/// [CORRELATION]`, `reorder [PERCENT [CORRELATION]] [gap DISTANCE]` and
/// `seed N`. `drop` is an alias of `loss`. Defaults follow tc: gemodel
/// with `p` only is r = 1-p, 1-h = 100%, 1-k = 0; state with `p13` only is
/// p31 = 1-p13, p32 = 0, p23 = 100%, p14 = 0; `reorder` without `gap`
/// has gap 1. Times without a unit are µs as in tc.
pub fn parse_netem(args: &[&str]) -> Result<Impairments, NetemError> {
    let mut imp = Impairments::default();
    let mut distribution_given = false;
    let mut it = Tokens::new(args);
    let time = |t: &str| parse_time_ns(t).map_err(NetemError::from);
    while let Some(tok) = it.next() {
        match tok {
            "delay" | "latency" => {
                imp.delay_ns = time(it.value(needs_value(tok))?)?;
                if let Some(j) = it.number() {
                    imp.jitter_ns = time(j)?;
                    if let Some(c) = it.number() {
                        imp.jitter_correlation = parse_percent(c, "delay correlation")?;
                    }
                }
            }
            "distribution" => {
                imp.distribution = match it.value(needs_value(tok))? {
                    "uniform" => Distribution::Uniform,
                    "normal" => Distribution::Normal,
                    "pareto" => Distribution::Pareto,
                    "paretonormal" => Distribution::ParetoNormal,
                    other => return Err(NetemError::Distribution(other.to_string())),
                };
                distribution_given = true;
            }
            "loss" | "drop" => imp.loss = parse_loss(&mut it)?,
            "duplicate" | "corrupt" => {
                let p = parse_percent(it.value(needs_value(tok))?, tok)?;
                let c = match it.number() {
                    Some(c) => parse_percent(c, &format!("{tok} correlation"))?,
                    None => 0.0,
                };
                if tok == "duplicate" {
                    (imp.duplicate, imp.duplicate_correlation) = (p, c);
                } else {
                    (imp.corrupt, imp.corrupt_correlation) = (p, c);
                }
            }
            "reorder" => {
                let v = percents(&mut it, "reorder", &["", ""])?;
                let mut r = Reorder {
                    percent: v.first().copied().unwrap_or(0.0),
                    correlation: v.get(1).copied().unwrap_or(0.0),
                    gap: 1,
                };
                if it.peek() == Some("gap") {
                    it.next();
                    let g = it.value(needs_value("gap"))?;
                    r.gap = g.parse().map_err(|_| NetemError::Gap(g.to_string()))?;
                }
                imp.reorder = Some(r);
            }
            "seed" => {
                let s = it.value(needs_value(tok))?;
                imp.seed = s.parse().map_err(|_| NetemError::Seed(s.to_string()))?;
            }
            "limit" | "rate" | "slot" | "ecn" => {
                return Err(NetemError::NotImpairment(tok.to_string()))
            }
            other => return Err(NetemError::Unknown(other.to_string())),
        }
    }
    if distribution_given && imp.jitter_ns == 0 {
        return Err(NetemError::DistributionWithoutJitter);
    }
    // A correlation of a zero jitter, duplication or corruption acts on
    // nothing; like tc, which prints none then, it is not kept.
    for (value, correlation) in [
        (imp.jitter_ns as f64, &mut imp.jitter_correlation),
        (imp.duplicate, &mut imp.duplicate_correlation),
        (imp.corrupt, &mut imp.corrupt_correlation),
    ] {
        if value == 0.0 {
            *correlation = 0.0;
        }
    }
    imp.validate()?;
    Ok(imp)
}

fn parse_loss(it: &mut Tokens) -> Result<Loss, NetemError> {
    match it.peek() {
        Some("gemodel") => {
            it.next();
            let v = percents(it, "gemodel", &GEMODEL_LABELS)?;
            let p = *v.first().ok_or(NetemError::GemodelWithoutP)?;
            Ok(Loss::GilbertElliott {
                p,
                r: v.get(1).copied().unwrap_or(100.0 - p),
                one_minus_h: v.get(2).copied().unwrap_or(100.0),
                one_minus_k: v.get(3).copied().unwrap_or(0.0),
            })
        }
        Some("state") => {
            it.next();
            let v = percents(it, "state", &STATE_LABELS)?;
            let p13 = *v.first().ok_or(NetemError::StateWithoutP13)?;
            Ok(Loss::FourState {
                p13,
                p31: v.get(1).copied().unwrap_or(100.0 - p13),
                p32: v.get(2).copied().unwrap_or(0.0),
                p23: v.get(3).copied().unwrap_or(100.0),
                p14: v.get(4).copied().unwrap_or(0.0),
            })
        }
        next => {
            if next == Some("random") {
                it.next();
            }
            let v = percents(it, "loss", &["", ""])?;
            let percent = *v.first().ok_or(NetemError::LossWithoutPercent)?;
            Ok(Loss::Random {
                percent,
                correlation: v.get(1).copied().unwrap_or(0.0),
            })
        }
    }
}

/// Renders the settings as netem options (the reverse of `parse_netem`,
/// for dumps and reports; a user table prints as `distribution table`,
/// which only the config can set).
pub fn format_netem(imp: &Impairments) -> String {
    let mut s = Vec::new();
    if imp.delay_ns > 0 || imp.jitter_ns > 0 {
        s.push(format!("delay {}", exact_time(imp.delay_ns)));
        if imp.jitter_ns > 0 {
            s.push(exact_time(imp.jitter_ns));
            if imp.jitter_correlation > 0.0 {
                s.push(format!("{}%", imp.jitter_correlation));
            }
            let name = match imp.distribution {
                Distribution::Uniform => None,
                Distribution::Normal => Some("normal"),
                Distribution::Pareto => Some("pareto"),
                Distribution::ParetoNormal => Some("paretonormal"),
                Distribution::Table(_) => Some("table"),
            };
            if let Some(name) = name {
                s.push(format!("distribution {name}"));
            }
        }
    }
    let with_correlation = |s: &mut Vec<String>, what: &str, p: f64, c: f64| {
        s.push(format!("{what} {p}%"));
        if c > 0.0 {
            s.push(format!("{c}%"));
        }
    };
    let model = match imp.loss {
        Loss::None => None,
        Loss::Random {
            percent,
            correlation,
        } => {
            with_correlation(&mut s, "loss", percent, correlation);
            None
        }
        Loss::GilbertElliott { .. } => Some("gemodel"),
        Loss::FourState { .. } => Some("state"),
    };
    if let Some(model) = model {
        s.push(format!("loss {model}"));
        s.extend(
            imp.loss
                .percents()
                .into_iter()
                .map(|(label, v)| format!("{label} {v}%")),
        );
    }
    if imp.duplicate > 0.0 {
        with_correlation(
            &mut s,
            "duplicate",
            imp.duplicate,
            imp.duplicate_correlation,
        );
    }
    if imp.corrupt > 0.0 {
        with_correlation(&mut s, "corrupt", imp.corrupt, imp.corrupt_correlation);
    }
    if let Some(r) = &imp.reorder {
        with_correlation(&mut s, "reorder", r.percent, r.correlation);
        s.push(format!("gap {}", r.gap));
    }
    s.push(format!("seed {}", imp.seed));
    s.join(" ")
}

/// A time as tc prints it (`sprint_time`: 3 significant digits) when that
/// reads back as the same time, else exactly in µs or ns: tc's 5.01ms for
/// 5009us would make the report's delay, parsed again, 1 µs longer.
fn exact_time(ns: u64) -> String {
    if !ns.is_multiple_of(1000) {
        return format!("{ns}ns");
    }
    let shown = sprint_time(ns / 1000);
    if parse_time_ns(&shown) == Ok(ns) {
        shown
    } else {
        format!("{}us", ns / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `netem` fuzz target: `delay 5009` (µs) printed as
    /// `delay 5.01ms`, which parses as 5010 µs; sub-µs times lost their ns.
    #[test]
    fn times_print_exactly_and_parse_back_equal() {
        for args in [
            "delay 5009",
            "delay 1500ns 1ms",
            "delay 1s 1000001us",
            "delay 10ms 2ms",
        ] {
            let imp = with(args);
            let printed = format_netem(&imp);
            assert_eq!(with(&printed), imp, "{args} printed as {printed}");
        }
        assert_eq!(
            format_netem(&with("delay 10ms 2ms")),
            "delay 10ms 2ms seed 0"
        );
        assert_eq!(format_netem(&with("delay 5009")), "delay 5009us seed 0");
    }

    fn with(args: &str) -> Impairments {
        parse_netem(&args.split_whitespace().collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn parses_the_tc_netem_grammar() {
        let imp = with(
            "delay 10ms 2ms 25% distribution normal loss 1% 25% duplicate 1% corrupt 0.1% reorder 5% 50% gap 3 seed 42",
        );
        assert_eq!(imp.delay_ns, 10_000_000);
        assert_eq!(imp.jitter_ns, 2_000_000);
        assert_eq!(imp.jitter_correlation, 25.0);
        assert_eq!(imp.distribution, Distribution::Normal);
        assert_eq!(
            imp.loss,
            Loss::Random {
                percent: 1.0,
                correlation: 25.0
            }
        );
        assert_eq!((imp.duplicate, imp.corrupt), (1.0, 0.1));
        assert_eq!(
            imp.reorder,
            Some(Reorder {
                percent: 5.0,
                correlation: 50.0,
                gap: 3
            })
        );
        assert_eq!(imp.seed, 42);
        // The rendering parses back to the same settings.
        let again = with(&format_netem(&imp));
        assert_eq!(again.loss, imp.loss);
        assert_eq!(
            (again.delay_ns, again.jitter_ns),
            (imp.delay_ns, imp.jitter_ns)
        );
        for args in [
            "loss gemodel 1% 10% 70% 0.1% seed 3",
            "loss state 1% 30% 20% 5% 0.5% duplicate 2% 10% corrupt 1% 5%",
            "delay 1ms 300us 20% distribution pareto reorder 5% 50% gap 2",
            "loss 1% 25% delay 2s",
        ] {
            let imp = with(args);
            assert_eq!(with(&format_netem(&imp)), imp, "{}", format_netem(&imp));
        }
        assert_eq!(
            with("loss gemodel p 5% r 50%").loss,
            with("loss gemodel 5% 50%").loss
        );

        assert_eq!(
            with("loss gemodel 1% 10% 70% 0.1%").loss,
            Loss::GilbertElliott {
                p: 1.0,
                r: 10.0,
                one_minus_h: 70.0,
                one_minus_k: 0.1
            }
        );
        assert_eq!(
            with("loss gemodel 2%").loss,
            Loss::GilbertElliott {
                p: 2.0,
                r: 98.0,
                one_minus_h: 100.0,
                one_minus_k: 0.0
            }
        );
        assert_eq!(
            with("loss state 1% 30% 20% 5% 0.5%").loss,
            Loss::FourState {
                p13: 1.0,
                p31: 30.0,
                p32: 20.0,
                p23: 5.0,
                p14: 0.5
            }
        );
        assert_eq!(
            with("drop state 4").loss,
            Loss::FourState {
                p13: 4.0,
                p31: 96.0,
                p32: 0.0,
                p23: 100.0,
                p14: 0.0
            }
        );
        assert_eq!(
            with("loss random 3").loss,
            Loss::Random {
                percent: 3.0,
                correlation: 0.0
            }
        );
        // Bare times are µs as in tc; a bare reorder allows overtaking.
        let imp = with("delay 100 reorder");
        assert_eq!(imp.delay_ns, 100_000);
        assert_eq!(imp.reorder.map(|r| (r.percent, r.gap)), Some((0.0, 1)));
        assert!(with("").is_none());
    }

    #[test]
    fn netem_errors_name_the_token_and_the_fix() {
        let err = |s: &str| {
            parse_netem(&s.split_whitespace().collect::<Vec<_>>())
                .unwrap_err()
                .to_string()
        };
        assert!(err("loss 101%").contains("\"101%\""));
        assert!(err("loss 101%").contains("0..=100"));
        assert!(err("loss").contains("needs a percentage"));
        assert!(err("delay").contains("needs a value"));
        assert!(err("delay 10furlongs").contains("10furlongs"));
        assert!(err("delay 10ms distribution normal").contains("needs a jitter"));
        assert!(err("delay 10ms 1ms distribution weibull").contains("weibull"));
        assert!(err("reorder 10%").contains("fix: add e.g. delay 10ms"));
        // No longer than the link's own delay may be.
        assert!(err("delay 61s").contains("at most 60s"));
        assert!(err("delay 10ms 61s").contains("at most 60s"));
        assert!(err("rate 10mbit").contains("link parameters"));
        assert!(err("jitter 5ms").contains("unknown option \"jitter\""));
        assert!(err("loss state 60% 50% 60%").contains("p31+p32"));
        assert!(err("loss gemodel").contains("at least p"));
        assert!(err("loss gemodel p 1% r").contains("\"gemodel r\" needs"));
        assert!(err("reorder gap x").contains("\"x\""));
        assert!(err("seed -1").contains("\"-1\""));
    }
}
