"""Two Mininet hosts joined by a BloatboxLink, measured: ping shows the
delay, iperf3 the rate, and bloatbox's control socket the qdisc.

    sudo python3 examples/mininet/two_hosts.py [--bloatbox PATH] [--rate 10mbit]
        [--delay 20ms] [--qdisc fq_codel] [--seconds 4] [--json] [--cli]

No switch and no controller (Open vSwitch is not needed): h1 (10.0.0.1)
and h2 (10.0.0.2) with the one link between them. ``--cli`` opens
Mininet's CLI instead of measuring; ``--json`` prints the measurements as
one JSON object (tests/root/mininet.rs reads it). The network is stopped
on every way out, which ends bloatbox and removes the link's namespace.
"""

import argparse
import json
import subprocess

from mininet.cli import CLI
from mininet.log import info, setLogLevel
from mininet.net import Mininet

from bloatbox_link import BloatboxLink


def measure(net, link, seconds):
    """Ping, iperf3 and `bloatbox tc -s qdisc show`, as text and JSON."""
    h1, h2 = net.get('h1', 'h2')
    ping = h1.cmd('ping -c 10 -i 0.2 10.0.0.2')
    server = h2.popen(['iperf3', '-s', '-1', '-p', '5201'], stdout=subprocess.DEVNULL)
    try:
        # Until the server listens (at most 5 s).
        h2.cmd('for i in $(seq 100); do ss -Htln sport = :5201 | grep -q . && break;'
               ' sleep 0.05; done')
        iperf = h1.cmd('iperf3 -c 10.0.0.2 -p 5201 -J -t %d' % seconds)
    finally:
        server.kill()
        server.wait()
    tc = subprocess.run([link.bloatbox, 'tc', '--socket', link.socket, '-s', 'qdisc', 'show'],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        universal_newlines=True).stdout
    return {'ping': ping, 'iperf3': json.loads(iperf), 'tc': tc}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--bloatbox', default='bloatbox', help='the binary')
    parser.add_argument('--rate', default='10mbit')
    parser.add_argument('--delay', default='20ms', help='each way')
    parser.add_argument('--qdisc', default='fq_codel')
    parser.add_argument('--seconds', type=int, default=4, help='of iperf3')
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--cli', action='store_true')
    args = parser.parse_args()
    setLogLevel('warning' if args.json else 'info')

    net = Mininet(topo=None, controller=None, build=False)
    try:
        h1 = net.addHost('h1', ip='10.0.0.1/24')
        h2 = net.addHost('h2', ip='10.0.0.2/24')
        link = net.addLink(h1, h2, cls=BloatboxLink, rate=args.rate, delay=args.delay,
                           qdisc=args.qdisc, bloatbox=args.bloatbox)
        net.build()
        net.start()
        if args.cli:
            info('*** The link: bloatbox tc --socket %s -s qdisc show\n' % link.socket)
            CLI(net)
            return
        found = measure(net, link, args.seconds)
        found.update(netns=link.name, socket=link.socket, log=link.log,
                     pids=[h1.pid, h2.pid, link.process.pid])
        if args.json:
            print(json.dumps(found))
        else:
            got = found['iperf3']['end']['sum_received']['bits_per_second']
            print('%s%s%.2f Mbit/s received\n' % (found['ping'], found['tc'], got / 1e6))
    finally:
        net.stop()


if __name__ == '__main__':
    main()
