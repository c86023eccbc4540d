//! The random models netem is made of, shared by the netem qdisc
//! (`super::Netem`, net/sched/sch_netem.c) and the wire stage
//! (`crate::link::impair`): the correlated generator (`get_crandom`), the
//! two Markov loss chains (`loss_4state`, `loss_gilb_ell`), the kernel's
//! seeded generator (`prandom_u32_state`, lib/random32.c, seeded by
//! `prandom_seed_state`, include/linux/prandom.h), and the distribution
//! tables: the parser of netem's `.dist` files as iproute2 reads them
//! (tc/q_netem.c `get_distribution`) and the standardized tables of the
//! named distributions. Each user brings its own thresholds: the qdisc
//! the kernel's u32 probabilities, the stage its percentages rounded to
//! 2^32 (`threshold`), so that its sequences stay what they were.

/// netem's distribution tables: entries are signed, 8192 = one sigma
/// (`NETEM_DIST_SCALE`, include/uapi/linux/pkt_sched.h).
pub const DIST_SCALE: i64 = 8192;
/// The largest table the kernel takes (`NETEM_DIST_MAX`).
pub const DIST_MAX: usize = 16384;
/// Entries of the tables built for `normal`, `pareto` and `paretonormal`.
pub const TABLE_SIZE: usize = 4096;

/// A probability in percent as a threshold on a 32-bit random value (the
/// wire stage's scale: 100% = 2^32).
pub fn threshold(percent: f64) -> u64 {
    (percent / 100.0 * (1u64 << 32) as f64).round() as u64
}

/// The kernel's per-qdisc generator (`struct rnd_state`, the four-part
/// Tausworthe generator of lib/random32.c): what netem's `seed` seeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prandom {
    s: [u32; 4],
}

impl Prandom {
    /// `prandom_seed_state`: the four parts from the seed folded to 32
    /// bits, each at least its minimum (2, 8, 16, 128).
    pub fn seeded(seed: u64) -> Prandom {
        let i = ((seed >> 32) ^ (seed << 10) ^ seed) as u32;
        let at_least = |x: u32, m: u32| if x < m { x.wrapping_add(m) } else { x };
        Prandom {
            s: [
                at_least(i, 2),
                at_least(i, 8),
                at_least(i, 16),
                at_least(i, 128),
            ],
        }
    }

    /// `prandom_u32_state`.
    pub fn next_u32(&mut self) -> u32 {
        fn taus(s: u32, a: u32, b: u32, c: u32, d: u32) -> u32 {
            ((s & c) << d) ^ (((s << a) ^ s) >> b)
        }
        self.s[0] = taus(self.s[0], 6, 13, 4_294_967_294, 18);
        self.s[1] = taus(self.s[1], 2, 27, 4_294_967_288, 2);
        self.s[2] = taus(self.s[2], 13, 21, 4_294_967_280, 7);
        self.s[3] = taus(self.s[3], 3, 12, 4_294_967_168, 13);
        self.s[0] ^ self.s[1] ^ self.s[2] ^ self.s[3]
    }
}

/// netem's correlated random numbers (`struct crndstate`, `get_crandom`):
/// each value is the fresh one mixed with the previous answer, the
/// previous weighing `weight / 2^32`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Correlated {
    weight: u64,
    last: u64,
}

impl Correlated {
    /// A generator whose previous answer weighs `weight` / 2^32 (0: no
    /// correlation; at most 2^32), starting from `last`.
    pub fn new(weight: u64, last: u32) -> Self {
        Correlated {
            weight: weight.min(1 << 32),
            last: u64::from(last),
        }
    }

    /// The kernel's `init_crandom(state, rho)`: `rho` as tc sends it
    /// (100% = 2^32 - 1), used as `rho + 1`; 0 draws uncorrelated.
    pub fn kernel(rho: u32, last: u32) -> Self {
        Correlated::new(if rho == 0 { 0 } else { u64::from(rho) + 1 }, last)
    }

    /// The next value; `draw` gives the fresh 32-bit one.
    pub fn next(&mut self, draw: impl FnOnce() -> u32) -> u64 {
        let fresh = u64::from(draw());
        if self.weight == 0 {
            return fresh;
        }
        let mixed = (fresh * ((1u64 << 32) - self.weight) + self.last * self.weight) >> 32;
        self.last = mixed;
        mixed
    }

    /// True with probability `thr / 2^32` (no draw when `thr` is 0).
    pub fn happens(&mut self, thr: u64, draw: impl FnOnce() -> u32) -> bool {
        thr > 0 && self.next(draw) < thr
    }
}

/// netem's 4-state chain (`loss_4state`): 1 = received in a gap, 2 =
/// received in a burst, 3 = lost in a burst, 4 = isolated loss; a frame is
/// lost when the chain enters (or stays in) 3 or enters 4; 4 always goes
/// back to 1. Each field is a threshold `rnd < t` on one 32-bit draw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FourStateChain {
    /// 1 → 4 below this (`p14`).
    pub p14: u64,
    /// 1 → 3 below this, at or above `p14` (`p13 + p14`).
    pub p13_p14: u64,
    /// 2 → 3 below this (`p23`).
    pub p23: u64,
    /// 3 → 2 below this (`p32`).
    pub p32: u64,
    /// 3 → 1 below this, at or above `p32` (`p31 + p32`).
    pub p31_p32: u64,
}

impl FourStateChain {
    /// One frame: moves `state` by the draw `rnd`; true when it is lost.
    pub fn step(&self, state: &mut u8, rnd: u32) -> bool {
        let below = |t: u64| u64::from(rnd) < t;
        *state = match *state {
            1 if below(self.p14) => 4,
            1 if below(self.p13_p14) => 3,
            1 => 1,
            2 if below(self.p23) => 3,
            2 => 2,
            3 if below(self.p32) => 2,
            3 if below(self.p31_p32) => 1,
            3 => 3,
            _ => 1,
        };
        *state == 3 || (*state == 4)
    }
}

/// A loss test on a 32-bit draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossTest {
    /// Lost when the draw is below the threshold.
    Below(u64),
    /// Lost when the draw is above the value (the kernel's bad state:
    /// `rnd > h`).
    Above(u32),
}

impl LossTest {
    fn hit(self, rnd: u32) -> bool {
        match self {
            LossTest::Below(t) => u64::from(rnd) < t,
            LossTest::Above(v) => rnd > v,
        }
    }
}

/// Gilbert–Elliott (`loss_gilb_ell`): state 1 good, 2 bad. In each state a
/// first draw may move the chain (`p` good→bad, `r` bad→good), a second
/// decides the frame's fate by the loss test of the state it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GilbertElliottChain {
    /// Good → bad below this.
    pub p: u64,
    /// Bad → good below this.
    pub r: u64,
    /// The loss test in the good state (1-k).
    pub good_loss: LossTest,
    /// The loss test in the bad state (1-h).
    pub bad_loss: LossTest,
}

impl GilbertElliottChain {
    /// One frame, drawing twice from `draw`; true when it is lost.
    pub fn step(&self, state: &mut u8, mut draw: impl FnMut() -> u32) -> bool {
        let good = *state == 1;
        let (leave, lose) = if good {
            (self.p, self.good_loss)
        } else {
            (self.r, self.bad_loss)
        };
        if u64::from(draw()) < leave {
            *state = if good { 2 } else { 1 };
        }
        lose.hit(draw())
    }
}

/// Why a `.dist` table was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DistError {
    /// A value that is no 16-bit integer (the stage's parser).
    #[error("distribution table line {line}: \"{token}\" is not an integer in -32768..=32767")]
    Value {
        /// The line, from 1.
        line: usize,
        /// The word.
        token: String,
    },
    /// No value at all.
    #[error("distribution table: no values")]
    Empty,
    /// More values than tc takes (`MAX_DIST`, 16384).
    #[error("too much data")]
    TooMuch,
}

/// Parses the content of a netem `.dist` file strictly: whitespace-separated
/// signed integers, `#` comments. The wire stage's reading.
pub fn parse_dist_table(text: &str) -> Result<Vec<i16>, DistError> {
    let mut table = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        for tok in line.split_whitespace() {
            table.push(tok.parse::<i16>().map_err(|_| DistError::Value {
                line: n + 1,
                token: tok.to_string(),
            })?);
        }
    }
    if table.is_empty() {
        return Err(DistError::Empty);
    }
    Ok(table)
}

/// Reads a `.dist` file as tc does (`get_distribution`): lines starting
/// with `#` or empty are skipped; on the others, numbers as `strtol(p,
/// &end, 0)` reads them, one after the other, until one does not read;
/// each stored into an `__s16` (truncated). More than `DIST_MAX` values:
/// `TooMuch`. An empty result is the caller's to refuse.
pub fn read_dist_file(text: &str) -> Result<Vec<i16>, DistError> {
    let mut table = Vec::new();
    for line in text.split_inclusive('\n') {
        if line.starts_with('\n') || line.starts_with('#') {
            continue;
        }
        let mut rest = line;
        while let Some((value, used)) = strtol0(rest) {
            if table.len() >= DIST_MAX {
                return Err(DistError::TooMuch);
            }
            table.push(value as i16);
            rest = &rest[used..];
        }
    }
    Ok(table)
}

/// C's `strtol(s, &end, 0)` on 64-bit longs: leading white space, a sign,
/// `0x` hex, a leading `0` octal, else decimal; saturating. `None` when no
/// digit reads; else the value and the bytes used.
fn strtol0(s: &str) -> Option<(i64, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    let neg = b.get(i) == Some(&b'-');
    if matches!(b.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let (radix, start) = if b.get(i) == Some(&b'0')
        && matches!(b.get(i + 1), Some(b'x' | b'X'))
        && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    {
        (16, i + 2)
    } else if b.get(i) == Some(&b'0') {
        (8, i)
    } else {
        (10, i)
    };
    let mut j = start;
    let mut v: i128 = 0;
    while let Some(d) = b.get(j).and_then(|c| (*c as char).to_digit(radix)) {
        v = (v * i128::from(radix) + i128::from(d)).min(i128::from(i64::MAX) + 1);
        j += 1;
    }
    if j == start {
        return None;
    }
    let v = if neg { -v } else { v };
    Some((
        v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
        j,
    ))
}

/// The named distributions whose tables bloatbox can build when no `.dist`
/// file is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamedDist {
    /// Normal.
    Normal,
    /// Pareto (shape 3).
    Pareto,
    /// 1/4 normal + 3/4 pareto, quantile by quantile.
    ParetoNormal,
}

impl NamedDist {
    /// The distribution of a `.dist` name (`normal`, `pareto`,
    /// `paretonormal`).
    pub fn by_name(name: &str) -> Option<NamedDist> {
        match name {
            "normal" => Some(NamedDist::Normal),
            "pareto" => Some(NamedDist::Pareto),
            "paretonormal" => Some(NamedDist::ParetoNormal),
            _ => None,
        }
    }
}

/// Builds the table of a named distribution, standardized to mean 0 and
/// standard deviation 1 (8192) after clipping to the i16 range: a quantile
/// table of `TABLE_SIZE` entries.
pub fn build_table(dist: NamedDist) -> Vec<i16> {
    let n = TABLE_SIZE;
    let q = |i: usize| (i as f64 + 0.5) / n as f64;
    let pareto = |i: usize| (1.0 - q(i)).powf(-1.0 / 3.0);
    let values: Vec<f64> = match dist {
        NamedDist::Normal => normal_quantiles(n),
        NamedDist::Pareto => (0..n).map(pareto).collect(),
        NamedDist::ParetoNormal => {
            let normal = normal_quantiles(n);
            let (pm, ps) = mean_std(&(0..n).map(pareto).collect::<Vec<_>>());
            (0..n)
                .map(|i| 0.25 * normal[i] + 0.75 * (pareto(i) - pm) / ps)
                .collect()
        }
    };
    let mut z = values;
    let mut table = Vec::new();
    // Clipping the tail shrinks the spread; rescale until it is 1 again.
    for _ in 0..8 {
        let (m, s) = mean_std(&z);
        z.iter_mut().for_each(|v| *v = (*v - m) / s);
        table = z
            .iter()
            .map(|v| (v * DIST_SCALE as f64).round().clamp(-32768.0, 32767.0) as i16)
            .collect();
        let clipped: Vec<f64> = table
            .iter()
            .map(|&t| t as f64 / DIST_SCALE as f64)
            .collect();
        let (cm, cs) = mean_std(&clipped);
        if (cs - 1.0).abs() < 1e-3 && cm.abs() < 1e-3 {
            break;
        }
        z = z
            .iter()
            .map(|v| v.clamp(-4.0, 4.0) / cs - cm / cs)
            .collect();
    }
    table
}

/// Mean and standard deviation (population) of `v`.
pub fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, var.sqrt().max(f64::MIN_POSITIVE))
}

/// Quantiles of the standard normal at (i + 1/2)/n, by integrating the
/// density (Simpson steps of 1e-4) and interpolating inside a step.
fn normal_quantiles(n: usize) -> Vec<f64> {
    let pdf = |x: f64| (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let h = 1e-4;
    let (mut x, mut cdf) = (-8.0f64, 0.0f64);
    let step = |x: f64| h * (pdf(x) + 4.0 * pdf(x + h / 2.0) + pdf(x + h)) / 6.0;
    let mut next = cdf + step(x);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let target = (i as f64 + 0.5) / n as f64;
        while next < target && x < 8.0 {
            x += h;
            cdf = next;
            next = cdf + step(x);
        }
        out.push(x + h * ((target - cdf) / (next - cdf)).clamp(0.0, 1.0));
    }
    out
}
