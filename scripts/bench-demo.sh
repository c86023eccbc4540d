#!/usr/bin/env bash
# `bloatbox demo` (the classic bufferbloat comparison on the embedded
# configs: pfifo_fast behind a deep ring without BQL, fq_codel, HTB+SFQ;
# 4 CUBIC flows each way with ping and UDP_RR, 12 s per config, the first
# 2 s left out), kept as raw results in bench/results/demo/DATE.json with
# the run's date, command, commit and machine, and BENCHMARKS.md's demo
# table regenerated from the latest (scripts/bench-table.py).
#
#   sudo scripts/bench-demo.sh [DEMO OPTIONS...]    # e.g. --wide
#
# Needs root, iperf3, ping; builds the release binary. Asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
target/release/bloatbox demo "$@" | tee "$OUT"
# The table: from the header line ("config ...") to the end.
TABLE=$(sed -n '/^config /,$p' "$OUT")
mkdir -p bench/results/demo
jq -n --arg date "$(date -u '+%Y-%m-%d %H:%M UTC')" \
  --arg command "sudo scripts/bench-demo.sh${*:+ $*} (bloatbox demo${*:+ $*})" \
  --arg commit "$(git rev-parse --short HEAD)" --arg kernel "$(uname -r)" \
  --argjson nproc "$(nproc)" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
  --arg text "$TABLE" \
  '{kind: "demo", date: $date, command: $command, commit: $commit,
    machine: {nproc: $nproc, kernel: $kernel, build: "release", "load average at the end": $load},
    text: $text}' >"bench/results/demo/$(date -u '+%Y-%m-%dT%H%MZ').json"
python3 scripts/bench-table.py
