#!/usr/bin/env python3
"""Criterion benchmarks of two checkouts, alternated in one run.

usage: [FILTER=REGEX] scripts/bench-compare.py [--write] OLD_CHECKOUT NEW_CHECKOUT [ROUNDS] [BENCH ...]

Builds `cargo bench --no-run` for each BENCH (default: qdisc sim) in both
checkouts, then runs the two builds' bench executables in turn, ROUNDS times
(default 3: old, new, old, new, ...), each with a short warm-up and
measurement, and prints a Markdown table: per case the median over the rounds
of criterion's point estimate for the old and the new build and their ratio
new/old. Alternating keeps a shared, noisy machine's drift out of the ratio.
FILTER (criterion's benchmark filter) limits the cases run.

--write keeps the raw results (every round's figure per case, with the date,
command, commits and machine) in bench/results/compare/DATE.json and
regenerates BENCHMARKS.md's comparison table from them
(scripts/bench-table.py).
"""

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

UNITS = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
TIME = re.compile(r"time:\s+\[\s*([\d.]+) ([^\d\]]+?)\s*([\d.]+) ([^\d\]]+?)\s*([\d.]+) ([^\]]+)\]")


def bench_executables(checkout, bench):
    """Builds `bench` and returns the path of its executable."""
    out = subprocess.run(
        ["cargo", "bench", "--no-run", "--bench", bench, "--message-format=json"],
        cwd=checkout, check=True, capture_output=True, text=True,
    ).stdout
    for line in out.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and msg["target"]["name"] == bench and "bench" in msg["target"]["kind"]:
            return msg["executable"]
    sys.exit(f"{checkout}: no executable for bench {bench}")


def run(exe, checkout):
    """One run of a bench executable: {case: ns}."""
    out = subprocess.run(
        [exe, "--bench", "--warm-up-time", "1", "--measurement-time", "2", "--noplot"]
        + ([os.environ["FILTER"]] if os.environ.get("FILTER") else []),
        cwd=checkout, check=True, capture_output=True, text=True,
    ).stdout
    cases, last = {}, None
    for line in out.splitlines():
        if "time:" in line:
            name = line.split("time:")[0].strip() or last
            m = TIME.search(line)
            if m and name:
                cases[name] = float(m.group(3)) * UNITS[m.group(4).split()[0]]
        elif line.strip() and not line.startswith(" "):
            last = line.strip()
    return cases


def commit(checkout):
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout,
                          capture_output=True, text=True).stdout.strip() or str(checkout)


def write(old, new, rounds, times, argv):
    """Stores the raw results in bench/results/compare/ and regenerates the table."""
    root = Path(__file__).resolve().parent.parent
    now = time.gmtime()
    run = {
        "kind": "compare",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", now),
        "command": " ".join(["scripts/bench-compare.py"] + argv),
        "commit": commit(new),
        "old": commit(old),
        "new": commit(new),
        "rounds": rounds,
        "machine": {"nproc": os.cpu_count(), "kernel": os.uname().release,
                    "load average at the end": " ".join(f"{x:.2f}" for x in os.getloadavg())},
        "times": times,
    }
    out = root / "bench" / "results" / "compare" / time.strftime("%Y-%m-%dT%H%MZ.json", now)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n")
    subprocess.run([sys.executable, str(root / "scripts" / "bench-table.py")], check=True)
    print(f"bench-compare: raw results in {out}", file=sys.stderr)


def main():
    argv = sys.argv[1:]
    keep = "--write" in argv
    args = [a for a in argv if a != "--write"]
    if len(args) < 2:
        sys.exit(__doc__)
    old, new = Path(args[0]).resolve(), Path(args[1]).resolve()
    rounds = int(args[2]) if len(args) > 2 else 3
    benches = args[3:] or ["qdisc", "sim"]
    exes = {(side, b): bench_executables(path, b)
            for side, path in (("old", old), ("new", new)) for b in benches}
    times = {}
    for _ in range(rounds):
        for b in benches:
            for side, path in (("old", old), ("new", new)):
                for case, ns in run(exes[(side, b)], path).items():
                    times.setdefault(case, {"old": [], "new": []})[side].append(ns)
    print("| case | old (median) | new (median) | new/old |")
    print("|---|---:|---:|---:|")
    for case, t in times.items():
        if not t["old"] or not t["new"]:
            continue
        o, n = statistics.median(t["old"]), statistics.median(t["new"])
        print(f"| {case} | {o / 1e3:,.1f} µs | {n / 1e3:,.1f} µs | {n / o:.3f} |")
    if keep:
        write(old, new, rounds, times, argv)


if __name__ == "__main__":
    main()
