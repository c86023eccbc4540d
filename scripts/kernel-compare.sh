#!/usr/bin/env bash
# Live end-to-end check of bloatbox's HTB and TBF against the kernel's
# sch_htb and sch_tbf (issue 3), in one run.
#
#   sudo scripts/kernel-compare.sh
#
# For two trees, both shaping to 20 Mbit/s,
#   htb: tc qdisc add dev X root handle 1: htb default 10
#        tc class add dev X parent 1: classid 1:10 htb rate 20mbit
#   tbf: tc qdisc add dev X root tbf rate 20mbit burst 20kb latency 20ms
# it measures single-flow TCP throughput (iperf3 -C cubic, DUR s), idle ping
# RTT and the median ping RTT under that load (ping -i 0.1 during the run),
# on three paths:
#   kernel veth:   a veth pair between two namespaces, tree on the sender's
#                  own veth egress. The qdisc is on the sending host, so TCP
#                  Small Queues caps the bytes each socket has in it, and
#                  TCP hands it 64 KB GSO super-frames;
#   kernel router: sender ns -> router ns -> receiver ns over two veth
#                  pairs, ip_forward on, the tree on the router's egress veth
#                  (towards the receiver). The qdisc is on another "host", so
#                  TSQ does not apply, and the sender's veth has
#                  gso_max_segs 1, so the tree sees 1514-byte frames: the
#                  same situation as bloatbox's queue behind its TAP;
#   bloatbox:      between bloatbox's two namespaces, link rate 10gbit (does
#                  not bind), delay 0, the same tree on `dev left`
#                  (left→right), datapath under `--realtime $RT` (RT=0:
#                  normal scheduling); once per TAP txqueuelen in TXQS
#                  (default "16 128 1000"; 128 is bloatbox's default).
# After each run the tree's `tc -s` statistics are kept and the leaf's
# backlog/drops are summarised (average frame size = bytes / packets sent).
# Also printed: each tree's `tc -s` counters, the sender's TCP
# retransmissions per run (nstat) and the bloatbox sender TAP's TX drops.
# DUR defaults to 30 s: with 8 s, cubic had not yet filled HTB's
# 1000-packet leaf and the loaded RTT was a transient (docs/benchmarking.md).
# Every run keeps its table's raw rows in bench/results/kernel/DATE.json and
# regenerates BENCHMARKS.md's kernel table from the latest
# (scripts/bench-table.py).
# Needs root, iproute2 with sch_htb/sch_tbf, iperf3, ping, jq, cargo.
# Everything it creates is named kc-$$-* / kc$$* and removed on exit; all
# traffic stays inside its own namespaces. It asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

DUR=${DUR:-30}
RT=${RT:-20}
TXQS=${TXQS:-16 128 1000}
RATE_MBIT=20
[ "$(id -u)" = 0 ] || { echo "kernel-compare.sh needs root" >&2; exit 1; }
for t in ip tc nstat iperf3 ping jq cargo; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done

cargo build --release -q
BIN=$PWD/target/release/bloatbox
TMP=$(mktemp -d)
ID=$$
NS_KA=kc-$ID-a; NS_KB=kc-$ID-b       # kernel veth pair
NS_RS=kc-$ID-rs; NS_RR=kc-$ID-rr; NS_RD=kc-$ID-rd  # kernel router
NS_BA=kc-$ID-ba; NS_BB=kc-$ID-bb     # bloatbox
VA=kc${ID}a; VB=kc${ID}b             # veth names (<= 15 chars)
RS=kc${ID}s; RI=kc${ID}i; RO=kc${ID}o; RD=kc${ID}d  # router veths
TA=kc${ID}l; TB=kc${ID}r             # bloatbox TAP names
DAEMON=""
PING_PID=""

cleanup() {
  set +e
  [ -n "$PING_PID" ] && kill "$PING_PID" 2>/dev/null
  [ -n "$DAEMON" ] && kill -INT "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
  for c in "$TMP"/*.toml; do [ -e "$c" ] && "$BIN" down -c "$c" >/dev/null 2>&1; done
  for ns in "$NS_KA" "$NS_KB" "$NS_RS" "$NS_RR" "$NS_RD" "$NS_BA" "$NS_BB"; do
    if ip netns pids "$ns" >/dev/null 2>&1; then
      for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null; done
      ip netns del "$ns" 2>/dev/null
    fi
  done
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) {print "-"; exit} printf "%.3f", v[int((NR+1)/2)]}'; }

# tree_cmds TREE DEV: the tc commands of a tree, one per line.
tree_cmds() {
  case $1 in
    htb) echo "tc qdisc add dev $2 root handle 1: htb default 10"
         echo "tc class add dev $2 parent 1: classid 1:10 htb rate ${RATE_MBIT}mbit" ;;
    tbf) echo "tc qdisc add dev $2 root tbf rate ${RATE_MBIT}mbit burst 20kb latency 20ms" ;;
  esac
}

# measure NS_CLIENT NS_SERVER DST TAG: prints "mbit idle_ms loaded_ms".
measure() {
  local nsc=$1 nss=$2 dst=$3 tag=$4
  in_ns "$nsc" ping -c 1 -W 2 "$dst" >/dev/null
  local idle
  idle=$(in_ns "$nsc" ping -c 50 -i 0.02 -W 1 "$dst" | sed -n 's/.*time=\([0-9.]*\) ms/\1/p' | median)
  in_ns "$nss" iperf3 -s -1 -B "$dst" >/dev/null 2>&1 &
  local srv=$!
  sleep 0.5
  # ping from the start of the second second to one second before the end.
  ( sleep 1; in_ns "$nsc" ping -i 0.1 -w $((DUR - 2)) -W 2 "$dst" >"$TMP/ping-$tag.txt" 2>&1 ) &
  PING_PID=$!
  in_ns "$nsc" iperf3 -c "$dst" -t "$DUR" -C cubic -J >"$TMP/iperf-$tag.json"
  # TCP retransmissions at the sender since its namespace was created:
  # losses anywhere on the path, also outside the tree (a full TAP queue).
  in_ns "$nsc" nstat -az TcpRetransSegs 2>/dev/null | awk '/TcpRetransSegs/ {print $2}' >"$TMP/retrans-$tag.txt"
  wait "$PING_PID" || true
  PING_PID=""
  wait "$srv" 2>/dev/null || true
  local mbit loaded
  mbit=$(jq '.end.sum_received.bits_per_second / 1e6' "$TMP/iperf-$tag.json")
  echo "== $tag: sender TCP retransmissions $(cat "$TMP/retrans-$tag.txt" 2>/dev/null)" >>"$TMP/diag.txt"
  loaded=$(sed -n 's/.*time=\([0-9.]*\) ms/\1/p' "$TMP/ping-$tag.txt" | median)
  printf "%.3f %s %s" "$mbit" "$idle" "$loaded"
}

declare -A RES

# ---- kernel: veth pair -------------------------------------------------------

kernel_run() {
  local tree=$1
  ip netns add "$NS_KA"
  ip netns add "$NS_KB"
  ip link add "$VA" type veth peer name "$VB"
  ip link set "$VA" netns "$NS_KA"
  ip link set "$VB" netns "$NS_KB"
  in_ns "$NS_KA" ip addr add 10.91.0.1/24 dev "$VA"
  in_ns "$NS_KB" ip addr add 10.91.0.2/24 dev "$VB"
  in_ns "$NS_KA" ip link set lo up; in_ns "$NS_KA" ip link set "$VA" up
  in_ns "$NS_KB" ip link set lo up; in_ns "$NS_KB" ip link set "$VB" up
  while read -r cmd; do
    # shellcheck disable=SC2086
    in_ns "$NS_KA" $cmd
  done < <(tree_cmds "$tree" "$VA")
  RES[$tree,kernel]=$(measure "$NS_KA" "$NS_KB" 10.91.0.2 "k-$tree")
  in_ns "$NS_KA" tc -s qdisc show dev "$VA" >"$TMP/kernel-$tree.qdisc" 2>&1 || true
  ip netns del "$NS_KA"
  ip netns del "$NS_KB"
}

# ---- kernel: sender -> router -> receiver ------------------------------------

router_run() {
  local tree=$1
  ip netns add "$NS_RS"
  ip netns add "$NS_RR"
  ip netns add "$NS_RD"
  ip link add "$RS" type veth peer name "$RI"
  ip link add "$RO" type veth peer name "$RD"
  ip link set "$RS" netns "$NS_RS"
  ip link set "$RI" netns "$NS_RR"
  ip link set "$RO" netns "$NS_RR"
  ip link set "$RD" netns "$NS_RD"
  in_ns "$NS_RS" ip addr add 10.93.1.1/24 dev "$RS"
  in_ns "$NS_RR" ip addr add 10.93.1.254/24 dev "$RI"
  in_ns "$NS_RR" ip addr add 10.93.2.254/24 dev "$RO"
  in_ns "$NS_RD" ip addr add 10.93.2.2/24 dev "$RD"
  for ns in "$NS_RS" "$NS_RR" "$NS_RD"; do in_ns "$ns" ip link set lo up; done
  in_ns "$NS_RS" ip link set "$RS" gso_max_segs 1 up
  in_ns "$NS_RR" ip link set "$RI" up
  in_ns "$NS_RR" ip link set "$RO" up
  in_ns "$NS_RD" ip link set "$RD" up
  in_ns "$NS_RS" ip route add default via 10.93.1.254
  in_ns "$NS_RD" ip route add default via 10.93.2.254
  in_ns "$NS_RR" sysctl -qw net.ipv4.ip_forward=1
  while read -r cmd; do
    # shellcheck disable=SC2086
    in_ns "$NS_RR" $cmd
  done < <(tree_cmds "$tree" "$RO")
  RES[$tree,router]=$(measure "$NS_RS" "$NS_RD" 10.93.2.2 "r-$tree")
  in_ns "$NS_RR" tc -s qdisc show dev "$RO" >"$TMP/router-$tree.qdisc" 2>&1 || true
  ip netns del "$NS_RS"
  ip netns del "$NS_RR"
  ip netns del "$NS_RD"
}

# ---- bloatbox ----------------------------------------------------------------

# bloatbox_run TREE TAP_TXQUEUELEN: result key bloatbox<N>.
bloatbox_run() {
  local tree=$1 qlen=$2 f="$TMP/$1-$2.toml" key=bloatbox$2
  {
    cat <<EOF
[left]
namespace = "$NS_BA"
tap = "$TA"
ipv4 = "10.92.0.1/24"
ipv6 = "fd00:92::1/64"

[right]
namespace = "$NS_BB"
tap = "$TB"
ipv4 = "10.92.0.2/24"
ipv6 = "fd00:92::2/64"

[tap]
txqueuelen = $qlen

[link]
rate = "10gbit"
delay = "0ms"
EOF
    echo "tc = ["
    tree_cmds "$tree" left | sed 's/.*/  "&",/'
    echo "]"
    cat <<EOF

[daemon]
control_socket = "$TMP/$tree-$qlen.sock"
EOF
  } >"$f"
  local rt=()
  [ "$RT" != 0 ] && rt=(--realtime "$RT")
  "$BIN" up --headless -c "$f" "${rt[@]}" >"$TMP/daemon-$tree.log" 2>&1 &
  DAEMON=$!
  local ok=0
  for _ in $(seq 200); do
    if in_ns "$NS_BA" ip link show "$TA" 2>/dev/null | grep -q 'state UP\|,UP'; then ok=1; break; fi
    kill -0 "$DAEMON" 2>/dev/null || break
    sleep 0.05
  done
  if [ "$ok" != 1 ]; then
    echo "bloatbox did not come up for $tree:" >&2
    cat "$TMP/daemon-$tree.log" >&2
    return 1
  fi
  RES[$tree,$key]=$(measure "$NS_BA" "$NS_BB" 10.92.0.2 "b$qlen-$tree")
  "$BIN" tc -c "$f" -s qdisc show dev left >"$TMP/$key-$tree.qdisc" 2>&1 || true
  # Frames the sender's TAP dropped (its own queue full) never reach the tree.
  in_ns "$NS_BA" ip -s link show dev "$TA" | awk '/TX:/ {getline; print $4}' >"$TMP/tapdrops-$key-$tree.txt"
  echo "== b$qlen-$tree: sender TAP TX dropped $(cat "$TMP/tapdrops-$key-$tree.txt")" >>"$TMP/diag.txt"
  kill -INT "$DAEMON"
  wait "$DAEMON" || echo "bloatbox ($tree) exited with status $?" >&2
  DAEMON=""
}

for tree in htb tbf; do
  kernel_run "$tree"
  router_run "$tree"
  for q in $TXQS; do bloatbox_run "$tree" "$q"; done
done

# ---- report ------------------------------------------------------------------

# The raw results: one row per tree and path, kept in bench/results/kernel/.
# tree drops: the root qdisc's `dropped` in its `tc -s` line after the run
# (HTB's root counts its leaves' drops, as htb_enqueue does); sender TCP
# retransmissions: nstat's TcpRetransSegs, and for bloatbox the frames the
# sender's TAP dropped in its own queue (losses outside the tree).
ROWS=$(mktemp)
for tree in htb tbf; do
  for path in kernel router $(printf 'bloatbox%s ' $TXQS); do
    read -r m i l <<<"${RES[$tree,$path]}"
    case $path in
      kernel) label="kernel veth (tree on sender)"; tag=k-$tree ;;
      router) label="kernel router (3 namespaces)"; tag=r-$tree ;;
      *) label="bloatbox (TAP txqueuelen ${path#bloatbox})"; tag=b${path#bloatbox}-$tree ;;
    esac
    drops=$(sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' "$TMP/$path-$tree.qdisc" 2>/dev/null | head -1)
    retrans=$(cat "$TMP/retrans-$tag.txt" 2>/dev/null)
    [ -f "$TMP/tapdrops-$path-$tree.txt" ] && retrans="${retrans:--} ($(cat "$TMP/tapdrops-$path-$tree.txt") TAP drops)"
    awk -v t="$tree" -v p="$label" -v m="$m" -v i="$i" -v l="$l" -v r="$RATE_MBIT" \
      -v d="${drops:--}" -v x="${retrans:--}" \
      'BEGIN {printf "%s\t%s\t%.2f\t%.4f\t%s\t%s\t%s\t%s\n", t, p, m, m/r, i, l, d, x}' >>"$ROWS"
  done
done
STAMP=$(date -u '+%Y-%m-%dT%H%MZ')
mkdir -p bench/results/kernel
jq -R -s --arg date "$(date -u '+%Y-%m-%d %H:%M UTC')" \
  --arg command "DUR=$DUR RT=$RT TXQS=\"$TXQS\" scripts/kernel-compare.sh" \
  --arg commit "$(git rev-parse --short HEAD)" --arg kernel "$(uname -r)" \
  --argjson nproc "$(nproc)" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
  --arg rate "$RATE_MBIT" \
  '{kind: "kernel", date: $date, command: $command, commit: $commit,
    machine: {nproc: $nproc, kernel: $kernel, "load average at the end": $load},
    columns: ["tree", "path", "throughput Mbit/s", "ratio to \($rate) Mbit/s", "idle RTT ms", "loaded RTT median ms", "tree drops", "sender TCP retransmissions"],
    rows: (split("\n") | map(select(length > 0) | split("\t")))}' \
  <"$ROWS" >"bench/results/kernel/$STAMP.json"
python3 scripts/bench-table.py

echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), DUR=$DUR s, RT=$RT, kernel $(uname -r), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| tree | path | throughput Mbit/s | ratio to ${RATE_MBIT} Mbit/s | idle RTT ms | loaded RTT median ms | tree drops | sender TCP retransmissions |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
# The same rows as the results file, as a Markdown table.
awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8}' "$ROWS"
rm -f "$ROWS"
echo
for tree in htb tbf; do
  read -r rm _ rl <<<"${RES[$tree,router]}"
  for key in $(printf 'bloatbox%s ' $TXQS); do
    read -r bm _ bl <<<"${RES[$tree,$key]}"
    awk -v t="$tree" -v p="$key" -v k="$rm" -v b="$bm" -v kl="$rl" -v bl="$bl" \
      'BEGIN {printf "%s: %s/kernel router throughput = %.4f (%+.2f%%), loaded RTT = %.3f\n", t, p, b/k, (b/k-1)*100, bl/kl}'
  done
done
echo
# The trees' counters after each run: Sent bytes/pkt (average frame size
# the tree saw), drops, backlog at the end.
for f in "$TMP"/*.qdisc; do
  echo "== $(basename "$f" .qdisc)"
  cat "$f"
done
echo
cat "$TMP/diag.txt"
