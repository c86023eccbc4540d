//! TBF, the Token Bucket Filter (Linux net/sched/sch_tbf.c, iproute2
//! tc/q_tbf.c): a classful shaper with one class `:1` whose child (by default a
//! bfifo of `limit` bytes) holds the frames. Two buckets in nanoseconds of
//! transmission time: `tokens` (depth `buffer` = l2t(rate, burst)) and, with a
//! peakrate, `ptokens` (depth l2t(peakrate, mtu)). The head frame leaves only
//! when both buckets cover its whole cost; otherwise the watchdog is armed for
//! the deficit. Also holds the tc option helpers HTB shares (`matches`,
//! `option_value`, sizes with `/cell`, linklayer).

use super::fifo::{Fifo, FifoKind};
use super::park::ParkOnPeek;
use super::ClassOptions;
use super::QdiscOptions;
use super::{
    tc_h_major, tc_h_minor, ClassDump, Classful, FlowListing, Handle, Qdisc, QdiscCtx, QdiscDump,
    QdiscStats, TcError, Verdict,
};
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;
use crate::units::{
    parse_rate, parse_size, parse_time, print_rate, sprint_size, sprint_time, tc_calc_xmitsize,
    tc_core_tick2time, LinkLayer, PschedRate,
};
use serde_json::{json, Map, Value};

/// iproute2's `matches(arg, keyword)`: `arg` is a non-empty prefix of
/// `keyword` (so `lat` selects `latency`).
pub(crate) fn matches(arg: &str, keyword: &str) -> bool {
    !arg.is_empty() && keyword.starts_with(arg)
}

/// The value of tc option `opt`: the next token of `it`, or, when the command
/// line ends there, iproute2's "Command line is not complete" message (the
/// caller appends its usage).
pub(crate) fn option_value<'a>(
    it: &mut std::slice::Iter<'_, &'a str>,
    opt: &str,
) -> Result<&'a str, String> {
    it.next().copied().ok_or_else(|| {
        format!("Command line is not complete: \"{opt}\" needs a value. Try option \"help\"")
    })
}

/// A size with an optional legacy rate-table cell (`get_size_and_cell`):
/// `10kb/8` is 10240 bytes (cell 8). The cell must be a power of two; it
/// only sizes tc's legacy rate table, which the kernel ignores and never
/// dumps (see `DUMPED_CELL`), so only the bytes are kept.
pub(crate) fn parse_size_and_cell(s: &str) -> Option<u64> {
    let (size, cell) = match s.split_once('/') {
        Some((size, cell)) => (size, Some(cell)),
        None => (s, None),
    };
    let bytes = parse_size(size).ok()?;
    if let Some(c) = cell {
        let c: u64 = c.parse().ok()?;
        if !c.is_power_of_two() || c >= 1 << 32 {
            return None;
        }
    }
    Some(bytes)
}

/// The cell `tc -d` prints after a burst or mtu (`burst 10Kb/1 mpu 0b`):
/// the kernel fills the dumped `tc_ratespec` with `psched_ratecfg_getrate`,
/// which zeroes it first and sets only rate, overhead, mpu and linklayer, so
/// `cell_log` is 0 and tc prints `1 << 0`, whatever `/CELL` was given.
/// Checked on this machine (kernel 6.18, iproute2 6.1): `tbf rate 1mbit burst
/// 10kb/64 latency 50ms` shows `burst 10Kb/1 mpu 0b`. (Older write-ups show
/// `/8`, the cell tc computed in `tc_calc_rtable` but the kernel drops.)
pub(crate) const DUMPED_CELL: u32 = 1;

/// `get_linklayer`: `ethernet`, `atm` or its alias `adsl`.
pub(crate) fn parse_linklayer(s: &str) -> Option<LinkLayer> {
    match s {
        "ethernet" => Some(LinkLayer::Ethernet),
        "atm" | "adsl" => Some(LinkLayer::Atm),
        _ => None,
    }
}

pub(crate) fn linklayer_name(l: LinkLayer) -> &'static str {
    match l {
        LinkLayer::Ethernet => "ethernet",
        LinkLayer::Atm => "atm",
    }
}

pub(crate) const LINKLAYER_ALLOWED: &str = "ethernet, atm or adsl";
pub(crate) const U16_ALLOWED: &str = "an integer 0..65535";

/// `psched_l2t_ns` as a signed bucket quantity.
fn l2t(rate: &PschedRate, len: u64) -> i64 {
    i64::try_from(rate.l2t_ns(len)).unwrap_or(i64::MAX)
}

/// Psched ticks (64 ns) of a nanosecond value, as the kernel dumps them.
pub(crate) fn ns_to_ticks(ns: i64) -> i64 {
    ns >> 6
}

const TBF_USAGE: &str =
    "Usage: ... tbf limit BYTES burst BYTES[/BYTES] rate KBPS [ mtu BYTES[/BYTES] ]\n\
        [ peakrate KBPS ] [ latency TIME ] [ overhead BYTES ] [ linklayer TYPE ]";

fn tbf_err(msg: String) -> TcError {
    TcError::new(format!("{msg}\n{TBF_USAGE}"))
}

fn illegal(param: &str, value: &str, allowed: &str) -> TcError {
    tbf_err(format!(
        "tbf: illegal value for \"{param}\": \"{value}\" (expected {allowed})"
    ))
}

fn duplicate(what: &str) -> TcError {
    tbf_err(format!("tbf: duplicate \"{what}\" specification"))
}

/// The options as tc parsed them (before the kernel derives its values).
#[derive(Clone, Debug, PartialEq)]
struct TbfOpts {
    rate: u64,
    burst: u64,
    limit: u64,
    latency_us: u64,
    peakrate: u64,
    mtu: u64,
    mpu: u64,
    overhead: u64,
    linklayer: LinkLayer,
}

impl TbfOpts {
    /// `tbf_parse_opt` of iproute2, including its checks.
    fn parse(args: &[&str]) -> Result<TbfOpts, TcError> {
        let mut o = TbfOpts {
            rate: 0,
            burst: 0,
            limit: 0,
            latency_us: 0,
            peakrate: 0,
            mtu: 0,
            mpu: 0,
            overhead: 0,
            linklayer: LinkLayer::Ethernet,
        };
        let mut it = args.iter();
        while let Some(&tok) = it.next() {
            let mut value = || option_value(&mut it, tok).map_err(tbf_err);
            if matches(tok, "limit") {
                let v = value()?;
                if o.limit != 0 {
                    return Err(duplicate("limit"));
                }
                if o.latency_us != 0 {
                    return Err(tbf_err(
                        "tbf: you can specify either \"limit\" or \"latency\".".into(),
                    ));
                }
                o.limit = parse_size(v).map_err(|e| illegal("limit", v, e.allowed))?;
            } else if matches(tok, "latency") {
                let v = value()?;
                if o.latency_us != 0 {
                    return Err(duplicate("latency"));
                }
                if o.limit != 0 {
                    return Err(tbf_err(
                        "tbf: you can specify either \"limit\" or \"latency\".".into(),
                    ));
                }
                o.latency_us = parse_time(v).map_err(|e| illegal("latency", v, e.allowed))?;
            } else if matches(tok, "burst") || tok == "buffer" || tok == "maxburst" {
                let v = value()?;
                if o.burst != 0 {
                    return Err(duplicate("buffer/burst/maxburst"));
                }
                let b = parse_size_and_cell(v).ok_or_else(|| {
                    illegal(
                        tok,
                        v,
                        "a size like 10kb, optionally /CELL with CELL a power of two",
                    )
                })?;
                o.burst = b;
            } else if tok == "mtu" || tok == "minburst" {
                let v = value()?;
                if o.mtu != 0 {
                    return Err(duplicate("mtu/minburst"));
                }
                let m = parse_size_and_cell(v).ok_or_else(|| {
                    illegal(
                        tok,
                        v,
                        "a size like 1514, optionally /CELL with CELL a power of two",
                    )
                })?;
                o.mtu = m;
            } else if tok == "mpu" {
                let v = value()?;
                if o.mpu != 0 {
                    return Err(duplicate("mpu"));
                }
                o.mpu = parse_size(v)
                    .ok()
                    .filter(|m| *m <= u16::MAX as u64)
                    .ok_or_else(|| illegal("mpu", v, "a size of 0..65535 bytes"))?;
            } else if tok == "rate" {
                let v = value()?;
                if o.rate != 0 {
                    return Err(duplicate("rate"));
                }
                o.rate = parse_rate(v).map_err(|e| illegal("rate", v, e.allowed))?;
            } else if matches(tok, "peakrate") {
                let v = value()?;
                if o.peakrate != 0 {
                    return Err(duplicate("peakrate"));
                }
                o.peakrate = parse_rate(v).map_err(|e| illegal("peakrate", v, e.allowed))?;
            } else if matches(tok, "overhead") {
                let v = value()?;
                if o.overhead != 0 {
                    return Err(duplicate("overhead"));
                }
                o.overhead = v
                    .parse::<u16>()
                    .map_err(|_| illegal("overhead", v, U16_ALLOWED))?
                    as u64;
            } else if matches(tok, "linklayer") {
                let v = value()?;
                o.linklayer =
                    parse_linklayer(v).ok_or_else(|| illegal("linklayer", v, LINKLAYER_ALLOWED))?;
            } else {
                return Err(tbf_err(format!("tbf: unknown parameter \"{tok}\"")));
            }
        }
        let mut missing = Vec::new();
        if o.rate == 0 {
            missing.push("tbf: the \"rate\" parameter is mandatory (e.g. rate 1mbit).");
        }
        if o.burst == 0 {
            missing.push("tbf: the \"burst\" parameter is mandatory (e.g. burst 10kb).");
        }
        if o.peakrate != 0 && o.mtu == 0 {
            missing.push(
                "tbf: when \"peakrate\" is specified, \"mtu\" must also be specified (e.g. mtu 1514).",
            );
        }
        if o.limit == 0 && o.latency_us == 0 {
            missing.push(
                "tbf: either \"limit\" or \"latency\" is required (e.g. latency 50ms or limit 30kb).",
            );
        }
        if !missing.is_empty() {
            return Err(tbf_err(missing.join("\n")));
        }
        if o.latency_us != 0 {
            // tc: rate * latency + burst, or the peakrate bound if smaller;
            // the double is truncated into the u32 netlink field.
            let mut lim = o.rate as f64 * o.latency_us as f64 / 1e6 + o.burst as f64;
            if o.peakrate != 0 {
                let lim2 = o.peakrate as f64 * o.latency_us as f64 / 1e6 + o.mtu as f64;
                lim = lim.min(lim2);
            }
            o.limit = lim.min(u32::MAX as f64) as u64;
        }
        if o.limit > u32::MAX as u64 {
            return Err(illegal(
                "limit",
                &o.limit.to_string(),
                "at most 4294967295 bytes",
            ));
        }
        Ok(o)
    }
}

/// What the kernel derives from the options (`tbf_change`).
#[derive(Clone, Debug)]
struct TbfParams {
    opts: TbfOpts,
    rate: PschedRate,
    peak: Option<PschedRate>,
    /// Bucket depth, ns of transmission time at `rate`.
    buffer: i64,
    /// Peak bucket depth, ns at `peak` (0 without a peakrate).
    mtu: i64,
    /// Largest frame that can ever pass.
    max_size: u64,
    limit: u64,
}

impl TbfParams {
    fn new(opts: TbfOpts, psched_mtu: u32) -> Result<(TbfParams, Option<String>), TcError> {
        let framing = |r: u64| {
            PschedRate::new(r).with_framing(opts.overhead as i32, opts.mpu as u32, opts.linklayer)
        };
        let rate = framing(opts.rate);
        let mut max_size = opts.burst.min(u32::MAX as u64);
        let buffer = l2t(&rate, max_size);
        let (peak, mtu) = if opts.peakrate != 0 {
            if opts.peakrate <= opts.rate {
                return Err(TcError::new(format!(
                    "Error: sch_tbf: peakrate {} is lower than or equals to rate {}: peakrate must be above rate.",
                    print_rate(opts.peakrate),
                    print_rate(opts.rate)
                )));
            }
            let peak = framing(opts.peakrate);
            let pburst = opts.mtu.min(u32::MAX as u64);
            max_size = max_size.min(pburst);
            (Some(peak), l2t(&peak, pburst))
        } else {
            (None, 0)
        };
        if max_size == 0 {
            return Err(TcError::new(
                "Error: tbf: burst (or mtu with a peakrate) must be at least 1 byte.",
            ));
        }
        let warning = (max_size < psched_mtu as u64).then(|| {
            format!(
                "sch_tbf: burst {max_size} is lower than device mtu ({psched_mtu}) ! Larger frames will be dropped."
            )
        });
        let limit = opts.limit;
        Ok((
            TbfParams {
                opts,
                rate,
                peak,
                buffer,
                mtu,
                max_size,
                limit,
            },
            warning,
        ))
    }
}

/// The TBF qdisc.
pub struct Tbf {
    ctx: QdiscCtx,
    p: TbfParams,
    tokens: i64,
    ptokens: i64,
    t_c: Instant,
    child: Box<dyn Qdisc>,
    /// A frame taken out by `peek` (qdisc_peek_dequeued), already charged.
    parked: Option<Packet>,
    /// Watchdog deadline set by the last dequeue that lacked tokens.
    throttled_until: Option<Instant>,
    /// The latest `now` seen, for operations that are not given one.
    last_now: Instant,
    stats: QdiscStats,
    warnings: Vec<String>,
}

impl Tbf {
    /// `tc qdisc add ... tbf rate R burst B (limit L | latency T) [...]`.
    pub fn from_args(ctx: QdiscCtx, args: &[&str]) -> Result<Self, TcError> {
        let opts = TbfOpts::parse(args)?;
        let (p, warning) = TbfParams::new(opts, ctx.psched_mtu)?;
        let child_ctx = ctx.child(0, ctx.handle | 1);
        let child = Box::new(Fifo::with_limit(FifoKind::Bfifo, child_ctx, p.limit));
        Ok(Tbf {
            ctx,
            tokens: p.buffer,
            ptokens: p.mtu,
            p,
            t_c: Instant::ZERO,
            child,
            parked: None,
            throttled_until: None,
            last_now: Instant::ZERO,
            stats: QdiscStats::default(),
            warnings: warning.into_iter().collect(),
        })
    }

    /// Kernel log lines tc users would see in dmesg (burst below the MTU).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Largest frame that can pass (`max_size`).
    pub fn max_size(&self) -> u64 {
        self.p.max_size
    }

    /// Tokens of the rate bucket in ns, as last computed.
    pub fn tokens_ns(&self) -> i64 {
        self.tokens
    }

    /// `tbf_dequeue`: release the child's head frame if both buckets cover
    /// it; otherwise arm the watchdog and count an overlimit.
    fn try_release(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.last_now = self.last_now.max(now);
        let before = drops.len();
        let len = self.child.peek(now, drops).map(|p| p.len as u64);
        self.count_child_drops(before, drops);
        let len = len?;
        let elapsed = now.signed_since(self.t_c).min(self.p.buffer);
        let mut ptoks = 0i64;
        if let Some(peak) = &self.p.peak {
            ptoks = elapsed
                .saturating_add(self.ptokens)
                .min(self.p.mtu)
                .saturating_sub(l2t(peak, len));
        }
        let toks = elapsed
            .saturating_add(self.tokens)
            .min(self.p.buffer)
            .saturating_sub(l2t(&self.p.rate, len));
        if toks >= 0 && ptoks >= 0 {
            let before = drops.len();
            let pkt = self.child.dequeue(now, drops);
            self.count_child_drops(before, drops);
            let pkt = pkt?;
            self.t_c = now;
            self.tokens = toks;
            self.ptokens = ptoks;
            self.throttled_until = None;
            return Some(pkt);
        }
        let wait = (-toks).max(-ptoks) as u64;
        self.throttled_until = Some(now + wait);
        self.stats.overlimits += 1;
        None
    }

    fn count_child_drops(&mut self, before: usize, drops: &Drops) {
        self.stats.drops += (drops.len() - before) as u64;
    }

    fn options_text(&self, detail: bool) -> (String, Map<String, Value>) {
        let o = &self.p.opts;
        let mut s = Vec::new();
        let mut j = Map::new();
        s.push(format!("rate {}", print_rate(o.rate)));
        j.insert("rate".into(), json!(o.rate));
        let buffer_ticks = ns_to_ticks(self.p.buffer).max(0) as u64;
        let burst = tc_calc_xmitsize(o.rate, buffer_ticks);
        if detail {
            s.push(format!(
                "burst {}/{} mpu {}",
                sprint_size(burst),
                DUMPED_CELL,
                sprint_size(o.mpu)
            ));
            j.insert(
                "burst".into(),
                json!(format!("{}/{}", sprint_size(burst), DUMPED_CELL)),
            );
            j.insert("mpu".into(), json!(o.mpu));
        } else {
            s.push(format!("burst {}", sprint_size(burst)));
            j.insert("burst".into(), json!(burst));
        }
        let mtu_ticks = ns_to_ticks(self.p.mtu).max(0) as u64;
        if o.peakrate != 0 {
            s.push(format!("peakrate {}", print_rate(o.peakrate)));
            j.insert("peakrate".into(), json!(o.peakrate));
            if mtu_ticks != 0 || o.mpu != 0 {
                let mtu = tc_calc_xmitsize(o.peakrate, mtu_ticks);
                if detail {
                    s.push(format!(
                        "mtu {}/{} mpu {}",
                        sprint_size(mtu),
                        DUMPED_CELL,
                        sprint_size(o.mpu)
                    ));
                    j.insert(
                        "mtu".into(),
                        json!(format!("{}/{}", sprint_size(mtu), DUMPED_CELL)),
                    );
                } else {
                    s.push(format!("minburst {}", sprint_size(mtu)));
                    j.insert("minburst".into(), json!(mtu));
                }
            }
        }
        let mut latency =
            1e6 * (self.p.limit as f64 / o.rate as f64) - tc_core_tick2time(buffer_ticks) as f64;
        if o.peakrate != 0 {
            let lat2 = 1e6 * (self.p.limit as f64 / o.peakrate as f64)
                - tc_core_tick2time(mtu_ticks) as f64;
            latency = latency.max(lat2);
        }
        if latency >= 0.0 {
            let us = latency.min(u32::MAX as f64) as u64;
            s.push(format!("lat {}", sprint_time(us)));
            j.insert("lat".into(), json!(us));
        } else {
            s.push(format!("limit {}", sprint_size(self.p.limit)));
            j.insert("limit".into(), json!(self.p.limit));
        }
        if o.overhead != 0 {
            s.push(format!("overhead {}", o.overhead));
            j.insert("overhead".into(), json!(o.overhead));
        }
        if o.linklayer != LinkLayer::Ethernet || detail {
            s.push(format!("linklayer {}", linklayer_name(o.linklayer)));
            j.insert("linklayer".into(), json!(linklayer_name(o.linklayer)));
        }
        (s.join(" "), j)
    }
}

impl ParkOnPeek for Tbf {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.try_release(now, drops)
    }
}

impl Qdisc for Tbf {
    fn kind(&self) -> &'static str {
        "tbf"
    }

    fn enqueue(&mut self, pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.last_now = self.last_now.max(now);
        if pkt.len as u64 > self.p.max_size {
            return self.stats.reject(pkt, DropReason::TbfOversize, drops);
        }
        let before = drops.len();
        let verdict = self.child.enqueue(pkt, now, drops);
        self.count_child_drops(before, drops);
        verdict
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_parked_first(now, drops)
    }

    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.peek_parking(now, drops)
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        if self.parked.is_some() {
            return Some(now);
        }
        if self.child.qlen() == 0 {
            return None;
        }
        match self.throttled_until {
            Some(t) => Some(t.max(now)),
            None => Some(self.child.next_wakeup(now).unwrap_or(now).max(now)),
        }
    }

    fn qlen(&self) -> u32 {
        self.child.qlen() + self.parked.is_some() as u32
    }

    fn backlog(&self) -> u64 {
        self.child.backlog() + self.parked.as_ref().map_or(0, |p| p.len as u64)
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    fn reset(&mut self, drops: &mut Drops) {
        if let Some(p) = self.parked.take() {
            drops.push(p, DropReason::QdiscReset);
        }
        self.child.reset(drops);
        self.t_c = self.last_now;
        self.tokens = self.p.buffer;
        self.ptokens = self.p.mtu;
        self.throttled_until = None;
    }

    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), TcError> {
        let args = &options.words()[..];
        self.last_now = self.last_now.max(now);
        let opts = TbfOpts::parse(args)?;
        let (p, warning) = TbfParams::new(opts, self.ctx.psched_mtu)?;
        // fifo_set_limit: only FIFO children learn the new limit.
        if matches!(self.child.kind(), "bfifo" | "pfifo" | "pfifo_head_drop") {
            let limit = p.limit.to_string();
            let before = drops.len();
            self.child.change(
                &QdiscOptions::Words(vec!["limit".into(), limit]),
                now,
                drops,
            )?;
            self.count_child_drops(before, drops);
        }
        self.p = p;
        self.tokens = self.p.buffer;
        self.ptokens = self.p.mtu;
        self.throttled_until = None;
        self.warnings.extend(warning);
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let (options, options_json) = self.options_text(false);
        let (options_detail, _) = self.options_text(true);
        let child = self.child.dump_listing(now, listing);
        let child_handle = child.handle;
        let class = ClassDump {
            kind: "tbf".into(),
            classid: self.ctx.handle | 1,
            parent: self.ctx.handle,
            leaf: (child_handle != 0).then_some(child_handle),
            stats: Some(QdiscStats::default()),
            ..ClassDump::default()
        };
        QdiscDump {
            kind: "tbf".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options,
            options_detail,
            options_json,
            stats: self.stats(),
            classes: vec![class],
            // The default bfifo (handle 0) is invisible in `tc qdisc show`.
            children: if child.handle != 0 {
                vec![child]
            } else {
                Vec::new()
            },
            ..QdiscDump::default()
        }
    }

    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        Some(self)
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        out.extend(self.child.drain_all());
        out
    }
}

const TBF_ONE_CLASS: &str =
    "Error: tbf has a single fixed class :1; attach a qdisc to it with `tc qdisc add ... parent <tbf handle>:1 ...`.";

impl Classful for Tbf {
    fn add_class(
        &mut self,
        _classid: Handle,
        _parent: Handle,
        _options: &ClassOptions,
    ) -> Result<(), TcError> {
        Err(TcError::new(TBF_ONE_CLASS))
    }

    fn change_class(&mut self, _classid: Handle, _options: &ClassOptions) -> Result<(), TcError> {
        Err(TcError::new(TBF_ONE_CLASS))
    }

    fn delete_class(&mut self, _classid: Handle, _drops: &mut Drops) -> Result<(), TcError> {
        Err(TcError::new(TBF_ONE_CLASS))
    }

    /// Like the kernel's `tbf_find`, any minor selects the one class. The
    /// replaced child is returned with its frames; the caller moves them on
    /// (`drain_all`) or drops them.
    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, TcError> {
        if tc_h_major(classid) != tc_h_major(self.ctx.handle) {
            let major = tc_h_major(self.ctx.handle);
            return Err(TcError::new(format!(
                "Error: class {:x}:{:x} is not a class of tbf {major:x}: (use parent {major:x}:1).",
                tc_h_major(classid),
                tc_h_minor(classid),
            )));
        }
        self.throttled_until = None;
        Ok(Some(std::mem::replace(&mut self.child, child)))
    }

    fn child_mut(&mut self, _classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        Some(&mut self.child)
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        vec![&mut self.child]
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx.child(handle, parent)
    }

    /// The kernel's "burst is lower than device mtu" log lines.
    fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::{drain_codel_child, pkt};
    use rand::{Rng, SeedableRng};

    const MS: u64 = 1_000_000;

    fn tbf(args: &str) -> Tbf {
        let args: Vec<&str> = args.split_whitespace().collect();
        Tbf::from_args(QdiscCtx::default(), &args).unwrap()
    }

    fn err(args: &str) -> String {
        let args: Vec<&str> = args.split_whitespace().collect();
        Tbf::from_args(QdiscCtx::default(), &args).err().unwrap().0
    }

    /// Drives dequeue like an infinitely fast link: dequeue whenever
    /// possible, otherwise sleep until `next_wakeup`. Returns departure
    /// times and lengths.
    fn drain(q: &mut dyn Qdisc, mut t: Instant) -> Vec<(Instant, u32)> {
        let mut d = Drops::new();
        let mut out = Vec::new();
        for _ in 0..100_000 {
            if let Some(p) = q.dequeue(t, &mut d) {
                out.push((t, p.len));
                continue;
            }
            match q.next_wakeup(t) {
                Some(w) => {
                    assert!(w >= t, "wakeup {w:?} before now {t:?}");
                    assert!(w > t || q.qlen() == 0, "wakeup at now without progress");
                    t = w;
                }
                None => break,
            }
        }
        out
    }

    /// `tc -d qdisc show` of a tree whose burst and mtu are not whole
    /// microseconds of the rate, as this machine's kernel (6.18) and
    /// iproute2 (6.1) print it: the dumped ticks are cut to whole µs before
    /// they become bytes again (5000 B → 4999b, 1514 B → 1513b) and the cell
    /// is always `/1`, even when one is given.
    #[test]
    fn print_matches_the_kernel_for_uneven_bursts() {
        let q = tbf("rate 3mbit burst 5000/8 latency 7ms peakrate 4mbit mtu 1514");
        assert_eq!(
            q.dump(Instant::ZERO).options_detail,
            "rate 3Mbit burst 4999b/1 mpu 0b peakrate 4Mbit mtu 1513b/1 mpu 0b lat 7ms linklayer ethernet"
        );
    }

    #[test]
    fn vector_t1_derived_values_and_print() {
        let q = tbf("rate 1mbit burst 10kb latency 50ms");
        assert_eq!(q.p.buffer, 81_920_000);
        assert_eq!(q.max_size(), 10240);
        assert_eq!(q.p.limit, 16490);
        let d = q.dump(Instant::ZERO);
        assert_eq!(d.kind, "tbf");
        assert_eq!(d.options, "rate 1Mbit burst 10Kb lat 50ms");
        assert_eq!(
            d.options_detail,
            "rate 1Mbit burst 10Kb/1 mpu 0b lat 50ms linklayer ethernet"
        );
        assert_eq!(d.options_json["rate"], json!(125000));
        // The default child is an invisible bfifo holding the limit.
        assert!(d.children.is_empty());
        assert_eq!(q.child.dump(Instant::ZERO).options, "limit 16490b");
        assert_eq!(q.child.kind(), "bfifo");
        assert_eq!(d.classes.len(), 1);
        assert_eq!(d.classes[0].classid, 0x8001_0001);
        assert_eq!(d.classes[0].parent, 0x8001_0000);
        assert_eq!(d.classes[0].leaf, None);
        assert!(q.warnings().is_empty());
    }

    #[test]
    fn vector_t2_departure_times_of_a_backlog() {
        let mut q = tbf("rate 1mbit burst 10kb limit 200000");
        let mut d = Drops::new();
        for id in 1..=100 {
            assert_eq!(
                q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d),
                Verdict::Queued
            );
        }
        let out = drain(&mut q, Instant::ZERO);
        assert_eq!(out.len(), 100);
        for (i, (t, _)) in out.iter().enumerate() {
            let n = i as i64 + 1;
            let expect = ((1000 * n - 10240) * 8000).max(0) as u64;
            assert_eq!(t.nanos(), expect, "packet {n}");
        }
        assert_eq!(out[10].0.nanos(), 6_080_000);
        assert_eq!(out[11].0.nanos(), 14_080_000);
        assert_eq!(out[99].0.nanos(), 718_080_000);
        let s = q.stats();
        assert_eq!(
            (s.bytes, s.packets, s.qlen, s.backlog),
            (100_000, 100, 0, 0)
        );
        assert!(s.overlimits >= 90, "overlimits {}", s.overlimits);
        assert_eq!(q.next_wakeup(out[99].0), None);
    }

    #[test]
    fn vector_t5_burst_below_mtu_drops_full_frames() {
        let mut q = tbf("rate 1mbit burst 1000 limit 10000");
        assert_eq!(q.max_size(), 1000);
        assert_eq!(
            q.warnings()[0],
            "sch_tbf: burst 1000 is lower than device mtu (1514) ! Larger frames will be dropped."
        );
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 0..3 {
            assert_eq!(q.enqueue(pkt(id, 1514), t, &mut d), Verdict::Dropped);
        }
        assert_eq!(q.enqueue(pkt(9, 1000), t, &mut d), Verdict::Queued);
        assert!(d
            .since(0)
            .iter()
            .all(|(_, r)| *r == DropReason::TbfOversize));
        assert_eq!(q.stats().drops, 3);
        assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 9);
        assert_eq!(q.stats().packets, 1);
    }

    #[test]
    fn latency_converts_to_byte_limit_with_peakrate_bound() {
        // rate bound 125000*0.05+10240 = 16490; peak bound 250000*0.05+1514 = 14014.
        let q = tbf("rate 1mbit burst 10kb latency 50ms peakrate 2mbit mtu 1514");
        assert_eq!(q.p.limit, 14014);
        assert_eq!(q.max_size(), 1514);
        let d = q.dump(Instant::ZERO);
        assert_eq!(
            d.options,
            "rate 1Mbit burst 10Kb peakrate 2Mbit minburst 1514b lat 50ms"
        );
        assert_eq!(
            d.options_detail,
            "rate 1Mbit burst 10Kb/1 mpu 0b peakrate 2Mbit mtu 1514b/1 mpu 0b lat 50ms linklayer ethernet"
        );
    }

    #[test]
    fn negative_latency_prints_limit_and_framing_options() {
        let q = tbf("rate 1mbit burst 10kb limit 5000 overhead 24 linklayer atm mpu 64");
        let d = q.dump(Instant::ZERO);
        // burst is printed from the kernel's buffer (computed with framing).
        assert!(d.options.contains("limit 5000b"), "{}", d.options);
        assert!(
            d.options.ends_with("overhead 24 linklayer atm"),
            "{}",
            d.options
        );
        assert!(d.options_detail.contains("mpu 64b"), "{}", d.options_detail);
    }

    #[test]
    fn peakrate_spaces_the_burst() {
        let mut q = tbf("rate 1mbit burst 10kb limit 100000 peakrate 2mbit mtu 1000");
        let mut d = Drops::new();
        for id in 0..30 {
            q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
        }
        let out = drain(&mut q, Instant::ZERO);
        assert_eq!(out.len(), 30);
        for (i, (t, _)) in out.iter().enumerate() {
            let n = i as u64 + 1;
            let peak = (n - 1) * 4 * MS;
            let rate = (8000 * (1000 * n)).saturating_sub(81_920_000);
            assert_eq!(t.nanos(), peak.max(rate), "packet {n}");
        }
    }

    #[test]
    fn validation_names_the_bad_token() {
        assert!(err("burst 10kb latency 50ms").contains("\"rate\" parameter is mandatory"));
        assert!(err("rate 1mbit latency 50ms").contains("\"burst\" parameter is mandatory"));
        assert!(err("rate 1mbit burst 10kb").contains("either \"limit\" or \"latency\""));
        assert!(err("rate 1mbit burst 10kb limit 1000 latency 5ms")
            .contains("either \"limit\" or \"latency\""));
        assert!(err("rate 1mbit burst 10kb limit 1000 peakrate 2mbit")
            .contains("\"mtu\" must also be specified"));
        assert!(
            err("rate 1mbit burst 10kb limit 1000 peakrate 1mbit mtu 1514")
                .contains("peakrate 1Mbit is lower than or equals to rate 1Mbit")
        );
        let e = err("rate fast burst 10kb limit 1000");
        assert!(e.contains("illegal value for \"rate\": \"fast\""), "{e}");
        assert!(e.contains("mbit"), "{e}");
        assert!(err("rate 1mbit burst 10kb/7 limit 1000").contains("\"burst\": \"10kb/7\""));
        assert!(
            err("rate 1mbit burst 10kb limit 1000 bogus").contains("unknown parameter \"bogus\"")
        );
        assert!(err("rate 1mbit burst 10kb limit").contains("\"limit\" needs a value"));
        assert!(err("rate 1mbit rate 2mbit burst 1 limit 1").contains("duplicate \"rate\""));
        assert!(err("rate 1mbit burst 1 limit 1 linklayer token").contains("\"linklayer\""));
        assert!(err("rate 1mbit burst 1 limit 1 overhead -4").contains("\"overhead\""));
        // Abbreviations tc accepts.
        // A given cell is accepted, but the kernel dumps cell_log 0.
        let q = tbf("rate 1mbit bu 10kb/16 lat 50ms");
        assert!(q
            .dump(Instant::ZERO)
            .options_detail
            .contains("burst 10Kb/1 mpu 0b"));
        assert_eq!(tbf("rate 1mbit buffer 3000 limit 5000").max_size(), 3000);
        assert_eq!(tbf("rate 1mbit maxburst 3000 limit 5000").max_size(), 3000);
    }

    #[test]
    fn change_resets_tokens_and_applies_limit() {
        let mut q = tbf("rate 1mbit burst 10kb limit 100000");
        let mut d = Drops::new();
        for id in 0..20 {
            q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
        }
        while q.dequeue(Instant::ZERO, &mut d).is_some() {}
        assert_eq!(q.qlen(), 10);
        assert!(q.tokens_ns() < 8_000_000);
        // A new config with a full new bucket and a lower limit.
        let t = Instant::from_nanos(MS);
        q.change(
            &crate::qdisc::testutil::qwords(&["rate", "2mbit", "burst", "4000", "limit", "5000"]),
            t,
            &mut d,
        )
        .unwrap();
        assert_eq!(q.tokens_ns(), 16_000_000);
        assert_eq!(q.qlen(), 5, "bfifo trimmed to 5000 bytes");
        assert_eq!(d.len(), 5);
        assert_eq!(q.stats().drops, 5);
        let out = drain(&mut q, t);
        assert_eq!(out.len(), 5);
        // 4 frames from the 4000 B bucket at once, the 5th after 1000 B at 2 Mbit.
        assert!(out[..4].iter().all(|(x, _)| *x == t));
        assert_eq!(out[4].0, t + 4 * MS);
        assert!(q.dump(t).options.starts_with("rate 2Mbit burst 4000b"));
        // Invalid change leaves everything as it was.
        assert!(q
            .change(
                &crate::qdisc::testutil::qwords(&["rate", "2mbit"]),
                t,
                &mut d
            )
            .is_err());
        assert!(q.dump(t).options.starts_with("rate 2Mbit burst 4000b"));
    }

    #[test]
    fn child_replaced_keeps_shaping_and_limit_no_longer_applies() {
        let mut q = tbf("rate 1mbit burst 2000 limit 3000");
        let ctx = q.child_ctx(0x0010_0000, 0x8001_0001);
        let new = Box::new(Fifo::with_limit(FifoKind::Pfifo, ctx, 100));
        let old = q.graft(0x8001_0001, new).unwrap().unwrap();
        assert_eq!(old.kind(), "bfifo");
        let mut d = Drops::new();
        for id in 0..10 {
            assert_eq!(
                q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d),
                Verdict::Queued
            );
        }
        assert_eq!(q.qlen(), 10);
        let dump = q.dump(Instant::ZERO);
        assert_eq!(dump.classes[0].leaf, Some(0x0010_0000));
        assert_eq!(dump.children.len(), 1);
        assert_eq!(dump.children[0].options, "limit 100p");
        let out = drain(&mut q, Instant::ZERO);
        assert_eq!(out.len(), 10);
        assert_eq!(out[2].0.nanos(), 8_000_000);
        assert!(q
            .graft(0x0042_0001, Box::new(Fifo::new(FifoKind::Pfifo, ctx)))
            .is_err());
        assert!(q
            .add_class(
                0x8001_0002,
                0x8001_0000,
                &crate::qdisc::testutil::cwords(&[])
            )
            .is_err());
    }

    #[test]
    fn peek_parks_the_frame_and_counts_it_once() {
        let mut q = tbf("rate 1mbit burst 1500 limit 10000");
        let mut d = Drops::new();
        q.enqueue(pkt(1, 1000), Instant::ZERO, &mut d);
        q.enqueue(pkt(2, 1000), Instant::ZERO, &mut d);
        assert_eq!(q.peek(Instant::ZERO, &mut d).unwrap().meta.id, 1);
        assert_eq!(q.qlen(), 2);
        assert_eq!(q.stats().packets, 0);
        assert_eq!(q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id, 1);
        assert!(q.peek(Instant::ZERO, &mut d).is_none());
        assert_eq!(q.stats().overlimits, 1);
        assert_eq!(
            q.next_wakeup(Instant::ZERO),
            Some(Instant::from_nanos(4 * MS))
        );
        assert_eq!(q.stats().packets, 1);
        let mut r = Drops::new();
        q.reset(&mut r);
        assert_eq!((q.qlen(), r.len()), (0, 1));
    }

    #[test]
    fn atm_linklayer_charges_whole_cells() {
        // 100 B = 3 cells = 159 B on the wire; burst 1000 B = 21 cells = 1113 B.
        let mut q = tbf("rate 1mbit burst 1000 limit 10000 linklayer atm");
        assert_eq!(q.p.buffer, 1113 * 8000);
        let mut d = Drops::new();
        for id in 0..9 {
            q.enqueue(pkt(id, 100), Instant::ZERO, &mut d);
        }
        let out = drain(&mut q, Instant::ZERO);
        let times: Vec<u64> = out.iter().map(|(t, _)| t.nanos()).collect();
        assert_eq!(times, vec![0, 0, 0, 0, 0, 0, 0, 1_272_000, 2_544_000]);
    }

    #[test]
    fn aqm_child_drops_at_peek_count_in_tbf() {
        let mut q = tbf("rate 1mbit burst 3000 limit 100000");
        let ctx = q.child_ctx(0x0010_0000, 0x8001_0001);
        let codel = crate::qdisc::codel_qdisc::CodelQdisc::new(ctx);
        q.graft(0x8001_0001, Box::new(codel)).unwrap();
        drain_codel_child(&mut q, 60);
    }

    #[test]
    fn extreme_configs_do_not_overflow() {
        for args in [
            "rate 8bit burst 4294967295 limit 4294967295 linklayer atm overhead 65535 mpu 65535",
            "rate 8bit burst 4294967295 limit 1 peakrate 16bit mtu 4294967295",
            "rate 100tbit burst 1 limit 1",
        ] {
            let mut q = tbf(args);
            let mut d = Drops::new();
            q.enqueue(pkt(1, 1), Instant::ZERO, &mut d);
            q.enqueue(pkt(2, 1), Instant::ZERO, &mut d);
            for t in [0, 1, u64::MAX / 2, u64::MAX] {
                let t = Instant::from_nanos(t);
                q.dequeue(t, &mut d);
                assert!(q.next_wakeup(t).is_none_or(|w| w >= t));
            }
            let _ = q.dump(Instant::MAX);
        }
    }

    /// Random arrivals: next_wakeup never in the past, conservation holds,
    /// and in every window the bytes sent are at most rate×window + burst.
    #[test]
    fn random_load_respects_rate_and_burst() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for peak in [false, true] {
            let args = if peak {
                "rate 1mbit burst 5000 limit 20000 peakrate 4mbit mtu 1600"
            } else {
                "rate 1mbit burst 5000 limit 20000"
            };
            let mut q = tbf(args);
            let mut d = Drops::new();
            let mut t = Instant::ZERO;
            let mut sent: Vec<(u64, u64)> = Vec::new();
            let mut offered = 0u64;
            for id in 0..3000u64 {
                t += rng.gen_range(0..4 * MS);
                let len = rng.gen_range(60..1600);
                q.enqueue(pkt(id, len), t, &mut d);
                offered += 1;
                // The link polls at wakeups up to the next arrival.
                loop {
                    if let Some(p) = q.dequeue(t, &mut d) {
                        sent.push((t.nanos(), p.len as u64));
                        continue;
                    }
                    match q.next_wakeup(t) {
                        Some(w) if w < t + 2 * MS => {
                            assert!(w >= t);
                            t = w;
                        }
                        Some(w) => {
                            assert!(w >= t);
                            break;
                        }
                        None => break,
                    }
                }
            }
            assert_eq!(
                offered,
                sent.len() as u64 + d.len() as u64 + q.qlen() as u64
            );
            for i in 0..sent.len() {
                let mut bytes = 0;
                for j in i..sent.len().min(i + 200) {
                    bytes += sent[j].1;
                    let window = sent[j].0 - sent[i].0;
                    assert!(
                        bytes <= 125_000 * window / 1_000_000_000 + 5000,
                        "rate exceeded: {bytes} B in {window} ns"
                    );
                    if peak {
                        assert!(bytes <= 500_000 * window / 1_000_000_000 + 1600);
                    }
                }
            }
        }
    }
}
