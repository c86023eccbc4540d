#!/usr/bin/env bash
# Runs every simulator scenario (tests/scenarios/*.toml, configs/sim/*.toml)
# with BIN and keeps what each writes, trace included (plain text, about
# 2 GB in all), so that two builds can be compared byte for byte with
# `diff -r`:
#   OUTDIR/NAME/{trace.jsonl,summary.json,tc.txt,stdout.txt}
# NAME is the scenario's directory and file name (tests-scenarios-x,
# configs-sim-y). A scenario that fails keeps its stderr and exit status.
#
# usage: scripts/sim-traces.sh BIN OUTDIR   (run from the repository root)
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BIN OUTDIR" >&2
    exit 2
fi
bin=$1
outdir=$2
root=$(cd "$(dirname "$0")/.." && pwd)
# Builds whose `sim` writes the trace only when asked (--trace) are asked;
# older ones write it with --out alone.
trace_flag=""
if "$bin" sim --help | grep -q -- '--trace'; then
    trace_flag="--trace"
fi
mkdir -p "$outdir"

status=0
for scenario in "$root"/tests/scenarios/*.toml "$root"/configs/sim/*.toml; do
    rel=${scenario#"$root"/}
    name=$(dirname "$rel" | tr / -)-$(basename "$rel" .toml)
    dest=$outdir/$name
    rm -rf "$dest"
    mkdir -p "$dest"
    if "$bin" sim "$scenario" --out "$dest" $trace_flag >"$dest/stdout.txt" 2>"$dest/stderr.txt"; then
        # Only failures keep their stderr (warnings carry no timestamps
        # worth diffing, but log formats may differ between builds).
        rm -f "$dest/stderr.txt"
        echo "ok    $rel"
    else
        rc=$?
        echo "$rc" >"$dest/exit-status"
        echo "FAIL  $rel (exit $rc)"
        status=1
    fi
done
exit $status
