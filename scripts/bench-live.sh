#!/usr/bin/env bash
# Live benchmark of bloatbox against the kernel's own path (a veth pair) and
# against a bare userspace forwarder (examples/bare_forward.rs), side by
# side, in one run.
#
#   sudo scripts/bench-live.sh                     # prints a Markdown table
#   sudo scripts/bench-live.sh --write FILE        # also writes it to FILE
#
# Every run keeps its raw results in bench/results/live/DATE.json and
# regenerates the live table of BENCHMARKS.md from the latest one
# (scripts/bench-table.py).
#   sudo DUR=1 ROUNDS=1 scripts/bench-live.sh      # a quick pass
#   sudo BEFORE=REV scripts/bench-live.sh          # also bloatbox at REV
#   sudo BARE=0 scripts/bench-live.sh              # without the bare forwarder
#     (its example builds with the dev-dependencies' features: a second full
#     release build of every crate)
#
# ROUNDS rounds (default 2) alternate the paths, each round measuring each
# in turn (even rounds in the reverse order): a veth pair between two namespaces (TSO, GSO and GRO off on both
# ends); the bare forwarder (one thread per direction, frame by frame), and
# again with --queues 2 (two multi-queue queues per TAP, a thread each);
# bloatbox unshaped with TAP offload off (frame by frame) and on (GSO
# super-frames pass whole); bloatbox as a wire (`up --wire`) between the
# host ends of two veth pairs whose other ends sit in two namespaces, the
# shape containerlab leaves, with TSO and GSO off on the hosts' ends
# (frame by frame) and on (super-frames pass whole), and with offload on
# again through unbatched sockets (BLOATBOX_WIRE_RING=off: one readv and
# one writev per frame instead of the receive ring and sendmmsg), and the
# kernel's own bump in that shape (a Linux bridge joining the two host
# ends, frame by frame: what the shape's extra veth hops cost). Per path: 1 and 4 cubic TCP flows, full-size UDP
# as fast as iperf3 sends, full-size UDP offered at 400 and 800 Mbit/s
# (iperf3's loss and the sending device's TX drops), 64-byte UDP packets per
# second from examples/pps_blast.rs, a batched sender with no pacing of its
# own (sent, counted at the receiving interface and IP stack, and
# bloatbox's datapath CPU per frame: `blast64`; one iperf3 sender was the
# bound of what it measured, not the path), and idle ping RTT (median, p99,
# added over the round's veth).
# irtt (Debian's package) through bloatbox's default idle link (100 Mbit/s,
# 5 ms each way) and over a bare veth pair, in the same step: RTT median,
# the excess per direction over the ideal (2 x 5 ms plus two 214-byte
# frames at 100 Mbit/s) beyond the veth's RTT, and IPDV against the veth's;
# through the bare forwarder too, its excess over the veth and its IPDV
# against the veth's: what forwarding in user space costs by itself
# (run_irtt).

# A / B to two decimals, "-" where either is missing or B is 0: ratio A B.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b}'; }

# Full-size UDP offered at OFFERED through a link of RATE: the spacing of
# COUNT frames on the receiving TAP (ideal IDEAL µs), the daemon's
# lateness, and what the 3 s of traffic cost: the datapath threads' CPU
# (% of one core, both directions) and the machine's idle time (% of all
# its cores, from /proc/stat; an idle vCPU that polls, as under a PM QoS
# request, counts as idle here but burns its host core), stored as
# R[KEY/NAME<figure>/ROUND]: paced ROUND KEY NAME RATE OFFERED COUNT IDEAL.
paced() {
  local r=$1 k=$2 n=$3 c a b d e f g h cpu0 idle0
  c=$(config "r$4" "$4" 0ms)
  start_daemon "$c"
  in_ns "$NSP-bl" ping -c 1 -W 2 10.82.0.2 >/dev/null || true
  cpu0=$("$BB" stats -c "$c" --json | jq '.wakeups.cpu_ns') || cpu0=0
  idle0=$(idle_ticks)
  read -r a b d e f g h <<<"$(spacing "$5" "$6" "$7")"
  R[$k/${n}p10/$r]=$a R[$k/${n}p50/$r]=$b R[$k/${n}p90/$r]=$d
  R[$k/${n}run/$r]=$f R[$k/${n}runs4/$r]=$g R[$k/${n}rate/$r]=$h
  R[$k/${n}spread/$r]=$(awk -v a="$a" -v b="$d" 'BEGIN {if (a == "-") print "-"; else printf "%.2f", b - a}')
  R[$k/${n}cpu/$r]=$("$BB" stats -c "$c" --json |
    jq --argjson c0 "$cpu0" --argjson t "$TRAFFIC_NS" '(.wakeups.cpu_ns - $c0) / $t * 100 | round' | num) || R[$k/${n}cpu/$r]=-
  R[$k/${n}idle/$r]=$(idle_since "$idle0")
  read -r a b _ _ _ <<<"$(lateness "$c" lateness)"
  R[$k/${n}l50/$r]=$a R[$k/${n}l99/$r]=$b
  read -r _ a _ b _ <<<"$(lateness "$c" release_lateness)"
  R[$k/${n}r99/$r]=$a R[$k/${n}rmax/$r]=$b
  stop_daemon
}

# The kernel's HTB at RATE (one class, `htb rate RATE`, its default burst)
# on the sending end of a veth pair between two namespaces (TSO, GSO and
# GRO off), the same traffic and capture as `paced`: the reference for the
# 12 Mbit/s spacing, R[KEY/NAMEhtb<figure>/ROUND] and R[KEY/NAMEspreadx/ROUND],
# bloatbox's p10-p90 spread over HTB's (run after `paced` of the same NAME).
# paced_htb ROUND KEY NAME RATE OFFERED COUNT IDEAL.
paced_htb() {
  local r=$1 k=$2 n=$3 a b d _
  veth_pair "$NSP-hl" bbbh0 "$NSP-hr" bbbh1 10.84.0
  in_ns "$NSP-hl" tc qdisc add dev bbbh0 root handle 1: htb default 1
  in_ns "$NSP-hl" tc class add dev bbbh0 parent 1: classid 1:1 htb rate "$4"
  in_ns "$NSP-hl" ping -c 1 -W 2 10.84.0.2 >/dev/null || true
  read -r a b d _ <<<"$(spacing "$5" "$6" "$7" "$NSP-hl" "$NSP-hr" 10.84.0.2 bbbh1)"
  R[$k/${n}htbp10/$r]=$a R[$k/${n}htbp50/$r]=$b R[$k/${n}htbp90/$r]=$d
  R[$k/${n}htbspread/$r]=$(awk -v a="$a" -v b="$d" 'BEGIN {if (a == "-") print "-"; else printf "%.2f", b - a}')
  R[$k/${n}spreadx/$r]=$(ratio "${R[$k/${n}spread/$r]:--}" "${R[$k/${n}htbspread/$r]}")
  ip netns del "$NSP-hl"
  ip netns del "$NSP-hr"
}

# Once per round, bloatbox only: idle RTT with busy polling, the inter-
# departure spacing of full-size frames at 12 Mbit/s and 1.2 Gbit/s as
# tcpdump sees them on the receiving TAP (at 12 Mbit/s beside the kernel's
# HTB on a veth pair with the same traffic: `paced_htb`), the datapath's
# wake-up and release lateness (from `bloatbox stats`) and CPU, and one cubic flow through seed 4's TBF
# (tbf rate 1560mbit burst 20280b latency 5ms, left to right), without and
# with GRO at the receiving TAP (`tap.gro`); and, as their reference, the
# same flow through the kernel's own TBF with those settings on a router
# one hop after bloatbox's link (`seed4_kernel`).
# BEFORE=REV also builds git revision REV (in a temporary worktree, target
# dir target/before) and measures it the same way, offload off and on and
# its bloatbox-only runs, in every round beside this checkout's: two
# commits compared in one run.
#
# Needs root, iproute2 (ip, tc), iperf3, ping, tcpdump, jq, ethtool, irtt,
# python3. Everything it creates is named after the run (bbbPID-* for
# namespaces, bbbPID* for the interfaces made outside them, PID this
# script's), so that two runs do not meet, and removed on every exit
# (including Ctrl-C and kill). It is a benchmark, not a test: it asserts
# nothing.
set -euo pipefail
ORIG_PWD=$PWD
COMMAND="$0${*:+ $*}"
cd "$(dirname "$0")/.."

DUR=${DUR:-5}
ROUNDS=${ROUNDS:-2}
# RT=1 runs the datapath thread under SCHED_FIFO 20 (`bloatbox up --realtime
# 20`), to see what a loaded machine's scheduler costs the datapath.
RT=${RT:-0}
# SPIN=N sets daemon.spin_us (spin the last N µs before each deadline).
SPIN=${SPIN:-0}
# WAIT=1 adds, once per round, the wait policies compared (run_wait).
WAIT=${WAIT:-0}
# ONLY=REGEX runs only the steps whose command matches REGEX (e.g.
# ONLY=run_irtt: the irtt rows alone; ONLY="run_irtt|run_wait"); one that
# selects a wire step (ONLY=wire) keeps its references: the veth pair, the
# bare forwarder and the TAP mode, offload off and on.
ONLY=${ONLY:-}
BEFORE=${BEFORE:-}
BARE=${BARE:-1}
# BLAST=udp sends the 64-byte packets of examples/pps_blast.rs through a UDP
# socket instead of whole frames through an AF_PACKET socket with
# PACKET_QDISC_BYPASS (packet, the default: less of the sender's CPU per
# packet, docs/labs.md).
BLAST=${BLAST:-packet}
# PPS=1 measures the 64-byte packet rates alone on every path, nothing else:
# with ONLY=wire, the wire's small-packet step and its references.
PPS=${PPS:-0}
# The prefix of every namespace and interface name this run makes.
NSP=bbb$$
WRITE=""
while [ $# -gt 0 ]; do
  case $1 in
    --write)
      [ -n "${2:-}" ] || { echo "--write needs a FILE" >&2; exit 2; }
      case $2 in /*) WRITE=$2 ;; *) WRITE=$ORIG_PWD/$2 ;; esac
      shift 2 ;;
    *) echo "usage: $0 [--write FILE]  (env DUR, ROUNDS, RT, SPIN)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "bench-live.sh needs root" >&2; exit 1; }
for t in ip tc iperf3 ping tcpdump jq ethtool irtt python3; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done

cargo build --release -q
if [ "$BARE" = 0 ]; then
  cargo build --release -q --example pps_blast
else
  cargo build --release -q --example pps_blast --example bare_forward
fi
BIN=$PWD/target/release/bloatbox
FWD=$PWD/target/release/examples/bare_forward
BLASTER=$PWD/target/release/examples/pps_blast
TMP=$(mktemp -d)
# The bloatbox binary being measured (this checkout's, or BEFORE's).
BB=$BIN
BEFORE_BIN=""
DAEMON=""
# The config of the running daemon (start_daemon), "" when none runs.
DAEMON_CFG=""
FWDPID=""
TCPDUMP=""
MAIN=""
NAMESPACES="$NSP-vl $NSP-vr $NSP-fl $NSP-fr $NSP-bl $NSP-br $NSP-bs $NSP-wl $NSP-wr $NSP-wh $NSP-il $NSP-ir $NSP-hl $NSP-hr"

# The processes below PID, deepest first.
descendants() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    descendants "$c"
    echo "$c"
  done
}

# The measurements run in a background subshell (MAIN) that this shell
# waits for: `wait` returns at once on SIGINT or SIGTERM, so Ctrl-C or kill
# always reaches the trap (a foreground child that handles SIGINT itself,
# like ping or iperf3, would otherwise make bash skip it). The trap ends
# MAIN and everything it started, then removes what they created.
cleanup() {
  set +e
  trap - EXIT INT TERM
  if [ -n "$MAIN" ] && kill -0 "$MAIN" 2>/dev/null; then
    local pids
    pids="$(descendants "$MAIN") $MAIN"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null
    for _ in $(seq 100); do
      local alive=0 p
      for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
      [ "$alive" = 0 ] && break
      sleep 0.05
    done
    wait "$MAIN" 2>/dev/null
  fi
  [ -n "$TCPDUMP" ] && kill "$TCPDUMP" 2>/dev/null && wait "$TCPDUMP" 2>/dev/null
  [ -f "$TMP/iperf.pid" ] && kill "$(cat "$TMP/iperf.pid")" 2>/dev/null
  [ -f "$TMP/irtt.pid" ] && kill "$(cat "$TMP/irtt.pid")" 2>/dev/null
  [ -n "$DAEMON" ] && kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
  [ -n "$FWDPID" ] && kill -TERM "$FWDPID" 2>/dev/null && wait "$FWDPID" 2>/dev/null
  for c in "$TMP"/*.toml; do [ -e "$c" ] && "$BIN" down -c "$c" >/dev/null 2>&1; done
  for ns in $NAMESPACES; do ip netns del "$ns" 2>/dev/null; done
  [ -d "$TMP/before" ] && git worktree remove --force "$TMP/before"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

if [ -n "$BEFORE" ]; then
  git worktree add -q --detach "$TMP/before" "$BEFORE"
  CARGO_TARGET_DIR=$PWD/target/before cargo build --release -q --manifest-path "$TMP/before/Cargo.toml"
  BEFORE_BIN=$PWD/target/before/release/bloatbox
fi

# ---- helpers ---------------------------------------------------------------

# in NS CMD...: run in a namespace.
in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# A veth pair between two new namespaces, TSO, GSO and GRO off on both ends,
# both ends and lo up, addresses NET.1 and NET.2 (/24):
# veth_pair NS_A IF_A NS_B IF_B NET.
veth_pair() {
  ip netns add "$1"
  ip netns add "$3"
  ip link add "$2" netns "$1" type veth peer name "$4" netns "$3"
  in_ns "$1" ip addr add "$5.1/24" dev "$2"
  in_ns "$3" ip addr add "$5.2/24" dev "$4"
  set -- "$1" "$2" "$3" "$4"
  while [ $# -ge 2 ]; do
    in_ns "$1" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1 ||
      echo "bench-live: ethtool -K $2 failed" >&2
    in_ns "$1" ip link set lo up
    in_ns "$1" ip link set "$2" up
    shift 2
  done
}

# A figure or "-" when its measurement failed (empty or null).
# num [FORMAT]: printf FORMAT (default %s) it.
num() {
  local v; v=$(cat)
  case $v in "" | null) echo - ;; *) awk -v v="$v" -v f="${1:-%s}" 'BEGIN {printf f "\n", v}' ;; esac
}

# Median and p99 of the RTTs (ms) of `ping -c 200 -i 0.01`: "median p99".
ping_stats() {
  { in_ns "$1" ping -c 200 -i 0.01 -W 1 "$2" || true; } | sed -n 's/.*time=\([0-9.]*\) ms/\1/p' |
    sort -g | awk '{v[NR]=$1} END {if (NR == 0) {print "- -"; exit}
      i = int(NR * 0.99 + 0.5); if (i < 1) i = 1; printf "%.3f %.3f", v[int((NR+1)/2)], v[i]}'
}

# An iperf3 server in NS bound to DST (one at a time).
start_iperf() {
  in_ns "$1" iperf3 -s -D -B "$2" --pidfile "$TMP/iperf.pid" >/dev/null
  sleep 0.5
}
stop_iperf() {
  local pid
  pid=$(cat "$TMP/iperf.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  rm -f "$TMP/iperf.pid"
}

# Gbit/s received of N cubic TCP flows: tcp_gbit NS DST N.
tcp_gbit() {
  { in_ns "$1" iperf3 -c "$2" -t "$DUR" -C cubic -P "$3" -J 2>/dev/null || true; } |
    jq '.end.sum_received.bits_per_second / 1e9' 2>/dev/null | num %.2f
}

# The IP packets NS's stack received so far (nstat's absolute IpInReceives,
# its history file left alone).
ip_in() { in_ns "$1" nstat -asz IpInReceives 2>/dev/null | awk '$1 == "IpInReceives" {print $2}'; }

# The packets DEV in NS has received so far.
rx_packets() { in_ns "$1" ip -s -j link show "$2" | jq '.[0].stats64.rx.packets'; }

# 64-byte UDP payloads from examples/pps_blast.rs, batched (`sendmmsg`), for
# DUR s from NS's DEV to DST, received on RDEV in RNS, whose MAC the frames
# carry (BLAST says through which socket), into a socket nobody reads
# (`pps_blast --sink`: the receiving stack drops at the full socket rather
# than answering each packet with ICMP): blast64 NS DEV DST RNS RDEV
# prints "sent rx ip cpu refused": kpps the generator sent, that RDEV
# received (rx_packets: what the path delivered, counted before any
# socket) and that reached RNS's IP stack (IpInReceives), the generator's
# CPU per packet sent (ns, user and system), and kpps the sending device
# refused (a full TAP queue; a veth never refuses). Neither count needs a
# reader to keep up, and the generator has no pacing or timing of its own:
# the path's bound, not iperf3's.
blast64() {
  local mac rx0 ip0 rx1 ip1 out sink
  mac=$(in_ns "$4" ip -j link show "$5" | jq -r '.[0].address')
  rm -f "$TMP/sink.out"
  ip netns exec "$4" "$BLASTER" --sink --dst "$3" --secs "$((DUR + 2))" >"$TMP/sink.out" 2>&1 &
  sink=$!
  for _ in $(seq 100); do grep -q '^ready$' "$TMP/sink.out" 2>/dev/null && break; sleep 0.02; done
  rx0=$(rx_packets "$4" "$5") ip0=$(ip_in "$4")
  out=$(in_ns "$1" "$BLASTER" --mode "$BLAST" --dev "$2" --dst "$3" --dst-mac "$mac" \
    --secs "$DUR" 2>"$TMP/blast.log") || { cat "$TMP/blast.log" >&2; out=""; }
  # Frames still on their way land before the counts are read.
  sleep 0.2
  rx1=$(rx_packets "$4" "$5") ip1=$(ip_in "$4")
  kill "$sink" 2>/dev/null || true
  wait "$sink" 2>/dev/null || true
  [ -n "$out" ] || { echo "- - - - -"; return 0; }
  jq -r --arg rx "$((rx1 - rx0))" --arg ip "$((${ip1:-0} - ${ip0:-0}))" --arg ipok "${ip0:+${ip1:+1}}" '
    .secs as $s | def k: tonumber / $s / 1e3 | round;
    "\(.sent | tostring | k) \($rx | k) \(if $ipok == "1" then $ip | k else "-" end) \(.cpu_ns) \(.errors | tostring | k)"' \
    <<<"$out" 2>/dev/null || echo "- - - - -"
}

# Gbit/s of 1514-byte frames received, 1472-byte UDP payloads sent as fast
# as iperf3 can (what the path moves frame by frame).
udp_full_gbit() {
  { in_ns "$1" iperf3 -c "$2" -t "$DUR" -u -l 1472 -b 0 -J 2>/dev/null || true; } |
    jq '(.end.sum.packets - .end.sum.lost_packets) * 1514 * 8 / .end.sum.seconds / 1e9' 2>/dev/null | num %.2f
}

# The TX drops of DEV in NS so far.
tx_dropped() { in_ns "$1" ip -s -j link show "$2" | jq '.[0].stats64.tx.dropped'; }

# Full-size UDP (1472-byte payload) offered at RATE from NS to DST:
# udp_loss NS DST RATE DEV prints "loss_pct txdrop_pct": iperf3's loss, and
# the TX drops of the sending device DEV (in NS) as % of the packets sent.
udp_loss() {
  local ns=$1 dst=$2 rate=$3 dev=$4 d0 d1 out
  d0=$(tx_dropped "$ns" "$dev")
  out=$(in_ns "$ns" iperf3 -c "$dst" -t "$DUR" -u -l 1472 -b "$rate" -J 2>/dev/null) || true
  d1=$(tx_dropped "$ns" "$dev")
  jq -r --argjson d "$((d1 - d0))" '
    (.end.sum_sent.packets // .end.sum.packets) as $sent |
    "\(.end.sum.lost_percent * 100 | round / 100) \(if $sent > 0 then $d / $sent * 10000 | round / 100 else "-" end)"' \
    <<<"$out" 2>/dev/null || echo "- -"
}

# All per-path figures, stored in R[PATH/FIGURE/ROUND]:
# measure PATH ROUND NS_LEFT NS_RIGHT DST SENDING_DEV RECEIVING_DEV.
declare -A R
measure() {
  local p=$1 r=$2 nsl=$3 nsr=$4 dst=$5 dev=$6 rdev=$7 a b c d e
  in_ns "$nsl" ping -c 1 -W 2 "$dst" >/dev/null || echo "bench-live: $p: first ping failed" >&2
  if [ "$PPS" != 1 ]; then
    start_iperf "$nsr" "$dst"
    R[$p/tcp1/$r]=$(tcp_gbit "$nsl" "$dst" 1)
    R[$p/tcp4/$r]=$(tcp_gbit "$nsl" "$dst" 4)
    R[$p/udpf/$r]=$(udp_full_gbit "$nsl" "$dst")
    read -r a b <<<"$(udp_loss "$nsl" "$dst" 400M "$dev")"
    R[$p/loss400/$r]=$a R[$p/drop400/$r]=$b
    read -r a b <<<"$(udp_loss "$nsl" "$dst" 800M "$dev")"
    R[$p/loss800/$r]=$a R[$p/drop800/$r]=$b
    stop_iperf
  fi
  # bloatbox's datapath CPU (all its threads, user and system: the
  # receiving stack's softirq that its writes run included) per frame the
  # receiving interface got from the generator, ns: what a frame costs the
  # datapath, whatever share of the cores the load leaves it.
  local cpu0=""
  [ -z "$DAEMON_CFG" ] || cpu0=$(daemon_cpu_ns)
  read -r a b c d e <<<"$(blast64 "$nsl" "$dev" "$dst" "$nsr" "$rdev")"
  R[$p/bkppssent/$r]=$a R[$p/bkpps/$r]=$b R[$p/bkppsip/$r]=$c R[$p/bcpu/$r]=$d R[$p/bkppsrefused/$r]=$e
  [ -z "$cpu0" ] || R[$p/bdpcpu/$r]=$(awk -v c0="$cpu0" -v c1="$(daemon_cpu_ns)" -v k="$b" -v d="$DUR" \
    'BEGIN {if (c0 == "" || c1 == "" || k == "-" || k == 0) print "-"; else printf "%.0f", (c1 - c0) / (k * 1e3 * d)}')
  [ "$PPS" != 1 ] || return 0
  read -r a b <<<"$(ping_stats "$nsl" "$dst")"
  R[$p/rtt50/$r]=$a R[$p/rtt99/$r]=$b
}

# Writes a bloatbox config: config NAME RATE DELAY [OFFLOAD [BUSY_POLL_US
# [EXTRA]]] -> path. EXTRA is appended to [link] (e.g. a direction table).
config() {
  local f="$TMP/$1.toml"
  cat >"$f" <<EOF
[tap]
offload = ${4:-true}

[left]
namespace = "$NSP-bl"
tap = "${NSP}l"
ipv4 = "10.82.0.1/24"
ipv6 = "fd00:82::1/64"

[right]
namespace = "$NSP-br"
tap = "${NSP}r"
ipv4 = "10.82.0.2/24"
ipv6 = "fd00:82::2/64"

[daemon]
control_socket = "$TMP/$1.sock"
spin_us = $SPIN
busy_poll_us = ${5:-0}

[link]
rate = "$2"
delay = "$3"
${6:-}
EOF
  echo "$f"
}

# The left TAP of a bloatbox config (the sending side, left to right).
left_tap() { sed -n '/^\[left\]/,/^\[/s/^tap = "\(.*\)"/\1/p' "$1"; }
# The right TAP of a bloatbox config (the receiving side).
right_tap() { sed -n '/^\[right\]/,/^\[/s/^tap = "\(.*\)"/\1/p' "$1"; }

# start_daemon CFG [ARGS...]: `bloatbox up` of CFG with more ARGS.
start_daemon() {
  local c=$1
  shift
  if [ "$RT" = 1 ]; then
    "$BB" up --headless -c "$c" --realtime 20 "$@" 2>"$TMP/daemon.log" &
  else
    "$BB" up --headless -c "$c" "$@" 2>"$TMP/daemon.log" &
  fi
  DAEMON=$!
  DAEMON_CFG=$c
  for _ in $(seq 100); do
    "$BB" stats -c "$c" --json >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  cat "$TMP/daemon.log" >&2
  return 1
}

# The running daemon's datapath CPU so far, ns (`bloatbox stats`).
daemon_cpu_ns() { "$BB" stats -c "$DAEMON_CFG" --json 2>/dev/null | jq '.wakeups.cpu_ns' || true; }

stop_daemon() {
  kill -TERM "$DAEMON"
  wait "$DAEMON" || true
  DAEMON=""
  DAEMON_CFG=""
}

# A lateness summary of the running daemon, "p50 p99 p99.9 max samples"
# with times in µs: lateness CFG KEY, KEY = lateness (deadlines reached) or
# release_lateness (frames written late against the link's delivery time).
lateness() {
  "$BB" stats -c "$1" --json |
    jq -r --arg k "$2" '.[$k] | "\(.p50_ns / 1e3) \(.p99_ns / 1e3) \(.p999_ns / 1e3) \(.max_ns / 1e3) \(.samples)"' ||
    echo "- - - - -"
}

# Spacing of full-size frames on the right TAP while UDP at OFFERED is sent
# left to right through a link of RATE (ideal spacing IDEAL µs): prints
# "p10 p50 p90 n longest_burst bursts_over_4 delivered_mbit", spacings in µs.
# A burst is a run of frames each less than half the ideal spacing after the
# one before (back to back, as far as the link is concerned). The sender's
# and receiver's namespaces, the destination and the device captured on are
# bloatbox's (bbb-bl, bbb-br, 10.82.0.2, bbbr0) unless given:
# spacing OFFERED COUNT IDEAL [NS_FROM NS_TO DST DEV].
spacing() {
  local offered=$1 count=$2 ideal=$3 from=${4:-"$NSP-bl"} to=${5:-"$NSP-br"} dst=${6:-10.82.0.2} dev=${7:-${NSP}r}
  start_iperf "$to" "$dst"
  rm -f "$TMP/cap.pcap"
  # Not through in_ns: its subshell would be $!, and killing it would leave
  # tcpdump running (and holding this command substitution's output open,
  # so the script hung whenever fewer than COUNT frames arrived).
  ip netns exec "$to" tcpdump -i "$dev" -nn -q --time-stamp-precision=nano -w "$TMP/cap.pcap" \
    -c "$count" 'udp and greater 1500' >/dev/null 2>&1 &
  TCPDUMP=$!
  sleep 1
  in_ns "$from" iperf3 -c "$dst" -u -l 1472 -b "$offered" -t "$((TRAFFIC_NS / 1000000000))" >/dev/null 2>&1 || true
  sleep 0.5
  kill "$TCPDUMP" 2>/dev/null || true
  wait "$TCPDUMP" 2>/dev/null || true
  TCPDUMP=""
  stop_iperf
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

# How long `spacing` sends, ns.
TRAFFIC_NS=3000000000

# The machine's idle and iowait time so far, in ticks, and all its time.
idle_ticks() { awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t}' /proc/stat; }

# Idle time since TICKS (as idle_ticks printed them), % of all the cores'.
idle_since() {
  local i0 t0 i1 t1
  read -r i0 t0 <<<"$1"
  read -r i1 t1 <<<"$(idle_ticks)"
  awk -v i="$((i1 - i0))" -v t="$((t1 - t0))" 'BEGIN {if (t <= 0) print "-"; else printf "%.0f", i / t * 100}'
}

# ---- the paths -------------------------------------------------------------

# veth pair, the kernel's own path, frame by frame (no TSO/GSO/GRO).
run_veth() {
  local r=$1
  veth_pair "$NSP-vl" bbbvl0 "$NSP-vr" bbbvr0 10.81.0
  measure veth "$r" "$NSP-vl" "$NSP-vr" 10.81.0.2 bbbvl0 bbbvr0
  ip netns del "$NSP-vl"
  ip netns del "$NSP-vr"
}

# The bare forwarder with QUEUES queues per TAP between two new namespaces,
# $NSP-fl (10.83.0.1) and $NSP-fr (10.83.0.2): bare_up QUEUES; false when it
# did not start (said on stderr). bare_down stops it and removes them.
bare_up() {
  local q=$1
  "$FWD" --left "$NSP"fl --right "$NSP"fr --queues "$q" >"$TMP/fwd.out" 2>"$TMP/fwd.log" &
  FWDPID=$!
  for _ in $(seq 100); do
    grep -q '^ready$' "$TMP/fwd.out" 2>/dev/null && break
    kill -0 "$FWDPID" 2>/dev/null || break
    sleep 0.05
  done
  if ! grep -q '^ready$' "$TMP/fwd.out" 2>/dev/null; then
    echo "bench-live: bare_forward --queues $q did not start:" >&2
    cat "$TMP/fwd.log" >&2
    kill -TERM "$FWDPID" 2>/dev/null; wait "$FWDPID" 2>/dev/null || true
    FWDPID=""
    return 1
  fi
  ip netns add "$NSP-fl"
  ip netns add "$NSP-fr"
  ip link set "$NSP"fl netns "$NSP-fl"
  ip link set "$NSP"fr netns "$NSP-fr"
  in_ns "$NSP-fl" ip addr add 10.83.0.1/24 dev "$NSP"fl
  in_ns "$NSP-fr" ip addr add 10.83.0.2/24 dev "$NSP"fr
  for s in l r; do
    in_ns "$NSP-f$s" ip link set lo up
    in_ns "$NSP-f$s" ip link set "$NSP"f$s up
  done
}

bare_down() {
  kill -TERM "$FWDPID"
  wait "$FWDPID" || echo "bench-live: bare_forward exited $?: $(cat "$TMP/fwd.log")" >&2
  FWDPID=""
  ip netns del "$NSP-fl"
  ip netns del "$NSP-fr"
}

# The bare forwarder with QUEUES queues per TAP: run_bare PATH ROUND QUEUES.
run_bare() {
  local p=$1 r=$2 q=$3
  bare_up "$q" || return 0
  measure "$p" "$r" "$NSP-fl" "$NSP-fr" 10.83.0.2 "$NSP"fl "$NSP"fr
  bare_down
}

# bloatbox unshaped: run_bloatbox PATH ROUND OFFLOAD.
run_bloatbox() {
  local p=$1 r=$2 c
  c=$(config "$p" unlimited 0ms "$3")
  start_daemon "$c"
  measure "$p" "$r" "$NSP-bl" "$NSP-br" 10.82.0.2 "$(left_tap "$c")" "$(right_tap "$c")"
  stop_daemon
}

# bloatbox as a wire, unshaped: run_wire PATH ROUND OFFLOAD [RING], RING
# off for the unbatched sockets (BLOATBOX_WIRE_RING=off), bridge for the
# kernel's own bump in the same shape instead of bloatbox (a Linux bridge
# in bbb-wh enslaving the two ends: what the extra veth hops cost). Hosts
# bbb-wl (10.84.0.1 on eth1) and bbb-wr (10.84.0.2 on eth1), their veth
# peers bbbw1 and bbbw2 in bbb-wh without addresses, wired by `up --wire`;
# with OFFLOAD false the hosts' ends send frame by frame (TSO and GSO off).
run_wire() {
  local p=$1 r=$2 c s
  ip netns add "$NSP-wl"
  ip netns add "$NSP-wr"
  ip netns add "$NSP-wh"
  [ "${4:-}" != bridge ] || { in_ns "$NSP-wh" ip link add bbbwbr type bridge && in_ns "$NSP-wh" ip link set bbbwbr up; }
  for s in l r; do
    local n=1
    [ "$s" = r ] && n=2
    ip link add eth1 netns "$NSP-w$s" type veth peer name bbbw$n netns "$NSP-wh"
    in_ns "$NSP-w$s" ip addr add 10.84.0.$n/24 dev eth1
    if [ "$3" = false ]; then
      in_ns "$NSP-w$s" ethtool -K eth1 tso off gso off >/dev/null 2>&1 ||
        echo "bench-live: ethtool -K eth1 in $NSP-w$s failed" >&2
    fi
    [ "${4:-}" != bridge ] || in_ns "$NSP-wh" ip link set bbbw$n master bbbwbr
    in_ns "$NSP-w$s" ip link set lo up
    in_ns "$NSP-w$s" ip link set eth1 up
    in_ns "$NSP-wh" ip link set bbbw$n up
  done
  if [ "${4:-}" = bridge ]; then
    measure "$p" "$r" "$NSP-wl" "$NSP-wr" 10.84.0.2 eth1 eth1
  else
    c=$(config "$p" unlimited 0ms "$3")
    BLOATBOX_WIRE_RING=${4:-on} start_daemon "$c" --wire "$NSP-wh":bbbw1 "$NSP-wh":bbbw2
    measure "$p" "$r" "$NSP-wl" "$NSP-wr" 10.84.0.2 eth1 eth1
    stop_daemon
  fi
  ip netns del "$NSP-wl"
  ip netns del "$NSP-wr"
  ip netns del "$NSP-wh"
}

# Once per round, bloatbox only: busy polling, spacing, lateness, seed 4:
# run_bloatbox_only ROUND KEY (figures stored under KEY: bb for this
# checkout, bb4 for BEFORE's, which $BB then is).
run_bloatbox_only() {
  local r=$1 k=$2 c a
  # Busy polling for 20 ms after each frame: with ping every 10 ms the
  # datapath never sleeps, so no wake-up (of an idle vCPU, on a VM) is paid.
  c=$(config busy unlimited 0ms true 20000)
  start_daemon "$c"
  in_ns "$NSP-bl" ping -c 1 -W 2 10.82.0.2 >/dev/null || true
  local cpu0 t0
  cpu0=$("$BB" stats -c "$c" --json | jq '.wakeups.cpu_ns') || cpu0=0
  t0=$(date +%s%N)
  read -r a _ <<<"$(ping_stats "$NSP-bl" 10.82.0.2)"
  R[$k/busyrtt/$r]=$a
  R[$k/busycpu/$r]=$("$BB" stats -c "$c" --json | jq --argjson c0 "$cpu0" --argjson t0 "$t0" \
    --argjson t1 "$(date +%s%N)" '(.wakeups.cpu_ns - $c0) / ($t1 - $t0) * 100 | floor' | num) || R[$k/busycpu/$r]=-
  stop_daemon

  paced "$r" "$k" s12 12mbit 20M 2000 "$IDEAL12"
  paced_htb "$r" "$k" s12 12mbit 20M 2000 "$IDEAL12"
  paced "$r" "$k" s1g 1200mbit 2G 20000 "$IDEAL1G"

  seed4 "$r" "$k" tbf false
  seed4 "$r" "$k" tbfgro true
  # The reference, with this checkout's binary only (the kernel's TBF
  # does not depend on the build).
  if [ "$k" = bb ]; then seed4_kernel "$r" "$k"; fi
}

# Seed 4's TBF, as tc writes it (the seed's configs have the same).
SEED4_TBF="tbf rate 1560mbit burst 20280b latency 5ms"

# Turns GRO on at the receiving TAP of config FILE: with_gro FILE.
with_gro() { sed -i "s/^offload = true$/offload = true\ngro = true/" "$1"; }

# Stores GBIT (Gbit/s, or "-") as R[KEY/NAME/ROUND] in Mbit/s and as
# R[KEY/NAMEshare/ROUND], its share of seed 4's 1560 Mbit/s:
# seed4_goodput ROUND KEY NAME GBIT.
seed4_goodput() {
  local r=$1 k=$2 n=$3 g=$4
  R[$k/$n/$r]=$(awk -v g="$g" 'BEGIN {if (g == "-") print "-"; else printf "%.0f", g * 1000}')
  R[$k/${n}share/$r]=$(awk -v g="$g" 'BEGIN {if (g == "-") print "-"; else printf "%.2f", g * 1000 / 1560}')
}

# Seed 4 (configs/tbf-1560mbit.toml, configs/sim/seed4-tbf-1560mbit.toml):
# a 10 Gbit/s link, 5 ms each way, TBF on the left→right device, TAP
# offload on, GRO at the receiving TAP as GRO says (true is the seed's
# config; a binary that does not know tap.gro gives "-"): one cubic flow's
# goodput, stored as R[KEY/NAME/ROUND] and R[KEY/NAMEshare/ROUND].
# seed4 ROUND KEY NAME GRO.
seed4() {
  local r=$1 k=$2 n=$3 a c
  c=$(config "$n" 10gbit 5ms true 0 "
[link.left_to_right]
qdisc = \"$SEED4_TBF\"")
  [ "$4" = true ] && with_gro "$c"
  if ! "$BB" check "$c" >"$TMP/check.log" 2>&1; then
    [ "$4" = true ] || { cat "$TMP/check.log" >&2; return 1; }
    seed4_goodput "$r" "$k" "$n" -
    return 0
  fi
  start_daemon "$c"
  in_ns "$NSP-bl" ping -c 1 -W 2 10.82.0.2 >/dev/null || true
  start_iperf "$NSP-br" 10.82.0.2
  a=$(tcp_gbit "$NSP-bl" 10.82.0.2 1)
  stop_iperf
  stop_daemon
  seed4_goodput "$r" "$k" "$n" "$a"
}

# Seed 4's TBF in the kernel instead, the reference for the rows above:
# bloatbox's link (10 Gbit/s, 5 ms each way, GRO at the right TAP, no
# qdisc) then a router (the right namespace, forwarding) whose egress veth
# to a third namespace has `tc qdisc add ... tbf rate 1560mbit burst 20280b
# latency 5ms` (net/sched/sch_tbf.c; its dequeue runs from the qdisc
# watchdog's hrtimer and the NET_TX softirq); one cubic flow from the left
# namespace to the third: R[KEY/ktbf/ROUND] and R[KEY/ktbfshare/ROUND].
# seed4_kernel ROUND KEY.
seed4_kernel() {
  local r=$1 k=$2 a c
  c=$(config ktbf 10gbit 5ms true 0)
  with_gro "$c"
  start_daemon "$c"
  ip netns add "$NSP-bs"
  ip link add bbbrs0 netns "$NSP-br" type veth peer name bbbs0 netns "$NSP-bs"
  in_ns "$NSP-br" ip addr add 10.87.0.1/24 dev bbbrs0
  in_ns "$NSP-bs" ip addr add 10.87.0.2/24 dev bbbs0
  in_ns "$NSP-br" ip link set bbbrs0 up
  in_ns "$NSP-bs" ip link set lo up
  in_ns "$NSP-bs" ip link set bbbs0 up
  in_ns "$NSP-bs" ip route add default via 10.87.0.1
  in_ns "$NSP-bl" ip route add 10.87.0.0/24 via 10.82.0.2
  in_ns "$NSP-br" sysctl -qw net.ipv4.ip_forward=1
  # shellcheck disable=SC2086 # SEED4_TBF is words for tc
  in_ns "$NSP-br" tc qdisc replace dev bbbrs0 root $SEED4_TBF
  in_ns "$NSP-bl" ping -c 1 -W 2 10.87.0.2 >/dev/null || echo "bench-live: kernel TBF: first ping failed" >&2
  start_iperf "$NSP-bs" 10.87.0.2
  a=$(tcp_gbit "$NSP-bl" 10.87.0.2 1)
  stop_iperf
  ip netns del "$NSP-bs"
  stop_daemon
  seed4_goodput "$r" "$k" ktbf "$a"
}

# ---- irtt ------------------------------------------------------------------

# irtt's round trips, 1 ms apart, 172-byte packets (214-byte frames), for
# DUR s from NS to DST, an irtt server started in SRV_NS on DST:
# irtt_json NS SRV_NS DST FILE writes irtt's JSON to FILE.
irtt_json() {
  local ns=$1 srv=$2 dst=$3 f=$4
  # -i 0: the server's default refuses intervals under 10 ms.
  ip netns exec "$srv" irtt server -b "$dst" -i 0 >/dev/null 2>&1 &
  echo $! >"$TMP/irtt.pid"
  sleep 0.5
  in_ns "$ns" irtt client -Q -i 1ms -l 172 -d "${DUR}s" -o "$f" "$dst" >/dev/null 2>&1 || rm -f "$f"
  kill "$(cat "$TMP/irtt.pid")" 2>/dev/null || true
  wait "$(cat "$TMP/irtt.pid")" 2>/dev/null || true
  rm -f "$TMP/irtt.pid"
}

# The figures of two irtt runs, the link's and the veth's: irtt_figures
# LINK.json VETH.json RATE_BIT DELAY_NS prints "rtt vrtt excess up down
# ipdv vipdv": RTT medians (ms), the excess per direction (µs: half of the
# link's RTT median minus the ideal minus the veth's RTT median), the
# one-way excesses measured by irtt's timestamps (both namespaces share the
# clock; µs, each direction's median minus delay and serialization minus
# the veth's), and the round-trip IPDV medians (µs). "-" where a run failed.
# RATE_BIT 0 is a path that serializes nothing (the bare forwarder).
irtt_figures() {
  python3 - "$@" <<'PY' 2>/dev/null || echo "- - - - - - -"
import json, sys
link, veth = (json.load(open(f))["stats"] for f in sys.argv[1:3])
rate, delay = float(sys.argv[3]), float(sys.argv[4])
ser = 214 * 8 / rate * 1e9 if rate else 0.0   # one 214-byte frame, ns
ideal = 2 * (delay + ser)
med = lambda s, k: s[k]["median"]
rtt, vrtt = med(link, "rtt"), med(veth, "rtt")
excess = (rtt - ideal - vrtt) / 2
up = med(link, "send_delay") - delay - ser - med(veth, "send_delay")
down = med(link, "receive_delay") - delay - ser - med(veth, "receive_delay")
print(f"{rtt/1e6:.3f} {vrtt/1e6:.3f} {excess/1e3:.1f} {up/1e3:.1f} {down/1e3:.1f} "
      f"{med(link, 'ipdv_round_trip')/1e3:.1f} {med(veth, 'ipdv_round_trip')/1e3:.1f}")
PY
}

# irtt through bloatbox's default idle link (100 Mbit/s, 5 ms each way)
# and over a bare veth pair (TSO/GSO/GRO off) as its reference, and (unless
# BARE=0) through the bare TAP-to-TAP forwarder, what any userspace
# forwarder that sleeps between frames adds over the veth, in the order the
# round's parity says: R[KEY/irtt.../ROUND]. run_irtt ROUND KEY.
run_irtt() {
  local r=$1 k=$2 c s
  c=$(config irtt 100mbit 5ms)
  veth_irtt() {
    veth_pair "$NSP-il" bbbil0 "$NSP-ir" bbbir0 10.86.0
    in_ns "$NSP-il" ping -c 1 -W 2 10.86.0.2 >/dev/null || true
    irtt_json "$NSP-il" "$NSP-ir" 10.86.0.2 "$TMP/irtt-veth.json"
    ip netns del "$NSP-il"
    ip netns del "$NSP-ir"
  }
  bare_irtt() {
    [ "$BARE" != 0 ] && bare_up 1 || return 0
    in_ns "$NSP-fl" ping -c 1 -W 2 10.83.0.2 >/dev/null || true
    irtt_json "$NSP-fl" "$NSP-fr" 10.83.0.2 "$TMP/irtt-bare.json"
    bare_down
  }
  link_irtt() {
    start_daemon "$c"
    in_ns "$NSP-bl" ping -c 1 -W 2 10.82.0.2 >/dev/null || true
    irtt_json "$NSP-bl" "$NSP-br" 10.82.0.2 "$TMP/irtt-link.json"
    "$BB" stats -c "$c" --json >"$TMP/irtt-stats.json" 2>/dev/null || rm -f "$TMP/irtt-stats.json"
    stop_daemon
  }
  if [ $((r % 2)) = 1 ]; then veth_irtt; bare_irtt; link_irtt; else link_irtt; bare_irtt; veth_irtt; fi
  local a b d e f g h
  read -r a b d e f g h <<<"$(irtt_figures "$TMP/irtt-link.json" "$TMP/irtt-veth.json" 100e6 5e6)"
  R[$k/irttrtt/$r]=$a R[$k/irttvrtt/$r]=$b R[$k/irttx/$r]=$d
  R[$k/irttup/$r]=$e R[$k/irttdown/$r]=$f R[$k/irttipdv/$r]=$g R[$k/irttvipdv/$r]=$h
  R[$k/irttipdvx/$r]=$(ratio "$g" "$h")
  if [ -f "$TMP/irtt-bare.json" ]; then
    read -r _ _ d e f g _ <<<"$(irtt_figures "$TMP/irtt-bare.json" "$TMP/irtt-veth.json" 0 0)"
    R[$k/irttbx/$r]=$d R[$k/irttbup/$r]=$e R[$k/irttbdown/$r]=$f R[$k/irttbipdv/$r]=$g
    R[$k/irttbipdvx/$r]=$(ratio "$g" "$h")
  fi
  irtt_stages "$r" "$k"
  rm -f "$TMP/irtt-link.json" "$TMP/irtt-veth.json" "$TMP/irtt-bare.json" "$TMP/irtt-stats.json"
}

# Where the irtt frames' time went through the link, per stage and
# direction (`bloatbox stats`' stages: wall-clock read, classify, release,
# write; emulated qdisc, ring, serializer, delay line, coalescing; the
# release lateness): R[KEY/irttst_STAGE/ROUND] = "→P50/P99 ←P50/P99" in
# µs, printed as the step ends and kept in the raw results (not in
# BENCHMARKS.md's table, which has no room for ten more rows).
# irtt_stages ROUND KEY.
irtt_stages() {
  local r=$1 k=$2 st line="bench-live: round $1 $2 irtt stages, p50/p99 µs (→ left to right, ← right to left):"
  for st in read classify qdisc ring serializer delay_line coalescing release write late; do
    R[$k/irttst_$st/$r]=$(jq -re --arg s "$st" '.stages | map(.[$s] |
      "\(.p50_ns / 100 | round / 10)/\(.p99_ns / 100 | round / 10)") | "→\(.[0]) ←\(.[1])"' \
      "$TMP/irtt-stats.json" 2>/dev/null) || R[$k/irttst_$st/$r]=-
    line+=" $st ${R[$k/irttst_$st/$r]}"
  done
  echo "$line" >&2
}

# ---- wait policies ---------------------------------------------------------

# Sets the wait policy of config FILE: sleep (spin_budget_pct = 0: sleep to
# each deadline, the default before the learned spin), learned (the
# default) or spin300 (spin_us = 300). wait_policy FILE POLICY.
wait_policy() {
  case $2 in
    sleep) sed -i 's/^spin_us = .*/spin_us = 0\nspin_budget_pct = 0/' "$1" ;;
    learned) sed -i 's/^spin_us = .*/spin_us = 0/' "$1" ;;
    pmqos) sed -i 's/^spin_us = .*/spin_us = 0\npm_qos_us = 0/' "$1" ;;
    spin300) sed -i 's/^spin_us = .*/spin_us = 300/' "$1" ;;
  esac
}

# The wait policies compared, alternated (the order reversed in even
# rounds; pmqos is the learned spin with daemon.pm_qos_us = 0): for each, full-size UDP offered above 12 Mbit/s, 100 Mbit/s and
# 1.2 Gbit/s links (0 ms delay): the spacing on the receiving TAP, runs of
# more than 4 back-to-back frames, wake-up and release lateness, and the
# datapath threads' CPU over the 3 s of traffic (% of one core, both
# directions): R[w<POLICY>/<w12|w100|w1g><figure>/ROUND]. run_wait ROUND.
run_wait() {
  local r=$1 pol spec n rate offered count ideal c a b d e f g h cpu0 pols=(sleep learned pmqos spin300)
  [ $((r % 2)) = 0 ] && pols=(spin300 pmqos learned sleep)
  for spec in "w12 12mbit 20M 2000 $IDEAL12" "w100 100mbit 200M 20000 $IDEAL100" \
    "w1g 1200mbit 2G 20000 $IDEAL1G"; do
    read -r n rate offered count ideal <<<"$spec"
    for pol in "${pols[@]}"; do
      local k=w$pol
      c=$(config "wait-$pol" "$rate" 0ms)
      wait_policy "$c" "$pol"
      start_daemon "$c"
      in_ns "$NSP-bl" ping -c 1 -W 2 10.82.0.2 >/dev/null || true
      cpu0=$("$BB" stats -c "$c" --json | jq '.wakeups.cpu_ns') || cpu0=0
      read -r a b d e f g h <<<"$(spacing "$offered" "$count" "$ideal")"
      R[$k/${n}p10/$r]=$a R[$k/${n}p50/$r]=$b R[$k/${n}p90/$r]=$d
      R[$k/${n}runs4/$r]=$g R[$k/${n}rate/$r]=$h
      R[$k/${n}cpu/$r]=$("$BB" stats -c "$c" --json |
        jq --argjson c0 "$cpu0" --argjson t "$TRAFFIC_NS" '(.wakeups.cpu_ns - $c0) / $t * 100 | round' | num) || R[$k/${n}cpu/$r]=-
      read -r _ a _ _ _ <<<"$(lateness "$c" lateness)"
      R[$k/${n}l99/$r]=$a
      read -r _ a _ _ _ <<<"$(lateness "$c" release_lateness)"
      R[$k/${n}r99/$r]=$a
      stop_daemon
    done
  done
}

IDEAL12=$(awk 'BEGIN {printf "%.2f", 1514*8/12e6*1e6}')
IDEAL1G=$(awk 'BEGIN {printf "%.2f", 1514*8/1.2e9*1e6}')
IDEAL100=$(awk 'BEGIN {printf "%.2f", 1514*8/100e6*1e6}')

# ---- report ----------------------------------------------------------------

# The table (rows, columns, ratios to the bare forwarder) is rendered by
# scripts/bench-table.py from the raw results this script stores in
# bench/results/live/, one JSON file per run.

# ---- the run ---------------------------------------------------------------

# The measurements of round R, one command a line, in the order odd
# rounds run them; even rounds run them in reverse, so that no path always
# runs right after the same other one (within a round, the order moved a
# result by more than a change did).
round_steps() {
  local r=$1
  echo "run_veth $r"
  [ "$BARE" = 0 ] || echo "run_bare bare $r 1"
  echo "run_bloatbox nooff $r false"
  echo "run_bloatbox off $r true"
  [ "$BARE" = 0 ] || echo "run_bare bare2 $r 2"
  echo "run_wire wnooff $r false"
  echo "run_wire woff $r true"
  echo "run_wire wold $r true off"
  echo "run_wire wbr $r false bridge"
  echo "run_bloatbox_only $r bb"
  echo "run_irtt $r bb"
  [ "$WAIT" = 0 ] || echo "run_wait $r"
  if [ -n "$BEFORE" ]; then
    echo "before run_bloatbox before-nooff $r false"
    echo "before run_bloatbox before-off $r true"
    echo "before run_bloatbox_only $r bb4"
    echo "before run_irtt $r bb4"
  fi
}

# before CMD...: runs CMD with BEFORE's binary as the one measured.
before() {
  BB=$BEFORE_BIN
  "$@"
  BB=$BIN
}

# The steps ONLY selects in round R: a selection with a wire step keeps
# the wire's references too (the veth pair its added RTT is measured over,
# the bare forwarder and the TAP mode), so that ONLY=wire gives ratios from
# one run.
only_regex() {
  if [ -n "$ONLY" ] && round_steps "$1" | grep -E -- "$ONLY" | grep -q '^run_wire '; then
    echo "$ONLY|^run_veth |^run_bare bare |^run_bloatbox (nooff|off) "
  else
    echo "$ONLY"
  fi
}

# All rounds, then the report.
main() {
  local steps step i cmd
  for r in $(seq "$ROUNDS"); do
    echo "bench-live: round $r of $ROUNDS" >&2
    mapfile -t steps < <(round_steps "$r" | grep -E -- "$(only_regex "$r")")
    for i in "${!steps[@]}"; do
      step=${steps[$i]}
      [ $((r % 2)) = 0 ] && step=${steps[$((${#steps[@]} - 1 - i))]}
      read -ra cmd <<<"$step"
      "${cmd[@]}"
    done
    # The idle RTT each path adds over this round's veth pair, µs.
    for p in bare bare2 nooff off wnooff woff wold wbr before-nooff before-off; do
      [ -n "${R[$p/rtt50/$r]:-}" ] || continue
      R[$p/added/$r]=$(awk -v b="${R[$p/rtt50/$r]}" -v v="${R[veth/rtt50/$r]}" \
        'BEGIN {if (b == "-" || v == "-") print "-"; else printf "%.0f", (b - v) * 1000}')
    done
  done

  # The raw results: every figure of R, and the run's date, command,
  # commit and machine; bench-table.py stores them in bench/results/live/,
  # prints the table, and regenerates BENCHMARKS.md's live table from them.
  local tsv meta
  tsv=$(mktemp) meta=$(mktemp)
  for k in "${!R[@]}"; do printf '%s\t%s\n' "$k" "${R[$k]}"; done | sort >"$tsv"
  jq -n --arg date "$(date -u '+%Y-%m-%d %H:%M UTC')" \
    --arg command "${BEFORE:+BEFORE=$BEFORE }${ONLY:+ONLY=$ONLY }PPS=$PPS BLAST=$BLAST WAIT=$WAIT BARE=$BARE DUR=$DUR ROUNDS=$ROUNDS RT=$RT SPIN=$SPIN $COMMAND" \
    --arg commit "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src crates examples Cargo.toml Cargo.lock || echo +changes)" \
    --arg before "$BEFORE" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
    --arg kernel "$(uname -r)" --argjson nproc "$(nproc)" \
    --argjson dur "$DUR" --argjson rounds "$ROUNDS" --arg rt "$RT" --arg spin "$SPIN" \
    --arg ideal12 "$IDEAL12" --arg ideal1g "$IDEAL1G" --arg ideal100 "$IDEAL100" \
    '{kind: "live", date: $date, command: $command, commit: $commit,
      machine: {nproc: $nproc, kernel: $kernel, "load average at the end": $load},
      settings: {DUR: $dur, ROUNDS: $rounds, RT: $rt, SPIN: $spin}, rounds: $rounds,
      ideal12: $ideal12, ideal1g: $ideal1g, ideal100: $ideal100}
     + (if $before == "" then {} else {before: $before} end)' >"$meta"
  REPORT=$(python3 scripts/bench-table.py --record-live "$tsv" "$meta")
  rm -f "$tsv" "$meta"
  python3 scripts/bench-table.py
  echo "$REPORT"
  if [ -n "$WRITE" ]; then
    echo "$REPORT" >"$WRITE"
  fi
}

main &
MAIN=$!
STATUS=0
wait "$MAIN" || STATUS=$?
MAIN=""
exit "$STATUS"
