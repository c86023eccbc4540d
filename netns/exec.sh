#!/bin/sh
# Runs a command inside the left or right namespace of a running link, with
# the environment `bloatbox run` gives its commands: BLOATBOX_SIDE,
# BLOATBOX_NETNS, BLOATBOX_DEV, BLOATBOX_SELF_V4/_V6, BLOATBOX_PEER_V4/_V6 and
# BLOATBOX_CONTROL. Default names (`bloatbox up` with configs/default.toml),
# or BB_NAME=NAME for a `bloatbox run --name NAME` link. The command's exit
# code is passed through. Changes nothing.
#
#   sudo netns/exec.sh left 'ping -c 3 $BLOATBOX_PEER_V4'  # one word: sh -c
#   sudo netns/exec.sh right iperf3 -s
set -eu
. "$(dirname "$0")/common.sh"
need_root

usage() { echo "usage: $0 left|right CMD [ARGS...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
case "$1" in
  left)  ns=$LEFT_NS;  dev=$LEFT_TAP;  v4=$LEFT_V4;  v6=$LEFT_V6;  p4=$RIGHT_V4; p6=$RIGHT_V6 ;;
  right) ns=$RIGHT_NS; dev=$RIGHT_TAP; v4=$RIGHT_V4; v6=$RIGHT_V6; p4=$LEFT_V4;  p6=$LEFT_V6 ;;
  *) usage ;;
esac
side=$1
shift
ns_exists "$ns" || { echo "$0: namespace $ns does not exist: start the link first (bloatbox up)" >&2; exit 1; }
export BLOATBOX_SIDE="$side" BLOATBOX_NETNS="$ns" BLOATBOX_DEV="$dev" \
  BLOATBOX_SELF_V4="$v4" BLOATBOX_SELF_V6="$v6" \
  BLOATBOX_PEER_V4="$p4" BLOATBOX_PEER_V6="$p6" BLOATBOX_CONTROL="$CONTROL"
if [ $# -eq 1 ]; then
  # One word: let a shell expand $BLOATBOX_... in it.
  exec ip netns exec "$ns" sh -c "$1"
fi
exec ip netns exec "$ns" "$@"
