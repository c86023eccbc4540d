#!/usr/bin/env python3
"""Criterion benchmarks of two checkouts, alternated in one run.

usage: [FILTER=REGEX] scripts/bench-compare.py OLD_CHECKOUT NEW_CHECKOUT [ROUNDS] [BENCH ...]

Builds `cargo bench --no-run` for each BENCH (default: qdisc sim) in both
checkouts, then runs the two builds' bench executables in turn, ROUNDS times
(default 3: old, new, old, new, ...), each with a short warm-up and
measurement, and prints a Markdown table: per case the median over the rounds
of criterion's point estimate for the old and the new build and their ratio
new/old. Alternating keeps a shared, noisy machine's drift out of the ratio.
FILTER (criterion's benchmark filter) limits the cases run.
"""

import json
import os
import re
import statistics
import subprocess
import sys
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


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    old, new = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    benches = sys.argv[4:] or ["qdisc", "sim"]
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


if __name__ == "__main__":
    main()
