//! tc units, parsed and printed exactly as iproute2 does (lib/utils.c
//! `get_rate64`, `get_size`; lib/json_print.c `print_color_rate`,
//! `sprint_size`; tc/tc_util.c `get_time`, `sprint_time`; tc/tc_core.c
//! `tc_calc_xmittime`, `tc_calc_xmitsize`): rates (bare number = bit/s, `kbps`
//! = kilobytes/s), sizes (bare = bytes, `k`/`kb` = 1024), times (bare = µs),
//! and the kernel's rate-to-time conversion (`psched_ratecfg`,
//! net/sched/sch_generic.c `psched_ratecfg_precompute`: mult/shift, overhead,
//! mpu, ATM cells).

use std::fmt;

/// A unit parsing error: the value and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct UnitError {
    /// What was being parsed, e.g. "rate" or "burst".
    pub what: &'static str,
    /// The text that did not parse, as given.
    pub value: String,
    /// What is allowed instead, e.g. "a number of bytes with an optional unit:
    /// b k kb m mb g gb kbit mbit gbit".
    pub allowed: &'static str,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} \"{}\": expected {}",
            self.what, self.value, self.allowed
        )
    }
}

const RATE_ALLOWED: &str =
    "a number with an optional unit: bit kbit mbit gbit tbit, kibit mibit gibit tibit, bps kbps mbps gbps tbps (bytes/s), kibps mibps gibps tibps";
const RATE_AT_LEAST_A_BYTE: &str =
    "0 or at least 8bit (one byte per second; a smaller rate would be truncated to 0, which means unlimited)";
const SIZE_ALLOWED: &str =
    "a number of bytes with an optional unit: b k kb m mb g gb kbit mbit gbit";
const TIME_ALLOWED: &str = "a number with an optional unit: us usec ms msec s sec (bare = µs)";

/// Splits "1.5mbit" into (1.5, "mbit"). The number may be fractional.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let n: f64 = s[..end].parse().ok()?;
    if !n.is_finite() || n < 0.0 {
        return None;
    }
    Some((n, &s[end..]))
}

/// Parses a tc rate into bytes per second (`get_rate64`: the bit/s value is
/// divided by 8 and truncated). `100kbps` is 100 kilobytes/s, as in tc.
pub fn parse_rate(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError {
        what: "rate",
        value: s.to_string(),
        allowed: RATE_ALLOWED,
    };
    let (n, unit) = split_number(s).ok_or_else(err)?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "bit" => 1.0,
        "kbit" => 1e3,
        "kibit" => 1024.0,
        "mbit" => 1e6,
        "mibit" => 1048576.0,
        "gbit" => 1e9,
        "gibit" => 1073741824.0,
        "tbit" => 1e12,
        "tibit" => 1099511627776.0,
        "bps" => 8.0,
        "kbps" => 8e3,
        "kibps" => 8.0 * 1024.0,
        "mbps" => 8e6,
        "mibps" => 8.0 * 1048576.0,
        "gbps" => 8e9,
        "gibps" => 8.0 * 1073741824.0,
        "tbps" => 8e12,
        "tibps" => 8.0 * 1099511627776.0,
        _ => return Err(err()),
    };
    let bits = n * mult;
    if bits >= 8.0 * u64::MAX as f64 {
        return Err(err());
    }
    if bits > 0.0 && bits < 8.0 {
        // tc would truncate it to 0 bytes/s, which a link reads as unlimited.
        return Err(UnitError {
            allowed: RATE_AT_LEAST_A_BYTE,
            ..err()
        });
    }
    Ok((bits / 8.0) as u64)
}

/// Prints a rate given in bytes/s the way tc does (`print_rate`, SI units):
/// 125000 → `1Mbit`, 187500 → `1500Kbit`, 12 → `96bit`.
/// The division is an integer one, as iproute2's (75836536 bit/s prints
/// `75836Kbit`).
pub fn print_rate(bytes_per_sec: u64) -> String {
    const UNITS: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut rate = bytes_per_sec.wrapping_shl(3);
    let mut i = 0;
    while i < UNITS.len() - 1 && rate >= 1000 && (rate.is_multiple_of(1000) || rate >= 1_000_000) {
        rate /= 1000;
        i += 1;
    }
    format!("{rate}{}bit", UNITS[i])
}

/// Parses a tc size into bytes (`get_size`): bare = bytes, `k`/`kb` ×1024,
/// `m`/`mb` ×2^20, `g`/`gb` ×2^30, `kbit` ×128, `mbit` ×2^17, `gbit` ×2^27.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError {
        what: "size",
        value: s.to_string(),
        allowed: SIZE_ALLOWED,
    };
    let (n, unit) = split_number(s).ok_or_else(err)?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1024.0,
        "m" | "mb" => 1048576.0,
        "g" | "gb" => 1073741824.0,
        "kbit" => 128.0,
        "mbit" => 131072.0,
        "gbit" => 134217728.0,
        _ => return Err(err()),
    };
    let v = n * mult;
    if v > u32::MAX as f64 * 4.0 {
        return Err(err());
    }
    Ok(v as u64)
}

/// Prints a size the way tc does (`sprint_size`): 10240 → `10Kb`,
/// 33554432 → `32Mb`, 1514 → `1514b`, 1536 → `1536b`.
pub fn sprint_size(sz: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    const GIB: u64 = 1024 * 1024 * 1024;
    let near = |unit: u64, slack: u64| {
        let rem = sz % unit;
        rem <= slack || unit - rem <= slack
    };
    if sz >= GIB && near(GIB, 1024) {
        format!("{}Gb", print_g((sz as f64 / GIB as f64).round()))
    } else if sz >= MIB && near(MIB, 1024) {
        format!("{}Mb", print_g((sz as f64 / MIB as f64).round()))
    } else if sz >= KIB && near(KIB, 16) {
        format!("{}Kb", print_g((sz as f64 / KIB as f64).round()))
    } else {
        format!("{sz}b")
    }
}

/// Parses a tc time into microseconds (`get_time`): bare number = µs.
pub fn parse_time(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError {
        what: "time",
        value: s.to_string(),
        allowed: TIME_ALLOWED,
    };
    let (n, unit) = split_number(s).ok_or_else(err)?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "us" | "usec" | "usecs" => 1.0,
        "ms" | "msec" | "msecs" => 1e3,
        "s" | "sec" | "secs" => 1e6,
        _ => return Err(err()),
    };
    let v = n * mult;
    if v > u32::MAX as f64 {
        return Err(err());
    }
    Ok(v.round() as u64)
}

/// Like `parse_time`, in nanoseconds (the config also accepts `ns`).
pub fn parse_time_ns(s: &str) -> Result<u64, UnitError> {
    if let Some(num) = s.strip_suffix("ns") {
        if let Some((n, "")) = split_number(num) {
            return Ok(n as u64);
        }
    }
    parse_time(s).map(|us| us * 1000)
}

/// Prints a time given in µs the way tc does (`sprint_time`):
/// 4999 → `5ms`, 99999 → `100ms`, 2 → `2us`, 10000000 → `10s`.
pub fn sprint_time(usecs: u64) -> String {
    let t = usecs as f64;
    if t >= 1e6 {
        format!("{}s", fmt_g3(t / 1e6))
    } else if t >= 1e3 {
        format!("{}ms", fmt_g3(t / 1e3))
    } else {
        format!("{usecs}us")
    }
}

/// Prints a time given in ns the way tc prints 64-bit times
/// (`sprint_time64`, lib/utils.c): `%.3g` seconds, milliseconds or
/// microseconds, else whole nanoseconds.
pub fn sprint_time64(ns: i64) -> String {
    let t = ns as f64;
    if ns >= 1_000_000_000 {
        format!("{}s", fmt_g3(t / 1e9))
    } else if ns >= 1_000_000 {
        format!("{}ms", fmt_g3(t / 1e6))
    } else if ns >= 1_000 {
        format!("{}us", fmt_g3(t / 1e3))
    } else {
        format!("{ns}ns")
    }
}

/// The longest prefix of `word` that reads as a decimal float (C's
/// `strtod`, without its hexadecimal floats), and the rest.
pub fn strtod(word: &str) -> Option<(f64, &str)> {
    (1..=word.len())
        .rev()
        .filter(|&i| word.is_char_boundary(i))
        .find_map(|i| word[..i].parse::<f64>().ok().map(|v| (v, &word[i..])))
}

/// Reads a 64-bit time in ns as tc does (`get_time64`, lib/utils.c): a
/// float, then `s`/`sec`/`secs`, `ms`/`msec`/`msecs`, `us`/`usec`/`usecs`,
/// `ns`/`nsec`/`nsecs` (any case) or nothing, which is nanoseconds; no
/// negative value; the product truncated into 64 bits.
pub fn get_time64(word: &str) -> Option<i64> {
    let (v, unit) = strtod(word)?;
    if v < 0.0 || v.is_infinite() {
        return None;
    }
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "ns" | "nsec" | "nsecs" => 1.0,
        "s" | "sec" | "secs" => 1e9,
        "ms" | "msec" | "msecs" => 1e6,
        "us" | "usec" | "usecs" => 1e3,
        _ => return None,
    };
    let ns = v * mult;
    // C's (s64) of a double: NaN and out of range are undefined there;
    // saturate here.
    Some(if ns.is_nan() { 0 } else { ns as i64 })
}

/// Prints a signed time in µs (fq_codel's `drop_next` may be negative).
pub fn sprint_time_signed(usecs: i64) -> String {
    if usecs < 0 {
        format!("-{}", sprint_time(usecs.unsigned_abs()))
    } else {
        sprint_time(usecs as u64)
    }
}

/// C's `%g` (6 significant digits): the sizes printer's, RED's
/// probability (tc/q_red.c prints max_P with `%lg`).
pub fn print_g(v: f64) -> String {
    fmt_sig(v, 6)
}

/// C's `%.3g`.
fn fmt_g3(v: f64) -> String {
    fmt_sig(v, 3)
}

/// C's `%.<sig>g`: the value rounded to `sig` significant digits, in
/// exponent form when its exponent (after rounding) is below -4 or at
/// least `sig`, else in fixed form; trailing zeros dropped either way.
fn fmt_sig(v: f64, sig: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sig = sig.max(1);
    let e = format!("{:.*e}", sig - 1, v);
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= sig as i32 {
        return format!(
            "{}e{}{:02}",
            trim_zeros(mantissa),
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    }
    let decimals = (sig as i32 - 1 - exp).max(0) as usize;
    trim_zeros(&format!("{v:.decimals$}"))
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// iproute2's ticks per µs (`/proc/net/psched`: 1000/64).
pub const TICKS_PER_USEC: f64 = 15.625;

/// `tc_core_time2tick`: whole µs to psched ticks. iproute2 passes the time
/// as an integer, so a fractional µs is cut off before the conversion, and
/// the ticks are truncated too.
fn tc_core_time2tick(us: u64) -> u64 {
    (us as f64 * TICKS_PER_USEC) as u64
}

/// `tc_core_tick2time`: psched ticks to whole µs (truncated), as tc prints
/// bursts and latencies.
pub fn tc_core_tick2time(ticks: u64) -> u64 {
    (ticks as f64 / TICKS_PER_USEC) as u64
}

/// `tc_calc_xmittime`: psched ticks (64 ns) to send `size` bytes at `rate`
/// bytes/s: the time in whole µs (truncated), then in ticks (truncated).
/// 1600 B at 30 Mbit/s = 426.67 µs → 426 µs → 6656 ticks, as iproute2 6.1
/// sends it (the kernel on this machine dumps `tokens: 6656`).
pub fn tc_calc_xmittime(rate_bps: u64, size: u64) -> u64 {
    if rate_bps == 0 {
        return 0;
    }
    tc_core_time2tick((1e6 * (size as f64 / rate_bps as f64)) as u64)
}

/// `tc_calc_xmitsize`: bytes sent in `ticks` psched ticks at `rate`: the
/// ticks in whole µs (truncated), then bytes (truncated). 6656 ticks at
/// 30 Mbit/s → 425 µs → 1593 B (`burst 1593b`, as tc prints it).
pub fn tc_calc_xmitsize(rate_bps: u64, ticks: u64) -> u64 {
    (rate_bps as f64 * tc_core_tick2time(ticks) as f64 / 1e6) as u64
}

/// Link-layer framing applied to lengths before rate accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkLayer {
    /// Ethernet: lengths count as they are (tc's `linklayer ethernet`, the
    /// default).
    #[default]
    Ethernet,
    /// ATM: lengths are rounded up to 48-byte cells of 53 bytes.
    Atm,
}

/// The kernel's `psched_ratecfg`: converts a length in bytes into the
/// transmission time in ns with a precomputed mult/shift, exactly as
/// `psched_l2t_ns` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PschedRate {
    /// The rate in bytes per second (`struct psched_ratecfg` `rate_bytes_ps`).
    pub rate_bytes_ps: u64,
    /// Multiplier of the length-to-time conversion: time_ns = (len * mult) >>
    /// shift (`psched_ratecfg` `mult`).
    pub mult: u32,
    /// Right shift of the length-to-time conversion (`psched_ratecfg` `shift`).
    pub shift: u8,
    /// Bytes added to every packet's length before the conversion, may be
    /// negative (tc's `overhead`, `psched_ratecfg` `overhead`).
    pub overhead: i32,
    /// Minimum packet length in bytes that is accounted, after the overhead
    /// (tc's `mpu`, `psched_ratecfg` `mpu`).
    pub mpu: u32,
    /// How lengths are framed before the conversion (tc's `linklayer`,
    /// `psched_ratecfg` `linklayer`).
    pub linklayer: LinkLayer,
}

impl PschedRate {
    /// `psched_ratecfg_precompute`.
    pub fn new(rate_bytes_ps: u64) -> Self {
        let mut mult: u32 = 0;
        let mut shift: u8 = 0;
        let mut factor: u64 = 1_000_000_000;
        while let Some(m) = factor.checked_div(rate_bytes_ps) {
            mult = m.min(u32::MAX as u64) as u32;
            if mult & (1 << 31) != 0 || factor & (1 << 63) != 0 {
                break;
            }
            factor <<= 1;
            shift += 1;
        }
        PschedRate {
            rate_bytes_ps,
            mult,
            shift,
            overhead: 0,
            mpu: 0,
            linklayer: LinkLayer::Ethernet,
        }
    }

    /// The same rate with tc's `overhead`, `mpu` and `linklayer` applied, as
    /// `psched_ratecfg_precompute` (net/sched/sch_generic.c) stores them from
    /// `struct tc_ratespec`.
    pub fn with_framing(mut self, overhead: i32, mpu: u32, linklayer: LinkLayer) -> Self {
        self.overhead = overhead;
        self.mpu = mpu;
        self.linklayer = linklayer;
        self
    }

    /// The bytes a frame of `len` occupies on the wire: `len + overhead`,
    /// at least `mpu`, in 53-byte cells per started 48 bytes on ATM.
    pub fn wire_len(&self, len: u64) -> u64 {
        let len = (len as i64 + self.overhead as i64)
            .max(self.mpu as i64)
            .max(0) as u64;
        match self.linklayer {
            LinkLayer::Atm => len.div_ceil(48) * 53,
            LinkLayer::Ethernet => len,
        }
    }

    /// `psched_l2t_ns`: nanoseconds to send `len` bytes.
    pub fn l2t_ns(&self, len: u64) -> u64 {
        ((self.wire_len(len) as u128 * self.mult as u128) >> self.shift) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_u1_to_u4_rates() {
        assert_eq!(parse_rate("1mbit").unwrap(), 125_000);
        assert_eq!(print_rate(125_000), "1Mbit");
        assert_eq!(parse_rate("100kbps").unwrap(), 100_000);
        assert_eq!(print_rate(100_000), "800Kbit");
        assert_eq!(parse_rate("1.5mbit").unwrap(), 187_500);
        assert_eq!(print_rate(187_500), "1500Kbit");
        assert_eq!(parse_rate("100").unwrap(), 12);
        assert_eq!(print_rate(12), "96bit");
    }

    #[test]
    fn rates_more() {
        assert_eq!(parse_rate("100Mbit").unwrap(), 12_500_000);
        assert_eq!(print_rate(12_500_000), "100Mbit");
        assert_eq!(parse_rate("1560mbit").unwrap(), 195_000_000);
        assert_eq!(print_rate(195_000_000), "1560Mbit");
        assert_eq!(parse_rate("1gbit").unwrap(), 125_000_000);
        assert_eq!(print_rate(125_000_000), "1Gbit");
        assert_eq!(parse_rate("1kibit").unwrap(), 128);
        assert_eq!(parse_rate("8bps").unwrap(), 8);
        assert_eq!(print_rate(1_250), "10Kbit");
        // Estimated rates are rarely round: iproute2 divides as integers.
        assert_eq!(print_rate(9_479_567), "75836Kbit");
        assert_eq!(print_rate(124_999), "999992bit");
        assert_eq!(print_rate(125_001), "1Mbit");
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("10 mbit").is_err());
        assert!(parse_rate("10furlongs").is_err());
        assert!(parse_rate("").is_err());
        // Under a byte per second: not silently 0 (= unlimited for a link).
        for tiny in ["7bit", "1bit", "0.000001bit", "0.5bps"] {
            let e = parse_rate(tiny).unwrap_err().to_string();
            assert!(e.contains("at least 8bit"), "{tiny}: {e}");
        }
        assert_eq!(parse_rate("8bit").unwrap(), 1);
        assert_eq!(parse_rate("0").unwrap(), 0);
    }

    #[test]
    fn vectors_u5_u6_u10_u11_sizes() {
        assert_eq!(parse_size("10kb").unwrap(), 10240);
        assert_eq!(sprint_size(10240), "10Kb");
        assert_eq!(parse_size("10k").unwrap(), 10240);
        assert_eq!(parse_size("10KB").unwrap(), 10240);
        assert_eq!(parse_size("32Mb").unwrap(), 33_554_432);
        assert_eq!(sprint_size(33_554_432), "32Mb");
        assert_eq!(sprint_size(1536), "1536b");
        assert_eq!(sprint_size(1514), "1514b");
        assert_eq!(sprint_size(4542), "4542b");
        assert_eq!(sprint_size(1_073_741_824), "1Gb");
        assert_eq!(parse_size("1mbit").unwrap(), 131072);
        assert_eq!(parse_size("20280b").unwrap(), 20280);
        assert_eq!(sprint_size(20280), "20280b");
        assert_eq!(sprint_size(16490), "16490b");
        assert!(parse_size("10q").is_err());
    }

    #[test]
    fn vectors_u7_to_u9_times() {
        assert_eq!(parse_time("5").unwrap(), 5);
        assert_eq!(sprint_time(5), "5us");
        assert_eq!(parse_time("5ms").unwrap(), 5000);
        assert_eq!(sprint_time(4999), "5ms");
        assert_eq!(parse_time("100ms").unwrap(), 100_000);
        assert_eq!(sprint_time(99_999), "100ms");
        assert_eq!(sprint_time(499), "499us");
        assert_eq!(sprint_time(23_400), "23.4ms");
        assert_eq!(sprint_time(10_000_000), "10s");
        assert_eq!(sprint_time(1_500_000), "1.5s");
        assert_eq!(sprint_time_signed(-1200), "-1.2ms");
        assert_eq!(parse_time_ns("250ns").unwrap(), 250);
        assert_eq!(parse_time_ns("20us").unwrap(), 20_000);
        assert!(parse_time("5 minutes").is_err());
    }

    #[test]
    fn psched_ratecfg_matches_kernel_example() {
        let r = PschedRate::new(125_000);
        assert_eq!(r.mult, 4_194_304_000);
        assert_eq!(r.shift, 19);
        assert_eq!(r.l2t_ns(1), 8000);
        assert_eq!(r.l2t_ns(10240), 81_920_000);
        let atm = PschedRate::new(125_000).with_framing(0, 0, LinkLayer::Atm);
        assert_eq!(atm.l2t_ns(49), 106 * 8000);
    }

    #[test]
    fn xmittime_ticks() {
        // HTB's default burst (tc/q_htb.c `htb_parse_class_opt`): 1600 B at
        // 1 Mbit = 12800 µs = 200000 ticks.
        assert_eq!(tc_calc_xmittime(125_000, 1600), 200_000);
        assert_eq!(tc_calc_xmittime(12_500_000, 1600), 2000);
        assert_eq!(tc_calc_xmitsize(125_000, 200_000), 1600);
        // At 30 Mbit, 426.67 µs is cut to 426 µs before the conversion:
        // 6656 ticks, not the 6667 a rounded-up division gives. Checked on this
        // machine (kernel 6.18, iproute2 6.1): `class add ... htb rate 30mbit
        // ceil 100mbit` dumps `tokens: 6656` and prints `burst 1593b`
        // (6656 ticks → 425 µs → 1593.75 B) next to `cburst 1600b`.
        assert_eq!(tc_calc_xmittime(3_750_000, 1600), 6656);
        assert_eq!(tc_calc_xmitsize(3_750_000, 6656), 1593);
        assert_eq!(tc_calc_xmitsize(12_500_000, 2000), 1600);
        assert_eq!(tc_core_tick2time(6656), 425);
        assert_eq!(tc_calc_xmittime(0, 1600), 0);
        // Saturates instead of wrapping (f64 → u64 casts clamp).
        assert_eq!(tc_calc_xmittime(1, u64::MAX), u64::MAX);
    }
}
