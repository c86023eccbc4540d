#!/bin/sh
# Creates, by hand, the topology of configs/default.toml: namespaces bb-left
# and bb-right, a persistent TAP in each (bbl0, bbr0, made with
# `ip tuntap add mode tap`), 10.77.0.1/24 + fd00:77::1/64 on the left,
# 10.77.0.2/24 + fd00:77::2/64 on the right, lo and the TAPs up.
# Idempotent: what exists already is left as it is.
#
# What it does NOT do (read this before using it):
# - It does not join the two sides. Frames only cross when a bloatbox daemon
#   reads both TAPs, and `bloatbox up` cannot attach to pre-created TAPs yet:
#   it creates its own namespaces and TAPs and refuses to start while these
#   exist (it reports them as leftovers). Run netns/down.sh before
#   `bloatbox up`.
# - So it is for looking at the set-up by hand (addresses, routes, what a
#   tool sees inside a namespace), or for preparing namespaces for a future
#   attach mode; not for emulating a link. For a link, use `bloatbox up`
#   (then netns/exec.sh) or `bloatbox run`.
set -eu
. "$(dirname "$0")/common.sh"
need_root

side() { # NS TAP V4 V6
  ns_exists "$1" || ip netns add "$1"
  ip -n "$1" link set lo up
  if ! ip -n "$1" link show dev "$2" >/dev/null 2>&1; then
    ip tuntap add dev "$2" mode tap
    ip link set dev "$2" netns "$1"
  fi
  ip -n "$1" link set dev "$2" mtu 1500 txqueuelen 16
  ip -n "$1" addr replace "$3/24" dev "$2"
  ip -n "$1" addr replace "$4/64" dev "$2" nodad
  ip -n "$1" link set dev "$2" up
  echo "$1: $2 $3/24 $4/64"
}

side "$LEFT_NS" "$LEFT_TAP" "$LEFT_V4" "$LEFT_V6"
side "$RIGHT_NS" "$RIGHT_TAP" "$RIGHT_V4" "$RIGHT_V6"
echo "note: nothing carries frames between $LEFT_TAP and $RIGHT_TAP (see the top of $0);"
echo "      run netns/down.sh before \`bloatbox up\`, which creates its own."
