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
# With PAGES=1 it also counts the distinct 4 KB pages (each a TLB entry) a
# frame touches, and the lines on them: lackey traces every access of 14
# frames without the sweep (EVICT=none), the trace is cut where each call
# of `one_frame` starts (the example prints its address with
# PRINT_ENTRY=1), and the tenth frame is counted: code, and data split
# into the stack (valgrind puts it above 2^36) and the rest.
#
#   scripts/cold-frame.sh [CONFIG]           # this checkout's release build
#   BIN=path/to/cold_frame scripts/cold-frame.sh [CONFIG]
#   PAGES=1 scripts/cold-frame.sh [CONFIG]
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
[ "${PAGES:-0}" = 1 ] || exit 0
EVICT=none PRINT_ENTRY=1 valgrind --tool=lackey --trace-mem=yes --log-file="$T/trace" \
  "$BIN" 14 ${1:+"$1"} 2>"$T/entry" >/dev/null
python3 - "$T/trace" "$(grep -o '0x[0-9a-f]*' "$T/entry" | head -1)" <<'PY'
import sys
from collections import defaultdict
trace, entry = sys.argv[1], int(sys.argv[2], 16)
frames = []
for line in open(trace):
    kind, _, rest = line.strip().partition(' ')
    if kind not in ('I', 'L', 'S', 'M') or ',' not in rest:
        continue
    addr = int(rest.split(',')[0].strip(), 16)
    if kind == 'I' and addr == entry:
        frames.append(defaultdict(set))
    if frames:
        room = 'code' if kind == 'I' else 'stack' if addr >= 1 << 36 else 'data'
        frames[-1][room, addr >> 12].add(addr >> 6)
if len(frames) < 11:
    sys.exit(f"cold-frame.sh: found {len(frames)} calls of one_frame in the trace, expected 14")
f = frames[10]
print('per frame, pages (lines on them):', ', '.join(
    f"{room} {sum(1 for r, _ in f if r == room)} ({sum(len(v) for (r, _), v in f.items() if r == room)})"
    for room in ('code', 'data', 'stack')))
PY
