#!/usr/bin/env bash
# Live benchmark of bloatbox against a direct veth pair, side by side, in one run.
#
#   sudo scripts/bench-live.sh            # prints a Markdown table
#   sudo scripts/bench-live.sh --write    # also appends it to BENCHMARKS.md
#
# Measures: unshaped forwarding (1 TCP flow, 4 TCP flows, 64-byte UDP pps)
# with TAP offload on (GSO super-frames pass whole) and off (per-frame I/O),
# idle ping RTT, the datapath's wake-up lateness (from `bloatbox stats`), and
# the inter-departure spacing of full-size frames at 12 Mbit/s and 1.2 Gbit/s
# as tcpdump sees them on the receiving TAP. Needs root, iproute2, iperf3,
# ping, tcpdump, jq. Everything it creates is named bbb-* / bbb* and removed
# on exit. It is a benchmark, not a test: it asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

DUR=${DUR:-5}
# RT=1 runs the datapath thread under SCHED_FIFO 20 (`bloatbox up --realtime
# 20`), to see what a loaded machine's scheduler costs the datapath.
RT=${RT:-0}
# SPIN=N sets daemon.spin_us (spin the last N µs before each deadline).
SPIN=${SPIN:-0}
WRITE=0
[ "${1:-}" = "--write" ] && WRITE=1
[ "$(id -u)" = 0 ] || { echo "bench-live.sh needs root" >&2; exit 1; }
for t in ip iperf3 ping tcpdump jq; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done

cargo build --release -q
BIN=$PWD/target/release/bloatbox
TMP=$(mktemp -d)
DAEMON=""

cleanup() {
  set +e
  [ -n "$DAEMON" ] && kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
  for c in "$TMP"/*.toml; do [ -e "$c" ] && "$BIN" down -c "$c" >/dev/null 2>&1; done
  for ns in bbb-vl bbb-vr; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# ---- helpers ---------------------------------------------------------------

# in NS CMD...: run in a namespace.
in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# Median of the RTTs (ms) of `ping -c 200 -i 0.01`.
ping_median() {
  in_ns "$1" ping -c 200 -i 0.01 -W 1 "$2" | sed -n 's/.*time=\([0-9.]*\) ms/\1/p' |
    sort -g | awk '{v[NR]=$1} END {printf "%.3f", v[int((NR+1)/2)]}'
}

# Throughput figures through a pair of namespaces: prints
# "tcp1_gbit tcp4_gbit udp64_kpps udp1472_gbit udp400_loss" (full-size
# frames as fast as the sender can, what the machine moves frame by frame;
# then the loss, in %, of full-size frames paced by iperf3 at 400 Mbit/s,
# whose bursts the sending TAP's queue must absorb while the datapath wakes).
throughput() {
  local nsl=$1 nsr=$2 dst=$3
  in_ns "$nsr" iperf3 -s -D -B "$dst" --pidfile "$TMP/iperf.pid" >/dev/null
  sleep 0.5
  local t1 t4 u uf ul
  t1=$(in_ns "$nsl" iperf3 -c "$dst" -t "$DUR" -C cubic -J | jq '.end.sum_received.bits_per_second / 1e9')
  t4=$(in_ns "$nsl" iperf3 -c "$dst" -t "$DUR" -C cubic -P 4 -J | jq '.end.sum_received.bits_per_second / 1e9')
  u=$(in_ns "$nsl" iperf3 -c "$dst" -t "$DUR" -u -l 64 -b 0 -J |
    jq '(.end.sum.packets - .end.sum.lost_packets) / .end.sum.seconds / 1e3')
  uf=$(in_ns "$nsl" iperf3 -c "$dst" -t "$DUR" -u -l 1472 -b 0 -J 2>/dev/null |
    jq '(.end.sum.packets - .end.sum.lost_packets) * 1514 * 8 / .end.sum.seconds / 1e9')
  ul=$(in_ns "$nsl" iperf3 -c "$dst" -t "$DUR" -u -l 1472 -b 400M -J 2>/dev/null | jq '.end.sum.lost_percent')
  kill "$(cat "$TMP/iperf.pid")" 2>/dev/null || true
  sleep 0.3
  printf "%.2f %.2f %.0f %.2f %.1f" "$t1" "$t4" "$u" "$uf" "$ul"
}

# Writes a bloatbox config: config NAME RATE DELAY [OFFLOAD [BUSY_POLL_US]]
# -> path.
config() {
  local f="$TMP/$1.toml"
  cat >"$f" <<EOF
[tap]
offload = ${4:-true}

[left]
namespace = "bbb-bl"
tap = "bbbl0"
ipv4 = "10.82.0.1/24"
ipv6 = "fd00:82::1/64"

[right]
namespace = "bbb-br"
tap = "bbbr0"
ipv4 = "10.82.0.2/24"
ipv6 = "fd00:82::2/64"

[link]
rate = "$2"
delay = "$3"

[daemon]
control_socket = "$TMP/$1.sock"
spin_us = $SPIN
busy_poll_us = ${5:-0}
EOF
  echo "$f"
}

start_daemon() {
  if [ "$RT" = 1 ]; then
    "$BIN" up --headless -c "$1" --realtime 20 2>"$TMP/daemon.log" &
  else
    "$BIN" up --headless -c "$1" 2>"$TMP/daemon.log" &
  fi
  DAEMON=$!
  for _ in $(seq 100); do
    "$BIN" stats -c "$1" --json >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  cat "$TMP/daemon.log" >&2
  return 1
}

stop_daemon() {
  kill -TERM "$DAEMON"
  wait "$DAEMON" || true
  DAEMON=""
}

# A lateness summary of the running daemon, "p50 p99 p99.9 max samples"
# with times in µs: lateness CFG KEY, KEY = lateness (deadlines reached) or
# release_lateness (frames written late against the link's delivery time).
lateness() {
  "$BIN" stats -c "$1" --json |
    jq -r --arg k "$2" '.[$k] | "\(.p50_ns / 1e3) \(.p99_ns / 1e3) \(.p999_ns / 1e3) \(.max_ns / 1e3) \(.samples)"'
}

# Spacing of full-size frames on the right TAP while UDP at OFFERED is sent
# left to right through a link of RATE (ideal spacing IDEAL µs): prints
# "p10 p50 p90 n longest_burst bursts_over_4 delivered_mbit", spacings in µs.
# A burst is a run of frames each less than half the ideal spacing after the
# one before (back to back, as far as the link is concerned).
spacing() {
  local cfg=$1 offered=$2 count=$3 ideal=$4
  in_ns bbb-br iperf3 -s -D -B 10.82.0.2 --pidfile "$TMP/iperf.pid" >/dev/null
  sleep 0.5
  in_ns bbb-br tcpdump -i bbbr0 -nn -q --time-stamp-precision=nano -w "$TMP/cap.pcap" \
    -c "$count" 'udp and greater 1500' 2>/dev/null &
  local td=$!
  sleep 1
  in_ns bbb-bl iperf3 -c 10.82.0.2 -u -l 1472 -b "$offered" -t 3 >/dev/null 2>&1 || true
  sleep 0.5
  kill "$td" 2>/dev/null || true
  wait "$td" 2>/dev/null || true
  kill "$(cat "$TMP/iperf.pid")" 2>/dev/null || true
  tcpdump -r "$TMP/cap.pcap" -nn -tt --time-stamp-precision=nano 2>/dev/null |
    awk '{print $1}' >"$TMP/times"
  awk 'NR>1 {printf "%.3f\n", ($1-p)*1e6} {p=$1}' "$TMP/times" >"$TMP/gaps"
  local bursts
  bursts=$(awk -v ideal="$ideal" '
    {if ($1 < ideal / 2) run++; else {if (run + 1 > mx) mx = run + 1; if (run + 1 > 4) big++; run = 0}}
    END {if (run + 1 > mx) mx = run + 1; printf "%d %d", mx, big}' "$TMP/gaps")
  local rate
  rate=$(awk 'NR==1 {f=$1} {l=$1} END {if (NR > 1) printf "%.0f", (NR-1)*1514*8/(l-f)/1e6; else print "-"}' "$TMP/times")
  sort -g "$TMP/gaps" | awk -v tail="$bursts $rate" '{v[NR]=$1} END {if (NR == 0) {print "- - - 0 - - -"; exit}
      printf "%.2f %.2f %.2f %d %s", v[int(NR*0.1)+1], v[int(NR*0.5)+1], v[int(NR*0.9)+1], NR, tail}'
}

# ---- veth baseline ---------------------------------------------------------

ip netns add bbb-vl
ip netns add bbb-vr
ip link add bbbvl0 type veth peer name bbbvr0
ip link set bbbvl0 netns bbb-vl
ip link set bbbvr0 netns bbb-vr
in_ns bbb-vl ip addr add 10.81.0.1/24 dev bbbvl0
in_ns bbb-vr ip addr add 10.81.0.2/24 dev bbbvr0
for s in l r; do
  in_ns bbb-v$s ip link set lo up
  in_ns bbb-v$s ip link set bbbv${s}0 up
done
in_ns bbb-vl ping -c 1 -W 2 10.81.0.2 >/dev/null
read -r V_T1 V_T4 V_U V_UF V_UL <<<"$(throughput bbb-vl bbb-vr 10.81.0.2)"
V_RTT=$(ping_median bbb-vl 10.81.0.2)
ip netns del bbb-vl
ip netns del bbb-vr

# ---- bloatbox, unshaped ----------------------------------------------------

C=$(config unshaped unlimited 0ms true)
start_daemon "$C"
in_ns bbb-bl ping -c 1 -W 2 10.82.0.2 >/dev/null
read -r B_T1 B_T4 B_U B_UF B_UL <<<"$(throughput bbb-bl bbb-br 10.82.0.2)"
B_RTT=$(ping_median bbb-bl 10.82.0.2)
stop_daemon

C=$(config unshaped-nooff unlimited 0ms false)
start_daemon "$C"
in_ns bbb-bl ping -c 1 -W 2 10.82.0.2 >/dev/null
read -r N_T1 N_T4 N_U N_UF N_UL <<<"$(throughput bbb-bl bbb-br 10.82.0.2)"
N_RTT=$(ping_median bbb-bl 10.82.0.2)
stop_daemon

# Busy polling for 20 ms after each frame: with ping every 10 ms the
# datapath never sleeps, so no wake-up (of an idle vCPU, on a VM) is paid.
C=$(config unshaped-busy unlimited 0ms true 20000)
start_daemon "$C"
in_ns bbb-bl ping -c 1 -W 2 10.82.0.2 >/dev/null
P_CPU0=$("$BIN" stats -c "$C" --json | jq '.wakeups.cpu_ns')
P_T0=$(date +%s%N)
P_RTT=$(ping_median bbb-bl 10.82.0.2)
P_CPU=$("$BIN" stats -c "$C" --json | jq --argjson c0 "$P_CPU0" --argjson t0 "$P_T0" --argjson t1 "$(date +%s%N)" \
  '(.wakeups.cpu_ns - $c0) / ($t1 - $t0) * 100 | floor')
stop_daemon

# ---- bloatbox, pacing at 12 Mbit/s and 1.2 Gbit/s ---------------------------

C=$(config r12m 12mbit 0ms)
start_daemon "$C"
in_ns bbb-bl ping -c 1 -W 2 10.82.0.2 >/dev/null
IDEAL12=$(awk 'BEGIN {printf "%.2f", 1514*8/12e6*1e6}')
IDEAL1G=$(awk 'BEGIN {printf "%.2f", 1514*8/1.2e9*1e6}')
read -r S12_10 S12_50 S12_90 S12_N S12_B S12_BB S12_R <<<"$(spacing "$C" 20M 2000 "$IDEAL12")"
read -r L12_50 L12_99 L12_999 _ L12_N <<<"$(lateness "$C" lateness)"
stop_daemon

C=$(config r1200m 1200mbit 0ms)
start_daemon "$C"
in_ns bbb-bl ping -c 1 -W 2 10.82.0.2 >/dev/null
read -r S1G_10 S1G_50 S1G_90 S1G_N S1G_B S1G_BB S1G_R <<<"$(spacing "$C" 2G 20000 "$IDEAL1G")"
read -r L1G_50 L1G_99 L1G_999 _ L1G_N <<<"$(lateness "$C" lateness)"
read -r R1G_50 R1G_99 R1G_999 R1G_MAX _ <<<"$(lateness "$C" release_lateness)"
stop_daemon

# ---- report ----------------------------------------------------------------

DEV12=$(awk -v a="$S12_10" -v b="$S12_90" -v i="$IDEAL12" 'BEGIN {
  if (a == "-") {print "-"; exit} printf "%+.1f%% / %+.1f%%", (a/i-1)*100, (b/i-1)*100}')
ADDED_RTT=$(awk -v b="$B_RTT" -v v="$V_RTT" 'BEGIN {printf "%.0f", (b-v)*1000}')
N_ADDED_RTT=$(awk -v b="$N_RTT" -v v="$V_RTT" 'BEGIN {printf "%.0f", (b-v)*1000}')
P_ADDED_RTT=$(awk -v b="$P_RTT" -v v="$V_RTT" 'BEGIN {printf "%.0f", (b-v)*1000}')

REPORT=$(cat <<EOF

## $(date -u '+%Y-%m-%d %H:%M UTC') — \`sudo scripts/bench-live.sh\` (DUR=$DUR s, RT=$RT, SPIN=$SPIN, load average $(cut -d' ' -f1 /proc/loadavg) at the end, $(nproc) cores, kernel $(uname -r))

| measurement | veth pair | bloatbox, offload on | bloatbox, offload off | target |
|---|---|---|---|---|
| 1 TCP flow (cubic), Gbit/s | $V_T1 | $B_T1 | $N_T1 | ≥ 2.5 |
| 4 TCP flows (cubic), Gbit/s | $V_T4 | $B_T4 | $N_T4 | |
| UDP 64-byte payload, kpps received | $V_U | $B_U | $N_U | |
| UDP 1472-byte payload (1514-byte frames) as fast as iperf3 sends, Gbit/s of frames received | $V_UF | $B_UF | $N_UF | (above 1.2 for the 1.2 Gbit/s rows) |
| UDP 1472-byte payload paced by iperf3 at 400 Mbit/s, % lost | $V_UL | $B_UL | $N_UL | |
| idle ping RTT median, ms | $V_RTT | $B_RTT (+$ADDED_RTT µs) | $N_RTT (+$N_ADDED_RTT µs) | ≤ +50 µs |
| idle ping RTT median with busy_poll_us = 20000, ms (datapath CPU while pinging) | $V_RTT | $P_RTT (+$P_ADDED_RTT µs; $P_CPU % of a core) | | ≤ +50 µs |
| wake-up lateness p50 / p99 / p99.9, µs (12 Mbit/s run, $L12_N deadlines) | | $L12_50 / $L12_99 / $L12_999 | | p99 ≤ 20 |
| wake-up lateness p50 / p99 / p99.9, µs (1.2 Gbit/s run, $L1G_N deadlines) | | $L1G_50 / $L1G_99 / $L1G_999 | | |
| 1514-byte frame spacing at 12 Mbit/s p10 / p50 / p90, µs ($S12_N frames, $S12_R Mbit/s) | | $S12_10 / $S12_50 / $S12_90 (ideal $IDEAL12; p10/p90 $DEV12) | | ±2 % at p10–p90 |
| 1514-byte frame spacing at 1.2 Gbit/s p10 / p50 / p90, µs ($S1G_N frames, $S1G_R Mbit/s) | | $S1G_10 / $S1G_50 / $S1G_90 (ideal $IDEAL1G) | | |
| 1.2 Gbit/s: longest run of back-to-back frames (gap < ideal/2); runs longer than 4 | | $S1G_B; $S1G_BB | | ≤ 4; 0 |
| 1.2 Gbit/s release lateness p50 / p99 / p99.9 / max, µs (write time − link delivery time) | | $R1G_50 / $R1G_99 / $R1G_999 / $R1G_MAX | | |
EOF
)
echo "$REPORT"
if [ "$WRITE" = 1 ]; then
  [ -f BENCHMARKS.md ] || printf '# Live benchmarks\n\nMeasured with `scripts/bench-live.sh`; newest last.\n' >BENCHMARKS.md
  echo "$REPORT" >>BENCHMARKS.md
fi
