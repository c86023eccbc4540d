#!/usr/bin/env bash
# What one idle frame touches on cold caches (examples/cold_frame.rs),
# counted by cachegrind: the lines of data it reads and writes (misses of
# a 32 KB L1 that the example's 64 MB sweep between frames has emptied),
# an upper bound on the lines of code it runs (misses of a 1 KB
# direct-mapped instruction cache, which no frame's code fits), and its
# instructions. The example runs 20 and 40 frames; the frames' share is
# the difference of the two runs (cg_diff), divided by 20, without the
# harness's own functions. Runs of one build agree within a tenth of a
# line and a few instructions: compare two builds with it.
#
#   scripts/cold-frame.sh [CONFIG]           # this checkout's release build
#   BIN=path/to/cold_frame scripts/cold-frame.sh [CONFIG]
set -euo pipefail
command -v valgrind >/dev/null || { echo "cold-frame.sh needs valgrind (apt-get install valgrind)" >&2; exit 1; }
if [ -z "${BIN:-}" ]; then
  cargo build --release -q --example cold_frame
  BIN=$PWD/target/release/examples/cold_frame
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for n in 20 40; do
  valgrind --tool=cachegrind --cache-sim=yes --I1=1024,1,64 --LL=4194304,16,64 \
    --cachegrind-out-file="$T/c$n.cg" "$BIN" "$n" ${1:+"$1"} >/dev/null 2>&1
done
cg_diff "$T/c20.cg" "$T/c40.cg" >"$T/d.cg" 2>/dev/null
# Per function: D1mr D1mw I1mr Ir file:function; the harness's own work
# (the sweep, the sort of the timings, the wall clock) is left out.
cg_annotate --auto=no --show=D1mr,D1mw,I1mr,Ir --sort=D1mr --threshold=0 "$T/d.cg" 2>/dev/null |
  awk '/file:function/ {on = 1; next} on && NF >= 5' |
  grep -v -e 'cold_frame::main' -e 'Timespec' -e 'clock_gettime' -e 'sort::' |
  awk '{gsub(/\([^)]*\)/, ""); gsub(/,/, ""); r += $1; w += $2; c += $3; i += $4}
       END {printf "per cold frame: data lines %.1f (read %.1f, written %.1f), code lines at most %.1f, instructions %.0f\n",
            (r + w) / 20, r / 20, w / 20, c / 20, i / 20}'
