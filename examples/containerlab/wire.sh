#!/bin/sh
# Wires the host ends of examples/containerlab/bloatbox.clab.yml (bb-h1,
# bb-h2) with bloatbox: 10 Mbit/s, 20 ms each way, fq_codel. Runs until
# Ctrl-C; the interfaces are left as found. More `bloatbox up` options
# (--tui, --set KEY=VALUE, -c FILE) pass through:
#
#   sudo examples/containerlab/wire.sh --set link.rate=50mbit
#
# Then, from another terminal:
#   sudo docker exec clab-bloatbox-h1 ping 10.98.0.2
#   sudo bloatbox stats --socket /run/bloatbox/clab-bloatbox.sock
set -eu
BLOATBOX=${BLOATBOX:-bloatbox}
exec "$BLOATBOX" up --wire bb-h1 bb-h2 \
  --set link.rate=10mbit --set link.delay=20ms --set link.qdisc=fq_codel \
  --set daemon.control_socket=/run/bloatbox/clab-bloatbox.sock "$@"
