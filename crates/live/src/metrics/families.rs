//! The registration machinery behind the text: `Families` collects
//! counter and gauge families by name as their rows come (in the order of
//! first use, which is the order of the text), then encodes them with
//! `prometheus_client` and sorts each family's samples by label so that
//! equal counters give equal text.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// A sample's labels, `(name, value)` pairs.
pub(super) type Labels = Vec<(String, String)>;

pub(super) fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A family with its name and help text.
type Named<M> = (&'static str, &'static str, Family<Labels, M>);

/// Gauges hold floats (seconds, and counts too large for an i64).
type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// The family called `name` in `list`, added on first use.
fn family<'a, M: Default>(
    list: &'a mut Vec<Named<M>>,
    name: &'static str,
    help: &'static str,
) -> &'a Family<Labels, M> {
    let at = match list.iter().position(|c| c.0 == name) {
        Some(i) => i,
        None => {
            list.push((name, help, Family::default()));
            list.len() - 1
        }
    };
    &list[at].2
}

/// Registers families by name as their rows come.
pub(super) struct Families {
    registry: Registry,
    counters: Vec<Named<Counter>>,
    gauges: Vec<Named<FloatGauge>>,
}

impl Families {
    /// No families yet; their names get the `bloatbox_` prefix.
    pub(super) fn new() -> Families {
        Families {
            registry: Registry::with_prefix("bloatbox"),
            counters: Vec::new(),
            gauges: Vec::new(),
        }
    }

    pub(super) fn counter(&mut self, name: &'static str, help: &'static str, l: Labels, v: u64) {
        family(&mut self.counters, name, help)
            .get_or_create(&l)
            .inc_by(v);
    }

    pub(super) fn gauge(&mut self, name: &'static str, help: &'static str, l: Labels, v: f64) {
        family(&mut self.gauges, name, help)
            .get_or_create(&l)
            .set(v);
    }

    /// One counter per `(name, help, value)` row, all labelled `l`.
    pub(super) fn counters(&mut self, l: &Labels, rows: &[(&'static str, &'static str, u64)]) {
        for &(name, help, v) in rows {
            self.counter(name, help, l.clone(), v);
        }
    }

    /// One gauge per `(name, help, value)` row, all labelled `l`.
    pub(super) fn gauges(&mut self, l: &Labels, rows: &[(&'static str, &'static str, f64)]) {
        for &(name, help, v) in rows {
            self.gauge(name, help, l.clone(), v);
        }
    }

    pub(super) fn encode(mut self) -> String {
        for (name, help, fam) in self.counters.drain(..) {
            self.registry.register(name, help, fam);
        }
        for (name, help, fam) in self.gauges.drain(..) {
            self.registry.register(name, help, fam);
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        sort_samples(&text)
    }
}

/// The text with the samples of each family in label order (the encoder
/// writes them in hash order), so that equal counters give equal text.
fn sort_samples(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut samples: Vec<&str> = Vec::new();
    let flush = |samples: &mut Vec<&str>, out: &mut String| {
        samples.sort_unstable();
        for s in samples.drain(..) {
            out.push_str(s);
            out.push('\n');
        }
    };
    for line in text.lines() {
        if line.starts_with('#') {
            flush(&mut samples, &mut out);
            out.push_str(line);
            out.push('\n');
        } else {
            samples.push(line);
        }
    }
    flush(&mut samples, &mut out);
    out
}
