#!/bin/sh
# Removes the namespaces and TAPs of configs/default.toml (bb-left, bb-right,
# bbl0, bbr0) - or of `bloatbox run --name NAME` with BB_NAME=NAME - and a
# stale control socket: what netns/up.sh made (the TAPs inside go with their
# namespaces), or what a killed (SIGKILL) `bloatbox up`/`bloatbox run` left.
# Same effect as `bloatbox down` for the default configuration, plus killing
# processes still inside the namespaces (`ip netns pids`). Idempotent. Like
# `bloatbox down` it refuses while a daemon listens on the link's control
# socket (`bloatbox up`, `up --attach`, a live `bloatbox run`): stop that
# and it removes what it made itself.
#
#   sudo netns/down.sh                 # the default names
#   sudo BB_NAME=bbk2x-0 netns/down.sh # a killed `bloatbox run`
set -eu
. "$(dirname "$0")/common.sh"
need_root

if [ -S "$CONTROL" ] && ss -Hxl src "$CONTROL" | grep -q .; then
  echo "$0: a bloatbox daemon is running this link (it listens on $CONTROL);" \
    "stop it first (Ctrl-C where it runs, or kill it): it removes what it made" \
    "itself, and down.sh only removes what a killed one left" >&2
  exit 1
fi

for ns in "$LEFT_NS" "$RIGHT_NS"; do
  if ns_exists "$ns"; then
    pids=$(ip netns pids "$ns" || true)
    [ -z "$pids" ] || { kill -KILL $pids 2>/dev/null || true; echo "killed in $ns: $pids"; }
    ip netns del "$ns"
    echo "removed namespace $ns"
  fi
done
for tap in "$LEFT_TAP" "$RIGHT_TAP"; do
  if [ -e "/sys/class/net/$tap" ]; then
    ip link del dev "$tap"
    echo "removed interface $tap"
  fi
done
if [ -S "$CONTROL" ]; then
  rm -f "$CONTROL"
  echo "removed control socket $CONTROL"
fi
