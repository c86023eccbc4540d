#!/usr/bin/env bash
# Live soak of the bloatbox daemon at saturation (not part of `cargo test`).
#
#   sudo scripts/soak.sh                   # 10 minutes
#   sudo SOAK_SECONDS=60 scripts/soak.sh   # a short run
#
# Starts `bloatbox up` with its own config (namespaces bbs<id>-l/-r, TAPs
# bbs<id>l/r, its own control socket), runs TCP both ways and a UDP flood at
# twice the link rate for SOAK_SECONDS, and every SAMPLE_EVERY (10) seconds
# records the daemon's stats (`bloatbox stats --json`), its RSS
# (/proc/PID/status VmRSS), open fds (/proc/PID/fd) and threads. At the end,
# after the traffic stops and the link drains, it asserts:
#   - conservation to the frame in each direction, at every sample and at
#     the end: frames_in + duplicated = frames_out + drops + held;
#   - the link drained (held 0) and every pool buffer came back: in_use
#     minus the frames held is the same at every sample and at the end
#     (the buffers the threads keep for their next read);
#   - flat resources: fds and threads never change after the first sample,
#     and the RSS of the second half stays within 10% + 2 MiB of the first
#     half's peak.
# Prints a table of the samples. Everything it creates is removed on every
# exit path (trap). Needs root, iproute2, iperf3, jq.
set -euo pipefail
cd "$(dirname "$0")/.."

SOAK_SECONDS=${SOAK_SECONDS:-600}
SAMPLE_EVERY=${SAMPLE_EVERY:-10}
RATE=${RATE:-50mbit}
[ "$(id -u)" = 0 ] || { echo "soak.sh needs root" >&2; exit 1; }
for t in ip iperf3 jq; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done
[ "$SOAK_SECONDS" -ge $((3 * SAMPLE_EVERY)) ] ||
  { echo "SOAK_SECONDS must be at least $((3 * SAMPLE_EVERY))" >&2; exit 1; }

cargo build --release -q
BIN=$PWD/target/release/bloatbox
ID=$(($$ % 100000))
NSL=bbs$ID-l
NSR=bbs$ID-r
TMP=$(mktemp -d)
CFG=$TMP/soak.toml
DAEMON=""
CLIENTS=()

cleanup() {
  set +e
  for p in "${CLIENTS[@]}"; do kill "$p" 2>/dev/null; done
  for f in "$TMP"/iperf*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  if [ -n "$DAEMON" ]; then
    kill -TERM "$DAEMON" 2>/dev/null
    wait "$DAEMON" 2>/dev/null
  fi
  "$BIN" down -c "$CFG" >/dev/null 2>&1
  for ns in "$NSL" "$NSR"; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

cat >"$CFG" <<EOF
[left]
namespace = "$NSL"
tap = "bbs${ID}l"
ipv4 = "10.83.0.1/24"
ipv6 = "fd00:83::1/64"

[right]
namespace = "$NSR"
tap = "bbs${ID}r"
ipv4 = "10.83.0.2/24"
ipv6 = "fd00:83::2/64"

[link]
rate = "$RATE"
delay = "10ms"

[link.left_to_right]
qdisc = "fq_codel"

[link.right_to_left]
tc = [
  "tc qdisc add dev right root handle 1: htb default 20",
  "tc class add dev right parent 1: classid 1:20 htb rate $RATE",
  "tc qdisc add dev right parent 1:20 sfq",
]

[daemon]
control_socket = "$TMP/soak.sock"
EOF

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
stats() { "$BIN" stats -c "$CFG" --json; }

"$BIN" up --headless -c "$CFG" 2>"$TMP/daemon.log" &
DAEMON=$!
for _ in $(seq 100); do
  stats >/dev/null 2>&1 && break
  sleep 0.1
done
stats >/dev/null || { cat "$TMP/daemon.log" >&2; exit 1; }
in_ns "$NSL" ping -c 1 -W 2 10.83.0.2 >/dev/null

# Servers: two on the right (TCP and UDP from the left), one on the left.
in_ns "$NSR" iperf3 -s -D -B 10.83.0.2 -p 5201 --pidfile "$TMP/iperf1.pid" >/dev/null
in_ns "$NSR" iperf3 -s -D -B 10.83.0.2 -p 5202 --pidfile "$TMP/iperf2.pid" >/dev/null
in_ns "$NSL" iperf3 -s -D -B 10.83.0.1 -p 5203 --pidfile "$TMP/iperf3.pid" >/dev/null
sleep 0.5
UDP_RATE=$(awk -v r="$RATE" 'BEGIN {sub(/mbit/, "", r); print 2 * r "M"}')
in_ns "$NSL" iperf3 -c 10.83.0.2 -p 5201 -t "$SOAK_SECONDS" -P 4 >/dev/null 2>&1 &
CLIENTS+=($!)
in_ns "$NSL" iperf3 -c 10.83.0.2 -p 5202 -t "$SOAK_SECONDS" -u -b "$UDP_RATE" -l 1400 >/dev/null 2>&1 &
CLIENTS+=($!)
in_ns "$NSR" iperf3 -c 10.83.0.1 -p 5203 -t "$SOAK_SECONDS" -P 4 >/dev/null 2>&1 &
CLIENTS+=($!)

# One sample: "t rss_kb fds threads in_l2r out_l2r drops_l2r held_l2r
# in_r2l out_r2l drops_r2l held_r2l pool_in_use conserved(0/1)".
sample() {
  local t=$1 j rss fds thr
  # Threads and fds before `stats`: its connection's thread and socket
  # may still be closing just after it answers.
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$DAEMON/status")
  thr=$(awk '/^Threads/ {print $2}' "/proc/$DAEMON/status")
  fds=$(find "/proc/$DAEMON/fd" -mindepth 1 -maxdepth 1 | wc -l)
  j=$(stats)
  jq -r --arg t "$t" --arg rss "$rss" --arg fds "$fds" --arg thr "$thr" '
    def dir(p): [p.counters.frames_in, p.counters.frames_out,
      (p.counters.drops | add), p.held, p.counters.duplicated];
    [dir(.bridge.paths[0]), dir(.bridge.paths[1])] as $d
    | ([$d[] | (.[0] + .[4]) == (.[1] + .[2] + .[3])] | all) as $ok
    | [$t, $rss, $fds, $thr, $d[0][0:4][], $d[1][0:4][], .pool.in_use,
       (if $ok then 1 else 0 end)] | map(tostring) | join(" ")' <<<"$j"
}

SAMPLES=$TMP/samples
START=$(date +%s)
n=0
while :; do
  sleep "$SAMPLE_EVERY"
  n=$((n + 1))
  sample $((n * SAMPLE_EVERY)) >>"$SAMPLES"
  [ $(($(date +%s) - START)) -lt "$SOAK_SECONDS" ] || break
done
for p in "${CLIENTS[@]}"; do wait "$p" 2>/dev/null || true; done
CLIENTS=()
sleep 3 # the link drains (delay 10 ms, queues bounded)
sample end >>"$SAMPLES"

printf '%6s %9s %4s %4s %10s %10s %9s %6s %10s %10s %9s %6s %7s %4s\n' \
  t rss_kB fds thr in_l2r out_l2r drop_l2r held in_r2l out_r2l drop_r2l held pool ok
while read -r line; do
  # shellcheck disable=SC2086
  printf '%6s %9s %4s %4s %10s %10s %9s %6s %10s %10s %9s %6s %7s %4s\n' $line
done <"$SAMPLES"

fail=0
awk '$14 != 1 {exit 1}' "$SAMPLES" || { echo "FAIL: conservation violated" >&2; fail=1; }
read -r _ _ _ _ _ _ _ HELD_L _ _ _ HELD_R POOL _ < <(tail -n 1 "$SAMPLES")
[ "$HELD_L" = 0 ] && [ "$HELD_R" = 0 ] || { echo "FAIL: frames still held at the end" >&2; fail=1; }
# Buffers in use beyond the frames held: those each datapath thread keeps
# for its next read (the offload read buffer); the same at every sample
# and at the end, or buffers leak.
awk 'NR == 1 {k = $13 - $8 - $12} $13 - $8 - $12 != k {exit 1}' "$SAMPLES" ||
  { echo "FAIL: pool buffers in use beyond the frames held change: a leak" >&2; fail=1; }
echo "pool buffers in use at the end: $POOL, none held (the threads' own read buffers)"
awk 'NR == 1 {f = $3; t = $4} $3 != f || $4 != t {exit 1}' "$SAMPLES" ||
  { echo "FAIL: fds or threads changed" >&2; fail=1; }
ROWS=$(wc -l <"$SAMPLES")
awk -v half=$((ROWS / 2)) '
  NR <= half && $2 > a {a = $2}
  NR > half && $2 > b {b = $2}
  END {printf "RSS peak: first half %d kB, second half %d kB\n", a, b;
       exit !(b <= a * 1.1 + 2048)}' "$SAMPLES" ||
  { echo "FAIL: RSS grows" >&2; fail=1; }
TOTAL=$(awk 'END {print $5 + $9}' "$SAMPLES")
echo "soak: ${SOAK_SECONDS}s at $RATE, $TOTAL frames in, $((ROWS - 1)) samples + end"
[ "$fail" = 0 ] && echo "PASS" || { echo "FAIL"; exit 1; }
