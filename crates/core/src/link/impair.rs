//! Wire impairments in the manner of netem: loss (random with netem's
//! correlation, Gilbert–Elliott, the 4-state model), duplication,
//! corruption, delay variation (jitter) with a distribution table, and
//! reordering. `Impairments` holds the settings (serde, part of
//! `LinkShape`; the front end's `crate::tc::netem` reads and prints them
//! as tc-netem(8) options), and `Impair` is the pure stage applying them
//! with a seeded `SmallRng`.
//!
//! Where: `Path` hands every frame that leaves the serializer (after its
//! TX completion is recorded, so the sender's ring and BQL see a normal
//! transmission) to `Impair::transmit`; lost frames become `WireLoss`
//! drops, the others enter the propagation delay line with the extra
//! latency drawn here (netem delay + jitter) on top of the link's delay.
//! Each copy of a duplicated frame draws its own loss, corruption and
//! delay, like netem's clone that goes through netem again.
//!
//! The random draws happen in a fixed order (duplication, then per copy:
//! loss, corruption, reordering, jitter), each only when its feature is
//! configured, so the same settings and seed give the same sequence.

use super::ShapeError;
use crate::packet::Packet;
pub use crate::qdisc::netem::model::DIST_SCALE;
use crate::qdisc::netem::model::{
    self, threshold, Correlated, DistError, FourStateChain, GilbertElliottChain, LossTest,
    NamedDist,
};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
/// Bytes of the Ethernet header, never corrupted.
const ETH_HLEN: usize = 14;

/// The shape of the delay variation around `delay`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Uniform over `[delay - jitter, delay + jitter)` (netem's default).
    #[default]
    Uniform,
    /// Normal with standard deviation `jitter`.
    Normal,
    /// Pareto (shape 3), centred and scaled to standard deviation `jitter`.
    Pareto,
    /// The quantile blend 1/4 normal + 3/4 pareto, centred and scaled to
    /// standard deviation `jitter`.
    ParetoNormal,
    /// A user table in netem's `.dist` format: values drawn uniformly from
    /// the table, 8192 = one `jitter`.
    Table(Vec<i16>),
}

/// How frames are lost on the wire. Probabilities are in percent.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "model")]
pub enum Loss {
    /// No loss (netem without `loss`).
    #[default]
    None,
    /// Each frame is lost with `percent`; `correlation` mixes in the
    /// previous random value as netem does (which clusters losses and, as
    /// in netem, lowers the loss rate below `percent`).
    Random {
        /// Probability that a frame is lost, percent (`struct tc_netem_qopt`
        /// `loss`, include/uapi/linux/pkt_sched.h).
        percent: f64,
        /// Correlation with the previous draw, percent (`struct
        /// tc_netem_corr` `loss_corr`).
        correlation: f64,
    },
    /// Gilbert–Elliott: `p` good→bad, `r` bad→good, `one_minus_h` loss in
    /// the bad state, `one_minus_k` loss in the good state. A frame's fate
    /// is decided by the state it finds; the chain then moves.
    GilbertElliott {
        /// Gilbert–Elliott's `p`: probability of moving from the good to the
        /// bad state, percent (`struct tc_netem_gemodel` `p`,
        /// include/uapi/linux/pkt_sched.h).
        p: f64,
        /// Gilbert–Elliott's `r`: probability of moving from the bad to the
        /// good state, percent (`tc_netem_gemodel` `r`).
        r: f64,
        /// Gilbert–Elliott's `1-h`: loss probability in the bad state, percent
        /// (`tc_netem_gemodel` `h`).
        one_minus_h: f64,
        /// Gilbert–Elliott's `1-k`: loss probability in the good state, percent
        /// (`tc_netem_gemodel` `k1`).
        one_minus_k: f64,
    },
    /// netem's 4-state model: 1 = received in a gap, 2 = received in a
    /// burst, 3 = lost in a burst, 4 = isolated loss. `pij` is the
    /// transition probability from i to j; a frame is lost when the chain
    /// enters state 3 or 4; 4 always goes back to 1.
    FourState {
        /// Transition probability from state 1 (gap) to 3 (burst loss), percent
        /// (`struct tc_netem_gimodel` `p13`).
        p13: f64,
        /// Transition probability from state 3 (burst loss) to 1 (gap), percent
        /// (`tc_netem_gimodel` `p31`).
        p31: f64,
        /// Transition probability from state 3 (burst loss) to 2 (burst
        /// reception), percent (`tc_netem_gimodel` `p32`).
        p32: f64,
        /// Transition probability from state 2 (burst reception) to 3 (burst
        /// loss), percent (`tc_netem_gimodel` `p23`).
        p23: f64,
        /// Transition probability from state 1 (gap) to 4 (isolated loss),
        /// percent (`tc_netem_gimodel` `p14`).
        p14: f64,
    },
}

/// tc's labels of the Gilbert–Elliott percentages, in tc's order.
pub const GEMODEL_LABELS: [&str; 4] = ["p", "r", "1-h", "1-k"];
/// tc's labels of the 4-state percentages, in tc's order.
pub const STATE_LABELS: [&str; 5] = ["p13", "p31", "p32", "p23", "p14"];

impl Loss {
    /// The model's percentages in tc's order, each with its label: tc's
    /// for `gemodel` and `state`, the field names for the random model.
    pub fn percents(&self) -> Vec<(&'static str, f64)> {
        match *self {
            Loss::None => Vec::new(),
            Loss::Random {
                percent,
                correlation,
            } => vec![("percent", percent), ("correlation", correlation)],
            Loss::GilbertElliott {
                p,
                r,
                one_minus_h,
                one_minus_k,
            } => GEMODEL_LABELS
                .into_iter()
                .zip([p, r, one_minus_h, one_minus_k])
                .collect(),
            Loss::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => STATE_LABELS
                .into_iter()
                .zip([p13, p31, p32, p23, p14])
                .collect(),
        }
    }

    /// The simple Gilbert model with a mean loss rate (percent) and a mean
    /// burst length (frames, >= 1): `r = 1/burst`, `p = loss·r/(1 - loss)`,
    /// every frame lost in the bad state and none in the good one.
    pub fn gilbert_elliott_bursty(loss_percent: f64, mean_burst: f64) -> Result<Loss, ShapeError> {
        if !(mean_burst >= 1.0 && mean_burst.is_finite()) {
            return Err(ShapeError::new(
                "loss.mean_burst",
                mean_burst,
                "a mean burst length of at least 1 frame",
            ));
        }
        let loss = loss_percent / 100.0;
        let r = 1.0 / mean_burst;
        let max_loss = 1.0 / (1.0 + r);
        if !(0.0..=max_loss).contains(&loss) {
            return Err(ShapeError::new(
                "loss.percent",
                loss_percent,
                format!(
                    "0..={:.4}% for a mean burst of {mean_burst} frames (p = loss·r/(1-loss) must stay <= 100%)",
                    max_loss * 100.0
                ),
            ));
        }
        Ok(Loss::GilbertElliott {
            p: 100.0 * loss * r / (1.0 - loss),
            r: 100.0 * r,
            one_minus_h: 100.0,
            one_minus_k: 0.0,
        })
    }
}

/// netem's `reorder PERCENT [CORRELATION] [gap DISTANCE]`. Whenever it is
/// set, frames may overtake each other (jitter reorders). With a non-zero
/// `percent`, after `gap - 1` frames delayed normally a frame is sent with
/// probability `percent` without the netem delay and jitter.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Reorder {
    /// Probability that a frame is sent without the netem delay, percent
    /// (`struct tc_netem_reorder` `probability`); 0 reorders through jitter
    /// alone.
    pub percent: f64,
    /// Correlation of successive reorder draws, percent (`tc_netem_reorder`
    /// `correlation`).
    pub correlation: f64,
    /// A frame may skip the delay only after `gap - 1` frames delayed normally
    /// (netem's `gap`, `struct tc_netem_qopt` `gap`): 1 makes every frame a
    /// candidate, 0 none.
    pub gap: u32,
}

/// All wire impairments of one direction. The default impairs nothing.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Impairments {
    /// Seed of the random generator (reported in the path's snapshot).
    pub seed: u64,
    /// Extra latency on top of the link's propagation delay, ns.
    pub delay_ns: u64,
    /// Delay variation (sigma of the distribution), ns.
    pub jitter_ns: u64,
    /// netem delay correlation, percent.
    pub jitter_correlation: f64,
    /// The shape of the delay variation.
    pub distribution: Distribution,
    /// How frames are lost on the wire.
    pub loss: Loss,
    /// Frames duplicated, percent, and the correlation of the draws.
    pub duplicate: f64,
    /// Correlation of successive duplication draws, percent.
    pub duplicate_correlation: f64,
    /// Frames with one payload bit flipped, percent, and the correlation.
    pub corrupt: f64,
    /// Correlation of successive corruption draws, percent.
    pub corrupt_correlation: f64,
    /// None: frames never overtake each other, whatever the jitter.
    pub reorder: Option<Reorder>,
}

fn check_percent(field: &str, v: f64) -> Result<(), ShapeError> {
    if (0.0..=100.0).contains(&v) {
        Ok(())
    } else {
        Err(ShapeError::new(field, v, "a percentage in 0..=100"))
    }
}

impl Impairments {
    /// True when the settings change nothing.
    pub fn is_none(&self) -> bool {
        self.delay_ns == 0
            && self.jitter_ns == 0
            && self.loss == Loss::None
            && self.duplicate == 0.0
            && self.corrupt == 0.0
            && self.reorder.is_none()
    }

    /// Checks every field; the error names the field, the value and the
    /// allowed range.
    pub fn validate(&self) -> Result<(), ShapeError> {
        check_percent("jitter_correlation", self.jitter_correlation)?;
        check_percent("duplicate", self.duplicate)?;
        check_percent("duplicate_correlation", self.duplicate_correlation)?;
        check_percent("corrupt", self.corrupt)?;
        check_percent("corrupt_correlation", self.corrupt_correlation)?;
        for (field, v) in [("delay", self.delay_ns), ("jitter", self.jitter_ns)] {
            if v > super::MAX_DELAY_NS {
                return Err(ShapeError::new(
                    field,
                    format!("{v} ns"),
                    "at most 60s".to_string(),
                ));
            }
        }
        if let Distribution::Table(t) = &self.distribution {
            if t.is_empty() {
                return Err(ShapeError::new(
                    "distribution",
                    "an empty table",
                    "a table of at least one value (netem .dist format)",
                ));
            }
        }
        for (label, v) in self.loss.percents() {
            check_percent(&format!("loss.{label}"), v)?;
        }
        if let Loss::FourState {
            p13, p31, p32, p14, ..
        } = &self.loss
        {
            if p13 + p14 > 100.0 {
                return Err(ShapeError::new(
                    "loss.p13+p14",
                    p13 + p14,
                    "at most 100% (both leave state 1)",
                ));
            }
            if p31 + p32 > 100.0 {
                return Err(ShapeError::new(
                    "loss.p31+p32",
                    p31 + p32,
                    "at most 100% (both leave state 3)",
                ));
            }
        }
        if let Some(r) = &self.reorder {
            check_percent("reorder.percent", r.percent)?;
            check_percent("reorder.correlation", r.correlation)?;
            if r.percent > 0.0 && self.delay_ns == 0 {
                return Err(ShapeError::new(
                    "reorder",
                    format!("{}% without a delay", r.percent),
                    "a netem delay for reordered frames to jump over; fix: add e.g. delay 10ms",
                ));
            }
        }
        Ok(())
    }
}

/// Parses the content of a netem `.dist` file: whitespace-separated signed
/// integers (8192 = one sigma), `#` comments. The error names the line
/// (`model::parse_dist_table`).
pub fn parse_dist_table(text: &str) -> Result<Vec<i16>, ShapeError> {
    model::parse_dist_table(text).map_err(|e| match e {
        DistError::Value { line, token } => ShapeError::new(
            &format!("distribution table line {line}"),
            token,
            "an integer in -32768..=32767",
        ),
        DistError::Empty | DistError::TooMuch => {
            ShapeError::new("distribution table", "no values", "at least one value")
        }
    })
}

/// The table of the stage's distribution (`model::build_table` for the
/// named ones); `None` for uniform.
fn build_table(dist: &Distribution) -> Option<Vec<i16>> {
    let named = match dist {
        Distribution::Uniform => return None,
        Distribution::Table(t) => return Some(t.clone()),
        Distribution::Normal => NamedDist::Normal,
        Distribution::Pareto => NamedDist::Pareto,
        Distribution::ParetoNormal => NamedDist::ParetoNormal,
    };
    Some(model::build_table(named))
}

/// What happened to a frame on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// The frame is lost on the wire (counted as a `WireLoss` drop).
    Lost,
    /// Goes on with this much extra latency (ns).
    Delayed(u64),
}

/// Counts of what `Impair::transmit` did besides loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Extra copies of the frame sent (netem `duplicate`).
    pub duplicated: u32,
    /// Frames that had a payload bit flipped (netem `corrupt`).
    pub corrupted: u32,
}

/// The impairment stage: pure, seeded, one per direction.
#[derive(Debug)]
pub struct Impair {
    params: Impairments,
    rng: SmallRng,
    loss_rnd: Correlated,
    dup_rnd: Correlated,
    corrupt_rnd: Correlated,
    jitter_rnd: Correlated,
    reorder_rnd: Correlated,
    /// Gilbert–Elliott: 1 good, 2 bad; 4-state: 1..=4.
    loss_state: u8,
    table: Option<Vec<i16>>,
    /// Frames delayed normally since the last reordered one.
    reorder_count: u32,
}

impl Impair {
    /// A stage for validated settings; the generator starts from the seed.
    pub fn new(params: Impairments) -> Impair {
        let table = if params.jitter_ns > 0 {
            build_table(&params.distribution)
        } else {
            None
        };
        let corr = |c: f64| Correlated::new(threshold(c), 0);
        Impair {
            rng: SmallRng::seed_from_u64(params.seed),
            loss_rnd: match &params.loss {
                Loss::Random { correlation, .. } => corr(*correlation),
                _ => Correlated::default(),
            },
            dup_rnd: corr(params.duplicate_correlation),
            corrupt_rnd: corr(params.corrupt_correlation),
            jitter_rnd: corr(params.jitter_correlation),
            reorder_rnd: corr(params.reorder.as_ref().map_or(0.0, |r| r.correlation)),
            loss_state: 1,
            table,
            reorder_count: 0,
            params,
        }
    }

    /// True when the stage changes nothing: every frame goes on with no
    /// extra delay (`transmit` would give it `Fate::Delayed(0)`).
    pub fn is_inactive(&self) -> bool {
        self.params.is_none()
    }

    /// The settings the stage applies.
    pub fn params(&self) -> &Impairments {
        &self.params
    }

    /// Whether frames may overtake each other in the delay line.
    pub fn reorders(&self) -> bool {
        self.params.reorder.is_some()
    }

    /// One frame leaves the serializer: appends it (and its duplicate) to
    /// `out` with its fate.
    pub fn transmit(&mut self, pkt: Packet, out: &mut Vec<(Packet, Fate)>) -> Effects {
        let mut effects = Effects::default();
        if self.is_inactive() {
            out.push((pkt, Fate::Delayed(0)));
            return effects;
        }
        let dup = self
            .dup_rnd
            .happens(threshold(self.params.duplicate), || self.rng.next_u32());
        let copy = dup.then(|| Packet {
            data: pkt.data.clone(),
            len: pkt.len,
            meta: pkt.meta,
        });
        effects.duplicated = dup as u32;
        for mut p in std::iter::once(pkt).chain(copy) {
            if self.lose() {
                out.push((p, Fate::Lost));
                continue;
            }
            if self
                .corrupt_rnd
                .happens(threshold(self.params.corrupt), || self.rng.next_u32())
                && self.flip_bit(&mut p)
            {
                effects.corrupted += 1;
            }
            let fate = Fate::Delayed(self.latency());
            out.push((p, fate));
        }
        effects
    }

    /// Flips one random bit beyond the Ethernet header; false when the
    /// frame carries no such byte.
    fn flip_bit(&mut self, p: &mut Packet) -> bool {
        let payload = p.data.len().saturating_sub(ETH_HLEN);
        if payload == 0 {
            return false;
        }
        let r = self.rng.next_u64();
        let byte = ETH_HLEN + (r % payload as u64) as usize;
        p.data[byte] ^= 1 << ((r >> 32) % 8);
        true
    }

    /// The loss decision of the configured model (the chains of
    /// `model`, on the stage's thresholds).
    fn lose(&mut self) -> bool {
        let rng = &mut self.rng;
        match self.params.loss {
            Loss::None => false,
            Loss::Random { percent, .. } => {
                self.loss_rnd.happens(threshold(percent), || rng.next_u32())
            }
            Loss::GilbertElliott {
                p,
                r,
                one_minus_h,
                one_minus_k,
            } => GilbertElliottChain {
                p: threshold(p),
                r: threshold(r),
                good_loss: LossTest::Below(threshold(one_minus_k)),
                bad_loss: LossTest::Below(threshold(one_minus_h)),
            }
            .step(&mut self.loss_state, || rng.next_u32()),
            Loss::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => FourStateChain {
                p14: threshold(p14),
                p13_p14: threshold(p14 + p13),
                p23: threshold(p23),
                p32: threshold(p32),
                p31_p32: threshold(p32 + p31),
            }
            .step(&mut self.loss_state, rng.next_u32()),
        }
    }

    /// netem delay plus jitter for a delivered frame (0 for a reordered
    /// one), never negative.
    fn latency(&mut self) -> u64 {
        if let Some(r) = &self.params.reorder {
            if r.gap > 0
                && self.reorder_count + 1 >= r.gap
                && self
                    .reorder_rnd
                    .happens(threshold(r.percent), || self.rng.next_u32())
            {
                self.reorder_count = 0;
                return 0;
            }
            self.reorder_count = self.reorder_count.saturating_add(1);
        }
        let (mu, sigma) = (self.params.delay_ns as i128, self.params.jitter_ns as i128);
        if sigma == 0 {
            return mu as u64;
        }
        let rnd = self.jitter_rnd.next(|| self.rng.next_u32()) as i128;
        let v = match &self.table {
            None => mu - sigma + ((rnd * 2 * sigma) >> 32),
            Some(t) => {
                let e = t[((rnd * t.len() as i128) >> 32) as usize] as i128;
                let x = sigma * e;
                let half = DIST_SCALE as i128 / 2;
                mu + (if x >= 0 { x + half } else { x - half }) / DIST_SCALE as i128
            }
        };
        v.clamp(0, u64::MAX as i128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::netem::model::{mean_std, TABLE_SIZE};
    use crate::qdisc::testutil::pkt;

    /// Sends `n` frames through a stage; None = lost, Some(extra latency).
    fn run(imp: &Impairments, n: usize) -> Vec<Option<u64>> {
        let mut stage = Impair::new(imp.clone());
        let mut out = Vec::new();
        let mut fates = Vec::with_capacity(n);
        for i in 0..n {
            stage.transmit(pkt(i as u64, 100), &mut out);
            fates.extend(out.drain(..).map(|(_, f)| match f {
                Fate::Lost => None,
                Fate::Delayed(d) => Some(d),
            }));
        }
        fates
    }

    /// Loss rate and mean length of runs of consecutive losses.
    fn loss_stats(fates: &[Option<u64>]) -> (f64, f64) {
        let lost = fates.iter().filter(|f| f.is_none()).count();
        let bursts = fates
            .windows(2)
            .filter(|w| w[0].is_some() && w[1].is_none())
            .count()
            + fates.first().is_some_and(|f| f.is_none()) as usize;
        (
            lost as f64 / fates.len() as f64,
            lost as f64 / bursts.max(1) as f64,
        )
    }

    /// Random loss of `percent` with netem's `correlation`.
    fn random_loss(percent: f64, correlation: f64, seed: u64) -> Impairments {
        Impairments {
            seed,
            loss: Loss::Random {
                percent,
                correlation,
            },
            ..Impairments::default()
        }
    }

    #[test]
    fn validation_names_field_value_and_range() {
        let imp = Impairments {
            duplicate: 150.0,
            ..Impairments::default()
        };
        let e = imp.validate().unwrap_err();
        assert_eq!((e.field.as_str(), e.value.as_str()), ("duplicate", "150"));
        assert!(e.to_string().contains("0..=100"));
        let imp = Impairments {
            distribution: Distribution::Table(vec![]),
            jitter_ns: 1,
            ..Impairments::default()
        };
        assert_eq!(imp.validate().unwrap_err().field, "distribution");
        let e = Loss::gilbert_elliott_bursty(5.0, 0.5).unwrap_err();
        assert_eq!(e.field, "loss.mean_burst");
        let e = Loss::gilbert_elliott_bursty(60.0, 1.0).unwrap_err();
        assert_eq!(e.field, "loss.percent");
        assert!(e.allowed.contains("50.0000%"), "{}", e.allowed);
    }

    #[test]
    fn same_seed_same_sequence_different_seed_differs() {
        // delay 5ms 1ms distribution paretonormal loss 10% duplicate 5% seed 7
        let mut imp = Impairments {
            delay_ns: 5_000_000,
            jitter_ns: 1_000_000,
            distribution: Distribution::ParetoNormal,
            duplicate: 5.0,
            ..random_loss(10.0, 0.0, 7)
        };
        let a = run(&imp, 5_000);
        let b = run(&imp, 5_000);
        assert_eq!(a, b);
        imp.seed = 8;
        let c = run(&imp, 5_000);
        assert_ne!(a, c);
        let lost = |v: &[Option<u64>]| v.iter().filter(|f| f.is_none()).count();
        assert!(lost(&a) > 400 && lost(&c) > 400);
    }

    #[test]
    fn random_loss_rate() {
        let fates = run(&random_loss(2.0, 0.0, 3), 100_000);
        let (loss, burst) = loss_stats(&fates);
        assert!((loss - 0.02).abs() < 0.002, "loss {loss}");
        assert!((burst - 1.0 / 0.98).abs() < 0.05, "burst {burst}");
        assert_eq!(
            run(&random_loss(0.0, 0.0, 0), 1000)
                .iter()
                .flatten()
                .count(),
            1000
        );
        assert_eq!(
            run(&random_loss(100.0, 0.0, 0), 1000)
                .iter()
                .flatten()
                .count(),
            0
        );
    }

    /// netem's correlation mixes the previous value in: losses cluster
    /// (longer runs than independent draws at the same measured rate), and,
    /// as in netem, the mixed values gather around the middle, so the loss
    /// rate falls below the configured one.
    #[test]
    fn correlated_loss_clusters() {
        let (loss, burst) = loss_stats(&run(&random_loss(10.0, 25.0, 5), 100_000));
        assert!(loss > 0.01 && loss < 0.1, "{loss}");
        // P(loss | previous frame lost) well above the loss rate.
        let again = 1.0 - 1.0 / burst;
        assert!(again > 3.0 * loss, "burst {burst} at loss {loss}");
    }

    #[test]
    fn gilbert_elliott_by_mean_loss_and_burst() {
        for (loss_pct, burst_len, seed) in [(5.0, 4.0, 1), (1.0, 2.0, 2), (20.0, 10.0, 3)] {
            let imp = Impairments {
                seed,
                loss: Loss::gilbert_elliott_bursty(loss_pct, burst_len).unwrap(),
                ..Impairments::default()
            };
            let (loss, burst) = loss_stats(&run(&imp, 100_000));
            let target = loss_pct / 100.0;
            assert!(
                (loss - target).abs() / target < 0.06,
                "loss {loss} vs {target}"
            );
            assert!(
                (burst - burst_len).abs() / burst_len < 0.06,
                "burst {burst} vs {burst_len}"
            );
        }
    }

    /// The netem p/r/1-h/1-k form: stationary loss is
    /// pi_good·(1-k) + pi_bad·(1-h) with pi_bad = p/(p+r).
    #[test]
    fn gilbert_elliott_netem_form_stationary_loss() {
        let (p, r, h1, k1) = (0.02, 0.25, 0.6, 0.01);
        let imp = Impairments {
            seed: 11,
            loss: Loss::GilbertElliott {
                p: 2.0,
                r: 25.0,
                one_minus_h: 60.0,
                one_minus_k: 1.0,
            },
            ..Impairments::default()
        };
        let fates = run(&imp, 300_000);
        let (loss, _) = loss_stats(&fates);
        let bad = p / (p + r);
        let expected = (1.0 - bad) * k1 + bad * h1;
        assert!(
            (loss - expected).abs() / expected < 0.05,
            "loss {loss} vs {expected}"
        );
    }

    /// The stationary distribution of the 4-state chain (power iteration
    /// of its transition matrix) gives the loss rate pi3 + pi4.
    #[test]
    fn four_state_stationary_loss() {
        let (p13, p31, p32, p23, p14) = (0.02, 0.3, 0.2, 0.1, 0.01);
        let m = [
            [1.0 - p13 - p14, 0.0, p13, p14],
            [0.0, 1.0 - p23, p23, 0.0],
            [p31, p32, 1.0 - p31 - p32, 0.0],
            [1.0, 0.0, 0.0, 0.0],
        ];
        let mut pi = [0.25; 4];
        for _ in 0..10_000 {
            let mut next = [0.0; 4];
            for (i, row) in m.iter().enumerate() {
                for (j, pij) in row.iter().enumerate() {
                    next[j] += pi[i] * pij;
                }
            }
            pi = next;
        }
        let expected = pi[2] + pi[3];
        let four_state = |p13, p31, p32, p23, p14| Impairments {
            seed: 4,
            loss: Loss::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            },
            ..Impairments::default()
        };
        let (loss, burst) = loss_stats(&run(&four_state(2.0, 30.0, 20.0, 10.0, 1.0), 100_000));
        assert!(
            (loss - expected).abs() / expected < 0.06,
            "loss {loss} vs {expected}"
        );
        assert!(burst > 1.2, "bursty: {burst}");
        // Only isolated losses: p13 = 0, every loss is state 4, alone.
        let (loss, burst) = loss_stats(&run(&four_state(0.0, 0.0, 0.0, 0.0, 3.0), 100_000));
        assert!((loss - 0.03 / 1.03).abs() < 0.003, "{loss}");
        assert_eq!(burst, 1.0);
    }

    fn mean_std_of(v: &[u64]) -> (f64, f64) {
        let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
        mean_std(&f)
    }

    #[test]
    fn jitter_distributions_have_the_configured_mean_and_spread() {
        let delay = 50_000_000.0;
        let sigma = 5_000_000.0;
        for (name, distribution, sd) in [
            ("uniform", Distribution::Uniform, sigma / 3f64.sqrt()),
            ("normal", Distribution::Normal, sigma),
            ("pareto", Distribution::Pareto, sigma),
            ("paretonormal", Distribution::ParetoNormal, sigma),
        ] {
            let imp = Impairments {
                seed: 9,
                delay_ns: 50_000_000,
                jitter_ns: 5_000_000,
                distribution,
                ..Impairments::default()
            };
            let d: Vec<u64> = run(&imp, 100_000).into_iter().flatten().collect();
            let (m, s) = mean_std_of(&d);
            assert!((m - delay).abs() < 0.02 * sigma, "{name}: mean {m}");
            assert!((s - sd).abs() / sd < 0.03, "{name}: std {s} vs {sd}");
            let min = *d.iter().min().unwrap() as f64;
            let max = *d.iter().max().unwrap() as f64;
            assert!(min >= delay - 4.0 * sigma - 1.0 && max <= delay + 4.0 * sigma + 1.0);
            if name == "pareto" {
                // Heavy right tail: the mean is above the median.
                let mut sorted = d.clone();
                sorted.sort_unstable();
                assert!((sorted[d.len() / 2] as f64) < m - 0.1 * sigma);
            }
        }
    }

    #[test]
    fn user_table_and_negative_delays_clamp_to_zero() {
        let imp = Impairments {
            delay_ns: 1_000,
            jitter_ns: 1_000,
            distribution: Distribution::Table(vec![-8192 * 3, 4096, 8192]),
            ..Impairments::default()
        };
        let d: Vec<u64> = run(&imp, 3_000).into_iter().flatten().collect();
        let count = |v: u64| d.iter().filter(|&&x| x == v).count();
        // 1 us - 3 us clamps to 0; 1.5 us; 2 us; each about a third.
        for v in [0, 1_500, 2_000] {
            assert!((800..1200).contains(&count(v)), "{v}: {}", count(v));
        }
        assert_eq!(count(0) + count(1_500) + count(2_000), 3_000);
        assert_eq!(
            parse_dist_table("# netem\n-8192 0\n 8192 # end\n").unwrap(),
            vec![-8192, 0, 8192]
        );
        assert!(parse_dist_table("1 2 40000")
            .unwrap_err()
            .to_string()
            .contains("40000"));
        assert!(parse_dist_table("# nothing\n").is_err());
    }

    #[test]
    fn built_tables_are_standardized() {
        for d in [
            Distribution::Normal,
            Distribution::Pareto,
            Distribution::ParetoNormal,
        ] {
            let t = build_table(&d).unwrap();
            assert_eq!(t.len(), TABLE_SIZE);
            assert!(
                t.windows(2).all(|w| w[0] <= w[1]),
                "{d:?} is a quantile table"
            );
            let f: Vec<f64> = t.iter().map(|&x| x as f64 / 8192.0).collect();
            let (m, s) = mean_std(&f);
            assert!(m.abs() < 0.01 && (s - 1.0).abs() < 0.01, "{d:?}: {m} {s}");
        }
        // The normal table's quartiles sit at ±0.674 sigma.
        let t = build_table(&Distribution::Normal).unwrap();
        let q3 = t[3 * TABLE_SIZE / 4] as f64 / 8192.0;
        assert!((q3 - 0.6745).abs() < 0.002, "{q3}");
        assert!(build_table(&Distribution::Uniform).is_none());
    }

    #[test]
    fn duplication_and_corruption_counts() {
        let imp = Impairments {
            seed: 21,
            duplicate: 10.0,
            corrupt: 5.0,
            ..Impairments::default()
        };
        let mut stage = Impair::new(imp);
        let mut out = Vec::new();
        let (mut dups, mut corrupted, mut flipped) = (0, 0, 0);
        let original: Vec<u8> = (0..64u8).collect();
        for i in 0..20_000 {
            let mut p = pkt(i, 64);
            p.data = original.clone();
            let e = stage.transmit(p, &mut out);
            dups += e.duplicated;
            corrupted += e.corrupted;
            assert_eq!(out.len(), 1 + e.duplicated as usize);
            for (p, fate) in out.drain(..) {
                assert_eq!(fate, Fate::Delayed(0));
                let bits: u32 = p
                    .data
                    .iter()
                    .zip(&original)
                    .map(|(a, b)| (a ^ b).count_ones())
                    .sum();
                assert!(bits <= 1);
                assert_eq!(p.data[..ETH_HLEN], original[..ETH_HLEN], "header untouched");
                flipped += bits;
            }
        }
        assert_eq!(flipped, corrupted);
        assert!((1_800..2_200).contains(&dups), "{dups}");
        // Each copy draws on its own: 5% of 22000 copies.
        assert!((950..1_250).contains(&corrupted), "{corrupted}");
        // A frame without payload bytes cannot be corrupted.
        let mut stage = Impair::new(Impairments {
            corrupt: 100.0,
            ..Impairments::default()
        });
        assert_eq!(stage.transmit(pkt(0, 1500), &mut out).corrupted, 0);
    }

    /// Delay correlation makes consecutive delays alike (lag-1
    /// autocorrelation well above that of independent draws).
    #[test]
    fn correlated_jitter_is_autocorrelated() {
        let lag1 = |jitter_correlation: f64| {
            // delay 10ms 2ms [CORRELATION] distribution normal seed 2
            let imp = Impairments {
                seed: 2,
                delay_ns: 10_000_000,
                jitter_ns: 2_000_000,
                jitter_correlation,
                distribution: Distribution::Normal,
                ..Impairments::default()
            };
            let d: Vec<f64> = run(&imp, 50_000)
                .into_iter()
                .flatten()
                .map(|x| x as f64)
                .collect();
            let (m, s) = mean_std(&d);
            let cov =
                d.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / (d.len() - 1) as f64;
            cov / (s * s)
        };
        let independent = lag1(0.0);
        let correlated = lag1(75.0);
        assert!(independent.abs() < 0.02, "{independent}");
        assert!(correlated > 0.5, "{correlated}");
    }

    /// The settings as a config file would hold them (TOML through serde).
    #[test]
    fn link_shape_from_toml() {
        use crate::link::{Framing, LinkShape};
        use crate::units::LinkLayer;
        let shape: LinkShape = toml::from_str(
            r#"
            [impairments]
            seed = 7
            delay_ns = 1000000
            jitter_ns = 200000
            distribution = { table = [-8192, 0, 8192] }
            duplicate = 0.5
            [impairments.loss]
            model = "gilbert_elliott"
            p = 1.0
            r = 10.0
            one_minus_h = 100.0
            one_minus_k = 0.0
            [impairments.reorder]
            percent = 0.0
            correlation = 0.0
            gap = 1
            [schedule]
            kind = "trace"
            opportunities_ms = [1, 2, 3]
            [framing]
            overhead = 8
            linklayer = "atm"
            "#,
        )
        .unwrap();
        assert!(shape.validate().is_ok());
        assert_eq!(shape.impairments.seed, 7);
        assert_eq!(
            shape.impairments.distribution,
            Distribution::Table(vec![-8192, 0, 8192])
        );
        assert!(matches!(shape.impairments.loss, Loss::GilbertElliott { r, .. } if r == 10.0));
        assert_eq!(
            shape.framing,
            Framing {
                overhead: 8,
                mpu: 0,
                linklayer: LinkLayer::Atm
            }
        );
        let json = serde_json::to_string(&shape).unwrap();
        assert_eq!(serde_json::from_str::<LinkShape>(&json).unwrap(), shape);
        let bad: LinkShape = toml::from_str("[impairments]\ncorrupt = 120.0\n").unwrap();
        assert_eq!(bad.validate().unwrap_err().field, "corrupt");
    }

    #[test]
    fn reorder_gap_sends_every_nth_frame_without_delay() {
        let reorder = |percent: f64, gap: u32| Impairments {
            delay_ns: 10_000_000,
            reorder: Some(Reorder {
                percent,
                correlation: 0.0,
                gap,
            }),
            ..Impairments::default()
        };
        let d: Vec<u64> = run(&reorder(100.0, 4), 12).into_iter().flatten().collect();
        let ten = 10_000_000;
        assert_eq!(d, [[ten, ten, ten, 0]; 3].concat());
        let imp = reorder(25.0, 1);
        let fast = run(&imp, 10_000).iter().filter(|f| **f == Some(0)).count();
        assert!((2_300..2_700).contains(&fast), "{fast}");
    }
}
