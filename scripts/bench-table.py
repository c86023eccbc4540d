#!/usr/bin/env python3
"""BENCHMARKS.md's tables, regenerated from the raw results in bench/results/.

usage:
  scripts/bench-table.py                     # regenerate every table of BENCHMARKS.md in place
  scripts/bench-table.py --print KIND        # print the table of KIND's latest run
  scripts/bench-table.py --record-live TSV META.json
                                             # (bench-live.sh) store a run, print its table

Each benchmark script keeps its raw results as one JSON file per run in
bench/results/KIND/ (KIND: live, compare, kernel, tui, demo), named by the
run's UTC time, with the run's date, command, commit and machine. This
script renders the latest run of each KIND between the markers
`<!-- KIND:begin -->` and `<!-- KIND:end -->` of BENCHMARKS.md, so a rerun of
a benchmark updates its table in place; older runs stay as data files and in
git history.
"""

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
BENCHMARKS = ROOT / "BENCHMARKS.md"
KINDS = ["live", "compare", "demo", "kernel", "tui"]

# bench-live.sh: the paths (columns) and measurements (rows). A row's cells
# are the rounds of R["PATH/KEY/ROUND"]; bloatbox paths also give the ratio
# to the bare forwarder of the same round.
LIVE_PATHS = [
    ("veth", "veth pair (TSO/GSO/GRO off)"),
    ("bare", "bare forwarder"),
    ("bare2", "bare forwarder, --queues 2"),
    ("nooff", "bloatbox, offload off"),
    ("off", "bloatbox, offload on"),
    ("wnooff", "bloatbox --wire, frame by frame"),
    ("woff", "bloatbox --wire, offload on"),
    ("wold", "bloatbox --wire, offload on, one frame per syscall (BLOATBOX_WIRE_RING=off)"),
    ("wbr", "kernel bridge in the wire's shape, frame by frame"),
]
LIVE_BEFORE_PATHS = [
    ("before-nooff", "bloatbox at {before}, offload off"),
    ("before-off", "bloatbox at {before}, offload on"),
]
RATIO_PATHS = {"nooff", "off", "wnooff", "woff", "wold", "before-nooff", "before-off"}
LIVE_ROWS = [
    ("1 TCP flow (cubic), Gbit/s", "tcp1"),
    ("4 TCP flows (cubic), Gbit/s", "tcp4"),
    ("UDP 1472-byte payload as fast as iperf3 sends, Gbit/s of 1514-byte frames received", "udpf"),
    ("UDP 1472-byte payload at 400 Mbit/s, % lost (iperf3)", "loss400"),
    ("UDP 1472-byte payload at 400 Mbit/s, sending device TX drops, % of sent", "drop400"),
    ("UDP 1472-byte payload at 800 Mbit/s, % lost (iperf3)", "loss800"),
    ("UDP 1472-byte payload at 800 Mbit/s, sending device TX drops, % of sent", "drop800"),
    ("UDP 64-byte payload from examples/pps_blast.rs (sendmmsg, no pacing), kpps sent", "bkppssent"),
    ("UDP 64-byte payload from pps_blast, kpps at the receiving interface (rx_packets; what the path delivered)", "bkpps"),
    ("UDP 64-byte payload from pps_blast: bloatbox's datapath CPU per frame delivered, ns", "bdpcpu"),
    ("idle ping RTT median, ms", "rtt50"),
    ("idle ping RTT p99, ms", "rtt99"),
    ("idle ping RTT median added over veth, µs", "added"),
]
# Figures of bloatbox alone, offload on: path "bb" (this checkout), "bb4" (BEFORE).
LIVE_BB_ROWS = [
    ("idle ping RTT median with busy_poll_us = 20000, ms", "busyrtt"),
    ("datapath CPU while pinging with busy_poll_us = 20000, % of one core (all datapath threads together)", "busycpu"),
    ("12 Mbit/s: 1514-byte frame spacing p10, µs (ideal {ideal12})", "s12p10"),
    ("12 Mbit/s: 1514-byte frame spacing p50, µs (ideal {ideal12})", "s12p50"),
    ("12 Mbit/s: 1514-byte frame spacing p90, µs (ideal {ideal12})", "s12p90"),
    ("12 Mbit/s: delivered, Mbit/s (tcpdump)", "s12rate"),
    ("12 Mbit/s: wake-up lateness p99, µs", "s12l99"),
    ("12 Mbit/s: datapath CPU over the 3 s of traffic, % of one core (both threads)", "s12cpu"),
    ("12 Mbit/s: spacing spread p90 − p10, µs", "s12spread"),
    ("reference: the kernel's HTB at 12 Mbit/s on a veth pair, same traffic: spread p90 − p10, µs", "s12htbspread"),
    ("12 Mbit/s: spread / the kernel HTB's", "s12spreadx"),
    ("1.2 Gbit/s: 1514-byte frame spacing p50, µs (ideal {ideal1g})", "s1gp50"),
    ("1.2 Gbit/s: delivered, Mbit/s (tcpdump)", "s1grate"),
    ("1.2 Gbit/s: longest run of back-to-back frames (gap < ideal/2)", "s1grun"),
    ("1.2 Gbit/s: runs longer than 4 frames", "s1gruns4"),
    ("1.2 Gbit/s: wake-up lateness p99, µs", "s1gl99"),
    ("1.2 Gbit/s: release lateness p99, µs (write time − link delivery time)", "s1gr99"),
    ("1.2 Gbit/s: datapath CPU over the 3 s of traffic, % of one core (both threads)", "s1gcpu"),
    ("seed 4 TBF (1560mbit burst 20280b latency 5ms, 10gbit, 5 ms each way): 1 cubic flow goodput, Mbit/s", "tbf"),
    ("seed 4 TBF: goodput / 1560 Mbit/s", "tbfshare"),
    ("seed 4 TBF with GRO at the receiving TAP (tap.gro = true, as configs/tbf-1560mbit.toml): 1 cubic flow goodput, Mbit/s", "tbfgro"),
    ("seed 4 TBF with GRO: goodput / 1560 Mbit/s", "tbfgroshare"),
    ("reference: seed 4's TBF in the kernel instead (on a router's egress veth one hop after bloatbox's 10gbit 5 ms link with GRO, which has no qdisc): 1 cubic flow goodput, Mbit/s", "ktbf"),
    ("reference: the kernel's TBF: goodput / 1560 Mbit/s", "ktbfshare"),
    ("irtt (1 ms, 172-byte packets) through the idle 100 Mbit/s link, 5 ms each way: RTT median, ms (ideal 10.034)", "irttrtt"),
    ("reference: irtt over a veth pair in the same step: RTT median, ms", "irttvrtt"),
    ("irtt: excess per direction, µs ((RTT − ideal − veth's RTT) / 2)", "irttx"),
    ("irtt: one-way excess left to right, µs (median minus delay, serialization and the veth's)", "irttup"),
    ("irtt: one-way excess right to left, µs", "irttdown"),
    ("irtt: IPDV (round trip) median, µs", "irttipdv"),
    ("reference: irtt over the veth pair: IPDV median, µs", "irttvipdv"),
    ("irtt: IPDV median / the veth's", "irttipdvx"),
    ("reference: irtt through the bare forwarder (unshaped) in the same step: excess per direction over the veth's, µs ((RTT − veth's RTT) / 2)", "irttbx"),
    ("reference: the bare forwarder's irtt IPDV median / the veth's", "irttbipdvx"),
]


def latest(kind):
    """The latest run of KIND (files are named by UTC time), or None."""
    files = sorted((RESULTS / kind).glob("*.json"))
    return json.loads(files[-1].read_text()) if files else None


def header(run, legend=""):
    """Date, command, commit and machine of a run, as Markdown; LEGEND, a
    sentence on how to read the table, follows the machine."""
    m = run.get("machine", {})
    machine = ", ".join(f"{k} {v}" for k, v in m.items())
    lines = [
        f"Run of {run['date']} at commit {run['commit']}: `{run['command']}`",
        "",
        f"Machine: {machine}." + (f" {legend}" if legend else ""),
    ]
    if run.get("note"):
        lines += ["", run["note"]]
    return lines


def ratio(a, b):
    try:
        a, b = float(a), float(b)
    except ValueError:
        return "-"
    return "-" if b == 0 else f"{a / b:.2f}"


def live_table(run):
    r, rounds, before = run["R"], run["rounds"], run.get("before")

    def cell(path, key):
        vals, ratios = [], []
        for n in range(1, rounds + 1):
            v = r.get(f"{path}/{key}/{n}")
            if v in (None, ""):
                continue
            vals.append(v)
            if path in RATIO_PATHS:
                ratios.append(ratio(v, r.get(f"bare/{key}/{n}", "-")))
        text = ", ".join(vals)
        # No ratio where the bare forwarder has no such figure (bloatbox's
        # own datapath CPU).
        if any(x != "-" for x in ratios):
            text += f" ({', '.join(ratios)} of bare)"
        return text

    paths = LIVE_PATHS + ([(p, t.format(before=before)) for p, t in LIVE_BEFORE_PATHS] if before else [])
    # Columns past bloatbox's own (which LIVE_BB_ROWS' cells line up with)
    # and rows appear only where the run measured them (older runs lack
    # the later ones).
    measured = {k.split("/")[0] for k in r} | {k.split("/")[1] for k in r if k.count("/") == 2}
    paths = [(p, t) for i, (p, t) in enumerate(paths) if i < 5 or p in measured]
    rows = [(label, key) for label, key in LIVE_ROWS if key in measured]
    # The settings (DUR, ROUNDS, RT, SPIN) are in the command.
    out = header(run, "Each cell: the rounds in order; a bloatbox cell also gives its "
                 "ratio to the bare forwarder of the same round.") + [
        "",
        "| measurement | " + " | ".join(t for _, t in paths) + " |",
        "|" + "---|" * (len(paths) + 1),
    ]
    for label, key in rows:
        out.append(f"| {label} | " + " | ".join(cell(p, key) for p, _ in paths) + " |")
    for label, key in LIVE_BB_ROWS:
        if key not in measured:
            continue
        label = label.format(ideal12=run["ideal12"], ideal1g=run["ideal1g"])
        cells = ["", "", "", "", cell("bb", key)] + (["", cell("bb4", key)] if before else [])
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out + wait_table(run)

# bench-live.sh WAIT=1: the wait policies (columns) and their figures (rows),
# per link rate.
WAIT_POLICIES = [
    ("wsleep", "sleep to each deadline (spin_budget_pct = 0)"),
    ("wlearned", "learned spin (default)"),
    ("wpmqos", "learned spin and pm_qos_us = 0 (idle vCPUs poll)"),
    ("wspin300", "spin_us = 300"),
]
WAIT_RATES = [("w12", "12 Mbit/s", "ideal12"), ("w100", "100 Mbit/s", "ideal100"), ("w1g", "1.2 Gbit/s", "ideal1g")]
WAIT_ROWS = [
    ("spacing p10, µs (ideal {ideal})", "p10"),
    ("spacing p50, µs", "p50"),
    ("spacing p90, µs", "p90"),
    ("delivered, Mbit/s (tcpdump)", "rate"),
    ("runs longer than 4 back-to-back frames", "runs4"),
    ("wake-up lateness p99, µs", "l99"),
    ("release lateness p99, µs", "r99"),
    ("datapath CPU over the 3 s of traffic, % of one core", "cpu"),
]


def wait_table(run):
    """The WAIT=1 rows of a live run, or nothing."""
    r, rounds = run["R"], run["rounds"]
    if not any(k.startswith("wsleep/") for k in r):
        return []
    out = [
        "",
        "Wait policies (full-size UDP offered above the link's rate; each cell: the rounds in order):",
        "",
        "| link | measurement | " + " | ".join(t for _, t in WAIT_POLICIES) + " |",
        "|" + "---|" * (len(WAIT_POLICIES) + 2),
    ]
    for key, rate, ideal in WAIT_RATES:
        for label, fig in WAIT_ROWS:
            label = label.format(ideal=run.get(ideal, "-"))
            cells = [
                ", ".join(v for n in range(1, rounds + 1) if (v := r.get(f"{p}/{key}{fig}/{n}")) not in (None, ""))
                for p, _ in WAIT_POLICIES
            ]
            out.append(f"| {rate} | {label} | " + " | ".join(cells) + " |")
    return out


def compare_table(run):
    out = header(run) + [
        "",
        f"OLD = {run['old']}, NEW = {run['new']}; per case the median over the "
        f"rounds of criterion's point estimate (qdisc: CPU time per batch of 4096 "
        f"frames; sim: wall time per simulated run).",
        "",
        "| case | old (median) | new (median) | new/old |",
        "|---|---:|---:|---:|",
    ]
    for case, t in run["times"].items():
        if not t["old"] or not t["new"]:
            continue
        o, n = statistics.median(t["old"]), statistics.median(t["new"])
        out.append(f"| {case} | {o / 1e3:,.1f} µs | {n / 1e3:,.1f} µs | {n / o:.3f} |")
    return out


def rows_table(run):
    """A run whose data is a header and rows (kernel, tui)."""
    cols = run["columns"]
    out = header(run) + ["", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in run["rows"]:
        out.append("| " + " | ".join(str(c) for c in row) + " |")
    return out


def demo_table(run):
    return header(run) + ["", "```", *run["text"].rstrip("\n").splitlines(), "```"]


RENDER = {"live": live_table, "compare": compare_table, "kernel": rows_table,
          "tui": rows_table, "demo": demo_table}


def table(kind):
    run = latest(kind)
    if run is None:
        return [f"(no run of {kind} in bench/results/{kind}/ yet)"]
    return RENDER[kind](run)


def update(path=BENCHMARKS):
    text = path.read_text()
    for kind in KINDS:
        begin, end = f"<!-- {kind}:begin -->", f"<!-- {kind}:end -->"
        if begin not in text or end not in text:
            continue
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + begin + "\n" + "\n".join(table(kind)) + "\n" + end + tail
    path.write_text(text)


def record_live(tsv, meta):
    """Stores a bench-live.sh run (R as KEY<TAB>VALUE lines, META as JSON)."""
    run = json.loads(Path(meta).read_text())
    run["R"] = dict(line.rstrip("\n").split("\t", 1)
                    for line in Path(tsv).read_text().splitlines() if "\t" in line)
    stamp = run["date"].replace(" UTC", "Z").replace(" ", "T").replace(":", "")
    out = RESULTS / "live" / f"{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(run, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    print("\n".join(live_table(run)))
    print(f"bench-table: raw results in {out.relative_to(ROOT)}", file=sys.stderr)


def main():
    args = sys.argv[1:]
    if not args:
        update()
    elif args[0] == "--print" and len(args) == 2 and args[1] in KINDS:
        print("\n".join(table(args[1])))
    elif args[0] == "--record-live" and len(args) == 3:
        record_live(args[1], args[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
