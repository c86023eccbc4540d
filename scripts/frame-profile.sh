#!/usr/bin/env bash
# One path frame by frame against the bare forwarder, in the same rounds:
# the bare TAP-to-TAP forwarder (examples/bare_forward.rs) and each
# bloatbox binary given, unshaped (rate "unlimited", delay 0, TAP offload
# off, spin_us 0), alternated per round, as the "1 TCP flow" row of
# scripts/bench-live.sh's "bloatbox, offload off" column. docs/timing.md
# ("Frame by frame against the bare forwarder") has what it found.
#
#   sudo scripts/frame-profile.sh FWD BIN[+LINE]...
#
# FWD is a release build of the bare forwarder, each BIN a bloatbox binary
# (BIN+LINE adds LINE to the config's [daemon] table, e.g.
# "target/release/bloatbox+spin_budget_pct = 0"). MODE says what is
# measured:
#   tput (default)  one cubic flow of DUR s (default 3) per path and round
#                   (ROUNDS, default 2): Gbit/s, and the process's CPU time
#                   per frame received (µs);
#   strace          the same flow over BYTES (default 1G) under
#                   `strace -c -f`: system calls of every thread;
#   callgrind       one round under `valgrind --tool=callgrind
#                   --separate-threads=yes`, with TRAFFIC udp (COUNT
#                   1514-byte frames at RATE, default 20000 at 20M) or tcp
#                   (BYTES of one cubic flow, default 30M); the profiles
#                   (one file per thread) stay in OUT (default
#                   /tmp/frame-profile); `callgrind_annotate` reads them.
# Namespaces bbpPID-fl, -fr, -bl and -br (PID: this script's) and their
# TAPs are made and removed, so two runs at once do not collide.
set -u
P=bbp$$

MODE=${MODE:-tput} DUR=${DUR:-3} ROUNDS=${ROUNDS:-2} TRAFFIC=${TRAFFIC:-udp}
COUNT=${COUNT:-20000} RATE=${RATE:-20M} OUT=${OUT:-/tmp/frame-profile}
if [ $# -lt 2 ]; then
  echo "usage: $0 FWD BIN[+LINE]...  (env MODE, DUR, ROUNDS, BYTES, TRAFFIC, COUNT, RATE, OUT)" >&2
  exit 2
fi
[ "$(id -u)" = 0 ] || { echo "frame-profile.sh needs root" >&2; exit 1; }
case $MODE in
  tput) BYTES=${BYTES:-} ;;
  strace) BYTES=${BYTES:-1G} ;;
  callgrind) BYTES=${BYTES:-30M} ROUNDS=1 ;;
  *) echo "MODE is tput, strace or callgrind" >&2; exit 2 ;;
esac
FWD=$1
shift
TMP=$(mktemp -d)
mkdir -p "$OUT"
PIDS=""
cleanup() {
  local p
  for p in $PIDS; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  [ -f "$TMP/iperf.pid" ] && kill "$(cat "$TMP/iperf.pid")" 2>/dev/null
  for ns in "$P-fl" "$P-fr" "$P-bl" "$P-br"; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# Runs a path's program (in the background, so in a subshell of its own,
# which it replaces: $! is the program's PID): wrap TAG CMD...
wrap() {
  local tag=$1; shift
  if [ "$MODE" = callgrind ]; then
    exec valgrind --tool=callgrind --separate-threads=yes \
      --callgrind-out-file="$OUT/$tag.%p" "$@"
  fi
  exec "$@"
}

# The traffic from NS to DST; prints what iperf3 says it moved.
traffic() {
  local ns=$1 dst=$2
  if [ "$MODE" = callgrind ] && [ "$TRAFFIC" = udp ]; then
    in_ns "$ns" iperf3 -c "$dst" -u -l 1472 -b "$RATE" -k "$COUNT" -J 2>/dev/null |
      jq -r '"\(.end.sum.packets) UDP frames sent, \(.end.sum.lost_packets) lost"'
  elif [ -n "$BYTES" ]; then
    in_ns "$ns" iperf3 -c "$dst" -n "$BYTES" -C cubic -J 2>/dev/null |
      jq -r '"\(.end.sum_received.bits_per_second / 1e9 * 100 | round / 100) Gbit/s"'
  else
    in_ns "$ns" iperf3 -c "$dst" -t "$DUR" -C cubic -J 2>/dev/null |
      jq -r '"\(.end.sum_received.bits_per_second / 1e9 * 100 | round / 100) Gbit/s"'
  fi
}

# CPU time of PID so far, clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# measure TAG PID NS_LEFT NS_RIGHT DST RX_DEV: the traffic through the path
# that PID runs, with what MODE asks of it.
measure() {
  local tag=$1 pid=$2 nsl=$3 nsr=$4 dst=$5 dev=$6 moved c0 c1 frames sp=""
  in_ns "$nsl" ping -c 3 -i 0.2 -W 2 "$dst" >/dev/null || echo "$tag: ping failed" >&2
  in_ns "$nsr" iperf3 -s -D -B "$dst" --pidfile "$TMP/iperf.pid" >/dev/null
  sleep 0.5
  if [ "$MODE" = strace ]; then
    strace -c -f -p "$pid" -o "$TMP/strace" 2>/dev/null &
    sp=$!
    sleep 0.5
  fi
  c0=$(ticks "$pid")
  moved=$(traffic "$nsl" "$dst")
  c1=$(ticks "$pid")
  [ -n "$sp" ] && kill -INT "$sp" && wait "$sp"
  kill "$(cat "$TMP/iperf.pid")"
  rm -f "$TMP/iperf.pid"
  sleep 0.2
  frames=$(in_ns "$nsr" cat "/sys/class/net/$dev/statistics/rx_packets")
  echo "$tag: $moved; $frames frames received;" \
    "$(awk -v c=$((c1 - c0)) -v f="$frames" -v hz="$(getconf CLK_TCK)" \
      'BEGIN {printf "%.2f", c * 1e6 / hz / f}') µs CPU per frame;" \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
  [ -n "$sp" ] && grep -v '^-\|^$' "$TMP/strace"
}

# Waits until LOG holds a line "ready" or STATS succeeds (a bloatbox).
await() {
  local i
  for i in $(seq 600); do
    if [ "$1" = fwd ]; then grep -q '^ready$' "$TMP/fwd.out" && return 0
    else "$2" stats -c "$TMP/c.toml" --json >/dev/null 2>&1 && return 0; fi
    sleep 0.1
  done
  echo "frame-profile: $1 did not start" >&2
  return 1
}

for r in $(seq "$ROUNDS"); do
  wrap "r$r-bare" "$FWD" --left "${P}fl0" --right "${P}fr0" >"$TMP/fwd.out" 2>"$TMP/fwd.log" &
  fp=$!
  PIDS="$fp"
  await fwd || exit 1
  ip netns add "$P-fl"
  ip netns add "$P-fr"
  ip link set "${P}fl0" netns "$P-fl"
  ip link set "${P}fr0" netns "$P-fr"
  in_ns "$P-fl" ip addr add 10.95.0.1/24 dev "${P}fl0"
  in_ns "$P-fr" ip addr add 10.95.0.2/24 dev "${P}fr0"
  for s in l r; do
    in_ns "$P-f$s" ip link set lo up
    in_ns "$P-f$s" ip link set "${P}f${s}0" up
  done
  measure "round $r, bare forwarder" "$fp" "$P-fl" "$P-fr" 10.95.0.2 "${P}fr0"
  kill -TERM "$fp"
  wait "$fp" 2>/dev/null
  PIDS=""
  ip netns del "$P-fl"
  ip netns del "$P-fr"
  i=0
  for bx in "$@"; do
    i=$((i + 1))
    bin=${bx%%+*}
    line=""
    [ "$bin" != "$bx" ] && line=${bx#*+}
    cat >"$TMP/c.toml" <<EOF
[tap]
offload = false

[left]
namespace = "$P-bl"
tap = "${P}bl0"
ipv4 = "10.96.0.1/24"

[right]
namespace = "$P-br"
tap = "${P}br0"
ipv4 = "10.96.0.2/24"

[daemon]
control_socket = "$TMP/c.sock"
spin_us = 0
busy_poll_us = 0
$line

[link]
rate = "unlimited"
delay = "0ms"
EOF
    wrap "r$r-bloatbox$i" "$bin" up --headless -c "$TMP/c.toml" 2>"$TMP/daemon.log" &
    dp=$!
    PIDS="$dp"
    await bloatbox "$bin" || { cat "$TMP/daemon.log" >&2; exit 1; }
    measure "round $r, bloatbox $i ($bx)" "$dp" "$P-bl" "$P-br" 10.96.0.2 "${P}br0"
    echo "  wake-ups: $("$bin" stats -c "$TMP/c.toml" --json | jq -c .wakeups)"
    kill -TERM "$dp"
    wait "$dp" 2>/dev/null
    PIDS=""
    for ns in "$P-bl" "$P-br"; do ip netns del "$ns" 2>/dev/null; done
  done
done
[ "$MODE" = callgrind ] && echo "profiles in $OUT (thread 1 is main; see callgrind_annotate)"
exit 0
