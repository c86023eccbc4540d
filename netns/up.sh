#!/bin/sh
# Creates, by hand, the topology of configs/default.toml for a daemon to
# attach to: namespaces bb-left and bb-right (BB_NAME=NAME: NAMEl, NAMEr),
# in each a persistent TAP made inside the namespace (`ip tuntap add mode
# tap`: bbl0, bbr0, or NAMEl, NAMEr) with MTU 1500 and txqueuelen 128 (the
# config's [tap]), 10.77.0.1/24 + fd00:77::1/64 on the left, 10.77.0.2/24 +
# fd00:77::2/64 on the right, lo and the TAPs up. Idempotent: what exists is
# kept and brought to this state.
#
# Frames cross once a daemon reads both TAPs:
#
#   sudo netns/up.sh
#   sudo bloatbox up --attach            # same names: configs/default.toml
#   sudo netns/exec.sh left 'ping -c 3 $BLOATBOX_PEER_V4'
#   # Ctrl-C the daemon: the namespaces and TAPs stay (it did not make them)
#   sudo netns/down.sh
set -eu
. "$(dirname "$0")/common.sh"
need_root

side() { # NS TAP V4 V6
  ns_exists "$1" || ip netns add "$1"
  ip -n "$1" link set lo up
  if ! ip -n "$1" link show dev "$2" >/dev/null 2>&1; then
    # Inside the namespace: the daemon attaches to it from there.
    ip -n "$1" tuntap add dev "$2" mode tap
  fi
  ip -n "$1" link set dev "$2" mtu "$MTU" txqueuelen "$TXQUEUELEN"
  ip -n "$1" addr replace "$3/24" dev "$2"
  ip -n "$1" addr replace "$4/64" dev "$2" nodad
  ip -n "$1" link set dev "$2" up
  echo "$1: $2 $3/24 $4/64 mtu $MTU txqueuelen $TXQUEUELEN"
}

side "$LEFT_NS" "$LEFT_TAP" "$LEFT_V4" "$LEFT_V6"
side "$RIGHT_NS" "$RIGHT_TAP" "$RIGHT_V4" "$RIGHT_V6"
echo "ready: start the daemon with \`bloatbox up --attach\` (same names), remove with netns/down.sh"
