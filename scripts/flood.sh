#!/usr/bin/env bash
# A flood of distinct flows through the live daemon (not part of `cargo
# test`), one run per root qdisc:
#
#   sudo scripts/flood.sh                              # 10^6 flows, 60 s each
#   sudo FLOOD_SECONDS=10 FLOWS=100000 scripts/flood.sh   # a short run
#   sudo QDISCS="sfq" scripts/flood.sh                 # one qdisc
#
# For each qdisc of QDISCS (fq_codel, sfq, pfifo_fast), starts `bloatbox up`
# with its own config (namespaces bbf<id>-l/-r, TAPs, control socket; the
# qdisc at the left→right root, RATE 10mbit, 5 ms), and sends from the left
# namespace, through an AF_PACKET socket on its TAP, FLOWS distinct UDP flows
# over FLOOD_SECONDS: flow i has source address 10.10.A.B and source port P
# with (A.B, P) the 32 bits of i times 2654435761 mod 2^32 (a bijection, so
# no two flows share a 5-tuple), 106-byte frames at FLOWS/FLOOD_SECONDS per
# second, about 14 Mbit/s with the defaults: above the link rate, so the
# qdisc is backlogged with many flows. Every second a probe asks the
# control socket for a `snapshot` and times the answer, and records the
# daemon's RSS (/proc/PID/status VmRSS), the flow queues the snapshot
# lists and those it folds into `other_flows`. At the end, after the flood
# stops and the link drains, it asserts:
#   - every snapshot answered within 100 ms;
#   - per-flow state bounded: listed flows <= daemon.snapshot_flows (64),
#     active flow queues <= the qdisc's table (fq_codel 1024 buckets, sfq
#     127 flows), whatever the number of flows sent;
#   - RSS flat: the second half's peak within 10 % of the first half's;
#   - conservation to the frame at every sample, nothing held at the end;
#   - every frame sent read by the daemon or dropped in the TAP's ring
#     (its tx_dropped).
# Prints one table of figures per qdisc. Everything it creates is removed on
# every exit path (trap). Needs root, iproute2, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

FLOOD_SECONDS=${FLOOD_SECONDS:-60}
FLOWS=${FLOWS:-1000000}
QDISCS=${QDISCS:-fq_codel sfq pfifo_fast}
RATE=${RATE:-10mbit}
[ "$(id -u)" = 0 ] || { echo "flood.sh needs root" >&2; exit 1; }
for t in ip python3; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done
[ "$FLOOD_SECONDS" -ge 4 ] || { echo "FLOOD_SECONDS must be at least 4" >&2; exit 1; }

cargo build --release -q
BIN=$PWD/target/release/bloatbox
ID=$(($$ % 100000))
NSL=bbf$ID-l
NSR=bbf$ID-r
TMP=$(mktemp -d)
CFG=$TMP/flood.toml
DAEMON=""
GEN=""

stop_daemon() {
  if [ -n "$GEN" ]; then
    kill "$GEN" 2>/dev/null || true
    wait "$GEN" 2>/dev/null || true
  fi
  GEN=""
  if [ -n "$DAEMON" ]; then
    kill -TERM "$DAEMON" 2>/dev/null || true
    wait "$DAEMON" 2>/dev/null || true
  fi
  DAEMON=""
  "$BIN" down -c "$CFG" >/dev/null 2>&1 || true
  for ns in "$NSL" "$NSR"; do ip netns del "$ns" 2>/dev/null || true; done
}
cleanup() {
  set +e
  stop_daemon
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# The flood: python3 GEN TAP FLOWS SECONDS, run in the left namespace;
# prints the frames sent and those the socket refused.
cat >"$TMP/gen.py" <<'EOF'
import socket, struct, sys, time
tap, flows, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((tap, 0))
src_mac = bytes.fromhex(open(f"/sys/class/net/{tap}/address").read().strip().replace(":", ""))
eth = b"\x02\x00\x00\x00\x00\x02" + src_mac + b"\x08\x00"
payload = bytes(64)
def csum(h):
    t = sum(struct.unpack("!10H", h))
    t = (t & 0xFFFF) + (t >> 16)
    t = (t & 0xFFFF) + (t >> 16)
    return ~t & 0xFFFF
rate = flows / seconds
start = time.monotonic()
i = refused = 0
while True:
    el = time.monotonic() - start
    if el >= seconds:
        break
    target = int(el * rate) + 32
    while i < target:
        x = ((i % flows) * 2654435761) & 0xFFFFFFFF
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + 64, i & 0xFFFF, 0, 64, 17, 0,
                                   bytes((10, 10, x >> 24, (x >> 16) & 0xFF)), bytes((10, 84, 0, 2))))
        ip[10:12] = struct.pack("!H", csum(bytes(ip)))
        udp = struct.pack("!HHHH", x & 0xFFFF, 9, 8 + 64, 0)
        try:
            s.send(eth + bytes(ip) + udp + payload)
        except OSError:
            refused += 1
        i += 1
    time.sleep(0.001)
print(i, refused, flush=True)
EOF

# The probe: python3 PROBE SOCKET PID SECONDS OUT; one row a second.
cat >"$TMP/probe.py" <<'EOF'
import json, socket, sys, time
path, pid, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
def ask():
    t0 = time.monotonic()
    c = socket.socket(socket.AF_UNIX)
    c.connect(path)
    c.sendall(b'{"cmd":"snapshot"}\n')
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = c.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    c.close()
    return time.monotonic() - t0, json.loads(buf)["ok"]
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
def flows(q):
    listed, other = len(q["flows"]), q["other_flows"]["flows"]
    for c in q["children"]:
        l, o = flows(c)
        listed, other = listed + l, other + o
    return listed, other
start = time.monotonic()
with open(out, "w") as f:
    n = 0
    while True:
        n += 1
        time.sleep(max(0.0, start + n - time.monotonic()))
        dt, snap = ask()
        p = snap["bridge"]["paths"][0]
        c = p["counters"]
        listed, other = flows(p["qdisc"])
        ok = c["frames_in"] + c["duplicated"] == c["frames_out"] + sum(c["drops"]) + p["held"]
        f.write(f"{n} {rss()} {dt * 1000:.2f} {listed} {other} {c['frames_in']} {c['frames_out']} "
                f"{sum(c['drops'])} {p['held']} {int(ok)}\n")
        f.flush()
        if time.monotonic() - start >= seconds:
            break
EOF

fail=0
for QDISC in $QDISCS; do
  case $QDISC in
    fq_codel) TABLE=1024 ;;
    sfq) TABLE=127 ;;
    pfifo_fast) TABLE=0 ;;
    *) echo "unknown qdisc $QDISC: fq_codel, sfq or pfifo_fast" >&2; exit 1 ;;
  esac
  cat >"$CFG" <<EOF
[left]
namespace = "$NSL"
tap = "bbf${ID}l"
ipv4 = "10.84.0.1/24"

[right]
namespace = "$NSR"
tap = "bbf${ID}r"
ipv4 = "10.84.0.2/24"

[link]
rate = "$RATE"
delay = "5ms"
qdisc = "$QDISC"

[daemon]
control_socket = "$TMP/flood.sock"
EOF
  "$BIN" up --headless -c "$CFG" 2>"$TMP/daemon.log" &
  DAEMON=$!
  for _ in $(seq 100); do
    "$BIN" stats -c "$CFG" >/dev/null 2>&1 && break
    sleep 0.1
  done
  "$BIN" stats -c "$CFG" >/dev/null || { cat "$TMP/daemon.log" >&2; exit 1; }
  ip netns exec "$NSL" python3 "$TMP/gen.py" "bbf${ID}l" "$FLOWS" "$FLOOD_SECONDS" >"$TMP/gen.out" &
  GEN=$!
  python3 "$TMP/probe.py" "$TMP/flood.sock" "$DAEMON" "$FLOOD_SECONDS" "$TMP/samples"
  wait "$GEN"
  GEN=""
  read -r SENT REFUSED <"$TMP/gen.out"
  sleep 2 # the link drains (5 ms delay, queues bounded)
  python3 "$TMP/probe.py" "$TMP/flood.sock" "$DAEMON" 0 "$TMP/end"
  sed 's/^1 /end /' "$TMP/end" >>"$TMP/samples"
  # Frames the left TAP's ring dropped before the daemon read them.
  RING=$(ip -n "$NSL" -s -j link show dev "bbf${ID}l" | python3 -c \
    'import json, sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["dropped"])')
  IN=$(awk '$1 == "end" {print $6}' "$TMP/samples")

  echo "== $QDISC: $SENT frames sent ($((SENT < FLOWS ? SENT : FLOWS)) distinct flows), $REFUSED refused by the socket, $RING dropped in the TAP's ring, $IN read by the daemon, ${FLOOD_SECONDS} s at $RATE"
  # Every frame sent is read by the daemon or counted by the TAP (the
  # namespace's own frames, ARP and ND, come on top).
  [ $((IN + RING)) -ge $((SENT - REFUSED)) ] ||
    { echo "FAIL: $((SENT - REFUSED - IN - RING)) frames lost uncounted before the daemon"; fail=1; }
  printf '%4s %8s %8s %6s %6s %10s %10s %10s %5s %3s\n' \
    t rss_kB snap_ms listed other in out drops held ok
  awk -v every=$(( FLOOD_SECONDS / 10 > 0 ? FLOOD_SECONDS / 10 : 1 )) \
    '$1 == "end" || $1 % every == 0 || $1 == 1' "$TMP/samples" |
    while read -r line; do
      # shellcheck disable=SC2086
      printf '%4s %8s %8s %6s %6s %10s %10s %10s %5s %3s\n' $line
    done
  awk -v table=$TABLE -v half=$((FLOOD_SECONDS / 2)) '
    {ms = $3 > ms ? $3 : ms; l = $4 > l ? $4 : l; a = $4 + $5 > a ? $4 + $5 : a}
    $1 != "end" && $1 <= half && $2 > r1 {r1 = $2}
    $1 != "end" && $1 > half && $2 > r2 {r2 = $2}
    $10 != 1 {bad++}
    $1 == "end" {held = $9}
    END {
      printf "snapshot max %.1f ms; flows listed max %d, active max %d (table %d); RSS peak %d kB first half, %d kB second half (%+.1f %%)\n",
        ms, l, a, table, r1, r2, (r2 - r1) * 100 / r1
      f = 0
      if (ms > 100) {print "FAIL: a snapshot took more than 100 ms"; f = 1}
      if (l > 64 || a > table) {print "FAIL: per-flow state beyond its bound"; f = 1}
      if (r2 > r1 * 1.1) {print "FAIL: RSS grew by more than 10 %"; f = 1}
      if (bad) {print "FAIL: conservation broken at " bad " samples"; f = 1}
      if (held != 0) {print "FAIL: " held " frames still held at the end"; f = 1}
      exit f
    }' "$TMP/samples" || fail=1
  stop_daemon
  rm -f "$TMP/samples" "$TMP/end"
done
[ "$fail" = 0 ] && echo "PASS" || { echo "FAIL"; exit 1; }
