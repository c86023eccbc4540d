//! `tc [-s] [-d] [-j [-p]] qdisc show` and `class show`, printed from
//! `QdiscDump` snapshots exactly as iproute2 lays them out (tc/tc_qdisc.c
//! `print_qdisc`, tc/tc_class.c `print_class`, tc/tc_util.c
//! `print_tcstats_attr`):
//!
//! ```text
//! qdisc fq_codel 8001: root refcnt 2 limit 10240p flows 1024 ... drop_batch 64
//!  Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
//!  backlog 0b 0p requeues 0
//!   maxpacket 0 drop_overlimit 0 new_flow_count 0 ecn_mark 0
//! ```
//!
//! Each discipline renders its own option text and `super::xstats` its
//! extended statistics; this module adds the head (`qdisc KIND H: [dev X ]root|parent P [refcnt N ]`), the trailing
//! space iproute2's option printer leaves (every kind but the fifos and htb;
//! RED's printer writes its own, after its plain text only),
//! the generic counter lines and the JSON objects of `-j` (keys as iproute2:
//! `kind handle root|parent refcnt options bytes packets drops overlimits
//! requeues backlog qlen`, then the xstats keys at the same level).
//!
//! A qdisc or class with a rate estimator (`estimator INTERVAL
//! TIME_CONSTANT`) has its reading between the counters and the backlog,
//! ` rate 75836Kbit 6315pps backlog 0b 0p requeues 0` (`-j`: `rate` in
//! bytes/s and `pps`, after `requeues`), as `print_tcstats2_attr` prints
//! `TCA_STATS_RATE_EST`.
//!
//! With `-s`, an empty line follows every HTB class (`super::xstats`:
//! iproute2's `htb_print_xstats` ends with its own newline).
//!
//! Order: the kernel dumps the root, then every other qdisc of the device as
//! it sits in the device's qdisc hash: 16 buckets by `hash_32(handle, 4)`,
//! newest first within a bucket. Creation order is approximated by tree
//! pre-order, which gives the familiar `parent :4 ... parent :1` under mq.
//! Default children with handle 0 (HTB/TBF/QFQ leaves nobody attached a qdisc
//! to) are invisible unless `invisible` is asked for; mq's are visible.
use crate::dir::Dir;

use super::command::{Flags, Object, TcCommand};
use super::syntax::{self, JsonObj, Printed};
use super::xstats;
use super::TcError;
use crate::handle::qdisc_handle;
pub use crate::handle::tc_handle;
use crate::qdisc::TC_H_ROOT;
use crate::qdisc::{tc_h_major, ClassDump, Handle, QdiscDump, QdiscStats};
use crate::units::{print_rate, sprint_size};
use serde::ser::Serialize;
use serde_json::json;
use std::fmt::Write;

/// One device's tree, as the printer needs it.
pub struct DevDump<'a> {
    /// The device (`left` or `right`).
    pub dev: Dir,
    /// The root qdisc of the device's tree.
    pub root: &'a QdiscDump,
    /// TX queues of the device (a non-mq root is referenced once per queue
    /// plus once by the device: `refcnt` = queues + 1).
    pub tx_queues: u16,
}

/// Renders a `show` command over the given devices (`cmd.dev`, when set,
/// selects one; without it every device is listed with `dev X`).
pub fn render(cmd: &TcCommand, devs: &[DevDump<'_>]) -> Result<String, TcError> {
    let devs: Vec<&DevDump<'_>> = devs
        .iter()
        .filter(|d| cmd.dev.is_none_or(|want| want == d.dev))
        .collect();
    let name_dev = cmd.dev.is_none();
    let mut text = String::new();
    let mut json = Vec::new();
    for d in devs {
        let dev = name_dev.then_some(d.dev);
        match cmd.object {
            Object::Qdisc => {
                for q in dump_order(d.root, cmd.invisible) {
                    if cmd.parent.is_some_and(|p| p != q.parent)
                        || cmd.handle.is_some_and(|h| h != q.handle)
                    {
                        continue;
                    }
                    let refcnt = refcnt(q, d);
                    if cmd.flags.json {
                        json.push(qdisc_json(q, dev, refcnt, cmd.flags));
                    } else {
                        qdisc_text(&mut text, q, dev, refcnt, cmd.flags);
                    }
                }
            }
            Object::Class => {
                for q in dump_order(d.root, false) {
                    if cmd
                        .parent
                        .is_some_and(|p| p != TC_H_ROOT && p & 0xFFFF_0000 != q.handle)
                    {
                        continue;
                    }
                    for c in &q.classes {
                        if cmd.handle.is_some_and(|h| h != c.classid) {
                            continue;
                        }
                        if cmd.flags.json {
                            json.push(class_json(c, dev, cmd.flags));
                        } else {
                            class_text(&mut text, c, dev, cmd.flags);
                        }
                    }
                }
            }
            Object::Filter => {
                return Err(TcError::new(
                    "Error: \"tc filter show\" is not supported by bloatbox yet",
                ))
            }
        }
    }
    if cmd.flags.json {
        text = to_json(&json, cmd.flags.pretty);
        text.push('\n');
    }
    Ok(text)
}

/// The root first, then the rest in qdisc-hash order (see the module doc).
fn dump_order(root: &QdiscDump, invisible: bool) -> Vec<&QdiscDump> {
    fn collect<'a>(q: &'a QdiscDump, invisible: bool, out: &mut Vec<&'a QdiscDump>) {
        for c in &q.children {
            // The built-in noop qdisc is never listed.
            let builtin = c.kind == crate::qdisc::noop::KIND;
            if !builtin && (invisible || c.handle != 0 || q.kind == "mq") {
                out.push(c);
            }
            collect(c, invisible, out);
        }
    }
    let mut rest = Vec::new();
    collect(root, invisible, &mut rest);
    rest.reverse();
    rest.sort_by_key(|q| hash_bucket(q.handle));
    std::iter::once(root).chain(rest).collect()
}

/// `hash_32(handle, 4)`: the bucket of the device's 16-bucket qdisc hash.
fn hash_bucket(handle: Handle) -> u32 {
    handle.wrapping_mul(0x61C8_8647) >> 28
}

/// `tcm_info`: a root is held by the device and by each TX queue it serves
/// (mq by the device only); children once.
fn refcnt(q: &QdiscDump, d: &DevDump<'_>) -> u32 {
    if std::ptr::eq(q, d.root) && q.kind != "mq" {
        d.tx_queues as u32 + 1
    } else {
        1
    }
}

/// Whether `kind`'s option printer leaves a trailing space
/// (`Syntax::trailing_space`).
fn options_end_with_space(kind: &str) -> bool {
    syntax::syntax(kind).is_some_and(|s| s.trailing_space)
}

/// `q`'s options as its kind's printer writes them (nothing for a kind
/// without a syntax).
pub fn qdisc_options(q: &QdiscDump) -> Printed {
    syntax::syntax(&q.kind)
        .and_then(|s| (s.print)(&q.options))
        .unwrap_or_default()
}

/// `c`'s options as its kind's printer writes them.
pub fn class_options(c: &ClassDump) -> Printed {
    syntax::syntax(&c.kind)
        .and_then(|s| (s.print_class)(&c.options))
        .unwrap_or_default()
}

/// The text `flags` select (`-d`: the detail), trimmed, and whether the
/// printer itself ended it with a space (RED's plain text does, its `-d`
/// text does not: a kind-wide `Syntax::trailing_space` cannot say it).
fn options(p: &Printed, flags: Flags) -> (&str, bool) {
    let o = if flags.details && !p.detail.is_empty() {
        &p.detail
    } else {
        &p.plain
    };
    let trimmed = o.trim_end();
    (trimmed, trimmed.len() != o.len())
}

fn qdisc_text(out: &mut String, q: &QdiscDump, dev: Option<Dir>, refcnt: u32, flags: Flags) {
    let _ = write!(out, "qdisc {} {:x}: ", q.kind, tc_h_major(q.handle));
    if let Some(d) = dev {
        let _ = write!(out, "dev {} ", d.dev());
    }
    if q.parent == TC_H_ROOT {
        out.push_str("root ");
    } else if q.parent != 0 {
        let _ = write!(out, "parent {} ", tc_handle(q.parent));
    }
    if refcnt != 1 {
        let _ = write!(out, "refcnt {refcnt} ");
    }
    let printed = qdisc_options(q);
    let (opts, own_space) = options(&printed, flags);
    if !opts.is_empty() {
        out.push_str(opts);
        if own_space || options_end_with_space(&q.kind) {
            out.push(' ');
        }
    }
    // The printer's own `-s` lines (they end without a space).
    if flags.stats {
        out.push_str(&printed.stats);
    }
    out.push('\n');
    if flags.stats {
        stats_lines(out, Some(&q.stats), &q.stats);
        if let Some(x) = &q.xstats {
            xstats::write_text(out, &q.kind, x);
        }
    }
}

/// Whether the kernel dumps counters for a class of `kind`
/// (`KindEntry::class_stats`; a kind of no table does).
fn class_dumps_stats(kind: &str) -> bool {
    syntax::lookup(kind).is_none_or(|k| k.class_stats)
}

fn class_text(out: &mut String, c: &ClassDump, dev: Option<Dir>, flags: Flags) {
    let _ = write!(out, "class {} {} ", c.kind, tc_handle(c.classid));
    if let Some(d) = dev {
        let _ = write!(out, "dev {} ", d.dev());
    }
    if c.parent == TC_H_ROOT {
        out.push_str("root ");
    } else {
        let _ = write!(out, "parent {} ", tc_handle(c.parent));
    }
    if let Some(leaf) = c.leaf.filter(|&l| l != 0) {
        let _ = write!(out, "leaf {:x}: ", tc_h_major(leaf));
    }
    let printed = class_options(c);
    let (opts, _) = options(&printed, flags);
    if !opts.is_empty() {
        out.push_str(opts);
        out.push(' ');
    }
    out.push('\n');
    if flags.stats && !class_dumps_stats(&c.kind) {
        // An empty stats nest: iproute2's print_class prints only the
        // newline after it.
        out.push('\n');
    } else if flags.stats {
        stats_lines(out, c.stats.as_ref(), c.stats.as_ref().unwrap_or(&c.queue));
        if let Some(x) = &c.xstats {
            xstats::write_text(out, &c.kind, x);
        }
    }
}

/// The Sent (or bare dropped) line and the backlog line, as
/// `print_tcstats2_attr` prints them with prefix " ": with a rate
/// estimator (`TCA_STATS_RATE_EST`) the backlog follows its `rate ...bit
/// ...pps` on the same line.
fn stats_lines(out: &mut String, basic: Option<&QdiscStats>, q: &QdiscStats) {
    if let Some(b) = basic {
        let _ = write!(out, " Sent {} bytes {} pkt", b.bytes, b.packets);
    }
    let _ = writeln!(
        out,
        " (dropped {}, overlimits {} requeues {}) ",
        q.drops, q.overlimits, q.requeues
    );
    if let Some(r) = basic.and_then(|b| b.rate_est) {
        let _ = write!(out, " rate {} {}pps", print_rate(r.bps), r.pps);
    }
    let _ = writeln!(
        out,
        " backlog {} {}p requeues {}",
        sprint_size(q.backlog),
        q.qlen,
        q.requeues
    );
}

/// `objs` as tc -j prints them (`-p`: pretty, indented by four).
pub fn to_json(objs: &[JsonObj], pretty: bool) -> String {
    let mut buf = Vec::new();
    let res = if pretty {
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        objs.serialize(&mut ser)
    } else {
        objs.serialize(&mut serde_json::Serializer::new(&mut buf))
    };
    match res {
        Ok(()) => String::from_utf8_lossy(&buf).into_owned(),
        Err(e) => format!("[] /* JSON error: {e} */"),
    }
}

fn head_json(o: &mut JsonObj, dev: Option<Dir>, parent: Handle) {
    if let Some(d) = dev {
        o.insert("dev", json!(d.dev()));
    }
    if parent == TC_H_ROOT {
        o.insert("root", json!(true));
    } else if parent != 0 {
        o.insert("parent", json!(tc_handle(parent)));
    }
}

fn stats_json(o: &mut JsonObj, basic: Option<&QdiscStats>, q: &QdiscStats) {
    if let Some(b) = basic {
        o.insert("bytes", json!(b.bytes));
        o.insert("packets", json!(b.packets));
    }
    o.insert("drops", json!(q.drops));
    o.insert("overlimits", json!(q.overlimits));
    o.insert("requeues", json!(q.requeues));
    if let Some(r) = basic.and_then(|b| b.rate_est) {
        // print_tcstats2_attr: "rate" in bytes/s, as the kernel sends it.
        o.insert("rate", json!(r.bps));
        o.insert("pps", json!(r.pps));
    }
    o.insert("backlog", json!(q.backlog));
    o.insert("qlen", json!(q.qlen));
}

fn qdisc_json(q: &QdiscDump, dev: Option<Dir>, refcnt: u32, flags: Flags) -> JsonObj {
    let mut o = JsonObj::new();
    o.insert("kind", json!(q.kind));
    o.insert("handle", json!(qdisc_handle(q.handle)));
    head_json(&mut o, dev, q.parent);
    if refcnt != 1 {
        o.insert("refcnt", json!(refcnt));
    }
    let printed = qdisc_options(q);
    let extra = printed.stats_json.clone();
    let mut options = printed.json_for(flags.details);
    if flags.stats {
        options.extend(extra);
    }
    o.insert_obj("options", options);
    if flags.stats {
        stats_json(&mut o, Some(&q.stats), &q.stats);
        if let Some(x) = &q.xstats {
            o.extend(xstats::json(&q.kind, x));
        }
    }
    o
}

fn class_json(c: &ClassDump, dev: Option<Dir>, flags: Flags) -> JsonObj {
    let mut o = JsonObj::new();
    o.insert("class", json!(c.kind));
    o.insert("handle", json!(tc_handle(c.classid)));
    head_json(&mut o, dev, c.parent);
    if let Some(leaf) = c.leaf.filter(|&l| l != 0) {
        o.insert("leaf", json!(format!("{:#x}", tc_h_major(leaf))));
    }
    o.insert_obj("options", class_options(c).json_for(flags.details));
    if flags.stats && class_dumps_stats(&c.kind) {
        stats_json(
            &mut o,
            c.stats.as_ref(),
            c.stats.as_ref().unwrap_or(&c.queue),
        );
        if let Some(x) = &c.xstats {
            o.extend(xstats::json(&c.kind, x));
        }
    }
    o
}

#[cfg(test)]
#[path = "show_tests.rs"]
mod tests;
