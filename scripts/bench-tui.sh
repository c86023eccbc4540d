#!/usr/bin/env bash
# What the terminal UI costs the datapath: forwarding throughput through one
# running bloatbox daemon with no UI attached and with `bloatbox top`
# attached (in a detached 120x40 tmux session, redrawing at snapshot_hz),
# alternated ROUNDS times in the same run so that machine load drifts hit
# both alike, plus the ratio.
#
#   sudo scripts/bench-tui.sh            # prints a Markdown table
#   sudo scripts/bench-tui.sh --write    # also keeps the raw results in
#                                        # bench/results/tui/DATE.json and
#                                        # regenerates BENCHMARKS.md's table
#
# The link is unshaped with fq_codel as root qdisc (so the UI has flows to
# list). Per round and mode: 4 TCP flows (cubic) for DUR seconds and
# 64-byte UDP for DUR seconds (frames per second received). Needs root,
# iproute2, iperf3, tmux, jq. Everything it creates is named bbu-* and removed on exit. A
# benchmark, not a test: it asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

DUR=${DUR:-5}
ROUNDS=${ROUNDS:-2}
HZ=${HZ:-20}
WRITE=0
[ "${1:-}" = "--write" ] && WRITE=1
[ "$(id -u)" = 0 ] || { echo "bench-tui.sh needs root" >&2; exit 1; }
for t in ip iperf3 tmux jq; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done

cargo build --release -q
BIN=$PWD/target/release/bloatbox
TMP=$(mktemp -d)
DAEMON=""
TMUX_SERVER="bbu-$$"

cleanup() {
  set +e
  tmux -L "$TMUX_SERVER" kill-server 2>/dev/null
  # The server leaves its socket file behind when it ends with its last session.
  rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$TMUX_SERVER"
  [ -f "$TMP/iperf.pid" ] && kill "$(cat "$TMP/iperf.pid")" 2>/dev/null
  [ -n "$DAEMON" ] && kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
  [ -e "$TMP/c.toml" ] && "$BIN" down -c "$TMP/c.toml" >/dev/null 2>&1
  for ns in bbu-l bbu-r; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

cat >"$TMP/c.toml" <<EOF
[left]
namespace = "bbu-l"
tap = "bbul0"
ipv4 = "10.83.0.1/24"
ipv6 = "fd00:83::1/64"

[right]
namespace = "bbu-r"
tap = "bbur0"
ipv4 = "10.83.0.2/24"
ipv6 = "fd00:83::2/64"

[link]
rate = "unlimited"
qdisc = "fq_codel"

[daemon]
control_socket = "$TMP/c.sock"
snapshot_hz = $HZ
EOF

"$BIN" up --headless -c "$TMP/c.toml" 2>"$TMP/daemon.log" &
DAEMON=$!
for _ in $(seq 200); do
  "$BIN" stats -c "$TMP/c.toml" --json >/dev/null 2>&1 && break
  sleep 0.05
done
"$BIN" stats -c "$TMP/c.toml" --json >/dev/null || { cat "$TMP/daemon.log" >&2; exit 1; }

in_ns bbu-r iperf3 -s -D -B 10.83.0.2 --pidfile "$TMP/iperf.pid" >/dev/null
sleep 0.5

tcp4() {
  in_ns bbu-l iperf3 -c 10.83.0.2 -t "$DUR" -C cubic -P 4 -J |
    jq '.end.sum_received.bits_per_second / 1e9'
}
udp64() {
  in_ns bbu-l iperf3 -c 10.83.0.2 -t "$DUR" -u -l 64 -b 0 -J |
    jq '(.end.sum.packets - .end.sum.lost_packets) / .end.sum.seconds / 1e3'
}

ui_on() {
  tmux -L "$TMUX_SERVER" -f /dev/null new-session -d -s tui -x 120 -y 40 \
    "$BIN top -c $TMP/c.toml --log $TMP/top.log"
  sleep 1
  tmux -L "$TMUX_SERVER" capture-pane -p -t tui | grep -q "qdisc fq_codel" ||
    { echo "the TUI did not come up:" >&2; tmux -L "$TMUX_SERVER" capture-pane -p -t tui >&2; exit 1; }
}
ui_off() {
  tmux -L "$TMUX_SERVER" send-keys -t tui q
  sleep 0.5
  tmux -L "$TMUX_SERVER" kill-server 2>/dev/null || true
}

declare -a T_OFF T_ON U_OFF U_ON
for r in $(seq "$ROUNDS"); do
  T_OFF+=("$(tcp4)"); U_OFF+=("$(udp64)")
  ui_on
  T_ON+=("$(tcp4)"); U_ON+=("$(udp64)")
  ui_off
  echo "round $r: tcp4 off ${T_OFF[-1]} on ${T_ON[-1]} Gbit/s; udp64 off ${U_OFF[-1]} on ${U_ON[-1]} kpps" >&2
done

mean() { printf "%s\n" "$@" | awk '{s+=$1} END {printf "%.3f", s/NR}'; }
list() { printf "%s\n" "$@" | awk '{printf "%s%.2f", (NR>1?" / ":""), $1}'; }
t_off=$(mean "${T_OFF[@]}"); t_on=$(mean "${T_ON[@]}")
u_off=$(mean "${U_OFF[@]}"); u_on=$(mean "${U_ON[@]}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (a > 0 ? b / a : 0)}'; }
load=$(cut -d' ' -f1 /proc/loadavg)

TABLE=$(cat <<EOF
## $(date -u '+%Y-%m-%d %H:%M') UTC — \`sudo DUR=$DUR ROUNDS=$ROUNDS scripts/bench-tui.sh\` (unshaped, fq_codel, snapshot_hz $HZ, load average ≈ $load, $(nproc) cores)

| measurement | no UI | \`bloatbox top\` attached (tmux 120×40) | with / without |
|---|---|---|---|
| 4 TCP flows (cubic), Gbit/s, mean of rounds ($(list "${T_OFF[@]}") vs $(list "${T_ON[@]}")) | $t_off | $t_on | $(ratio "$t_off" "$t_on") |
| UDP 64-byte payload, kpps received, mean of rounds ($(list "${U_OFF[@]}") vs $(list "${U_ON[@]}")) | $u_off | $u_on | $(ratio "$u_off" "$u_on") |
EOF
)
echo "$TABLE"
if [ "$WRITE" = 1 ]; then
  mkdir -p bench/results/tui
  jq -n --arg date "$(date -u '+%Y-%m-%d %H:%M UTC')" \
    --arg command "DUR=$DUR ROUNDS=$ROUNDS scripts/bench-tui.sh --write" \
    --arg commit "$(git rev-parse --short HEAD)" --arg kernel "$(uname -r)" \
    --argjson nproc "$(nproc)" --arg load "$load" --arg hz "$HZ" \
    --arg t "4 TCP flows (cubic), Gbit/s, mean of rounds ($(list "${T_OFF[@]}") vs $(list "${T_ON[@]}"))" \
    --arg u "UDP 64-byte payload, kpps received, mean of rounds ($(list "${U_OFF[@]}") vs $(list "${U_ON[@]}"))" \
    --arg t_off "$t_off" --arg t_on "$t_on" --arg t_r "$(ratio "$t_off" "$t_on")" \
    --arg u_off "$u_off" --arg u_on "$u_on" --arg u_r "$(ratio "$u_off" "$u_on")" \
    '{kind: "tui", date: $date, command: $command, commit: $commit,
      machine: {nproc: $nproc, kernel: $kernel, "load average": $load},
      note: "Unshaped link, fq_codel, snapshot_hz \($hz).",
      columns: ["measurement", "no UI", "`bloatbox top` attached (tmux 120×40)", "with / without"],
      rows: [[$t, $t_off, $t_on, $t_r], [$u, $u_off, $u_on, $u_r]]}' \
    >"bench/results/tui/$(date -u '+%Y-%m-%dT%H%MZ').json"
  python3 scripts/bench-table.py
fi
